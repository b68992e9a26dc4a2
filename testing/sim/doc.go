// Package sim is a deterministic simulator of Regent's election: it drives N
// election cores (internal/election) directly, on a virtual clock, over a
// simulated network that delays, reorders, duplicates and loses messages, and
// through faults that change over time, all from one seed.
//
// Each member's election.Config is built from Config.Election, a template
// whose zero fields take production's defaults (election.Config.WithDefaults),
// so the simulator runs what a zero leader.Options runs unless a test says
// otherwise. What it generates:
//   - declared peers of every shape (Config.Bootstrap): identical, nested
//     (issue 11's first scenario), overlapping, disjoint halves (joined later
//     by a Join), a ring; through Bootstrap or Core.Join;
//   - a link model of explicit cut pairs: partitions, isolation, bridges
//     (two sides cut from each other, the rest reaching both: non-transitive
//     cuts) and arbitrary cuts, each noticed after Network.DetectCut, held
//     long enough to outlast short GhostTTLs;
//   - one direction of a member's links delayed by an amount that grows
//     well beyond the election timeout (FaultDelay), then the other
//     direction cut (FaultOneWay): a leader whose replies queue up and
//     whose heartbeats then stop getting through. The side of a one-way
//     cut that hears nothing notices after DetectCut and closes; the side
//     that still receives notices only when that close reaches it;
//   - crashes and graceful stops, restarts with or without durable term,
//     vote and view (Config.Durable), and faults that wait for a leader to
//     propose a view change so they land while it is in flight
//     (Fault.AwaitChange, TheSubject);
//   - storms of Core.Join and Core.Leave calls on random members;
//   - a second actor of the cluster on a member's node, registered under
//     another name and routed by PID (FaultRogue): the core must drop its
//     traffic as duplicate_member once every view names the real member, and
//     the safety rules count it like any member. Config.Rogues starts one
//     before any view exists, a case the core cannot refuse (only leader's
//     per-process registry does): there it can split its node's vote.
//
// A Simulator plays the leader shell for every actor: it persists HardState
// (when Config.Durable), arms timers as queue entries, answers Confirm (at
// once, or after Config.ConfirmTakes, busy meanwhile),
// monitors peers and reports their downs (gen.ErrNoConnection for a crash or
// a detected cut, the real reason for a graceful stop), and reports sends
// over a dead connection as failed. Everything it does is recorded in a
// history.History (with each member's view, its lineage and agreed flag, and
// whether it leads the election while hidden below MinClusterSize) checked
// with the invariant checkers of testing/history, and every fault it applies
// in a Schedule, so a failing seed can be reproduced and read.
//
// The caller's duties:
//  1. Use a Simulator from one goroutine; it has no lock.
//  2. The same Config (seed included) and the same calls give the same run:
//     keep the Config of a failing run, it is the reproduction.
//  3. Check a run with history.CheckAll(s.History(), s.Bounds()) once the
//     run has ended healed and live (after LastFault, Settled or the
//     convergence bound), so the timed rules can apply.
//
// The package's tests run a bounded number of random seeds (RandomConfig)
// and check every invariant; a failing seed prints its schedule and the line
// that reproduces it (go test ./testing/sim -run 'TestSeed$' -seed=N -v).
// REGENT_SIM_SOAK=<seeds> widens the run into a soak (REGENT_SIM_FIRST=<seed>
// starts it elsewhere than seed 1) and logs how many faults of each kind
// were applied or skipped.
//
// What is not modelled: the cost of anything (steps take no virtual time),
// a HandleConfirmLeader that denies or a HandleBecomeLeader that fails, a
// storage failure, the operator's Reform, in-flight messages of a dead
// connection (a message whose sender died, or that would cross a cut, is
// lost, as on TCP), and a node whose actors die together (a
// second actor outlives a crash of the member on its node).
package sim
