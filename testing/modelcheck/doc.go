// Package modelcheck is a bounded, exhaustive model checker over Regent's
// real election core: not a model of the protocol but the very
// internal/election.Core the leader shell runs, cloned at every branch.
//
// A global State is N cores with the shell around each (the HardState it
// persisted, its armed timers, its monitors, its own clock), the network as a
// multiset of messages in flight, the monitor downs on their way, and the
// path's history (every member life that led the election, at which term
// and with which lineage; every lineage held agreed; each member's highest
// term so far). From a state, every enabled action is an edge: deliver any
// message in flight, deliver a duplicate of it (the original stays in
// flight), drop it, hand over any pending down, fire any armed timer of any
// member (election, heartbeat, probe, storage: whatever its deadline, moving
// that member's clock up to it, so the core finds it due), crash a member's
// node or kill its process, restart a member that is down (with its
// persisted term, vote and view when Config.Durable), disconnect two live
// members, make a member's disk fail or write again, and apply the next
// Join or Leave of a scripted scenario (called on the member the script
// names; the core forwards it to its leader).
// Check explores every path up to Config.MaxDepth actions breadth first,
// merging states with equal keys, and checks every Invariant on every state
// it reaches; the first violation comes back with the shortest path to it,
// one readable line per action, which Replay reproduces. A search may also
// name Goals, states it must reach to count as evidence (a formation won, a
// member admitted, a ghost removed), and reports the shortest path to each.
//
// The caller's duties:
//  1. Set Config.MaxDepth (and MaxStates for a time bound): the number of
//     states grows about sixfold per level, so a level costs what all the
//     levels before it cost, five times over.
//  2. Write invariants and goals as functions of what the state key holds
//     (roles, terms, votes, views and their stamps, stored HardState, the
//     path's leaders, agreed lineages and term floors): a search checks each
//     distinct key once, so an invariant that read a clock reading or a
//     statistic would be judged on one representative only.
//  3. Read a State and its cores only: states share the cores they did not
//     change, so feeding one an input corrupts the search.
//  4. When a field is added to election.Core, keep Core.Clone and
//     Core.AppendStateKey in step with it (the election package's tests fail
//     until they are), and the checker follows.
//
// The shell's duties are played as leader/shell.go plays them: HardState
// (term, vote and view) is persisted before anything is sent, and when the
// disk fails the core is told with StorageFailed and that Ready's messages
// are not sent (StorageRecovered once a write works again); Confirm is
// answered with a grant; a Monitor of a process that is gone fails at once
// and becomes a down; a Fatal effect ends the life, its monitors firing
// with the error; a send to a member that is down is reported with
// SendFailed; and a message by PID to an ended life vanishes. ViewChanged,
// RoleChanged and the user's callbacks change nothing the core reads.
//
// Time is each member's own: its clock starts at the same instant as the
// others' and moves only when one of its timers fires, to that timer's
// deadline; messages take no time. The core compares only readings of its
// own clock, so this allows every drift between members.
//
// What is abstracted. A state's key holds no clock reading and no random
// source: two states whose cores differ only in timestamps, but agree on
// the predicates those timestamps give at the member's own clock (a live
// leader, evidence within the window, a peer alive enough to admit, a ghost
// past GhostTTL, a withdrawal standing, an election timeout due) and on the
// orders the core compares them in (which member answered last, whether a
// peer answered since its admission was asked for), are merged, and so are
// timer generations, statistics and texts that only explain. Merging can lose
// coverage (the state explored stands for the others), never raise a false
// alarm: every check runs on a concrete state reached by a concrete path,
// and Replay plays that path again. Keys are hashed to 64 bits; a collision
// would lose a state the same way. Sleep sets prune transitions, not states:
// of two independent actions (feeding different cores), once one order was
// taken the other is not; with exact keys (every field, clocks included)
// the reduced search finds exactly the states of the full one, which a test
// checks. Under the abstraction the two may differ by a few states (tens
// in a million, in the measurements made): merged states are not
// identical, so which of them stands for the others depends on the order of
// exploration. That is coverage, as with any merge, not a false alarm.
//
// What is not explored: a HandleConfirmLeader that denies or a
// HandleBecomeLeader that fails; StepDown, TransferLeadership, SetCampaign,
// Reconfirm and Reform (which breaks quorum intersection on purpose);
// messages that outlive a crash of their sender or receiver
// (they vanish with the connection); monitors that fire late, after the
// member restarted; sends that fail silently (a send to a member that is up
// is always put in flight; losing it is a drop); preferred leaders. A drop is
// never needed to break the invariants here, which read no message in
// flight: leaving a message in flight for ever reaches the same cores, one
// action sooner. Config.Drops enumerates drops anyway, at a cost in states;
// Config.NoProbes leaves probe timers unfired, which only resend a
// negotiation, to reach deeper where that does not matter.
//
// The tests name each configuration they explore and log its depth, state
// count, transitions and speed (go test -v). REGENT_MC_DEPTH sets the depth
// of every search a run selects and lifts its bound on states, and
// REGENT_MC_STATES sets that bound (0 for none), so a deeper run picks its
// searches:
//
//	REGENT_MC_DEPTH=7 go test -v -run 'TestExhaustive/three_members_led' ./testing/modelcheck
//
// The configurations that broke one leader per term before the view was
// agreed (issue 11: overlapping Bootstrap lists, Join, Leave, ghost expiry
// during a cut, a floor of one with lost connections, nested lists with a
// restart) are now searched with the expectation that they break nothing,
// each with a goal showing it exercised the feature. The search that shows
// the checker can still find a violation runs a shell that keeps nothing
// across restarts: a member restarted from nothing votes again in a term it
// voted in.
package modelcheck
