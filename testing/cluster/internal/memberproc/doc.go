// Package memberproc runs one plain cluster member in its own OS process for the
// harness's OS-process mode: internal/membernode is its main.
//
// The harness passes a Spec as JSON in the REGENT_MEMBER environment
// variable. Run starts the node, registers the election's types, spawns a
// plain leader actor under Spec.Register and writes one line to its output,
//
//	READY <pid id> <creation> <acceptor host:port>
//
// then serves until it is told to stop.
//
// Callers must know:
//  1. Run returns when stop is closed (a graceful node.Stop: peers see a real
//     reason) or when abort is closed (node.StopForce: peers see a lost
//     connection). The main stops on SIGTERM and aborts when its standard
//     input closes, so a member never outlives the harness that started it.
//  2. Spec.Options carries every leader.Options field except the func ones
//     (OnTransition, a PreferFunc's Less), which JSON skips; the harness reads
//     the member's state by remote inspection instead.
//  3. With Spec.Worker the actor is a Worker, which records every act it
//     does as leader to a file; the main turns SIGUSR1 into Run's block
//     channel, which blocks the worker's next handler.
package memberproc
