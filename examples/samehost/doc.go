// Command samehost runs several members of one election cluster on this host
// as separate OS processes sharing one same-host cell (leader.Options
// SameHost): of the members on a host only the process holding the cell, the
// lowest live PID, starts elections, so a failover is one campaign rather than
// a race of every follower. The program kills the leader's process (at first
// also the cell's holder) with SIGKILL and shows a survivor claiming the cell
// at once, the new leader with the failover time, and the cell settling on
// the lowest live PID.
//
//	go run ./examples/samehost                     # 5 members, one kill
//	go run ./examples/samehost --rounds 3          # three kills, each victim but the last restarted
//	go run ./examples/samehost --shortcut=false    # the same without the cell
//	go run ./examples/samehost --measure 30        # figures, with and without the cell
//
// The program re-executes itself as each member (the environment variable
// REGENT_SAMEHOST_NODE selects that role); each member is a node named
// sN@127.0.0.1:port, dialled without routes. The parent runs a node of its
// own with no member and follows the election by subscribing to every member
// with leader.MessageSubscribe and by inspecting the ergo:same_host key.
//
// Callers must know: every child reads its standard input and stops when it
// closes, so children never outlive the parent; the program kills and reaps
// every child and removes its temporary directory before it returns; the
// measurements run on one machine and carry its noise.
package main
