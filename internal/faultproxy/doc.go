// Package faultproxy breaks loopback TCP between nodes on purpose. A Mesh
// puts one listener in front of every ordered pair of nodes (i dials j): the
// listener forwards to j's acceptor, and node i is told to reach j through it
// (Network().AddRoute(j, mesh.Route(i, j))). Each direction of bytes (i→j and
// j→i) is then controlled on its own: pass, stall (a silent partition: the
// connection stays open and nothing moves, so only the runtime's keepalive
// notices), reset (connections closed and new ones refused) and delay with
// jitter (order preserved).
//
// Callers must know:
//  1. Add every node before asking for routes; Route returns "" for a pair it
//     does not know. Route the nodes through the mesh before they first talk,
//     or their existing direct connections bypass it.
//  2. A fault names the direction bytes flow, whichever side dialled: Cut(a, b)
//     silences a→b on every connection between a and b.
//  3. A stalled direction holds its bytes (and then the sender's, through TCP
//     back-pressure); Heal releases them. The runtime has usually given up on
//     the connection by then and dials a fresh one.
//  4. When a node restarts on a new port, call SetTarget; connections to the
//     old address are closed.
//  5. Close stops every listener and connection and waits for the mesh's
//     goroutines; a Mesh is not reusable afterwards.
//
// Not provided: packet loss or reordering (TCP hides both), bandwidth limits,
// or anything beyond loopback-sized traffic.
package faultproxy
