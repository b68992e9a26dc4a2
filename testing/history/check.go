package history

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Rule names, as Violation.Rule reports them.
const (
	RuleElectionSafety   = "election safety: at most one leader per term"
	RuleLeaderMajority   = "a leader was granted its role by a majority of its view"
	RuleMinClusterSize   = "no leader below MinClusterSize"
	RuleTermMonotonic    = "terms never decrease within a life"
	RuleSingleVote       = "a member votes at most once per term"
	RuleConvergence      = "exactly one leader within a bound after the last fault heals"
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
	// was none) to exactly one leader that every live member follows.
	Converge time.Duration
	// StepDown bounds how long a leader that cannot reach a quorum of its
	// view may keep leading.
	StepDown time.Duration
}

// CheckAll checks every rule and returns every violation, in rule order.
func CheckAll(h *History, b Bounds) []Violation {
	events := h.Events()
	var out []Violation
	out = append(out, electionSafety(events)...)
	out = append(out, leaderMajority(events)...)
	out = append(out, minClusterSize(events)...)
	out = append(out, termMonotonic(events)...)
	out = append(out, singleVote(events)...)
	if b.Converge > 0 {
		out = append(out, convergence(events, h.End(), b.Converge)...)
	}
	if b.StepDown > 0 {
		out = append(out, isolatedStepDown(events, h.End(), b.StepDown)...)
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
// led at the same term.
func CheckElectionSafety(h *History) error { return first(electionSafety(h.Events())) }

// CheckLeaderMajority fails when a member became leader with fewer votes
// than a majority of its view, itself included.
func CheckLeaderMajority(h *History) error { return first(leaderMajority(h.Events())) }

// CheckMinClusterSize fails when a member led while its view was smaller
// than its MinClusterSize.
func CheckMinClusterSize(h *History) error { return first(minClusterSize(h.Events())) }

// CheckTermMonotonic fails when a member's term went down within one life,
// or across a durable restart.
func CheckTermMonotonic(h *History) error { return first(termMonotonic(h.Events())) }

// CheckSingleVote fails when a member voted for two candidates at one term,
// in one life or across restarts: what durable state prevents.
func CheckSingleVote(h *History) error { return first(singleVote(h.Events())) }

// CheckConvergence fails when, after the last fault with every member live
// and connected, no single leader followed by every live member appeared
// within bound.
func CheckConvergence(h *History, bound time.Duration) error {
	return first(convergence(h.Events(), h.End(), bound))
}

// CheckIsolatedStepDown fails when a leader that could reach fewer members
// than its quorum, itself included, kept leading for longer than bound.
func CheckIsolatedStepDown(h *History, bound time.Duration) error {
	return first(isolatedStepDown(h.Events(), h.End(), bound))
}

// life names one life of one member.
type life struct {
	member string
	life   int
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

func electionSafety(events []Event) []Violation {
	leads := func(e Event) (uint64, life, bool) {
		return e.Term, life{e.Member, e.Life}, e.Kind == KindState && e.Role == RoleLeader
	}
	return conflicts(events, leads, func(i, first int) Violation {
		e, p := events[i], events[first]
		return violation(events, RuleElectionSafety, i, e.At, "%s#%d leads at term %d, which %s#%d already led (event #%d)",
			e.Member, e.Life, e.Term, p.Member, p.Life, first)
	})
}

func leaderMajority(events []Event) []Violation {
	role := map[life]string{}
	var out []Violation
	for i, e := range events {
		if e.Kind != KindState {
			continue
		}
		who := life{e.Member, e.Life}
		became := e.Role == RoleLeader && role[who] != RoleLeader
		role[who] = e.Role
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
		if e.Kind == KindState && e.Role == RoleLeader && e.ViewSize < e.MinClusterSize {
			out = append(out, violation(events, RuleMinClusterSize, i, e.At,
				"%s#%d leads at term %d with a view of %d, below MinClusterSize %d",
				e.Member, e.Life, e.Term, e.ViewSize, e.MinClusterSize))
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
		case KindRestart:
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

// world replays the fault events and the members' states, to tell who can
// reach whom and who leads at any point of a history.
type world struct {
	names   []string
	members map[string]*memberState
	group   map[string]int // side of the current partition; all zero when healed
}

type memberState struct {
	live   bool
	role   string
	leader string
	quorum int
}

func newWorld(events []Event) *world {
	w := &world{members: map[string]*memberState{}, group: map[string]int{}}
	add := func(name string) {
		if name != "" && w.members[name] == nil {
			w.members[name] = &memberState{live: true}
			w.names = append(w.names, name)
		}
	}
	for _, e := range events {
		add(e.Member)
		for _, g := range e.Groups {
			for _, n := range g {
				add(n)
			}
		}
	}
	slices.Sort(w.names)
	return w
}

func (w *world) apply(e Event) {
	m := w.members[e.Member]
	switch e.Kind {
	case KindState:
		m.role, m.leader, m.quorum = e.Role, e.Leader, e.Quorum
	case KindCrash, KindStop:
		*m = memberState{}
	case KindRestart:
		*m = memberState{live: true}
	case KindHeal:
		clear(w.group)
	case KindPartition:
		clear(w.group)
		// A member left out of every group is cut off from everyone.
		for _, n := range w.names {
			w.group[n] = -1 - len(w.group)
		}
		for i, g := range e.Groups {
			for _, n := range g {
				w.group[n] = i + 1
			}
		}
	}
}

// reachable counts the live members in name's side, name included.
func (w *world) reachable(name string) int {
	n := 0
	for _, o := range w.names {
		if w.members[o].live && w.group[o] == w.group[name] {
			n++
		}
	}
	return n
}

// healthy reports whether every member is live and no partition stands.
func (w *world) healthy() bool {
	for _, n := range w.names {
		if !w.members[n].live || w.group[n] != 0 {
			return false
		}
	}
	return true
}

// converged reports whether exactly one live member leads and every other
// live member follows it.
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
	for _, n := range w.names {
		m := w.members[n]
		if m.live && n != leader && (m.role != RoleFollower || m.leader != leader) {
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
// had exactly one leader followed by every live member. ok is false when the
// cluster did not end live and connected, or never converged.
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
			"no single leader %s after the last fault at %s, bound %s", d, from, bound)}
	}
	return nil
}

func isolatedStepDown(events []Event, end time.Duration, bound time.Duration) []Violation {
	w := newWorld(events)
	since := map[string]time.Duration{}
	var out []Violation
	expire := func(now time.Duration, i int) {
		for _, n := range w.names {
			start, ok := since[n]
			if !ok || now <= start+bound {
				continue
			}
			delete(since, n)
			out = append(out, violation(events, RuleIsolatedStepDown, i, start+bound,
				"%s still leads %s after it was cut off from a quorum of %d at %s (reaching %d)",
				n, now-start, w.members[n].quorum, start, w.reachable(n)))
		}
	}
	for i, e := range events {
		expire(e.At, i)
		w.apply(e)
		for _, n := range w.names {
			m := w.members[n]
			isolated := m.live && m.role == RoleLeader && w.reachable(n) < m.quorum
			if _, ok := since[n]; ok && !isolated {
				delete(since, n)
			} else if !ok && isolated {
				since[n] = e.At
			}
		}
	}
	expire(end, len(events))
	return out
}
