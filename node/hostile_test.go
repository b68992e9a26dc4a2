package node_test

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node/internal/handshake"
)

// dialRaw opens an authenticated connection to n as a fake node named name,
// so a test can write whatever bytes it likes after the handshake.
func dialRaw(t *testing.T, n gen.Node, name gen.Atom) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", n.Network().AcceptorAddress())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(wait)))
	_, err = handshake.Dial(conn, handshake.Config{Cookie: testCookie, Self: handshake.Identity{Name: name, Creation: 1}}, n.Name())
	require.NoError(t, err)
	return conn
}

// closedByPeer waits until the node closes conn.
func closedByPeer(t *testing.T, conn net.Conn) {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(wait)))
	buf := make([]byte, 4096)
	for {
		if _, err := conn.Read(buf); err != nil {
			var ne net.Error
			if errorsAs(err, &ne) && ne.Timeout() {
				t.Fatal("the node did not close the connection")
			}
			return
		}
	}
}

// servesOthers checks that n still answers a fresh, well-behaved node.
func servesOthers(t *testing.T, n gen.Node) {
	t.Helper()
	other, _ := startNet(t, "well-behaved@127.0.0.1", fastNet(testCookie))
	route(t, other, n)
	c := newProbe()
	pid := spawnProbe(t, n, c)
	v, err := other.Call(pid, "are you there")
	require.NoError(t, err)
	require.Equal(t, "are you there", v)
	other.Stop()
}

// warned reports whether logs hold a WARN line containing text.
func warned(logs, text string) bool {
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, text) {
			return true
		}
	}
	return false
}

func TestHostilePeers(t *testing.T) {
	t.Run("a wrong cookie is refused on both sides and logged", func(t *testing.T) {
		a, logs := startNet(t, "guarded@127.0.0.1", fastNet(testCookie))
		intruder, _ := startNet(t, "intruder@127.0.0.1", fastNet("wrong cookie"))
		route(t, intruder, a)
		c := newProbe()
		pid := spawnProbe(t, a, c)
		_, err := intruder.Call(pid, "let me in")
		require.ErrorIs(t, err, gen.ErrNoConnection)
		require.ErrorIs(t, err, gen.ErrUnauthorized)
		require.GreaterOrEqual(t, intruder.Network().Stats().Dropped["handshake_failed"], uint64(1))
		require.Equal(t, uint64(1), intruder.Network().Stats().Dropped["dial_failed"], "the queued request is dropped")
		require.Eventually(t, func() bool {
			return a.Network().Stats().HandshakesRejected == 1 && strings.Contains(logs.String(), "wrong cookie")
		}, wait, time.Millisecond, "the refusal is counted and logged")
		require.Empty(t, a.Network().Nodes())
		servesOthers(t, a)
	})
	t.Run("garbage bytes close that connection and the node serves others", func(t *testing.T) {
		a, _ := startNet(t, "garbage@127.0.0.1", fastNet(testCookie))
		conn, err := net.Dial("tcp", a.Network().AcceptorAddress())
		require.NoError(t, err)
		defer conn.Close()
		_, err = conn.Write([]byte("GET / HTTP/1.1\r\nHost: example\r\n\r\n"))
		require.NoError(t, err)
		closedByPeer(t, conn)
		require.Eventually(t, func() bool { return a.Network().Stats().Dropped["handshake_failed"] == 1 }, wait, time.Millisecond)
		servesOthers(t, a)
	})
	t.Run("an oversized frame closes that connection, is counted, logged as a warning, and the node serves others", func(t *testing.T) {
		opts := fastNet(testCookie)
		opts.MaxFrameSize = 1024
		a, logs := startNet(t, "capped@127.0.0.1", opts)
		conn := dialRaw(t, a, "big@127.0.0.1")
		header := binary.BigEndian.AppendUint32(nil, 1<<30)
		_, err := conn.Write(header)
		require.NoError(t, err)
		closedByPeer(t, conn)
		require.Eventually(t, func() bool { return a.Network().Stats().Dropped["too_large"] == 1 }, wait, time.Millisecond)
		require.Eventually(t, func() bool { return warned(logs.String(), "exceeds the cap") }, wait, time.Millisecond)
		servesOthers(t, a)
	})
	t.Run("a malformed frame closes that connection, is counted, logged as a warning, and the node serves others", func(t *testing.T) {
		a, logs := startNet(t, "strict@127.0.0.1", fastNet(testCookie))
		conn := dialRaw(t, a, "sloppy@127.0.0.1")
		payload := []byte{0xEE, 0, 0, 1, 2, 3}
		_, err := conn.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...))
		require.NoError(t, err)
		closedByPeer(t, conn)
		require.Eventually(t, func() bool { return a.Network().Stats().Dropped["malformed"] == 1 }, wait, time.Millisecond)
		require.Eventually(t, func() bool { return warned(logs.String(), "malformed frame") }, wait, time.Millisecond)
		servesOthers(t, a)
	})
	t.Run("a silent peer is declared down after the keepalive timeout", func(t *testing.T) {
		a, _ := startNet(t, "watchful@127.0.0.1", fastNet(testCookie))
		conn := dialRaw(t, a, "silent@127.0.0.1")
		require.Eventually(t, func() bool { return len(a.Network().Nodes()) == 1 }, wait, time.Millisecond)
		w := newProbe()
		w.onInit = func(p *probe, args ...any) error { return p.Monitor(gen.Atom("silent@127.0.0.1")) }
		spawnProbe(t, a, w)
		require.Equal(t, gen.MessageDownNode{Name: "silent@127.0.0.1"}, w.next(t))
		require.Equal(t, uint64(1), a.Network().Stats().Dropped["keepalive_timeout"])
		closedByPeer(t, conn)
	})
}

func TestSimultaneousDial(t *testing.T) {
	t.Run("when both nodes dial at once exactly one connection remains and nothing is lost", func(t *testing.T) {
		for round := 0; round < 20; round++ {
			a, _ := startNet(t, gen.Atom(fmt.Sprintf("sim-a%d@127.0.0.1", round)), fastNet(testCookie))
			b, _ := startNet(t, gen.Atom(fmt.Sprintf("sim-b%d@127.0.0.1", round)), fastNet(testCookie))
			route(t, a, b)
			route(t, b, a)
			ca, cb := newProbe(), newProbe()
			pa, pb := spawnProbe(t, a, ca), spawnProbe(t, b, cb)
			start := make(chan struct{})
			errs := make(chan error, 2)
			go func() { <-start; errs <- a.Send(pb, "from a") }()
			go func() { <-start; errs <- b.Send(pa, "from b") }()
			close(start)
			require.NoError(t, <-errs)
			require.NoError(t, <-errs)
			require.Equal(t, "from a", cb.next(t))
			require.Equal(t, "from b", ca.next(t))
			require.Eventually(t, func() bool {
				return a.Network().Stats().Connections == 1 && b.Network().Stats().Connections == 1
			}, wait, time.Millisecond)
			for i := 0; i < 20; i++ {
				require.NoError(t, a.Send(pb, i))
				require.NoError(t, b.Send(pa, i))
			}
			// Order holds on one connection; frames written on the retired
			// connection and on its replacement may interleave, so only
			// completeness is checked across the switch.
			gotA, gotB := map[any]bool{}, map[any]bool{}
			for i := 0; i < 20; i++ {
				gotB[cb.next(t)] = true
				gotA[ca.next(t)] = true
			}
			require.Len(t, gotA, 20)
			require.Len(t, gotB, 20)
			a.Stop()
			b.Stop()
		}
	})
}

func TestRestartedPeer(t *testing.T) {
	a, _ := startNet(t, "survivor@127.0.0.1", fastNet(testCookie))
	name := gen.Atom("phoenix@" + freeAddr(t))
	first, _ := startNet(t, name, fastNet(testCookie))
	c1 := newProbe()
	oldPID, err := first.SpawnRegister("svc", c1.factory(), gen.ProcessOptions{})
	require.NoError(t, err)
	w := newProbe()
	w.onInit = func(p *probe, args ...any) error { return p.Monitor(oldPID) }
	spawnProbe(t, a, w)
	watchRecorded(t, a, oldPID)
	first.Stop()
	down := w.next(t).(gen.MessageDownPID)
	require.ErrorIs(t, down.Reason, gen.TerminateReasonShutdown)

	second, _ := startNet(t, name, fastNet(testCookie))
	c2 := newProbe()
	newPID, err := second.SpawnRegister("svc", c2.factory(), gen.ProcessOptions{})
	require.NoError(t, err)

	t.Run("a restarted node with the same name and a new creation is accepted", func(t *testing.T) {
		require.NotEqual(t, first.Creation(), second.Creation())
		require.Eventually(t, func() bool {
			_, err := a.Call(gen.ProcessID{Name: "svc", Node: name}, "hello again")
			return err == nil
		}, wait, 10*time.Millisecond)
		v, err := a.Call(newPID, "by new pid")
		require.NoError(t, err)
		require.Equal(t, "by new pid", v)
	})
	t.Run("PIDs of the old life are unknown to the new one", func(t *testing.T) {
		_, err := a.Call(oldPID, "x")
		require.ErrorIs(t, err, gen.ErrProcessUnknown)
	})
}
