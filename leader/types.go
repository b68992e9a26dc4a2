package leader

import "github.com/regent-go/regent/internal/election"

// The election's wire messages. Register them on every node with
// NetworkTypes before the node exchanges them.
type (
	// MessageRequestVote asks for a vote (or, with PreVote, whether one would be granted).
	MessageRequestVote = election.MessageRequestVote
	// MessageVote answers a vote request; a refusal carries the voter's term.
	MessageVote = election.MessageVote
	// MessageHeartbeat is a leader asserting its leadership for a term.
	MessageHeartbeat = election.MessageHeartbeat
	// MessageHeartbeatAck is a follower's reply to a heartbeat.
	MessageHeartbeatAck = election.MessageHeartbeatAck
	// MessageTimeoutNow hands leadership over: its receiver campaigns at once.
	MessageTimeoutNow = election.MessageTimeoutNow
	// MessageMembership asks the leader to admit or remove members.
	MessageMembership = election.MessageMembership
	// Header is what every election message carries: cluster, term, sender
	// and the stamp of the sender's view.
	Header = election.Header
)

// The agreed view, as Reform returns it and inspection describes it
// (docs/membership.md): a versioned membership the leader changes one member
// at a time.
type (
	View      = election.View
	ViewStamp = election.ViewStamp
	ViewKey   = election.ViewKey
	Lineage   = election.Lineage
)

// NetworkTypes returns the types the election sends between nodes. Register
// them on every node before it starts serving:
//
//	node.Network().RegisterTypes(leader.NetworkTypes())
//
// Init refuses to start when they are not registered.
func NetworkTypes() []any {
	return append(election.NetworkTypes(), MessageSubscribe{}, MessageUnsubscribe{}, MessageLeaderChanged{},
		MessageMembersRequest{}, MemberReading{}, MessageReformRequest{}, ReformResult{}, MessageHeartbeatBatch{})
}

// ErrorTypes returns the sentinel errors the election sends over the wire:
// none today. It exists so setup code stays uniform if that changes.
func ErrorTypes() []error { return nil }
