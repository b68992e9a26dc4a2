package leader

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Rule 8.1 and 8.5: a leader paired late (its instant's pair beats had
// gone out, so it sent its tick as rule 7 does and joins the next instant)
// is unpaired by its members' replies to that very tick, which reach it
// before its joins go out. Its timer resumed at once, since no tick was
// done by the pairs for it: it sent another tick at once, off its grid,
// was paired late again, and so on, a tick per round trip until an instant
// caught it paired. Its next tick is the instant after its own.
func TestALateLeaderUnpairedBeforeItsJoinsWentOutTicksAtItsNextInstant(t *testing.T) {
	given := time.Now().Add(time.Hour) // nothing falls due while the test runs
	l := pairLeader(t, given)
	t0 := l.paired
	l.pb.fire(t0)
	l.beatsTo(t, "a@h")
	l.beatsTo(t, "b@h")
	l.wake()
	b := l.ib.lead.beat
	l.ib.publishBeat(&b, []time.Duration{t0, t0})
	o := &timerOwner{process: l.fired, pid: l.pid, inbox: l.ib, grid: newHeartbeatGrid(nil), pairs: l.pb}
	late := t0 + time.Millisecond
	l.timer.mu.Lock()
	parked, ok := l.c.beatAhead(l.ib, l.timer, o, late)
	l.timer.due = parked
	l.timer.mu.Unlock()
	require.True(t, ok)
	require.NotNil(t, l.ib.lead.paired, "paired late")
	instant := l.pb.next()
	require.Greater(t, instant, late)

	// The reply to the tick it sent itself comes back before the instant.
	ack := l.members[0].Ack
	require.True(t, l.c.hold(l.pid, l.members[0].PID, gridEpoch.Add(late+2*time.Millisecond), &ack))
	require.Nil(t, l.ib.lead.paired, "a member replying on its own unpairs it")
	l.timer.mu.Lock()
	due := l.timer.due
	l.timer.mu.Unlock()
	require.Equal(t, instant, due, "its next tick is at the instant after its own, not at once")
}
