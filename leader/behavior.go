package leader

import "github.com/regent-go/regent/gen"

// ActorBehavior is what a type embedding Actor implements. Only Init has no
// default; embedding Actor supplies the rest. Ergo's framework message
// classes (HandleEvent, HandleSpan, HandleLog) are not part of Regent's
// runtime and are left out (docs/porting.md).
type ActorBehavior interface {
	gen.ProcessBehavior

	// Init runs once before any message and returns the election's Options.
	// Do not Join from here: the options are not applied yet; send yourself a
	// message and Join from its handler.
	Init(args ...any) (Options, error)
	// HandleMessage handles every message that is not the election's own; a
	// non-nil error terminates the actor with it.
	HandleMessage(from gen.PID, message any) error
	// HandleCall answers a request: a non-nil result is the response; a nil
	// result and nil error answer later through SendResponse; a terminate
	// reason terminates the actor; any other error is the caller's error.
	HandleCall(from gen.PID, ref gen.Ref, request any) (any, error)
	// Terminate runs once, last.
	Terminate(reason error)
	// HandleInspect adds the user's keys; they are merged on top of the
	// election's ergo:* keys.
	HandleInspect(from gen.PID, item ...string) map[string]string

	// HandleConfirmLeader runs after this node won an election and before its
	// leadership is published. false or an error withholds leadership, and
	// the node re-campaigns after a backoff that grows with each denial. It
	// runs on the actor's goroutine: answer from local state. A true that
	// comes after the evidence of a majority lapsed publishes only once a
	// majority answers the heartbeats the actor then sends.
	HandleConfirmLeader() (bool, error)
	// HandleBecomeLeader starts the singleton work. An error rolls the
	// transition back and terminates the actor with that error.
	HandleBecomeLeader() error
	// HandleBecomeFollower stops it. It fires on every transition into
	// follower, with a zero PID when no leader is known; make it idempotent.
	HandleBecomeFollower(leader gen.PID) error

	// HandlePeerJoined reports a member whose PID became known; membership is
	// already applied when it runs.
	HandlePeerJoined(peer gen.PID) error
	// HandlePeerLeft reports a member that left the view or whose PID was
	// forgotten; membership is already applied when it runs.
	HandlePeerLeft(peer gen.PID) error
}
