package election

import "github.com/regent-go/regent/gen"

// MessageRequestVote asks for a vote at Term. With PreVote it only asks whether
// the receiver would vote at Term, changing nothing on either side; a Join sends
// one at the sender's current term as a probe that costs nobody's vote.
// Transfer marks a campaign started by MessageTimeoutNow, which voters grant
// despite leader stickiness.
type MessageRequestVote struct {
	ClusterID string
	Term      uint64
	Candidate gen.ProcessID
	PreVote   bool
	Transfer  bool
	// Started is the sender's start time in unix nanoseconds, 0 when unknown;
	// the same in every message below.
	Started int64
}

// MessageVote answers a MessageRequestVote. A refusal carries the voter's own
// term, so a candidate behind it learns the term.
type MessageVote struct {
	ClusterID string
	Term      uint64
	Granted   bool
	PreVote   bool
	Voter     gen.ProcessID
	Started   int64
	// Leader, on a refusal, names the leader the voter follows, so a member
	// that lost track of the cluster (its view shrank while it was cut off)
	// can reach that leader and be admitted again.
	Leader gen.ProcessID
}

// MessageHeartbeat is a leader asserting its leadership for Term.
type MessageHeartbeat struct {
	ClusterID string
	Term      uint64
	Leader    gen.ProcessID
	Started   int64
}

// MessageHeartbeatAck answers a heartbeat with the follower's term; it is the
// reply that EvidenceReplies counts, and tells a stale leader the newer term.
type MessageHeartbeatAck struct {
	ClusterID string
	Term      uint64
	Follower  gen.ProcessID
	Started   int64
	// Follows is set when the follower already recognises another leader at
	// Term: two leaders in one term, which only views that diverged and have
	// just learned of each other produce. The leader then stands down.
	Follows gen.PID
}

// MessageTimeoutNow tells its receiver to campaign at once, skipping PreVote:
// the leader of Term is handing leadership over to it.
type MessageTimeoutNow struct {
	ClusterID string
	Term      uint64
	Leader    gen.ProcessID
	Started   int64
}

// NetworkTypes lists the wire messages of the election, for registration on
// every node before it exchanges them.
func NetworkTypes() []any {
	return []any{
		MessageRequestVote{},
		MessageVote{},
		MessageHeartbeat{},
		MessageHeartbeatAck{},
		MessageTimeoutNow{},
	}
}
