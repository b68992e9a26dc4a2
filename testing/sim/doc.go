// Package sim is a deterministic simulator of Regent's election: it drives N
// election cores (internal/election) directly, on a virtual clock, over a
// simulated network that delays, reorders, duplicates and loses messages, and
// through faults that change over time (partitions, heals, crashes and
// restarts with or without durable term and vote, graceful stops), all from
// one seed.
//
// A Simulator plays the leader shell for every member: it persists HardState
// (when Config.Durable), arms timers as queue entries, answers Confirm,
// monitors peers and reports their downs (gen.ErrNoConnection for a crash or
// a detected cut, the real reason for a graceful stop), and reports sends
// over a dead connection as failed. Everything it does is recorded in a
// history.History checked with the invariant checkers of testing/history, and
// every fault it applies in a Schedule, so a failing seed can be reproduced
// and read.
//
// The caller's duties:
//  1. Use a Simulator from one goroutine; it has no lock.
//  2. The same Config (seed included) and the same calls give the same run:
//     keep the Config of a failing run, it is the reproduction.
//  3. Check a run with history.CheckAll(s.History(), s.Bounds()) once the
//     run has ended healed and live, so the timed rules can apply.
//
// The package's tests run a bounded number of random seeds (RandomConfig)
// and check every invariant; a failing seed prints its schedule and the line
// that reproduces it (go test ./testing/sim -run 'TestSeed$' -seed=N -v).
// REGENT_SIM_SOAK=<seeds> widens the run into a soak.
//
// What is not modelled: the cost of anything (steps take no virtual time),
// a HandleConfirmLeader that denies or a HandleBecomeLeader that fails, and
// in-flight messages of a dead connection (a message whose sender died, or
// that would cross a cut, is lost, as on TCP).
package sim
