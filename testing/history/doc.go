// Package history records what the members of an election did, and when, and
// checks the record against Regent's invariants.
//
// A History is a list of Events: a member's state after a change (role, term,
// recognised leader, view size, quorum, votes granted), a vote it cast, and
// the faults done to the cluster (partitions, heals, crashes, graceful stops,
// restarts). It uses plain strings, integers and durations so that both the
// deterministic simulator (testing/sim) and the real-TCP harness can fill it
// without either depending on the other or on the election core. The checkers
// (CheckElectionSafety, CheckLeaderMajority, CheckMinClusterSize,
// CheckTermMonotonic, CheckSingleVote, CheckConvergence,
// CheckIsolatedStepDown, and CheckAll for every rule) return Violations that
// print the events around the offending one.
//
// The caller's duties:
//  1. Record every change of a member's role, term, recognised leader or view
//     size as a KindState event, and every vote as a KindVote event, with
//     the member's Life (incremented on each restart).
//  2. Record every fault and its repair as it takes effect: KindPartition
//     with every member listed in exactly one group, KindHeal, KindCrash,
//     KindStop and KindRestart (Durable when term and vote were restored).
//  3. Call Finish with the time observation ended, so the timed rules know
//     how long a state lasted after the last event.
//  4. Times are offsets from one common start; events may be appended out of
//     order (checkers sort them stably by At).
//
// What is not checked: the timed rules (CheckConvergence,
// CheckIsolatedStepDown) apply only where the history says enough: a
// convergence bound is checked only when every member ends live and
// connected, and reachability is what the fault events say, not what the
// runtime detected.
package history
