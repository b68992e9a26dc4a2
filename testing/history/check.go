package history

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Rule names, as Violation.Rule reports them.
const (
	// RuleElectionSafety: at most one leader, protocol or visible, per
	// lineage and term; per term whatever the lineage when RuleSingleLineage
	// applies, since then one lineage is all there can be.
	RuleElectionSafety = "election safety: at most one leader per lineage and term"
	// RuleSingleLineage: when twice the smallest MinClusterSize exceeds the
	// number of members, at most one lineage is ever agreed (two sets of at
	// least MinClusterSize members intersect).
	RuleSingleLineage = "at most one agreed lineage when 2 x MinClusterSize exceeds the members"
	// RuleOneLeaderAtOnce: two visible leaders of one lineage (of any
	// lineage, when RuleSingleLineage applies) never coexist for longer
	// than Bounds.Overlap (Bounds.StepDown when that is zero), whatever
	// their terms.
	RuleOneLeaderAtOnce = "no two visible leaders at once beyond the step-down bound"
	// RuleLeaseOverlap: two lives of one lineage (of any lineage, when
	// RuleSingleLineage applies) at different terms never both hold a lease
	// (History.Leases: their cores' LeadsAt) for longer than Bounds.Lease.
	RuleLeaseOverlap     = "no two leases of one lineage at different terms at once beyond the lease bound"
	RuleLeaderMajority   = "a leader was granted its role by a majority of its view"
	RuleMinClusterSize   = "no visible leader without an agreed view of at least MinClusterSize"
	RuleTermMonotonic    = "terms never decrease within a life"
	RuleSingleVote       = "a member votes at most once per term"
	RuleConvergence      = "one leader, followed by every live member and holding each in its view, within a bound after the last fault"
	RuleIsolatedStepDown = "an isolated leader steps down within a bound"
)

// Lines of history a Violation shows before and after the offending event.
const (
	contextBefore = 15
	contextAfter  = 5
)

// Violation is one breach of a rule: where it happened and the history
// around it. It is an error, so a checker can return it as one.
type Violation struct {
	Rule string
	// At is when the rule was broken.
	At time.Duration
	// Index is the offending event in the sorted history; len(events) when
	// the breach is the state at the end of observation.
	Index int
	// Detail says what was wrong, naming the events involved by index.
	Detail string
	// Context is the table of events around Index.
	Context string
}

// Error gives the rule, the detail and the surrounding history.
func (v *Violation) Error() string {
	return fmt.Sprintf("invariant %q violated at %s (event #%d): %s\n%s", v.Rule, v.At, v.Index, v.Detail, v.Context)
}

func violation(events []Event, rule string, i int, at time.Duration, format string, args ...any) Violation {
	context := table(events, i-contextBefore, i+contextAfter+1, i)
	if i >= len(events) {
		context += fmt.Sprintf("> #%-5d %12s  end of observation\n", i, at)
	}
	return Violation{
		Rule:    rule,
		At:      at,
		Index:   i,
		Detail:  fmt.Sprintf(format, args...),
		Context: context,
	}
}

// Bounds are the time limits of the timed rules; a zero bound skips its rule.
type Bounds struct {
	// Converge bounds the time from the last fault (or the start, when there
	// was none) to exactly one visible leader that every live member
	// follows and whose view holds every live member.
	Converge time.Duration
	// StepDown bounds how long a leader that cannot reach a quorum of its
	// view may keep leading, and how long two visible leaders may coexist
	// (the older one is on its way out: it lost its quorum to the newer).
	StepDown time.Duration
	// Overlap, when set, bounds how long two visible leaders may coexist
	// instead of StepDown: a recorder that can bound the overlap more
	// tightly than the step-down of a leader cut off (the simulator does,
	// without the message delays) says so here.
	Overlap time.Duration
	// Lease, when set, bounds how long two lives of one lineage at
	// different terms may both hold a lease (History.Leases), the leadership a
	// user acts on: tighter than Overlap, as a lease lapses with its
	// evidence at once where the visible role waits for the next tick.
	Lease time.Duration
}

// CheckAll checks every rule and returns every violation, in rule order.
func CheckAll(h *History, b Bounds) []Violation {
	events := h.Events()
	c := censusOf(events)
	var out []Violation
	out = append(out, electionSafety(events, c)...)
	out = append(out, singleLineage(events, c)...)
	out = append(out, leaderMajority(events)...)
	out = append(out, minClusterSize(events)...)
	out = append(out, termMonotonic(events)...)
	out = append(out, singleVote(events)...)
	if overlap := cmp.Or(b.Overlap, b.StepDown); overlap > 0 {
		out = append(out, oneLeaderAtOnce(events, c, h.End(), overlap)...)
	}
	if b.Lease > 0 {
		out = append(out, leaseOverlap(events, h.Leases(), c, b.Lease)...)
	}
	if b.StepDown > 0 {
		out = append(out, isolatedStepDown(events, h.End(), b.StepDown)...)
	}
	if b.Converge > 0 {
		out = append(out, convergence(events, h.End(), b.Converge)...)
	}
	return out
}

// Report formats violations one after another, empty when there are none.
func Report(vs []Violation) string {
	var b strings.Builder
	for i := range vs {
		b.WriteString(vs[i].Error())
		b.WriteString("\n")
	}
	return b.String()
}

// first returns the first violation as an error, nil when there is none.
func first(vs []Violation) error {
	if len(vs) == 0 {
		return nil
	}
	return &vs[0]
}

// CheckElectionSafety fails when two members, or two lives of one member,
// led (visibly or not) at the same term of one lineage, or at the same term
// at all when twice MinClusterSize exceeds the number of members.
func CheckElectionSafety(h *History) error {
	events := h.Events()
	return first(electionSafety(events, censusOf(events)))
}

// CheckSingleLineage fails when a second lineage became agreed although
// twice the smallest MinClusterSize exceeds the number of members.
func CheckSingleLineage(h *History) error {
	events := h.Events()
	return first(singleLineage(events, censusOf(events)))
}

// CheckOneLeaderAtOnce fails when two visible leaders of one lineage (of
// any lineage, when CheckSingleLineage's rule applies) coexisted for longer
// than bound.
func CheckOneLeaderAtOnce(h *History, bound time.Duration) error {
	events := h.Events()
	return first(oneLeaderAtOnce(events, censusOf(events), h.End(), bound))
}

// CheckLeaseOverlap fails when two lives of one lineage (of any lineage,
// when CheckSingleLineage's rule applies) at different terms both held a
// lease (History.Leases) for longer than bound.
func CheckLeaseOverlap(h *History, bound time.Duration) error {
	events := h.Events()
	return first(leaseOverlap(events, h.Leases(), censusOf(events), bound))
}

// MaxLeaseOverlap is the longest time two lives that CheckLeaseOverlap
// compares both held a lease, zero when no two ever did.
func MaxLeaseOverlap(h *History) time.Duration {
	events := h.Events()
	var longest time.Duration
	for _, o := range leaseOverlaps(h.Leases(), censusOf(events)) {
		longest = max(longest, o.both)
	}
	return longest
}

// CheckLeaderMajority fails when a member became leader (protocol leader,
// when recorded) with fewer votes than a majority of its view, itself
// included.
func CheckLeaderMajority(h *History) error { return first(leaderMajority(h.Events())) }

// CheckMinClusterSize fails when a member led visibly without an agreed
// view of at least its MinClusterSize (its view size, when the history
// does not record views).
func CheckMinClusterSize(h *History) error { return first(minClusterSize(h.Events())) }

// CheckTermMonotonic fails when a member's term went down within one life,
// or across a durable restart.
func CheckTermMonotonic(h *History) error { return first(termMonotonic(h.Events())) }

// CheckSingleVote fails when a member voted for two candidates at one term,
// in one life or across restarts: what durable state prevents.
func CheckSingleVote(h *History) error { return first(singleVote(h.Events())) }

// CheckConvergence fails when, after the last fault with every member live
// and connected, no single visible leader followed by every live member and
// holding each in its view (when recorded) appeared within bound.
func CheckConvergence(h *History, bound time.Duration) error {
	return first(convergence(h.Events(), h.End(), bound))
}

// CheckIsolatedStepDown fails when a leader, visible or not, that could
// reach fewer members of its view than a majority of it, itself included,
// kept leading for longer than bound.
func CheckIsolatedStepDown(h *History, bound time.Duration) error {
	return first(isolatedStepDown(h.Events(), h.End(), bound))
}

// life names one life of one member.
type life struct {
	member string
	life   int
}

// census is what the rules need to know of the cluster as a whole.
type census struct {
	// members counts the distinct members; a second actor on another
	// member's node (Event.Node) is not one.
	members int
	// min is the smallest MinClusterSize any member reported.
	min int
	// strict: 2 x min > members, so two sets of at least min members
	// always share one and at most one lineage can ever be agreed.
	strict bool
}

func censusOf(events []Event) census {
	second := map[string]bool{}
	var c census
	for _, e := range events {
		if e.Node != "" {
			second[e.Member] = true
		}
		if e.Kind == KindState && e.MinClusterSize > 0 && (c.min == 0 || e.MinClusterSize < c.min) {
			c.min = e.MinClusterSize
		}
	}
	for _, n := range names(events) {
		if !second[n] {
			c.members++
		}
	}
	c.strict = c.min > 0 && 2*c.min > c.members
	return c
}

// names lists, sorted, every member and second actor a history mentions:
// as the subject of an event, in a partition or cut, in a view, or as the
// peer of a join or leave.
func names(events []Event) []string {
	seen := map[string]bool{}
	add := func(ns ...string) {
		for _, n := range ns {
			if n != "" {
				seen[n] = true
			}
		}
	}
	for _, e := range events {
		add(e.Member, e.Peer)
		add(e.View...)
		for _, g := range e.Groups {
			add(g...)
		}
		for _, c := range e.Cuts {
			add(c[0], c[1])
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// conflicts reports, once per key, an event whose claim on a key differs
// from the first event's claim on it; claim says whether an event claims.
func conflicts[K, V comparable](events []Event, claim func(Event) (K, V, bool), report func(i, first int) Violation) []Violation {
	firsts := map[K]int{}
	reported := map[K]bool{}
	var out []Violation
	for i, e := range events {
		k, v, ok := claim(e)
		if !ok {
			continue
		}
		j, seen := firsts[k]
		if !seen {
			firsts[k] = i
			continue
		}
		if _, v0, _ := claim(events[j]); v0 != v && !reported[k] {
			reported[k] = true
			out = append(out, report(i, j))
		}
	}
	return out
}

// leads reports whether e shows its member leading, visibly or not.
func (e Event) leads() bool {
	return e.Kind == KindState && (e.ProtocolLeader || e.Role == RoleLeader)
}

func electionSafety(events []Event, c census) []Violation {
	type key struct {
		lineage string
		term    uint64
	}
	claim := func(e Event) (key, life, bool) {
		k := key{e.Lineage, e.Term}
		if c.strict {
			k.lineage = ""
		}
		return k, life{e.Member, e.Life}, e.leads()
	}
	return conflicts(events, claim, func(i, first int) Violation {
		e, p := events[i], events[first]
		scope := fmt.Sprintf("lineage %q", e.Lineage)
		if c.strict {
			scope = fmt.Sprintf("any lineage, as 2 x MinClusterSize %d > %d members", c.min, c.members)
		}
		return violation(events, RuleElectionSafety, i, e.At, "%s#%d leads at term %d, which %s#%d already led (event #%d); lineages %q and %q, one leader per term of %s",
			e.Member, e.Life, e.Term, p.Member, p.Life, first, e.Lineage, p.Lineage, scope)
	})
}

func singleLineage(events []Event, c census) []Violation {
	if !c.strict {
		return nil
	}
	firstAt := -1
	for i, e := range events {
		if e.Kind != KindState || !e.Agreed || e.Lineage == "" {
			continue
		}
		if firstAt < 0 {
			firstAt = i
			continue
		}
		if p := events[firstAt]; p.Lineage != e.Lineage {
			return []Violation{violation(events, RuleSingleLineage, i, e.At,
				"%s#%d holds agreed lineage %s, but %s#%d held agreed lineage %s (event #%d); 2 x MinClusterSize %d > %d members",
				e.Member, e.Life, e.Lineage, p.Member, p.Life, p.Lineage, firstAt, c.min, c.members)}
		}
	}
	return nil
}

func leaderMajority(events []Event) []Violation {
	leading := map[life]bool{}
	var out []Violation
	for i, e := range events {
		if e.Kind != KindState {
			continue
		}
		who := life{e.Member, e.Life}
		became := e.leads() && !leading[who]
		leading[who] = e.leads()
		if became && (e.VotesGranted < e.Quorum || 2*e.VotesGranted <= e.ViewSize) {
			out = append(out, violation(events, RuleLeaderMajority, i, e.At,
				"%s#%d became leader at term %d with %d votes in a view of %d (quorum %d)",
				e.Member, e.Life, e.Term, e.VotesGranted, e.ViewSize, e.Quorum))
		}
	}
	return out
}

func minClusterSize(events []Event) []Violation {
	var out []Violation
	for i, e := range events {
		if e.Kind != KindState || e.Role != RoleLeader {
			continue
		}
		switch {
		case e.Lineage == "" && e.ViewSize < e.MinClusterSize:
			out = append(out, violation(events, RuleMinClusterSize, i, e.At,
				"%s#%d leads at term %d with a view of %d, below MinClusterSize %d",
				e.Member, e.Life, e.Term, e.ViewSize, e.MinClusterSize))
		case e.Lineage != "" && (!e.Agreed || e.AgreedSize < e.MinClusterSize):
			out = append(out, violation(events, RuleMinClusterSize, i, e.At,
				"%s#%d leads at term %d with a view of lineage %s (agreed %t, %d members), MinClusterSize %d",
				e.Member, e.Life, e.Term, e.Lineage, e.Agreed, e.ViewSize, e.MinClusterSize))
		}
	}
	return out
}

func termMonotonic(events []Event) []Violation {
	type seen struct {
		term  uint64
		index int
	}
	last := map[string]seen{}
	var out []Violation
	for i, e := range events {
		switch e.Kind {
		case KindRestart, KindStart:
			if !e.Durable {
				delete(last, e.Member)
			}
		case KindState, KindVote:
			prev, ok := last[e.Member]
			if ok && e.Term < prev.term {
				out = append(out, violation(events, RuleTermMonotonic, i, e.At,
					"%s#%d is at term %d after term %d (event #%d)", e.Member, e.Life, e.Term, prev.term, prev.index))
			}
			last[e.Member] = seen{e.Term, i}
		}
	}
	return out
}

func singleVote(events []Event) []Violation {
	type ballot struct {
		member string
		term   uint64
	}
	votes := func(e Event) (ballot, string, bool) {
		return ballot{e.Member, e.Term}, e.VotedFor, e.Kind == KindVote && e.VotedFor != ""
	}
	return conflicts(events, votes, func(i, first int) Violation {
		e, p := events[i], events[first]
		return violation(events, RuleSingleVote, i, e.At, "%s#%d votes for %s at term %d after %s#%d voted for %s (event #%d)",
			e.Member, e.Life, e.VotedFor, e.Term, p.Member, p.Life, p.VotedFor, first)
	})
}

// lasting applies events to w one instant at a time (every event of one
// time before judging) and reports, once per episode, every key that holds
// (held returns the keys with a description) for longer than bound without
// a break.
func lasting(events []Event, end, bound time.Duration, w *world, rule string, held func() map[string]string) []Violation {
	type episode struct {
		since    time.Duration
		what     string
		reported bool
	}
	open := map[string]*episode{}
	var out []Violation
	expire := func(now time.Duration, i int) {
		for _, k := range slices.Sorted(maps.Keys(open)) {
			ep := open[k]
			if ep.reported || now <= ep.since+bound {
				continue
			}
			ep.reported = true
			out = append(out, violation(events, rule, i, ep.since+bound, "%s since %s, still at %s (bound %s)", ep.what, ep.since, now, bound))
		}
	}
	for i := 0; i < len(events); {
		at := events[i].At
		expire(at, i)
		for ; i < len(events) && events[i].At == at; i++ {
			w.apply(events[i])
		}
		now := held()
		for k := range open {
			if _, ok := now[k]; !ok {
				delete(open, k)
			}
		}
		for k, what := range now {
			if open[k] == nil {
				open[k] = &episode{since: at, what: what}
			}
		}
	}
	expire(end, len(events))
	return out
}

func oneLeaderAtOnce(events []Event, c census, end, bound time.Duration) []Violation {
	w := newWorld(events)
	return lasting(events, end, bound, w, RuleOneLeaderAtOnce, func() map[string]string {
		byLineage := map[string][]string{}
		var all []string
		for _, n := range w.names {
			m := w.members[n]
			if m.live && m.role == RoleLeader {
				desc := fmt.Sprintf("%s (term %d, lineage %s)", n, m.term, m.lineage)
				byLineage[m.lineage] = append(byLineage[m.lineage], desc)
				all = append(all, desc)
			}
		}
		out := map[string]string{}
		for l, ls := range byLineage {
			if len(ls) > 1 {
				out["lineage "+l] = "visible leaders of one lineage: " + strings.Join(ls, ", ")
			}
		}
		if c.strict && len(all) > 1 && len(byLineage) > 1 {
			out["any lineage"] = fmt.Sprintf("visible leaders with 2 x MinClusterSize %d > %d members: %s", c.min, c.members, strings.Join(all, ", "))
		}
		return out
	})
}

// overlap is two leases held at once, and for how long.
type overlap struct {
	first, second Lease
	both          time.Duration
}

// leaseOverlaps lists every two leases of different lives and terms, of one
// lineage (any, when c.strict), held at once for some time.
func leaseOverlaps(ls []Lease, c census) []overlap {
	var out []overlap
	for i, a := range ls {
		for _, b := range ls[i+1:] {
			if b.From >= a.Until {
				break // ls is sorted by From
			}
			if (a.Member == b.Member && a.Life == b.Life) || a.Term == b.Term || (a.Lineage != b.Lineage && !c.strict) {
				continue
			}
			out = append(out, overlap{a, b, min(a.Until, b.Until) - b.From})
		}
	}
	return out
}

func leaseOverlap(events []Event, ls []Lease, c census, bound time.Duration) []Violation {
	var out []Violation
	for _, o := range leaseOverlaps(ls, c) {
		if o.both > bound {
			// The context is the history around the second lease's start.
			i, _ := slices.BinarySearchFunc(events, o.second.From, func(e Event, at time.Duration) int { return cmp.Compare(e.At, at) })
			out = append(out, violation(events, RuleLeaseOverlap, i, o.second.From+bound,
				"leases %s and %s held at once for %s (bound %s)", o.first, o.second, o.both, bound))
		}
	}
	return out
}

func isolatedStepDown(events []Event, end, bound time.Duration) []Violation {
	w := newWorld(events)
	return lasting(events, end, bound, w, RuleIsolatedStepDown, func() map[string]string {
		out := map[string]string{}
		for _, n := range w.names {
			m := w.members[n]
			if !m.live || (m.role != RoleLeader && !m.protocol) {
				continue
			}
			if reach, need := w.reach(n); reach < need {
				out[n] = fmt.Sprintf("%s still leads at term %d reaching %d of its view, below its quorum %d", n, m.term, reach, need)
			}
		}
		return out
	})
}

// world replays the fault events and the members' states, to tell who can
// reach whom and who leads at any point of a history.
type world struct {
	names   []string // every member and second actor, sorted
	members map[string]*memberState
	// node maps a second actor to the member whose node it runs on.
	node map[string]string
	// cut holds the pairs of nodes that cannot reach each other, both ways.
	cut map[[2]string]bool
}

type memberState struct {
	live     bool
	role     string
	leader   string
	term     uint64
	quorum   int
	protocol bool
	lineage  string
	view     []string
}

func newWorld(events []Event) *world {
	w := &world{names: names(events), members: map[string]*memberState{}, node: map[string]string{}, cut: map[[2]string]bool{}}
	for _, n := range w.names {
		w.members[n] = &memberState{live: true}
	}
	started := map[string]bool{}
	for _, e := range events {
		if e.Node != "" {
			w.node[e.Member] = e.Node
		}
		switch e.Kind {
		case KindStart, KindRestart, KindCrash, KindStop:
			// An actor whose first lifecycle event is a start was not
			// running before it.
			if !started[e.Member] {
				started[e.Member] = true
				w.members[e.Member].live = e.Kind != KindStart
			}
		}
	}
	return w
}

// nodeOf is the node name runs on, named by its member.
func (w *world) nodeOf(name string) string {
	if n, ok := w.node[name]; ok {
		return n
	}
	return name
}

// linked reports whether a and b can reach each other.
func (w *world) linked(a, b string) bool {
	na, nb := w.nodeOf(a), w.nodeOf(b)
	return na == nb || !w.cut[[2]string{na, nb}]
}

func (w *world) apply(e Event) {
	m := w.members[e.Member]
	switch e.Kind {
	case KindState:
		m.role, m.leader, m.term, m.quorum = e.Role, e.Leader, e.Term, e.Quorum
		m.protocol, m.lineage, m.view = e.ProtocolLeader, e.Lineage, e.View
	case KindCrash, KindStop:
		*m = memberState{}
	case KindRestart, KindStart:
		*m = memberState{live: true}
	case KindHeal:
		clear(w.cut)
	case KindPartition:
		clear(w.cut)
		side := map[string]int{}
		for i, g := range e.Groups {
			for _, n := range g {
				side[n] = i + 1
			}
		}
		if len(e.Groups) > 0 {
			// A member left out of every group is cut off from everyone.
			for _, a := range w.names {
				for _, b := range w.names {
					if _, second := w.node[a]; second || a == b {
						continue
					}
					if _, second := w.node[b]; !second && (side[a] == 0 || side[a] != side[b]) {
						w.cut[[2]string{a, b}] = true
					}
				}
			}
		}
		for _, c := range e.Cuts {
			w.cut[[2]string{c[0], c[1]}], w.cut[[2]string{c[1], c[0]}] = true, true
		}
	}
}

// reach counts what leader n reaches, itself included, and what it needs:
// the members of its view that are live and linked to it, against a
// majority of the view; without a recorded view, every live member linked
// to it against its recorded quorum.
func (w *world) reach(n string) (reach, need int) {
	m := w.members[n]
	if m.view == nil {
		for _, o := range w.names {
			if w.members[o].live && w.linked(n, o) {
				reach++
			}
		}
		return reach, m.quorum
	}
	for _, v := range m.view {
		if o := w.members[v]; v == n || (o != nil && o.live && w.linked(n, v)) {
			reach++
		}
	}
	return reach, len(m.view)/2 + 1
}

// healthy reports whether every member is live, no second actor runs and
// no cut stands.
func (w *world) healthy() bool {
	if len(w.cut) > 0 {
		return false
	}
	for _, n := range w.names {
		_, second := w.node[n]
		if w.members[n].live == second {
			return false
		}
	}
	return true
}

// converged reports whether exactly one live member leads visibly, every
// other live member follows it, and its view (when recorded) holds each.
func (w *world) converged() bool {
	leader := ""
	for _, n := range w.names {
		if m := w.members[n]; m.live && m.role == RoleLeader {
			if leader != "" {
				return false
			}
			leader = n
		}
	}
	if leader == "" {
		return false
	}
	view := w.members[leader].view
	for _, n := range w.names {
		m := w.members[n]
		if !m.live {
			continue
		}
		if n != leader && (m.role != RoleFollower || m.leader != leader) {
			return false
		}
		if view != nil && !slices.Contains(view, n) {
			return false
		}
	}
	return true
}

// settle finds the last fault and how long after it the cluster converged.
// ok is false when the cluster was not healthy after the last fault, or did
// not converge before end; then at is end-from.
func settle(events []Event, end time.Duration) (from, at time.Duration, idx int, healthy, ok bool) {
	last := -1
	for i, e := range events {
		if e.Kind.isFault() {
			last = i
		}
	}
	w := newWorld(events)
	for i := 0; i <= last; i++ {
		w.apply(events[i])
	}
	if last >= 0 {
		from = events[last].At
	}
	if !w.healthy() {
		return from, 0, last, false, false
	}
	if last >= 0 && w.converged() {
		return from, 0, last, true, true
	}
	for i := last + 1; i < len(events); i++ {
		w.apply(events[i])
		if (i+1 == len(events) || events[i+1].At != events[i].At) && w.converged() {
			return from, events[i].At - from, i, true, true
		}
	}
	return from, end - from, len(events), true, false
}

// SettleTime is how long after the last fault (or the start) the cluster
// had exactly one visible leader followed by every live member and holding
// each in its view. ok is false when the cluster did not end live and
// connected, or never converged.
func SettleTime(h *History) (d time.Duration, ok bool) {
	_, d, _, _, ok = settle(h.Events(), h.End())
	return d, ok
}

func convergence(events []Event, end time.Duration, bound time.Duration) []Violation {
	from, d, idx, healthy, ok := settle(events, end)
	switch {
	case !healthy:
		return nil
	case ok && d > bound:
		return []Violation{violation(events, RuleConvergence, idx, from+d,
			"one leader only %s after the last fault at %s, bound %s", d, from, bound)}
	case !ok && d > bound:
		return []Violation{violation(events, RuleConvergence, idx, end,
			"no single leader followed by and holding every live member %s after the last fault at %s, bound %s", d, from, bound)}
	}
	return nil
}
