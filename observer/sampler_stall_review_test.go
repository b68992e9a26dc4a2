package observer_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/observer"
)

// stallingMember is member, whose next inspection waits for stall (then
// zero): an actor busy elsewhere, or a member on a frozen node, answers
// late while spending no CPU of the observer's node.
type stallingMember struct {
	member
	stall   *atomic.Int64
	stalled *atomic.Bool
}

func (m *stallingMember) HandleInspect(from gen.PID, items ...string) map[string]string {
	if d := time.Duration(m.stall.Swap(0)); d > 0 {
		time.Sleep(d)
		m.stalled.Store(true)
	}
	return m.member.HandleInspect(from, items...)
}

// startSlowpoke starts cluster slowpoke on c's nodes, its member on the
// second node a stallingMember, and waits until it is healthy; it returns
// the member's stall and stalled.
func startSlowpoke(t *testing.T, c *testCluster) (*atomic.Int64, *atomic.Bool) {
	t.Helper()
	var stall atomic.Int64
	var stalled atomic.Bool
	slow := &testCluster{id: "slowpoke", nodes: c.nodes}
	slow.pids = spawnMembersWith(t, c.nodes, "slowpoke", "slowpoke", func(i int) gen.ProcessBehavior {
		if i == 1 {
			return &stallingMember{stall: &stall, stalled: &stalled}
		}
		return &member{}
	})
	slow.healthy(t, 0)
	return &stall, &stalled
}

// One member that answers a reading late, costing the observer's node no
// CPU, does not blind the observer for many times as long: a node that
// stops after it is read as down (or gone) at /metrics within a bound far above the
// sampling interval (50ms) and the stall (2s). The sampler's pauses
// (a tenth of the time reading) are meant to bound the CPU it spends; they
// count the wall time a reading waited for an answer too, so without their
// cap of an interval this stall would pause the reading about 18s.
func TestAMemberThatAnswersLateDoesNotBlindTheSamplerForNineTimesAsLong(t *testing.T) {
	c := startCluster(t, "orders", 3)
	c.healthy(t, 0)
	stall, stalled := startSlowpoke(t, c)
	s := serve(t, c.nodes[0], observer.WithSampleInterval(50*time.Millisecond))
	upOf := func(node gen.Atom) (float64, bool) {
		families, err := scrape(s)
		if err != nil {
			return 0, false
		}
		v, ok := byNode(families, "regent_leader_member_up", "orders")[string(node)]
		return v, ok
	}
	require.Eventually(t, func() bool { v, ok := upOf(c.nodes[2].Name()); return ok && v == 1 }, settle, poll)

	stall.Store(int64(2 * time.Second))
	require.Eventually(t, stalled.Load, settle, poll, "the sampler read the stalling member")
	c.lb.Stop(2)
	start := time.Now()
	// Down, or dropped from the view (gone).
	require.Eventually(t, func() bool { v, ok := upOf(c.nodes[2].Name()); return !ok || v == 0 }, 10*time.Second, poll,
		"a stopped node's member still reads as up at /metrics 10s after it stopped")
	t.Logf("read as down %s after its node stopped", time.Since(start))
}

// Close does not wait out a pause of the sampler's: a reading that has
// taken a tenth of the interval pauses after each further cluster (up to
// an interval, here 15s, after a member that answered 2s late), and the
// pause gives way to Close at once.
func TestCloseEndsTheSamplersPause(t *testing.T) {
	c := startCluster(t, "orders", 3)
	c.healthy(t, 0)
	stall, stalled := startSlowpoke(t, c)
	stall.Store(int64(2 * time.Second))
	h := observer.NewHandler(c.nodes[0], observer.WithSampleInterval(15*time.Second))
	closed := make(chan struct{})
	t.Cleanup(func() {
		<-closed // not left running, whatever the test's outcome
	})
	require.Eventually(t, stalled.Load, settle, poll, "the first reading never read the stalling member")
	go func() {
		defer close(closed)
		assert.NoError(t, h.Close())
	}()
	select {
	case <-closed:
	case <-time.After(7 * time.Second):
		t.Fatal("Close waited for the sampler's pause (an interval, 15s)")
	}
}
