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

// readBufferSize is the reader's buffer; writeout batches of up to
// batchBytes make the writer yield once so that more sends join them.
const (
	readBufferSize  = 64 << 10
	batchBytes      = 16 << 10
	maxPendingBytes = 256 << 10
)

// graceTimeout bounds how long a graceful close waits for the peer to close
// its side after ours has flushed.
const graceTimeout = time.Second

// connection is one authenticated connection to a peer node. Senders append
// encoded frames to buf; the writer goroutine swaps buf out and writes it
// in one call, so many small sends share a syscall, and sends from one
// goroutine keep their order. The reader goroutine decodes frames and hands
// them to the node.
type connection struct {
	nw      *network
	conn    net.Conn
	peer    handshake.Identity
	dialled bool // this node dialled it

	mu        sync.Mutex // guards buf and closed
	drained   sync.Cond  // on mu: the writer took buf; senders waiting for room go on
	buf       []byte
	closed    bool
	wake      chan struct{} // capacity 1: buf has data
	done      chan struct{} // closed by shutdown or teardown
	endOnce   sync.Once
	flush     atomic.Bool   // shutdown: the writer flushes before closing
	retired   atomic.Bool   // replaced by another connection to the same peer
	peerGone  atomic.Bool   // the peer sent kindRetire: its end means no loss
	writerEnd chan struct{} // closed when the writer goroutine returns
	lastWrite atomic.Int64  // UnixNano of the last write, for keepalives
	lastRead  atomic.Int64  // UnixNano of the last frame read, for the keepalive timeout
}

func newConnection(nw *network, conn net.Conn, peer handshake.Identity, dialled bool) *connection {
	c := &connection{
		nw:        nw,
		conn:      conn,
		peer:      peer,
		dialled:   dialled,
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		writerEnd: make(chan struct{}),
	}
	c.drained.L = &c.mu
	return c
}

// send encodes env and queues it. An unencodable payload (for example an
// unregistered type) fails here and nothing is queued.
//
// When more than maxPendingBytes wait for the writer, send blocks until it
// catches up: a peer that reads slower than we send slows the senders down
// instead of growing memory without bound.
func (c *connection) send(env *envelope) error {
	c.mu.Lock()
	for len(c.buf) >= maxPendingBytes && !c.closed {
		c.drained.Wait()
	}
	if c.closed {
		c.mu.Unlock()
		if c.retired.Load() {
			return errRetired
		}
		return fmt.Errorf("send to %s: %w", c.peer.Name, gen.ErrNoConnection)
	}
	out, err := c.nw.appendFrame(c.buf, env)
	if err != nil {
		c.mu.Unlock()
		return fmt.Errorf("send to %s: %w", c.peer.Name, err)
	}
	c.buf = out
	c.mu.Unlock()
	c.nw.framesOut.Add(1)
	c.wakeWriter()
	return nil
}

// appendFrames queues count frames encoded earlier, without waiting for
// room: they were sent while the connection was being dialled.
func (c *connection) appendFrames(frames []byte, count int) error {
	if count == 0 {
		return nil
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("hand %d queued frames to %s: %w", count, c.peer.Name, gen.ErrNoConnection)
	}
	c.buf = append(c.buf, frames...)
	c.mu.Unlock()
	c.nw.framesOut.Add(uint64(count))
	c.wakeWriter()
	return nil
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

func (c *connection) writeLoop() {
	defer c.nw.wg.Done()
	defer close(c.writerEnd)
	period, timeout := c.nw.opts.KeepAlivePeriod, c.nw.opts.KeepAliveTimeout
	ticker := time.NewTicker(min(period, timeout/4) / 2)
	defer ticker.Stop()
	var spare []byte
	c.lastWrite.Store(time.Now().UnixNano())
	c.lastRead.Store(time.Now().UnixNano())
	for {
		select {
		case <-c.wake:
			if c.pendingBytes() < batchBytes {
				runtime.Gosched() // let concurrent senders add to this write
			}
		case now := <-ticker.C:
			if silent := now.UnixNano() - c.lastRead.Load(); silent > int64(timeout) {
				c.nw.drop(dropKeepalive)
				c.teardown(fmt.Errorf("no frame from %s for %v: %w", c.peer.Name, time.Duration(silent), gen.ErrNoConnection))
				return
			}
			if now.UnixNano()-c.lastWrite.Load() >= int64(period) {
				if err := c.send(&envelope{kind: kindKeepalive}); err != nil {
					return
				}
			}
			continue
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

func (c *connection) pendingBytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.buf)
}

// writeOut writes everything queued; spare is the buffer reused next time.
func (c *connection) writeOut(spare *[]byte) error {
	c.mu.Lock()
	buf := c.buf
	c.buf = (*spare)[:0]
	c.drained.Broadcast()
	c.mu.Unlock()
	if len(buf) == 0 {
		*spare = buf
		return nil
	}
	_, err := c.conn.Write(buf)
	c.nw.bytesOut.Add(uint64(len(buf)))
	c.lastWrite.Store(time.Now().UnixNano())
	if cap(buf) <= 2*maxPendingBytes {
		*spare = buf
	}
	if err != nil {
		return fmt.Errorf("write to %s: %w", c.peer.Name, err)
	}
	return nil
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

// readLoop decodes frames until the connection ends. The keepalive timeout
// is enforced by the writer's ticker, which watches lastRead, so reading
// needs no per-frame deadline.
func (c *connection) readLoop() {
	defer c.nw.wg.Done()
	r := frame.NewReader(bufio.NewReaderSize(c.conn, readBufferSize), c.nw.opts.MaxFrameSize)
	for {
		payload, err := r.Next()
		if err != nil {
			c.readFailed(err)
			return
		}
		c.lastRead.Store(time.Now().UnixNano())
		c.nw.framesIn.Add(1)
		c.nw.bytesIn.Add(uint64(len(payload) + frame.HeaderSize))
		env, err := decodeEnvelope(payload, c.nw.reg)
		switch {
		case err == nil:
		case errors.Is(err, codec.ErrUnknownType):
			c.nw.drop(dropUnknownType)
			c.nw.logs.Warning("frame", "dropped a frame from %s: %v", c.peer.Name, err)
			c.nw.node.refuseUnknown(c, env, err)
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
			c.nw.node.receive(c, env)
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
	if err := c.send(&envelope{kind: kindRetire}); err != nil {
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
		c.drained.Broadcast()
		c.mu.Unlock()
		close(c.done)
	})
	if graceful {
		return
	}
	c.conn.Close()
	c.nw.lost(c, reason)
}
