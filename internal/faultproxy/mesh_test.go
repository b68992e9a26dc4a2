package faultproxy_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/faultproxy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// quiet is how long a check that nothing arrives waits; a stalled direction
// never delivers, so a longer wait only slows the test.
const quiet = 200 * time.Millisecond

// generous bounds a wait for something that must happen.
const generous = 10 * time.Second

// echoServer stands in for a node's acceptor: it echoes every byte back.
type echoServer struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex // guards conns
	conns []net.Conn
}

func startEcho(t *testing.T) *echoServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &echoServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				_, _ = io.Copy(c, c) // ends when either side closes
			}()
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *echoServer) addr() string { return s.ln.Addr().String() }

func (s *echoServer) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// newMesh registers nodes a, b and c, each with its own echo server.
func newMesh(t *testing.T) (*faultproxy.Mesh, map[gen.Atom]*echoServer) {
	m := faultproxy.New()
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	servers := make(map[gen.Atom]*echoServer)
	for _, n := range []gen.Atom{"a", "b", "c"} {
		servers[n] = startEcho(t)
		require.NoError(t, m.Add(n, servers[n].addr()))
	}
	return m, servers
}

func dial(t *testing.T, m *faultproxy.Mesh, from, to gen.Atom) net.Conn {
	addr := m.Route(from, to)
	require.NotEmpty(t, addr)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes line and reads the echo, failing within generous.
func roundTrip(t *testing.T, c net.Conn, line string) {
	require.NoError(t, c.SetDeadline(time.Now().Add(generous)))
	_, err := fmt.Fprintln(c, line)
	require.NoError(t, err)
	got, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, line+"\n", got)
}

// silent asserts that nothing comes back on c for a while.
func silent(t *testing.T, c net.Conn) {
	require.NoError(t, c.SetReadDeadline(time.Now().Add(quiet)))
	buf := make([]byte, 1)
	_, err := c.Read(buf)
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "expected silence, got %v", err)
}

// closedByPeer asserts that c is closed from the other side.
func closedByPeer(t *testing.T, c net.Conn) {
	require.NoError(t, c.SetReadDeadline(time.Now().Add(generous)))
	buf := make([]byte, 1)
	_, err := c.Read(buf)
	require.Error(t, err)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection stayed open")
}

func TestRoutes(t *testing.T) {
	m, _ := newMesh(t)
	t.Run("every ordered pair of known nodes has its own route", func(t *testing.T) {
		seen := map[string]bool{}
		for _, from := range m.Nodes() {
			for _, to := range m.Nodes() {
				if from == to {
					continue
				}
				r := m.Route(from, to)
				require.NotEmpty(t, r)
				require.False(t, seen[r], "route %s reused", r)
				seen[r] = true
			}
		}
		assert.Len(t, seen, 6)
	})
	t.Run("an unknown node has no route", func(t *testing.T) {
		assert.Empty(t, m.Route("a", "zz"))
	})
	t.Run("bytes pass both ways by default", func(t *testing.T) {
		roundTrip(t, dial(t, m, "a", "b"), "hello")
	})
}

func TestStall(t *testing.T) {
	t.Run("a cut direction holds bytes on an open connection until heal", func(t *testing.T) {
		m, _ := newMesh(t)
		c := dial(t, m, "a", "b")
		roundTrip(t, c, "before")
		m.Cut("a", "b")
		_, err := fmt.Fprintln(c, "held")
		require.NoError(t, err)
		silent(t, c)
		m.Heal()
		require.NoError(t, c.SetReadDeadline(time.Now().Add(generous)))
		got, err := bufio.NewReader(c).ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, "held\n", got)
	})
	t.Run("a cut applies to the direction whichever side dialled", func(t *testing.T) {
		m, _ := newMesh(t)
		c := dial(t, m, "a", "b")
		roundTrip(t, c, "warm")
		m.Cut("b", "a") // the echo, flowing b→a, is held
		_, err := fmt.Fprintln(c, "x")
		require.NoError(t, err)
		silent(t, c)
	})
	t.Run("a partition silences pairs across groups and keeps pairs within one", func(t *testing.T) {
		m, _ := newMesh(t)
		ab, ac := dial(t, m, "a", "b"), dial(t, m, "a", "c")
		m.Partition([]gen.Atom{"a", "b"}, []gen.Atom{"c"})
		roundTrip(t, ab, "same side")
		_, err := fmt.Fprintln(ac, "across")
		require.NoError(t, err)
		silent(t, ac)
	})
	t.Run("an isolated node reaches nobody", func(t *testing.T) {
		m, _ := newMesh(t)
		bc := dial(t, m, "b", "c")
		ab := dial(t, m, "a", "b")
		m.Isolate("a")
		roundTrip(t, bc, "others talk")
		_, err := fmt.Fprintln(ab, "isolated")
		require.NoError(t, err)
		silent(t, ab)
	})
}

func TestReset(t *testing.T) {
	m, _ := newMesh(t)
	c := dial(t, m, "a", "b")
	roundTrip(t, c, "before")
	m.Reset("a", "b")
	t.Run("a reset closes the open connection", func(t *testing.T) {
		closedByPeer(t, c)
	})
	t.Run("a reset refuses new connections", func(t *testing.T) {
		closedByPeer(t, dial(t, m, "b", "a"))
	})
	t.Run("after heal a new connection works", func(t *testing.T) {
		m.Heal()
		roundTrip(t, dial(t, m, "a", "b"), "after")
	})
}

func TestDelayKeepsOrder(t *testing.T) {
	m, _ := newMesh(t)
	c := dial(t, m, "a", "b")
	m.Delay("a", "b", time.Millisecond, 5*time.Millisecond)
	m.Delay("b", "a", 0, 5*time.Millisecond)
	const n = 200
	go func() {
		for i := 0; i < n; i++ {
			if _, err := fmt.Fprintf(c, "%d\n", i); err != nil {
				return
			}
		}
	}()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(generous)))
	r := bufio.NewReader(c)
	for i := 0; i < n; i++ {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("%d\n", i), line, "bytes arrived out of order")
	}
}

func TestSetTargetFollowsARestartedNode(t *testing.T) {
	m, servers := newMesh(t)
	old := dial(t, m, "a", "b")
	roundTrip(t, old, "old life")
	restarted := startEcho(t)
	m.SetTarget("b", restarted.addr())
	t.Run("connections to the old address are closed", func(t *testing.T) {
		closedByPeer(t, old)
	})
	t.Run("new connections reach the new address", func(t *testing.T) {
		servers["b"].close()
		roundTrip(t, dial(t, m, "a", "b"), "new life")
	})
}

func TestCloseEndsEverything(t *testing.T) {
	m := faultproxy.New()
	s := startEcho(t)
	require.NoError(t, m.Add("a", s.addr()))
	require.NoError(t, m.Add("b", s.addr()))
	c := dial(t, m, "a", "b")
	m.Cut("a", "b")
	_, err := fmt.Fprintln(c, "held")
	require.NoError(t, err)
	require.NoError(t, m.Close())
	closedByPeer(t, c)
	assert.ErrorIs(t, m.Add("c", s.addr()), faultproxy.ErrClosed)
}
