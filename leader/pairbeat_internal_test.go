package leader

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// pairingLeader is beatingLeader's leader paired on its tick at given+20ms
// (coalescer.go, rule 8), its heartbeat timer parked where beatAhead puts
// it. The timer's owner has no coalescer: once resumed, the timer's firing
// reaches fired as the actor's would.
type pairingLeader struct {
	c       *coalescer
	pid     gen.PID
	ib      *inbox
	members []election.SteadyMember
	pb      *pairBeats
	timer   *shellTimer
	fired   *firings
	paired  time.Duration // the tick it was paired on
}

func pairLeader(t *testing.T, given time.Time) *pairingLeader {
	c, leader, ib, members := beatingLeader(t, given)
	pb := newPairBeats(c, 50*time.Millisecond, 0)
	pb.linger = time.Hour // nothing is flushed: the test takes the outboxes
	f := &firings{}
	o := &timerOwner{process: f, pid: leader, inbox: ib, grid: newHeartbeatGrid(nil), pairs: pb}
	tm := &shellTimer{}
	t.Cleanup(func() {
		tm.mu.Lock()
		tm.stop(o)
		tm.mu.Unlock()
	})
	at := sinceEpoch(given.Add(20 * time.Millisecond))
	next, ok := c.beatAhead(ib, tm, o, at)
	require.True(t, ok, "a steady leader's tick is done for it")
	require.NotNil(t, ib.lead.paired, "rule 8.1: its tick pairs it")
	assert.Equal(t, ib.lead.beat.until, next, "rule 8.1: its timer parks at its beat's end")
	tm.mu.Lock()
	tm.due = next // as the timer's callback does with what beatAhead returns
	tm.mu.Unlock()
	return &pairingLeader{c: c, pid: leader, ib: ib, members: members, pb: pb, timer: tm, fired: f, paired: at}
}

// beatsTo takes the pair beats queued for node, and checks that no
// heartbeat went as an entry of its own.
func (l *pairingLeader) beatsTo(t *testing.T, node gen.Atom) []PairBeat {
	b, _ := l.c.take(node)
	assert.Empty(t, b.Heartbeats, "rule 8: a paired leader's heartbeats travel in pair beats only")
	return b.Beats
}

// wake is the leader waking (withdrawBeat, stepHeld): what was done for
// it, caught up on.
func (l *pairingLeader) wake() beatenAhead {
	_, ahead := l.wakeHolding()
	return ahead
}

// wakeHolding is wake, with the acknowledgements held for it.
func (l *pairingLeader) wakeHolding() ([]heldAck, beatenAhead) {
	l.ib.mu.Lock()
	l.ib.beating = false
	l.ib.fold()
	l.ib.mu.Unlock()
	acks, _, ahead := l.ib.take()
	return acks, ahead
}

// ackFrom is node's PairAck for tick, arriving at at: every slot that
// joined with that tick is bound but the refused.
func (l *pairingLeader) ackFrom(node gen.Atom, tick uint64, at time.Duration, refused ...uint32) {
	po := l.pb.pairs[node]
	l.pb.acked(node, &PairAck{Interval: int64(l.pb.d), Epoch: po.epoch, Tick: tick, Echo: stampOf(at), Bound: joinedWith(po, tick, refused), Refused: refused}, at)
}

// joinedWith lists the slots of po that joined with tick, but refused.
func joinedWith(po *pairOut, tick uint64, refused []uint32) []uint32 {
	var ids []uint32
	for id, s := range po.slots {
		if s.join == tick && !slices.Contains(refused, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// Rules 8.1 and 8.3: a paired leader's tick goes to each member's node as
// one join, carrying the heartbeat it would have sent and the
// acknowledgement it expects; each later tick is one pair beat for all;
// each PairAck credits every slot joined by then; the leader catches up on
// all of it at once, as stepping each would have left it.
func TestAPairedLeadersTicksAreItsPairsBeatsAndTheirAcksItsMembersReplies(t *testing.T) {
	given := time.Now()
	l := pairLeader(t, given)
	t0 := l.paired
	l.pb.fire(t0)
	for _, m := range l.members {
		beats := l.beatsTo(t, m.PID.Node)
		require.Len(t, beats, 1, "one pair beat to %s", m.PID.Node)
		b := beats[0]
		assert.Equal(t, uint64(0), b.Prev, "an epoch's first beat")
		require.Len(t, b.Joins, 1)
		j := b.Joins[0]
		hb := l.ib.lead.beat.Heartbeat
		hb.From.Node = "" // the frame names the sender's node
		hb.Sent = stampOf(t0)
		assert.Equal(t, CoalescedRoute{FromID: l.pid.ID, FromCreation: l.pid.Creation, ToID: m.PID.ID, ToCreation: m.PID.Creation}, j.CoalescedRoute)
		assert.Equal(t, hb, j.Heartbeat, "the join carries this tick's heartbeat, stamped with its time")
		assert.Equal(t, stampOf(t0), b.Sent, "and so does the beat")
		assert.Equal(t, m.Ack, j.Ack, "and the acknowledgement the beat expects")
	}
	l.pb.fire(t0 + 50*time.Millisecond)
	for _, m := range l.members {
		beats := l.beatsTo(t, m.PID.Node)
		require.Len(t, beats, 1)
		assert.Empty(t, beats[0].Joins, "a slot joins once")
		assert.Equal(t, beats[0].Tick-1, beats[0].Prev, "beats chain")
	}
	first := l.pb.tick - 1
	l.ackFrom("a@h", first, t0+30*time.Millisecond)
	l.ackFrom("b@h", first, t0+31*time.Millisecond)
	l.ackFrom("a@h", first+1, t0+80*time.Millisecond)
	l.pb.fire(t0 + 100*time.Millisecond)

	ahead := l.wake()
	assert.Equal(t, 3, ahead.Beats, "every tick done for it")
	assert.Equal(t, gridEpoch.Add(t0+100*time.Millisecond), ahead.LastBeat)
	assert.Equal(t, 2, ahead.Acks[0].Count)
	assert.Equal(t, gridEpoch.Add(t0+80*time.Millisecond), ahead.Acks[0].Last, "the last PairAck from a member's node is its last reply")
	assert.Equal(t, 1, ahead.Acks[1].Count)
	assert.Equal(t, gridEpoch.Add(t0+31*time.Millisecond), ahead.Acks[1].Last)
	assert.Zero(t, l.c.stats.mismatched.Load())
	assert.Nil(t, l.ib.lead.paired)
}

// Rule 8.5: once its leader is unpaired, a slot leaves with the pair's next
// beat and is beaten no more; an acknowledgement of a tick before the leave
// that arrives after the catch-up is handed to the leader as a coalesced
// one, with its arrival time.
func TestAnUnpairedLeadersSlotsLeaveAndTheirLateAcksReachIt(t *testing.T) {
	given := time.Now()
	l := pairLeader(t, given)
	t0 := l.paired
	l.pb.fire(t0)
	l.pb.fire(t0 + 50*time.Millisecond)
	l.beatsTo(t, "a@h")
	l.beatsTo(t, "b@h")
	tick := l.pb.tick
	ahead := l.wake()
	require.Equal(t, 2, ahead.Beats)

	l.pb.fire(t0 + 100*time.Millisecond)
	for _, m := range l.members {
		beats := l.beatsTo(t, m.PID.Node)
		require.Len(t, beats, 1, "the leave goes in the pair's next beat")
		assert.Len(t, beats[0].Leaves, 1)
	}
	late := t0 + 110*time.Millisecond
	l.ackFrom("a@h", tick, late)
	acks, _, again := l.ib.take()
	assert.Zero(t, again.Beats, "nothing is beaten for it after it woke")
	require.Len(t, acks, 1, "the acknowledgement owed reaches the leader")
	assert.Equal(t, l.members[0].PID, acks[0].from)
	want := l.members[0].Ack
	want.Echo = stampOf(late)
	assert.Equal(t, want, acks[0].ack, "echoing the beat it acknowledges")
	assert.Equal(t, gridEpoch.Add(late), acks[0].at, "at its arrival")
	l.pb.fire(t0 + 150*time.Millisecond)
	assert.Empty(t, l.beatsTo(t, "a@h"), "an idle pair sends nothing")
	assert.Zero(t, l.pb.next(), "and the pairs stop ticking")
}

// Rule 8.4: a tick that would find a member silent for the beat's window is
// not done for the leader: it is unpaired with what came before, and its
// own timer fires for that tick at once, where rule 7 judges it.
func TestATickThatFindsAMemberSilentWakesThePairedLeadersTimer(t *testing.T) {
	given := time.Now()
	l := pairLeader(t, given)
	t0 := l.paired
	for k := range 3 {
		l.pb.fire(t0 + time.Duration(k)*50*time.Millisecond)
	}
	// a@h replies to the first tick; b@h was last heard at given.
	l.ackFrom("a@h", l.pb.tick-2, t0+30*time.Millisecond)
	// The pairs' next instant on the grid at or after b@h went silent.
	l.pb.fire(max(sinceEpoch(given.Add(l.ib.lead.beat.Window)), l.pb.next()))
	require.Eventually(t, func() bool { return l.fired.count() == 1 }, 5*time.Second, time.Millisecond,
		"the parked timer is resumed for the tick and fires")
	ahead := l.wake()
	assert.Equal(t, 3, ahead.Beats, "the tick that found a member silent was not done for it")
	assert.Equal(t, gridEpoch.Add(t0+100*time.Millisecond), ahead.LastBeat)
	assert.Equal(t, gridEpoch.Add(t0+30*time.Millisecond), ahead.Acks[0].Last)
	assert.Zero(t, ahead.Acks[1].Count)
}

// Rule 8.3: a PairAck that comes a window or more after the pair's
// previous one is not credited: the leaders it covers are unpaired, and it
// reaches each as a coalesced acknowledgement, which rule 7 judges (here:
// too late to take, so held for the leader to step).
func TestALatePairAckIsSteppedByItsLeadersNotCredited(t *testing.T) {
	given := time.Now()
	l := pairLeader(t, given)
	t0 := l.paired
	l.pb.fire(t0)
	l.ackFrom("a@h", l.pb.tick, t0+10*time.Millisecond)
	l.ackFrom("b@h", l.pb.tick, t0+10*time.Millisecond)
	l.pb.fire(t0 + 50*time.Millisecond)
	late := t0 + 10*time.Millisecond + l.ib.lead.beat.Window
	l.ackFrom("a@h", l.pb.tick, late)
	_, paired := l.pb.leaders[l.ib.lead.paired]
	require.False(t, paired, "the leader is no longer paired")
	require.Eventually(t, func() bool { return l.fired.count() == 1 }, 5*time.Second, time.Millisecond,
		"its timer resumes, due at its next instant, and fires")
	acks, ahead := l.wakeHolding()
	assert.Equal(t, gridEpoch.Add(t0+10*time.Millisecond), ahead.Acks[0].Last, "the late one was not credited")
	require.Len(t, acks, 1, "it is held for the leader to step")
	assert.Equal(t, gridEpoch.Add(late), acks[0].at)
}

// Rule 8.2 from the leader's side: a slot its member's node refused
// unpairs its leader, whose slots all leave, and whose ticks are its
// timer's again from its next instant.
func TestARefusedSlotUnpairsItsLeader(t *testing.T) {
	given := time.Now()
	l := pairLeader(t, given)
	t0 := l.paired
	l.pb.fire(t0)
	slot := l.beatsTo(t, "a@h")[0].Joins[0].Slot
	l.beatsTo(t, "b@h")
	l.ackFrom("a@h", l.pb.tick, t0+10*time.Millisecond, slot)
	assert.Equal(t, uint64(1), l.c.stats.pairRefused.Load())
	require.Eventually(t, func() bool { return l.fired.count() == 1 }, 5*time.Second, time.Millisecond, "its timer resumes")
	ahead := l.wake()
	assert.Equal(t, 1, ahead.Beats)
	assert.Zero(t, ahead.Acks[0].Count, "a refused slot is not covered")
	l.pb.fire(t0 + 50*time.Millisecond)
	for _, m := range l.members {
		beats := l.beatsTo(t, m.PID.Node)
		require.Len(t, beats, 1)
		assert.Len(t, beats[0].Leaves, 1, "every slot of the leader leaves")
	}
}

// Rule 8.6 from the leader's side: a PairAck saying Reset starts the pair
// afresh: its leaders are unpaired, and its next beat opens a new epoch.
func TestAResetStartsThePairAfresh(t *testing.T) {
	given := time.Now()
	l := pairLeader(t, given)
	t0 := l.paired
	l.pb.fire(t0)
	was := l.beatsTo(t, "a@h")[0].Epoch
	l.pb.acked("a@h", &PairAck{Interval: int64(l.pb.d), Epoch: was, Tick: l.pb.tick, Reset: true}, t0+10*time.Millisecond)
	require.Eventually(t, func() bool { return l.fired.count() == 1 }, 5*time.Second, time.Millisecond, "its timer resumes")
	l.wake()
	// Paired again on its next tick: the pair's new epoch starts with it.
	b := l.ib.lead.beat
	l.ib.publishBeat(&b, []time.Duration{t0, t0})
	_, ok := l.c.beatAhead(l.ib, l.timer, &timerOwner{process: l.fired, pid: l.pid, inbox: l.ib, grid: newHeartbeatGrid(nil), pairs: l.pb}, t0+50*time.Millisecond)
	require.True(t, ok)
	l.pb.fire(t0 + 50*time.Millisecond)
	beats := l.beatsTo(t, "a@h")
	require.Len(t, beats, 1)
	assert.NotEqual(t, was, beats[0].Epoch)
	assert.Equal(t, uint64(0), beats[0].Prev, "a new epoch's first beat")
	assert.Len(t, beats[0].Joins, 1)
	assert.Equal(t, uint64(1), l.c.stats.pairResets.Load())
}

// Rule 8.4: a tick past a paired leader's beat's end is not done for it.
func TestAPairedLeaderIsNotBeatenPastItsBeatsEnd(t *testing.T) {
	given := time.Now()
	l := pairLeader(t, given)
	t0 := l.paired
	l.pb.fire(t0)
	l.pb.mu.Lock()
	q := l.ib.lead.paired
	q.until, l.pb.untilAt = t0+60*time.Millisecond, t0+60*time.Millisecond
	l.pb.mu.Unlock()
	l.pb.fire(t0 + 50*time.Millisecond)
	l.pb.fire(t0 + 100*time.Millisecond)
	ahead := l.wake()
	assert.Equal(t, 2, ahead.Beats, "the tick past the end was not done")
	assert.Equal(t, gridEpoch.Add(t0+50*time.Millisecond), ahead.LastBeat)
}

// sinkNode takes every send, for flushes the tests do not look at.
type sinkNode struct{ gen.Node }

func (sinkNode) Name() gen.Atom                 { return "n@h" }
func (sinkNode) Send(to any, message any) error { return nil }

// boundFollower is a follower on n@h whose steady answer answers the
// heartbeat of a leader on p@h, with the coalescer process that takes that
// leader's node's pair beats.
func boundFollower(t *testing.T) (*coalescerProcess, *inbox, *firings, gen.PID, PairJoin) {
	c, leaderPID, beat := runningCoalescer(t, sinkNode{})
	c.ackLinger = time.Hour // nothing is flushed: the test takes the outboxes
	follower := gen.PID{Node: "n@h", ID: 2, Creation: 1}
	ib := &inbox{}
	c.addInbox(follower, ib)
	ack := election.MessageHeartbeatAck{Header: election.Header{ClusterID: "c", Term: 3, From: gen.ProcessID{Name: "m", Node: "n@h"}}}
	ib.publish(&steadyReply{SteadyAnswer: election.SteadyAnswer{Leader: leaderPID, Heartbeat: steadyOf(beat), Ack: ack, Timeout: time.Second},
		linger: time.Hour})
	sent := &firings{}
	p := &coalescerProcess{Process: sent, c: c}
	hb := beat
	hb.From.Node = ""
	j := PairJoin{Slot: 1, CoalescedRoute: CoalescedRoute{FromID: leaderPID.ID, FromCreation: leaderPID.Creation, ToID: follower.ID, ToCreation: follower.Creation},
		Heartbeat: hb, Ack: ack}
	return p, ib, sent, leaderPID, j
}

func acksTo(t *testing.T, c *coalescer, node gen.Atom) []PairAck {
	b, _ := c.take(node)
	assert.Empty(t, b.Acks, "a bound member's acknowledgements travel in PairAcks only")
	return b.BeatAcks
}

// Rule 8.2: a join that the follower's published answer answers binds its
// slot: each later beat is a heartbeat answered for it, held as the last
// one, without waking it, and acknowledged in the pair's PairAck; once it
// withdraws its answer, the binding ends in the same step and the slot is
// refused, its heartbeat delivered, until its leave arrives.
func TestABoundMemberAnswersEveryBeatUntilItWithdraws(t *testing.T) {
	p, ib, sent, leaderPID, j := boundFollower(t)
	c := p.c
	start := time.Now()
	p.receiveBeat("p@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 7, Tick: 1, Joins: []PairJoin{j}}, start)
	require.NotNil(t, ib.paired, "bound")
	acks := acksTo(t, c, "p@h")
	require.Len(t, acks, 1)
	assert.Equal(t, PairAck{Interval: int64(50 * time.Millisecond), Epoch: 7, Tick: 1, Bound: []uint32{j.Slot}}, acks[0], "the PairAck names it bound")
	for k := uint64(2); k <= 4; k++ {
		p.receiveBeat("p@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 7, Prev: k - 1, Tick: k}, start.Add(time.Duration(k)*10*time.Millisecond))
	}
	assert.Zero(t, sent.count(), "nothing wakes the member")
	until, ok, parked := ib.heardUntil()
	require.True(t, ok)
	assert.True(t, parked, "its election timer may park: the pair's watchdog is armed")
	assert.Equal(t, sinceEpoch(start.Add(40*time.Millisecond))+time.Second, until, "its election timeout runs from the last beat")
	acks = acksTo(t, c, "p@h")
	require.Len(t, acks, 3)
	assert.Empty(t, acks[2].Refused)

	ib.withdrawPaired(c)
	assert.Nil(t, ib.paired)
	_, beats, ahead := ib.take()
	require.Len(t, beats, 1, "the beats are held as their last one")
	assert.Equal(t, sinceEpoch(start.Add(40*time.Millisecond)), beats[0])
	assert.Equal(t, 3, ahead.skipped, "standing for four heartbeats")

	p.receiveBeat("p@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 7, Prev: 4, Tick: 5}, start.Add(50*time.Millisecond))
	require.Equal(t, 1, sent.count(), "a refused slot's heartbeat is delivered")
	in, isIn := sent.sent[0].(coalescedIn)
	require.True(t, isIn)
	assert.Equal(t, leaderPID, in.from)
	acks = acksTo(t, c, "p@h")
	require.Len(t, acks, 1)
	assert.Equal(t, []uint32{j.Slot}, acks[0].Refused, "and named until its leave arrives")
	p.receiveBeat("p@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 7, Prev: 5, Tick: 6, Leaves: []uint32{j.Slot}}, start.Add(60*time.Millisecond))
	assert.Equal(t, 1, sent.count(), "a slot that left is beaten no more")
	assert.Empty(t, acksTo(t, c, "p@h")[0].Refused)
}

// Rule 8.2: a join whose expected acknowledgement is not the member's, or
// that finds no answer published, is refused; its heartbeat goes the way
// of a coalesced one.
func TestAJoinTheMembersAnswerDoesNotAnswerIsRefused(t *testing.T) {
	p, ib, sent, _, j := boundFollower(t)
	other := j
	other.Ack.Declines = true
	p.receiveBeat("p@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 7, Tick: 1, Joins: []PairJoin{other}}, time.Now())
	assert.Nil(t, ib.paired)
	b, _ := p.c.take("p@h")
	require.Len(t, b.BeatAcks, 1)
	assert.Equal(t, []uint32{j.Slot}, b.BeatAcks[0].Refused)
	// Its heartbeat was answered ahead as a coalesced one (rule 6), with
	// the member's own answer.
	require.Len(t, b.Acks, 1)
	assert.Equal(t, ib.steady.Ack.Declines, b.Acks[0].Message.Declines)
	assert.Zero(t, sent.count())

	ib.withdrawPaired(p.c)
	j.Slot = 2
	p.receiveBeat("p@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 7, Prev: 1, Tick: 2, Joins: []PairJoin{j}}, time.Now())
	assert.Nil(t, ib.paired, "no answer published: refused")
	assert.Equal(t, 2, sent.count(), "both refused slots' heartbeats delivered")
}

// Rule 8.6 from the follower's side: a beat out of sequence unbinds every
// slot of its pair and answers Reset; only a new epoch binds again.
func TestABeatOutOfSequenceResetsThePair(t *testing.T) {
	p, ib, _, _, j := boundFollower(t)
	start := time.Now()
	p.receiveBeat("p@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 7, Tick: 1, Joins: []PairJoin{j}}, start)
	require.NotNil(t, ib.paired)
	acksTo(t, p.c, "p@h")
	p.receiveBeat("p@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 7, Prev: 2, Tick: 3}, start.Add(10*time.Millisecond))
	assert.Nil(t, ib.paired, "unbound")
	acks := acksTo(t, p.c, "p@h")
	require.Len(t, acks, 1)
	assert.True(t, acks[0].Reset)
	_, beats, _ := ib.take()
	assert.Equal(t, []time.Duration{sinceEpoch(start)}, beats, "what it stood for is held: the join's heartbeat")
	p.receiveBeat("p@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 7, Prev: 3, Tick: 4}, start.Add(20*time.Millisecond))
	assert.True(t, acksTo(t, p.c, "p@h")[0].Reset, "the old epoch stays refused")
	j.Slot = 9
	p.receiveBeat("p@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 8, Tick: 5, Joins: []PairJoin{j}}, start.Add(30*time.Millisecond))
	assert.NotNil(t, ib.paired, "a new epoch binds again")
	assert.False(t, acksTo(t, p.c, "p@h")[0].Reset)
}

// Rule 8.5: a leader unpaired before its instant's beats went out (it woke
// in between) never joined: no beat carries its join or a leave, and no
// tick counts for it; its own timer does that tick.
func TestALeaderUnpairedBeforeItsJoinWentOutNeverJoins(t *testing.T) {
	l := pairLeader(t, time.Now())
	ahead := l.wake()
	assert.Zero(t, ahead.Beats)
	l.pb.fire(l.paired)
	assert.Empty(t, l.beatsTo(t, "a@h"), "neither a join nor a leave")
	assert.Empty(t, l.beatsTo(t, "b@h"))
}

// Rule 3 of pair beats: an acknowledgement a PairAck brings that the pair
// cannot credit (a first one after a silence of the window, a late one, one
// owed to a slot that left) is held for its leader as a coalesced one is:
// as arriving when the PairAck arrived. It was held as arriving when the
// coalescer got round to it (time.Now() in apply), later than its
// arrival by however long the batch took: evidence newer than what came.
// Found by the adversarial review of pair beats.
func TestAnAcknowledgementAPairAckCannotCreditIsHeldAsArrivingWithIt(t *testing.T) {
	given := time.Now().Add(-time.Second)
	c, _, ib, members, _, q := pairedBeatingLeader(t, given)
	pb := q.pb
	pb.fire(sinceEpoch(given.Add(20 * time.Millisecond))) // tick 1 carries the joins
	po := pb.pairs[members[0].PID.Node]
	require.NotNil(t, po)
	at := sinceEpoch(given.Add(200 * time.Millisecond)) // a window after the member's last reply
	pb.acked(members[0].PID.Node, &PairAck{Interval: int64(pb.d), Epoch: po.epoch, Tick: 1, Echo: stampOf(at), Bound: joinedWith(po, 1, nil)}, at)
	acks, _, _ := ib.take()
	require.Len(t, acks, 1, "the acknowledgement is held for the leader to judge")
	require.True(t, acks[0].at.Equal(gridEpoch.Add(at)), "held as arriving with its PairAck at %v, not at %v", gridEpoch.Add(at), acks[0].at)
	require.Equal(t, uint64(1), c.Stats().Unpaired)
}

// Rule 2 of pair beats: a slot its follower node does not bind is refused,
// and named in every PairAck until it leaves, since the leader node credits
// each PairAck to every slot it does not name (rule 3). A join whose entry
// the follower node drops (no addressee, a sender node named) was neither
// bound nor refused: its member was credited an acknowledgement for every
// beat though nothing answered for it. Found by the adversarial review of
// pair beats.
func TestAJoinTheFollowerNodeDropsIsRefused(t *testing.T) {
	c, leader, beat := runningCoalescer(t, &stalledNode{})
	p := &coalescerProcess{c: c}
	hb := beat
	hb.From.Node = ""
	join := PairJoin{Slot: 1, CoalescedRoute: CoalescedRoute{FromID: leader.ID, FromCreation: 1}, Heartbeat: hb} // addressed to no one
	p.receiveBeat(leader.Node, &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 1, Tick: 1, Joins: []PairJoin{join}}, time.Now())
	b, ok := c.take(leader.Node)
	require.True(t, ok)
	require.Len(t, b.BeatAcks, 1)
	require.Equal(t, []uint32{1}, b.BeatAcks[0].Refused, "the slot nothing answers for is refused")
	require.Equal(t, uint64(1), c.Stats().Dropped[dropMalformedEntry])
}

// Rule 8.3: a slot is covered only from the PairAck that names it bound; a
// PairAck for its join's tick that does not (its join lost, or not taken)
// credits nothing to it and unpairs its leader.
func TestASlotNoPairAckNamesBoundIsNeverCredited(t *testing.T) {
	given := time.Now()
	l := pairLeader(t, given)
	t0 := l.paired
	l.pb.fire(t0)
	po := l.pb.pairs["a@h"]
	l.pb.acked("a@h", &PairAck{Interval: int64(l.pb.d), Epoch: po.epoch, Tick: l.pb.tick, Echo: stampOf(t0 + 10*time.Millisecond)}, t0+10*time.Millisecond)
	require.Eventually(t, func() bool { return l.fired.count() == 1 }, 5*time.Second, time.Millisecond, "its timer resumes")
	ahead := l.wake()
	assert.Zero(t, ahead.Acks[0].Count, "nothing credited to a slot not confirmed")
}

// Rule 8 and rule 5 of the shell's timers: a bound member's election
// timer parks instead of re-arming at each beat, and once the pair's beats
// stop, the pair's watchdog resumes it: it fires, and wakes the member, when
// the last beat is its Timeout old.
func TestABoundMembersElectionTimerWakesItOnlyOnceItsPairFallsSilent(t *testing.T) {
	p, ib, _, _, j := boundFollower(t)
	ib.mu.Lock()
	ib.steady.Timeout = 100 * time.Millisecond
	ib.mu.Unlock()
	fired := &firings{}
	tm := &shellTimer{pending: true}
	o := &timerOwner{process: fired, pid: gen.PID{Node: "n@h", ID: 2, Creation: 1}, inbox: ib, election: tm}
	ib.owner = o
	t.Cleanup(func() {
		tm.mu.Lock()
		tm.stop(o)
		tm.mu.Unlock()
	})
	start := time.Now()
	p.receiveBeat("p@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 7, Tick: 1, Joins: []PairJoin{j}}, start)
	require.NotNil(t, ib.paired)
	// The timer falls due while bound: it parks until the heartbeats held
	// would let it fall due, without waking the member.
	tm.mu.Lock()
	tm.due, tm.runAt = sinceEpoch(start), sinceEpoch(start)
	tm.mu.Unlock()
	tm.fire(o, election.TimerElection)
	tm.mu.Lock()
	runAt, due := tm.runAt, tm.due
	tm.mu.Unlock()
	assert.Zero(t, runAt, "parked: no Go timer runs for it")
	assert.Equal(t, sinceEpoch(start)+100*time.Millisecond, due, "due a Timeout after the last beat")
	assert.Zero(t, fired.count())
	// No beat comes any more: the watchdog resumes it, and it wakes the member.
	require.Eventually(t, func() bool { return fired.count() == 1 }, 5*time.Second, time.Millisecond,
		"a member whose pair fell silent times out")
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "not before its Timeout")
}

// A coalescer that ends for good (its node stops, or its last member
// ended) stops its pairs' watchdogs: an armed runtime timer keeps its
// callback, and through the bindings the members, alive until it fires, so
// a stopped node's members would outlive it by an election timeout. A beat
// taken after that arms nothing.
func TestACoalescerThatEndsForGoodStopsItsPairsWatchdogs(t *testing.T) {
	p, ib, _, _, j := boundFollower(t)
	ib.mu.Lock()
	ib.steady.Timeout = time.Hour
	ib.mu.Unlock()
	p.receiveBeat("p@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 7, Tick: 1, Joins: []PairJoin{j}}, time.Now())
	require.NotNil(t, ib.paired, "bound")
	src := p.c.pairsIn[pairKey{node: "p@h", interval: int64(50 * time.Millisecond)}]
	require.NotNil(t, src)
	src.mu.Lock()
	require.NotNil(t, src.watchdog, "a bound member's pair is watched")
	src.mu.Unlock()

	// Not the node's current share: its last member ended.
	p.share = &nodeShare{key: nodeKey{node: "n@h", creation: 1}, coal: p.c}
	p.ProcessTerminate(gen.TerminateReasonNormal)
	src.mu.Lock()
	defer src.mu.Unlock()
	assert.False(t, src.watchdog.Stop(), "the watchdog was stopped")
	src.watch(sinceEpoch(time.Now()))
	assert.False(t, src.watchdog.Stop(), "a later beat re-arms nothing")
}

// Rule 8.1: a leader whose tick comes after its instant's pair beats went
// out sends that tick itself, as rule 7 does, and joins with the next
// instant's beats: the pairs never tick off their grid for a late one.
func TestALeaderPairedAfterItsInstantsBeatsSendsItsTickAndJoinsTheNext(t *testing.T) {
	l, o, late := lateLeader(t, time.Now())
	next, ok := l.c.beatAhead(l.ib, l.timer, o, late)
	require.True(t, ok)
	require.NotNil(t, l.ib.lead.paired, "paired")
	assert.Equal(t, l.ib.lead.beat.until, next, "its timer parks")
	for _, m := range l.members {
		out, _ := l.c.take(m.PID.Node)
		assert.Len(t, out.Heartbeats, 1, "its tick went to %s as rule 7 sends it", m.PID.Node)
		assert.Empty(t, out.Beats, "no pair beat off the grid")
	}
	l.pb.fire(late) // the grid firing again within the instant does nothing
	assert.Empty(t, l.beatsTo(t, "a@h"))
	instant := l.pb.next()
	require.Greater(t, instant, late)
	l.pb.fire(instant)
	beats := l.beatsTo(t, "a@h")
	require.Len(t, beats, 1)
	assert.Len(t, beats[0].Joins, 1, "it joins with the next instant's beat")
	ahead := l.wake()
	assert.Equal(t, 2, ahead.Beats, "its own tick and the join's")
	assert.Equal(t, gridEpoch.Add(instant), ahead.LastBeat)
}

// Rule 8.3: a paired leader's members' replies to the ticks it sent itself
// before its slots' first PairAck (still in flight as it paired) are taken
// as rule 7 takes them, and are each member's last reply until then: they
// neither unpair it nor go unseen by the pairs' silence check.
func TestARepliesToItsOwnTicksLeavesAPairedLeaderPaired(t *testing.T) {
	given := time.Now()
	l := pairLeader(t, given)
	t0 := l.paired
	l.pb.fire(t0)
	ack := l.members[1].Ack
	replied := t0 + 40*time.Millisecond
	require.True(t, l.c.hold(l.pid, l.members[1].PID, gridEpoch.Add(replied), echoedAt(ack, gridEpoch.Add(replied))))
	assert.NotNil(t, l.ib.lead.paired, "still paired")
	assert.Equal(t, uint64(1), l.c.stats.taken.Load())
	// b@h's PairAck never comes; a@h's does. The silence check counts b@h's
	// reply: a tick a window after given (b@h's last reply before it) is
	// still done.
	l.ackFrom("a@h", l.pb.tick, t0+10*time.Millisecond)
	at := max(sinceEpoch(given.Add(l.ib.lead.beat.Window)), l.pb.next())
	require.Less(t, at, replied+l.ib.lead.beat.Window)
	l.pb.fire(at)
	assert.Zero(t, l.fired.count(), "not unpaired for a silence that its reply broke")
	ahead := l.wake()
	assert.Equal(t, 2, ahead.Beats)
	assert.Equal(t, gridEpoch.Add(replied), ahead.Acks[1].Last)
}

// Rule 8.2, across a wake-up: a bound member that steps an input keeps its
// binding when its answer afterwards is the one it was bound with. Its
// step begins with the beats it stood for (held as their last one), no beat
// is answered for it while it steps, and the beats after it are answered
// for it again without a new join.
func TestABindingStandsThroughAWakeUpThatLeavesTheAnswerAsItWas(t *testing.T) {
	p, ib, sent, _, j := boundFollower(t)
	c := p.c
	start := time.Now()
	beat := func(k uint64, at time.Time) {
		p.receiveBeat("p@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 7, Prev: k - 1, Tick: k}, at)
	}
	p.receiveBeat("p@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 7, Tick: 1, Joins: []PairJoin{j}}, start)
	beat(2, start.Add(10*time.Millisecond))
	beat(3, start.Add(20*time.Millisecond))
	acksTo(t, c, "p@h")
	answer := ib.steady

	require.True(t, ib.suspendPaired(), "it was bound")
	assert.False(t, ib.answering, "nothing is answered for it while it steps")
	_, beats, ahead := ib.take()
	assert.Equal(t, []time.Duration{sinceEpoch(start.Add(20 * time.Millisecond))}, beats, "it steps the beats it stood for first")
	assert.Equal(t, 2, ahead.skipped)
	until, ok, _ := ib.heardUntil()
	require.True(t, ok)
	assert.Equal(t, sinceEpoch(start.Add(20*time.Millisecond))+time.Second, until, "its timeout runs from the last beat it took")

	later := answer
	later.since = sinceEpoch(start.Add(25 * time.Millisecond))
	require.True(t, ib.resumePaired(c, &later), "the same answer: the binding stands")
	assert.True(t, ib.answering)
	assert.Same(t, ib.paired, ib.paired.src.bound[j.Slot])
	assert.Equal(t, uint64(1), c.Stats().PairKept)
	assert.Zero(t, c.Stats().PairUnbound)

	beat(4, start.Add(30*time.Millisecond))
	acks := acksTo(t, c, "p@h")
	require.Len(t, acks, 1)
	assert.Empty(t, acks[0].Refused, "the next PairAck covers it as before")
	assert.Zero(t, sent.count(), "and nothing wakes it")
	_, beats, ahead = ib.take()
	assert.Empty(t, beats, "nothing new is held until it wakes again")
	ib.withdrawPaired(c)
	_, beats, ahead = ib.take()
	assert.Equal(t, []time.Duration{sinceEpoch(start.Add(30 * time.Millisecond))}, beats, "only the beat after its step")
	assert.Zero(t, ahead.skipped)
}

// Rule 8.2, across a wake-up: a beat taken while the member steps finds no
// answer standing, as after a withdrawal: the slot is refused, its heartbeat
// delivered, and the member resumes unbound.
func TestABeatWhileABoundMemberStepsRefusesItsSlot(t *testing.T) {
	p, ib, sent, j, start := boundOnItsJoin(t)
	c := p.c
	answer := ib.steady

	require.True(t, ib.suspendPaired())
	p.receiveBeat("p@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 7, Prev: 1, Tick: 2}, start.Add(10*time.Millisecond))
	acks := acksTo(t, c, "p@h")
	require.Len(t, acks, 1)
	assert.Equal(t, []uint32{j.Slot}, acks[0].Refused, "not covered: its answer did not stand")
	assert.Equal(t, 1, sent.count(), "the beat's heartbeat is delivered to it")
	assert.Nil(t, ib.paired)

	assert.False(t, ib.resumePaired(c, &answer), "nothing to resume")
	assert.Nil(t, ib.paired)
	assert.Zero(t, c.Stats().PairKept)
}

// Rule 8.2, across a wake-up: a member whose answer changed in its step (it
// moved to another term, say) or that has none any more ends its binding
// when it resumes, and the slot is refused.
func TestABindingEndsWhenTheWakeUpChangedTheAnswer(t *testing.T) {
	for name, change := range map[string]func(r *steadyReply) *steadyReply{
		"another acknowledgement": func(r *steadyReply) *steadyReply { r.Ack.Declines = true; return r },
		"another heartbeat":       func(r *steadyReply) *steadyReply { r.Heartbeat.Term++; r.Ack.Term++; return r },
		"no answer":               func(*steadyReply) *steadyReply { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			p, ib, _, j, start := boundOnItsJoin(t)
			c := p.c
			answer := ib.steady
			require.True(t, ib.suspendPaired())
			assert.False(t, ib.resumePaired(c, change(&answer)))
			assert.Nil(t, ib.paired)
			assert.Equal(t, uint64(1), c.Stats().PairUnbound)
			p.receiveBeat("p@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 7, Prev: 1, Tick: 2}, start.Add(10*time.Millisecond))
			acks := acksTo(t, c, "p@h")
			require.Len(t, acks, 1)
			assert.Equal(t, []uint32{j.Slot}, acks[0].Refused)
		})
	}
}

// boundOnItsJoin is boundFollower bound by its join's beat, tick 1 of
// epoch 7, which arrived at start; its PairAck is taken.
func boundOnItsJoin(t *testing.T) (*coalescerProcess, *inbox, *firings, PairJoin, time.Time) {
	p, ib, sent, _, j := boundFollower(t)
	start := time.Now()
	p.receiveBeat("p@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 7, Tick: 1, Joins: []PairJoin{j}}, start)
	require.NotNil(t, ib.paired)
	acksTo(t, p.c, "p@h")
	return p, ib, sent, j, start
}

// Rule 8.2, across a wake-up: a beat held for a binding kept through a step
// is held as arriving no earlier than the answer it was answered with, as
// a heartbeat answered ahead is (rule 6).
func TestABeatAfterAKeptStepIsHeldNoEarlierThanTheAnswer(t *testing.T) {
	p, ib, _, _, start := boundOnItsJoin(t)
	c := p.c
	answer := ib.steady
	require.True(t, ib.suspendPaired())
	ib.take()
	later := answer
	later.since = sinceEpoch(start.Add(25 * time.Millisecond))
	require.True(t, ib.resumePaired(c, &later))
	// Its arrival was read before the answer was given.
	p.receiveBeat("p@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 7, Prev: 1, Tick: 2}, start.Add(22*time.Millisecond))
	ib.withdrawPaired(c)
	_, beats, _ := ib.take()
	require.Len(t, beats, 1)
	assert.Equal(t, later.since, beats[0])
}

// steadyOf is the heartbeat a steady answer to hb answers.
func steadyOf(hb election.MessageHeartbeat) election.SteadyHeartbeat {
	return election.SteadyHeartbeat{Header: hb.Header, Committed: hb.Committed}
}

// echoedAt is ack as answering a heartbeat sent at at, its arrival: an
// answer that took no time, evidence of at.
func echoedAt(ack election.MessageHeartbeatAck, at time.Time) *election.MessageHeartbeatAck {
	ack.Echo = stampOf(sinceEpoch(at))
	return &ack
}
