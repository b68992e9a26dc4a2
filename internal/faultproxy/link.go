package faultproxy

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// dialTimeout bounds the proxy's own dial to a node's acceptor.
const dialTimeout = 5 * time.Second

// chunkSize is the largest read forwarded as one piece.
const chunkSize = 32 << 10

// queueLen is how many chunks a direction holds before back-pressure reaches
// the sender.
const queueLen = 64

// link is the listener through which pair.src dials pair.dst, and the
// connections it carries.
type link struct {
	mesh *Mesh
	pair flow
	ln   net.Listener

	mu    sync.Mutex // guards conns
	conns map[*proxied]struct{}
}

// proxied is one accepted connection and its dial to the target.
type proxied struct {
	client, server net.Conn
	closed         chan struct{}
	once           sync.Once
}

func (p *proxied) close() {
	p.once.Do(func() {
		close(p.closed)
		// Both ends are being abandoned; their close errors say nothing useful.
		_ = p.client.Close()
		_ = p.server.Close()
	})
}

func (l *link) closeListener() error {
	if err := l.ln.Close(); err != nil {
		return fmt.Errorf("faultproxy: closing listener %s→%s: %w", l.pair.src, l.pair.dst, err)
	}
	return nil
}

func (l *link) closeConns() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := range l.conns {
		p.close()
	}
}

// accept runs until the listener closes, handing each connection to serve.
func (l *link) accept() {
	defer l.mesh.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return // the listener was closed by Close
		}
		l.mesh.wg.Add(1)
		go l.serve(c)
	}
}

// serve dials the target for client and pumps bytes both ways until either
// side ends or a reset closes them.
func (l *link) serve(client net.Conn) {
	defer l.mesh.wg.Done()
	addr, ok := l.mesh.target(l.pair.dst)
	if !ok || l.mesh.refused(l.pair.src, l.pair.dst) {
		_ = client.Close() // refusing: the dialler sees the connection drop
		return
	}
	server, err := net.DialTimeout("tcp", addr, dialTimeout)
	if err != nil {
		_ = client.Close() // the target is down: the dialler sees the same
		return
	}
	p := &proxied{client: client, server: server, closed: make(chan struct{})}
	if !l.track(p) {
		p.close()
		return
	}
	defer l.untrack(p)
	var pumps sync.WaitGroup
	pumps.Add(2)
	go func() { defer pumps.Done(); l.pump(p, client, server, l.pair) }()
	go func() { defer pumps.Done(); l.pump(p, server, client, flow{l.pair.dst, l.pair.src}) }()
	pumps.Wait()
}

// track records p unless the mesh is closing.
func (l *link) track(p *proxied) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.mesh.done:
		return false
	default:
	}
	l.conns[p] = struct{}{}
	return true
}

func (l *link) untrack(p *proxied) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.conns, p)
}

// chunk is a piece of the byte stream and the earliest time to write it.
type chunk struct {
	data []byte
	at   time.Time
}

// pump moves bytes from in to out under the fault of direction f: a reader
// stamps each chunk with its release time, a writer releases them in order.
// Either side ending closes the whole connection.
func (l *link) pump(p *proxied, in, out net.Conn, f flow) {
	queue := make(chan chunk, queueLen)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, chunkSize)
			n, err := in.Read(buf)
			if n > 0 {
				c := chunk{data: buf[:n]}
				if fault, _ := l.mesh.current(f); fault.Mode == Delay {
					c.at = time.Now().Add(fault.Delay + jitter(fault.Jitter))
				}
				select {
				case queue <- c:
				case <-p.closed:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		p.close()
		for range queue { // let the reader finish
		}
	}()
	for c := range queue {
		if !l.waitRelease(p, f, c.at) {
			return
		}
		if _, err := out.Write(c.data); err != nil {
			return
		}
	}
}

// waitRelease waits until at has passed and direction f is not stalled; it
// reports false when the connection must end instead.
func (l *link) waitRelease(p *proxied, f flow, at time.Time) bool {
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-p.closed:
			return false
		}
	}
	for {
		fault, changed := l.mesh.current(f)
		switch fault.Mode {
		case Reset:
			return false
		case Stall:
			select {
			case <-changed:
			case <-p.closed:
				return false
			}
		default:
			return true
		}
	}
}
