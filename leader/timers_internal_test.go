package leader

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// firings records what a timer callback sends; only Send is used.
type firings struct {
	gen.Process
	mu   sync.Mutex
	sent []any
}

func (f *firings) Send(to any, message any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, message)
	return nil
}

func (f *firings) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sent)
}

// An election timer that falls due while heartbeats answered ahead wait in
// the actor's inbox moves to where stepping them will move it (the last
// one's arrival plus the steady answer's Timeout) without waking the actor;
// with nothing held, or once that time has passed, it wakes the actor.
func TestElectionTimerWaitsForTheHeartbeatsHeldForTheActor(t *testing.T) {
	f := &firings{}
	ib := &inbox{}
	owner := &timerOwner{process: f, pid: gen.PID{Node: "n@h", ID: 1, Creation: 1}, inbox: ib}
	tm := &shellTimer{}
	t.Cleanup(func() {
		tm.mu.Lock()
		tm.stop(owner)
		tm.mu.Unlock()
	})
	fireDue := func() {
		tm.mu.Lock()
		now := sinceEpoch(time.Now())
		tm.due, tm.runAt = now, now
		tm.mu.Unlock()
		tm.fire(owner, election.TimerElection)
	}

	fireDue()
	require.Equal(t, 1, f.count(), "nothing held: the due timer wakes the actor")

	const timeout = 200 * time.Millisecond
	ib.steady.Timeout = timeout
	arrived := sinceEpoch(time.Now())
	ib.beats = append(ib.beats, arrived-10*time.Millisecond, arrived)
	fireDue()
	assert.Equal(t, 1, f.count(), "a heartbeat held for the actor keeps the timer from waking it")
	tm.mu.Lock()
	due := tm.due
	tm.mu.Unlock()
	assert.Equal(t, arrived+timeout, due, "the deadline moves to the last held heartbeat's arrival plus Timeout")

	// The Go timer now runs for that deadline; once it passes with nothing
	// newer held, the firing wakes the actor.
	require.Eventually(t, func() bool { return f.count() == 2 }, 5*time.Second, 5*time.Millisecond, "the moved deadline wakes the actor when it comes")
}

// The heartbeat timers of a node's leaders fire from one grid: every timer
// due at an instant fires when it comes, a later one at its own instant, a
// removed one never, and the grid's Go timer stops with its last timer.
func TestHeartbeatGridFiresEveryDueTimerFromOneGoTimer(t *testing.T) {
	g := newHeartbeatGrid(nil)
	owners := map[*shellTimer]*timerOwner{}
	newTimer := func() (*shellTimer, *firings) {
		f := &firings{}
		tm := &shellTimer{}
		owners[tm] = &timerOwner{process: f, pid: gen.PID{Node: "n@h", ID: 1, Creation: 1}, inbox: &inbox{}, grid: g}
		return tm, f
	}
	schedule := func(tm *shellTimer, after time.Duration) {
		tm.mu.Lock()
		now := sinceEpoch(time.Now())
		tm.due = now + after
		tm.schedule(now, owners[tm], election.TimerHeartbeat)
		tm.mu.Unlock()
	}
	soon, later, gone := 30*time.Millisecond, 300*time.Millisecond, 30*time.Millisecond
	var early []*firings
	for range 3 {
		tm, f := newTimer()
		schedule(tm, soon)
		early = append(early, f)
	}
	late, lateFired := newTimer()
	schedule(late, later)
	removed, removedFired := newTimer()
	schedule(removed, gone)
	removed.mu.Lock()
	removed.stop(owners[removed])
	removed.mu.Unlock()

	require.Eventually(t, func() bool {
		for _, f := range early {
			if f.count() != 1 {
				return false
			}
		}
		return true
	}, 5*time.Second, 2*time.Millisecond, "every timer due at the first instant fired")
	require.Eventually(t, func() bool { return lateFired.count() == 1 }, 5*time.Second, 2*time.Millisecond, "the later timer fired at its own instant")
	assert.Zero(t, removedFired.count(), "a stopped timer never fires")
	require.Eventually(t, func() bool { return !loopRuns(&g.loop) }, 5*time.Second, 2*time.Millisecond, "the grid's goroutine ends with nothing scheduled")
	g.mu.Lock()
	defer g.mu.Unlock()
	assert.Empty(t, g.due, "nothing is left scheduled")
	assert.Zero(t, g.next, "the grid's Go timer is not running with nothing scheduled")
}

// loopRuns says whether l's goroutine runs.
func loopRuns(l *timerLoop) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running
}

// A grid closed with its node's last leader actor ends its goroutine at
// once, though a timer was due an hour later, and nothing schedules it
// again: a stopped node leaves no goroutine behind.
func TestAClosedHeartbeatGridEndsItsGoroutineForGood(t *testing.T) {
	g := newHeartbeatGrid(nil)
	f := &firings{}
	o := &timerOwner{process: f, pid: gen.PID{Node: "n@h", ID: 1, Creation: 1}, inbox: &inbox{}, grid: g}
	schedule := func(tm *shellTimer, after time.Duration) {
		tm.mu.Lock()
		now := sinceEpoch(time.Now())
		tm.due = now + after
		tm.schedule(now, o, election.TimerHeartbeat)
		tm.mu.Unlock()
	}
	ticking := func() bool { return loopRuns(&g.loop) }
	schedule(&shellTimer{}, time.Hour)
	require.True(t, ticking(), "a scheduled grid runs its goroutine")
	g.close()
	require.Eventually(t, func() bool { return !ticking() }, 5*time.Second, 2*time.Millisecond, "the closed grid's goroutine ends")
	schedule(&shellTimer{}, time.Millisecond)
	assert.False(t, ticking(), "nothing schedules a closed grid")
	time.Sleep(20 * time.Millisecond)
	assert.Zero(t, f.count(), "a closed grid fires nothing")
}

// A timerLoop runs its function once per reset, from a goroutine that
// stays for the next one, and a stop or a close cancels the run that was
// due: the stopped loop's goroutine ends after its idle spell, a closed
// one's at once and for good.
func TestATimerLoopRunsOncePerResetAndEndsWhenIdleOrClosed(t *testing.T) {
	var runs atomic.Int32
	l := &timerLoop{fn: func() { runs.Add(1) }}
	for i := int32(1); i <= 3; i++ {
		l.reset(time.Millisecond)
		require.Eventually(t, func() bool { return runs.Load() == i }, 5*time.Second, time.Millisecond, "reset %d runs the function once", i)
	}
	l.reset(time.Hour)
	l.stop()
	require.Eventually(t, func() bool { return !loopRuns(l) }, 5*time.Second, 2*time.Millisecond, "a stopped loop's goroutine ends once idle")
	assert.EqualValues(t, 3, runs.Load(), "a stopped run never happens")

	l.reset(time.Hour)
	require.True(t, loopRuns(l), "a reset starts the goroutine again")
	l.close()
	require.Eventually(t, func() bool { return !loopRuns(l) }, 5*time.Second, 2*time.Millisecond, "a closed loop's goroutine ends")
	l.reset(time.Millisecond)
	assert.False(t, loopRuns(l), "nothing restarts a closed loop")
	time.Sleep(10 * time.Millisecond)
	assert.EqualValues(t, 3, runs.Load(), "a closed loop runs nothing")
}

// A cancelled timer lets its Go timer go (a settled member keeps its probe
// timer cancelled, a leader its election timer), and armed again it fires
// as before, on a new one.
func TestCancelledTimerLetsItsGoTimerGo(t *testing.T) {
	f := &firings{}
	a := &Actor{}
	a.inbox.owner = &timerOwner{process: f, pid: gen.PID{Node: "n@h", ID: 1, Creation: 1}, inbox: &a.inbox}
	t.Cleanup(a.stopTimers)
	probe := &a.timers[election.TimerProbe]
	a.applyTimer(time.Now(), election.TimerOp{Timer: election.Timer{Kind: election.TimerProbe, Gen: 1}, After: time.Hour})
	probe.mu.Lock()
	require.NotNil(t, probe.rt)
	probe.mu.Unlock()

	a.applyTimer(time.Now(), election.TimerOp{Timer: election.Timer{Kind: election.TimerProbe, Gen: 1}, Cancel: true})
	probe.mu.Lock()
	assert.Nil(t, probe.rt, "the cancelled timer's Go timer is let go")
	probe.mu.Unlock()

	a.applyTimer(time.Now(), election.TimerOp{Timer: election.Timer{Kind: election.TimerProbe, Gen: 2}, After: time.Millisecond})
	require.Eventually(t, func() bool { return f.count() == 1 }, 10*time.Second, time.Millisecond, "armed again, it fires")
}
