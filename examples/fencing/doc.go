// Command fencing guards a real resource with leader.Actor's fencing token,
// as the leader document's "Fence the resource" describes: a file that takes
// an update only when the token carried with it is not older than the newest
// it has seen. An election alone cannot stop a superseded leader that learns
// late; the resource refusing its stale token can.
//
// The program runs three members on loopback, lets the leader write, hands
// leadership over, lets the new leader write, and then replays a write the
// old leader had in flight with its old token: the resource refuses it.
//
//	go run ./examples/fencing
package main
