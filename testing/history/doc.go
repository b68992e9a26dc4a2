// Package history records what the members of an election did, and when, and
// checks the record against Regent's invariants.
//
// A History is a list of Events: a member's state after a change (role,
// term, recognised leader, view size and quorum, votes granted, whether it
// leads the election while hidden, and its view: lineage, key, agreed flag,
// members), a vote it cast, and what was done to the cluster (partitions and
// cuts of pairs, heals, crashes, graceful stops, starts and restarts, Join
// and Leave calls). It uses plain strings, integers and durations so that
// both the deterministic simulator (testing/sim) and the real-TCP harness can
// fill it without either depending on the other or on the election core.
//
// The rules, each a checker that returns Violations printing the events
// around the offending one (CheckAll runs them all):
//   - CheckElectionSafety: at most one leader, protocol or visible, per
//     lineage and term; per term when twice MinClusterSize exceeds the
//     members;
//   - CheckSingleLineage: then, at most one lineage ever agreed;
//   - CheckOneLeaderAtOnce: no two visible leaders of one lineage (of any,
//     when CheckSingleLineage's rule applies) at the same time for longer
//     than Bounds.Overlap, or Bounds.StepDown when that is zero, whatever
//     their terms;
//   - CheckLeaseOverlap: no two leases (History.RecordLease: when a
//     member's LeadsAt holds, the leadership a user acts on) of one lineage
//     at different terms held at once for longer than Bounds.Lease;
//   - CheckLeaderMajority: a leader won with a majority of its view;
//   - CheckMinClusterSize: no visible leader without an agreed view of at
//     least MinClusterSize;
//   - CheckTermMonotonic and CheckSingleVote: terms never decrease in a life
//     or across a durable restart, and a member votes once per term;
//   - CheckConvergence: within Bounds.Converge of the last fault, with every
//     member live and connected, one visible leader that every live member
//     follows and whose view holds every live member;
//   - CheckIsolatedStepDown: a leader, visible or not, that reaches fewer
//     members of its view than a majority of it steps down within
//     Bounds.StepDown.
//
// The number of members is the number of distinct names the history
// mentions, less second actors (Event.Node): a second actor of the cluster on
// another member's node votes and leads like a member in every safety rule,
// but views count nodes, so it adds no member to the count that decides
// whether two agreed lineages may exist. No rule is switched off when views
// shrink: a view that shrinks below MinClusterSize only hides leadership, and
// the rules judge what members did, not what their views allowed.
//
// The caller's duties:
//  1. Record every change of a member's role, term, recognised leader, view
//     size or view as a KindState event, and every vote as a KindVote event,
//     with the member's Life (incremented on each restart), and Node on every
//     event of a second actor.
//  2. Record every fault and its repair as it takes effect: KindPartition
//     with Groups or Cuts, KindHeal, KindCrash, KindStop, KindStart (an
//     actor started after the run began), KindRestart (Durable when term,
//     vote and view were restored), KindJoin and KindLeave.
//  3. Call Finish with the time observation ended, so the timed rules know
//     how long a state lasted after the last event.
//  4. Times are offsets from one common start; events may be appended out of
//     order (checkers sort them stably by At).
//
// What is not checked: the timed rules apply only where the history says
// enough: a convergence bound is checked only when every member ends live
// and connected with no second actor running, reachability is what the
// fault events say, not what the runtime detected, and a recorder that
// knows no views (Lineage empty) gets the rules about views judged on view
// size and quorum, with every leader in one lineage.
package history
