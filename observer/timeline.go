package observer

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Bounds of a cluster's Timeline, so an observer that runs for months holds
// a fixed amount of history per cluster.
const (
	MaxTimelineTenures = 100
	MaxTimelineEvents  = 200
)

// Timeline event kinds, as TimelineEvent.Kind names them.
const (
	// EventElected: the first leader the observer saw in the cluster.
	EventElected = "elected"
	// EventLeaderLost: a sample found no answering leader after one was known.
	EventLeaderLost = "leader_lost"
	// EventFailover: a new leader (or term) after the old leader stopped
	// answering or lost its quorum, or after samples with no leader at all.
	EventFailover = "failover"
	// EventHandover: leadership moved from one sample to the next while the
	// old leader kept answering without losing its quorum: StepDown,
	// TransferLeadership, a preferred leader, or a higher term that
	// deposed it without a leaderless sample.
	EventHandover = "handover"
	// EventMemberGone: a member that answered stopped answering, or left
	// every view.
	EventMemberGone = "member_gone"
	// EventMemberBack: a gone member answers again.
	EventMemberBack = "member_back"
)

// Timeline is one cluster's leadership history as this observer sampled it:
// who led which term from when to when, what happened between, and which
// members are gone. It lives in memory, bounded by MaxTimelineTenures and
// MaxTimelineEvents, and starts when the observer does.
type Timeline struct {
	Cluster string `json:"cluster"`
	// Since is when the observer started following the cluster.
	Since time.Time `json:"since"`
	// Tenures are the leaderships seen, oldest first; the last one has no
	// To while it lasts.
	Tenures []Tenure `json:"tenures"`
	// Events are what happened, oldest first.
	Events []TimelineEvent `json:"events"`
	// Gone lists the members that stopped answering and have not come back,
	// including those every view has dropped since.
	Gone []GoneMember `json:"gone"`
}

// Tenure is one member's leadership at one term, as sampled: From is the
// first sample that showed it, To the first that did not.
type Tenure struct {
	Leader string    `json:"leader"`
	Term   uint64    `json:"term"`
	From   time.Time `json:"from"`
	To     time.Time `json:"to,omitzero"`
}

// TimelineEvent is one thing that happened to a cluster's leadership or
// membership.
type TimelineEvent struct {
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`
	// Leader is the new leader (elected, failover, handover) or the member
	// concerned (member_gone, member_back, leader_lost).
	Leader   string `json:"leader,omitempty"`
	Previous string `json:"previous,omitempty"`
	Term     uint64 `json:"term,omitempty"`
	// Duration is how long the cluster had no leader (failover, handover):
	// within the time between two readings of the cluster of the truth.
	Duration time.Duration `json:"duration_ns,omitempty"`
	// Campaigns is how many elections the members started to reach this
	// leader (elected, failover); more than one is a multi-round election.
	Campaigns uint64 `json:"campaigns,omitempty"`
	// Message says it in a sentence.
	Message string `json:"message"`
}

// GoneMember is a member that stopped answering at Since.
type GoneMember struct {
	Node  string    `json:"node"`
	Since time.Time `json:"since"`
	// LastError is why the last read failed; empty once every view dropped it.
	LastError string `json:"last_error,omitempty"`
}

// history follows one cluster from sample to sample; the sampler's goroutine
// owns it.
type history struct {
	tl       Timeline
	failover failoverTrack
	// members is what the last sample said of each member ever seen:
	// answering or not (with the time it stopped), and its counters.
	members map[string]*seenMember
	// leader and term of the open tenure; empty when none is open.
	leader string
	term   uint64
	// campaignsAt is the sum of the members' elections_started at the last
	// change of leadership, to count the campaigns of the next one.
	campaignsAt map[string]uint64
}

type seenMember struct {
	answering  bool
	goneSince  time.Time
	lastError  string
	quorumLoss uint64 // ergo:quorum_lost_stepdowns
}

func newHistory(id string, now time.Time) *history {
	return &history{tl: Timeline{Cluster: id, Since: now, Tenures: []Tenure{}, Events: []TimelineEvent{}, Gone: []GoneMember{}},
		members: map[string]*seenMember{}, campaignsAt: map[string]uint64{}}
}

// observe records one sample of the cluster taken at now; it returns the
// failover duration for the metrics when this sample ends one (see
// failoverTrack).
func (h *history) observe(now time.Time, c ClusterReport) (time.Duration, bool) {
	prev := h.snapshotMembers()
	h.observeMembers(now, c)
	gap := !h.failover.lostAt.IsZero()
	d, ended := h.failover.observe(now, leadership(c))
	h.observeLeadership(now, c, prev, d, ended, gap)
	return d, ended
}

// snapshotMembers copies what the previous sample said of each member.
func (h *history) snapshotMembers() map[string]seenMember {
	out := make(map[string]seenMember, len(h.members))
	for n, m := range h.members {
		out[n] = *m
	}
	return out
}

func (h *history) observeMembers(now time.Time, c ClusterReport) {
	present := map[string]bool{}
	for _, m := range c.Members {
		present[m.Node] = true
		s, known := h.members[m.Node]
		if !known {
			s = &seenMember{}
			h.members[m.Node] = s
		}
		if m.Answered() {
			if !s.goneSince.IsZero() {
				h.event(TimelineEvent{At: now, Kind: EventMemberBack, Leader: m.Node,
					Message: fmt.Sprintf("%s answers again, after %s gone", m.Node, roundDuration(now.Sub(s.goneSince)))})
			}
			*s = seenMember{answering: true, quorumLoss: m.QuorumLostStepDowns}
			continue
		}
		s.lastError = m.Error
		if known && s.goneSince.IsZero() && s.answering {
			h.gone(now, m.Node, s)
		}
		s.answering = false
	}
	for n, s := range h.members {
		if present[n] {
			continue
		}
		if s.goneSince.IsZero() && s.answering {
			h.gone(now, n, s)
		}
		s.answering, s.lastError = false, ""
	}
	h.tl.Gone = h.tl.Gone[:0]
	for n, s := range h.members {
		if !s.goneSince.IsZero() {
			h.tl.Gone = append(h.tl.Gone, GoneMember{Node: n, Since: s.goneSince, LastError: s.lastError})
		}
	}
	slices.SortFunc(h.tl.Gone, func(a, b GoneMember) int { return strings.Compare(a.Node, b.Node) })
}

func (h *history) gone(now time.Time, node string, s *seenMember) {
	s.goneSince = now
	h.event(TimelineEvent{At: now, Kind: EventMemberGone, Leader: node, Message: fmt.Sprintf("%s stopped answering", node)})
}

// observeLeadership records a change of leadership: took and ended are the
// failover track's reading of this sample, gap whether samples without a
// leader came before it.
func (h *history) observeLeadership(now time.Time, c ClusterReport, prev map[string]seenMember, took time.Duration, ended, gap bool) {
	leaderNode, term, ok := soleLeader(c)
	switch {
	case !ok && len(c.Leaders) == 0 && h.leader != "":
		h.closeTenure(now)
		h.event(TimelineEvent{At: now, Kind: EventLeaderLost, Leader: h.leader, Term: h.term,
			Message: fmt.Sprintf("no member leads: %s led term %d", h.leader, h.term)})
		h.leader = ""
	case !ok:
		// Several claim leadership, or none did before either: nothing new.
	case leaderNode == h.leader && term == h.term:
		// The same tenure goes on.
	default:
		previous, prevTerm := h.leader, h.term
		if previous == "" && len(h.tl.Tenures) > 0 {
			last := h.tl.Tenures[len(h.tl.Tenures)-1]
			previous, prevTerm = last.Leader, last.Term
		}
		h.closeTenure(now)
		campaigns := h.campaigns(c)
		ev := TimelineEvent{At: now, Leader: leaderNode, Previous: previous, Term: term, Campaigns: campaigns}
		switch {
		case previous == "":
			ev.Kind = EventElected
			ev.Message = fmt.Sprintf("%s elected at term %d%s", leaderNode, term, campaignText(campaigns))
		case !gap && handedOver(previous, prev, c):
			ev.Kind, ev.Duration = EventHandover, took
			ev.Message = fmt.Sprintf("handover: %s passed leadership to %s, term %d → %d, within %s", previous, leaderNode, prevTerm, term, roundDuration(took))
		default:
			ev.Kind, ev.Duration = EventFailover, took
			ev.Message = fmt.Sprintf("failover: %s → %s, term %d → %d, %s without a leader%s", previous, leaderNode, prevTerm, term, roundDuration(took), campaignText(campaigns))
		}
		if !ended && ev.Kind != EventElected {
			ev.Duration = 0 // the sample before showed a leader too
		}
		h.event(ev)
		h.leader, h.term = leaderNode, term
		h.tl.Tenures = append(h.tl.Tenures, Tenure{Leader: leaderNode, Term: term, From: now})
		if over := len(h.tl.Tenures) - MaxTimelineTenures; over > 0 {
			h.tl.Tenures = slices.Delete(h.tl.Tenures, 0, over)
		}
		h.campaignsAt = h.startedNow(c)
	}
}

// handedOver reports whether the old leader kept answering into this sample
// without a quorum loss: it gave leadership away rather than losing it.
func handedOver(previous string, before map[string]seenMember, c ClusterReport) bool {
	was, known := before[previous]
	if !known || !was.answering {
		return false
	}
	for _, m := range c.Members {
		if m.Node == previous {
			return m.Answered() && m.QuorumLostStepDowns == was.quorumLoss
		}
	}
	return false
}

// soleLeader is the one answering member that leads, with its term.
func soleLeader(c ClusterReport) (string, uint64, bool) {
	if len(c.Leaders) != 1 {
		return "", 0, false
	}
	for _, m := range c.Members {
		if m.Node == c.Leaders[0] {
			return m.Node, m.Term, true
		}
	}
	return "", 0, false
}

// campaigns counts the elections started since the last change of
// leadership by the members answering now (a restarted member counts from
// zero).
func (h *history) campaigns(c ClusterReport) uint64 {
	var n uint64
	for node, started := range h.startedNow(c) {
		before := h.campaignsAt[node]
		if started >= before {
			n += started - before
		} else {
			n += started
		}
	}
	return n
}

func (h *history) startedNow(c ClusterReport) map[string]uint64 {
	out := map[string]uint64{}
	for _, m := range c.Members {
		if m.Answered() {
			out[m.Node] = m.ElectionsStarted
		}
	}
	return out
}

func (h *history) closeTenure(now time.Time) {
	if n := len(h.tl.Tenures); n > 0 && h.tl.Tenures[n-1].To.IsZero() {
		h.tl.Tenures[n-1].To = now
	}
}

func (h *history) event(e TimelineEvent) {
	h.tl.Events = append(h.tl.Events, e)
	if over := len(h.tl.Events) - MaxTimelineEvents; over > 0 {
		h.tl.Events = slices.Delete(h.tl.Events, 0, over)
	}
}

// timeline returns a copy safe to hand to other goroutines.
func (h *history) timeline() Timeline {
	t := h.tl
	t.Tenures = slices.Clone(t.Tenures)
	t.Events = slices.Clone(t.Events)
	t.Gone = slices.Clone(t.Gone)
	return t
}

func campaignText(n uint64) string {
	switch n {
	case 0:
		return ""
	case 1:
		return " (1 campaign)"
	}
	return fmt.Sprintf(" (%d campaigns: a multi-round election)", n)
}

func roundDuration(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
