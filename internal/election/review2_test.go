package election

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The steady answer is computed at the instant the shell publishes it, but
// the shell may step a heartbeat it answered with it at an earlier instant:
// the coalescer process reads the clock once per received batch, before it
// looks at any inbox, so a batch whose clock reading precedes the
// follower's publish is held with that earlier arrival time
// (coalescerProcess.receive, coalescer.answer), and stepHeld steps it at
// max(arrival, lastInput), both earlier than the publish. The answer's
// time-dependent conditions (declines, withdrawn) do not hold backwards in
// time: a follower whose decline period ends between the two instants
// answers ahead with Declines false and its core, stepping the heartbeat,
// sends Declines true as well (counted mismatched, the leader gets both, the
// later one wrong); a leader's withdrawal (Leave) ending there makes the core
// drop the heartbeat it was answered for. The promise holds from the
// answer's time on only: this test states it. Found by the second
// adversarial review of a11e04c.
func TestSteadyAnswerDoesNotHoldBeforeItWasGiven(t *testing.T) {
	nw := newNetwork(t, 3, 21, nil)
	l := nw.settle(5 * time.Second)
	nw.run(time.Second)
	var f *simNode
	for _, name := range nw.names {
		if sn := nw.nodes[name]; sn != l {
			f = sn
			break
		}
	}
	// f was denied leadership once, long enough ago that its decline
	// period ends exactly now.
	period := avoidTimeouts * f.core.cfg.ElectionTimeoutMax
	f.core.denials, f.core.stats.lastDeniedAt = 1, nw.now.Add(-period)
	published := nw.now
	sa, ok := f.core.SteadyAnswer(published)
	require.True(t, ok)
	require.False(t, sa.Ack.Declines)

	// The heartbeat, held with an arrival time a moment before the publish.
	c := f.core.Clone(nil)
	c.Step(published.Add(-time.Millisecond), sa.Leader, sa.Heartbeat)
	rd := c.Ready()
	require.Len(t, rd.Messages, 1)
	require.NotEqual(t, any(sa.Ack), rd.Messages[0].Message,
		"stepped a moment before the answer was given, the core answers otherwise: a shell must never step a heartbeat it answered ahead earlier than the answer's time")
}
