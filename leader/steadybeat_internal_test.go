package leader

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// beatingLeader is a leader on p@h with a steady beat published in its
// inbox on c: two members, on a@h and b@h, each last heard at given; a
// window of 150ms, a 50ms interval, and an end an hour away.
func beatingLeader(t *testing.T, given time.Time) (*coalescer, gen.PID, *inbox, []election.SteadyMember) {
	node := &stalledNode{entered: make(chan struct{}, 1), release: make(chan struct{})}
	c, _, _ := runningCoalescer(t, node)
	leader := gen.PID{Node: "p@h", ID: 7, Creation: 1}
	hb := election.MessageHeartbeat{Header: election.Header{ClusterID: "c", Term: 3, From: gen.ProcessID{Name: "m", Node: "p@h"}}}
	var members []election.SteadyMember
	lastAck := []time.Duration{}
	for i, n := range []gen.Atom{"a@h", "b@h"} {
		pid := gen.PID{Node: n, ID: uint64(10 + i), Creation: 1}
		members = append(members, election.SteadyMember{
			PID: pid,
			Ack: election.MessageHeartbeatAck{Header: election.Header{ClusterID: "c", Term: 3, From: gen.ProcessID{Name: "m", Node: n}}},
		})
		lastAck = append(lastAck, sinceEpoch(given))
	}
	ib := &inbox{}
	ib.ticking.Store(true)
	c.addInbox(leader, ib)
	ib.publishBeat(&steadyBeat{
		SteadyBeat: election.SteadyBeat{Term: 3, Heartbeat: hb, Members: members, Interval: 50 * time.Millisecond,
			Window: 150 * time.Millisecond, Until: given.Add(time.Hour)},
		fromID: leader.ID, fromCreation: leader.Creation, since: sinceEpoch(given),
		until: sinceEpoch(given.Add(time.Hour)), linger: time.Hour,
	}, lastAck)
	return c, leader, ib, members
}

// Rule 7: a steady leader's tick is sent for it, one heartbeat to each
// member through the outbox, and the next falls on its grid; the members'
// acknowledgements that the beat expects are taken, counted and timed for
// its catch-up; the leader's inbox hands both over once.
func TestASteadyLeadersTickIsSentAndItsAcknowledgementsTaken(t *testing.T) {
	given := time.Now()
	c, leader, ib, members := beatingLeader(t, given)
	tick := sinceEpoch(given.Add(20 * time.Millisecond))
	next, ok := c.beatAhead(ib, &shellTimer{}, &timerOwner{}, tick)
	require.True(t, ok, "a tick within the window of every member's last reply is sent ahead")
	assert.Greater(t, next, tick)
	assert.LessOrEqual(t, next, tick+50*time.Millisecond, "the next tick is due on the grid, within an interval")
	for _, m := range members {
		b, _ := c.take(m.PID.Node)
		require.Len(t, b.Heartbeats, 1, "one heartbeat to %s", m.PID)
		assert.Equal(t, m.PID.ID, b.Heartbeats[0].ToID)
		assert.Equal(t, uint64(7), b.Heartbeats[0].FromID)
	}
	at := given.Add(30 * time.Millisecond)
	ack := members[0].Ack
	require.True(t, c.hold(leader, members[0].PID, at, echoedAt(ack, at)))
	acks, beats, ahead := ib.take()
	assert.Empty(t, acks, "a taken acknowledgement is not held for stepping")
	assert.Empty(t, beats)
	assert.Equal(t, 1, ahead.Beats)
	assert.Equal(t, gridEpoch.Add(tick), ahead.LastBeat)
	assert.Equal(t, []election.TakenAcks{{Count: 1, Last: gridEpoch.Add(sinceEpoch(at)), Arrived: at}, {}}, ahead.Acks)
	assert.Equal(t, uint64(1), c.Stats().BeatenAhead)
	assert.Equal(t, uint64(1), c.Stats().Taken)
	_, _, again := ib.take()
	assert.False(t, again.active(), "what was done is handed over once")
}

// Rule 7: a tick goes to the leader, which steps it, when a member has not
// replied within the window, or the beat has ended, or was withdrawn.
func TestASteadyLeadersTickWakesItWhenTheBeatsRulesDoNotHold(t *testing.T) {
	given := time.Now()
	c, _, ib, _ := beatingLeader(t, given)
	_, ok := c.beatAhead(ib, &shellTimer{}, &timerOwner{}, sinceEpoch(given.Add(150*time.Millisecond)))
	assert.False(t, ok, "a member silent for the window: the core must judge the evidence")

	c, _, ib, _ = beatingLeader(t, given)
	ib.lead.beat.until = sinceEpoch(given.Add(10 * time.Millisecond))
	_, ok = c.beatAhead(ib, &shellTimer{}, &timerOwner{}, sinceEpoch(given.Add(20*time.Millisecond)))
	assert.False(t, ok, "a tick past the beat's end")

	c, _, ib, _ = beatingLeader(t, given)
	ib.beating = false
	_, ok = c.beatAhead(ib, &shellTimer{}, &timerOwner{}, sinceEpoch(given.Add(20*time.Millisecond)))
	assert.False(t, ok, "a withdrawn beat")
	assert.Zero(t, c.Stats().BeatenAhead)
}

// Rule 7: an acknowledgement the beat does not expect (another view, a
// follower that follows someone else, one from a process the beat does not
// name) or one that comes after a silence of the window is held, and stops
// the beat: the leader's next tick wakes it, and it steps what was held
// after catching up on what was done before.
func TestAnUnexpectedAcknowledgementStopsTheBeat(t *testing.T) {
	given := time.Now()
	for name, change := range map[string]func(*election.MessageHeartbeatAck, *gen.PID, *time.Time){
		"another view": func(a *election.MessageHeartbeatAck, _ *gen.PID, _ *time.Time) { a.View.Key.Epoch++ },
		"follows another": func(a *election.MessageHeartbeatAck, _ *gen.PID, _ *time.Time) {
			a.Follows = gen.PID{Node: "x@h", ID: 1}
		},
		"declines":        func(a *election.MessageHeartbeatAck, _ *gen.PID, _ *time.Time) { a.Declines = true },
		"another process": func(_ *election.MessageHeartbeatAck, from *gen.PID, _ *time.Time) { from.ID++ },
		"after a silence": func(_ *election.MessageHeartbeatAck, _ *gen.PID, at *time.Time) { *at = at.Add(150 * time.Millisecond) },
	} {
		t.Run(name, func(t *testing.T) {
			c, leader, ib, members := beatingLeader(t, given)
			ack, from, at := members[0].Ack, members[0].PID, given.Add(10*time.Millisecond)
			change(&ack, &from, &at)
			require.True(t, c.hold(leader, from, at, echoedAt(ack, at)), "held for the leader's next wake-up")
			_, ok := c.beatAhead(ib, &shellTimer{}, &timerOwner{}, sinceEpoch(given.Add(20*time.Millisecond)))
			assert.False(t, ok, "the next tick wakes the leader")
			match := members[1].Ack
			require.True(t, c.hold(leader, members[1].PID, given.Add(25*time.Millisecond), echoedAt(match, given.Add(25*time.Millisecond))))
			acks, _, ahead := ib.take()
			assert.Len(t, acks, 2, "everything after the unexpected one is held in order, none taken")
			assert.False(t, ahead.active())
		})
	}
}

// Rule 7: acknowledgements held before the leader published its beat
// (between taking its inbox and publishing) came before anything the beat
// would do: the beat starts stopped, so the leader steps them in order.
func TestABeatPublishedOverHeldAcknowledgementsDoesNothing(t *testing.T) {
	given := time.Now()
	c, leader, ib, members := beatingLeader(t, given)
	beat, lastAck := ib.lead.beat, ib.lead.ahead.lastAck
	ib.beating = false // the leader is handling a message
	other := members[0].Ack
	other.Term = 2
	require.True(t, c.hold(leader, members[0].PID, given, echoedAt(other, given)))
	ib.publishBeat(&beat, lastAck)
	_, ok := c.beatAhead(ib, &shellTimer{}, &timerOwner{}, sinceEpoch(given.Add(20*time.Millisecond)))
	assert.False(t, ok, "the tick wakes the leader, which steps what was held")
}

// stoppingProbe is a probe that, once stopping is set, records at its
// HandleBecomeFollower whether its steady beat still stood and whether
// something done under it had not reached its core yet.
type stoppingProbe struct {
	probe
	stopping *atomic.Bool
	seen     chan [2]bool
}

func (p *stoppingProbe) HandleBecomeFollower(gen.PID) error {
	if p.stopping.Load() {
		p.inbox.mu.Lock()
		s := [2]bool{p.inbox.beating, p.inbox.lead != nil && p.inbox.lead.ahead.active()}
		p.inbox.mu.Unlock()
		select {
		case p.seen <- s:
		default:
		}
	}
	return nil
}

// A steady leader whose node stops hands leadership over as it ends
// (ProcessTerminate, no message handled first): before it does, its steady
// beat is withdrawn and what was done under it caught up on, so no tick is
// sent ahead for a member that has stepped down and told its user so, and
// it picks its successor from its members' real contact times. Found by the
// adversarial review of beating ahead: the beat stood through the handover.
func TestALeaderEndingWithItsNodeStopsBeatingAheadBeforeItHandsOver(t *testing.T) {
	nodes := startTestNodes(t, "sb", 3)
	log := &stepLog{steps: map[gen.PID][]observed{}}
	stopping := make([]*atomic.Bool, len(nodes))
	seen := make(chan [2]bool, 1)
	pids := make([]gen.PID, len(nodes))
	opts := Options{ClusterID: "stopping", HeartbeatInterval: 20, ElectionTimeoutMin: 300, ElectionTimeoutMax: 600}
	for i, nd := range nodes {
		o := opts
		for j, other := range nodes {
			if j != i {
				o.Bootstrap = append(o.Bootstrap, gen.ProcessID{Name: "m", Node: other.Name()})
			}
		}
		stopping[i] = &atomic.Bool{}
		flag := stopping[i]
		var err error
		pids[i], err = nd.SpawnRegister("m", func() gen.ProcessBehavior {
			return &stoppingProbe{probe: probe{opts: o, log: log}, stopping: flag, seen: seen}
		}, gen.ProcessOptions{})
		require.NoError(t, err)
	}
	li := waitLeader(t, nodes, pids)
	// Steady: its ticks are sent ahead.
	sent := func() uint64 { s := ReadCoalescer(nodes[li]); return s.BeatenAhead + s.PairBeatsOut }
	before := sent()
	require.Eventually(t, func() bool { return sent() > before+5 },
		settleCoalescer, 10*time.Millisecond, "the leader's ticks are sent ahead")
	stopping[li].Store(true)
	nodes[li].Stop()
	select {
	case s := <-seen:
		assert.False(t, s[0], "the steady beat stood while the leader handed over")
		assert.False(t, s[1], "the leader handed over before catching up on what was done under its beat")
	case <-time.After(settleCoalescer):
		t.Fatal("the leader never handed over as its node stopped")
	}
}

// Rule 7 and rule 4: a steady leader's tick gives each member the beat's
// one heartbeat, routed from the leader to that member, naming no sender
// node (the frame does, and a receiver drops an entry that names one).
func TestASteadyLeadersTickRoutesItsHeartbeatToEachMember(t *testing.T) {
	given := time.Now()
	c, leader, ib, members := beatingLeader(t, given)
	tick := sinceEpoch(given.Add(20 * time.Millisecond))
	_, ok := c.beatAhead(ib, &shellTimer{}, &timerOwner{}, tick)
	require.True(t, ok)
	sent := election.MessageHeartbeat{Header: election.Header{ClusterID: "c", Term: 3, From: gen.ProcessID{Name: "m"}}, Sent: stampOf(tick)}
	for _, m := range members {
		b, _ := c.take(m.PID.Node)
		require.Len(t, b.Heartbeats, 1, "one heartbeat to %s", m.PID)
		assert.Equal(t, CoalescedHeartbeat{
			CoalescedRoute: CoalescedRoute{FromID: leader.ID, FromCreation: leader.Creation, ToID: m.PID.ID, ToCreation: m.PID.Creation},
			Message:        sent,
		}, b.Heartbeats[0])
	}
}

// Rule 7 on the hot path: a tick sent for a steady leader allocates
// nothing; each member's entry is made for the send and copied into the
// outbox, never kept.
func TestASteadyLeadersTickAllocatesNothing(t *testing.T) {
	given := time.Now()
	c, _, ib, members := beatingLeader(t, given)
	at := sinceEpoch(given.Add(20 * time.Millisecond))
	tm, o := &shellTimer{}, &timerOwner{}
	tick := func() {
		if _, ok := c.beatAhead(ib, tm, o, at); !ok {
			t.Fatal("the tick was not sent ahead")
		}
		// As a flush would, without the frame it makes: the outboxes
		// keep their room.
		c.mu.Lock()
		for _, m := range members {
			c.out[m.PID.Node].heartbeats = c.out[m.PID.Node].heartbeats[:0]
		}
		c.mu.Unlock()
	}
	tick() // the outboxes and their timers are made
	assert.Zero(t, testing.AllocsPerRun(100, tick), "allocations per tick sent ahead")
}

// What was done under a beat is counted afresh under the next: a beat
// published in the lists of an ahead the leader took and caught up on
// starts with no tick or acknowledgement counted, and never in the lists of
// the ahead the coalescer still counts in.
func TestABeatPublishedInTakenListsCountsAfresh(t *testing.T) {
	given := time.Now()
	c, leader, ib, members := beatingLeader(t, given)
	require.True(t, c.hold(leader, members[0].PID, given.Add(10*time.Millisecond), echoedAt(members[0].Ack, given.Add(10*time.Millisecond))), "an acknowledgement taken under the beat")
	beat := ib.lead.beat
	_, _, ahead := ib.take()
	require.Equal(t, 1, ahead.Acks[0].Count)
	ib.lead.keepSpares(&ahead)
	ib.publishBeat(&beat, slices.Clone(ahead.lastAck))
	counting := ib.lead.ahead.Acks
	assert.Same(t, &ahead.Acks[0], &counting[0], "the taken lists are used again")
	assert.Equal(t, []election.TakenAcks{{}, {}}, counting, "nothing counted under the new beat")

	ib.publishBeat(&beat, slices.Clone(ahead.lastAck)) // published again, nothing taken since
	assert.NotSame(t, &counting[0], &ib.lead.ahead.Acks[0], "the lists the coalescer counted in are not reused")
}

// Quorum evidence under beating ahead: an acknowledgement taken for a steady
// leader counts as of the heartbeat it echoes, not of its arrival: one that
// echoes an old heartbeat, however fresh its arrival, moves the member's
// evidence nowhere, and one that echoes nothing is not taken.
func TestATakenAcknowledgementIsEvidenceOfTheHeartbeatItEchoes(t *testing.T) {
	given := time.Now()
	c, leader, ib, members := beatingLeader(t, given)
	sent, arrived := given.Add(5*time.Millisecond), given.Add(120*time.Millisecond)
	ack := members[0].Ack
	ack.Echo = stampOf(sinceEpoch(sent))
	require.True(t, c.hold(leader, members[0].PID, arrived, &ack))
	_, _, ahead := ib.take()
	assert.Equal(t, []election.TakenAcks{{Count: 1, Last: gridEpoch.Add(sinceEpoch(sent)), Arrived: arrived}, {}}, ahead.Acks,
		"evidence of the heartbeat's send time, arrival kept apart")

	c, leader, ib, members = beatingLeader(t, given)
	stale := members[0].Ack
	stale.Echo = stampOf(sinceEpoch(given.Add(-200 * time.Millisecond)))
	require.True(t, c.hold(leader, members[0].PID, given.Add(time.Millisecond), &stale))
	_, _, ahead = ib.take()
	assert.Equal(t, gridEpoch.Add(sinceEpoch(given)), ahead.Acks[0].Last, "an old heartbeat's echo moves the evidence nowhere, however fresh its arrival")

	c, leader, ib, members = beatingLeader(t, given)
	none := members[0].Ack
	require.True(t, c.hold(leader, members[0].PID, given.Add(time.Millisecond), &none))
	held, _, ahead := ib.take()
	assert.Zero(t, ahead.Acks[0].Count, "an acknowledgement echoing nothing is no evidence")
	require.Len(t, held, 1)
}

// A follower's coalescer answering a heartbeat ahead echoes that
// heartbeat's stamp, as the member's core would.
func TestAnAnswerAheadEchoesTheHeartbeatItAnswers(t *testing.T) {
	node := &stalledNode{entered: make(chan struct{}, 1), release: make(chan struct{})}
	c, leaderPID, beat := runningCoalescer(t, node)
	follower := gen.PID{Node: "n@h", ID: 2, Creation: 1}
	ib := &inbox{}
	c.addInbox(follower, ib)
	ib.publish(&steadyReply{SteadyAnswer: election.SteadyAnswer{Leader: leaderPID, Heartbeat: steadyOf(beat), Timeout: time.Second}, linger: time.Hour})
	beat.Sent = 987654321
	require.True(t, c.answer(follower, leaderPID, time.Now(), &beat))
	b, ok := c.take(leaderPID.Node)
	require.True(t, ok)
	require.Len(t, b.Acks, 1)
	assert.Equal(t, int64(987654321), b.Acks[0].Message.Echo)
}
