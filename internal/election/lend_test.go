package election

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A leader's heartbeat tick lent room by the shell collects its messages,
// timers and effects there: the Ready it returns is that memory, and the
// tick allocates less than one that makes its own.
func TestLentRoomHoldsTheReady(t *testing.T) {
	nw := newNetwork(t, 5, 1, nil)
	c := nw.makeLeader(1).core
	now := nw.now
	tick := func() {
		c.Tick(now, Timer{Kind: TimerHeartbeat, Gen: c.timers[TimerHeartbeat]})
	}
	var (
		messages = make([]Outbound, 8)
		timers   = make([]TimerOp, 4)
		effects  = make([]Effect, 8)
	)
	_ = c.Ready()
	c.Lend(messages, timers, effects)
	tick()
	rd := c.Ready()
	require.NotEmpty(t, rd.Messages)
	require.NotEmpty(t, rd.Timers)
	assert.Same(t, &messages[0], &rd.Messages[0], "messages in the lent room")
	assert.Same(t, &timers[0], &rd.Timers[0], "timers in the lent room")
	assert.True(t, c.Reclaim(), "the Core holds nothing lent once Ready returned it")

	lent := func() {
		c.Lend(messages, timers, effects)
		tick()
		_ = c.Ready()
		c.Reclaim()
	}
	own := func() {
		tick()
		_ = c.Ready()
	}
	assert.Less(t, testing.AllocsPerRun(20, lent), testing.AllocsPerRun(20, own))

	// Lent memory it did not fill comes back; a pending Ready's does not.
	c.Lend(messages, timers, effects)
	assert.True(t, c.Reclaim())
	c.Lend(messages, timers, effects)
	tick()
	assert.False(t, c.Reclaim(), "a Ready is pending in the room")
	assert.True(t, c.HasReady())
}

// NewLent collects the first Ready, the new member's probes of its peers
// and its timers, in the room it is given.
func TestNewLentHoldsTheFirstReady(t *testing.T) {
	nw := newNetwork(t, 3, 1, nil)
	base := nw.node(1).core
	messages, timers := make([]Outbound, 8), make([]TimerOp, 4)
	c, err := NewLent(base.cfg, base.self, HardState{}, nw.now, Ready{Messages: messages, Timers: timers})
	require.NoError(t, err)
	rd := c.Ready()
	require.NotEmpty(t, rd.Messages)
	require.NotEmpty(t, rd.Timers)
	assert.Same(t, &messages[0], &rd.Messages[0])
	assert.Same(t, &timers[0], &rd.Timers[0])
	assert.True(t, c.Reclaim())
}
