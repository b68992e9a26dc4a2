//go:build unix

package mmfcell

import (
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// leaderOf returns the recorded leader, 0 when empty.
func leaderOf(c *Cell) uint32 {
	pid, _ := c.CurrentLeader()
	return pid
}

func ticks(c *Cell, n int) {
	for range n {
		c.TickEpoch()
	}
}

func TestClaim(t *testing.T) {
	t.Run("an empty cell is claimed, the term increments and the heartbeat is the current epoch", func(t *testing.T) {
		host := newFakeHost(50)
		c := newCell(t, WithProbe(host.probe))
		ticks(c, 5)

		require.True(t, c.TryClaim(50, 3))
		assert.Equal(t, uint32(50), leaderOf(c))
		assert.Equal(t, uint32(1), c.Term())
		s := c.Snapshot(3)
		assert.Equal(t, uint64(5), s.Heartbeat)
		assert.Equal(t, uint32(50*7+1), s.Fingerprint)
		assert.False(t, s.Stale)
	})

	t.Run("claiming again as the current leader succeeds and changes nothing", func(t *testing.T) {
		_, c := ledCell(t, 50, 3)
		before := c.Snapshot(3)

		require.True(t, c.TryClaim(50, 3))
		assert.Equal(t, before, c.Snapshot(3))
	})

	t.Run("a lower PID preempts a live fresh leader and the term increments", func(t *testing.T) {
		_, c := ledCell(t, 50, 3, 20)

		require.True(t, c.TryClaim(20, 3))
		assert.Equal(t, uint32(20), leaderOf(c))
		assert.Equal(t, uint32(2), c.Term())
		assert.False(t, c.Beat(50), "the preempted leader learns it lost on its next beat")
		assert.False(t, c.TryClaim(50, 3))
	})

	t.Run("a higher PID cannot take the cell from a live leader within the grace window", func(t *testing.T) {
		_, c := ledCell(t, 20, 3, 50)
		ticks(c, 3)

		assert.False(t, c.TryClaim(50, 3), "exactly grace epochs behind is still fresh")
		assert.False(t, c.IsStale(3))
		assert.Equal(t, uint32(20), leaderOf(c))
		assert.Equal(t, uint32(1), c.Term())
	})

	t.Run("a higher PID takes the cell once the heartbeat is more than grace epochs behind", func(t *testing.T) {
		_, c := ledCell(t, 20, 3, 50)
		ticks(c, 4)

		assert.True(t, c.IsStale(3))
		require.True(t, c.TryClaim(50, 3))
		assert.Equal(t, uint32(50), leaderOf(c))
		assert.Equal(t, uint32(2), c.Term())
		assert.False(t, c.IsStale(3), "the new leader starts with a fresh heartbeat")
		assert.False(t, c.Beat(20))
	})

	t.Run("a leader that beats every epoch is never replaced by a higher PID", func(t *testing.T) {
		_, c := ledCell(t, 20, 1, 50)
		for range 100 {
			c.TickEpoch()
			require.True(t, c.Beat(20))
			require.False(t, c.TryClaim(50, 1))
		}
		assert.Equal(t, uint32(1), c.Term())
	})

	t.Run("a dead leader is replaced at once without waiting for epochs", func(t *testing.T) {
		host, c := ledCell(t, 20, math.MaxUint64, 50)
		host.kill(20)

		assert.True(t, c.IsStale(math.MaxUint64))
		require.True(t, c.TryClaim(50, math.MaxUint64))
		assert.Equal(t, uint32(50), leaderOf(c))
		assert.Equal(t, uint32(2), c.Term())
	})

	t.Run("a process that reuses a dead leader's PID is not taken for that leader", func(t *testing.T) {
		host, c := ledCell(t, 20, math.MaxUint64, 50)
		host.kill(20)
		host.start(20, 999) // a new process with the same PID

		assert.True(t, c.IsStale(math.MaxUint64), "the recorded leader is gone even though its PID lives")
		assert.False(t, c.Beat(20), "the newcomer does not hold the cell")
		assert.False(t, c.StepDown(20), "the newcomer cannot release what it does not hold")

		require.True(t, c.TryClaim(20, math.MaxUint64), "the newcomer may claim it as a new leader")
		assert.Equal(t, uint32(2), c.Term(), "which is a handover, not an idempotent success")
		assert.Equal(t, uint32(999), c.Snapshot(0).Fingerprint)
		assert.True(t, c.Beat(20))
		assert.False(t, c.TryClaim(50, math.MaxUint64))
	})

	t.Run("a reused PID is not detected when fingerprints are unknown", func(t *testing.T) {
		host := newFakeHost()
		host.start(20, 0)
		host.start(50, 0)
		c := newCell(t, WithProbe(host.probe))
		require.True(t, c.TryClaim(20, math.MaxUint64))

		assert.False(t, c.IsStale(math.MaxUint64))
		assert.False(t, c.TryClaim(50, math.MaxUint64))
		assert.Zero(t, c.Snapshot(0).Fingerprint)
	})

	t.Run("PID 0 is rejected by every operation and changes nothing", func(t *testing.T) {
		host := newFakeHost(20)
		c := newCell(t, WithProbe(host.probe))
		empty := c.Snapshot(3)
		assert.False(t, c.TryClaim(NoLeader, 3))
		assert.Equal(t, empty, c.Snapshot(3))

		require.True(t, c.TryClaim(20, 3))
		held := c.Snapshot(3)
		assert.False(t, c.TryClaim(NoLeader, 3))
		assert.False(t, c.Beat(NoLeader))
		assert.False(t, c.StepDown(NoLeader))
		assert.Equal(t, held, c.Snapshot(3))
	})

	t.Run("the cell's own process claims with Self and records its fingerprint", func(t *testing.T) {
		c := newCell(t)
		require.True(t, c.TryClaim(c.Self(), DefaultGraceEpochs))
		assert.Equal(t, c.Self(), leaderOf(c))
		assert.Equal(t, SystemProbe(c.Self()).Fingerprint, c.Snapshot(0).Fingerprint)
		assert.False(t, c.IsStale(DefaultGraceEpochs))
	})
}

func TestBeat(t *testing.T) {
	t.Run("the leader's beat lifts its heartbeat to the global epoch", func(t *testing.T) {
		_, c := ledCell(t, 20, 3)
		ticks(c, 7)
		require.True(t, c.IsStale(3))

		require.True(t, c.Beat(20))
		s := c.Snapshot(3)
		assert.Equal(t, uint64(7), s.Heartbeat)
		assert.False(t, s.Stale)
	})

	t.Run("a non-leader's beat fails and leaves the heartbeat alone", func(t *testing.T) {
		_, c := ledCell(t, 20, 3, 50)
		ticks(c, 7)

		assert.False(t, c.Beat(50))
		assert.Zero(t, c.Snapshot(3).Heartbeat)
	})

	t.Run("a beat on an empty cell fails", func(t *testing.T) {
		c := newCell(t, WithProbe(newFakeHost(20).probe))
		assert.False(t, c.Beat(20))
	})
}

func TestStepDown(t *testing.T) {
	t.Run("the leader steps down, the cell is empty and the term stays until the next claim", func(t *testing.T) {
		_, c := ledCell(t, 20, math.MaxUint64, 50)

		require.True(t, c.StepDown(20))
		_, ok := c.CurrentLeader()
		assert.False(t, ok)
		assert.Equal(t, uint32(1), c.Term())
		assert.False(t, c.IsStale(0), "an empty cell is not stale")

		require.True(t, c.TryClaim(50, math.MaxUint64), "a higher PID takes over at once")
		assert.Equal(t, uint32(2), c.Term())
	})

	t.Run("a non-leader cannot step down and stepping down twice fails", func(t *testing.T) {
		_, c := ledCell(t, 20, 3, 50)

		assert.False(t, c.StepDown(50))
		assert.Equal(t, uint32(20), leaderOf(c))
		require.True(t, c.StepDown(20))
		assert.False(t, c.StepDown(20))
	})
}

func TestEpoch(t *testing.T) {
	t.Run("each tick advances the global epoch by one and returns it", func(t *testing.T) {
		c := newCell(t)
		for want := uint64(1); want <= 5; want++ {
			assert.Equal(t, want, c.TickEpoch())
		}
		assert.Equal(t, uint64(5), c.GlobalEpoch())
	})

	t.Run("concurrent ticks are all counted", func(t *testing.T) {
		c := newCell(t)
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ticks(c, 1000)
			}()
		}
		wg.Wait()
		assert.Equal(t, uint64(4000), c.GlobalEpoch())
	})

	t.Run("members advancing on a timer move the epoch once per period between them", func(t *testing.T) {
		path := t.TempDir() + "/c"
		a, b := openCell(t, path), openCell(t, path)

		epoch, advanced := a.AdvanceEpoch(time.Hour)
		assert.True(t, advanced)
		assert.Equal(t, uint64(1), epoch)
		for _, c := range []*Cell{a, b, a, b} {
			epoch, advanced = c.AdvanceEpoch(time.Hour)
			assert.False(t, advanced)
			assert.Equal(t, uint64(1), epoch)
		}
		assert.False(t, a.Snapshot(0).LastAdvance.IsZero())
	})

	t.Run("an advance is due again once the period has passed", func(t *testing.T) {
		c := newCell(t)
		_, advanced := c.AdvanceEpoch(time.Millisecond)
		require.True(t, advanced)
		require.Eventually(t, func() bool {
			_, advanced := c.AdvanceEpoch(time.Millisecond)
			return advanced
		}, 10*time.Second, time.Millisecond)
		assert.Equal(t, uint64(2), c.GlobalEpoch())
	})

	t.Run("a period of zero advances on every call", func(t *testing.T) {
		c := newCell(t)
		for want := uint64(1); want <= 3; want++ {
			epoch, advanced := c.AdvanceEpoch(0)
			assert.True(t, advanced)
			assert.Equal(t, want, epoch)
		}
	})

	t.Run("with no leader ticking, advancing members make a dead-silent leader stale", func(t *testing.T) {
		_, c := ledCell(t, 20, 2, 50)
		for range 3 {
			c.AdvanceEpoch(0)
		}
		assert.True(t, c.TryClaim(50, 2))
	})
}

func TestConcurrentClaims(t *testing.T) {
	t.Run("goroutines racing with distinct PIDs leave exactly the lowest one holding the cell", func(t *testing.T) {
		pids := []uint32{90, 30, 70, 10, 50, 80, 20, 60}
		host := newFakeHost(pids...)
		c := newCell(t, WithProbe(host.probe))
		var wg sync.WaitGroup
		for _, pid := range pids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 200 {
					c.TryClaim(pid, DefaultGraceEpochs)
					c.Beat(pid)
				}
			}()
		}
		wg.Wait()

		assert.Equal(t, slices.Min(pids), leaderOf(c))
		var holders []uint32
		for _, pid := range pids {
			if c.Beat(pid) {
				holders = append(holders, pid)
			}
		}
		assert.Equal(t, []uint32{10}, holders)
		assert.LessOrEqual(t, c.Term(), uint32(len(pids)), "each PID can take over at most once as PIDs only go down")
		assert.Equal(t, uint32(10*7+1), c.Snapshot(0).Fingerprint)
	})
}

func TestHalfFinishedHandover(t *testing.T) {
	// A claimer swaps the leader word first and publishes its fingerprint
	// after; these tests write the state between the two steps directly, as
	// another process would see it.
	halfway := func(t *testing.T, host *fakeHost) *Cell {
		c := newCell(t, WithProbe(host.probe))
		require.True(t, c.TryClaim(30, math.MaxUint64))
		require.True(t, c.StepDown(30))
		// 20 has swapped itself in for term 2; term 1's fingerprint (30's) remains.
		c.leader.Store(pack(20, 2))
		return c
	}

	t.Run("a new leader whose fingerprint is not yet published is judged by its PID alone", func(t *testing.T) {
		host := newFakeHost(20, 30)
		c := halfway(t, host)

		assert.False(t, c.IsStale(math.MaxUint64), "the predecessor's fingerprint is not taken for the new leader's")
		assert.False(t, c.TryClaim(30, math.MaxUint64))
		assert.True(t, c.Beat(20))
		assert.True(t, c.TryClaim(20, math.MaxUint64))
		assert.Equal(t, uint32(2), c.Term())
		assert.Zero(t, c.Snapshot(0).Fingerprint)
	})

	t.Run("a claimer that died before publishing its fingerprint is seen dead", func(t *testing.T) {
		host := newFakeHost(20, 30)
		c := halfway(t, host)
		host.kill(20)

		assert.True(t, c.IsStale(math.MaxUint64))
		require.True(t, c.TryClaim(30, math.MaxUint64))
		assert.Equal(t, uint32(3), c.Term())
		assert.Equal(t, uint32(30*7+1), c.Snapshot(0).Fingerprint)
	})

	t.Run("a late publication from an earlier term never overwrites a later one", func(t *testing.T) {
		_, c := ledCell(t, 30, math.MaxUint64, 20)
		require.True(t, c.TryClaim(20, math.MaxUint64))

		c.publishIdentity(1, 30*7+1) // 30's publication for term 1, arriving late
		assert.Equal(t, uint32(20*7+1), c.Snapshot(0).Fingerprint)
		assert.False(t, c.IsStale(math.MaxUint64))
	})

	t.Run("the heartbeat never moves backwards", func(t *testing.T) {
		host := newFakeHost(20)
		c := newCell(t, WithProbe(host.probe))
		ticks(c, 5)
		require.True(t, c.TryClaim(20, 0))
		c.epoch.Store(3) // a writer holding an older epoch
		require.True(t, c.Beat(20))
		assert.Equal(t, uint64(5), c.Snapshot(0).Heartbeat)
	})
}
