package modelcheck

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
	"github.com/regent-go/regent/internal/quorum"
)

// Invariant is one rule checked on every state a search reaches. Check
// returns nil when s obeys it, or an error saying how s breaks it.
type Invariant struct {
	Name  string
	Check func(s *State) error
}

// Default is the invariants every search checks unless its Config says
// otherwise: one leader per term, terms never decrease, sent terms are
// stored, no visible leader
// below MinClusterSize, one membership per view key, and one agreed lineage
// while MinClusterSize exceeds half the members. ViewsThatCanElectIntersect
// is added by searches with durable state (see there why).
func Default() []Invariant {
	return []Invariant{OneLeaderPerTerm, TermsNeverDecrease, SentTermsAreStored, NoLeaderBelowMinClusterSize, OneKeyOneMembership, OneAgreedLineage}
}

// OneLeaderPerTerm is election safety (DESIGN.md invariant 1) at its
// strictest: on the whole path, no two members, and no two lives of one
// member, led the election at one term, visibly or not, whatever the
// lineage of the views they led. The core promises one leader per lineage
// and term; two lineages exist only when MinClusterSize is at or below half
// and groups formed apart, which no search here sets up.
var OneLeaderPerTerm = Invariant{
	Name: "at most one leader per term",
	Check: func(s *State) error {
		for k := 1; k < len(s.leaders); k++ {
			a, b := s.leaders[k-1], s.leaders[k]
			if a.Term == b.Term {
				return fmt.Errorf("%s#%d (lineage %s) and %s#%d (lineage %s) both led term %d",
					name(a.Member), a.Life, a.Lineage, name(b.Member), b.Life, b.Lineage, a.Term)
			}
		}
		return nil
	},
}

// OneLeaderPerLineageAndTerm is election safety as the core promises it
// whatever MinClusterSize (docs/membership.md): on the whole path, no two
// member lives led one lineage at one term. Searches in which groups form
// apart on purpose (a floor at or below half, disjoint Bootstrap lists)
// check it instead of OneLeaderPerTerm, which they break by design.
var OneLeaderPerLineageAndTerm = Invariant{
	Name: "at most one leader per lineage and term",
	Check: func(s *State) error {
		for k := range s.leaders {
			for j := k + 1; j < len(s.leaders) && s.leaders[j].Term == s.leaders[k].Term; j++ {
				if a, b := s.leaders[k], s.leaders[j]; a.Lineage == b.Lineage {
					return fmt.Errorf("%s#%d and %s#%d both led lineage %s at term %d",
						name(a.Member), a.Life, name(b.Member), b.Life, a.Lineage, a.Term)
				}
			}
		}
		return nil
	},
}

// TermsNeverDecrease is DESIGN.md invariant 5: a member's term never goes
// below what it held before within a life, and a durable restart starts
// from the stored term; SentTermsAreStored makes sure no other member saw
// a higher one.
var TermsNeverDecrease = Invariant{
	Name: "terms never decrease",
	Check: func(s *State) error {
		for i := range s.members {
			if c := s.members[i].core; c != nil && c.Term() < s.members[i].floor {
				return fmt.Errorf("%s is at term %d after term %d", name(i), c.Term(), s.members[i].floor)
			}
		}
		return nil
	},
}

// SentTermsAreStored: a message in flight names no term above its sender's
// stored term (pre-vote traffic aside, which moves no term). With it, a new
// life may start from its stored term (TermsNeverDecrease) without
// forgetting any term another member saw.
var SentTermsAreStored = Invariant{
	Name: "sent terms are stored",
	Check: func(s *State) error {
		for _, e := range s.net {
			m := s.members[e.from]
			if e.fromPID != m.pid || isPreVote(e.out.Message) {
				continue
			}
			if t := headerTerm(e.out.Message); t > m.stored.Term {
				return fmt.Errorf("%s sent %s at term %d with term %d stored", name(e.from), describeMessage(e.out.Message), t, m.stored.Term)
			}
		}
		return nil
	},
}

// isPreVote reports whether msg is a pre-vote request or answer.
func isPreVote(msg any) bool {
	switch m := msg.(type) {
	case election.MessageRequestVote:
		return m.PreVote
	case election.MessageVote:
		return m.PreVote
	}
	return false
}

// headerTerm is the term in msg's Header, 0 when it has none.
func headerTerm(msg any) uint64 {
	v := reflect.ValueOf(msg)
	if v.Kind() != reflect.Struct {
		return 0
	}
	f := v.FieldByName("Header")
	if !f.IsValid() {
		return 0
	}
	if h, ok := f.Interface().(election.Header); ok {
		return h.Term
	}
	return 0
}

// NoLeaderBelowMinClusterSize is DESIGN.md invariant 4 (rule R10): a
// visible leader holds an agreed view that includes it and has at least
// MinClusterSize members.
var NoLeaderBelowMinClusterSize = Invariant{
	Name: "no leader below MinClusterSize",
	Check: func(s *State) error {
		for i := range s.members {
			c := s.members[i].core
			if c == nil || !c.IsLeader() {
				continue
			}
			v, ok := c.View()
			switch {
			case !ok:
				return fmt.Errorf("%s leads visibly without a view", name(i))
			case !v.Stamp.Agreed:
				return fmt.Errorf("%s leads visibly with a view not agreed: %s", name(i), describeView(&v))
			case !slices.ContainsFunc(v.Members, func(p gen.ProcessID) bool { return p.Node == node(i) }):
				return fmt.Errorf("%s leads visibly with a view it is not in: %s", name(i), describeView(&v))
			case len(v.Members) < s.cfg.MinClusterSize:
				return fmt.Errorf("%s leads a view of %d below MinClusterSize %d: %s", name(i), len(v.Members), s.cfg.MinClusterSize, describeView(&v))
			}
		}
		return nil
	},
}

// OneKeyOneMembership is step 2 of the intersection argument
// (docs/membership.md, rule R7): no two members hold views of one lineage
// and key with different members, and no member met such a pair and
// stopped (a Fatal effect).
var OneKeyOneMembership = Invariant{
	Name: "one view key names one membership",
	Check: func(s *State) error {
		for i := range s.members {
			if f := s.members[i].fatal; f != "" {
				return fmt.Errorf("%s stopped: %s", name(i), f)
			}
		}
		held := latestViews.held(s)
		for x := range held {
			for y := x + 1; y < len(held); y++ {
				a, b := held[x], held[y]
				if a != nil && b != nil && a.Lineage == b.Lineage && a.Key == b.Key && !slices.Equal(a.Members, b.Members) {
					return fmt.Errorf("%s holds %s and %s holds %s", name(x), a, name(y), b)
				}
			}
		}
		return nil
	},
}

// OneAgreedLineage is DESIGN.md's "at most one cluster ever agreed when
// MinClusterSize exceeds half the members that take part": on the whole
// path, no two lineages were held agreed. It checks nothing when the floor
// is at or below half, where groups that never met may each form one.
var OneAgreedLineage = Invariant{
	Name: "at most one agreed lineage while MinClusterSize exceeds half",
	Check: func(s *State) error {
		if 2*s.cfg.MinClusterSize > s.cfg.Members && len(s.agreed) > 1 {
			return fmt.Errorf("lineages %v were agreed although MinClusterSize %d exceeds half of %d members",
				s.agreed, s.cfg.MinClusterSize, s.cfg.Members)
		}
		return nil
	},
}

// View is one member's latest accepted view as the view invariants read it.
type View struct {
	// Members are the view's node names, sorted.
	Members []gen.Atom
	// Lineage, Key and Agreed are the view's stamp (election.ViewStamp).
	Lineage election.Lineage
	Key     election.ViewKey
	Agreed  bool
}

// String is "{n1,n2,n3}t2e1+@1n1": the members, then the key's term and
// epoch, + for agreed (? for not), and the lineage's term and node.
func (v View) String() string {
	names := make([]string, len(v.Members))
	for i, n := range v.Members {
		names[i] = short(n)
	}
	return "{" + strings.Join(names, ",") + "}" + describeStamp(election.ViewStamp{Lineage: v.Lineage, Key: v.Key, Agreed: v.Agreed})
}

// has reports whether n is a member of v.
func (v View) has(n gen.Atom) bool {
	_, ok := slices.BinarySearch(v.Members, n)
	return ok
}

// ViewFunc reads the view member i of s holds; ok is false when it holds
// none. It must read only member i's core, or its stored HardState while it
// is down, both of which the state key holds.
type ViewFunc func(s *State, i int) (v View, ok bool)

// LatestView reads the latest view member i accepted, committed or not,
// which is the view it votes and campaigns with (R2): its core's while it
// runs; while it is down, the one it persisted when restarts are durable,
// and none otherwise, since it will come back without one.
func LatestView(s *State, i int) (View, bool) {
	m := s.members[i]
	var ev *election.View
	switch {
	case m.core != nil:
		v, ok := m.core.View()
		if !ok {
			return View{}, false
		}
		ev = &v
	case s.cfg.Durable && m.stored.View != nil:
		ev = m.stored.View
	default:
		return View{}, false
	}
	v := View{Lineage: ev.Stamp.Lineage, Key: ev.Stamp.Key, Agreed: ev.Stamp.Agreed}
	for _, p := range ev.Members {
		v.Members = append(v.Members, p.Node)
	}
	slices.Sort(v.Members)
	return v, true
}

// viewReader reads members' views with a ViewFunc, remembering what it
// read of each core and of each stored view: states share the cores they
// did not change, so each is read once. Its cache holds its keys, so no
// address is reused while cached, and is emptied when it grows large.
type viewReader struct {
	read ViewFunc
	mu   sync.Mutex // guards seen: one Invariant may serve searches run in parallel
	seen map[viewSource]*View
}

// viewSource is what a ViewFunc reads for a member: its core while it runs,
// its stored view while it is down.
type viewSource struct {
	core   *election.Core
	stored *election.View
}

func newViewReader(read ViewFunc) *viewReader {
	return &viewReader{read: read, seen: map[viewSource]*View{}}
}

// latestViews reads LatestView for the invariants that use it.
var latestViews = newViewReader(LatestView)

// held reads every member's view in s, nil for none.
func (r *viewReader) held(s *State) []*View {
	out := make([]*View, len(s.members))
	for i, m := range s.members {
		src := viewSource{core: m.core}
		if m.core == nil {
			if !s.cfg.Durable {
				continue
			}
			src.stored = m.stored.View
		}
		out[i] = r.get(src, func() *View {
			if v, ok := r.read(s, i); ok {
				return &v
			}
			return nil
		})
	}
	return out
}

func (r *viewReader) get(src viewSource, read func() *View) *View {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, hit := r.seen[src]; hit {
		return v
	}
	if len(r.seen) >= 1<<12 {
		clear(r.seen)
	}
	v := read()
	r.seen[src] = v
	return v
}

// QuorumIntersection is DESIGN.md invariant 3: take every two views that
// members hold, each held by one of its own members (only a member of a
// view campaigns with it), and which together says could both elect in one
// term; every majority of one must meet every majority of the other, so
// that two leaders of one term would need a voter to grant twice (R1).
// read and together must be functions of what the state key holds.
func QuorumIntersection(read ViewFunc, together func(a, b View, held []*View) bool) Invariant {
	reader := newViewReader(read)
	return Invariant{
		Name: "any two quorums that can elect intersect",
		Check: func(s *State) error {
			held := reader.held(s)
			type owned struct {
				member int
				view   View
			}
			var cands []owned
			for i, v := range held {
				if v != nil && v.has(node(i)) && !slices.ContainsFunc(cands, func(o owned) bool {
					return o.view.Lineage == v.Lineage && o.view.Key == v.Key && slices.Equal(o.view.Members, v.Members)
				}) {
					cands = append(cands, owned{i, *v})
				}
			}
			for x := range cands {
				for y := x + 1; y < len(cands); y++ {
					a, b := cands[x], cands[y]
					if !together(a.view, b.view, held) {
						continue
					}
					if qa, qb, ok := disjointMajorities(a.view.Members, b.view.Members); ok {
						return fmt.Errorf("%s's view %s and %s's view %s can both still win, and admit disjoint majorities {%s} and {%s}",
							name(a.member), a.view, name(b.member), b.view, shortNames(qa), shortNames(qb))
					}
				}
			}
			return nil
		},
	}
}

// ViewsThatCanElectIntersect is QuorumIntersection over LatestView with
// CanBothWin: the chain argument of docs/membership.md (views that can
// still win are equal or one change apart) checked on every state. It
// assumes durable state: a member restarted without it comes back with no
// view and grants any candidate again, which the document says breaks
// exactly this.
var ViewsThatCanElectIntersect = QuorumIntersection(LatestView, CanBothWin)

// CanBothWin reports whether two agreed views of one lineage with
// different keys could both elect in one term, given every member's view
// (held, by member; nil for none): each must still be able to win a
// regular election (R3), that is, a majority of its members must hold views
// that grant it (Grants). Whom a voter grants only narrows as its view moves
// on: its key grows within a lineage, the agreed flag is never cleared, and
// a member holding an agreed view switches only to another agreed lineage,
// whose holders grant nothing of this one. So a view that cannot win now
// could win later only if a voter forgot its view, which durable state
// rules out (Reform, which the checker never calls, breaks it on purpose).
// Views of different lineages are different
// clusters: OneAgreedLineage is the rule for them. Views not agreed elect
// only in a formation, whose safety rests on MinClusterSize instead
// (OneAgreedLineage, OneLeaderPerTerm).
func CanBothWin(a, b View, held []*View) bool {
	return a.Agreed && b.Agreed && a.Lineage == b.Lineage && a.Key != b.Key && canWin(a, held) && canWin(b, held)
}

// canWin reports whether a majority of v's members hold views that grant a
// candidate holding v.
func canWin(v View, held []*View) bool {
	n := 0
	for i, w := range held {
		if v.has(node(i)) && Grants(w, v) {
			n++
		}
	}
	return quorum.Reached(n, len(v.Members))
}

// Grants is rule R2 from the voter's side, terms and votes aside: whether a
// voter holding w (nil for none) may grant a candidate holding v. A voter
// without a view grants anyone; one of the candidate's lineage grants a
// view at least as new, agreed unless its own is not; one of another
// lineage grants only while its own view is not agreed.
func Grants(w *View, v View) bool {
	switch {
	case w == nil:
		return true
	case w.Lineage == v.Lineage:
		return v.Key.Compare(w.Key) >= 0 && (v.Agreed || !w.Agreed)
	}
	return !w.Agreed
}

func shortNames(ns []gen.Atom) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = short(n)
	}
	return strings.Join(out, ",")
}

// disjointMajorities finds a majority of a and a majority of b that share
// no member, when there are such: each takes its members outside the other
// view first, then splits the common ones.
func disjointMajorities(a, b []gen.Atom) (qa, qb []gen.Atom, ok bool) {
	var onlyA, onlyB, both []gen.Atom
	for _, n := range a {
		if slices.Contains(b, n) {
			both = append(both, n)
		} else {
			onlyA = append(onlyA, n)
		}
	}
	for _, n := range b {
		if !slices.Contains(a, n) {
			onlyB = append(onlyB, n)
		}
	}
	needA := max(quorum.Majority(len(a))-len(onlyA), 0)
	needB := max(quorum.Majority(len(b))-len(onlyB), 0)
	if needA+needB > len(both) {
		return nil, nil, false
	}
	qa = append(slices.Clone(onlyA[:min(len(onlyA), quorum.Majority(len(a)))]), both[:needA]...)
	qb = append(slices.Clone(onlyB[:min(len(onlyB), quorum.Majority(len(b)))]), both[needA:needA+needB]...)
	slices.Sort(qa)
	slices.Sort(qb)
	return qa, qb, true
}
