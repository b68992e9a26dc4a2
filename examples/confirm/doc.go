// Command confirm gates leadership on an external authority, as the leader
// document's "Leadership Safety" section recommends: winning the election is
// necessary but not sufficient, HandleConfirmLeader must also take a lease
// that only one holder can have. The lease here is an exclusive flock(2) on
// a file; while someone outside the cluster holds it, every won election is
// denied and no leader is published.
//
//	go run ./examples/confirm
//
// Callers must know: the program runs every node in one process on
// 127.0.0.1 and stops them all before it returns; main_test.go runs the
// same schedule, faster.
package main
