package leader

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// An outbox is forgotten once it went unused for a whole tidy period and
// holds nothing: an entry between two tidies, an entry waiting, or a flush
// under way keeps it; a forgotten node's outbox is made afresh, and a flush
// that held the forgotten one sends nothing of the new one's.
func TestTidyForgetsAnOutboxUnusedForAWholePeriod(t *testing.T) {
	c, _, _ := runningCoalescer(t, sinkNode{})
	p := &coalescerProcess{c: c}
	entry := func(dest string) {
		t.Helper()
		require.True(t, c.enqueue(gen.Atom(dest), &CoalescedHeartbeat{CoalescedRoute: CoalescedRoute{FromID: 1, ToID: 2}}, nil, time.Hour))
	}
	entry("gone@h")
	entry("busy@h")
	entry("waiting@h")
	c.take("gone@h")
	c.take("busy@h")
	p.tidy()
	assert.Len(t, c.out, 3, "the first tidy only marks them unused")
	entry("busy@h")
	c.take("busy@h")
	held := c.outboxFor("waiting@h")
	held.sending.Lock()
	c.take("waiting@h")
	p.tidy()
	assert.Nil(t, c.outboxFor("gone@h"), "unused for a whole period and empty: forgotten")
	assert.NotNil(t, c.outboxFor("busy@h"), "used since the last tidy: kept")
	assert.Same(t, held, c.outboxFor("waiting@h"), "a flush under way: kept")
	assert.Equal(t, uint64(1), c.Stats().Forgotten)
	held.sending.Unlock()

	entry("waiting@h")
	p.tidy()
	p.tidy()
	assert.Same(t, held, c.outboxFor("waiting@h"), "an entry waiting: kept, however long")

	entry("gone@h")
	fresh := c.outboxFor("gone@h")
	require.NotNil(t, fresh, "a forgotten node's outbox is made afresh")
	p.tidy()
	c.take("gone@h")
	p.tidy()
	stale := c.outboxFor("gone@h")
	require.Nil(t, stale)
	entry("gone@h")
	b, ok := c.takeOut(fresh)
	assert.False(t, ok, "a flush holding a forgotten outbox takes nothing of its successor's")
	assert.Empty(t, b.Heartbeats)
	b, ok = c.take("gone@h")
	assert.True(t, ok)
	assert.Len(t, b.Heartbeats, 1, "the entry waits in the outbox in use")
}

// The leader side of a pair is forgotten once no slot joined it for a
// whole tidy period and it holds no slot, join or leave; a leader paired
// there again starts a new epoch from Prev 0, as after a reset.
func TestTidyForgetsALeaderSidePairOnceItsSlotsAreGone(t *testing.T) {
	l := pairLeader(t, time.Now())
	t0 := l.paired
	l.pb.fire(t0)
	l.beatsTo(t, "a@h")
	l.beatsTo(t, "b@h")
	epoch := l.pb.pairs["a@h"].epoch

	assert.Zero(t, l.pb.tidy(t0))
	assert.Zero(t, l.pb.tidy(t0), "a pair with a paired leader's slots is kept")
	require.Len(t, l.pb.pairs, 2)

	l.wake()
	assert.Zero(t, l.pb.tidy(t0), "its leave is still to be sent: kept")
	l.pb.fire(t0 + 50*time.Millisecond) // the leaves go out
	l.beatsTo(t, "a@h")
	l.beatsTo(t, "b@h")
	assert.Zero(t, l.pb.tidy(t0+50*time.Millisecond), "an acknowledgement is owed for the ticks before the leave: kept")
	assert.Zero(t, l.pb.next(), "the pairs stopped ticking")
	owedUntil := t0 + 2*l.ib.lead.beat.Window
	assert.Zero(t, l.pb.tidy(owedUntil-time.Millisecond), "still owed: kept")
	assert.Equal(t, 2, l.pb.tidy(owedUntil), "owed no more, unused for a whole period and empty: forgotten")
	assert.Empty(t, l.pb.pairs)

	// The leader is steady again, its members replying: it pairs anew.
	o := &timerOwner{process: l.fired, pid: l.pid, inbox: l.ib, grid: newHeartbeatGrid(nil), pairs: l.pb}
	tm := &shellTimer{}
	t.Cleanup(func() {
		tm.mu.Lock()
		tm.stop(o)
		tm.mu.Unlock()
	})
	repair := func(at time.Duration) {
		t.Helper()
		b := l.ib.lead.beat
		b.since = at
		l.ib.publishBeat(&b, []time.Duration{at, at})
		_, ok := l.c.beatAhead(l.ib, tm, o, at)
		require.True(t, ok)
		require.NotNil(t, l.ib.lead.paired, "paired again")
		l.beatsTo(t, "a@h")
		l.beatsTo(t, "b@h")
		l.pb.fire(l.pb.next())
	}
	repair(owedUntil + 10*time.Millisecond)
	beats := l.beatsTo(t, "a@h")
	l.beatsTo(t, "b@h")
	require.Len(t, beats, 1)
	assert.Greater(t, beats[0].Epoch, epoch, "a new epoch")
	assert.Zero(t, beats[0].Prev, "from its first beat")
	assert.Len(t, beats[0].Joins, 1)
	assert.Zero(t, l.pb.tidy(l.pb.lastTick), "slots stand: kept, marked unused")

	// A slot joins the marked pairs and leaves again: the next tidy only
	// marks them, the one after forgets them.
	leave := func() {
		t.Helper()
		l.wake()
		l.pb.fire(l.pb.next())
		l.beatsTo(t, "a@h")
		l.beatsTo(t, "b@h")
	}
	leave()
	owed := l.pb.lastTick + 2*l.ib.lead.beat.Window
	l.pb.mu.Lock()
	for _, po := range l.pb.pairs {
		po.expireTrailing(owed) // the pairs do not tick: nothing else expires it
	}
	l.pb.mu.Unlock()
	before := l.pb.pairs["a@h"].epoch
	repair(owed + 10*time.Millisecond)
	beats = l.beatsTo(t, "a@h")
	l.beatsTo(t, "b@h")
	require.Len(t, beats, 1)
	assert.Greater(t, beats[0].Epoch, before, "an empty pair with no join since the last tidy starts a new epoch: the follower's side may be forgotten")
	assert.Zero(t, beats[0].Prev)
	leave()
	late := l.pb.lastTick + 2*l.ib.lead.beat.Window
	assert.Zero(t, l.pb.tidy(late), "a slot joined since the last tidy: kept")
	assert.Equal(t, 2, l.pb.tidy(late))
}

// The follower side of a pair is forgotten once no beat came for a whole
// tidy period and nothing is bound there; its watchdog stops. A beat of
// the sender's old epoch that comes later resets the pair (rule 6), and a
// new epoch binds again.
func TestTidyForgetsAFollowerSidePairSilentForAWholePeriod(t *testing.T) {
	p, ib, _, _, j := boundFollower(t)
	c := p.c
	answer := ib.steady
	start := time.Now()
	interval := int64(50 * time.Millisecond)
	p.receiveBeat("p@h", &PairBeat{Interval: interval, Epoch: 7, Tick: 1, Joins: []PairJoin{j}}, start)
	require.NotNil(t, ib.paired, "bound")
	acksTo(t, c, "p@h")
	key := pairKey{node: "p@h", interval: interval}
	p.tidy()
	p.tidy()
	require.Contains(t, c.pairsIn, key, "a member bound there: kept, even silent")

	ib.withdrawPaired(c)
	ib.take()
	p.receiveBeat("p@h", &PairBeat{Interval: interval, Epoch: 7, Prev: 1, Tick: 2}, start.Add(50*time.Millisecond))
	acksTo(t, c, "p@h")
	p.tidy()
	require.Contains(t, c.pairsIn, key, "a beat since the last tidy: kept")
	src := c.pairsIn[key]
	p.tidy()
	assert.NotContains(t, c.pairsIn, key, "silent for a whole period, nothing bound: forgotten")
	assert.NotZero(t, c.Stats().Forgotten, "counted")
	if src.watchdog != nil {
		assert.False(t, src.watchdog.Stop(), "its watchdog stopped")
	}

	p.receiveBeat("p@h", &PairBeat{Interval: interval, Epoch: 7, Prev: 2, Tick: 3}, start.Add(100*time.Millisecond))
	acks := acksTo(t, c, "p@h")
	require.Len(t, acks, 1)
	assert.True(t, acks[0].Reset, "rule 6: a beat of the old epoch resets the pair")
	ib.publish(&answer)
	j.Slot = 2
	p.receiveBeat("p@h", &PairBeat{Interval: interval, Epoch: 8, Tick: 4, Joins: []PairJoin{j}}, start.Add(150*time.Millisecond))
	assert.NotNil(t, ib.paired, "a new epoch binds again")
	assert.False(t, acksTo(t, c, "p@h")[0].Reset)
}

// A node's coalescer forgets what it kept for a peer node that stopped,
// once that went unused for a whole tidy period, and keeps what its live
// peers use. The leader's node stops: its followers forget their outbox to
// it and their side of its pairs, and the new leader's pairs with the
// others stay the same pairs, beating on.
func TestACoalescerForgetsAPeerThatStoppedAndKeepsTheOthers(t *testing.T) {
	was := tidyEvery
	tidyEvery = 100 * time.Millisecond
	t.Cleanup(func() { tidyEvery = was })
	nodes := startTestNodes(t, "tidy", 4)
	pids := spawnProbes(t, nodes, "m", &stepLog{steps: map[gen.PID][]observed{}},
		Options{ClusterID: "tidy", HeartbeatInterval: 20, ElectionTimeoutMin: 300, ElectionTimeoutMax: 600})
	gone := waitLeader(t, nodes, pids)
	goneName := nodes[gone].Name()
	share := func(nd gen.Node) *nodeShare {
		registry.Lock()
		defer registry.Unlock()
		return registry.nodes[nodeKey{node: nd.Name(), creation: nd.Creation()}]
	}
	// pairsOf lists the leader side of the pairs of nd's grids with peer.
	pairsOf := func(nd gen.Node, peer gen.Atom) []*pairOut {
		var out []*pairOut
		for _, pb := range share(nd).coal.allPairBeats() {
			pb.mu.Lock()
			if po := pb.pairs[peer]; po != nil {
				out = append(out, po)
			}
			pb.mu.Unlock()
		}
		return out
	}
	survivors := without(all(len(nodes)), gone)
	require.Eventually(t, func() bool {
		for _, i := range survivors {
			if len(pairsOf(nodes[gone], nodes[i].Name())) == 0 || share(nodes[i]).coal.outboxFor(goneName) == nil {
				return false
			}
		}
		return true
	}, settleCoalescer, 10*time.Millisecond, "the leader pairs with every follower, whose node acknowledges")
	forgotten := make(map[int]uint64)
	for _, i := range survivors {
		forgotten[i] = ReadCoalescer(nodes[i]).Forgotten
	}

	nodes[gone].Stop()
	li := -1
	require.Eventually(t, func() bool {
		li = -1
		for _, i := range survivors {
			if len(pairsOf(nodes[i], goneName)) > 0 || share(nodes[i]).coal.outboxFor(goneName) != nil {
				return false
			}
			// An outbox and the follower side of the stopped leader's
			// pairs, at least.
			if ReadCoalescer(nodes[i]).Forgotten < forgotten[i]+2 {
				return false
			}
			in, err := ReadInspection(nodes[i], pids[i], "ergo:state")
			if err == nil && in.Role == RoleLeader {
				li = i
			}
		}
		if li < 0 {
			return false
		}
		for _, i := range survivors {
			if i != li && len(pairsOf(nodes[li], nodes[i].Name())) == 0 {
				return false
			}
		}
		return true
	}, settleCoalescer, 20*time.Millisecond, "every survivor forgets the stopped node, and a new leader pairs with the others")

	before := map[int][]*pairOut{}
	for _, i := range survivors {
		if i != li {
			before[i] = pairsOf(nodes[li], nodes[i].Name())
		}
	}
	beats := ReadCoalescer(nodes[li]).PairBeatsOut
	time.Sleep(3 * tidyEvery)
	for i, was := range before {
		assert.Equal(t, was, pairsOf(nodes[li], nodes[i].Name()), "the new leader's node keeps its pairs with node %d: the same ones", i)
	}
	assert.Greater(t, ReadCoalescer(nodes[li]).PairBeatsOut, beats, "and they keep beating")
}

func without(list []int, drop int) []int {
	var out []int
	for _, v := range list {
		if v != drop {
			out = append(out, v)
		}
	}
	return out
}

func all(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
