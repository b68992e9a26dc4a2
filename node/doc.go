// Package node is Regent's actor runtime: node.Start returns a gen.Node that
// runs processes, delivers their messages, links and monitors, and talks to
// other nodes over TCP.
//
// Each process owns a mailbox of three queues (Urgent for exit signals, System
// for down messages and inspection, Main for the rest). A push into a sleeping
// process's mailbox hands the process to one runner goroutine that calls the
// behavior's ProcessRun until the mailbox is empty; then the process sleeps
// again and holds no goroutine, only its memory (runner goroutines are reused
// for a moment and end when idle). Callbacks of one process therefore
// never run concurrently. Processes on other nodes are reached through one
// authenticated connection per node pair, dialled in the background on first
// use (no caller ever waits for a dial); only types registered with
// Network.RegisterTypes cross it.
//
// Callers must know:
//  1. Use a gen.Process only inside its behavior's callbacks.
//  2. Register every message type and sentinel error on every node before
//     the nodes exchange them; an unregistered type fails the send with
//     gen.ErrUnregistered and nothing is written.
//  3. A nil error from Send means the message was accepted for delivery, not
//     that it was handled; use Call or a monitor when you need to know. To a
//     node with no connection yet, Send encodes the message at once (so
//     gen.ErrUnregistered and gen.ErrTooLarge still fail it), queues it and
//     starts the dial: queued messages are written first, in order, when the
//     connection is made, and dropped (counted in Stats().Dropped
//     ["dial_failed"]) when the dial fails or the node stops first. At most
//     4096 messages or 16 × MaxFrameSize bytes wait per node; beyond that,
//     and during the backoff after a failed dial, Send fails with
//     gen.ErrNoConnection. No route fails it with gen.ErrNoRoute.
//  4. Each connection queues at most NetworkOptions.SendQueueBytes (default
//     256 KiB) of encoded frames for its writer goroutine, which sends
//     everything queued in one write each time it wakes
//     (Stats().FramesOut/Stats().Writes is the batch). When the queue is
//     full, Send, SendExit, Call, SendResponse, Link and Monitor toward that
//     node wait for room while the writer makes progress, so senders go at
//     the pace the peer reads, without memory growing; when no write
//     completes for SendQueueWait (default 1 s) the peer has stopped
//     reading, and they fail with an error wrapping gen.ErrTimeout, counted
//     in Stats().Dropped["send_queue_full"], instead of hanging. Frames
//     already queued still go out, in order. The runtime's own frames
//     (down and exit notices, answers the reader makes) never wait; should
//     they find the queue at twice its bound, the peer is not reading and
//     the connection is closed (Dropped["send_queue_overflow"]), which
//     watchers on both sides learn as gen.ErrNoConnection. TrySend (not in
//     ergo's Node) never waits: where Send would, it fails at once with an
//     error wrapping gen.ErrWouldBlock, sending nothing, and leaves the
//     message to its caller (not counted as dropped). Nothing is dropped
//     without a count and, for a sender, an error.
//  5. A Call fails fast with gen.ErrProcessUnknown or gen.ErrNoConnection
//     when the target is known to be gone, and returns
//     gen.ErrProcessTerminated when it terminates before answering. A Call,
//     Monitor or Link toward a node being dialled returns (or is told, by a
//     Down, an exit signal or gen.MessageDownNode) gen.ErrNoConnection as
//     soon as the dial fails, as when a connection is lost.
//  6. A remote Monitor or Link returns without waiting for the target's node:
//     an unknown remote target is reported by a Down (or exit signal) with
//     gen.ErrProcessUnknown. To be sure the watch is in place before acting
//     on the target from elsewhere, make any request to that node first
//     (frames on one connection are handled in order).
//  7. Stop waits for every running callback to return; a callback that never
//     returns keeps Stop waiting (use StopForce then). Kill and Stop cut short
//     a Call the process is waiting in; other blocking code is not
//     interrupted.
//  8. Messages between two nodes keep their order, except across the moment
//     when both nodes dialled each other at once and one of the two
//     connections is retired (nothing is lost then, but the two streams may
//     interleave).
//  9. A networked node needs a cookie (gen.ErrEmptyCookie otherwise, unless
//     NetworkOptions.InsecureOpen), and refuses what it cannot afford:
//     accepted connections beyond MaxHandshakes in their handshake, peers
//     beyond MaxPeers, a second node under a connected name with an older
//     creation (a newer one replaces the connection, as a restarted node
//     does), and, with TLSVerifyNodeName, a certificate that does not name
//     the host of the node name. Every refusal is counted in
//     Network().Stats(); repeated failures are logged within a budget per
//     kind (5 lines per 10 s), not once each.
//  10. When a connection is lost, every watcher of a process there learns
//     it at once with gen.ErrNoConnection, except the monitors of a process
//     whose behavior implements DownDeferrer and asks for a delay for that
//     node: their downs come after it (counted in
//     Network().Stats().DownsDeferred), or when a connection to that node
//     is made again, or when the watcher asks for its own
//     (ReleaseHeldDowns). Links, pending Calls and the death of a process
//     on a node still connected are never held. Election
//     members use it so that, when a node hosting members of thousands of
//     clusters is lost, the followers whose leader was there run first.
//
// Inside, a process target (the `to` of Send and Call, the target of Link
// and Monitor) is decoded once, at the public method, into a target value
// (target.go) that relations, envelopes and the wire all use. remote.go is
// the node's half of the network: what its operations send and what it does
// with received frames; network.go, acceptor.go, admission.go and
// connection.go carry the frames and decide who gets a connection. A node
// without network has a network value too, disabled, so no code asks
// whether one exists.
package node
