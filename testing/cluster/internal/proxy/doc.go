// Package proxy is the fault-injecting TCP switch between the members of a
// test cluster: every connection from member i to member j goes through a
// loopback listener the switch owns for the ordered pair (i dials j), which
// forwards it to j's real acceptor address.
//
// Faults act on directions of data flow (bytes sent by i and received by j),
// whichever side dialled the connection. A direction can be:
//
//   - cut silently (ModeSilent): bytes of live connections are held, nothing
//     is closed; the runtime's keepalive then declares the peer down, as in a
//     real partition. New connections between the two members are refused at
//     once (a firewall that rejects). ModeDrop holds new connections too (a
//     firewall that drops): their handshake hangs until the dialler's
//     timeout.
//     A side that closes while its direction is held has its close held too,
//     behind the data it sent; when the cut is lifted, the held bytes and the
//     close are delivered in order (as TCP would retransmit them), unless the
//     other side closed meanwhile, which tears the connection down and
//     discards everything held in both directions.
//   - cut with reset (ModeReset): every connection between the two members is
//     closed at once, and new ones are accepted and closed immediately while
//     the cut holds (in both directions: a connection needs both to
//     handshake).
//   - delayed: each unit (a handshake message or a frame) is delivered Delay
//     plus a uniform random part of Jitter after it arrived, never before the
//     unit ahead of it, so a stream keeps its order.
//   - lossy: a TCP stream cannot lose bytes, so loss is defined on whole
//     frames after the handshake. The switch parses the handshake layout of
//     node/internal/handshake and then the 4-byte big-endian length-prefixed
//     frames; with probability Loss it drops one whole frame (a protocol
//     message or a keepalive). Handshake messages are never dropped. A stream
//     that does not parse as Regent's handshake is forwarded raw and loses
//     nothing.
//
// Callers must know:
//  1. Create every listener with Listen before the members dial, and set
//     each member's real acceptor address with SetTarget (again after the
//     member restarts on a new port).
//  2. Update is the only way to change faults; it applies to all directions
//     atomically and takes effect for bytes not yet delivered.
//  3. Close ends every listener and connection and waits for the switch's
//     goroutines.
package proxy
