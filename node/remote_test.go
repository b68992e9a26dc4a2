package node_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

func TestRemoteSendAndCall(t *testing.T) {
	a, b := pair(t)
	server := newProbe()
	server.onCall = func(p *probe, from gen.PID, ref gen.Ref, request any) (any, error) {
		switch r := request.(type) {
		case ping:
			return pong{Seq: r.Seq}, nil
		case string:
			switch r {
			case "not allowed":
				return nil, gen.ErrNotAllowed
			case "custom":
				return nil, errors.New("custom failure")
			case "silent":
				return nil, nil
			}
		}
		return request, nil
	}
	serverPID, err := b.SpawnRegister("server", server.factory(), gen.ProcessOptions{})
	require.NoError(t, err)

	t.Run("messages to a remote PID arrive in order", func(t *testing.T) {
		for i := 0; i < 500; i++ {
			require.NoError(t, a.Send(serverPID, ping{Seq: i}))
		}
		for i := 0; i < 500; i++ {
			require.Equal(t, ping{Seq: i}, server.next(t))
		}
		require.Equal(t, []gen.Atom{b.Name()}, a.Network().Nodes())
	})
	t.Run("messages to two remote PIDs in turn each reach their own process", func(t *testing.T) {
		other := newProbe()
		otherPID := spawnProbe(t, b, other)
		for i := 0; i < 10; i++ {
			require.NoError(t, a.Send(serverPID, ping{Seq: i}))
			require.NoError(t, a.Send(otherPID, pong{Seq: i}))
		}
		for i := 0; i < 10; i++ {
			require.Equal(t, ping{Seq: i}, server.next(t))
			require.Equal(t, pong{Seq: i}, other.next(t))
		}
	})
	t.Run("a message to a remote process that ended since the last one is dropped and counted", func(t *testing.T) {
		gone := newProbe()
		gonePID := spawnProbe(t, b, gone)
		require.NoError(t, a.Send(gonePID, "first"))
		require.Equal(t, "first", gone.next(t))
		require.NoError(t, b.Kill(gonePID))
		require.Eventually(t, func() bool {
			_, err := b.Inspect(gonePID)
			return errors.Is(err, gen.ErrProcessUnknown)
		}, wait, time.Millisecond)
		before := b.Network().Stats().Dropped["unknown_process"]
		require.NoError(t, a.Send(gonePID, "second"))
		require.Eventually(t, func() bool {
			return b.Network().Stats().Dropped["unknown_process"] > before
		}, wait, time.Millisecond)
	})
	t.Run("a call after messages to a remote process is handled after them", func(t *testing.T) {
		ordered := newProbe()
		ordered.onCall = func(p *probe, from gen.PID, ref gen.Ref, request any) (any, error) {
			ordered.messages <- request
			return request, nil
		}
		orderedPID := spawnProbe(t, b, ordered)
		for i := 0; i < 200; i++ {
			require.NoError(t, a.Send(orderedPID, ping{Seq: i}))
		}
		_, err := a.Call(orderedPID, "call")
		require.NoError(t, err)
		for i := 0; i < 200; i++ {
			require.Equal(t, ping{Seq: i}, ordered.next(t))
		}
		require.Equal(t, "call", ordered.next(t))
	})
	t.Run("a burst to a full remote mailbox keeps what fits, in order, and drops and counts each of the rest", func(t *testing.T) {
		full := newProbe()
		inside, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		unblock := func() { once.Do(func() { close(release) }) }
		t.Cleanup(unblock) // a failing test does not leave the process blocked
		full.onMessage = func(p *probe, from gen.PID, message any) error {
			if message == "block" {
				close(inside)
				<-release
			}
			full.messages <- message
			return nil
		}
		fullPID, err := b.Spawn(full.factory(), gen.ProcessOptions{MailboxSize: 2})
		require.NoError(t, err)
		require.NoError(t, a.Send(fullPID, "block"))
		<-inside
		dropped := func(reason string) uint64 { return b.Network().Stats().Dropped[reason] }
		beforeFull, beforeUnknown := dropped("mailbox_full"), dropped("unknown_process")
		for i := 0; i < 7; i++ {
			require.NoError(t, a.Send(fullPID, ping{Seq: i}))
		}
		require.Eventually(t, func() bool {
			return dropped("mailbox_full") == beforeFull+5
		}, wait, time.Millisecond, "each message refused by the full mailbox is counted as mailbox_full")
		unblock()
		require.NoError(t, a.Send(fullPID, "after"))
		for _, want := range []any{"block", ping{Seq: 0}, ping{Seq: 1}, "after"} {
			require.Equal(t, want, full.next(t))
		}
		require.Equal(t, beforeFull+5, dropped("mailbox_full"))
		require.Equal(t, beforeUnknown, dropped("unknown_process"), "the process is known: a full mailbox is not an unknown process")
	})
	t.Run("a remote ProcessID reaches the registered process", func(t *testing.T) {
		require.NoError(t, a.Send(gen.ProcessID{Name: "server", Node: b.Name()}, "by name"))
		require.Equal(t, "by name", server.next(t))
	})
	t.Run("a remote call returns the answer", func(t *testing.T) {
		v, err := a.Call(serverPID, ping{Seq: 7})
		require.NoError(t, err)
		require.Equal(t, pong{Seq: 7}, v)
		v, err = a.Call(gen.ProcessID{Name: "server", Node: b.Name()}, "by name")
		require.NoError(t, err)
		require.Equal(t, "by name", v)
	})
	t.Run("a sentinel error from a remote handler keeps its identity", func(t *testing.T) {
		_, err := a.Call(serverPID, "not allowed")
		require.ErrorIs(t, err, gen.ErrNotAllowed)
	})
	t.Run("any other remote handler error arrives as its text", func(t *testing.T) {
		_, err := a.Call(serverPID, "custom")
		require.ErrorContains(t, err, "custom failure")
	})
	t.Run("a remote call to an unknown process fails with ErrProcessUnknown", func(t *testing.T) {
		_, err := a.Call(gen.PID{Node: b.Name(), ID: 987654, Creation: b.Creation()}, "x")
		require.ErrorIs(t, err, gen.ErrProcessUnknown)
		_, err = a.Call(gen.ProcessID{Name: "nobody", Node: b.Name()}, "x")
		require.ErrorIs(t, err, gen.ErrProcessUnknown)
	})
	t.Run("a PID of an earlier life of the remote node is unknown there", func(t *testing.T) {
		old := serverPID
		old.Creation--
		_, err := a.Call(old, "x")
		require.ErrorIs(t, err, gen.ErrProcessUnknown)
		before := b.Network().Stats().Dropped["unknown_process"]
		require.NoError(t, a.Send(old, "x"))
		require.Eventually(t, func() bool {
			return b.Network().Stats().Dropped["unknown_process"] > before
		}, wait, time.Millisecond)
	})
	t.Run("a remote call whose target terminates fails with ErrProcessTerminated", func(t *testing.T) {
		victim := newProbe()
		victim.onCall = func(p *probe, from gen.PID, ref gen.Ref, request any) (any, error) {
			p.cfg.messages <- request
			return nil, nil
		}
		victimPID := spawnProbe(t, b, victim)
		result := make(chan error, 1)
		go func() {
			_, err := a.Call(victimPID, "wait for me")
			result <- err
		}()
		require.Equal(t, "wait for me", victim.next(t))
		require.NoError(t, b.Kill(victimPID))
		require.ErrorIs(t, <-result, gen.ErrProcessTerminated)
	})
	t.Run("a remote inspect returns the map", func(t *testing.T) {
		insp := newProbe()
		insp.inspect = map[string]string{"k": "v"}
		m, err := a.Inspect(spawnProbe(t, b, insp), "k")
		require.NoError(t, err)
		require.Equal(t, map[string]string{"k": "v"}, m)
	})
	t.Run("an unregistered type fails with ErrUnregistered and nothing is sent", func(t *testing.T) {
		type secret struct{ X int }
		require.False(t, a.Network().IsRegistered(secret{}))
		require.True(t, a.Network().IsRegistered(ping{}))
		err := a.Send(serverPID, secret{X: 1})
		require.ErrorIs(t, err, gen.ErrUnregistered)
		_, err = a.Call(serverPID, secret{X: 1})
		require.ErrorIs(t, err, gen.ErrUnregistered)
		require.NoError(t, a.Send(serverPID, "after the refused one"))
		require.Equal(t, "after the refused one", server.next(t))
	})
	t.Run("a type the receiver does not know is dropped, counted, and the connection lives", func(t *testing.T) {
		type onlyOnA struct{ X int }
		require.NoError(t, a.Network().RegisterTypes([]any{onlyOnA{}}))
		before := b.Network().Stats().Dropped["unknown_type"]
		require.NoError(t, a.Send(serverPID, onlyOnA{X: 1}))
		_, err := a.Call(serverPID, onlyOnA{X: 2})
		require.ErrorIs(t, err, gen.ErrUnregistered)
		require.NoError(t, a.Send(serverPID, "still connected"))
		require.Equal(t, "still connected", server.next(t))
		require.Equal(t, before+2, b.Network().Stats().Dropped["unknown_type"])
	})
}

func TestRemoteRouting(t *testing.T) {
	a, _ := startNet(t, "routes@127.0.0.1", fastNet(testCookie))

	t.Run("a node without a route fails with ErrNoRoute", func(t *testing.T) {
		err := a.Send(gen.PID{Node: "nowhere@somehost", ID: 1001, Creation: 1}, "x")
		require.ErrorIs(t, err, gen.ErrNoRoute)
	})
	t.Run("a send to a node nobody listens for is accepted, a call fails with ErrNoConnection, then sends back off", func(t *testing.T) {
		slow, _ := startNet(t, "backs-off@127.0.0.1", patientNet())
		dead := gen.PID{Node: gen.Atom("dead@" + freeAddr(t)), ID: 1001, Creation: 1}
		require.NoError(t, slow.Send(dead, "x"))
		_, err := slow.Call(dead, "x")
		require.ErrorIs(t, err, gen.ErrNoConnection)
		require.ErrorIs(t, slow.Send(dead, "x"), gen.ErrNoConnection)
	})
	t.Run("a name with a port is dialled directly", func(t *testing.T) {
		b, _ := startNet(t, gen.Atom("direct@"+freeAddr(t)), fastNet(testCookie))
		c := newProbe()
		pid := spawnProbe(t, b, c)
		require.NoError(t, a.Send(pid, "direct"))
		require.Equal(t, "direct", c.next(t))
	})
}

func TestRemoteMonitorsAndLinks(t *testing.T) {
	a, b := pair(t)
	failure := errors.New("remote failure")

	t.Run("a remote monitor receives the real reason", func(t *testing.T) {
		target := newProbe()
		target.onMessage = func(p *probe, from gen.PID, message any) error { return failure }
		targetPID := spawnProbe(t, b, target)
		w := newProbe()
		w.onInit = func(p *probe, args ...any) error { return p.Monitor(targetPID) }
		spawnProbe(t, a, w)
		require.NoError(t, a.Send(targetPID, "die"))
		down := w.next(t).(gen.MessageDownPID)
		require.Equal(t, targetPID, down.PID)
		require.ErrorContains(t, down.Reason, "remote failure")
	})
	t.Run("a remote monitor of a registered name receives MessageDownProcessID", func(t *testing.T) {
		target := newProbe()
		targetPID, err := b.SpawnRegister("named", target.factory(), gen.ProcessOptions{})
		require.NoError(t, err)
		w := newProbe()
		pid := gen.ProcessID{Name: "named", Node: b.Name()}
		w.onInit = func(p *probe, args ...any) error { return p.Monitor(pid) }
		spawnProbe(t, a, w)
		watchRecorded(t, a, targetPID)
		require.NoError(t, b.Kill(targetPID))
		down := w.next(t).(gen.MessageDownProcessID)
		require.Equal(t, pid, down.ProcessID)
		require.ErrorIs(t, down.Reason, gen.TerminateReasonKill)
	})
	t.Run("monitoring or linking an unknown remote process reports ErrProcessUnknown without blocking", func(t *testing.T) {
		w := newProbe()
		ghost := gen.PID{Node: b.Name(), ID: 999999, Creation: b.Creation()}
		w.onInit = func(p *probe, args ...any) error { return p.Monitor(ghost) }
		spawnProbe(t, a, w)
		down := w.next(t).(gen.MessageDownPID)
		require.Equal(t, ghost, down.PID)
		require.ErrorIs(t, down.Reason, gen.ErrProcessUnknown)

		l := newProbe()
		l.onInit = func(p *probe, args ...any) error { return p.Link(gen.ProcessID{Name: "ghost", Node: b.Name()}) }
		spawnProbe(t, a, l)
		require.ErrorIs(t, l.reason(t), gen.ErrProcessUnknown)
	})
	t.Run("a remote link with trap exit delivers MessageExitPID", func(t *testing.T) {
		target := newProbe()
		targetPID := spawnProbe(t, b, target)
		w := newProbe()
		w.onInit = func(p *probe, args ...any) error {
			require.NoError(t, p.SetTrapExit(true))
			return p.Link(targetPID)
		}
		spawnProbe(t, a, w)
		watchRecorded(t, a, targetPID)
		require.NoError(t, b.SendExit(targetPID, gen.TerminateReasonShutdown))
		exit := w.next(t).(gen.MessageExitPID)
		require.Equal(t, targetPID, exit.PID)
		require.ErrorIs(t, exit.Reason, gen.TerminateReasonShutdown)
	})
	t.Run("a remote link without trap exit terminates the linked process", func(t *testing.T) {
		target := newProbe()
		targetPID := spawnProbe(t, b, target)
		w := newProbe()
		w.onInit = func(p *probe, args ...any) error { return p.Link(targetPID) }
		spawnProbe(t, a, w)
		watchRecorded(t, a, targetPID)
		require.NoError(t, b.Kill(targetPID))
		require.ErrorIs(t, w.reason(t), gen.TerminateReasonKill)
	})
	t.Run("a remote exit signal reaches the process", func(t *testing.T) {
		target := newProbe()
		targetPID := spawnProbe(t, b, target)
		require.NoError(t, a.SendExit(targetPID, failure))
		require.ErrorContains(t, target.reason(t), "remote failure")
	})
	t.Run("after a remote Demonitor no down arrives", func(t *testing.T) {
		target := newProbe()
		targetPID := spawnProbe(t, b, target)
		w := newProbe()
		w.onInit = func(p *probe, args ...any) error {
			if err := p.Monitor(targetPID); err != nil {
				return err
			}
			return p.Demonitor(targetPID)
		}
		wPID := spawnProbe(t, a, w)
		require.NoError(t, b.Kill(targetPID))
		require.ErrorIs(t, target.reason(t), gen.TerminateReasonKill)
		require.NoError(t, b.Send(wPID, "next"))
		require.Equal(t, "next", w.next(t))
	})
}

func TestConnectionLoss(t *testing.T) {
	a, b := pair(t)
	target := newProbe()
	target.onCall = func(p *probe, from gen.PID, ref gen.Ref, request any) (any, error) {
		p.cfg.messages <- request
		return nil, nil
	}
	targetPID := spawnProbe(t, b, target)
	w := newProbe()
	w.onInit = func(p *probe, args ...any) error {
		if err := p.Monitor(targetPID); err != nil {
			return err
		}
		return p.Monitor(b.Name())
	}
	spawnProbe(t, a, w)
	result := make(chan error, 1)
	go func() {
		_, err := a.Call(targetPID, "pending")
		result <- err
	}()
	require.Equal(t, "pending", target.next(t))

	t.Run("a lost connection turns into ErrNoConnection downs and a node down", func(t *testing.T) {
		require.NoError(t, a.Network().Disconnect(b.Name()))
		got := w.byType(t, 2)
		down := got["gen.MessageDownPID"].(gen.MessageDownPID)
		require.ErrorIs(t, down.Reason, gen.ErrNoConnection)
		require.Equal(t, gen.MessageDownNode{Name: b.Name()}, got["gen.MessageDownNode"])
	})
	t.Run("a pending call returns ErrNoConnection at once", func(t *testing.T) {
		require.ErrorIs(t, <-result, gen.ErrNoConnection)
	})
	t.Run("the next send dials again", func(t *testing.T) {
		require.Eventually(t, func() bool {
			return a.Send(targetPID, "again") == nil
		}, wait, 10*time.Millisecond)
		assert.Equal(t, "again", target.next(t))
	})
}

func TestRemoteNodeStop(t *testing.T) {
	a, _ := startNet(t, "stays@127.0.0.1", fastNet(testCookie))
	b, _ := startNet(t, "leaves@127.0.0.1", fastNet(testCookie))
	route(t, a, b)
	target := newProbe()
	targetPID := spawnProbe(t, b, target)
	w := newProbe()
	w.onInit = func(p *probe, args ...any) error { return p.Monitor(targetPID) }
	spawnProbe(t, a, w)
	watchRecorded(t, a, targetPID)
	require.Eventually(t, func() bool { return len(b.Network().Nodes()) == 1 }, wait, time.Millisecond)

	t.Run("a stopping node tells remote monitors the real reason, shutdown", func(t *testing.T) {
		b.Stop()
		down := w.next(t).(gen.MessageDownPID)
		require.ErrorIs(t, down.Reason, gen.TerminateReasonShutdown)
	})
}

// watchRecorded returns once the target's node has recorded every watch that
// node from sent it so far: watches are one-way frames, and a request on the
// same connection is handled after them.
func watchRecorded(t *testing.T, from gen.Node, target gen.PID) {
	t.Helper()
	_, err := from.Inspect(target)
	require.NoError(t, err)
}
