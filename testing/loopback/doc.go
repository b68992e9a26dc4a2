// Package loopback starts Regent nodes ready for the election, for tests,
// examples and the CLI: StartNode starts one node with leader.NetworkTypes
// (and any types of yours) registered; Start starts a cluster of such nodes
// on 127.0.0.1, each routed to every other directly or through a
// fault-injecting mesh, and restarts, kills and stops them by index.
// WaitAgreed waits until listed members hold the agreed view and follow one
// leader, read through leader.ReadInspection and decided by leader.Agree; on
// timeout its error says what each member believed.
//
// Callers must know:
//  1. Close the Cluster (or stop the node StartNode returned), and close the
//     mesh if you gave one: their goroutines outlive you otherwise.
//  2. An empty cookie becomes a random one, shared by every node of one
//     Start; a node that must talk to nodes started elsewhere needs the
//     cookie given explicitly.
//  3. Without log options of yours the nodes log errors only, so a test's or
//     an example's own output stays readable.
//  4. A Cluster is driven from one goroutine; its nodes themselves may be
//     used from any.
package loopback
