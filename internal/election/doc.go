// Package election is the pure state machine of leader.Actor: a Raft-style
// election with terms, votes, heartbeats and majority quorum, and no log.
//
// A Core knows nothing of goroutines, clocks or sockets. Everything arrives as
// an input carrying the current time (Step for a peer's message, Tick for a
// timer, Join, Leave, PeerDown, ConfirmResult, SendFailed, StepDown, ...), and
// everything the caller must do comes back in one Ready: state to persist,
// timers to arm or cancel, callbacks and runtime actions to run, messages to
// send. Randomness comes only from Config.Rand, so a seeded run replays
// exactly; this is what lets the simulator in testing/ drive many cores on a
// virtual clock. It lives at module-root internal/ so the leader shell and the
// simulator can import it while users cannot.
//
// The caller's duties:
//  1. Own the Core from one goroutine; it has no lock.
//  2. After every input, while HasReady, take Ready and handle it in order:
//     persist HardState (before sending anything), apply Timers (arming a
//     kind replaces its earlier timer), run Effects in order, send Messages.
//  3. Hand every fired timer back to Tick with the Timer value it was armed
//     with; stale ones are ignored, so cancellation races are harmless.
//  4. For a Confirm effect, ask HandleConfirmLeader and report the answer with
//     ConfirmResult; for BecomeLeader, call HandleBecomeLeader and on error
//     call BecomeLeaderFailed, drop the rest of that Ready and terminate.
//  5. Monitor the PIDs named by Monitor effects and report their downs with
//     PeerDown, passing the real reason (gen.ErrNoConnection for a lost
//     connection).
//  6. Report failed sends with SendFailed; a send not reported counts as
//     accepted.
//  7. Register NetworkTypes on every node before the cores talk.
//
// Worth knowing: New emits no BecomeFollower (starting is not a transition);
// BecomeFollower also fires when a follower's known leader changes and when
// leadership ends for any reason, including falling below MinClusterSize. A
// leader checks its evidence on each heartbeat tick over a window of
// ElectionTimeoutMin, so an isolated leader steps down at most
// ElectionTimeoutMin+HeartbeatInterval after its last contact; when
// HeartbeatInterval is not below ElectionTimeoutMin (accepted, though
// followers will then campaign between heartbeats) the window is two
// heartbeat intervals instead. With Config.Prefer set, a leader hands over on
// a heartbeat tick to the most preferred reachable member once that member
// has answered steadily for PreferStableFor; the target outranks the leader,
// so it never hands back, and members ranked below the leader never receive
// such a handover. Members learn each other's start time from the Started
// field of every message. Pre-voting is
// not a role: a pre-candidate stays follower (Status.PreVoting says so); a
// won election awaiting confirmation stays candidate (Status.AwaitingConfirm).
//
// What is not guaranteed: the core bounds leadership to one member per term
// within a view, not one per deployment (diverged views elect separately, as
// the leader document explains); a superseded leader learns late; a leader's
// quorum evidence is only as good as the Evidence rule chosen; and nothing
// survives a restart unless the caller persists HardState.
package election
