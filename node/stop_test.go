package node_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/regent-go/regent/gen"
)

func TestStopLeavesNothingBehind(t *testing.T) {
	t.Run("after Stop of two connected nodes no goroutine of theirs remains", func(t *testing.T) {
		a, _ := startNet(t, "leak-a@127.0.0.1", fastNet(testCookie))
		b, _ := startNet(t, "leak-b@127.0.0.1", fastNet(testCookie))
		route(t, a, b)
		c := newProbe()
		pid := spawnProbe(t, b, c)
		w := newProbe()
		w.onInit = func(p *probe, args ...any) error {
			if _, err := p.SendAfter(p.PID(), "never", wait); err != nil {
				return err
			}
			return p.Monitor(pid)
		}
		spawnProbe(t, a, w)
		v, err := a.Call(pid, "traffic")
		require.NoError(t, err)
		require.Equal(t, "traffic", v)
		a.Stop()
		b.Stop()
		goleak.VerifyNone(t)
	})
}

func TestStopForce(t *testing.T) {
	a, _ := startNet(t, "force-a@127.0.0.1", fastNet(testCookie))
	b, _ := startNet(t, "force-b@127.0.0.1", fastNet(testCookie))
	route(t, a, b)
	release := make(chan struct{})
	defer close(release)
	stuck := newProbe()
	stuck.onMessage = func(p *probe, from gen.PID, message any) error {
		p.cfg.messages <- message
		<-release
		return nil
	}
	pid := spawnProbe(t, b, stuck)
	w := newProbe()
	w.onInit = func(p *probe, args ...any) error { return p.Monitor(pid) }
	spawnProbe(t, a, w)
	require.NoError(t, a.Send(pid, "block"))
	require.Equal(t, "block", stuck.next(t))

	t.Run("StopForce returns while a callback is still running and peers see ErrNoConnection", func(t *testing.T) {
		b.StopForce()
		require.False(t, b.IsAlive())
		down := w.next(t).(gen.MessageDownPID)
		require.ErrorIs(t, down.Reason, gen.ErrNoConnection)
	})
}

func TestStopForceTellsItsOwnProcessesNothing(t *testing.T) {
	t.Run("a process of a force-stopped node is not handed downs of the peers the stop cut off: it ends instead", func(t *testing.T) {
		a, _ := startNet(t, "mute-a@127.0.0.1", fastNet(testCookie))
		b, _ := startNet(t, "mute-b@127.0.0.1", fastNet(testCookie))
		route(t, b, a)
		remote := spawnProbe(t, a, newProbe())
		release := make(chan struct{})
		busy := newProbe()
		busy.onInit = func(p *probe, args ...any) error { return p.Monitor(remote) }
		busy.onMessage = func(p *probe, from gen.PID, message any) error {
			p.cfg.messages <- message
			if message == "block" {
				<-release
			}
			return nil
		}
		pid := spawnProbe(t, b, busy)
		require.NoError(t, b.Send(pid, "block"))
		require.Equal(t, "block", busy.next(t))

		// The stop cuts the connection to a while the process is busy:
		// a down queued for it then would be handled once it is released,
		// before it sees that it must end.
		b.StopForce()
		close(release)
		select {
		case reason := <-busy.terminated:
			require.ErrorIs(t, reason, gen.TerminateReasonShutdown)
		case <-time.After(wait):
			t.Fatal("the process of the stopped node did not end")
		}
		select {
		case m := <-busy.messages:
			t.Fatalf("the process of the stopped node handled %#v", m)
		default:
		}
		a.Stop()
	})
}
