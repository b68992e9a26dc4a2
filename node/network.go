package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node/internal/codec"
	"github.com/regent-go/regent/node/internal/handshake"
)

// Defaults of gen.NetworkOptions.
const (
	defaultKeepAlivePeriod  = time.Second
	defaultKeepAliveTimeout = 3 * time.Second
	defaultMaxFrameSize     = 4 << 20
	defaultHandshakeTimeout = 5 * time.Second
	defaultBackoffMin       = 100 * time.Millisecond
	defaultBackoffMax       = 5 * time.Second
	defaultMaxHandshakes    = 64
	defaultMaxPeers         = 1024
	defaultSendQueueBytes   = 256 << 10
	defaultSendQueueWait    = time.Second
)

// minCookieBytes is the shortest cookie node.Start accepts without a
// warning: 16 bytes, 128 bits if they are random, is beyond offline
// guessing of one captured proof.
const minCookieBytes = 16

// Reasons counted in NetworkStats.Dropped.
const (
	dropUnknownType     = "unknown_type"
	dropMalformed       = "malformed"
	dropTooLarge        = "too_large"
	dropKeepalive       = "keepalive_timeout"
	dropHandshake       = "handshake_failed"
	dropUnknownProcess  = "unknown_process"
	dropMailboxFull     = "mailbox_full"
	dropUnexpectedFrame = "unexpected_frame"
	dropForeignSender   = "foreign_sender"
	dropDialFailed      = "dial_failed"
	dropRetireFlush     = "retire_flush_failed"
	dropQueueFull       = "send_queue_full"
	dropQueueOverflow   = "send_queue_overflow"
)

// maxQueuedFrames bounds the frames waiting for a dial to one node; their
// bytes are bounded by queuedBytesPerFrame times MaxFrameSize.
const (
	maxQueuedFrames     = 4096
	queuedBytesPerFrame = 16
)

// network implements gen.Network: the acceptor, one connection per peer
// node, routes, and the codec registry. A node without network
// (NetworkModeDisabled) has one too, disabled: it keeps the registry, has
// no acceptor, and refuses to dial.
type network struct {
	registry
	node     *node
	disabled bool
	opts     gen.NetworkOptions
	hs       handshake.Config

	listener net.Listener
	wg       sync.WaitGroup // the acceptor loop, every connection's reader and writer, accepts and dials in progress
	ctx      context.Context
	cancel   context.CancelFunc // ends dials in progress when the network closes

	// conns points to the table of established connections by peer name.
	// The map is never modified once published: writers, holding mu, store
	// a changed copy (setConnLocked), so every send finds its connection
	// with one atomic load and no lock, and readers under mu see the same
	// table as writers. A connection found there may be closing; its send
	// says so.
	conns atomic.Pointer[map[gen.Atom]*connection]

	mu        sync.Mutex // guards the fields below and orders changes of conns; taken before connection.mu and node.held.mu, never after
	closed    bool
	routes    map[gen.Atom]string
	dialing   map[gen.Atom]*dialAttempt
	backoff   map[gen.Atom]backoffState
	pending   map[net.Conn]struct{} // accepted and dialled sockets still in their handshake
	accepting int                   // how many of pending were accepted (bounded by MaxHandshakes)

	logs *limitedLog // the network's repeated-failure log lines

	framesIn, framesOut, bytesIn, bytesOut, writes, rejected atomic.Uint64
	downsDeferred                                            atomic.Uint64
	countMu                                                  sync.Mutex // guards dropped and rejectedBy; taken last
	dropped                                                  map[string]uint64
	rejectedBy                                               map[string]uint64
}

// dialAttempt is a dial running in the background and the frames sent to
// its node meanwhile. Whichever connection to the node is registered first
// writes them before anything sent later; if the dial fails with no
// connection in place, they are dropped. Guarded by network.mu.
type dialAttempt struct {
	frames []byte // encoded frames, headers included, in send order
	count  int    // how many frames are in frames
}

// backoffState is when the next dial to a node may start after failures,
// and how many dials in a row failed: the first failure is logged at
// Warning, the later ones at Debug, and the connection that ends the run
// at Info with the count.
type backoffState struct {
	next     time.Time
	wait     time.Duration
	failures int
}

// orDefault sets *v to def when it holds the zero value.
func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

func withDefaults(o gen.NetworkOptions) (gen.NetworkOptions, error) {
	orDefault(&o.KeepAlivePeriod, defaultKeepAlivePeriod)
	orDefault(&o.KeepAliveTimeout, defaultKeepAliveTimeout)
	orDefault(&o.MaxFrameSize, defaultMaxFrameSize)
	orDefault(&o.HandshakeTimeout, defaultHandshakeTimeout)
	orDefault(&o.ReconnectBackoffMin, defaultBackoffMin)
	orDefault(&o.ReconnectBackoffMax, defaultBackoffMax)
	orDefault(&o.MaxHandshakes, defaultMaxHandshakes)
	orDefault(&o.MaxPeers, defaultMaxPeers)
	orDefault(&o.SendQueueBytes, defaultSendQueueBytes)
	orDefault(&o.SendQueueWait, defaultSendQueueWait)
	switch {
	case o.Cookie == "" && !o.InsecureOpen:
		return o, fmt.Errorf("no cookie, and InsecureOpen is not set: every node without a cookie could join: %w", gen.ErrEmptyCookie)
	case o.Cookie != "" && o.InsecureOpen:
		return o, fmt.Errorf("InsecureOpen with a Cookie: choose one: %w", gen.ErrIncorrect)
	case o.TLSVerifyNodeName && o.TLS == nil:
		return o, fmt.Errorf("TLSVerifyNodeName without TLS: %w", gen.ErrIncorrect)
	case o.MaxHandshakes < 0 || o.MaxPeers < 0 || o.SendQueueBytes < 0:
		return o, fmt.Errorf("negative MaxHandshakes %d, MaxPeers %d or SendQueueBytes %d: %w", o.MaxHandshakes, o.MaxPeers, o.SendQueueBytes, gen.ErrIncorrect)
	case o.KeepAlivePeriod < 0 || o.KeepAliveTimeout <= o.KeepAlivePeriod:
		return o, fmt.Errorf("KeepAliveTimeout %v must exceed KeepAlivePeriod %v: %w", o.KeepAliveTimeout, o.KeepAlivePeriod, gen.ErrIncorrect)
	case o.MaxFrameSize < 64:
		return o, fmt.Errorf("MaxFrameSize %d is below 64 bytes: %w", o.MaxFrameSize, gen.ErrIncorrect)
	case o.HandshakeTimeout < 0 || o.ReconnectBackoffMin < 0 || o.ReconnectBackoffMax < o.ReconnectBackoffMin:
		return o, fmt.Errorf("negative timeout or backoff max below min: %w", gen.ErrIncorrect)
	}
	return o, nil
}

func newNetwork(n *node, options gen.NetworkOptions) (*network, error) {
	nw := &network{
		node:       n,
		disabled:   options.Mode == gen.NetworkModeDisabled,
		registry:   registry{reg: codec.NewRegistry()},
		routes:     make(map[gen.Atom]string),
		dialing:    make(map[gen.Atom]*dialAttempt),
		backoff:    make(map[gen.Atom]backoffState),
		pending:    make(map[net.Conn]struct{}),
		logs:       newLimitedLog(n.log),
		dropped:    make(map[string]uint64),
		rejectedBy: make(map[string]uint64),
	}
	nw.conns.Store(&map[gen.Atom]*connection{})
	nw.ctx, nw.cancel = context.WithCancel(context.Background())
	if nw.disabled {
		return nw, nil
	}
	opts, err := withDefaults(options)
	if err != nil {
		nw.cancel()
		return nil, fmt.Errorf("network options: %w", err)
	}
	nw.opts = opts
	nw.hs = handshake.Config{Cookie: opts.Cookie, Self: handshake.Identity{Name: n.name, Creation: n.creation}}
	if opts.Cookie != "" && len(opts.Cookie) < minCookieBytes {
		n.log.Warning("the cookie has %d bytes: one captured handshake lets an attacker guess a cookie this short offline; use %d or more random bytes",
			len(opts.Cookie), minCookieBytes)
	}
	for name, addr := range opts.Routes {
		nw.routes[name] = addr
	}
	if !opts.Acceptor.Disabled {
		if err := nw.listen(); err != nil {
			nw.cancel()
			return nil, err
		}
	}
	return nw, nil
}

// refuseDisabled fails op toward name when the node has no network.
func (nw *network) refuseDisabled(op string, name gen.Atom) error {
	if nw.disabled {
		return fmt.Errorf("%s %s: network disabled: %w", op, name, gen.ErrNoConnection)
	}
	return nil
}

func (nw *network) AddRoute(name gen.Atom, address string) error {
	if nw.disabled {
		return fmt.Errorf("add route to %s: network disabled: %w", name, gen.ErrNotAllowed)
	}
	if _, _, err := net.SplitHostPort(address); err != nil || name == "" {
		return fmt.Errorf("add route %s -> %q: %w", name, address, gen.ErrIncorrect)
	}
	nw.mu.Lock()
	nw.routes[name] = address
	delete(nw.backoff, name)
	nw.mu.Unlock()
	return nil
}

func (nw *network) RemoveRoute(name gen.Atom) error {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if _, ok := nw.routes[name]; !ok {
		return fmt.Errorf("remove route %s: %w", name, gen.ErrNoRoute)
	}
	delete(nw.routes, name)
	return nil
}

func (nw *network) Nodes() []gen.Atom {
	conns := nw.connTable()
	out := make([]gen.Atom, 0, len(conns))
	for name := range conns {
		out = append(out, name)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (nw *network) Disconnect(name gen.Atom) error {
	c := nw.existing(name)
	if c == nil {
		return fmt.Errorf("disconnect %s: %w", name, gen.ErrNoConnection)
	}
	c.teardown(fmt.Errorf("disconnected: %w", gen.ErrNoConnection))
	return nil
}

func (nw *network) AcceptorAddress() string {
	if nw.listener == nil {
		return ""
	}
	return nw.listener.Addr().String()
}

func (nw *network) Stats() gen.NetworkStats {
	nw.mu.Lock()
	conns, accepting := len(nw.connTable()), nw.accepting
	nw.mu.Unlock()
	s := gen.NetworkStats{
		Connections:        conns,
		HandshakesInFlight: accepting,
		FramesIn:           nw.framesIn.Load(),
		FramesOut:          nw.framesOut.Load(),
		BytesIn:            nw.bytesIn.Load(),
		BytesOut:           nw.bytesOut.Load(),
		Writes:             nw.writes.Load(),
		HandshakesRejected: nw.rejected.Load(),
		DownsDeferred:      nw.downsDeferred.Load(),
		Dropped:            make(map[string]uint64),
		Rejected:           make(map[string]uint64),
	}
	nw.countMu.Lock()
	maps.Copy(s.Dropped, nw.dropped)
	maps.Copy(s.Rejected, nw.rejectedBy)
	nw.countMu.Unlock()
	s.NameCollisions = s.Rejected[rejectNameCollision]
	return s
}

func (nw *network) drop(reason string) {
	nw.dropN(reason, 1)
}

func (nw *network) dropN(reason string, n int) {
	if n == 0 {
		return
	}
	nw.countMu.Lock()
	nw.dropped[reason] += uint64(n)
	nw.countMu.Unlock()
}

// existing returns the established connection to name, or nil. It takes
// no lock: every send calls it.
func (nw *network) existing(name gen.Atom) *connection {
	return (*nw.conns.Load())[name]
}

// connTable returns the current table of established connections; the
// caller must not modify it.
func (nw *network) connTable() map[gen.Atom]*connection {
	return *nw.conns.Load()
}

// setConnLocked publishes a copy of the table with name mapped to c, or
// without name when c is nil. Called with nw.mu held.
func (nw *network) setConnLocked(name gen.Atom, c *connection) {
	next := maps.Clone(nw.connTable())
	if c == nil {
		delete(next, name)
	} else {
		next[name] = c
	}
	nw.conns.Store(&next)
}

// routeLocked returns the address to dial for name. Called with nw.mu held.
func (nw *network) routeLocked(name gen.Atom) (string, error) {
	if addr, ok := nw.routes[name]; ok {
		return addr, nil
	}
	if _, _, err := net.SplitHostPort(name.Host()); err == nil {
		return name.Host(), nil
	}
	return "", fmt.Errorf("node %s: %w", name, gen.ErrNoRoute)
}

// queue adds frames (count encoded frames; none for a bare connect) to the
// queue of the dial to name, starting that dial in the background when none
// runs, and reports true. When a connection to name is established it
// queues nothing and reports false: the caller sends on that connection. It
// fails fast without network or route, during the backoff after a failed
// dial, and when the queue is full.
func (nw *network) queue(name gen.Atom, frames []byte, count int) (queued bool, err error) {
	if err := nw.refuseDisabled("connect to", name); err != nil {
		return false, err
	}
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if nw.closed {
		return false, fmt.Errorf("connect to %s: %w: %w", name, gen.ErrNoConnection, gen.ErrNodeTerminated)
	}
	if nw.existing(name) != nil {
		return false, nil
	}
	d := nw.dialing[name]
	if d == nil {
		addr, err := nw.routeLocked(name)
		if err != nil {
			return false, err
		}
		if b, ok := nw.backoff[name]; ok && time.Now().Before(b.next) {
			return false, fmt.Errorf("connect to %s: backing off after a failed dial: %w", name, gen.ErrNoConnection)
		}
		d = &dialAttempt{}
		nw.dialing[name] = d
		nw.wg.Add(1)
		go nw.dialInBackground(name, addr, d)
	}
	if d.count+count > maxQueuedFrames || len(d.frames)+len(frames) > queuedBytesPerFrame*nw.opts.MaxFrameSize {
		return false, fmt.Errorf("send to %s: %d frames of %d bytes already wait for the connection: %w", name, d.count, len(d.frames), gen.ErrNoConnection)
	}
	d.frames = append(d.frames, frames...)
	d.count += count
	return true, nil
}

// dialInBackground runs dial attempt d. On success register hands the
// queued frames to the connection. On failure, unless a connection from
// the peer arrived meanwhile, the frames are dropped, the backoff starts,
// and everything watching the node (pending Calls, monitors, links) is told
// gen.ErrNoConnection as for a lost connection.
func (nw *network) dialInBackground(name gen.Atom, addr string, d *dialAttempt) {
	defer nw.wg.Done()
	err := nw.dial(name, addr, d)
	if err == nil {
		return
	}
	nw.mu.Lock()
	if nw.dialing[name] == d {
		delete(nw.dialing, name)
	}
	if c := nw.existing(name); c != nil {
		nw.handOverLocked(d, c)
		nw.mu.Unlock()
		nw.node.log.Debug("dial to %s failed, but %s connected meanwhile: %v", name, name, err)
		return
	}
	b := nw.backoff[name]
	b.wait = min(max(2*b.wait, nw.opts.ReconnectBackoffMin), nw.opts.ReconnectBackoffMax)
	b.next = time.Now().Add(b.wait)
	b.failures++
	nw.backoff[name] = b
	lost := d.count
	d.frames, d.count = nil, 0
	nw.mu.Unlock()
	nw.dropN(dropDialFailed, lost)
	if b.failures == 1 {
		nw.logs.Warning("dial", "dial to %s failed, %d queued frames dropped; the next dial may start in %v (until one succeeds, failures are logged at debug level): %v",
			name, lost, b.wait, err)
	} else {
		nw.node.log.Debug("dial to %s failed again, %d failures in a row, %d queued frames dropped; the next dial may start in %v: %v",
			name, b.failures, lost, b.wait, err)
	}
	nw.node.rel.nodeUnreachable(name, err)
}

// handOverLocked moves the frames queued on d to c, which writes them before
// anything sent later. Called with nw.mu held.
func (nw *network) handOverLocked(d *dialAttempt, c *connection) {
	if d == nil || d.count == 0 {
		return
	}
	if err := c.enqueue(d.frames, d.count, sendHandover); err != nil {
		nw.dropN(dropDialFailed, d.count)
		nw.logs.Info("handover", "%d frames queued for %s dropped: %v", d.count, c.peer.Name, err)
	}
	d.frames, d.count = nil, 0
}

// track records a socket in its handshake so that close can end it; it
// reports false when the network is already closed.
func (nw *network) track(conn net.Conn) bool {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if nw.closed {
		return false
	}
	nw.pending[conn] = struct{}{}
	return true
}

func (nw *network) untrack(conn net.Conn) {
	nw.mu.Lock()
	delete(nw.pending, conn)
	nw.mu.Unlock()
}

// dial opens, authenticates and registers a connection to name at addr for
// dial attempt d. HandshakeTimeout bounds the whole; closing the network
// ends it at once.
func (nw *network) dial(name gen.Atom, addr string, d *dialAttempt) error {
	deadline := time.Now().Add(nw.opts.HandshakeTimeout)
	dialer := net.Dialer{Deadline: deadline}
	raw, err := dialer.DialContext(nw.ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("dial %s at %s: %w: %w", name, addr, gen.ErrNoConnection, err)
	}
	if !nw.track(raw) {
		raw.Close()
		return fmt.Errorf("dial %s: %w: %w", name, gen.ErrNoConnection, gen.ErrNodeTerminated)
	}
	defer nw.untrack(raw)
	conn := raw
	if nw.opts.TLS != nil {
		cfg := nw.opts.TLS.Clone()
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				raw.Close()
				return fmt.Errorf("dial %s: address %q: %w: %w", name, addr, gen.ErrNoRoute, err)
			}
			cfg.ServerName = host
		}
		conn = tls.Client(raw, cfg)
	}
	if err := conn.SetDeadline(deadline); err != nil {
		conn.Close()
		return fmt.Errorf("dial %s: %w: %w", name, gen.ErrNoConnection, err)
	}
	peer, err := handshake.Dial(conn, nw.handshakeConfig(conn, true), name)
	if err != nil {
		if nw.ctx.Err() != nil { // the network closed the socket: not the peer's fault
			conn.Close()
			return fmt.Errorf("dial %s: %w: %w", name, gen.ErrNoConnection, gen.ErrNodeTerminated)
		}
		nw.handshakeFailed(conn, err)
		return fmt.Errorf("dial %s at %s: %w: %w", name, addr, gen.ErrNoConnection, err)
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		conn.Close()
		return fmt.Errorf("dial %s: %w: %w", name, gen.ErrNoConnection, err)
	}
	return nw.register(newConnection(nw, conn, peer, true), d)
}

// detach removes c from the table if it is the peer's connection there.
func (nw *network) detach(c *connection) bool {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	current := nw.existing(c.peer.Name) == c
	if current {
		nw.setConnLocked(c.peer.Name, nil)
	}
	return current
}

// lost removes c from the table if it is still the peer's connection and
// reports the peer down.
func (nw *network) lost(c *connection, reason error) {
	if nw.detach(c) {
		nw.logs.Info("lost", "connection to %s lost: %v", c.peer.Name, reason)
		nw.node.rel.nodeDown(c.peer.Name)
	}
}

// close shuts the network down. Graceful: connections flush what is queued
// first. It returns when every network goroutine has ended.
func (nw *network) close(graceful bool) {
	nw.mu.Lock()
	nw.closed = true
	nw.cancel()
	conns := make([]*connection, 0, len(nw.connTable()))
	for _, c := range nw.connTable() {
		conns = append(conns, c)
	}
	for conn := range nw.pending {
		conn.Close()
	}
	nw.mu.Unlock()
	if nw.listener != nil {
		nw.listener.Close()
	}
	if !graceful {
		// Cut every socket before the bookkeeping of any: telling this
		// node's watchers of one lost peer takes time in proportion to its
		// processes, and the peers must all see the node end at once, as
		// they would a crash.
		for _, c := range conns {
			c.conn.Close()
		}
	}
	for _, c := range conns {
		if graceful {
			c.shutdown()
		} else {
			c.teardown(fmt.Errorf("node stopped: %w", gen.ErrNoConnection))
		}
	}
	nw.wg.Wait()
}
