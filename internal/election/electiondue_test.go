package election

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ElectionDue tells the shell when the election timer is really due: a
// heartbeat moves it later without a TimerOp, and a firing at that time is a
// campaign, not an early firing the core re-arms.
func TestElectionDueFollowsHeartbeatsWithoutTimerOps(t *testing.T) {
	h := newAgreed(t, 2, nil)
	h.take()
	armedAt := h.due[TimerElection]
	due, ok := h.c.ElectionDue()
	require.True(t, ok, "a follower's election timer is armed")
	require.Equal(t, armedAt, due, "before any heartbeat it is the armed deadline")

	h.heartbeat(2, 1, h.stamp(), nil)
	h.advance(50 * time.Millisecond)
	h.heartbeat(2, 1, h.stamp(), nil)
	rd := h.take()
	require.Empty(t, rd.Timers, "heartbeats move the deadline without timer operations")
	moved, ok := h.c.ElectionDue()
	require.True(t, ok)
	require.True(t, moved.After(armedAt), "the deadline moved later: %v, armed %v", moved, armedAt)

	h.now = moved
	h.c.Tick(h.now, h.timers[TimerElection])
	h.collect()
	require.NotEqual(t, RoleFollower, h.c.role, "a firing at ElectionDue campaigns")
	next, ok := h.c.ElectionDue()
	require.True(t, ok, "the candidate armed its election timer again")
	require.Equal(t, h.due[TimerElection], next, "and ElectionDue is that arming's deadline")
}
