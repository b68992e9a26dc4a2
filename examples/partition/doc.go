// Command partition plays the leader document's "Partitions and Healing"
// walkthrough on five members, A to E, with real TCP broken by a
// fault-injecting proxy: a partition that leaves the leader in the majority
// (nothing changes for it; the minority cannot elect), healing, then a
// partition that leaves the leader in the minority (it steps down on its own;
// the majority elects a new leader at a higher term), and healing again.
//
//	go run ./examples/partition
//
// Callers must know: the program runs every node in one process on
// 127.0.0.1 and stops them all before it returns; main_test.go runs the
// same schedule, faster.
package main
