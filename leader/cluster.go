package leader

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/regent-go/regent/gen"
)

// Member describes one member of a leader actor's view.
type Member struct {
	Node      gen.Atom
	ProcessID gen.ProcessID
	// PID is zero when it is not known (the member never answered, or its
	// connection dropped).
	PID gen.PID
	// Self marks the actor that was asked.
	Self bool
	// Unreachable: the member's connection dropped; its leader removes it
	// once it has been silent for GhostTTL.
	Unreachable bool
}

// MemberInspection is one member's election inspection, or why it could not be read.
type MemberInspection struct {
	Member
	Inspection map[string]string
	Err        error
}

// MessageMembersRequest asks a leader actor, from any node, for its view and
// its own inspection in one round trip; it answers a MemberReading. It reads
// only: it changes nothing in the actor. Send it with Call (Members and
// ReadMember do); both nodes must register NetworkTypes.
type MessageMembersRequest struct {
	// Items selects the inspection keys the answer carries; none means every
	// key, the user's included.
	Items []string
}

// MemberReading is a leader actor's answer to MessageMembersRequest.
type MemberReading struct {
	// PID is the answering actor's, so a reader that asked by name learns it.
	PID gen.PID
	// Members is the actor's view, itself included (Self), ordered by node name.
	Members []Member
	// Inspection is the actor's inspection for the requested items.
	Inspection map[string]string
	// Network is the answering node's network counters: connections,
	// rejected handshakes and dropped frames by reason.
	Network gen.NetworkStats
	// Coalescer is the answering node's heartbeat coalescer counters.
	Coalescer CoalescerStats
}

func (r MessageMembersRequest) answer(a *Actor) (any, error) {
	// The sender is not known here, so the user's HandleInspect sees a zero PID.
	return MemberReading{PID: a.PID(), Members: a.members(), Inspection: a.inspect(gen.PID{}, r.Items), Network: a.Node().Network().Stats(),
		Coalescer: a.share.coal.Stats()}, nil
}

// ReadMember asks the leader actor at target (a gen.PID, or a gen.ProcessID
// naming it on any node) for its view and its inspection of items (none:
// every key), in one round trip. Errors carry the runtime's cause: a refused
// connection, a wrong cookie (gen.ErrUnauthorized), a name that does not
// resolve, gen.ErrProcessUnknown when nothing is registered there.
func ReadMember(node gen.Node, target any, items ...string) (MemberReading, error) {
	answer, err := node.Call(target, MessageMembersRequest{Items: items})
	if err != nil {
		return MemberReading{}, fmt.Errorf("leader: reading %v: %w", target, err)
	}
	r, ok := answer.(MemberReading)
	if !ok {
		return MemberReading{}, fmt.Errorf("leader: reading %v: it is not a leader actor (answered %T): %w", target, answer, gen.ErrIncorrect)
	}
	return r, nil
}

// MessageReformRequest asks a leader actor, from any node, to re-form its
// view from the members it heard from lately (Actor.Reform): the operator's
// way out when a majority of the view is gone for good. It answers a
// ReformResult. It is dangerous by design (docs/membership.md); regent reform
// sends it only when told --yes.
type MessageReformRequest struct{}

// ReformResult is the answer to MessageReformRequest: the new view, or why
// the actor refused (Error, empty on success; errors do not cross the wire
// with their identity, so it is text).
type ReformResult struct {
	View  View
	Error string
}

func (MessageReformRequest) answer(a *Actor) (any, error) {
	v, err := a.Reform()
	if err != nil {
		return ReformResult{Error: err.Error()}, nil
	}
	return ReformResult{View: v}, nil
}

// ReformMember asks the leader actor at target (a gen.PID, or a gen.ProcessID
// naming it on any node) to re-form its view from the members it heard from
// lately, and returns the new view. It is never automatic and never safe if
// the members left out are alive elsewhere: see Actor.Reform.
func ReformMember(node gen.Node, target any) (View, error) {
	answer, err := node.Call(target, MessageReformRequest{})
	if err != nil {
		return View{}, fmt.Errorf("leader: asking %v to re-form: %w", target, err)
	}
	r, ok := answer.(ReformResult)
	switch {
	case !ok:
		return View{}, fmt.Errorf("leader: asking %v to re-form: it is not a leader actor (answered %T): %w", target, answer, gen.ErrIncorrect)
	case r.Error != "":
		return View{}, fmt.Errorf("leader: %v refused to re-form: %s: %w", target, r.Error, gen.ErrNotAllowed)
	}
	return r.View, nil
}

// Members asks the leader actor pid, local or remote, for its view, itself
// included, ordered by node name.
func Members(node gen.Node, pid gen.PID) ([]Member, error) {
	r, err := ReadMember(node, pid, "ergo:cluster")
	if err != nil {
		return nil, fmt.Errorf("leader: members of %s: %w", pid, err)
	}
	return r.Members, nil
}

// InspectCluster reads the election inspection of every member of the leader
// actor pid's view (pid local or remote), through remote Inspect where needed. A member that
// cannot be read carries the error (gen.ErrNoConnection when its PID is not known).
func InspectCluster(node gen.Node, pid gen.PID, items ...string) ([]MemberInspection, error) {
	members, err := Members(node, pid)
	if err != nil {
		return nil, err
	}
	out := make([]MemberInspection, 0, len(members))
	for _, m := range members {
		mi := MemberInspection{Member: m}
		if m.PID == (gen.PID{}) {
			mi.Err = fmt.Errorf("leader: inspect %s: its PID is not known: %w", m.ProcessID, gen.ErrNoConnection)
		} else {
			mi.Inspection, mi.Err = node.Inspect(m.PID, items...)
		}
		out = append(out, mi)
	}
	return out, nil
}

// FindCluster returns the leader actor of cluster on node, and false when
// the node runs none. Like Find, it reads what the actors registered, so it
// wakes none of them.
func FindCluster(node gen.Node, cluster string) (gen.PID, bool) {
	var pid gen.PID
	found := false
	withShare(node, func(s *nodeShare) {
		if s == nil {
			return
		}
		var id uint64
		if id, found = s.clusters[cluster]; found {
			pid = s.pidOf(id)
		}
	})
	return pid, found && node.IsAlive()
}

// Find lists the leader actors running on node, one per cluster, in PID
// order. It reads what the actors registered on the node at their start,
// so it wakes none of them: asking every process instead (an inspection
// each) woke a thousand members of a node of a thousand clusters at once.
// It fails (gen.ErrNodeTerminated) when the node is not running.
func Find(node gen.Node) ([]gen.PID, error) {
	if !node.IsAlive() {
		return nil, fmt.Errorf("leader: listing the leader actors of %s: %w", node.Name(), gen.ErrNodeTerminated)
	}
	var out []gen.PID
	withShare(node, func(s *nodeShare) {
		if s == nil {
			return
		}
		out = make([]gen.PID, 0, len(s.clusters))
		for _, id := range s.clusters {
			out = append(out, s.pidOf(id))
		}
	})
	slices.SortFunc(out, func(x, y gen.PID) int { return cmp.Compare(x.ID, y.ID) })
	return out, nil
}

// members lists the view for Members: its members (the declared peers
// before any view exists) and this actor.
func (a *Actor) members() []Member {
	out := []Member{{Node: a.Node().Name(), ProcessID: gen.ProcessID{Name: a.Name(), Node: a.Node().Name()}, PID: a.PID(), Self: true}}
	for _, m := range a.core.ViewMembers() {
		out = append(out, Member{Node: m.Node, ProcessID: m.ProcessID, PID: m.PID, Unreachable: !m.UnreachableSince.IsZero()})
	}
	slices.SortFunc(out, func(x, y Member) int { return strings.Compare(string(x.Node), string(y.Node)) })
	return out
}
