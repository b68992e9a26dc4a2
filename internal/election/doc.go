// Package election is the pure state machine of leader.Actor: a Raft-style
// election with terms, votes, heartbeats and majority quorum, no log, and an
// agreed view — a versioned membership the leader replicates and changes one
// member at a time (docs/membership.md states the rules and why any two
// quorums that can elect intersect).
//
// A Core knows nothing of goroutines, clocks or sockets. Everything arrives as
// an input carrying the current time (Step for a peer's message, Tick for a
// timer, Join, Leave, PeerDown, ConfirmResult, SendFailed, StepDown,
// StorageFailed, ...), and everything the caller must do comes back in one
// Ready: state to persist, timers to arm or cancel, callbacks and runtime
// actions to run, messages to send. Randomness comes only from Config.Rand,
// so a seeded run replays exactly; this is what lets the simulator and the
// model checker in testing/ drive many cores on a virtual clock. The files
// follow the jobs: step.go (inbound messages), campaign.go (elections, both
// sides of a vote, formation), leading.go (heartbeats, commit, visibility),
// membership.go (views accepted, Join and Leave, admissions and removals),
// handover.go, roles.go (transitions and the user's callbacks), storage.go.
//
// The caller's duties:
//  1. Own the Core from one goroutine; it has no lock.
//  2. After every input, while HasReady, take Ready and handle it in order:
//     persist HardState (term, vote and view) before sending anything, apply
//     Timers (arming a kind replaces its earlier timer), run Effects in
//     order, send Messages.
//  3. When persisting fails, call StorageFailed and do not send that Ready's
//     messages (still apply its timers and effects); call StorageRecovered
//     once a later write succeeds. Meanwhile the member votes for nobody.
//  4. Hand every fired timer back to Tick with the Timer value it was armed
//     with; stale ones are ignored, so cancellation races are harmless.
//  5. For a Confirm effect, ask HandleConfirmLeader and report the answer with
//     ConfirmResult; for BecomeLeader, call HandleBecomeLeader and on error
//     call BecomeLeaderFailed, drop the rest of that Ready and terminate. A
//     Fatal effect means the member met a state the rules rule out: end the
//     actor with its error.
//  6. Monitor the PIDs named by Monitor effects and report their downs with
//     PeerDown, passing the real reason (gen.ErrNoConnection for a lost
//     connection).
//  7. Report failed sends with SendFailed; a send not reported counts as
//     accepted.
//  8. Register NetworkTypes on every node before the cores talk.
//
// Worth knowing: New emits no BecomeFollower (starting is not a transition).
// Role is what the user sees: a protocol leader shows as candidate until its
// re-stamped view committed and HandleConfirmLeader agreed, and as
// unclustered while its view is below MinClusterSize (it still leads the
// view, so members can be re-admitted). BecomeFollower fires on every move
// into follower, whenever a follower's known leader changes, and when
// leadership ends. A leader checks its evidence on each heartbeat tick over
// a window of ElectionTimeoutMin, so an isolated leader steps down at most
// ElectionTimeoutMin+HeartbeatInterval after its last contact. With
// Config.Prefer set, a visible leader hands over to the most preferred
// reachable member once it answered steadily for PreferStableFor; a target
// that does not take leadership is avoided for a while. Pre-voting is not a
// role: a pre-candidate stays follower (Status.PreVoting says so).
//
// What is guaranteed: at most one leader per lineage and term; at most one
// agreed lineage when MinClusterSize exceeds half the members that take
// part; no visible leader below MinClusterSize. What is not: one cluster when
// MinClusterSize is at or below half (groups that never heard of each other
// form one each, and merge when they meet); that a superseded leader knows it
// at once; anything across restarts unless the caller persists HardState
// (a member that forgets its vote or view can vote twice or join a second
// formation).
package election
