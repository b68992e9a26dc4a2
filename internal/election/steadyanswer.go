package election

import (
	"time"

	"github.com/regent-go/regent/gen"
)

// SteadyAnswer is a follower's answer to its leader's steady heartbeat,
// given before the heartbeat arrives. A shell that hosts many members may
// send Ack for the member as soon as a heartbeat that Answers matches
// arrives, without waking it, and step the heartbeat later, at its arrival
// time and before any other input: the core then sends Ack again, which the
// shell drops, and is in the state it would have reached stepping the
// heartbeat on arrival. The leader sees the same acknowledgement at the same
// time either way; the follower's core sees every heartbeat, in order.
type SteadyAnswer struct {
	// Leader is the process whose heartbeats it answers.
	Leader gen.PID
	// Heartbeat is the one heartbeat it answers: only one with the same
	// header and commit, carrying no view, matches, whatever its Sent.
	Heartbeat SteadyHeartbeat
	// Ack is what the core sends when it steps that heartbeat, but for its
	// Echo, which is the Sent of the heartbeat answered: a shell answering
	// ahead echoes each heartbeat's own.
	Ack MessageHeartbeatAck
	// Timeout is how long after that heartbeat's arrival the election
	// timer is due once the core has stepped it (ElectionDue): a shell
	// holding the heartbeat may move its timer that far without waking
	// the core.
	Timeout time.Duration
}

// SteadyHeartbeat is the heartbeat a SteadyAnswer answers, but for its
// stamp: a follower holds one, so it keeps only what a match compares.
type SteadyHeartbeat struct {
	Header
	Committed ViewKey
}

// Message is the heartbeat, stamped sent (MessageHeartbeat.Sent).
func (h SteadyHeartbeat) Message(sent int64) MessageHeartbeat {
	return MessageHeartbeat{Header: h.Header, Committed: h.Committed, Sent: sent}
}

// Answers reports whether m from from is the heartbeat sa answers, whatever
// its Sent.
func (sa *SteadyAnswer) Answers(from gen.PID, m *MessageHeartbeat) bool {
	return from == sa.Leader && m.View == nil && m.Header == sa.Heartbeat.Header && m.Committed == sa.Heartbeat.Committed
}

// SteadyAnswer returns this follower's answer to its leader's next steady
// heartbeat, when stepping that heartbeat at any time from now on, with no
// other input in between, would do nothing but restart the election timeout
// (lazily, without a TimerOp, to fall due Timeout after the heartbeat),
// record the contact and send that answer. It
// reports false in every other case: not a follower, no leader or no agreed
// lineage in common with it, a campaign pending, the member declining
// leadership for a while (the answer would change when that ends), a
// withdrawn or doubled leader, failing storage, or a timer the heartbeat
// would have to re-arm. Stepping the heartbeat leaves the answer as it was,
// so any number of them can be answered ahead and stepped later.
func (c *Core) SteadyAnswer(now time.Time) (SteadyAnswer, bool) {
	if c.role != RoleFollower || c.leader == (gen.PID{}) || c.few().fatal != nil || c.few().storageErr != nil ||
		c.view == nil || c.camp != nil || c.next != (nextCampaign{}) ||
		!c.electionLazy || !c.armed[TimerElection] || c.declines(now) {
		return SteadyAnswer{}, false
	}
	p := c.peers.get(c.leader.Node)
	if p == nil || p.pid != c.leader || p.id != c.leaderID || p.ended() != "" || p.reportedPID() != c.reportedPID(p) {
		return SteadyAnswer{}, false
	}
	if until, ok := c.withdrawn[c.leader.Node]; ok && now.Before(until) {
		return SteadyAnswer{}, false
	}
	if c.duplicate(c.leader, c.leaderID) {
		return SteadyAnswer{}, false
	}
	hb := SteadyHeartbeat{
		Header: Header{
			ClusterID: c.cfg.ClusterID, Term: c.term, From: c.leaderID,
			Started: p.startedNanos, View: c.view.Stamp,
		},
		Committed: c.committed,
	}
	return SteadyAnswer{Leader: c.leader, Heartbeat: hb, Ack: c.ackMsg(now, 0), Timeout: c.electionWait}, true
}

// reportedPID is the PID syncPeer reports for p: its PID while it is in the
// view, none otherwise.
func (c *Core) reportedPID(p *peer) gen.PID {
	if c.view.has(p.id.Node) {
		return p.pid
	}
	return gen.PID{}
}
