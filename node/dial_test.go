package node_test

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/syncbuf"
	"github.com/regent-go/regent/node"
)

// patientNet are network options under which only the test ends a dial (the
// handshake timeout is long) and the backoff after a failed one lasts for
// the whole test.
func patientNet() gen.NetworkOptions {
	opts := fastNet(testCookie)
	opts.HandshakeTimeout = time.Minute
	opts.ReconnectBackoffMin = time.Minute
	opts.ReconnectBackoffMax = time.Minute
	return opts
}

// behindGate starts a node whose route to the node named held leads to a
// gate that holds every connection.
func behindGate(t *testing.T, name, held gen.Atom, opts gen.NetworkOptions) (gen.Node, *gate) {
	t.Helper()
	n, _ := startNet(t, name, opts)
	g := newGate(t)
	require.NoError(t, n.Network().AddRoute(held, g.addr()))
	return n, g
}

// dialHeld waits until n's dial has reached the gate and is held there.
func dialHeld(t *testing.T, n gen.Node, g *gate) {
	t.Helper()
	require.Eventually(t, func() bool { return g.holding() == 1 }, wait, time.Millisecond)
	require.Empty(t, n.Network().Nodes())
}

func TestDialInBackground(t *testing.T) {
	held := gen.Atom("held@127.0.0.1")
	a, g := behindGate(t, "dialer@127.0.0.1", held, patientNet())
	target := gen.PID{Node: held, ID: 1001, Creation: 1}

	t.Run("a send to a node whose dial hangs returns at once and is accepted", func(t *testing.T) {
		require.NoError(t, a.Send(target, "queued"))
		dialHeld(t, a, g)
	})
	t.Run("an unencodable message fails at once while the node is dialled", func(t *testing.T) {
		type secret struct{ X int }
		require.ErrorIs(t, a.Send(target, secret{X: 1}), gen.ErrUnregistered)
	})
	t.Run("calls, monitors and links made while dialling learn ErrNoConnection when the dial fails", func(t *testing.T) {
		w := newProbe()
		named := gen.ProcessID{Name: "svc", Node: held}
		w.onInit = func(p *probe, args ...any) error {
			return errors.Join(p.SetTrapExit(true), p.Monitor(target), p.Monitor(held), p.Link(named))
		}
		spawnProbe(t, a, w)
		caller := newProbe()
		caller.onMessage = func(p *probe, from gen.PID, message any) error {
			_, err := p.Call(target, "request")
			p.cfg.messages <- err
			return nil
		}
		callerPID := spawnProbe(t, a, caller)
		require.NoError(t, a.Send(callerPID, "call"))
		require.Eventually(t, func() bool {
			info, err := a.ProcessInfo(callerPID)
			return err == nil && info.State == gen.ProcessStateWaitResponse
		}, wait, time.Millisecond)
		require.Equal(t, 1, g.holding(), "still the one dial")

		g.shut()
		require.ErrorIs(t, caller.next(t).(error), gen.ErrNoConnection)
		got := w.byType(t, 3)
		require.ErrorIs(t, got["gen.MessageDownPID"].(gen.MessageDownPID).Reason, gen.ErrNoConnection)
		require.Equal(t, gen.MessageDownNode{Name: held}, got["gen.MessageDownNode"])
		exit := got["gen.MessageExitProcessID"].(gen.MessageExitProcessID)
		require.Equal(t, named, exit.ProcessID)
		require.ErrorIs(t, exit.Reason, gen.ErrNoConnection)
		stats := a.Network().Stats()
		require.Equal(t, uint64(4), stats.Dropped["dial_failed"], "the send, two watches and the request")
		require.Equal(t, uint64(1), stats.Dropped["handshake_failed"])
	})
	t.Run("during the backoff after a failed dial, sends, calls and monitors fail fast", func(t *testing.T) {
		require.ErrorIs(t, a.Send(target, "x"), gen.ErrNoConnection)
		_, err := a.Call(target, "x")
		require.ErrorIs(t, err, gen.ErrNoConnection)
		w := newProbe()
		w.onInit = func(p *probe, args ...any) error { return p.Monitor(held) }
		_, err = a.Spawn(w.factory(), gen.ProcessOptions{})
		require.ErrorIs(t, err, gen.ErrNoConnection)
	})
	t.Run("a node without a route still fails at once with ErrNoRoute", func(t *testing.T) {
		require.ErrorIs(t, a.Send(gen.PID{Node: "nowhere@somehost", ID: 1001, Creation: 1}, "x"), gen.ErrNoRoute)
	})
}

func TestHandshakeTimeout(t *testing.T) {
	held := gen.Atom("mute@127.0.0.1")
	opts := fastNet(testCookie)
	opts.HandshakeTimeout = 200 * time.Millisecond
	a, _ := behindGate(t, "impatient@127.0.0.1", held, opts)

	t.Run("a call to a node that never answers the handshake fails with ErrNoConnection", func(t *testing.T) {
		_, err := a.Call(gen.PID{Node: held, ID: 1001, Creation: 1}, "anyone?")
		require.ErrorIs(t, err, gen.ErrNoConnection)
		require.Equal(t, uint64(1), a.Network().Stats().Dropped["handshake_failed"])
		require.Equal(t, uint64(1), a.Network().Stats().Dropped["dial_failed"])
	})
}

func TestQueuedFramesKeepOrder(t *testing.T) {
	b, _ := startNet(t, "receiver@127.0.0.1", fastNet(testCookie))
	a, g := behindGate(t, "sender@127.0.0.1", b.Name(), patientNet())
	sink := newProbe()
	_, err := b.SpawnRegister("sink", sink.factory(), gen.ProcessOptions{})
	require.NoError(t, err)
	to := gen.ProcessID{Name: "sink", Node: b.Name()}

	t.Run("frames sent while dialling arrive first and in order, then later ones", func(t *testing.T) {
		for i := 0; i < 300; i++ {
			require.NoError(t, a.Send(to, ping{Seq: i}))
			if i == 100 {
				type secret struct{ X int }
				require.ErrorIs(t, a.Send(to, secret{}), gen.ErrUnregistered)
				require.ErrorIs(t, a.Send(to, ping{Text: strings.Repeat("x", 5<<20)}), gen.ErrTooLarge)
			}
		}
		dialHeld(t, a, g)
		g.open(t, b.Network().AcceptorAddress())
		for i := 300; i < 600; i++ {
			require.NoError(t, a.Send(to, ping{Seq: i}))
		}
		for i := 0; i < 600; i++ {
			require.Equal(t, ping{Seq: i}, sink.next(t))
		}
		require.Equal(t, []gen.Atom{b.Name()}, a.Network().Nodes())
		require.Zero(t, a.Network().Stats().Dropped["dial_failed"])
	})
}

func TestDialQueueBound(t *testing.T) {
	t.Run("beyond 4096 queued frames a send fails with ErrNoConnection and the queued ones still arrive", func(t *testing.T) {
		b, _ := startNet(t, "roomy@127.0.0.1", fastNet(testCookie))
		a, g := behindGate(t, "chatty@127.0.0.1", b.Name(), patientNet())
		sink := newProbe()
		_, err := b.SpawnRegister("sink", sink.factory(), gen.ProcessOptions{})
		require.NoError(t, err)
		to := gen.ProcessID{Name: "sink", Node: b.Name()}
		for i := 0; i < 4096; i++ {
			require.NoError(t, a.Send(to, i))
		}
		require.ErrorIs(t, a.Send(to, 4096), gen.ErrNoConnection)
		dialHeld(t, a, g)
		g.open(t, b.Network().AcceptorAddress())
		for i := 0; i < 4096; i++ {
			require.Equal(t, i, sink.next(t))
		}
	})
	t.Run("beyond 16 times MaxFrameSize of queued bytes a send fails with ErrNoConnection", func(t *testing.T) {
		opts := patientNet()
		opts.MaxFrameSize = 1024
		a, g := behindGate(t, "wordy@127.0.0.1", "far@127.0.0.1", opts)
		to := gen.ProcessID{Name: "sink", Node: "far@127.0.0.1"}
		big := ping{Text: strings.Repeat("x", 900)}
		accepted := 0
		for ; accepted < 100; accepted++ {
			if err := a.Send(to, big); err != nil {
				require.ErrorIs(t, err, gen.ErrNoConnection)
				break
			}
		}
		// Each frame holds between 900 and 1024 bytes.
		require.GreaterOrEqual(t, accepted, 16*1024/1024)
		require.LessOrEqual(t, accepted, 16*1024/900)
		dialHeld(t, a, g)
	})
}

func TestStopDuringHangingDial(t *testing.T) {
	stops := map[string]func(gen.Node){
		"Stop":      gen.Node.Stop,
		"StopForce": gen.Node.StopForce,
	}
	for name, stop := range stops {
		t.Run(name+" ends the dial and leaves no goroutine behind", func(t *testing.T) {
			g := newGate(t)
			ignore := goleak.IgnoreCurrent()
			n, _ := startNet(t, "stopping@127.0.0.1", patientNet())
			held := gen.Atom("held@127.0.0.1")
			require.NoError(t, n.Network().AddRoute(held, g.addr()))
			target := gen.PID{Node: held, ID: 1001, Creation: 1}
			require.NoError(t, n.Send(target, "queued"))
			dialHeld(t, n, g)
			result := make(chan error, 1)
			go func() {
				_, err := n.Call(target, "pending")
				result <- err
			}()
			stop(n)
			require.Error(t, <-result)
			require.ErrorIs(t, n.Send(target, "late"), gen.ErrNodeTerminated)
			stats := n.Network().Stats()
			require.GreaterOrEqual(t, stats.Dropped["dial_failed"], uint64(1), "the queued send is dropped")
			require.Zero(t, stats.Dropped["handshake_failed"], "a dial ended by Stop is no failed handshake")
			goleak.VerifyNone(t, ignore)
		})
	}
}

// levelLines returns the lines of logs at level (slog's text form) that
// contain text.
func levelLines(logs, level, text string) []string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "level="+level) && strings.Contains(line, text) {
			out = append(out, line)
		}
	}
	return out
}

func TestRepeatedDialFailuresAreLoggedOnceThenQuietly(t *testing.T) {
	addr := freeAddr(t)
	peer := gen.Atom("later@" + addr) // dialled at its port, where nobody listens yet
	logs := &syncbuf.Buffer{}
	a, err := node.Start("redialer@127.0.0.1", gen.NodeOptions{
		Network: fastNet(testCookie),
		Log:     gen.LogOptions{Level: gen.LogLevelDebug, Handler: slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})},
	})
	require.NoError(t, err)
	t.Cleanup(a.Stop)
	target := gen.PID{Node: peer, ID: 1001, Creation: 1}

	again := func() []string { return levelLines(logs.String(), "DEBUG", "dial to "+string(peer)+" failed again") }
	require.Eventually(t, func() bool {
		_ = a.Send(target, "knock") // fails fast during the backoff; starts a dial after it
		return len(again()) >= 2
	}, wait, time.Millisecond)

	t.Run("the first failure is a warning and the later ones are debug lines with the count", func(t *testing.T) {
		require.Len(t, levelLines(logs.String(), "WARN", "dial to "+string(peer)+" failed"), 1)
		for i, line := range again()[:2] {
			require.Contains(t, line, fmt.Sprintf("%d failures in a row", i+2))
		}
		require.Positive(t, a.Network().Stats().Dropped["dial_failed"])
	})

	t.Run("the connection that ends the run is logged at info with the number of failed dials", func(t *testing.T) {
		b, err := node.Start(peer, gen.NodeOptions{Network: fastNet(testCookie), Log: gen.LogOptions{Level: gen.LogLevelError}})
		require.NoError(t, err)
		t.Cleanup(b.Stop)
		require.Eventually(t, func() bool {
			_ = a.Send(target, "knock")
			return len(a.Network().Nodes()) == 1
		}, wait, time.Millisecond)
		// One dial at a time: every failed one ended before the one that
		// worked (its line may be written a moment after).
		require.Eventually(t, func() bool {
			line := fmt.Sprintf("connected to %s (creation %d) after %d failed dials", peer, b.Creation(), 1+len(again()))
			return len(levelLines(logs.String(), "INFO", line)) == 1
		}, wait, time.Millisecond)
	})
}
