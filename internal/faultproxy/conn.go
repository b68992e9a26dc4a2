package faultproxy

import (
	"bufio"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// conn is one forwarded connection: client is the dialler's side, server the
// target's, pair the direction client→server. Its four goroutines (a reader
// and a writer per direction) end when done is closed.
type conn struct {
	m              *Mesh
	pair           flow
	client, server net.Conn
	done           chan struct{}
	once           sync.Once
}

// close tears the connection down, discarding whatever is held in either
// direction.
func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		// Both ends are being abandoned; their close errors say nothing useful.
		_ = c.client.Close()
		_ = c.server.Close()
		c.m.mu.Lock()
		delete(c.m.conns, c)
		c.m.mu.Unlock()
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

// pump forwards src to dst as direction f. fromDialler says whether src is
// the side that dialled, which decides the handshake layout. The caller has
// counted the two goroutines in the mesh's WaitGroup.
func (c *conn) pump(src, dst net.Conn, f flow, fromDialler bool, rng *rand.Rand) {
	units := make(chan unit, queueLen)
	go c.read(src, units, fromDialler)
	go c.write(dst, units, f, rng)
}

func (c *conn) read(src net.Conn, out chan<- unit, fromDialler bool) {
	defer c.m.wg.Done()
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
			// The end travels behind the data, so a cut holds a close too.
			select {
			case out <- unit{at: time.Now(), eof: true}:
			case <-c.done:
			}
			return
		}
	}
}

func (c *conn) write(dst net.Conn, in <-chan unit, f flow, rng *rand.Rand) {
	defer c.m.wg.Done()
	var last time.Time
	for {
		var u unit
		select {
		case u = <-in:
		case <-c.done:
			return
		}
		fault, ok := c.m.await(f, u.at, rng.Float64(), &last, c.done)
		if !ok {
			return
		}
		if u.eof {
			c.close()
			return
		}
		if u.frame && fault.Loss > 0 && rng.Float64() < fault.Loss {
			c.m.dropped.Add(1)
			continue
		}
		if _, err := dst.Write(u.data); err != nil {
			c.close()
			return
		}
	}
}
