package faultproxy

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/regent-go/regent/gen"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	// settle bounds a wait for something that must happen.
	settle = 10 * time.Second
	poll   = 10 * time.Millisecond
	// quiet is how long a check that nothing arrives looks; a held direction
	// never delivers, so a longer look only slows the test.
	quiet = 200 * time.Millisecond
)

// rig is a mesh whose nodes' "acceptors" are plain listeners the test
// accepts from, so it holds both ends of every connection.
type rig struct {
	t         *testing.T
	mesh      *Mesh
	acceptors map[gen.Atom]net.Listener
}

// newRig registers nodes a, b and c.
func newRig(t *testing.T, opts Options) *rig {
	r := &rig{t: t, mesh: New(opts), acceptors: map[gen.Atom]net.Listener{}}
	t.Cleanup(func() { require.NoError(t, r.mesh.Close()) })
	for _, n := range []gen.Atom{"a", "b", "c"} {
		r.acceptors[n] = listen(t)
		require.NoError(t, r.mesh.Add(n, r.acceptors[n].Addr().String()))
	}
	return r
}

func listen(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// dial connects from to to through the mesh and returns both ends, once the
// mesh forwards the connection.
func (r *rig) dial(from, to gen.Atom) (dialler, acceptor net.Conn) {
	before := r.mesh.Stats().Accepted
	dialler = r.connect(from, to)
	ln := r.acceptors[to].(*net.TCPListener)
	require.NoError(r.t, ln.SetDeadline(time.Now().Add(settle)))
	acceptor, err := ln.Accept()
	require.NoError(r.t, err, "the mesh dials the target")
	r.t.Cleanup(func() { _ = acceptor.Close() })
	require.Eventually(r.t, func() bool { return r.mesh.Stats().Accepted > before }, settle, poll, "the mesh forwards the connection")
	return dialler, acceptor
}

// connect dials from's route to to, without waiting for the far end.
func (r *rig) connect(from, to gen.Atom) net.Conn {
	addr := r.mesh.Route(from, to)
	require.NotEmpty(r.t, addr)
	c, err := net.Dial("tcp", addr)
	require.NoError(r.t, err)
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}

func send(t *testing.T, c net.Conn, data string) {
	t.Helper()
	_, err := c.Write([]byte(data))
	require.NoError(t, err)
}

// recv reads n bytes or fails the test.
func recv(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(settle)))
	buf := make([]byte, n)
	_, err := io.ReadFull(c, buf)
	require.NoError(t, err)
	return buf
}

// silent reports whether nothing arrives on c within a short look.
func silent(t *testing.T, c net.Conn) bool {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(quiet)))
	var b [1]byte
	_, err := c.Read(b[:])
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// closedByPeer asserts that c is closed from the other side.
func closedByPeer(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(settle)))
	_, err := c.Read(make([]byte, 1))
	require.Error(t, err)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection stayed open")
}

func TestRoutes(t *testing.T) {
	r := newRig(t, Options{})
	t.Run("every ordered pair of known nodes has its own route", func(t *testing.T) {
		seen := map[string]bool{}
		for _, from := range r.mesh.Nodes() {
			for _, to := range r.mesh.Nodes() {
				if from == to {
					continue
				}
				addr := r.mesh.Route(from, to)
				require.NotEmpty(t, addr)
				require.False(t, seen[addr], "route %s reused", addr)
				seen[addr] = true
			}
		}
		assert.Len(t, seen, 6)
	})
	t.Run("an unknown node has no route and cannot be retargeted", func(t *testing.T) {
		assert.Empty(t, r.mesh.Route("a", "zz"))
		assert.ErrorIs(t, r.mesh.SetTarget("zz", "127.0.0.1:1"), gen.ErrIncorrect)
	})
	t.Run("bytes cross in both directions unchanged", func(t *testing.T) {
		d, a := r.dial("a", "b")
		send(t, d, "ping")
		assert.Equal(t, "ping", string(recv(t, a, 4)))
		send(t, a, "pong")
		assert.Equal(t, "pong", string(recv(t, d, 4)))
	})
	t.Run("a dial to a node with no acceptor yet is closed at once", func(t *testing.T) {
		require.NoError(t, r.mesh.Add("late", ""))
		before := r.mesh.Stats().Refused
		closedByPeer(t, r.connect("a", "late"))
		assert.Equal(t, before+1, r.mesh.Stats().Refused)
	})
}

func TestStall(t *testing.T) {
	t.Run("a cut direction holds bytes and a heal delivers them in order", func(t *testing.T) {
		r := newRig(t, Options{})
		d, a := r.dial("a", "b")
		r.mesh.Cut("a", "b")
		for _, s := range []string{"x", "y", "z"} {
			send(t, d, s)
		}
		assert.True(t, silent(t, a), "nothing crosses a cut direction")
		r.mesh.Heal()
		assert.Equal(t, "xyz", string(recv(t, a, 3)))
	})
	t.Run("a one-way cut leaves the other direction open", func(t *testing.T) {
		r := newRig(t, Options{})
		d, a := r.dial("a", "b")
		r.mesh.Cut("a", "b")
		send(t, a, "up")
		assert.Equal(t, "up", string(recv(t, d, 2)), "bytes from b to a still cross")
		send(t, d, "x")
		assert.True(t, silent(t, a))
	})
	t.Run("a cut applies to the direction whichever side dialled", func(t *testing.T) {
		r := newRig(t, Options{})
		d, a := r.dial("a", "b")
		r.mesh.Cut("b", "a")
		send(t, a, "held")
		assert.True(t, silent(t, d), "bytes from the acceptor b to the dialler a are held")
		send(t, d, "open")
		assert.Equal(t, "open", string(recv(t, a, 4)))
	})
	t.Run("a close behind a cut is held until the heal", func(t *testing.T) {
		r := newRig(t, Options{})
		d, a := r.dial("a", "b")
		r.mesh.Isolate("a")
		send(t, d, "last words")
		require.NoError(t, d.Close())
		assert.True(t, silent(t, a), "the peer does not see the close across a partition")
		r.mesh.Heal()
		assert.Equal(t, "last words", string(recv(t, a, 10)))
		_, err := a.Read(make([]byte, 1))
		require.ErrorIs(t, err, io.EOF)
		require.Eventually(t, func() bool { return r.mesh.Stats().Open == 0 }, settle, poll)
	})
	t.Run("a partition silences pairs across groups and keeps pairs within one", func(t *testing.T) {
		r := newRig(t, Options{})
		abD, abA := r.dial("a", "b")
		acD, acA := r.dial("a", "c")
		r.mesh.Partition([]gen.Atom{"a", "b"})
		send(t, abD, "same side")
		assert.Equal(t, "same side", string(recv(t, abA, 9)))
		send(t, acD, "across")
		assert.True(t, silent(t, acA), "c, in no group, is alone")
		assert.Equal(t, Stall, r.mesh.Fault("c", "a").Cut)
		assert.Equal(t, Open, r.mesh.Fault("b", "a").Cut)
	})
	t.Run("an isolated node reaches nobody while the others talk", func(t *testing.T) {
		r := newRig(t, Options{})
		bcD, bcA := r.dial("b", "c")
		abD, abA := r.dial("a", "b")
		r.mesh.Isolate("a")
		send(t, bcD, "others")
		assert.Equal(t, "others", string(recv(t, bcA, 6)))
		send(t, abD, "isolated")
		assert.True(t, silent(t, abA))
	})
}

func TestNewConnectionsAcrossAStall(t *testing.T) {
	t.Run("a stall refuses new connections at once", func(t *testing.T) {
		r := newRig(t, Options{})
		r.mesh.Cut("b", "a") // either direction: a connection needs both to handshake
		closedByPeer(t, r.connect("a", "b"))
		assert.Equal(t, uint64(1), r.mesh.Stats().Refused)
	})
	t.Run("with HoldDials a stall holds a new connection's bytes until the heal", func(t *testing.T) {
		r := newRig(t, Options{HoldDials: true})
		r.mesh.Cut("a", "b")
		d, a := r.dial("a", "b")
		send(t, d, "hello")
		assert.True(t, silent(t, a), "the handshake hangs")
		r.mesh.Heal()
		assert.Equal(t, "hello", string(recv(t, a, 5)))
	})
}

func TestReset(t *testing.T) {
	t.Run("a reset closes live connections and refuses new ones until healed", func(t *testing.T) {
		r := newRig(t, Options{HoldDials: true})
		d, _ := r.dial("a", "b")
		r.mesh.Reset("a", "b")
		closedByPeer(t, d)
		closedByPeer(t, r.connect("b", "a"))
		require.Eventually(t, func() bool { return r.mesh.Stats().Refused == 1 }, settle, poll)
		r.mesh.Heal()
		d2, a2 := r.dial("a", "b")
		send(t, d2, "ok")
		assert.Equal(t, "ok", string(recv(t, a2, 2)))
	})
	t.Run("a reset partition closes connections across groups only", func(t *testing.T) {
		r := newRig(t, Options{})
		abD, abA := r.dial("a", "b")
		acD, _ := r.dial("a", "c")
		r.mesh.PartitionReset([]gen.Atom{"a", "b"}, []gen.Atom{"c"})
		closedByPeer(t, acD)
		send(t, abD, "kept")
		assert.Equal(t, "kept", string(recv(t, abA, 4)))
	})
}

func TestDelay(t *testing.T) {
	t.Run("delayed bytes arrive no sooner than the delay and in order", func(t *testing.T) {
		r := newRig(t, Options{Seed: 1})
		d, a := r.dial("a", "b")
		const delay = 150 * time.Millisecond
		r.mesh.Set("a", "b", Fault{Delay: delay, Jitter: 100 * time.Millisecond})
		start := time.Now()
		var want []byte
		for i := range 50 {
			_, err := d.Write([]byte{byte(i)})
			require.NoError(t, err)
			want = append(want, byte(i))
		}
		got := recv(t, a, len(want))
		assert.GreaterOrEqual(t, time.Since(start), delay)
		assert.Equal(t, want, got)
	})
	t.Run("heal lifts cuts and keeps delay and loss", func(t *testing.T) {
		r := newRig(t, Options{})
		want := Fault{Delay: time.Millisecond, Jitter: time.Millisecond, Loss: 0.5}
		r.mesh.Set("a", "b", want)
		r.mesh.Isolate("a")
		assert.Equal(t, Stall, r.mesh.Fault("a", "b").Cut)
		r.mesh.Heal()
		assert.Equal(t, want, r.mesh.Fault("a", "b"))
	})
}

func TestSetTargetFollowsARestartedNode(t *testing.T) {
	r := newRig(t, Options{})
	old, _ := r.dial("a", "b")
	restarted := listen(t)
	require.NoError(t, r.mesh.SetTarget("b", restarted.Addr().String()))
	t.Run("connections to the old address are closed", func(t *testing.T) {
		closedByPeer(t, old)
	})
	t.Run("new connections reach the new address", func(t *testing.T) {
		r.acceptors["b"] = restarted
		d, a := r.dial("a", "b")
		send(t, d, "new life")
		assert.Equal(t, "new life", string(recv(t, a, 8)))
	})
}

func TestClose(t *testing.T) {
	t.Run("close ends every connection and leaves no goroutine", func(t *testing.T) {
		m := New(Options{})
		target := listen(t)
		require.NoError(t, m.Add("a", target.Addr().String()))
		require.NoError(t, m.Add("b", target.Addr().String()))
		c, err := net.Dial("tcp", m.Route("a", "b"))
		require.NoError(t, err)
		defer c.Close()
		require.NoError(t, target.(*net.TCPListener).SetDeadline(time.Now().Add(settle)))
		server, err := target.Accept()
		require.NoError(t, err)
		defer server.Close()
		m.Cut("a", "b")
		send(t, c, "held")
		require.NoError(t, m.Close())
		closedByPeer(t, c)
		goleak.VerifyNone(t)
		require.NoError(t, m.Close(), "Close is idempotent")
	})
	t.Run("a closed mesh accepts no node", func(t *testing.T) {
		m := New(Options{})
		require.NoError(t, m.Close())
		assert.ErrorIs(t, m.Add("a", ""), gen.ErrNotAllowed)
	})
}
