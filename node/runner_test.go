package node_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// blockers is more behaviors blocked at once than the node has Ps, and more
// than the workers a burst would keep warm.
func blockers() int { return 2*runtime.GOMAXPROCS(0) + 2 }

func TestABlockedBehaviorDelaysNoOtherProcess(t *testing.T) {
	t.Run("processes waiting in Calls do not delay another process's delivery", func(t *testing.T) {
		n, _ := startLocal(t, "blocked-call@localhost")
		callers := silentCallers(t, n)
		var pids []gen.PID
		for range blockers() {
			pid := spawnProbe(t, n, callers)
			require.NoError(t, n.Send(pid, "call"))
			pids = append(pids, pid)
		}
		require.Eventually(t, func() bool {
			for _, pid := range pids {
				if info, err := n.ProcessInfo(pid); err != nil || info.State != gen.ProcessStateWaitResponse {
					return false
				}
			}
			return true
		}, wait, time.Millisecond, "every caller waits in its Call")

		other := newProbe()
		otherPID := spawnProbe(t, n, other)
		require.NoError(t, n.Send(otherPID, "hello"))
		require.Equal(t, "hello", other.next(t), "delivered while every caller still waits")
		for _, pid := range pids {
			info, err := n.ProcessInfo(pid)
			require.NoError(t, err)
			require.Equal(t, gen.ProcessStateWaitResponse, info.State)
		}
	})

	t.Run("behaviors blocked outside the runtime delay no burst of wake-ups", func(t *testing.T) {
		n, _ := startLocal(t, "blocked-chan@localhost")
		release := make(chan struct{})
		t.Cleanup(func() { close(release) }) // before the node's Stop, which waits for them
		inside := make(chan struct{}, blockers())
		stuck := newProbe()
		stuck.onMessage = func(p *probe, from gen.PID, message any) error {
			inside <- struct{}{}
			<-release
			return nil
		}
		for range blockers() {
			require.NoError(t, n.Send(spawnProbe(t, n, stuck), "block"))
		}
		for range blockers() {
			select {
			case <-inside:
			case <-time.After(wait):
				t.Fatal("a blocker did not start: a runnable process waited for a blocked behavior")
			}
		}

		const burst = 200
		others := newProbe()
		var pids []gen.PID
		for range burst {
			pids = append(pids, spawnProbe(t, n, others))
		}
		for i, pid := range pids {
			require.NoError(t, n.Send(pid, i))
		}
		got := map[any]bool{}
		for range burst {
			got[others.next(t)] = true
		}
		require.Len(t, got, burst, "every process of the burst ran while the blocked ones stayed blocked")
		require.Empty(t, stuck.messages)
	})
}

// workerGoroutines counts the goroutines running a node's worker loop.
func workerGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), "regent/node.(*node).work(")
}

func TestWorkersEndWhileTheNodeRuns(t *testing.T) {
	n, _ := startLocal(t, "workers@localhost")
	c := newProbe()
	var pids []gen.PID
	for range 100 {
		pids = append(pids, spawnProbe(t, n, c))
	}
	for round := range 2 {
		for _, pid := range pids {
			require.NoError(t, n.Send(pid, round))
		}
		for range pids {
			c.next(t)
		}
		require.Eventually(t, func() bool { return workerGoroutines() == 0 }, wait, 5*time.Millisecond,
			"round %d: an idle running node keeps no worker goroutine", round)
		require.True(t, n.IsAlive())
	}
}
