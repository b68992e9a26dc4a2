package proxy

import (
	"bufio"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// conn is one forwarded connection: client is the dialler's side, server the
// target's. Its four goroutines (a reader and a writer per direction) end
// when done is closed.
type conn struct {
	s               *Switch
	dialler, target int
	client, server  net.Conn
	done            chan struct{}
	once            sync.Once
}

// close tears the connection down, discarding whatever is held in either direction.
func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		c.client.Close()
		c.server.Close()
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	})
}

// unit is what a direction delivers at once: a handshake message, a frame,
// a raw chunk, or the end of the stream.
type unit struct {
	at    time.Time
	data  []byte
	frame bool
	eof   bool
}

// queueLen bounds the units held per direction; past it the reader stops
// reading and TCP's own flow control pushes back on the sender.
const queueLen = 1024

// pump forwards src to dst as direction from -> to. fromDialler says whether
// src is the side that dialled, which decides the handshake layout.
func (c *conn) pump(src, dst net.Conn, from, to int, fromDialler bool, rng *rand.Rand) {
	units := make(chan unit, queueLen)
	go c.read(src, units, fromDialler)
	go c.write(dst, units, from, to, rng)
}

func (c *conn) read(src net.Conn, out chan<- unit, fromDialler bool) {
	defer c.s.wg.Done()
	r := bufio.NewReaderSize(src, 64<<10)
	p := parser{fromDialler: fromDialler}
	for {
		data, frame, err := p.next(r)
		if len(data) > 0 {
			select {
			case out <- unit{at: time.Now(), data: data, frame: frame}:
			case <-c.done:
				return
			}
		}
		if err != nil {
			select {
			case out <- unit{at: time.Now(), eof: true}:
			case <-c.done:
			}
			return
		}
	}
}

func (c *conn) write(dst net.Conn, in <-chan unit, from, to int, rng *rand.Rand) {
	defer c.s.wg.Done()
	var last time.Time
	for {
		var u unit
		select {
		case u = <-in:
		case <-c.done:
			return
		}
		f, ok := c.s.await(from, to, u.at, rng.Float64(), &last, c.done)
		if !ok {
			return
		}
		if u.eof {
			c.close()
			return
		}
		if u.frame && f.Loss > 0 && rng.Float64() < f.Loss {
			c.s.droppedN.Add(1)
			continue
		}
		if _, err := dst.Write(u.data); err != nil {
			c.close()
			return
		}
	}
}

// The handshake layout of node/internal/handshake: a hello is a fixed part
// (magic, version, challenge, creation, name length) and the name; the
// acceptor follows its hello with a proof; then the dialler sends a status
// byte (and, when it is 0, its proof) and the acceptor a status byte.
const (
	helloFixed   = 6 + 1 + 32 + 8 + 2
	helloNameLen = 6 + 1 + 32 + 8
	proofLen     = 32
	magic        = "REGENT"
	// maxFrame is the largest length the parser believes; a larger one
	// means the stream is not what it expects, and it falls back to raw.
	maxFrame = 64 << 20
	rawChunk = 32 << 10
)

type stage int

const (
	stageHello stage = iota
	stageStatus
	stageFrames
	stageRaw
)

// parser splits one direction of a connection into units.
type parser struct {
	fromDialler bool
	stage       stage
}

// next reads the next unit; frame marks a frame after the handshake. On an
// error it returns whatever bytes it read, to forward them before the end.
func (p *parser) next(r *bufio.Reader) (data []byte, frame bool, err error) {
	switch p.stage {
	case stageHello:
		// Decide from the bytes at hand whether this is Regent's handshake,
		// so a short foreign stream is not held waiting for a full hello.
		if _, err := r.Peek(1); err != nil {
			return nil, false, err
		}
		seen, _ := r.Peek(min(r.Buffered(), len(magic)))
		if string(seen) != magic[:len(seen)] {
			p.stage = stageRaw
			return p.next(r)
		}
		head, err := readN(r, helloFixed)
		if err != nil || string(head[:len(magic)]) != magic {
			// Not Regent's handshake (or cut short): forward the rest raw.
			p.stage = stageRaw
			return head, false, err
		}
		rest := int(binary.BigEndian.Uint16(head[helloNameLen:]))
		if !p.fromDialler {
			rest += proofLen
		}
		tail, err := readN(r, rest)
		p.stage = stageStatus
		return append(head, tail...), false, err
	case stageStatus:
		status, err := readN(r, 1)
		if err != nil || status[0] != 0 {
			p.stage = stageRaw
			return status, false, err
		}
		p.stage = stageFrames
		if p.fromDialler {
			proof, err := readN(r, proofLen)
			return append(status, proof...), false, err
		}
		return status, false, nil
	case stageFrames:
		head, err := readN(r, 4)
		if err != nil {
			return head, false, err
		}
		n := binary.BigEndian.Uint32(head)
		if n > maxFrame {
			p.stage = stageRaw
			return head, false, nil
		}
		body, err := readN(r, int(n))
		return append(head, body...), err == nil, err
	}
	buf := make([]byte, rawChunk)
	n, err := r.Read(buf)
	return buf[:n], false, err
}

// readN reads exactly n bytes, returning those it got before an error.
func readN(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, n)
	got, err := io.ReadFull(r, buf)
	return buf[:got], err
}
