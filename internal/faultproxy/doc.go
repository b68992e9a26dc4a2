// Package faultproxy breaks loopback TCP between named nodes on purpose; it
// serves the regent command (demo, bench), the examples and the test
// harness testing/cluster. A Mesh puts one listener in front of every
// ordered pair of nodes (i dials j): the listener forwards to j's acceptor,
// and node i is told to reach j through it (its route to j is
// mesh.Route(i, j)).
//
// Faults act on directions of bytes (sent by src, received by dst),
// whichever side dialled the connection. Each direction has a Fault whose
// parts are independent:
//
//   - Cut: Stall holds the bytes of live connections and closes nothing, so
//     only the runtime's keepalive notices (a silent partition). A side that
//     closes behind a stall has its close held too, behind its data; a heal
//     delivers both in order, unless the other side closed meanwhile. New
//     connections across a stall are refused at once, or, with
//     Options.HoldDials, held so that their handshake hangs. Reset closes
//     every connection between the two nodes and refuses new ones.
//   - Delay and Jitter: each unit (a handshake message, a frame, or a raw
//     chunk) is delivered Delay plus a uniform random part of Jitter after
//     it arrived, never before the unit ahead of it: order is kept.
//   - Loss: a TCP stream cannot lose bytes, so loss is defined on whole
//     frames. The mesh parses the handshake layout of node/internal/handshake
//     and then the 4-byte big-endian length-prefixed frames, and drops a
//     frame with probability Loss. Handshake messages are never dropped; a
//     stream that does not parse as Regent's is forwarded raw, losslessly.
//
// The API: New(Options); Add and SetTarget register nodes and their
// acceptors; Route gives the addresses to dial; Update changes any set of
// directions atomically, and Set, Cut, Reset, Partition, PartitionReset,
// Isolate and Heal are its common cases; Fault and Stats read the state;
// Close ends everything.
//
// Callers must know:
//  1. Add every node (its acceptor address may be "" until it runs) before
//     asking for routes, and route the nodes through the mesh before they
//     first talk, or their direct connections bypass it.
//  2. When a node restarts on a new port, call SetTarget; connections to the
//     old address are closed.
//  3. A change applies to bytes not yet delivered. Heal lifts cuts only;
//     delay and loss stay until set back to zero.
//  4. Close stops every listener and connection and waits for the mesh's
//     goroutines; a closed mesh accepts no new node.
//
// Not provided: byte-level loss or reordering (TCP hides both), bandwidth
// limits, or anything beyond loopback-sized traffic.
package faultproxy
