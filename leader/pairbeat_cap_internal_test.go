package leader

import (
	"fmt"
	"math/bits"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// joinLimitNode is the node p@h whose network takes every send but a frame
// whose pair beats carry more than limit joins, which fails as a frame over
// MaxFrameSize does. The lock guards limit and joins: the coalescer's
// flusher may send too.
type joinLimitNode struct {
	gen.Node
	mu    sync.Mutex
	limit int
	joins []int // the joins of each pair beat taken, in order
}

func (n *joinLimitNode) Name() gen.Atom { return "p@h" }

func (n *joinLimitNode) Send(to any, message any) error {
	b, ok := message.(MessageHeartbeatBatch)
	if !ok {
		return nil // a failure told to a leader
	}
	joins := 0
	for i := range b.Beats {
		joins += len(b.Beats[i].Joins)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if joins > n.limit {
		return fmt.Errorf("frame with %d joins: %w", joins, gen.ErrTooLarge)
	}
	for i := range b.Beats {
		n.joins = append(n.joins, len(b.Beats[i].Joins))
	}
	return nil
}

func (n *joinLimitNode) setLimit(limit int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.limit = limit
}

// taken returns the joins of the pair beats taken since the last call.
func (n *joinLimitNode) taken() []int {
	n.mu.Lock()
	defer n.mu.Unlock()
	j := n.joins
	n.joins = nil
	return j
}

// joinBurst is a node of leaders, each of one cluster with one member on
// a@h, steady and with an hour's window, that want to pair at every tick:
// a burst of joins that never ends. Its network is a joinLimitNode.
type joinBurst struct {
	node    *joinLimitNode
	c       *coalescer
	pb      *pairBeats
	leaders []burstLeader
	now     time.Duration
}

type burstLeader struct {
	ib *inbox
	o  *timerOwner
	t  *shellTimer
}

func newJoinBurst(t *testing.T, leaders, limit int) *joinBurst {
	node := &joinLimitNode{limit: limit}
	c, _, _ := runningCoalescer(t, node)
	d := 50 * time.Millisecond
	pb := newPairBeats(c, d, 0)
	pb.linger = time.Hour // nothing is flushed but by the test
	// The beats' sends reach pb as they would the grid's pairs.
	c.share = &nodeShare{grids: map[time.Duration]*heartbeatGrid{d: newHeartbeatGrid(pb)}}
	given := time.Now()
	j := &joinBurst{node: node, c: c, pb: pb, now: pb.instantAfter(sinceEpoch(given))}
	for i := range leaders {
		pid := gen.PID{Node: "p@h", ID: uint64(100 + i), Creation: 1}
		cluster := fmt.Sprintf("c%d", i)
		hb := election.MessageHeartbeat{Header: election.Header{ClusterID: cluster, Term: 3, From: gen.ProcessID{Name: "m", Node: "p@h"}}}
		member := election.SteadyMember{PID: gen.PID{Node: "a@h", ID: uint64(1000 + i), Creation: 1},
			Ack: election.MessageHeartbeatAck{Header: election.Header{ClusterID: cluster, Term: 3, From: gen.ProcessID{Name: "m", Node: "a@h"}}}}
		ib := &inbox{}
		ib.ticking.Store(true)
		c.addInbox(pid, ib)
		ib.publishBeat(&steadyBeat{
			SteadyBeat: election.SteadyBeat{Term: 3, Heartbeat: hb, Members: []election.SteadyMember{member}, Interval: d,
				Window: time.Hour, Until: given.Add(time.Hour)},
			fromID: pid.ID, fromCreation: pid.Creation, since: sinceEpoch(given),
			until: sinceEpoch(given.Add(time.Hour)), linger: time.Hour,
		}, []time.Duration{sinceEpoch(given)})
		// The timer is never due where pairing parks it: a reset resumes
		// no Go timer.
		o := &timerOwner{process: &firings{}, pid: pid, inbox: ib, grid: newHeartbeatGrid(nil), pairs: pb}
		j.leaders = append(j.leaders, burstLeader{ib: ib, o: o, t: &shellTimer{}})
	}
	return j
}

// joinCap returns the cap of the pair to a@h, and its joinWait.
func (j *joinBurst) joinCap() (int, int) {
	j.pb.mu.Lock()
	defer j.pb.mu.Unlock()
	po := j.pb.pairs["a@h"]
	return po.joinLimit(), po.joinWait
}

// tick is one grid instant: every leader not paired ticks (and pairs when
// its pair's beat has room), the pairs beat, the beats are sent, and every
// leader paired wakes, so that its slot leaves and it wants to pair again.
func (j *joinBurst) tick() {
	for _, l := range j.leaders {
		l.ib.mu.Lock()
		q := l.ib.lead.paired
		l.ib.mu.Unlock()
		if q == nil {
			j.c.beatAhead(l.ib, l.t, l.o, j.now)
		}
	}
	j.pb.fire(j.now)
	j.c.flush("a@h")
	for _, l := range j.leaders {
		l.ib.mu.Lock()
		l.ib.fold()
		l.ib.mu.Unlock()
	}
	j.now = j.pb.instantAfter(j.now)
}

// Rule 8.7: a beat too large for MaxFrameSize lowers the joins a pair's
// beats carry, and once beats of that cap go out, the cap grows back:
// a burst of joins after the frames fit again pairs at full speed, instead
// of trickling at the lowered cap for the node's life.
func TestAPairsJoinCapGrowsBackOnceItsBeatsFit(t *testing.T) {
	const leaders = 200
	j := newJoinBurst(t, leaders, 60)
	for range 3 {
		j.tick()
	}
	require.NotZero(t, j.c.stats.pairFailed.Load(), "a beat of %d joins is too large", leaders)
	for _, n := range j.node.taken() {
		require.LessOrEqual(t, n, 60, "no beat taken is over the limit")
	}
	lowered, wait := j.joinCap()
	require.Less(t, lowered, leaders, "the cap was lowered")

	j.node.setLimit(leaders) // the joins fit again
	fails := j.c.stats.pairFailed.Load()
	most := 0
	// The wait, then a doubling per beat back to the full cap; the bound
	// is generous.
	for range 2 * (wait + bits.Len(maxBatchEntries)) {
		j.tick()
		for _, n := range j.node.taken() {
			most = max(most, n)
		}
	}
	assert.Equal(t, leaders, most, "a beat carries every leader's join again, not %d at most", lowered)
	lifted, _ := j.joinCap()
	assert.Equal(t, maxBatchEntries, lifted, "the cap is lifted")
	assert.Equal(t, fails, j.c.stats.pairFailed.Load(), "no beat failed once the joins fit")
}

// Rule 8.7: a pair whose joins never fit above a size settles at a cap of
// at least half of it, and a burst of joins that never ends resets it a
// bounded number of times: not once per beat or two, as a cap that grew
// back at once would.
func TestAPairWhoseJoinsNeverFitSettlesWithBoundedResets(t *testing.T) {
	const leaders, limit, ticks = 60, 20, 1500
	j := newJoinBurst(t, leaders, limit)
	for range ticks {
		j.tick()
	}
	taken := j.node.taken()
	require.NotEmpty(t, taken)
	last := taken[len(taken)-1]
	assert.LessOrEqual(t, last, limit)
	assert.GreaterOrEqual(t, last, limit/2, "settled at half the most that fits or more")
	// The descent to a cap that fits, each doubling of the wait, and one
	// try per joinWaitMax beats at the cap after that.
	bound := bits.Len(maxBatchEntries) + bits.Len(joinWaitMax/joinWaitMin) + ticks/joinWaitMax
	failed := j.c.stats.pairFailed.Load()
	t.Logf("%d resets over %d ticks (bound %d); beats carry %d joins", failed, ticks, bound, last)
	assert.LessOrEqual(t, failed, uint64(bound), "pair resets over %d ticks of joins", ticks)
	assert.Equal(t, failed, j.c.stats.pairResets.Load(), "each reset is a beat too large")
}
