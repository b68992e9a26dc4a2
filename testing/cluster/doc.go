// Package cluster is a test harness that runs a leader-election cluster over
// real TCP on loopback and breaks its network on purpose.
//
// Start runs Config.Size members, each a node with one actor embedding
// leader.Actor (your type, through Config.Factory, or PlainMember), either
// in the test's process or, with Config.Processes, each in its own OS
// process built from internal/membernode. Every member-to-member connection
// passes through a proxy the harness owns (an internal/faultproxy Mesh):
// member i reaches member j through a loopback listener for the ordered pair
// (i, j) that forwards to j's real acceptor. Faults act on the directions of
// those connections: Partition (silent: bytes are held and each side's
// keepalive notices), PartitionReset (connections closed and refused),
// Isolate, CutOneWay, Heal, SetLoss (whole frames dropped after the
// handshake: a TCP stream cannot lose bytes) and SetDelay (delay plus
// jitter, order kept). Members fail with Kill (in-process: the node stops at
// once and its connections are cut; OS mode: SIGKILL), Stop (graceful) and
// Restart (the same node name, a new Creation and port); Join and Leave
// change a member's view. Leaders, WaitLeader and Inspect read the members;
// History records every role, term and leader transition of every member
// (through leader.Options.OnTransition in-process, by polling inspection
// every Config.PollInterval in OS mode, which also records each member's
// view and whether it leads the election while hidden) and every fault, as
// testing/history events; Check runs all of testing/history's invariant
// checkers over it. In-process events carry no view (leader.Transition has
// none), so there the checkers' view rules fall back to view size and
// quorum, and per-lineage rules treat the cluster as one lineage.
//
// The caller's duties:
//  1. Your Factory must return a behavior whose Init returns m.Options
//     (they carry the harness's OnTransition recorder, chained after yours,
//     and the Bootstrap it filled in). Your own Options.OnTransition runs
//     first, on the actor's goroutine: keep it quick.
//  2. Register your own wire types in Config.Types; leader.NetworkTypes is
//     registered for you.
//  3. Call Close (Start does it at the test's cleanup when given t); it stops
//     every member and proxy and leaves no goroutine or process behind.
//  4. Drive operations from one goroutine; queries (Leaders, Inspect,
//     WaitLeader, History) may run from any.
//  5. Wait for outcomes with WaitLeader or require.Eventually, never with a
//     sleep: a loaded machine can stall a member for an election timeout.
//
// What is not guaranteed: the history records what members report, so a
// state that lasts less than PollInterval in OS mode may be missing; Check
// skips its convergence rule while a one-way cut, loss or delay stands,
// because the history cannot express them; a silent partition refuses new
// connections across it at once unless Config.HoldDials asks for them to
// hang as dropped packets would. OS-process mode needs the go tool to build
// the member program, runs PlainMember only, and does not support Join and
// Leave.
package cluster
