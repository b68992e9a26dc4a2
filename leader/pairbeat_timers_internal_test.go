package leader

import (
	"math/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// lateLeader is pairLeader once its instant's pair beats went out, woken
// and beating again: its timer's owner, and a moment after that instant,
// halfway to the grid's next, when its next tick comes late. (A fixed
// millisecond fell after the next instant whenever the test's start put
// that instant less than a millisecond away.)
func lateLeader(t *testing.T, given time.Time) (*pairingLeader, *timerOwner, time.Duration) {
	l := pairLeader(t, given)
	t0 := l.paired
	l.pb.fire(t0)
	l.beatsTo(t, "a@h")
	l.beatsTo(t, "b@h")
	l.wake()
	b := l.ib.lead.beat
	l.ib.publishBeat(&b, []time.Duration{t0, t0})
	grid := newHeartbeatGrid(nil)
	t.Cleanup(grid.close)
	o := &timerOwner{process: l.fired, pid: l.pid, inbox: l.ib, grid: grid, pairs: l.pb}
	return l, o, t0 + (l.pb.instantAfter(t0)-t0)/2
}

// Rule 8.1 and 8.5: a leader paired late (its instant's pair beats had
// gone out, so it sent its tick as rule 7 does and joins the next instant)
// is unpaired by its members' replies to that very tick, which reach it
// before its joins go out. Its timer resumed at once, since no tick was
// done by the pairs for it: it sent another tick at once, off its grid,
// was paired late again, and so on, a tick per round trip until an instant
// caught it paired. Its next tick is the instant after its own.
func TestALateLeaderUnpairedBeforeItsJoinsWentOutTicksAtItsNextInstant(t *testing.T) {
	l, o, late := lateLeader(t, time.Now().Add(time.Hour)) // nothing falls due while the test runs
	l.timer.mu.Lock()
	parked, ok := l.c.beatAhead(l.ib, l.timer, o, late)
	l.timer.due = parked
	l.timer.mu.Unlock()
	require.True(t, ok)
	require.NotNil(t, l.ib.lead.paired, "paired late")
	instant := l.pb.next()
	require.Greater(t, instant, late)

	// The reply to the tick it sent itself comes back before the instant:
	// taken, as rule 7 takes it; it stays paired.
	ack := l.members[0].Ack
	require.True(t, l.c.hold(l.pid, l.members[0].PID, gridEpoch.Add(late+2*time.Millisecond), echoedAt(ack, gridEpoch.Add(late+2*time.Millisecond))))
	require.NotNil(t, l.ib.lead.paired, "a reply to its own tick leaves it paired")
	// Another reply does unpair it.
	other := l.members[1].Ack
	other.Declines = true
	require.True(t, l.c.hold(l.pid, l.members[1].PID, gridEpoch.Add(late+3*time.Millisecond), echoedAt(other, gridEpoch.Add(late+3*time.Millisecond))))
	require.Nil(t, l.ib.lead.paired, "a member replying otherwise unpairs it")
	l.timer.mu.Lock()
	due := l.timer.due
	l.timer.mu.Unlock()
	require.Equal(t, instant, due, "its next tick is at the instant after its own, not at once")
}

// Rule 8 of the coalescer and rule 5 of the shell's timers, the promise a
// parked election timer rests on: once a pair's beats stop, every member of
// the follower node wakes by its election timer, whether it is still bound
// on the pair, was unbound by a leave, a reset or its own withdrawal, or
// never bound at all. Random runs of the real follower node side
// (receiveBeat, the pairs' watchdogs, inbox.heardUntil, shellTimer.fire,
// Actor.withdrawSteady, applyTimer) on the real clock, with election
// Timeouts of a few tens of milliseconds: beats come in sequence, out of
// it, in new epochs, bind and leave; members handle messages (withdraw,
// re-arm, publish again, some answers not the leader's) and wake on their
// timers between beats. Each run then falls silent, and every member must
// wake. A parked timer nobody resumes is a follower that never campaigns
// again: its cluster never elects another leader.
func TestBoundFollowersWakeOnceTheirPairFallsSilent(t *testing.T) {
	parked := 0
	for seed := int64(1); seed <= 12; seed++ {
		n, ok := runSilentPairs(t, seed)
		if !ok {
			t.Logf("seed %d", seed)
			return
		}
		parked += n
	}
	require.NotZero(t, parked, "no run fell silent with a timer parked: the runs test nothing")
}

// spMember is a follower of a leader on one of the pair's sender nodes.
type spMember struct {
	a       *Actor
	pid     gen.PID
	sender  int
	timeout time.Duration
	woken   atomic.Bool
	ack     election.MessageHeartbeatAck
}

// spWake records the member's election timer firing: the actor woken.
type spWake struct {
	gen.Process
	m *spMember
}

func (w *spWake) Send(to any, message any) error {
	if f, ok := message.(timerFired); ok && f.kind == election.TimerElection {
		w.m.woken.Store(true)
	}
	return nil
}

// spPair is a sender node's side of its pair as the test plays it.
type spPair struct {
	node        gen.Atom
	leader      gen.PID
	hb          election.MessageHeartbeat
	epoch, tick uint64
	nextSlot    uint32
	slots       map[uint32]*spMember
}

// join is a new slot for m, joining with the next beat.
func (sp *spPair) join(m *spMember) PairJoin {
	sp.nextSlot++
	sp.slots[sp.nextSlot] = m
	hb := sp.hb
	hb.From.Node = ""
	return PairJoin{Slot: sp.nextSlot, CoalescedRoute: CoalescedRoute{FromID: sp.leader.ID, FromCreation: 1, ToID: m.pid.ID, ToCreation: 1},
		Heartbeat: hb, Ack: m.ack}
}

// runSilentPairs plays one run and reports how many members had their
// election timer parked when the beats stopped, and whether all woke.
func runSilentPairs(t *testing.T, seed int64) (int, bool) {
	rng := rand.New(rand.NewSource(seed))
	c, _, _ := runningCoalescer(t, sinkNode{})
	c.ackLinger = time.Hour
	p := &coalescerProcess{Process: &firings{}, c: c}
	share := &nodeShare{coal: c}
	const interval = 10 * time.Millisecond
	var pairs []*spPair
	for i, n := range []gen.Atom{"p@h", "q@h"} {
		leader := gen.PID{Node: n, ID: uint64(7 + i), Creation: 1}
		hb := election.MessageHeartbeat{Header: election.Header{ClusterID: "c", Term: 3, From: gen.ProcessID{Name: "m", Node: n}}}
		pairs = append(pairs, &spPair{node: n, leader: leader, hb: hb, epoch: 1, slots: make(map[uint32]*spMember)})
	}
	var members []*spMember
	for i := range 6 {
		m := &spMember{a: &Actor{share: share}, pid: gen.PID{Node: "n@h", ID: uint64(100 + i), Creation: 1}, sender: rng.Intn(len(pairs)),
			timeout: time.Duration(20+rng.Intn(80)) * time.Millisecond}
		m.ack = election.MessageHeartbeatAck{Header: election.Header{ClusterID: "c", Term: 3, From: gen.ProcessID{Name: "m", Node: "n@h"}}}
		m.a.inbox.owner = &timerOwner{process: &spWake{m: m}, pid: m.pid, inbox: &m.a.inbox, election: &m.a.timers[election.TimerElection]}
		c.addInbox(m.pid, &m.a.inbox)
		members = append(members, m)
		spHandle(m, pairs, rng)
	}
	defer func() {
		for _, m := range members {
			m.a.stopTimers()
		}
	}()
	beat := func(sp *spPair, prev uint64, leaves []uint32, joins []PairJoin) {
		sp.tick++
		p.receiveBeat(sp.node, &PairBeat{Interval: int64(interval), Epoch: sp.epoch, Prev: prev, Tick: sp.tick, Leaves: leaves, Joins: joins}, time.Now())
		c.take(sp.node)
	}
	for range 150 {
		sp := pairs[rng.Intn(len(pairs))]
		switch x := rng.Intn(100); {
		case x < 45: // a beat in sequence, with leaves and joins
			prev := sp.tick
			if len(sp.slots) == 0 && rng.Intn(3) == 0 {
				sp.epoch, prev = sp.epoch+1, 0 // a new epoch
			}
			var leaves []uint32
			for id := range sp.slots {
				if rng.Intn(6) == 0 {
					leaves = append(leaves, id)
					delete(sp.slots, id)
				}
			}
			var joins []PairJoin
			for _, m := range members {
				if pairs[m.sender] == sp && rng.Intn(3) == 0 {
					joins = append(joins, sp.join(m))
				}
			}
			beat(sp, prev, leaves, joins)
		case x < 50: // out of sequence: the follower side resets
			beat(sp, sp.tick+1, nil, nil)
			sp.epoch++
			sp.tick++
			clear(sp.slots)
			beat(sp, 0, nil, nil)
		case x < 70: // a member handles a message
			spHandle(members[rng.Intn(len(members))], pairs, rng)
		default:
			time.Sleep(time.Duration(rng.Intn(int(interval))))
		}
		for _, m := range members {
			if m.woken.Load() {
				spHandle(m, pairs, rng)
			}
		}
	}
	// A steady stretch: beats faster than any Timeout, so bound members'
	// timers fall due and park; then the last beats leave, reset, or
	// just stop, and a member may withdraw.
	for k := range 40 {
		for _, sp := range pairs {
			var joins []PairJoin
			for _, m := range members {
				if k == 0 && pairs[m.sender] == sp {
					joins = append(joins, sp.join(m))
				}
			}
			beat(sp, sp.tick, nil, joins)
		}
		time.Sleep(3 * time.Millisecond)
		for _, m := range members {
			if m.woken.Load() {
				spHandle(m, pairs, rng)
			}
		}
	}
	for _, sp := range pairs {
		switch rng.Intn(4) {
		case 0:
			var leaves []uint32
			for id := range sp.slots {
				if rng.Intn(2) == 0 {
					leaves = append(leaves, id)
					delete(sp.slots, id)
				}
			}
			beat(sp, sp.tick, leaves, nil)
		case 1:
			beat(sp, sp.tick+1, nil, nil)
		}
	}
	if rng.Intn(3) == 0 {
		spHandle(members[rng.Intn(len(members))], pairs, rng)
	}
	// The beats stop: every member wakes by its election timer.
	// A parked timer waits for its pair's watchdog, which must not wait
	// longer than the member's own Timeout after the last beat.
	parked := 0
	for _, m := range members {
		tm := &m.a.timers[election.TimerElection]
		tm.mu.Lock()
		m.a.inbox.mu.Lock()
		b := m.a.inbox.paired
		if b != nil && tm.runAt == 0 && tm.due != 0 {
			parked++
		}
		m.a.inbox.mu.Unlock()
		tm.mu.Unlock()
		if b != nil {
			b.src.mu.Lock()
			watchdog := b.src.minTimeout
			b.src.mu.Unlock()
			assert.LessOrEqual(t, watchdog, m.timeout, "%v's pair watches for silence longer than its Timeout", m.pid)
		}
	}
	if !assert.Eventually(t, func() bool {
		for _, m := range members {
			if !m.woken.Load() {
				return false
			}
		}
		return true
	}, 20*time.Second, time.Millisecond, "every follower of a silent pair times out") {
		for _, m := range members {
			m.a.inbox.mu.Lock()
			bound := m.a.inbox.paired != nil
			m.a.inbox.mu.Unlock()
			tm := &m.a.timers[election.TimerElection]
			tm.mu.Lock()
			t.Logf("%v woken %v bound %v due %v runAt %v", m.pid, m.woken.Load(), bound, tm.due, tm.runAt)
			tm.mu.Unlock()
		}
		return parked, false
	}
	return parked, true
}

// spHandle is m handling a message, its timer's firing when it woke: its
// answer withdrawn (which ends its binding and runs its election timer
// again), what it holds taken, the firing judged (onTimerFired), its
// election timer re-armed as its core does on a campaign, moved later as on
// a heartbeat, or left as on an input that moves nothing, and its answer published again, now and then not the one its leader
// expects.
func spHandle(m *spMember, pairs []*spPair, rng *rand.Rand) {
	m.a.withdrawSteady()
	woken := m.woken.Swap(false)
	m.a.inbox.take()
	now := time.Now()
	tm := &m.a.timers[election.TimerElection]
	if woken {
		if _, due := m.a.onTimerFired(now, timerFired{kind: election.TimerElection}); due {
			// It campaigns: its core arms the timer again.
			m.a.applyTimer(now, election.TimerOp{Timer: election.Timer{Kind: election.TimerElection}, After: m.timeout})
		}
	} else if !tm.pending || rng.Intn(2) == 0 {
		m.a.applyTimer(now, election.TimerOp{Timer: election.Timer{Kind: election.TimerElection}, After: m.timeout})
	} else if rng.Intn(2) == 0 {
		// A heartbeat stepped moves the deadline later, lazily
		// (extendElection, with the core's deadline).
		tm.mu.Lock()
		tm.due = max(tm.due, sinceEpoch(now)+m.timeout)
		tm.mu.Unlock()
	}
	if rng.Intn(5) == 0 {
		return // no answer: its leader's heartbeats wake it
	}
	sp := pairs[m.sender]
	r := steadyReply{SteadyAnswer: election.SteadyAnswer{Leader: sp.leader, Heartbeat: steadyOf(sp.hb), Ack: m.ack, Timeout: m.timeout},
		linger: time.Hour, since: sinceEpoch(now)}
	if rng.Intn(6) == 0 {
		r.Ack.Declines = true
	}
	m.a.inbox.publish(&r)
	m.a.answering = true
}

// Rule 8 of the coalescer, the watchdog's side: once a pair's beats stop,
// the watchdog wakes each bound member when the member's own Timeout has
// passed since the last beat, never earlier, in deadline order, and firing
// the timers itself: a member whose Timeout has not passed keeps its timer
// parked rather than having it resumed with every other bound member's.
func TestTheWatchdogWakesBoundMembersByTheirOwnDeadline(t *testing.T) {
	c, _, _ := runningCoalescer(t, sinkNode{})
	c.ackLinger = time.Hour
	p := &coalescerProcess{Process: &firings{}, c: c}
	share := &nodeShare{coal: c}
	leader := gen.PID{Node: "p@h", ID: 7, Creation: 1}
	hb := election.MessageHeartbeat{Header: election.Header{ClusterID: "c", Term: 3, From: gen.ProcessID{Name: "m", Node: "p@h"}}}
	sp := &spPair{node: "p@h", leader: leader, hb: hb, epoch: 1, slots: make(map[uint32]*spMember)}
	timeouts := []time.Duration{30 * time.Millisecond, 60 * time.Millisecond, 90 * time.Millisecond, time.Hour}
	members := make([]*spMember, len(timeouts))
	woken := make([]atomic.Int64, len(timeouts)) // when each woke, on the shell's clock
	var joins []PairJoin
	for i, timeout := range timeouts {
		m := &spMember{a: &Actor{share: share}, pid: gen.PID{Node: "n@h", ID: uint64(100 + i), Creation: 1}, timeout: timeout}
		m.ack = election.MessageHeartbeatAck{Header: election.Header{ClusterID: "c", Term: 3, From: gen.ProcessID{Name: "m", Node: "n@h"}}}
		m.a.inbox.owner = &timerOwner{process: &wakeAt{at: &woken[i]}, pid: m.pid, inbox: &m.a.inbox, election: &m.a.timers[election.TimerElection]}
		c.addInbox(m.pid, &m.a.inbox)
		t.Cleanup(m.a.stopTimers)
		// Its timer is due at once, so it parks at the first firing while bound.
		m.a.applyTimer(time.Now(), election.TimerOp{Timer: election.Timer{Kind: election.TimerElection}, After: time.Millisecond})
		m.a.inbox.publish(&steadyReply{SteadyAnswer: election.SteadyAnswer{Leader: leader, Heartbeat: steadyOf(hb), Ack: m.ack, Timeout: timeout},
			linger: time.Hour, since: sinceEpoch(time.Now())})
		m.a.answering = true
		members[i] = m
		joins = append(joins, sp.join(m))
	}
	beat := func(joins []PairJoin) {
		prev := sp.tick
		sp.tick++
		p.receiveBeat(sp.node, &PairBeat{Interval: int64(10 * time.Millisecond), Epoch: sp.epoch, Prev: prev, Tick: sp.tick, Joins: joins}, time.Now())
		c.take(sp.node)
	}
	parked := func(m *spMember) bool {
		tm := &m.a.timers[election.TimerElection]
		tm.mu.Lock()
		defer tm.mu.Unlock()
		return tm.runAt == 0 && tm.due != 0
	}
	// Beats keep every member bound until all four timers have parked.
	beat(joins)
	require.Eventually(t, func() bool {
		beat(nil)
		for i, m := range members {
			if woken[i].Load() != 0 {
				woken[i].Store(0) // a beat came late on a loaded machine: it counts from the next
			}
			if !parked(m) {
				return false
			}
		}
		return true
	}, 30*time.Second, 5*time.Millisecond, "bound members' timers park while beats come")
	src := members[0].a.inbox.paired.src
	for i := range woken {
		woken[i].Store(0)
	}
	// The beats stop.
	src.mu.Lock()
	last := time.Duration(src.lastTickAt.Load())
	barked := c.Stats().PairBarked // a beat late on a loaded machine may have woken some already
	src.mu.Unlock()
	require.Eventually(t, func() bool { return woken[2].Load() != 0 }, 30*time.Second, time.Millisecond, "the member with the third Timeout wakes")
	for i, timeout := range timeouts[:3] {
		at := time.Duration(woken[i].Load())
		require.NotZero(t, at, "member %d, Timeout %s, woke before the one after it", i, timeout)
		assert.GreaterOrEqual(t, at, last+timeout, "member %d woke before its own Timeout passed since the last beat", i)
		if i > 0 {
			assert.GreaterOrEqual(t, at, time.Duration(woken[i-1].Load()), "members wake in the order of their deadlines")
		}
	}
	assert.Zero(t, woken[3].Load(), "the member whose Timeout has not passed does not wake")
	assert.True(t, parked(members[3]), "and its timer stays parked, for the watchdog or the next beat")
	assert.Equal(t, uint64(3), c.Stats().PairBarked-barked, "the watchdog counts the members it woke")
	assert.Equal(t, c.Stats().PairBarked, c.Stats().PairEvents()["barked"])
}

// wakeAt records when the member's election timer fired, on the shell's clock.
type wakeAt struct {
	gen.Process
	at *atomic.Int64
}

func (w *wakeAt) Send(to any, message any) error {
	if f, ok := message.(timerFired); ok && f.kind == election.TimerElection {
		w.at.CompareAndSwap(0, int64(sinceEpoch(time.Now())))
	}
	return nil
}

// watchedFollower is a follower on n@h with real election timers, whose
// wake-ups count in woken, and the coalescer and its process that take
// the pair beats of leader, on p@h, whose heartbeat is hb.
func watchedFollower(t *testing.T) (*coalescer, *coalescerProcess, gen.PID, election.MessageHeartbeat, *spMember, *atomic.Int64) {
	c, leader, hb := runningCoalescer(t, sinkNode{})
	c.ackLinger = time.Hour
	p := &coalescerProcess{Process: &firings{}, c: c}
	woken := new(atomic.Int64)
	return c, p, leader, hb, watchedMember(t, c, woken), woken
}

// watchedMember is a follower on n@h with real election timers whose
// wake-ups count in woken, its inbox in c, with a Timeout of 200ms: long
// enough that its timer parks before a silence could wake it, however late
// the machine runs the timer's callback.
func watchedMember(t *testing.T, c *coalescer, woken *atomic.Int64) *spMember {
	m := &spMember{a: &Actor{share: &nodeShare{coal: c}}, pid: gen.PID{Node: "n@h", ID: 100, Creation: 1}, timeout: 200 * time.Millisecond}
	m.ack = election.MessageHeartbeatAck{Header: election.Header{ClusterID: "c", Term: 3, From: gen.ProcessID{Name: "m", Node: "n@h"}}}
	m.a.inbox.owner = &timerOwner{process: &wakeAt{at: woken}, pid: m.pid, inbox: &m.a.inbox, election: &m.a.timers[election.TimerElection]}
	c.addInbox(m.pid, &m.a.inbox)
	t.Cleanup(m.a.stopTimers)
	return m
}

// parked reports whether m's election timer is parked: due, not scheduled.
func (m *spMember) parked() bool {
	tm := &m.a.timers[election.TimerElection]
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.runAt == 0 && tm.due != 0
}

// answerOf is the steady answer m gives hb from leader, given now.
func (m *spMember) answerOf(leader gen.PID, hb election.MessageHeartbeat) steadyReply {
	return steadyReply{SteadyAnswer: election.SteadyAnswer{Leader: leader, Heartbeat: steadyOf(hb), Ack: m.ack, Timeout: m.timeout},
		linger: time.Hour, since: sinceEpoch(time.Now())}
}

// Rule 8, the watchdog, across lives of the leaders' node: a new life's
// beats start again at tick 1 in a new epoch, and a pair falling silent
// there at the very tick the watchdog last fired after in the old life
// still wakes its bound members.
func TestTheWatchdogWakesBoundMembersInTheLeaderNodesNextLife(t *testing.T) {
	c, p, leader, hb, m, woken := watchedFollower(t)
	life := func(epoch, last uint64) {
		answer := m.answerOf(leader, hb)
		m.a.inbox.publish(&answer)
		sp := &spPair{node: "p@h", leader: leader, hb: hb, epoch: epoch, slots: make(map[uint32]*spMember)}
		j := sp.join(m)
		for k := uint64(1); k <= last; k++ {
			var joins []PairJoin
			if k == 1 {
				joins = []PairJoin{j}
			}
			p.receiveBeat(sp.node, &PairBeat{Interval: int64(10 * time.Millisecond), Epoch: epoch, Prev: k - 1, Tick: k, Joins: joins}, time.Now())
			c.take(sp.node)
			if k == 1 {
				// Armed once bound, so it can only park.
				m.a.applyTimer(time.Now(), election.TimerOp{Timer: election.Timer{Kind: election.TimerElection}, After: time.Millisecond})
			}
			if k < last {
				time.Sleep(5 * time.Millisecond)
			}
		}
		require.NotNil(t, m.a.inbox.paired, "bound")
		require.Eventually(t, m.parked, 30*time.Second, time.Millisecond, "its timer parked while bound")
		woken.Store(0)
	}
	life(1, 3)
	require.Eventually(t, func() bool { return woken.Load() != 0 }, 30*time.Second, time.Millisecond, "the first life's silence wakes it")
	life(2, 3)
	require.Eventually(t, func() bool { return woken.Load() != 0 }, 30*time.Second, time.Millisecond,
		"and so does the next life's, silent after the same tick")
}

// Rule 8, across a wake-up: a member whose binding a beat ended while it
// stepped has its election timer, parked while it was bound, run again.
func TestATimerParkedThroughAStepWhoseBindingEndedRunsAgain(t *testing.T) {
	_, p, leader, hb, m, _ := watchedFollower(t)
	answer := m.answerOf(leader, hb)
	m.a.inbox.publish(&answer)
	m.a.answering = true
	sp := &spPair{node: "p@h", leader: leader, hb: hb, epoch: 1, slots: make(map[uint32]*spMember)}
	p.receiveBeat(sp.node, &PairBeat{Interval: int64(10 * time.Millisecond), Epoch: 1, Tick: 1, Joins: []PairJoin{sp.join(m)}}, time.Now())
	m.a.applyTimer(time.Now(), election.TimerOp{Timer: election.Timer{Kind: election.TimerElection}, After: time.Millisecond})
	p.receiveBeat(sp.node, &PairBeat{Interval: int64(10 * time.Millisecond), Epoch: 1, Prev: 1, Tick: 2}, time.Now())
	require.Eventually(t, m.parked, 30*time.Second, time.Millisecond, "its timer parked while bound")

	m.a.suspendSteady()
	p.receiveBeat(sp.node, &PairBeat{Interval: int64(10 * time.Millisecond), Epoch: 1, Prev: 2, Tick: 3}, time.Now())
	require.Nil(t, m.a.inbox.paired, "a beat during its step refused its slot")
	m.a.inbox.take()
	later := m.answerOf(leader, hb)
	require.False(t, m.a.resumeSteady(&later))
	assert.False(t, m.parked(), "unbound, its timer runs again")
}
