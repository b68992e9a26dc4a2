package election

import (
	"slices"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/quorum"
)

// member is one peer in the view, keyed by its node name.
type member struct {
	id  gen.ProcessID
	pid gen.PID // zero until it answers, and again once forgotten
	// declared: named by Bootstrap or Join; otherwise discovered by its messages.
	declared bool
	// answered: it has sent a valid protocol message, so it gets heartbeats.
	answered bool
	// unreachableSince is non-zero while its connection is down (a ghost).
	unreachableSince time.Time
	lastInbound      time.Time // last valid protocol message from it
	lastReply        time.Time // last vote answer or heartbeat ack from it
	lastSend         time.Time // last message generated for it
	sendFailing      bool      // the shell reported the last send to it failed
	lastSendErr      error     // why, for inspection
	started          time.Time // its start time, from its messages; zero when unknown
	// steadySince starts its current run of replies, each within the evidence
	// window of the one before; zero when the run is broken.
	steadySince time.Time
}

// target is where to send to m: its PID when known, else its name.
func (m *member) target(msg any) Outbound {
	if m.pid != (gen.PID{}) {
		return Outbound{To: m.pid, Message: msg}
	}
	return Outbound{ToName: m.id, Message: msg}
}

// view is the membership: self plus declared and discovered peers, with the
// nodes withdrawn by Leave kept out for a while.
type view struct {
	self      gen.Atom
	members   map[gen.Atom]*member
	sorted    []gen.Atom             // the members' names, sorted; kept by add and remove
	withdrawn map[gen.Atom]time.Time // node → end of its withdrawal
}

func newView(self gen.Atom) *view {
	return &view{self: self, members: map[gen.Atom]*member{}, withdrawn: map[gen.Atom]time.Time{}}
}

// size counts self and every member, unreachable ones included.
func (v *view) size() int { return 1 + len(v.members) }

func (v *view) quorum() int { return quorum.Majority(v.size()) }

// nodes lists the members' node names, sorted, for deterministic iteration.
// The slice is shared and never changed in place (add and remove build a new
// one), so a loop over it may add or remove members; callers must not
// modify it.
func (v *view) nodes() []gen.Atom { return v.sorted }

// add puts m into the view under node, keeping the sorted names.
func (v *view) add(node gen.Atom, m *member) {
	if _, ok := v.members[node]; !ok {
		i, _ := slices.BinarySearch(v.sorted, node)
		v.sorted = slices.Insert(slices.Clip(v.sorted), i, node) // Clip: a new array
	}
	v.members[node] = m
}

// remove takes node out of the view.
func (v *view) remove(node gen.Atom) {
	if _, ok := v.members[node]; !ok {
		return
	}
	delete(v.members, node)
	if i, found := slices.BinarySearch(v.sorted, node); found {
		v.sorted = slices.Concat(v.sorted[:i], v.sorted[i+1:]) // a new array
	}
}

// voters lists self and every member, the electorate of a new election.
func (v *view) voters() []gen.Atom {
	return append([]gen.Atom{v.self}, v.nodes()...)
}

// byPID finds the member currently known by pid.
func (v *view) byPID(pid gen.PID) *member {
	if m := v.members[pid.Node]; m != nil && m.pid == pid {
		return m
	}
	return nil
}

// isWithdrawn reports whether node was withdrawn less than a sticky period ago;
// an expired withdrawal is forgotten.
func (v *view) isWithdrawn(node gen.Atom, now time.Time) bool {
	until, ok := v.withdrawn[node]
	if !ok {
		return false
	}
	if now.Before(until) {
		return true
	}
	delete(v.withdrawn, node)
	return false
}

// toProbe reports whether m should be reached out to again: it is
// unreachable, or declared and has never answered (a first probe may have
// been lost, and a member that never hears from this one never adds it).
func (m *member) toProbe() bool {
	return !m.unreachableSince.IsZero() || (m.declared && !m.answered)
}

// anyToProbe reports whether some member should be probed.
func (v *view) anyToProbe() bool {
	for _, m := range v.members {
		if m.toProbe() {
			return true
		}
	}
	return false
}

// nextGhostExpiry is the earliest moment an unreachable member expires.
func (v *view) nextGhostExpiry(ttl time.Duration) (time.Time, bool) {
	var next time.Time
	for _, m := range v.members {
		if m.unreachableSince.IsZero() {
			continue
		}
		if at := m.unreachableSince.Add(ttl); next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next, !next.IsZero()
}

// reached reports whether m counts, under rule e, as reached within window.
func (m *member) reached(e Evidence, now time.Time, window time.Duration) bool {
	if !m.unreachableSince.IsZero() {
		return false // its connection dropped: nothing sent since reached it
	}
	recent := func(t time.Time) bool { return !t.IsZero() && now.Sub(t) < window }
	if e == EvidenceReplies {
		return recent(m.lastReply)
	}
	return recent(m.lastInbound) || (recent(m.lastSend) && !m.sendFailing)
}

func (m *member) status(node gen.Atom) MemberStatus {
	var sendErr error
	if m.sendFailing {
		sendErr = m.lastSendErr
	}
	return MemberStatus{Node: node, ProcessID: m.id, PID: m.pid, Declared: m.declared, UnreachableSince: m.unreachableSince, SendError: sendErr, Started: m.started}
}
