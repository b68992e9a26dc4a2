package history

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Kind says what an Event records.
type Kind int

const (
	// KindState is a member's state after its role, term, recognised leader
	// or view size changed.
	KindState Kind = iota + 1
	// KindVote is a vote cast by Member for VotedFor at Term (itself included).
	KindVote
	// KindPartition splits the network into Groups; members in different
	// groups cannot reach each other until the next partition or heal.
	KindPartition
	// KindHeal reconnects every member.
	KindHeal
	// KindCrash kills Member without warning; its peers see a lost connection.
	KindCrash
	// KindStop stops Member gracefully; its peers see a real reason.
	KindStop
	// KindRestart starts Member again as Life; Durable says whether its term
	// and vote were restored.
	KindRestart
	// KindNote is free text for the reader, ignored by the checkers.
	KindNote
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
	}
	return "unknown"
}

// isFault reports whether k changes who can reach whom.
func (k Kind) isFault() bool {
	switch k {
	case KindPartition, KindHeal, KindCrash, KindStop, KindRestart:
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
	// Role, Term, Leader, ViewSize, Quorum, MinClusterSize and VotesGranted
	// describe a member's state (KindState). Leader is the member it
	// recognises, empty when none. VotesGranted is the count of grants,
	// itself included, of its current or last election.
	Role           string
	Term           uint64
	Leader         string
	ViewSize       int
	Quorum         int
	MinClusterSize int
	VotesGranted   int
	// VotedFor is the candidate of a KindVote at Term.
	VotedFor string
	// Groups are the sides of a KindPartition; every member in exactly one.
	Groups [][]string
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
	case KindVote:
		fmt.Fprintf(&b, " %s#%d term=%d for=%s", e.Member, e.Life, e.Term, e.VotedFor)
	case KindPartition:
		parts := make([]string, len(e.Groups))
		for i, g := range e.Groups {
			parts[i] = "{" + strings.Join(g, ",") + "}"
		}
		fmt.Fprintf(&b, " %s", strings.Join(parts, " | "))
	case KindCrash, KindStop:
		fmt.Fprintf(&b, " %s#%d", e.Member, e.Life)
	case KindRestart:
		fmt.Fprintf(&b, " %s#%d durable=%t", e.Member, e.Life, e.Durable)
	}
	if e.Note != "" {
		fmt.Fprintf(&b, " (%s)", e.Note)
	}
	return b.String()
}

// History is an ordered record of Events. It is safe for concurrent use, so
// the observers of several members may append to one History.
type History struct {
	mu     sync.Mutex // guards events and end
	events []Event
	end    time.Duration
}

// New returns an empty History.
func New() *History { return &History{} }

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
	slices.SortStableFunc(out, func(a, b Event) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
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
