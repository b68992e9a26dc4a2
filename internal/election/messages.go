package election

import "github.com/regent-go/regent/gen"

// Header is what every election message carries: the cluster, the sender's
// term and identity, its start time and the stamp of the view it holds, so a
// receiver can tell at once whether the sender shares its view, lags behind
// it or belongs to another cluster.
type Header struct {
	ClusterID string
	Term      uint64
	// From is the sender's registered name and node; peers reach it by name
	// until they know its PID.
	From gen.ProcessID
	// Started is the sender's start time in unix nanoseconds, 0 when unknown.
	Started int64
	// View identifies the view the sender holds (zero when it holds none).
	View ViewStamp
}

// header reads the Header of any election message.
func header(msg any) (Header, bool) {
	switch m := msg.(type) {
	case MessageRequestVote:
		return m.Header, true
	case MessageVote:
		return m.Header, true
	case MessageHeartbeat:
		return m.Header, true
	case MessageHeartbeatAck:
		return m.Header, true
	case MessageTimeoutNow:
		return m.Header, true
	case MessageMembership:
		return m.Header, true
	}
	return Header{}, false
}

// MessageRequestVote asks for a vote at Header.Term. With PreVote it only asks
// whether the receiver would vote, changing nothing on either side; a probe is
// a pre-vote at the sender's own term. Transfer marks a campaign started by
// MessageTimeoutNow, which voters grant despite leader stickiness.
type MessageRequestVote struct {
	Header
	PreVote  bool
	Transfer bool
	// Declared is the candidate's declared set when it holds no view: what a
	// formation would be made of.
	Declared []gen.ProcessID
	// Sent is when the request was sent, as a stamp of the sender's clock
	// (Stamp); the answer echoes it.
	Sent int64
}

// MessageVote answers a MessageRequestVote. A refusal carries the voter's own
// term, so a candidate behind it learns the term.
type MessageVote struct {
	Header
	Granted bool
	PreVote bool
	// Leader, on a refusal, names the leader the voter follows, so a member
	// outside the view can ask that leader to admit it.
	Leader gen.ProcessID
	// View is the voter's whole view, sent when the candidate's stamp shows it
	// lacks it: a formation grant reports it, a refusal for an older view
	// lets the candidate catch up or ask to join.
	View *View
	// Declared is a viewless voter's declared set, reported with a formation
	// grant.
	Declared []gen.ProcessID
	// Echo is the Sent of the request answered: the answer is evidence
	// that the voter heard the candidate then, not when it arrived.
	Echo int64
}

// MessageHeartbeat is a leader asserting its leadership for Header.Term.
type MessageHeartbeat struct {
	Header
	// View is the leader's whole view, sent to a member whose last
	// acknowledgement showed an older stamp; nil otherwise.
	View *View
	// Committed is the key of the newest view the leader knows committed.
	Committed ViewKey
	// Sent is when the leader sent it, as a stamp of its clock (Stamp);
	// the acknowledgement echoes it. A shell that sends a steady beat's
	// heartbeats for the leader stamps each with its own send time.
	Sent int64
}

// MessageHeartbeatAck answers a heartbeat; Header.View is the view the
// follower now holds, which is how a leader counts a view as committed.
type MessageHeartbeatAck struct {
	Header
	// Follows is set when the follower already recognises another leader at
	// this term: views that diverged and have just met. The leader stands down.
	Follows gen.PID
	// Declines says the follower would not take leadership now: its own
	// HandleConfirmLeader denied lately. A leader hands nothing over to it.
	Declines bool
	// Echo is the Sent of the heartbeat acknowledged: the acknowledgement
	// is evidence that the follower heard the leader then, however late it
	// arrives (quorum evidence). Zero answers no heartbeat and is no
	// evidence.
	Echo int64
}

// MessageTimeoutNow tells its receiver to campaign at once, skipping PreVote:
// the leader of Header.Term is handing leadership over to it. Ending says the
// sender's process is ending: the receiver counts it as ended at once, as a
// down with a real reason would, so its leadership is never published with
// the sender still counted, however late that down arrives.
type MessageTimeoutNow struct {
	Header
	Ending bool
}

// MessageMembership asks the leader to change the view: a member forwards the
// Join and Leave calls made on it, and a peer outside the view asks to be
// admitted (Add names itself). The leader applies one change at a time.
type MessageMembership struct {
	Header
	Add    []gen.ProcessID
	Remove []gen.Atom
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
		MessageMembership{},
	}
}
