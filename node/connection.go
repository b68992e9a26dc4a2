package node

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node/internal/codec"
	"github.com/regent-go/regent/node/internal/frame"
	"github.com/regent-go/regent/node/internal/handshake"
)

// readBufferSize is the reader's buffer. A writer woken for fewer than
// batchBytes yields once before it writes, so that concurrent sends join
// the batch.
const (
	readBufferSize = 64 << 10
	batchBytes     = 16 << 10
)

// graceTimeout bounds how long a graceful close waits for the peer to close
// its side after ours has flushed.
const graceTimeout = time.Second

// connection is one authenticated connection to a peer node. A send encodes
// its frame into a scratch buffer of its own, then appends the bytes to out
// under mu; the writer goroutine swaps out for an empty buffer and writes
// the whole batch in one call, so many small sends share a syscall and the
// frames of one sender keep their order. out is bounded (see sendMode). The
// reader goroutine decodes frames and hands them to the node.
type connection struct {
	nw      *network
	conn    net.Conn
	peer    handshake.Identity
	dialled bool // this node dialled it

	// mu guards out, outFrames, closed and room. It is held only to append
	// a frame's bytes or to swap out for an empty buffer: never while
	// encoding, writing or waiting. network.mu may be held when taking it, never the
	// other way round.
	mu        sync.Mutex
	out       []byte        // encoded frames, headers included, in queue order
	outFrames int           // how many frames out holds: the writer counts them in FramesOut
	closed    bool          // no frame is queued any more
	room      chan struct{} // made by a sender waiting for room; closed by the writer when it takes out

	wake      chan struct{} // capacity 1: out went from empty to not empty
	done      chan struct{} // closed by shutdown or teardown
	endOnce   sync.Once
	flush     atomic.Bool   // shutdown: the writer flushes before closing
	retired   atomic.Bool   // replaced by another connection to the same peer
	peerGone  atomic.Bool   // the peer sent kindRetire: its end means no loss
	writerEnd chan struct{} // closed when the writer goroutine returns
	lastWrite atomic.Int64  // elapsed() at the last write, for keepalives
	lastRead  atomic.Int64  // elapsed() at the last frame read, for the keepalive timeout
	// smallWrites counts the writes in a row that filled less than a
	// quarter of a buffer larger than keptWriteBuffer (see keptBuffer), and
	// bigWrite says one filled more since the writer's last tick
	// (shrinkIdle); the writer's alone.
	smallWrites int
	bigWrite    bool
	// lastProc is the local process that the last message frame read was
	// delivered to (see recipient); the reader's alone.
	lastProc *process
	// staged holds the messages of consecutive frames to stagedTo not yet
	// delivered (see stage); the reader's alone.
	staged   []gen.MailboxMessage
	stagedTo *process
	// born is when the connection was made, with Go's monotonic reading:
	// keepalives measure time since it, so a step of the wall clock neither
	// tears down a healthy connection nor hides a silent one.
	born time.Time
}

// elapsed is the monotonic time since the connection was made, in ns.
func (c *connection) elapsed() int64 { return int64(time.Since(c.born)) }

func newConnection(nw *network, conn net.Conn, peer handshake.Identity, dialled bool) *connection {
	return &connection{
		born:      time.Now(),
		nw:        nw,
		conn:      conn,
		peer:      peer,
		dialled:   dialled,
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		writerEnd: make(chan struct{}),
	}
}

// sendMode says what queueing a frame does when the connection's queue
// holds SendQueueBytes or more (gen.NetworkOptions).
type sendMode uint8

const (
	// sendWait is a process's own operation (Send, SendExit, Call,
	// SendResponse, Inspect, Link, Monitor): it waits for room while the
	// writer makes progress, so a sender goes at the pace the peer reads;
	// when no write completes for SendQueueWait it fails with an error
	// wrapping gen.ErrTimeout, counted as Dropped["send_queue_full"].
	// Frames already queued keep their order; the refused one is the
	// sender's to retry.
	sendWait sendMode = iota
	// sendControl is a frame the runtime sends on its own: down and exit
	// notices, the reader's answers, unwatch, retire. It never waits (its
	// sender may be this connection's reader) and may take the queue to
	// twice its bound. Past that the peer does not read what it causes us
	// to send, and the connection is closed (Dropped
	// ["send_queue_overflow"]): watchers on both sides then learn
	// gen.ErrNoConnection, so no notice is lost without a trace.
	sendControl
	// sendHandover carries the frames queued while the connection was
	// dialled; the dial queue bounded them already.
	sendHandover
	// sendTry is a TrySend: it never waits; where sendWait would, it fails
	// with an error wrapping gen.ErrWouldBlock, and the frame stays the
	// sender's (not counted as dropped).
	sendTry
)

// scratch is the buffer one send encodes its frame into before taking the
// connection's lock. Sends borrow one from scratchPool and return it once
// the bytes are copied into a queue; nothing else holds it meanwhile.
type scratch struct{ b []byte }

var scratchPool = sync.Pool{New: func() any { return &scratch{b: make([]byte, 0, 512)} }}

// maxScratch is the largest buffer returned to scratchPool; the buffers of
// larger frames are left to the garbage collector.
const maxScratch = 64 << 10

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(s *scratch) {
	if cap(s.b) <= maxScratch {
		s.b = s.b[:0]
		scratchPool.Put(s)
	}
}

// sendControl encodes env and queues it as a sendControl frame. An
// unencodable payload fails here and nothing is queued.
func (c *connection) sendControl(env *envelope) error {
	s := getScratch()
	defer putScratch(s)
	f, err := c.nw.appendFrame(s.b[:0], env)
	s.b = f
	if err != nil {
		return fmt.Errorf("send to %s: %w", c.peer.Name, err)
	}
	return c.enqueue(f, 1, sendControl)
}

// enqueue appends count encoded frames to the queue and wakes the writer
// if the queue was empty. What it does when the queue is full depends on
// mode. It fails with errRetired on a connection replaced by another one to
// the same peer, and with gen.ErrNoConnection on a closed one.
func (c *connection) enqueue(frames []byte, count int, mode sendMode) error {
	var timer *time.Timer
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			stopTimer(timer)
			if c.retired.Load() {
				return errRetired
			}
			return fmt.Errorf("send to %s: %w", c.peer.Name, gen.ErrNoConnection)
		}
		queued, limit := len(c.out), c.nw.opts.SendQueueBytes
		if queued < limit || mode == sendHandover || (mode == sendControl && queued < 2*limit) {
			if queued == 0 && cap(c.out) < len(frames) {
				// A queue starting afresh (the writer let a large buffer
				// go) starts at the size the writer always keeps, so a
				// burst of small frames does not grow it step by step.
				c.out = make([]byte, 0, max(len(frames), keptWriteBuffer))
			}
			c.out = append(c.out, frames...)
			c.outFrames += count
			c.mu.Unlock()
			stopTimer(timer)
			if queued == 0 {
				c.wakeWriter()
			}
			return nil
		}
		if mode == sendControl {
			c.mu.Unlock()
			c.nw.drop(dropQueueOverflow)
			err := fmt.Errorf("send to %s: %d bytes wait for the writer, twice the bound of %d: the peer does not read: %w",
				c.peer.Name, queued, limit, gen.ErrNoConnection)
			c.nw.logs.Warning("overflow", "closing the connection to %s: %v", c.peer.Name, err)
			c.teardown(err)
			return err
		}
		if mode == sendTry {
			c.mu.Unlock()
			return fmt.Errorf("send to %s: %d bytes wait for the writer, the bound is %d: %w", c.peer.Name, queued, limit, gen.ErrWouldBlock)
		}
		room := c.room
		if room == nil {
			room = make(chan struct{})
			c.room = room
		}
		c.mu.Unlock()
		wait := c.nw.opts.SendQueueWait
		if wait <= 0 {
			return c.queueFull(queued, 0)
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		}
		select {
		case <-room: // the writer took the queue: progress, so wait afresh if it is full again
			timer.Reset(wait)
		case <-c.done: // closed: the next round says how
		case <-timer.C:
			return c.queueFull(queued, wait)
		}
	}
}

// queueFull counts and reports a sendWait frame refused because the queue
// stayed full, and no write completed, for wait.
func (c *connection) queueFull(queued int, wait time.Duration) error {
	c.nw.drop(dropQueueFull)
	return fmt.Errorf("send to %s: the send queue held %d bytes, its bound, and no write completed for %v: %w",
		c.peer.Name, queued, wait, gen.ErrTimeout)
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

func (c *connection) wakeWriter() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// appendFrame appends env as one frame (header and payload) to dst. An
// unencodable or oversized envelope leaves dst unchanged in length and
// returns an error wrapping gen.ErrUnregistered or gen.ErrTooLarge.
func (nw *network) appendFrame(dst []byte, env *envelope) ([]byte, error) {
	start := len(dst)
	out, err := appendEnvelope(append(dst, 0, 0, 0, 0), env, nw.reg)
	if err != nil {
		return dst[:start], err
	}
	size := len(out) - start - frame.HeaderSize
	if size > nw.opts.MaxFrameSize {
		return out[:start], fmt.Errorf("frame of %d bytes exceeds %d: %w", size, nw.opts.MaxFrameSize, gen.ErrTooLarge)
	}
	binary.BigEndian.PutUint32(out[start:], uint32(size)) // the frame header
	return out, nil
}

// writeLoop is the connection's writer: on each wake-up it writes whatever
// is queued in one call. It also sends keepalives on an idle connection and
// closes one whose peer stayed silent past KeepAliveTimeout.
func (c *connection) writeLoop() {
	defer c.nw.wg.Done()
	defer close(c.writerEnd)
	period, timeout := c.nw.opts.KeepAlivePeriod, c.nw.opts.KeepAliveTimeout
	ticker := time.NewTicker(min(period, timeout/4) / 2)
	defer ticker.Stop()
	keepalive, err := c.nw.appendFrame(nil, &envelope{kind: kindKeepalive})
	if err != nil {
		panic(fmt.Sprintf("node: encoding a keepalive: %v", err)) // it has no payload: cannot fail
	}
	var spare []byte
	c.lastWrite.Store(c.elapsed())
	c.lastRead.Store(c.elapsed())
	for {
		select {
		case <-c.wake:
			if c.pendingBytes() < batchBytes {
				runtime.Gosched() // let concurrent senders add to this write
			}
		case <-ticker.C:
			now := c.elapsed()
			if silent := now - c.lastRead.Load(); silent > int64(timeout) {
				c.nw.drop(dropKeepalive)
				c.teardown(fmt.Errorf("no frame from %s for %v: %w", c.peer.Name, time.Duration(silent), gen.ErrNoConnection))
				return
			}
			spare = c.shrinkIdle(spare)
			if now-c.lastWrite.Load() < int64(period) || !c.queueIfIdle(keepalive) {
				continue
			}
		case <-c.done:
			if c.flush.Load() {
				err := c.conn.SetWriteDeadline(time.Now().Add(graceTimeout))
				if err == nil {
					err = c.writeOut(&spare)
				}
				if err != nil {
					// The socket closes either way; what was queued is lost.
					c.nw.drop(dropRetireFlush)
					c.nw.logs.Warning("flush", "flushing the connection to %s before closing it: %v", c.peer.Name, err)
				}
				c.closeWrite()
			}
			return
		}
		if err := c.writeOut(&spare); err != nil {
			c.teardown(err)
			return
		}
	}
}

// queueIfIdle queues frame, a keepalive, when nothing else is queued, and
// reports whether it did. The writer calls it, so it never waits for room.
func (c *connection) queueIfIdle(frame []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || len(c.out) > 0 {
		return false
	}
	c.out = append(c.out, frame...)
	c.outFrames++
	return true
}

func (c *connection) pendingBytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.out)
}

// writeOut writes everything queued in one call and releases the senders
// waiting for room; spare is the buffer swapped in, reused next time.
func (c *connection) writeOut(spare *[]byte) error {
	c.mu.Lock()
	buf, frames := c.out, c.outFrames
	c.out, c.outFrames = (*spare)[:0], 0
	if c.room != nil {
		close(c.room)
		c.room = nil
	}
	c.mu.Unlock()
	if len(buf) == 0 {
		*spare = c.keptBuffer(buf)
		return nil
	}
	c.nw.framesOut.Add(uint64(frames)) // before the peer can have them
	_, err := c.conn.Write(buf)
	c.nw.writes.Add(1)
	c.nw.bytesOut.Add(uint64(len(buf)))
	c.lastWrite.Store(c.elapsed())
	*spare = c.keptBuffer(buf)
	if err != nil {
		return fmt.Errorf("write to %s: %w", c.peer.Name, err)
	}
	return nil
}

// keptWriteBuffer is the capacity of a written buffer the writer always
// keeps for reuse. A larger one is let go once shrinkAfter writes in a row
// have filled less than a quarter of it, so the buffers a burst grew go
// back to the garbage collector once traffic is light again instead of
// staying with the connection for good, while a steady stream whose
// batches vary in size keeps its buffers instead of growing new ones
// again and again.
const (
	keptWriteBuffer = batchBytes / 2
	shrinkAfter     = 16
)

// keptBuffer returns buf, just written, when the writer should reuse it,
// and nil when it should let it go.
func (c *connection) keptBuffer(buf []byte) []byte {
	n := cap(buf)
	if n > 2*c.nw.opts.SendQueueBytes {
		return nil
	}
	if n <= keptWriteBuffer || len(buf) >= n/4 {
		c.smallWrites = 0
		c.bigWrite = c.bigWrite || n > keptWriteBuffer
		return buf
	}
	c.smallWrites++
	if c.smallWrites < shrinkAfter {
		return buf
	}
	c.smallWrites = 0
	return nil
}

// shrinkIdle lets the buffers larger than keptWriteBuffer go, the spare one
// (which it returns) and the queue's while it is empty, when no write since
// the writer's last tick filled a quarter of one: a burst's buffers go back
// to the garbage collector within a tick or two once traffic is light, not
// shrinkAfter writes later, which at a heartbeat's pace can be many
// seconds, while a stream that fills them keeps them.
func (c *connection) shrinkIdle(spare []byte) []byte {
	big := c.bigWrite
	c.bigWrite = false
	if big {
		return spare
	}
	if cap(spare) > keptWriteBuffer {
		spare = nil
	}
	c.mu.Lock()
	if len(c.out) == 0 && cap(c.out) > keptWriteBuffer {
		c.out = nil
	}
	c.mu.Unlock()
	return spare
}

// closeWrite ends our direction of a gracefully closing connection; the
// reader then waits briefly for the peer to close its side.
func (c *connection) closeWrite() {
	type halfCloser interface{ CloseWrite() error }
	if hc, ok := c.conn.(halfCloser); ok && hc.CloseWrite() == nil {
		if err := c.conn.SetReadDeadline(time.Now().Add(graceTimeout)); err == nil {
			return
		}
	}
	c.conn.Close()
}

// stampEvery bounds how many frames the reader handles before it records
// the time in lastRead, when they arrive faster than it reads them.
const stampEvery = 256

// readLoop decodes frames until the connection ends. The keepalive timeout
// is enforced by the writer's ticker, which watches lastRead, so reading
// needs no per-frame deadline. lastRead is stamped once per batch of frames
// that one read brought (before the reader reads the stream again), not
// once per frame.
func (c *connection) readLoop() {
	defer c.nw.wg.Done()
	r := frame.NewReader(bufio.NewReaderSize(c.conn, readBufferSize), c.nw.opts.MaxFrameSize)
	fd := newFrameDecoder(c.nw.reg, c.nw.node.name, c.peer.Name)
	var env envelope // reused: nothing keeps it past receive, only its values
	// Frames and bytes read since lastRead was stamped: they are added to
	// the network's counters with the stamp, so the counters, which every
	// connection and sender of the node writes, are touched once per batch.
	unstamped, unstampedBytes := 0, 0
	for {
		if unstamped > 0 && (unstamped >= stampEvery || r.Buffered() == 0) {
			c.lastRead.Store(c.elapsed())
			c.nw.framesIn.Add(uint64(unstamped))
			c.nw.bytesIn.Add(uint64(unstampedBytes))
			unstamped, unstampedBytes = 0, 0
		}
		if !r.Ready() {
			c.deliverStaged() // Next may wait for bytes
		}
		payload, err := r.Next()
		if err != nil {
			c.deliverStaged()
			c.nw.framesIn.Add(uint64(unstamped))
			c.nw.bytesIn.Add(uint64(unstampedBytes))
			c.readFailed(err)
			return
		}
		unstamped++
		unstampedBytes += len(payload) + frame.HeaderSize
		err = fd.decode(payload, &env)
		if err != nil {
			c.deliverStaged()
		}
		switch {
		case err == nil:
		case errors.Is(err, codec.ErrUnknownType):
			c.nw.drop(dropUnknownType)
			c.nw.logs.Warning("frame", "dropped a frame from %s: %v", c.peer.Name, err)
			c.nw.node.refuseUnknown(c, &env, err)
			continue
		default:
			c.nw.drop(dropMalformed)
			err = fmt.Errorf("malformed frame from %s: %w", c.peer.Name, err)
			c.nw.logs.Warning("frame", "closing the connection to %s: %v", c.peer.Name, err)
			c.teardown(err)
			return
		}
		switch env.kind {
		case kindKeepalive:
		case kindRetire:
			c.peerGone.Store(true)
		default:
			c.nw.node.receive(c, &env)
		}
	}
}

// readFailed classifies why reading stopped, counts it and closes. A
// connection closing gracefully (ours or the peer's retirement) lets the
// writer finish before the socket closes, so nothing queued is lost.
func (c *connection) readFailed(err error) {
	graceful := c.flush.Load()
	switch {
	case graceful:
	case errors.Is(err, io.EOF) && c.peerGone.Load():
		c.retired.Store(true)
		c.nw.detach(c) // the replacement serves the peer: no down
		c.shutdown()
		graceful = true
	case c.isDone():
	case errors.Is(err, gen.ErrTooLarge):
		c.nw.drop(dropTooLarge)
		c.nw.logs.Warning("frame", "closing the connection to %s: %v", c.peer.Name, err)
	case errors.Is(err, gen.ErrMalformed):
		c.nw.drop(dropMalformed)
		c.nw.logs.Warning("frame", "closing the connection to %s: %v", c.peer.Name, err)
	case errors.Is(err, io.EOF):
		err = fmt.Errorf("closed by peer: %w", err)
	}
	err = fmt.Errorf("read from %s: %w", c.peer.Name, err)
	if !graceful {
		c.teardown(err)
		return
	}
	<-c.writerEnd
	c.conn.Close()
	c.nw.lost(c, err)
}

func (c *connection) isDone() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// errRetired is what send returns on a connection replaced by another one to
// the same peer; the caller sends on the replacement.
var errRetired = errors.New("connection retired")

// retire closes a connection that lost to another one to the same peer.
// The peer is told, so that when this connection ends it does not report
// this node down; it still reads everything the peer wrote before its end.
func (c *connection) retire() {
	c.retired.Store(true)
	if err := c.sendControl(&envelope{kind: kindRetire}); err != nil {
		c.nw.node.log.Debug("retiring the connection to %s: %v", c.peer.Name, err)
	}
	c.shutdown()
}

// shutdown closes gracefully: queued frames are written first. The peer is
// not reported down here; whoever removed the connection from the table
// already knows.
func (c *connection) shutdown() {
	c.end(true, nil)
}

// teardown closes at once and reports the peer down if this was its
// connection.
func (c *connection) teardown(reason error) {
	c.end(false, reason)
}

func (c *connection) end(graceful bool, reason error) {
	c.endOnce.Do(func() {
		c.flush.Store(graceful)
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		close(c.done) // wakes the writer, and the senders waiting for room

	})
	if graceful {
		return
	}
	c.conn.Close()
	c.nw.lost(c, reason)
}
