package history

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// Kind says what an Event records.
type Kind int

const (
	// KindState is a member's state after its role, term, recognised
	// leader, view or hidden leadership changed.
	KindState Kind = iota + 1
	// KindVote is a vote cast by Member for VotedFor at Term (itself included).
	KindVote
	// KindPartition replaces the network's cuts: members in different
	// Groups, and the pairs in Cuts, cannot reach each other until the next
	// partition or heal.
	KindPartition
	// KindHeal reconnects every member.
	KindHeal
	// KindCrash kills Member without warning; its peers see a lost connection.
	KindCrash
	// KindStop stops Member gracefully; its peers see a real reason.
	KindStop
	// KindRestart starts Member again as Life; Durable says whether its
	// term, vote and view were restored.
	KindRestart
	// KindNote is free text for the reader, ignored by the checkers.
	KindNote
	// KindStart starts Member's first life after the run began (Life 1); a
	// member whose first lifecycle event is KindStart was not running
	// before it. Members running from the start need none.
	KindStart
	// KindJoin is Member declaring Peer (Join); KindLeave is Member
	// withdrawing Peer (Leave). Both change the view, so they count as
	// faults for the convergence rule.
	KindJoin
	KindLeave
)

// String names the kind as the history table shows it.
func (k Kind) String() string {
	switch k {
	case KindState:
		return "state"
	case KindVote:
		return "vote"
	case KindPartition:
		return "partition"
	case KindHeal:
		return "heal"
	case KindCrash:
		return "crash"
	case KindStop:
		return "stop"
	case KindRestart:
		return "restart"
	case KindNote:
		return "note"
	case KindStart:
		return "start"
	case KindJoin:
		return "join"
	case KindLeave:
		return "leave"
	}
	return "unknown"
}

// isFault reports whether k changes who can reach whom or who belongs to
// the view: the convergence rule counts from the last one.
func (k Kind) isFault() bool {
	switch k {
	case KindPartition, KindHeal, KindCrash, KindStop, KindRestart, KindStart, KindJoin, KindLeave:
		return true
	}
	return false
}

// Role names as recorded in Event.Role; they match election.Role.String.
const (
	RoleUnclustered = "unclustered"
	RoleFollower    = "follower"
	RoleCandidate   = "candidate"
	RoleLeader      = "leader"
)

// Event is one entry of a History. Which fields matter depends on Kind; the
// rest stay zero.
type Event struct {
	// At is the time since the start of the run.
	At     time.Duration
	Kind   Kind
	Member string
	// Life counts the member's starts, from 1; it tells lives apart across
	// restarts.
	Life int
	// Node is set for a second actor of the cluster running on another
	// member's node (a misconfiguration the simulator injects): that
	// member's name. Such an actor is not a member of its own: it counts in
	// every safety rule, but not in the number of members, since views
	// count nodes. Empty for a member on its own node.
	Node string
	// Role, Term, Leader, ViewSize, Quorum, MinClusterSize and VotesGranted
	// describe a member's state (KindState). Role is what the user sees.
	// Leader is the member it recognises, empty when none. ViewSize is its
	// view's size (its declared set before any view) and Quorum a majority
	// of it. VotesGranted is the count of grants, itself included, of its
	// current or last election.
	Role           string
	Term           uint64
	Leader         string
	ViewSize       int
	Quorum         int
	MinClusterSize int
	VotesGranted   int
	// ProtocolLeader is set while the member leads the election, visibly
	// or not (a leader whose view has not committed yet, or one hidden below
	// MinClusterSize); a visible leader (Role leader) always is one.
	ProtocolLeader bool
	// Lineage names the lineage of the member's view, "" when it holds none
	// or the recorder cannot tell (testing/cluster's in-process recorder):
	// the rules about views then fall back to ViewSize and Quorum.
	// ViewTerm and ViewEpoch are the view's key, Agreed whether its lineage
	// is established, AgreedSize and AgreedQuorum the size and majority of
	// an agreed view (zero when not agreed), and View its members by name,
	// nil when unknown.
	Lineage      string
	ViewTerm     uint64
	ViewEpoch    uint64
	Agreed       bool
	AgreedSize   int
	AgreedQuorum int
	View         []string
	// VotedFor is the candidate of a KindVote at Term.
	VotedFor string
	// Groups are the sides of a KindPartition: members in different groups
	// cannot reach each other, a member in no group reaches nobody.
	Groups [][]string
	// Cuts are the pairs of members of a KindPartition that cannot reach
	// each other, besides those Groups separate: non-transitive cuts (a
	// bridge member that reaches both sides of a cut) need them.
	Cuts [][2]string
	// Peer is the member a KindJoin or KindLeave names.
	Peer string
	// Durable marks a KindRestart that restored the term and vote.
	Durable bool
	// Note is free text shown in the table.
	Note string
}

// String formats the event as one row of the history table.
func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%12s  %-9s", e.At, e.Kind)
	switch e.Kind {
	case KindState:
		fmt.Fprintf(&b, " %s#%d %-11s term=%d leader=%q view=%d quorum=%d min=%d votes=%d",
			e.Member, e.Life, e.Role, e.Term, e.Leader, e.ViewSize, e.Quorum, e.MinClusterSize, e.VotesGranted)
		if e.ProtocolLeader && e.Role != RoleLeader {
			b.WriteString(" protocol-leader")
		}
		if e.Lineage != "" {
			agreed := "proposed"
			if e.Agreed {
				agreed = "agreed"
			}
			fmt.Fprintf(&b, " lineage=%s key=%d/%d %s", e.Lineage, e.ViewTerm, e.ViewEpoch, agreed)
		}
		if e.View != nil {
			fmt.Fprintf(&b, " {%s}", strings.Join(e.View, ","))
		}
	case KindVote:
		fmt.Fprintf(&b, " %s#%d term=%d for=%s", e.Member, e.Life, e.Term, e.VotedFor)
	case KindPartition:
		parts := make([]string, len(e.Groups))
		for i, g := range e.Groups {
			parts[i] = "{" + strings.Join(g, ",") + "}"
		}
		if len(parts) > 0 {
			fmt.Fprintf(&b, " %s", strings.Join(parts, " | "))
		}
		if len(e.Cuts) > 0 {
			cuts := make([]string, len(e.Cuts))
			for i, c := range e.Cuts {
				cuts[i] = c[0] + "-" + c[1]
			}
			fmt.Fprintf(&b, " cut %s", strings.Join(cuts, " "))
		}
	case KindCrash, KindStop:
		fmt.Fprintf(&b, " %s#%d", e.Member, e.Life)
	case KindStart:
		fmt.Fprintf(&b, " %s#%d", e.Member, e.Life)
		if e.Node != "" {
			fmt.Fprintf(&b, " on %s's node", e.Node)
		}
	case KindJoin, KindLeave:
		fmt.Fprintf(&b, " %s#%d %s", e.Member, e.Life, e.Peer)
	case KindRestart:
		fmt.Fprintf(&b, " %s#%d durable=%t", e.Member, e.Life, e.Durable)
	}
	if e.Note != "" {
		fmt.Fprintf(&b, " (%s)", e.Note)
	}
	return b.String()
}

// Lease is a stretch of time in which a member's core reported leading by
// LeadsAt (election.Core.LeadsAt: the visible role, with the evidence of a
// majority at that instant), the leadership a user acts on. A recorder
// that can say when it ends records it (History.RecordLease), for the
// lease rule (Bounds.Lease).
type Lease struct {
	Member string
	Life   int
	// Node is as in Event: set for a second actor on another member's node.
	Node    string
	Term    uint64
	Lineage string
	// From and Until bound the lease, Until excluded; Forever when nothing
	// but a step of the member ends it (a view of one).
	From, Until time.Duration
}

// Forever is the Until of a lease that only a step of its member can end.
const Forever = time.Duration(math.MaxInt64)

// String formats the lease for a violation's detail.
func (l Lease) String() string {
	until := l.Until.String()
	if l.Until == Forever {
		until = "a step"
	}
	return fmt.Sprintf("%s#%d (term %d, lineage %s) from %s until %s", l.Member, l.Life, l.Term, l.Lineage, l.From, until)
}

// History is an ordered record of Events. It is safe for concurrent use, so
// the observers of several members may append to one History.
type History struct {
	mu     sync.Mutex // guards events, end and leases
	events []Event
	end    time.Duration
	// leases are the recorded leases in the order they began; last holds
	// the index of each life's latest one. Leases are kept apart from the
	// events: a leader's lease changes with about every heartbeat round,
	// and the event rules have no use for them.
	leases []Lease
	last   map[life]int
}

// New returns an empty History.
func New() *History { return &History{} }

// RecordLease records what a member's LeadsAt says after a step at l.From:
// that it holds until l.Until with no further input, or, when l.Until is
// not after l.From, that it does not hold. That replaces what the life's
// latest lease said from l.From on: the lease is extended when it had not
// lapsed by then and keeps its term and lineage, and otherwise ends at
// l.From, at the latest, and a new one begins. A recorder records each
// change, and a lease that ends with its member's life (no lease then).
func (h *History) RecordLease(l Lease) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last == nil {
		h.last = map[life]int{}
	}
	who := life{l.Member, l.Life}
	if i, ok := h.last[who]; ok {
		prev := &h.leases[i]
		if l.Until > l.From && prev.Until >= l.From && prev.Term == l.Term && prev.Lineage == l.Lineage {
			prev.Until = l.Until
			return
		}
		prev.Until = min(prev.Until, l.From)
		delete(h.last, who)
	}
	if l.Until > l.From {
		h.last[who] = len(h.leases)
		h.leases = append(h.leases, l)
	}
}

// Leases returns the recorded leases, sorted stably by From, each an
// unbroken stretch; one that had not ended by the end of observation
// (End) ends there.
func (h *History) Leases() []Lease {
	end := h.End()
	h.mu.Lock()
	out := slices.Clone(h.leases)
	h.mu.Unlock()
	for i := range out {
		out[i].Until = min(out[i].Until, end)
	}
	out = slices.DeleteFunc(out, func(l Lease) bool { return l.Until <= l.From })
	slices.SortStableFunc(out, func(a, b Lease) int { return cmp.Compare(a.From, b.From) })
	return out
}

// Append records e.
func (h *History) Append(e Event) {
	h.mu.Lock()
	h.events = append(h.events, e)
	h.mu.Unlock()
}

// Finish records that observation ended at at: the state after the last
// event held until then. The timed rules use it; a later Finish moves it.
func (h *History) Finish(at time.Duration) {
	h.mu.Lock()
	h.end = max(h.end, at)
	h.mu.Unlock()
}

// End is the time observation ended: the later of Finish and the last event.
func (h *History) End() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	end := h.end
	for _, e := range h.events {
		end = max(end, e.At)
	}
	return end
}

// Events returns a copy of the events, sorted stably by At.
func (h *History) Events() []Event {
	h.mu.Lock()
	out := slices.Clone(h.events)
	h.mu.Unlock()
	slices.SortStableFunc(out, func(a, b Event) int { return cmp.Compare(a.At, b.At) })
	return out
}

// Len is the number of events.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.events)
}

// String formats the whole history as a table, one event per line, in time order.
func (h *History) String() string {
	events := h.Events()
	return table(events, 0, len(events), -1)
}

// table formats events[from:to], numbering rows by index and marking the row
// at mark with '>'.
func table(events []Event, from, to, mark int) string {
	var b strings.Builder
	for i := max(from, 0); i < min(to, len(events)); i++ {
		prefix := "  "
		if i == mark {
			prefix = "> "
		}
		fmt.Fprintf(&b, "%s#%-5d %s\n", prefix, i, events[i])
	}
	return b.String()
}
