// Command forwarding shows the leader document's "Forwarding to the leader":
// a request may arrive at any member; the leader handles it, a follower
// forwards it to the leader it recognises, and with no leader the request is
// rejected with gen.ErrNotAllowed instead of queued for a leader that may
// never come. Regent's HandleCall returns that error to the caller and the
// actor lives on.
//
//	go run ./examples/forwarding
//
// Callers must know: the program runs every node in one process on
// 127.0.0.1 and stops them all before it returns; main_test.go runs the
// same schedule, faster.
package main
