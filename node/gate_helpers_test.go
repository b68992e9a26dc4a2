package node_test

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// gate is a TCP listener standing in for a node: it accepts connections and
// holds them unanswered (as a host that drops packets after the SYN would)
// until open relays them to a real node or shut closes them. It closes
// everything when the test ends.
type gate struct {
	ln net.Listener
	wg sync.WaitGroup // the accept loop and every relay goroutine

	mu     sync.Mutex // guards held, conns and target
	held   []net.Conn // accepted, waiting for open or shut
	conns  []net.Conn // every socket the gate opened or accepted, for close
	target string     // where open relays to; empty while holding
}

func newGate(t *testing.T) *gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := &gate{ln: ln}
	g.wg.Add(1)
	go g.acceptLoop()
	t.Cleanup(g.close)
	return g
}

func (g *gate) addr() string { return g.ln.Addr().String() }

func (g *gate) acceptLoop() {
	defer g.wg.Done()
	for {
		conn, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.mu.Lock()
		g.conns = append(g.conns, conn)
		if g.target == "" {
			g.held = append(g.held, conn)
		} else {
			g.relayLocked(conn)
		}
		g.mu.Unlock()
	}
}

// holding returns how many connections the gate holds unanswered.
func (g *gate) holding() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.held)
}

// open relays the held connections, and later ones, to target.
func (g *gate) open(t *testing.T, target string) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.target = target
	for _, conn := range g.held {
		g.relayLocked(conn)
	}
	g.held = nil
}

// shut closes the held connections: their dialers see the handshake fail.
func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, conn := range g.held {
		conn.Close()
	}
	g.held = nil
}

// relayLocked pipes conn to the target both ways until either side closes.
func (g *gate) relayLocked(conn net.Conn) {
	out, err := net.Dial("tcp", g.target)
	if err != nil {
		conn.Close()
		return
	}
	g.conns = append(g.conns, out)
	// Each direction ends with a half close, so a graceful close passes
	// through; close ends whatever is left.
	pipe := func(dst, src net.Conn) {
		defer g.wg.Done()
		if _, err := io.Copy(dst, src); err != nil {
			dst.Close()
			return
		}
		if err := dst.(*net.TCPConn).CloseWrite(); err != nil {
			dst.Close()
		}
	}
	g.wg.Add(2)
	go pipe(out, conn)
	go pipe(conn, out)
}

func (g *gate) close() {
	g.ln.Close()
	g.mu.Lock()
	for _, conn := range g.conns {
		conn.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
}
