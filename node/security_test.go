package node_test

import (
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node"
	"github.com/regent-go/regent/node/internal/handshake"
)

// rawHello is a handshake hello from a client announcing name.
func rawHello(name gen.Atom, creation int64) []byte {
	b := append([]byte(handshake.Magic), handshake.Version)
	b = append(b, make([]byte, handshake.ChallengeSize)...)
	b = binary.BigEndian.AppendUint64(b, uint64(creation))
	b = binary.BigEndian.AppendUint16(b, uint16(len(name)))
	return append(b, name...)
}

// dialTCP opens a plain TCP connection to n's acceptor, closed when the test ends.
func dialTCP(t *testing.T, n gen.Node) *net.TCPConn {
	t.Helper()
	conn, err := net.Dial("tcp", n.Network().AcceptorAddress())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(wait)))
	return conn.(*net.TCPConn)
}

func TestTheAcceptorIsNoCookieOracle(t *testing.T) {
	a, _ := startNet(t, "oracle@127.0.0.1", fastNet(testCookie))
	conn := dialTCP(t, a)
	_, err := conn.Write(rawHello("guesser@127.0.0.1", 1))
	require.NoError(t, err)
	_, err = conn.Write(make([]byte, handshake.ProofSize)) // a guess
	require.NoError(t, err)
	got, err := io.ReadAll(conn)
	require.NoError(t, err)

	t.Run("a client that never proves the cookie gets the acceptor's hello and one refusal byte, nothing else", func(t *testing.T) {
		hello := rawHello(a.Name(), 0)
		require.Len(t, got, len(hello)+1, "the acceptor sent bytes beyond its hello and its verdict")
		assert.Equal(t, hello[:7], got[:7], "magic and version")
		assert.Equal(t, string(a.Name()), string(got[len(hello)-len(a.Name()):len(hello)]))
		assert.Equal(t, byte(0x01), got[len(got)-1], "the verdict: wrong proof")
	})
	t.Run("the wrong guess is counted as unauthorized", func(t *testing.T) {
		require.Eventually(t, func() bool {
			s := a.Network().Stats()
			return s.HandshakesRejected == 1 && s.Rejected["unauthorized"] == 1
		}, wait, time.Millisecond)
	})
}

func TestAHandshakeDroppedMidwayIsRejectedNotMalformed(t *testing.T) {
	a, logs := startNet(t, "dropped@127.0.0.1", fastNet(testCookie))
	t.Run("a client that hangs up inside its hello is counted as dropped", func(t *testing.T) {
		conn := dialTCP(t, a)
		_, err := conn.Write(rawHello("quitter@127.0.0.1", 1)[:20])
		require.NoError(t, err)
		require.NoError(t, conn.Close())
		require.Eventually(t, func() bool {
			s := a.Network().Stats()
			return s.HandshakesRejected == 1 && s.Rejected["dropped"] == 1
		}, wait, time.Millisecond)
	})
	t.Run("a client that connects and hangs up at once is counted as dropped", func(t *testing.T) {
		require.NoError(t, dialTCP(t, a).Close())
		require.Eventually(t, func() bool { return a.Network().Stats().Rejected["dropped"] == 2 }, wait, time.Millisecond)
	})
	t.Run("neither is logged as malformed", func(t *testing.T) {
		require.Eventually(t, func() bool { return strings.Count(logs.String(), "hung up") == 2 }, wait, time.Millisecond)
		assert.NotContains(t, logs.String(), "malformed")
		assert.Zero(t, a.Network().Stats().Rejected["malformed"])
	})
}

func TestCookieRules(t *testing.T) {
	start := func(name gen.Atom, opts gen.NetworkOptions) (gen.Node, error) {
		n, err := node.Start(name, gen.NodeOptions{Network: opts, Log: gen.LogOptions{Level: gen.LogLevelError}})
		if err == nil {
			t.Cleanup(n.Stop)
		}
		return n, err
	}
	t.Run("a node with network and no cookie does not start", func(t *testing.T) {
		_, err := start("open@127.0.0.1", gen.NetworkOptions{})
		require.ErrorIs(t, err, gen.ErrEmptyCookie)
	})
	t.Run("InsecureOpen starts nodes without a cookie, and they talk", func(t *testing.T) {
		opts := fastNet("")
		opts.InsecureOpen = true
		x, _ := startNet(t, "open-x@127.0.0.1", opts)
		y, _ := startNet(t, "open-y@127.0.0.1", opts)
		route(t, x, y)
		pid := spawnProbe(t, y, newProbe())
		v, err := x.Call(pid, "open on purpose")
		require.NoError(t, err)
		require.Equal(t, "open on purpose", v)
	})
	t.Run("InsecureOpen together with a cookie is refused", func(t *testing.T) {
		opts := fastNet(testCookie)
		opts.InsecureOpen = true
		_, err := start("contradictory@127.0.0.1", opts)
		require.ErrorIs(t, err, gen.ErrIncorrect)
	})
	t.Run("a node without network needs no cookie", func(t *testing.T) {
		_, err := start("local@127.0.0.1", gen.NetworkOptions{Mode: gen.NetworkModeDisabled})
		require.NoError(t, err)
	})
	t.Run("a cookie shorter than 16 bytes starts with a warning", func(t *testing.T) {
		_, logs := startNet(t, "short@127.0.0.1", fastNet("hunter2"))
		require.Contains(t, logs.String(), "level=WARN")
		require.Contains(t, logs.String(), "the cookie has 7 bytes")
	})
	t.Run("a cookie of 16 bytes or more starts without one", func(t *testing.T) {
		_, logs := startNet(t, "long@127.0.0.1", fastNet("0123456789abcdef"))
		require.NotContains(t, logs.String(), "the cookie has")
	})
}

func TestUnauthenticatedHandshakesAreCapped(t *testing.T) {
	opts := fastNet(testCookie)
	opts.MaxHandshakes = 4
	opts.HandshakeTimeout = time.Minute // only the test ends the silent ones
	a, _ := startNet(t, "capped-handshakes@127.0.0.1", opts)
	silent := make([]net.Conn, 4)
	for i := range silent {
		silent[i] = dialTCP(t, a)
	}
	require.Eventually(t, func() bool { return a.Network().Stats().HandshakesInFlight == 4 }, wait, time.Millisecond)

	t.Run("a connection beyond the cap is closed at once and counted", func(t *testing.T) {
		extra := dialTCP(t, a)
		closedByPeer(t, extra)
		s := a.Network().Stats()
		require.Equal(t, uint64(1), s.Rejected["handshake_limit"])
		require.Equal(t, 4, s.HandshakesInFlight)
	})
	t.Run("when the silent ones leave, peers get in again", func(t *testing.T) {
		for _, c := range silent {
			require.NoError(t, c.Close())
		}
		require.Eventually(t, func() bool { return a.Network().Stats().HandshakesInFlight == 0 }, wait, time.Millisecond)
		servesOthers(t, a)
	})
}

func TestPeersAreCapped(t *testing.T) {
	opts := fastNet(testCookie)
	opts.MaxPeers = 1
	a, _ := startNet(t, "capped-peers@127.0.0.1", opts)
	pid := spawnProbe(t, a, newProbe())
	first, _ := startNet(t, "first@127.0.0.1", fastNet(testCookie))
	route(t, first, a)
	_, err := first.Call(pid, "in")
	require.NoError(t, err)

	t.Run("a peer beyond MaxPeers is refused in the handshake and learns why", func(t *testing.T) {
		second, _ := startNet(t, "second@127.0.0.1", fastNet(testCookie))
		route(t, second, a)
		_, err := second.Call(pid, "me too")
		require.ErrorIs(t, err, gen.ErrNoConnection)
		require.ErrorIs(t, err, gen.ErrNotAllowed)
		require.Equal(t, uint64(1), second.Network().Stats().Rejected["refused"], "counted before the dial fails")
		require.Eventually(t, func() bool { return a.Network().Stats().Rejected["peer_limit"] == 1 }, wait, time.Millisecond)
	})
	t.Run("the established peer is unaffected", func(t *testing.T) {
		_, err := first.Call(pid, "still here")
		require.NoError(t, err)
		require.Equal(t, []gen.Atom{"first@127.0.0.1"}, a.Network().Nodes())
	})
}

func TestAPeerCannotMakeTheNodeAllocateWhatItOnlyAnnounces(t *testing.T) {
	a, _ := startNet(t, "frugal@127.0.0.1", fastNet(testCookie))
	const peers = 40
	// connect opens peers authenticated connections, each sending a frame
	// header announcing size and then the first sent bytes of its payload,
	// and hanging up; it returns the bytes allocated meanwhile, once the
	// node has dropped every one of them as malformed.
	round := 0
	connect := func(size uint32, sent int) uint64 {
		round++
		before := a.Network().Stats().Dropped["malformed"]
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		for i := range peers {
			conn := dialRaw(t, a, gen.Atom("greedy-"+strings.Repeat("x", round)+string(rune('a'+i%26))+strings.Repeat("y", i/26)+"@127.0.0.1"))
			_, err := conn.Write(append(binary.BigEndian.AppendUint32(nil, size), make([]byte, sent)...))
			require.NoError(t, err)
			require.NoError(t, conn.Close())
		}
		require.Eventually(t, func() bool {
			return a.Network().Stats().Dropped["malformed"] == before+peers
		}, wait, time.Millisecond)
		runtime.ReadMemStats(&m1)
		return m1.TotalAlloc - m0.TotalAlloc
	}
	baseline := connect(200, 100) // a small frame cut short: what a connection costs anyway
	announced := connect(4<<20-64, 100)
	t.Logf("allocated for %d connections: %d KiB announcing 200 bytes, %d KiB announcing 4 MiB", peers, baseline>>10, announced>>10)
	assert.Less(t, announced, baseline+peers*(256<<10),
		"announcing 4 MiB per connection made the node allocate %d KiB more than announcing 200 bytes", (announced-baseline)>>10)
}

func TestNameCollisions(t *testing.T) {
	a, logs := startNet(t, "contested@127.0.0.1", fastNet(testCookie))
	real, _ := startNet(t, "real@127.0.0.1", fastNet(testCookie))
	route(t, real, a)
	pid := spawnProbe(t, a, newProbe())
	_, err := real.Call(pid, "hello")
	require.NoError(t, err)
	w := newProbe()
	w.onInit = func(p *probe, args ...any) error { return p.Monitor(real.Name()) }
	spawnProbe(t, a, w)

	impostor := func(creation int64) error {
		conn, err := net.Dial("tcp", a.Network().AcceptorAddress())
		require.NoError(t, err)
		defer conn.Close()
		require.NoError(t, conn.SetDeadline(time.Now().Add(wait)))
		_, err = handshake.Dial(conn, handshake.Config{Cookie: testCookie, Self: handshake.Identity{Name: real.Name(), Creation: creation}}, a.Name())
		return err
	}
	t.Run("a second node under a connected name, with an older creation, is refused, logged and counted", func(t *testing.T) {
		err := impostor(real.Creation() - 1)
		require.ErrorIs(t, err, handshake.ErrRefused)
		require.Eventually(t, func() bool {
			return a.Network().Stats().NameCollisions == 1 && strings.Contains(logs.String(), "name collision")
		}, wait, time.Millisecond)
	})
	t.Run("the established connection stays and serves the real node", func(t *testing.T) {
		v, err := real.Call(pid, "still me")
		require.NoError(t, err)
		require.Equal(t, "still me", v)
		select {
		case m := <-w.messages:
			t.Fatalf("the monitor of the real node got %v", m)
		default:
		}
	})
	t.Run("a newer life of the node replaces the connection", func(t *testing.T) {
		require.NoError(t, impostor(real.Creation()+1))
		require.Equal(t, gen.MessageDownNode{Name: real.Name()}, w.next(t))
		require.Equal(t, uint64(1), a.Network().Stats().NameCollisions, "a newer life is no collision")
	})
}

func TestTLSBindsCertificatesToNodeNames(t *testing.T) {
	pki := newTestPKI(t)
	withTLS := func(cert tls.Certificate) gen.NetworkOptions {
		o := fastNet(testCookie)
		o.TLS = pki.config(cert)
		o.TLSVerifyNodeName = true
		return o
	}
	loopback := []net.IP{net.IPv4(127, 0, 0, 1)}
	b, _ := startNet(t, "bound-b@127.0.0.1", withTLS(pki.issue(t)))
	pid := spawnProbe(t, b, newProbe())

	t.Run("a peer whose certificate names the host of its node name is accepted", func(t *testing.T) {
		a, _ := startNet(t, "bound-a@127.0.0.1", withTLS(pki.issue(t)))
		route(t, a, b)
		_, err := a.Call(pid, "named")
		require.NoError(t, err)
	})
	t.Run("a dialler whose certificate names another host is refused by the acceptor and counted", func(t *testing.T) {
		liar, _ := startNet(t, "liar@127.0.0.1", withTLS(pki.issueFor(t, []string{"elsewhere.example"}, nil)))
		route(t, liar, b)
		_, err := liar.Call(pid, "trust me")
		require.ErrorIs(t, err, gen.ErrNoConnection)
		require.Eventually(t, func() bool { return b.Network().Stats().Rejected["certificate_name"] == 1 }, wait, time.Millisecond)
	})
	t.Run("an acceptor whose certificate names another host is refused by the dialler and counted", func(t *testing.T) {
		opts := withTLS(pki.issueFor(t, nil, loopback))
		opts.Acceptor.Host = "127.0.0.1"
		far, _ := startNet(t, "far@far.example", opts) // its certificate names 127.0.0.1 only
		farPID := spawnProbe(t, far, newProbe())
		a, _ := startNet(t, "careful@127.0.0.1", withTLS(pki.issue(t)))
		route(t, a, far)
		_, err := a.Call(farPID, "who are you")
		require.ErrorIs(t, err, gen.ErrNoConnection)
		require.Equal(t, uint64(1), a.Network().Stats().Rejected["certificate_name"])
	})
	t.Run("the option needs TLS", func(t *testing.T) {
		opts := fastNet(testCookie)
		opts.TLSVerifyNodeName = true
		_, err := node.Start("no-tls@127.0.0.1", gen.NodeOptions{Network: opts})
		require.ErrorIs(t, err, gen.ErrIncorrect)
	})
}

func TestRepeatedFailuresAreLoggedWithinABudget(t *testing.T) {
	a, logs := startNet(t, "flooded@127.0.0.1", fastNet(testCookie))
	const attempts = 60
	for range attempts {
		conn := dialTCP(t, a)
		_, err := conn.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
		require.NoError(t, err)
		closedByPeer(t, conn)
	}
	require.Eventually(t, func() bool { return a.Network().Stats().Rejected["malformed"] == attempts }, wait, time.Millisecond)
	lines := strings.Count(logs.String(), "refused connection with")
	assert.Positive(t, lines, "the failures are logged")
	assert.LessOrEqual(t, lines, 5, "%d bad connections wrote %d lines", attempts, lines)
}

func TestAPeerSpeaksOnlyForItsOwnProcesses(t *testing.T) {
	a, _ := startNet(t, "target@127.0.0.1", fastNet(testCookie))
	c := newProbe()
	pid := spawnProbe(t, a, c)
	conn := dialRaw(t, a, "mallory@127.0.0.1")

	forged, err := node.MessageFrame(gen.PID{Node: "victim@127.0.0.1", ID: 1000, Creation: 1}, pid, "from the victim")
	require.NoError(t, err)
	own, err := node.MessageFrame(gen.PID{Node: "mallory@127.0.0.1", ID: 1000, Creation: 1}, pid, "from mallory")
	require.NoError(t, err)
	_, err = conn.Write(append(forged, own...))
	require.NoError(t, err)

	require.Equal(t, "from mallory", c.next(t), "the frame naming another node's process never reaches the probe")
	require.Equal(t, uint64(1), a.Network().Stats().Dropped["foreign_sender"])
	require.Len(t, a.Network().Nodes(), 1, "the connection stays up: the peer's own frames still count")
}
