package election

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/quorum"
)

// Lineage names the formation a view descends from: the term and node of the
// member that first proposed it. Views of one lineage belong to one cluster;
// the zero Lineage is "no view".
type Lineage struct {
	Term uint64
	Node gen.Atom
}

// IsZero reports whether l names no lineage.
func (l Lineage) IsZero() bool { return l == Lineage{} }

// outranks orders lineages for a merge of two agreed clusters: the later
// formation wins, then the higher node name, so every member of either side
// computes the same winner.
func (l Lineage) outranks(o Lineage) bool {
	if l.Term != o.Term {
		return l.Term > o.Term
	}
	return l.Node > o.Node
}

// String renders l as term@node.
func (l Lineage) String() string {
	if l.IsZero() {
		return "none"
	}
	return fmt.Sprintf("%d@%s", l.Term, l.Node)
}

// ViewKey orders the views of one lineage: Term is the term of the leader
// that last stamped the view (a new leader re-stamps the view it won with),
// Epoch counts membership changes. Term is compared first, so a view a
// leader committed in its own term outranks every view proposed in an
// earlier term, whatever its epoch.
type ViewKey struct {
	Term  uint64
	Epoch uint64
}

// Compare returns -1, 0 or +1 as k is older than, equal to or newer than o.
func (k ViewKey) Compare(o ViewKey) int {
	if c := cmp.Compare(k.Term, o.Term); c != 0 {
		return c
	}
	return cmp.Compare(k.Epoch, o.Epoch)
}

// String renders k as epoch/term.
func (k ViewKey) String() string { return fmt.Sprintf("epoch %d/term %d", k.Epoch, k.Term) }

// ViewStamp identifies a view without listing its members. Agreed is set once
// the view's lineage is established: a view of it was acknowledged by at
// least MinClusterSize members, a majority of it, in its leader's term.
type ViewStamp struct {
	Lineage Lineage
	Key     ViewKey
	Agreed  bool
}

// IsZero reports whether s stamps no view.
func (s ViewStamp) IsZero() bool { return s.Lineage.IsZero() }

// View is a membership that the cluster agrees on, or is agreeing on: its
// stamp and its members, sorted by node. It travels in messages and in
// durable state.
//
// Inside this package a *View, once made, is never changed: a change makes
// a new View (Core.viewOf, with, without), which may share the old one's
// Members. So the core's view, its Ready, its messages and its clones share
// views without copying them; what leaves for the user is a copy (Core.View,
// Core.Reform), and a View handed to New, or received, must not be changed
// by its sender afterwards.
type View struct {
	Stamp   ViewStamp
	Members []gen.ProcessID
}

// newView builds a view with members sorted by node and one member per node.
func newView(stamp ViewStamp, members []gen.ProcessID) *View {
	v := &View{Stamp: stamp, Members: slices.Clone(members)}
	slices.SortFunc(v.Members, func(a, b gen.ProcessID) int { return cmp.Compare(a.Node, b.Node) })
	v.Members = slices.CompactFunc(v.Members, func(a, b gen.ProcessID) bool { return a.Node == b.Node })
	return v
}

// memberStore holds what a member keeps from its first election on, made
// with its Core, before that election: its views and its leadership. They
// come in an election's burst, among the burst's short-lived garbage of the
// same sizes: each made then, kept for the member's life, would keep a page
// of that garbage's memory in use. A view slot once taken is an immutable
// View like any other.
type memberStore struct {
	views [storeViews]View
	used  uint8
	// roomFree says room is not yet taken.
	roomFree bool
	// lead is the leadership of the member's latest term as leader
	// (newLeadership).
	lead leadership
	// room holds the first member list of up to storeRoom members a kept
	// view holds, so that the list shares the store's allocation: made
	// apart it would be the one object of its size class a member keeps,
	// and pin a page of the burst's garbage of that size.
	room [storeRoom]gen.ProcessID
}

// storeRoom is how many members the store's own room for a member list
// holds: a cluster of five, the default, fills a store of 448 bytes.
const storeRoom = 5

// newMemberStore makes a member's store.
func newMemberStore() *memberStore { return &memberStore{roomFree: true} }

// storeViews is how many views a store keeps: a formation's leader
// installs the view it proposes, re-stamps it with its term and marks it
// agreed; its followers take the proposal and then the agreed view. Three
// views, in 248 bytes; with a leadership, 320 (an allocation of that size).
const storeViews = 3

// viewOf is a view of stamp and members, from the store while it has room
// (members then copied to its room for them, when free and large enough).
func (c *Core) viewOf(stamp ViewStamp, members []gen.ProcessID) *View {
	s := c.store
	if s == nil || int(s.used) == len(s.views) {
		return &View{Stamp: stamp, Members: members}
	}
	if s.roomFree && len(members) <= len(s.room) {
		room := s.room[:len(members):len(members)]
		copy(room, members)
		members, s.roomFree = room, false
	}
	v := &s.views[s.used]
	*v = View{Stamp: stamp, Members: members}
	s.used++
	return v
}

// newLeadership is the leadership of a term this member wins, from the store
// when it has one: a member leads one term at a time, and Clone copies a
// leadership into memory of its own.
func (c *Core) newLeadership() *leadership {
	if c.store == nil {
		return &leadership{}
	}
	c.store.lead = leadership{}
	return &c.store.lead
}

// kept is v as this member keeps it: from the store while it has room.
func (c *Core) kept(v *View) *View {
	s := c.store
	if s == nil || int(s.used) == len(s.views) {
		return v
	}
	for i := range s.used {
		if v == &s.views[i] {
			return v
		}
	}
	return c.viewOf(v.Stamp, v.Members)
}

// detached copies v, members included, for a caller that may change it.
func (v *View) detached() *View {
	if v == nil {
		return nil
	}
	return &View{Stamp: v.Stamp, Members: slices.Clone(v.Members)}
}

// size counts the members; 0 for no view.
func (v *View) size() int {
	if v == nil {
		return 0
	}
	return len(v.Members)
}

// member finds the member on node.
func (v *View) member(node gen.Atom) (gen.ProcessID, bool) {
	if v == nil {
		return gen.ProcessID{}, false
	}
	i, ok := slices.BinarySearchFunc(v.Members, node, func(p gen.ProcessID, n gen.Atom) int { return cmp.Compare(p.Node, n) })
	if !ok {
		return gen.ProcessID{}, false
	}
	return v.Members[i], true
}

// has reports whether node is a member.
func (v *View) has(node gen.Atom) bool {
	_, ok := v.member(node)
	return ok
}

// nodes lists the members' nodes in order.
func (v *View) nodes() []gen.Atom {
	if v == nil {
		return nil
	}
	out := make([]gen.Atom, len(v.Members))
	for i, m := range v.Members {
		out[i] = m.Node
	}
	return out
}

// sameMembers reports whether v and o list the same members.
func (v *View) sameMembers(o *View) bool {
	return slices.Equal(v.Members, o.Members)
}

// majorityOf reports whether the nodes in set that are members of v make a
// majority of v.
func (v *View) majorityOf(set map[gen.Atom]bool) bool {
	n := 0
	for _, m := range v.Members {
		if set[m.Node] {
			n++
		}
	}
	return quorum.Reached(n, len(v.Members))
}

// with returns the view with p added, stamped key; without the view with
// node removed.
func (v *View) with(p gen.ProcessID, stamp ViewStamp) *View {
	return newView(stamp, append(slices.Clone(v.Members), p))
}

func (v *View) without(node gen.Atom, stamp ViewStamp) *View {
	return newView(stamp, slices.DeleteFunc(slices.Clone(v.Members), func(p gen.ProcessID) bool { return p.Node == node }))
}

// String lists the stamp and the members' nodes.
func (v *View) String() string {
	if v == nil {
		return "no view"
	}
	nodes := make([]string, len(v.Members))
	for i, m := range v.Members {
		nodes[i] = string(m.Node)
	}
	agreed := "proposed"
	if v.Stamp.Agreed {
		agreed = "agreed"
	}
	return fmt.Sprintf("%s %s of lineage %s {%s}", agreed, v.Stamp.Key, v.Stamp.Lineage, strings.Join(nodes, ","))
}

// validView checks a view received from the wire: a lineage, at least one
// member, every member named, sorted and unique by node. A view that fails is
// dropped as malformed rather than trusted.
func validView(v *View) bool {
	if v == nil || v.Stamp.IsZero() || v.Stamp.Lineage.Node == "" || len(v.Members) == 0 || v.Stamp.Key.Epoch == 0 {
		return false
	}
	for i, m := range v.Members {
		if m.Name == "" || m.Node == "" {
			return false
		}
		if i > 0 && v.Members[i-1].Node >= m.Node {
			return false
		}
	}
	return true
}
