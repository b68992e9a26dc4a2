// Command scheduler is the leader document's Basic Usage as a program: three
// nodes each run a coordinator, and only the leader runs the periodic work.
// The work starts in HandleBecomeLeader and stops in HandleBecomeFollower;
// the program hands leadership over and then kills the leader's node, so
// you see the work move.
//
//	go run ./examples/scheduler
//
// Callers must know: the program runs every node in one process on
// 127.0.0.1 and stops them all before it returns; main_test.go runs the
// same schedule, faster.
package main
