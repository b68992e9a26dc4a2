package leader

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// quietGrid is a heartbeat grid beating pb with no goroutine to fire it:
// the test fires the timers and the pairs itself.
func quietGrid(t *testing.T, pb *pairBeats) *heartbeatGrid {
	g := newHeartbeatGrid(pb)
	g.loop.rt, g.loop.running = time.NewTimer(time.Hour), true
	t.Cleanup(func() { g.loop.rt.Stop() })
	return g
}

// pairedBeatingLeader is beatingLeader paired (coalescer.go, rule 8) by its
// heartbeat timer's tick at given+20ms, as the grid's firing does: its timer
// is parked at the beat's end.
func pairedBeatingLeader(t *testing.T, given time.Time) (*coalescer, gen.PID, *inbox, []election.SteadyMember, *shellTimer, *pairedLeader) {
	c, leader, ib, members := beatingLeader(t, given)
	pb := newPairBeats(c, 50*time.Millisecond, 0)
	o := &timerOwner{pid: leader, inbox: ib, grid: quietGrid(t, pb), coal: c, pairs: pb}
	tm := &shellTimer{}
	now := sinceEpoch(given.Add(20 * time.Millisecond))
	tm.mu.Lock()
	next, ok := c.beatAhead(ib, tm, o, now)
	require.True(t, ok)
	tm.due = next
	tm.schedule(now, o, election.TimerHeartbeat)
	tm.mu.Unlock()
	q := ib.lead.paired
	require.NotNil(t, q, "the steady leader is paired")
	require.Equal(t, q.parked, tm.due, "its timer is parked at the beat's end")
	return c, leader, ib, members, tm, q
}

// Lock order (pairbeat.go, pairBeats.mu): a shellTimer's mu comes before
// its inbox's. An acknowledgement held for a paired leader (a refused
// member replying on its own, or one owed to a slot that left) unpairs it
// and resumes its parked timer; hold resumed it with the inbox still
// locked, so a coalescer process holding an acknowledgement and the grid
// firing the same leader's timer (shellTimer.fire locks the timer, then
// beatAhead the inbox) waited on each other for good: that leader's ticks
// and every batch from every node stopped. Found by the adversarial review
// of pair beats.
func TestHoldingForAPairedLeaderResumesItsTimerWithTheInboxUnlocked(t *testing.T) {
	given := time.Now()
	c, leader, ib, members, tm, _ := pairedBeatingLeader(t, given)
	tm.mu.Lock() // the grid fires the leader's timer
	held := make(chan bool, 1)
	ack := members[0].Ack
	ack.Declines = true // not the reply its beat expects: it unpairs the leader
	go func() {
		held <- c.hold(leader, members[0].PID, given.Add(30*time.Millisecond), echoedAt(ack, given.Add(30*time.Millisecond)))
	}() // the coalescer process
	require.Eventually(t, func() bool { return c.Stats().Unpaired == 1 }, 5*time.Second, time.Millisecond,
		"the acknowledgement unpairs the leader")
	locked := make(chan struct{})
	go func() { ib.mu.Lock(); close(locked) }() // the timer's beatAhead
	select {
	case <-locked:
		ib.mu.Unlock()
	case <-time.After(5 * time.Second):
		t.Error("hold waits for the leader's timer with its inbox locked, while the timer's firing waits for the inbox")
	}
	tm.mu.Unlock()
	require.True(t, <-held)
	<-locked
}
