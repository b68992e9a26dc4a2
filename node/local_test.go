package node_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

func TestLocalSend(t *testing.T) {
	n, _ := startLocal(t, "send@localhost")
	c := newProbe()
	pid, err := n.SpawnRegister("inbox", c.factory(), gen.ProcessOptions{})
	require.NoError(t, err)

	t.Run("messages to a PID arrive in the order they were sent", func(t *testing.T) {
		for i := 0; i < 100; i++ {
			require.NoError(t, n.Send(pid, i))
		}
		for i := 0; i < 100; i++ {
			require.Equal(t, i, c.next(t))
		}
	})
	t.Run("a ProcessID and a registered name reach the same process", func(t *testing.T) {
		require.NoError(t, n.Send(gen.ProcessID{Name: "inbox", Node: n.Name()}, "by process id"))
		require.Equal(t, "by process id", c.next(t))
		require.NoError(t, n.Send(gen.ProcessID{Name: "inbox"}, "by process id without node"))
		require.Equal(t, "by process id without node", c.next(t))
		require.NoError(t, n.Send(gen.Atom("inbox"), "by name"))
		require.Equal(t, "by name", c.next(t))
	})
	t.Run("sending to an unknown process or name fails with ErrProcessUnknown", func(t *testing.T) {
		err := n.Send(gen.PID{Node: n.Name(), ID: 999999, Creation: n.Creation()}, "x")
		require.ErrorIs(t, err, gen.ErrProcessUnknown)
		require.ErrorIs(t, n.Send(gen.Atom("nobody"), "x"), gen.ErrProcessUnknown)
	})
	t.Run("a PID of an earlier life of the node is unknown", func(t *testing.T) {
		old := pid
		old.Creation--
		require.ErrorIs(t, n.Send(old, "x"), gen.ErrProcessUnknown)
	})
	t.Run("a destination of another type is refused", func(t *testing.T) {
		require.ErrorIs(t, n.Send("inbox", "x"), gen.ErrIncorrect)
	})
	t.Run("a remote destination without network fails with ErrNoConnection", func(t *testing.T) {
		err := n.Send(gen.PID{Node: "other@localhost", ID: 1001, Creation: 1}, "x")
		require.ErrorIs(t, err, gen.ErrNoConnection)
	})
	t.Run("a registered name cannot be taken twice", func(t *testing.T) {
		_, err := n.SpawnRegister("inbox", c.factory(), gen.ProcessOptions{})
		require.ErrorIs(t, err, gen.ErrTaken)
	})
}

func TestMailboxSize(t *testing.T) {
	n, _ := startLocal(t, "mailbox@localhost")
	release := make(chan struct{})
	c := newProbe()
	c.onMessage = func(p *probe, from gen.PID, message any) error {
		<-release
		return nil
	}
	pid, err := n.Spawn(c.factory(), gen.ProcessOptions{MailboxSize: 2})
	require.NoError(t, err)
	defer close(release)

	t.Run("a send to a full mailbox fails with ErrProcessMailboxFull", func(t *testing.T) {
		require.NoError(t, n.Send(pid, 1)) // taken by the blocked callback
		require.Eventually(t, func() bool {
			info, err := n.ProcessInfo(pid)
			return err == nil && info.MailboxLen == 0 && info.State == gen.ProcessStateRunning
		}, wait, time.Millisecond)
		require.NoError(t, n.Send(pid, 2))
		require.NoError(t, n.Send(pid, 3))
		require.ErrorIs(t, n.Send(pid, 4), gen.ErrProcessMailboxFull)
	})
}

// A process's own timers pass its mailbox bound: the bound guards it against
// others, and a timer lost to it would never be armed again.
func TestATimerAProcessSetsForItselfPassesItsFullMailbox(t *testing.T) {
	n, _ := startLocal(t, "owntimer@localhost")
	release := make(chan struct{})
	self := make(chan gen.Process, 1)
	c := newProbe()
	c.onInit = func(p *probe, _ ...any) error { self <- p; return nil }
	c.onMessage = func(p *probe, from gen.PID, message any) error {
		if message == "hold" {
			<-release
		}
		c.messages <- message
		return nil
	}
	pid, err := n.Spawn(c.factory(), gen.ProcessOptions{MailboxSize: 1})
	require.NoError(t, err)
	p := <-self
	require.NoError(t, n.Send(pid, "hold"))
	require.Eventually(t, func() bool {
		info, err := n.ProcessInfo(pid)
		return err == nil && info.MailboxLen == 0
	}, wait, time.Millisecond)
	require.NoError(t, n.Send(pid, "fills it"))
	require.ErrorIs(t, n.Send(pid, "refused"), gen.ErrProcessMailboxFull, "others are refused")
	_, err = p.SendAfter(pid, "own timer", time.Millisecond)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		info, err := n.ProcessInfo(pid)
		return err == nil && info.MailboxLen == 2
	}, wait, time.Millisecond, "the timer joined the full mailbox")
	close(release)
	for _, want := range []string{"hold", "fills it", "own timer"} {
		require.Equal(t, want, c.next(t))
	}
}

func TestLocalCall(t *testing.T) {
	n, _ := startLocal(t, "call@localhost")
	later := make(chan func(), 1)
	c := newProbe()
	c.onCall = func(p *probe, from gen.PID, ref gen.Ref, request any) (any, error) {
		switch request {
		case "fail":
			return nil, gen.ErrNotAllowed
		case "die":
			return nil, gen.TerminateReasonNormal
		case "later":
			later <- func() { _ = p.SendResponse(from, ref, "answered later") }
			return nil, nil
		case "silent":
			return nil, nil
		}
		return fmt.Sprintf("echo %v", request), nil
	}
	pid := spawnProbe(t, n, c)

	t.Run("a call returns the handler's result", func(t *testing.T) {
		v, err := n.Call(pid, "hello")
		require.NoError(t, err)
		require.Equal(t, "echo hello", v)
	})
	t.Run("a handler error that is not a terminate reason goes back to the caller and the actor lives", func(t *testing.T) {
		_, err := n.Call(pid, "fail")
		require.ErrorIs(t, err, gen.ErrNotAllowed)
		v, err := n.Call(pid, "still there?")
		require.NoError(t, err)
		require.Equal(t, "echo still there?", v)
	})
	t.Run("a nil result lets the actor answer later with SendResponse", func(t *testing.T) {
		result := make(chan any, 1)
		go func() {
			v, err := n.Call(pid, "later")
			if err != nil {
				result <- err
				return
			}
			result <- v
		}()
		respond := <-later
		respond()
		require.Equal(t, "answered later", <-result)
	})
	t.Run("a call to an unknown process fails with ErrProcessUnknown at once", func(t *testing.T) {
		_, err := n.Call(gen.PID{Node: n.Name(), ID: 424242, Creation: n.Creation()}, "x")
		require.ErrorIs(t, err, gen.ErrProcessUnknown)
		_, err = n.Call(gen.Atom("nobody"), "x")
		require.ErrorIs(t, err, gen.ErrProcessUnknown)
	})
	t.Run("a call whose target terminates while it waits fails with ErrProcessTerminated", func(t *testing.T) {
		other := newProbe()
		other.onCall = func(p *probe, from gen.PID, ref gen.Ref, request any) (any, error) { return nil, nil }
		victim := spawnProbe(t, n, other)
		result := make(chan error, 1)
		go func() {
			_, err := n.Call(victim, "never answered")
			result <- err
		}()
		require.Eventually(t, func() bool {
			info, err := n.ProcessInfo(victim)
			return err == nil && info.MessagesIn == 1 && info.MailboxLen == 0
		}, wait, time.Millisecond)
		require.NoError(t, n.Kill(victim))
		require.ErrorIs(t, <-result, gen.ErrProcessTerminated)
	})
	t.Run("a handler returning a terminate reason ends the actor and the caller gets ErrProcessTerminated", func(t *testing.T) {
		_, err := n.Call(pid, "die")
		require.ErrorIs(t, err, gen.ErrProcessTerminated)
		require.ErrorIs(t, c.reason(t), gen.TerminateReasonNormal)
	})
}

func TestCallBetweenProcesses(t *testing.T) {
	n, _ := startLocal(t, "call2@localhost")
	server := newProbe()
	serverPID := spawnProbe(t, n, server)
	client := newProbe()
	client.onMessage = func(p *probe, from gen.PID, message any) error {
		switch message {
		case "self":
			_, err := p.Call(p.PID(), "x")
			p.cfg.messages <- err
		case "timeout":
			v, err := p.CallWithTimeout(serverPID, "silent", 0)
			p.cfg.messages <- []any{v, err}
		default:
			v, err := p.CallWithTimeout(serverPID, message, 1)
			if err != nil {
				p.cfg.messages <- err
				return nil
			}
			p.cfg.messages <- v
		}
		return nil
	}
	clientPID := spawnProbe(t, n, client)

	t.Run("a process calls another and gets its answer", func(t *testing.T) {
		require.NoError(t, n.Send(clientPID, "ping"))
		require.Equal(t, "ping", client.next(t))
	})
	t.Run("a process calling itself is refused instead of deadlocking", func(t *testing.T) {
		require.NoError(t, n.Send(clientPID, "self"))
		require.ErrorIs(t, client.next(t).(error), gen.ErrNotAllowed)
	})
	t.Run("the caller is in the WaitResponse state while it waits", func(t *testing.T) {
		server.onCall = func(p *probe, from gen.PID, ref gen.Ref, request any) (any, error) {
			if request == "slow" {
				require.Eventually(t, func() bool {
					info, err := n.ProcessInfo(clientPID)
					return err == nil && info.State == gen.ProcessStateWaitResponse
				}, wait, time.Millisecond)
			}
			return request, nil
		}
		require.NoError(t, n.Send(clientPID, "slow"))
		require.Equal(t, "slow", client.next(t))
	})
}

func TestKillWhileCalling(t *testing.T) {
	n, _ := startLocal(t, "killcall@localhost")
	caller := silentCallers(t, n)
	callerPID := spawnProbe(t, n, caller)

	t.Run("Kill ends a process waiting in a Call without waiting for the Call's timeout", func(t *testing.T) {
		require.NoError(t, n.Send(callerPID, "go"))
		require.Eventually(t, func() bool {
			info, err := n.ProcessInfo(callerPID)
			return err == nil && info.State == gen.ProcessStateWaitResponse
		}, wait, time.Millisecond)
		require.NoError(t, n.Kill(callerPID))
		require.ErrorIs(t, caller.next(t).(error), gen.ErrProcessTerminated)
		require.ErrorIs(t, caller.reason(t), gen.TerminateReasonKill)
	})
}

func TestSendAfter(t *testing.T) {
	n, _ := startLocal(t, "timer@localhost")
	c := newProbe()
	results := make(chan bool, 1)
	var cancelFired gen.CancelFunc
	c.onMessage = func(p *probe, from gen.PID, message any) error {
		switch message {
		case "arm and cancel":
			cancel, err := p.SendAfter(p.PID(), "cancelled", time.Hour)
			if err != nil {
				return err
			}
			results <- cancel()
			results <- cancel()
		case "arm":
			cancel, err := p.SendAfter(p.PID(), "fired", time.Millisecond)
			cancelFired = cancel
			return err
		case "fired":
			results <- cancelFired()
			p.cfg.messages <- message
		default:
			p.cfg.messages <- message
		}
		return nil
	}
	pid := spawnProbe(t, n, c)

	t.Run("a cancel before the delay reports true, a second cancel reports false", func(t *testing.T) {
		require.NoError(t, n.Send(pid, "arm and cancel"))
		require.True(t, <-results)
		require.False(t, <-results)
	})
	t.Run("the message arrives after the delay and a late cancel reports false", func(t *testing.T) {
		require.NoError(t, n.Send(pid, "arm"))
		require.Equal(t, "fired", c.next(t))
		require.False(t, <-results)
	})
}

func TestLinks(t *testing.T) {
	n, _ := startLocal(t, "links@localhost")
	failure := errors.New("boom")

	t.Run("a linked process terminates with the reason of its target", func(t *testing.T) {
		target := newProbe()
		target.onMessage = func(p *probe, from gen.PID, message any) error { return failure }
		targetPID := spawnProbe(t, n, target)
		linked := newProbe()
		linked.onInit = func(p *probe, args ...any) error { return p.Link(targetPID) }
		spawnProbe(t, n, linked)
		require.NoError(t, n.Send(targetPID, "die"))
		require.ErrorIs(t, target.reason(t), failure)
		require.ErrorIs(t, linked.reason(t), failure)
	})
	t.Run("a process trapping exits gets the exit as a message and lives", func(t *testing.T) {
		target := newProbe()
		targetPID := spawnProbe(t, n, target)
		trapper := newProbe()
		trapper.onInit = func(p *probe, args ...any) error {
			require.NoError(t, p.SetTrapExit(true))
			return p.Link(targetPID)
		}
		trapperPID := spawnProbe(t, n, trapper)
		require.NoError(t, n.SendExit(targetPID, failure))
		require.ErrorIs(t, target.reason(t), failure)
		exit, ok := trapper.next(t).(gen.MessageExitPID)
		require.True(t, ok)
		require.Equal(t, targetPID, exit.PID)
		require.ErrorIs(t, exit.Reason, failure)
		info, err := n.ProcessInfo(trapperPID)
		require.NoError(t, err)
		require.True(t, info.TrapExit)
	})
	t.Run("an exit signal to a trapping process arrives as a message", func(t *testing.T) {
		trapper := newProbe()
		trapper.onInit = func(p *probe, args ...any) error { return p.SetTrapExit(true) }
		pid := spawnProbe(t, n, trapper)
		require.NoError(t, n.SendExit(pid, failure))
		exit := trapper.next(t).(gen.MessageExitPID)
		require.ErrorIs(t, exit.Reason, failure)
	})
	t.Run("Kill is never trapped", func(t *testing.T) {
		trapper := newProbe()
		trapper.onInit = func(p *probe, args ...any) error { return p.SetTrapExit(true) }
		pid := spawnProbe(t, n, trapper)
		require.NoError(t, n.Kill(pid))
		require.ErrorIs(t, trapper.reason(t), gen.TerminateReasonKill)
	})
	t.Run("after Unlink the end of the target no longer arrives", func(t *testing.T) {
		target := newProbe()
		targetPID := spawnProbe(t, n, target)
		linked := newProbe()
		linked.onInit = func(p *probe, args ...any) error {
			if err := p.Link(targetPID); err != nil {
				return err
			}
			return p.Unlink(targetPID)
		}
		linkedPID := spawnProbe(t, n, linked)
		require.NoError(t, n.Kill(targetPID))
		require.ErrorIs(t, target.reason(t), gen.TerminateReasonKill)
		require.NoError(t, n.Send(linkedPID, "alive"))
		require.Equal(t, "alive", linked.next(t))
	})
	t.Run("linking to an unknown process fails with ErrProcessUnknown", func(t *testing.T) {
		c := newProbe()
		c.onInit = func(p *probe, args ...any) error {
			return p.Link(gen.PID{Node: n.Name(), ID: 777777, Creation: n.Creation()})
		}
		_, err := n.Spawn(c.factory(), gen.ProcessOptions{})
		require.ErrorIs(t, err, gen.ErrProcessUnknown)
	})
	t.Run("LinkChild makes the parent receive its child's exit", func(t *testing.T) {
		child := newProbe()
		childPID := make(chan gen.PID, 1)
		parent := newProbe()
		parent.onInit = func(p *probe, args ...any) error {
			require.NoError(t, p.SetTrapExit(true))
			pid, err := p.Spawn(child.factory(), gen.ProcessOptions{LinkChild: true})
			childPID <- pid
			return err
		}
		spawnProbe(t, n, parent)
		pid := <-childPID
		require.NoError(t, n.Kill(pid))
		exit := parent.next(t).(gen.MessageExitPID)
		require.Equal(t, pid, exit.PID)
		require.ErrorIs(t, exit.Reason, gen.TerminateReasonKill)
	})
}

func TestMonitors(t *testing.T) {
	n, _ := startLocal(t, "monitors@localhost")
	failure := errors.New("monitored failure")

	t.Run("a monitor receives MessageDownPID with the real reason", func(t *testing.T) {
		target := newProbe()
		target.onMessage = func(p *probe, from gen.PID, message any) error { return failure }
		targetPID := spawnProbe(t, n, target)
		watcher := newProbe()
		watcher.onInit = func(p *probe, args ...any) error { return p.Monitor(targetPID) }
		spawnProbe(t, n, watcher)
		require.NoError(t, n.Send(targetPID, "die"))
		down := watcher.next(t).(gen.MessageDownPID)
		require.Equal(t, targetPID, down.PID)
		require.ErrorIs(t, down.Reason, failure)
	})
	t.Run("a monitor of a registered name receives MessageDownProcessID", func(t *testing.T) {
		target := newProbe()
		targetPID, err := n.SpawnRegister("watched", target.factory(), gen.ProcessOptions{})
		require.NoError(t, err)
		watcher := newProbe()
		watcher.onInit = func(p *probe, args ...any) error { return p.Monitor(gen.ProcessID{Name: "watched"}) }
		spawnProbe(t, n, watcher)
		require.NoError(t, n.Kill(targetPID))
		down := watcher.next(t).(gen.MessageDownProcessID)
		require.Equal(t, gen.ProcessID{Name: "watched", Node: n.Name()}, down.ProcessID)
		require.ErrorIs(t, down.Reason, gen.TerminateReasonKill)
	})
	t.Run("after Demonitor no down message arrives", func(t *testing.T) {
		target := newProbe()
		targetPID := spawnProbe(t, n, target)
		watcher := newProbe()
		watcher.onInit = func(p *probe, args ...any) error {
			if err := p.Monitor(targetPID); err != nil {
				return err
			}
			return p.Demonitor(targetPID)
		}
		watcherPID := spawnProbe(t, n, watcher)
		require.NoError(t, n.Kill(targetPID))
		require.ErrorIs(t, target.reason(t), gen.TerminateReasonKill)
		require.NoError(t, n.Send(watcherPID, "next"))
		require.Equal(t, "next", watcher.next(t))
	})
	t.Run("monitoring an unknown process fails with ErrProcessUnknown", func(t *testing.T) {
		c := newProbe()
		c.onInit = func(p *probe, args ...any) error { return p.Monitor(gen.ProcessID{Name: "ghost"}) }
		_, err := n.Spawn(c.factory(), gen.ProcessOptions{})
		require.ErrorIs(t, err, gen.ErrProcessUnknown)
	})
	t.Run("monitoring a node without network fails with ErrNoConnection", func(t *testing.T) {
		c := newProbe()
		c.onInit = func(p *probe, args ...any) error { return p.Monitor(gen.Atom("far@localhost")) }
		_, err := n.Spawn(c.factory(), gen.ProcessOptions{})
		require.ErrorIs(t, err, gen.ErrNoConnection)
	})
}

func TestPanic(t *testing.T) {
	n, logs := startLocal(t, "panic@localhost")
	c := newProbe()
	c.onMessage = func(p *probe, from gen.PID, message any) error { panic("callback exploded") }
	pid := spawnProbe(t, n, c)
	bystander := newProbe()
	bystanderPID := spawnProbe(t, n, bystander)

	t.Run("a panic terminates only that process with TerminateReasonPanic", func(t *testing.T) {
		require.NoError(t, n.Send(pid, "explode"))
		require.ErrorIs(t, c.reason(t), gen.TerminateReasonPanic)
		require.NoError(t, n.Send(bystanderPID, "still here"))
		require.Equal(t, "still here", bystander.next(t))
		_, err := n.ProcessInfo(pid)
		require.ErrorIs(t, err, gen.ErrProcessUnknown)
	})
	t.Run("the panic is logged with its stack", func(t *testing.T) {
		out := logs.String()
		assert.Contains(t, out, "callback exploded")
		assert.Contains(t, out, "goroutine")
		assert.Contains(t, out, "level=ERROR")
	})
	t.Run("a panic in Init fails the spawn", func(t *testing.T) {
		bad := newProbe()
		bad.onInit = func(p *probe, args ...any) error { panic("init exploded") }
		_, err := n.Spawn(bad.factory(), gen.ProcessOptions{})
		require.ErrorIs(t, err, gen.TerminateReasonPanic)
	})
}

func TestInspectAndInfo(t *testing.T) {
	n, _ := startLocal(t, "inspect@localhost")
	c := newProbe()
	c.inspect = map[string]string{"role": "tester"}
	pid, err := n.SpawnRegister("inspected", c.factory(), gen.ProcessOptions{})
	require.NoError(t, err)

	t.Run("Inspect returns the actor's inspection map", func(t *testing.T) {
		m, err := n.Inspect(pid)
		require.NoError(t, err)
		require.Equal(t, map[string]string{"role": "tester"}, m)
	})
	t.Run("an actor without inspection answers an empty map", func(t *testing.T) {
		plain := newProbe()
		m, err := n.Inspect(spawnProbe(t, n, plain), "anything")
		require.NoError(t, err)
		require.Empty(t, m)
	})
	t.Run("Inspect of an unknown process fails with ErrProcessUnknown", func(t *testing.T) {
		_, err := n.Inspect(gen.PID{Node: n.Name(), ID: 55555, Creation: n.Creation()})
		require.ErrorIs(t, err, gen.ErrProcessUnknown)
	})
	t.Run("ProcessInfo names the behavior type and the registered name", func(t *testing.T) {
		info, err := n.ProcessInfo(pid)
		require.NoError(t, err)
		require.Equal(t, "*node_test.probe", info.Behavior)
		require.Equal(t, gen.Atom("inspected"), info.Name)
		require.Eventually(t, func() bool {
			info, err := n.ProcessInfo(pid)
			return err == nil && info.State == gen.ProcessStateSleep
		}, wait, time.Millisecond, "an idle process sleeps")
		list, err := n.ProcessList()
		require.NoError(t, err)
		require.Contains(t, list, pid)
	})
}

func TestIdleProcessesHoldNoGoroutine(t *testing.T) {
	n, _ := startLocal(t, "idle@localhost")
	before := runtime.NumGoroutine()
	c := newProbe()
	for i := 0; i < 2000; i++ {
		pid := spawnProbe(t, n, c)
		require.NoError(t, n.Send(pid, i))
	}
	for i := 0; i < 2000; i++ {
		c.next(t)
	}
	require.Eventually(t, func() bool {
		return runtime.NumGoroutine() < before+50
	}, wait, 5*time.Millisecond, "2000 idle processes should not hold 2000 goroutines")
}

func TestStop(t *testing.T) {
	n, _ := startLocal(t, "stop@localhost")
	var probes []*probeConfig
	for i := 0; i < 10; i++ {
		c := newProbe()
		c.onInit = func(p *probe, args ...any) error { return p.SetTrapExit(true) }
		spawnProbe(t, n, c)
		probes = append(probes, c)
	}
	blocked := newProbe()
	blocked.onMessage = func(p *probe, from gen.PID, message any) error {
		_, err := p.Call(gen.Atom("never-registered-yet"), "x")
		p.cfg.messages <- err
		return nil
	}
	spawnProbe(t, n, blocked)

	t.Run("Stop terminates every process with TerminateReasonShutdown, trapping or not", func(t *testing.T) {
		n.Stop()
		for _, c := range probes {
			require.ErrorIs(t, c.reason(t), gen.TerminateReasonShutdown)
		}
		require.False(t, n.IsAlive())
		require.NoError(t, n.WaitWithTimeout(time.Second))
	})
	t.Run("a stopped node refuses new processes", func(t *testing.T) {
		_, err := n.Spawn(newProbe().factory(), gen.ProcessOptions{})
		require.ErrorIs(t, err, gen.ErrNodeTerminated)
	})
}

func TestNodeNames(t *testing.T) {
	t.Run("a name without a host is refused", func(t *testing.T) {
		for _, name := range []gen.Atom{"", "plain", "@host", "name@", gen.Atom(strings.Repeat("x", 300) + "@h")} {
			_, err := startLocalErr(name)
			require.ErrorIs(t, err, gen.ErrIncorrect, "name %q", name)
		}
	})
}

func startLocalErr(name gen.Atom) (gen.Node, error) {
	n, err := nodeStartDisabled(name)
	if err == nil {
		n.Stop()
	}
	return n, err
}

func TestSendWhileReceiverEnds(t *testing.T) {
	n, _ := startLocal(t, "ending@localhost")
	type seq struct{ sender, i int }
	// Each sender sends until a send is refused, then afterRefusal more,
	// which must all be refused too.
	const senders, handleBeforeEnd, afterRefusal, most = 4, 2500, 100, 1_000_000
	handled := make([][]int, senders) // only the process writes it, until it ends
	c := newProbe()
	count := 0
	c.onMessage = func(p *probe, from gen.PID, message any) error {
		m := message.(seq)
		handled[m.sender] = append(handled[m.sender], m.i)
		if count++; count == handleBeforeEnd {
			return gen.TerminateReasonNormal
		}
		return nil
	}
	pid := spawnProbe(t, n, c)
	firstRefused := make([]int, senders)
	lateAccepted := make([]int, senders)
	done := make(chan int, senders)
	for s := range senders {
		go func() {
			firstRefused[s], lateAccepted[s] = -1, -1
			for i := 0; i < most && (firstRefused[s] < 0 || i < firstRefused[s]+afterRefusal); i++ {
				err := n.Send(pid, seq{s, i})
				switch {
				case err != nil && firstRefused[s] < 0:
					assert.ErrorIs(t, err, gen.ErrProcessUnknown)
					firstRefused[s] = i
				case err == nil && firstRefused[s] >= 0 && lateAccepted[s] < 0:
					lateAccepted[s] = i
				}
			}
			done <- s
		}()
	}
	for range senders {
		<-done
	}
	require.ErrorIs(t, c.reason(t), gen.TerminateReasonNormal)
	total := 0
	for s := range senders {
		require.GreaterOrEqual(t, firstRefused[s], 0, "sender %d: no send was refused", s)
		require.Equal(t, -1, lateAccepted[s], "sender %d: a send was accepted after one was refused", s)
		total += len(handled[s])
		// Handled: the sender's first messages, in order, none missing;
		// those queued when the process ended are never handled.
		for k, i := range handled[s] {
			require.Equal(t, k, i, "sender %d: messages handled out of order or lost", s)
		}
		require.LessOrEqual(t, len(handled[s]), firstRefused[s], "sender %d: a refused message was handled", s)
	}
	require.Equal(t, handleBeforeEnd, total)
}
