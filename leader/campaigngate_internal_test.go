package leader

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// gated is one member at a test's campaign gate: its election timer, its
// owner and what its timer sent it.
type gated struct {
	f     *firings
	owner *timerOwner
	timer *shellTimer
	probe *shellTimer
}

func newGated(g *campaignGate, n int) []*gated {
	out := make([]*gated, n)
	for i := range out {
		f := &firings{}
		out[i] = &gated{f: f, timer: &shellTimer{}, probe: &shellTimer{},
			owner: &timerOwner{process: f, pid: gen.PID{Node: "n@h", ID: uint64(i + 1), Creation: 1}, inbox: &inbox{}, campaigns: g}}
	}
	return out
}

// fireDue makes m's election timer due now and runs its callback, as the Go
// timer would.
func (m *gated) fireDue() {
	m.timer.mu.Lock()
	now := sinceEpoch(time.Now())
	m.timer.due, m.timer.runAt = now, now
	m.timer.mu.Unlock()
	m.timer.fire(m.owner, election.TimerElection)
}

// moveDeadline moves m's election deadline an hour ahead lazily, as
// Actor.extendElection does when its leader is heard from: when its timer
// is armed.
func (m *gated) moveDeadline() {
	m.timer.mu.Lock()
	if m.timer.due != 0 {
		m.timer.due = sinceEpoch(time.Now()) + time.Hour
	}
	m.timer.mu.Unlock()
}

// cancel cancels m's election timer, as Actor.applyTimer does.
func (m *gated) cancel() {
	m.timer.mu.Lock()
	m.timer.due = 0
	m.timer.stop(m.owner)
	held := m.timer.leftGate(m.owner, election.TimerElection)
	m.timer.mu.Unlock()
	m.fireHeldProbe(held)
}

// fireHeldProbe fires m's probe timer when its firing was held, as
// Actor.fireHeldProbe does.
func (m *gated) fireHeldProbe(held bool) {
	if held {
		m.probe.fireHeld(m.owner, election.TimerProbe)
	}
}

// rearm arms m's election timer an hour ahead, as Actor.applyTimer does.
func (m *gated) rearm() {
	m.timer.mu.Lock()
	now := sinceEpoch(time.Now())
	m.timer.due = now + time.Hour
	if m.timer.runAt == 0 || m.timer.due < m.timer.runAt {
		m.timer.schedule(now, m.owner, election.TimerElection)
	}
	held := m.timer.leftGate(m.owner, election.TimerElection)
	m.timer.mu.Unlock()
	m.fireHeldProbe(held)
}

// fireProbe makes m's probe timer due now and runs its callback.
func (m *gated) fireProbe() {
	m.probe.mu.Lock()
	now := sinceEpoch(time.Now())
	m.probe.due, m.probe.runAt = now, now
	m.probe.mu.Unlock()
	m.probe.fire(m.owner, election.TimerProbe)
}

// sentKinds lists the timer kinds m's firings named, in order.
func (m *gated) sentKinds() []election.TimerKind {
	m.f.mu.Lock()
	defer m.f.mu.Unlock()
	var out []election.TimerKind
	for _, s := range m.f.sent {
		out = append(out, s.(timerFired).kind)
	}
	return out
}

func (m *gated) stop() {
	for _, t := range []*shellTimer{m.timer, m.probe} {
		t.mu.Lock()
		t.due = 0
		t.stop(m.owner)
		t.mu.Unlock()
	}
}

// placed reports whether o has a place, taken by its actor or not.
func placed(o *timerOwner) bool {
	st := gateState(o.gate.Load())
	return st == gateGranted || st == gateHolding
}

func firedCounts(ms []*gated) []int {
	out := make([]int, len(ms))
	for i, m := range ms {
		out[i] = m.f.count()
	}
	return out
}

// Campaign gate, rule 1: election timers that fire while the process has
// its capacity of members campaigning wait, oldest first, and each place
// freed wakes the oldest waiting member.
func TestCampaignGateRule1CapacityCampaignsAndTheRestWaitInOrder(t *testing.T) {
	g := newCampaignGate(2)
	ms := newGated(g, 4)
	for _, m := range ms {
		m.fireDue()
	}
	assert.Equal(t, []int{1, 1, 0, 0}, firedCounts(ms), "two places: the first two members campaign, the others wait")
	st := g.Stats()
	assert.Equal(t, 2, st.Holding)
	assert.Equal(t, 2, st.Queued)
	assert.Equal(t, uint64(2), st.Admitted)
	assert.Equal(t, uint64(2), st.Deferred)

	ms[3].fireDue() // a waiting member's timer firing again keeps its place
	assert.Equal(t, []int{1, 1, 0, 0}, firedCounts(ms))

	g.release(ms[1].owner)
	assert.Equal(t, []int{1, 1, 1, 0}, firedCounts(ms), "the freed place goes to the oldest waiting member")
	g.release(ms[0].owner)
	assert.Equal(t, []int{1, 1, 1, 1}, firedCounts(ms))
	assert.False(t, ms[3].owner.holds(), "a place is not held before its actor takes the firing that came with it")
	g.took(ms[3].owner)
	assert.True(t, ms[3].owner.holds(), "the actor took its firing: the place is settled after that input")
	g.release(ms[2].owner)
	g.release(ms[3].owner)
	st = g.Stats()
	assert.Zero(t, st.Holding, "every place is free once every round ended")
	assert.Zero(t, st.Queued)
	assert.Positive(t, st.Wait)
	assert.Equal(t, 2, st.MaxQueue)
}

// Campaign gate, rule 2: a member whose round times out while others wait
// gives its place to the oldest of them and waits again; with nobody
// waiting, its next round goes on at once.
func TestCampaignGateRule2ATimedOutRoundGivesItsPlaceToTheOldestWaiting(t *testing.T) {
	g := newCampaignGate(1)
	ms := newGated(g, 2)
	ms[0].fireDue()
	g.took(ms[0].owner) // its actor takes the firing: its round runs
	ms[0].fireDue()
	assert.Equal(t, []int{2, 0}, firedCounts(ms), "nobody waits: a holder's next round goes on")

	g.took(ms[0].owner)
	ms[1].fireDue()
	assert.Equal(t, []int{2, 0}, firedCounts(ms))
	ms[0].fireDue() // its round timed out while the other waits
	assert.Equal(t, []int{2, 1}, firedCounts(ms), "the place passes to the waiting member")
	assert.Equal(t, uint64(1), g.Stats().Passed)
	assert.Equal(t, 1, g.Stats().Queued, "the member that gave its place waits again")

	g.took(ms[1].owner)
	ms[1].fireDue() // and the new holder's round times out too: the place comes back
	assert.Equal(t, []int{3, 1}, firedCounts(ms))
	g.release(ms[0].owner)
	g.release(ms[1].owner)
	assert.Zero(t, g.Stats().Holding)
}

// Campaign gate, rule 3: a waiting member whose election deadline moved
// later meanwhile (its leader was heard from) does not campaign when its
// turn comes: its timer is rescheduled for the new deadline and the place
// passes on, or frees when nobody else waits. One that stopped is skipped.
func TestCampaignGateRule3AWaiterWhoseDeadlineMovedPassesItsTurnOn(t *testing.T) {
	g := newCampaignGate(1)
	ms := newGated(g, 4)
	t.Cleanup(func() {
		for _, m := range ms {
			m.stop()
		}
	})
	for _, m := range ms {
		m.fireDue()
	}
	assert.Equal(t, []int{1, 0, 0, 0}, firedCounts(ms))

	ms[1].moveDeadline()
	g.release(ms[2].owner) // stopped while waiting (Actor.stopTimers)
	g.release(ms[0].owner)
	assert.Equal(t, []int{1, 0, 0, 1}, firedCounts(ms), "the moved and the stopped waiters are passed over")
	ms[1].timer.mu.Lock()
	runAt := ms[1].timer.runAt
	ms[1].timer.mu.Unlock()
	assert.NotZero(t, runAt, "the moved waiter's timer runs again for its new deadline")
	assert.Equal(t, uint64(1), g.Stats().Stale)

	ms[0].moveDeadline() // not waiting: nothing to pass over
	g.release(ms[3].owner)
	assert.Zero(t, g.Stats().Holding, "a place nobody waits for is free")
}

// Campaign gate, rule 4: a waiting member does not probe its peers; its
// probe timer's firing waits with it and comes with its turn, once however
// often it fired. A member not waiting probes as ever, and a waiting
// member that stops takes its held probe with it.
func TestCampaignGateRule4AWaitingMemberProbesWithItsTurn(t *testing.T) {
	g := newCampaignGate(1)
	ms := newGated(g, 3)
	t.Cleanup(func() {
		for _, m := range ms {
			m.stop()
		}
	})
	ms[0].fireDue()
	ms[0].fireProbe()
	assert.Equal(t, []election.TimerKind{election.TimerElection, election.TimerProbe}, ms[0].sentKinds(),
		"the member holding the place probes as ever")

	ms[1].fireDue()
	ms[2].fireDue()
	ms[1].fireProbe()
	ms[1].fireProbe()
	ms[2].fireProbe()
	assert.Empty(t, ms[1].sentKinds(), "a waiting member's probe does not wake it")
	assert.Equal(t, uint64(2), g.Stats().ProbesHeld)

	g.release(ms[2].owner) // stops while waiting
	g.release(ms[0].owner)
	assert.ElementsMatch(t, []election.TimerKind{election.TimerProbe, election.TimerElection}, ms[1].sentKinds(),
		"its turn brings its election firing and one probe firing")
	assert.Empty(t, ms[2].sentKinds(), "a member that stopped is sent nothing")
	g.release(ms[1].owner)
	assert.Zero(t, g.Stats().Holding)
}

// The gate's invariants under any interleaving of firings, moved deadlines,
// cancelled and re-armed timers, ended rounds and stopped members: never
// more places held than its capacity, the held count is the members
// holding, every member in the queue has its entry there, the waiting
// count is the queued members whose fired timer waits (one whose timer was
// cancelled or re-armed since does not), and once every round ends, every
// member still due has had its firing (none is forgotten in the queue).
func TestCampaignGateKeepsItsPlacesAndForgetsNoWaiter(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		capacity := rapid.IntRange(1, 3).Draw(rt, "capacity")
		g := newCampaignGate(capacity)
		ms := newGated(g, rapid.IntRange(1, 6).Draw(rt, "members"))
		defer func() {
			for _, m := range ms {
				m.stop()
			}
		}()
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for range steps {
			m := ms[rapid.IntRange(0, len(ms)-1).Draw(rt, "member")]
			switch rapid.IntRange(0, 7).Draw(rt, "op") {
			case 6:
				m.cancel()
			case 7:
				m.rearm()
			case 0:
				m.fireDue()
			case 4:
				m.fireProbe()
			case 5:
				g.took(m.owner)
			case 1:
				m.moveDeadline()
			case 2:
				g.endRound(m.owner) // its round ended
			case 3:
				g.release(m.owner) // it stopped
			}
			checkGate(rt, g, ms)
		}
		// Every round ends: the members holding release until none does;
		// every waiter still due gets its place in turn.
		for range 4 * len(ms) {
			for _, m := range ms {
				if placed(m.owner) {
					g.took(m.owner) // its actor takes the firing, its round ends
					g.endRound(m.owner)
				}
			}
			checkGate(rt, g, ms)
		}
		if st := g.Stats(); st.Holding != 0 || st.Queued != 0 {
			rt.Fatalf("rounds all ended, yet %d places held and %d members wait", st.Holding, st.Queued)
		}
	})
}

func checkGate(rt *rapid.T, g *campaignGate, ms []*gated) {
	fired := make([]bool, len(ms)) // its election timer fired and waits: not cancelled, nor scheduled again
	for i, m := range ms {
		m.timer.mu.Lock()
		fired[i] = m.timer.runAt == 0 && m.timer.due != 0
		m.timer.mu.Unlock()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	holding, waiting, inQueue := 0, 0, map[*timerOwner]bool{}
	for _, e := range g.queue {
		inQueue[e.owner] = true
	}
	for i, m := range ms {
		switch gateState(m.owner.gate.Load()) {
		case gateHolding, gateGranted:
			holding++
		case gateQueued:
			if !inQueue[m.owner] {
				rt.Fatalf("member %d is queued but not in the queue", i)
			}
			if m.owner.gateWaits != fired[i] {
				rt.Fatalf("member %d is queued, counted as waiting %v, its fired timer waiting %v", i, m.owner.gateWaits, fired[i])
			}
			if m.owner.gateWaits {
				waiting++
			} else if m.owner.probeHeld {
				rt.Fatalf("member %d no longer waits, yet a probe is held for it", i)
			}
			continue
		}
		if m.owner.gateWaits {
			rt.Fatalf("member %d is not queued, yet counted as waiting", i)
		}
		if m.owner.probeHeld {
			rt.Fatalf("member %d does not wait, yet a probe is held for it", i)
		}
	}
	if waiting != g.total.waiting {
		rt.Fatalf("%d members wait, the gate counts %d", waiting, g.total.waiting)
	}
	if holding != g.holding || g.holding > g.capacity {
		rt.Fatalf("%d members hold places, the gate counts %d, capacity %d", holding, g.holding, g.capacity)
	}
}

// Members of real clusters campaign through a gate of one place. While
// another holds it, no member of any cluster campaigns: their timers wait
// at the gate, without waking them. Once it is free, every cluster still
// elects a leader, one round at a time, and no place stays held.
func TestCampaignGateOfOnePlaceStillElectsEveryCluster(t *testing.T) {
	saved := campaigns
	campaigns = newCampaignGate(1)
	t.Cleanup(func() { campaigns = saved })
	blocker := newGated(campaigns, 1)[0]
	blocker.fireDue()
	require.True(t, placed(blocker.owner))

	nodes := startTestNodes(t, "cg", 3)
	log := &stepLog{steps: map[gen.PID][]observed{}}
	const clusters = 4
	var members [][]gen.PID
	for k := range clusters {
		name := gen.Atom(fmt.Sprintf("gated%d", k))
		members = append(members, spawnProbes(t, nodes, name, log, Options{ClusterID: string(name)}))
	}
	require.Eventually(t, func() bool { return campaigns.Stats().Queued == clusters*len(nodes) }, 30*time.Second, 10*time.Millisecond,
		"every member's election timer waits at the gate")
	for _, pids := range members {
		for i, nd := range nodes {
			in, err := ReadInspection(nd, pids[i], "ergo:state")
			require.NoError(t, err)
			assert.NotEqual(t, RoleLeader, in.Role, "nobody campaigned while the place was held")
		}
	}

	campaigns.release(blocker.owner)
	for _, pids := range members {
		waitLeader(t, nodes, pids)
	}
	assert.GreaterOrEqual(t, campaigns.Stats().Deferred, uint64(clusters*len(nodes)))
	require.Eventually(t, func() bool { return campaigns.Stats().Holding == 0 }, 10*time.Second, 10*time.Millisecond,
		"no place stays held once every cluster leads")
}

// A member's actor reads holds() without the gate's lock and frees its
// place once its core runs no round (Actor.settleCampaign). Its election
// timer may fire between that read and the release, while another member
// waits: the member then gives its place on and queues again (rule 2).
// Ending the round must not also drop it from the queue: its timer has
// fired and is scheduled nowhere else, so it would never campaign again.
func TestCampaignGateARoundThatEndsAfterItsHolderQueuedAgainKeepsItsTurn(t *testing.T) {
	g := newCampaignGate(1)
	ms := newGated(g, 2)
	t.Cleanup(func() {
		for _, m := range ms {
			m.stop()
		}
	})
	a, b := ms[0], ms[1]
	a.fireDue() // a campaigns
	g.took(a.owner)
	b.fireDue() // b waits
	require.True(t, a.owner.holds(), "a's actor reads that it holds its place; its round ended")
	a.fireDue() // before it frees it, its timer fires: it passes its place to b and waits again
	require.Equal(t, []int{1, 1}, firedCounts(ms))
	require.Equal(t, gateQueued, gateState(a.owner.gate.Load()))

	g.endRound(a.owner) // what settleCampaign does after its read
	g.took(b.owner)
	g.endRound(b.owner) // b's round ends: the place is a's turn
	require.Eventually(t, func() bool {
		a.timer.mu.Lock()
		scheduled := a.timer.runAt != 0
		a.timer.mu.Unlock()
		return a.f.count() == 2 || scheduled
	}, 10*time.Second, time.Millisecond, "a's election timer fires again or is scheduled: it is not forgotten")
	g.took(a.owner)
	g.endRound(a.owner)
	assert.Zero(t, g.Stats().Holding)
}

// gone is a process that is no more: every Send fails, as the node's does
// for a PID it no longer has (an actor whose Init failed after its first
// flush armed the election timer, or one already unregistered).
type gone struct{ gen.Process }

func (gone) Send(to any, message any) error { return gen.ErrProcessUnknown }

// A place given to a member whose firing cannot be delivered (its actor is
// gone, and will never end a round or stop its timers) is freed at once,
// whether the firing was its own timer's or a place passed to it: else it
// stays held for good, and once every place is, no cluster in the process
// elects again.
func TestCampaignGateFreesAPlaceWhoseFiringCannotBeDelivered(t *testing.T) {
	g := newCampaignGate(1)
	ms := newGated(g, 3)
	t.Cleanup(func() {
		for _, m := range ms {
			m.stop()
		}
	})
	ms[0].owner.process = gone{}
	ms[0].fireDue()
	assert.Zero(t, g.Stats().Holding, "the place of a member that is gone is free")

	ms[1].fireDue() // holds
	g.took(ms[1].owner)
	ms[0].fireDue() // waits: gone meanwhile
	ms[2].fireDue() // waits
	g.endRound(ms[1].owner)
	assert.Equal(t, []int{0, 1, 1}, firedCounts(ms), "the place the gone member got passes on")
	g.took(ms[2].owner)
	g.endRound(ms[2].owner)
	assert.Zero(t, g.Stats().Holding)
}

// An actor that stops (Actor.stopTimers) while its election timer fires
// leaves the gate holding nothing for it, whichever goes first: a firing
// that reaches the gate after the actor left it would hold a place that
// nobody ends.
func TestCampaignGateAMemberThatStopsAsItsTimerFiresHoldsNoPlace(t *testing.T) {
	g := newCampaignGate(1)
	f := &firings{}
	a := &Actor{}
	a.inbox.owner = &timerOwner{process: f, pid: gen.PID{Node: "n@h", ID: 1, Creation: 1}, inbox: &a.inbox, campaigns: g,
		election: &a.timers[election.TimerElection]}
	tm := &a.timers[election.TimerElection]
	o := a.inbox.owner

	tm.mu.Lock()
	now := sinceEpoch(time.Now())
	tm.pending, tm.due, tm.runAt = true, now, now
	ok, _ := g.admit(tm, o, now) // its round runs
	tm.mu.Unlock()
	require.True(t, ok)
	tm.mu.Lock()
	now = sinceEpoch(time.Now())
	tm.due, tm.runAt = now, now // and its next firing is due: its round timed out

	done := make(chan struct{})
	go func() {
		defer close(done)
		a.stopTimers() // the actor ends
	}()
	// Give stopTimers the time to reach the timer's lock; it may leave the
	// gate first.
	for deadline := time.Now().Add(time.Second); placed(o) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	// Now the Go timer's callback runs, as shellTimer.fire does with the
	// timer's lock held.
	tm.runAt = 0
	ok, next := g.admit(tm, o, sinceEpoch(time.Now()))
	tm.mu.Unlock()
	if ok {
		_ = o.process.Send(o.pid, timerFired{kind: election.TimerElection})
	}
	g.wake(next)
	<-done

	assert.False(t, placed(o), "a stopped member holds no place")
	assert.Zero(t, g.Stats().Holding, "the place is free")
}

// A member holds its place while its round runs, and gives it on when its
// election timer fires again (rule 2). A core that may no longer campaign
// (its host's same-host cell went to another member here) disarms that
// timer but keeps the round it opened: Campaigning stays true, no timer
// will fire, and nobody would ever free the place.
func TestCampaignGateAMemberWhoseRoundCanNoLongerTimeOutHoldsNoPlace(t *testing.T) {
	g := newCampaignGate(1)
	f := &firings{}
	self := gen.ProcessID{Name: "m", Node: "a@h"}
	cfg := election.Config{ClusterID: "c", Self: self, Rand: rand.New(rand.NewPCG(1, 2)),
		Bootstrap: []gen.ProcessID{{Name: "m", Node: "b@h"}, {Name: "m", Node: "c@h"}}}.WithDefaults()
	pid := gen.PID{Node: self.Node, ID: 1, Creation: 1}
	now := time.Now()
	core, err := election.New(cfg, pid, election.HardState{}, now)
	require.NoError(t, err)
	a := &Actor{core: core}
	a.inbox.owner = &timerOwner{process: f, pid: pid, inbox: &a.inbox, campaigns: g, election: &a.timers[election.TimerElection]}
	t.Cleanup(a.stopTimers)
	apply := func(now time.Time) {
		for _, op := range core.Ready().Timers {
			if op.Timer.Kind == election.TimerElection {
				a.applyTimer(now, op)
			}
		}
	}
	apply(now)
	tm := &a.timers[election.TimerElection]
	require.True(t, tm.pending)

	// Its election timer fires and passes the gate; the core campaigns.
	later := now.Add(cfg.ElectionTimeoutMax + time.Millisecond)
	tm.mu.Lock()
	ok, _ := g.admit(tm, a.inbox.owner, sinceEpoch(later))
	tm.mu.Unlock()
	require.True(t, ok)
	timer, due := a.onTimerFired(later, timerFired{kind: election.TimerElection}) // its actor takes the firing: it holds the place
	require.True(t, due)
	core.Tick(later, timer)
	apply(later)
	require.True(t, core.Campaigning())
	a.settleCampaign()
	require.True(t, a.inbox.owner.holds(), "its round runs")

	core.SetCampaign(later, false) // its host's cell is another member's
	apply(later)
	require.False(t, tm.pending, "the core disarmed its election timer")
	require.True(t, core.Campaigning(), "and kept its round")
	a.settleCampaign()
	assert.False(t, a.inbox.owner.holds(), "a member whose round can no longer time out holds no place")
	assert.Zero(t, g.Stats().Holding)
}

// newGatedActors makes n actors whose election timers pass g, armed an hour
// ahead, as their cores arm them; each has no core.
func newGatedActors(t *testing.T, g *campaignGate, n int) []*Actor {
	out := make([]*Actor, n)
	for i := range out {
		a := &Actor{}
		a.inbox.owner = &timerOwner{process: &firings{}, pid: gen.PID{Node: "n@h", ID: uint64(i + 1), Creation: 1}, inbox: &a.inbox,
			campaigns: g, election: &a.timers[election.TimerElection]}
		a.applyTimer(time.Now(), election.TimerOp{Timer: election.Timer{Kind: election.TimerElection, Gen: 1}, After: time.Hour})
		t.Cleanup(a.stopTimers)
		out[i] = a
	}
	return out
}

// fireElection makes a's election timer due now and runs its callback, as
// the Go timer would.
func fireElection(a *Actor) {
	tm := &a.timers[election.TimerElection]
	tm.mu.Lock()
	now := sinceEpoch(time.Now())
	tm.due, tm.runAt = now, now
	tm.mu.Unlock()
	tm.fire(a.inbox.owner, election.TimerElection)
}

func sentCounts(as []*Actor) []int {
	out := make([]int, len(as))
	for i, a := range as {
		out[i] = a.inbox.owner.process.(*firings).count()
	}
	return out
}

// Queued counts the members whose election timer's firing waits for a
// place, and no other: a waiter whose core cancels or re-arms that timer,
// or whose actor stops, no longer waits, and is not counted from then on,
// though its place in the queue is only passed over at its turn. A re-armed
// timer that fires while its member is still in the queue waits again, at
// the member's place.
func TestCampaignGateQueuedCountsOnlyTheMembersReallyWaiting(t *testing.T) {
	g := newCampaignGate(1)
	as := newGatedActors(t, g, 5)
	for _, a := range as {
		fireElection(a)
	}
	require.Equal(t, []int{1, 0, 0, 0, 0}, sentCounts(as))
	require.Equal(t, 4, g.Stats().Queued)

	as[1].applyTimer(time.Now(), election.TimerOp{Timer: election.Timer{Kind: election.TimerElection, Gen: 1}, Cancel: true})
	assert.Equal(t, 3, g.Stats().Queued, "a waiter whose election timer is cancelled no longer waits")
	as[2].applyTimer(time.Now(), election.TimerOp{Timer: election.Timer{Kind: election.TimerElection, Gen: 2}, After: time.Hour})
	assert.Equal(t, 2, g.Stats().Queued, "nor one whose election timer is re-armed")
	as[3].stopTimers()
	assert.Equal(t, 1, g.Stats().Queued, "nor one that stops")
	as[1].applyTimer(time.Now(), election.TimerOp{Timer: election.Timer{Kind: election.TimerElection, Gen: 2}, Cancel: true})
	assert.Equal(t, 1, g.Stats().Queued, "cancelled twice, it is uncounted once")

	fireElection(as[2]) // its re-armed timer fires while it is still in the queue
	assert.Equal(t, 2, g.Stats().Queued, "it waits again")

	g.took(as[0].inbox.owner)
	g.endRound(as[0].inbox.owner) // the turn of as[1], cancelled: passed over to as[2]
	assert.Equal(t, []int{1, 0, 1, 0, 0}, sentCounts(as), "the cancelled waiter is passed over; the one that waits again campaigns")
	st := g.Stats()
	assert.Equal(t, 1, st.Queued, "only as[4] waits")
	assert.Equal(t, uint64(1), st.Stale)
	g.took(as[2].inbox.owner)
	g.endRound(as[2].inbox.owner) // as[3]'s entry, stopped, is skipped; as[4] campaigns
	assert.Equal(t, []int{1, 0, 1, 0, 1}, sentCounts(as))
	assert.Zero(t, g.Stats().Queued)
	g.took(as[4].inbox.owner)
	g.endRound(as[4].inbox.owner)
	st = g.Stats()
	assert.Zero(t, st.Holding)
	assert.Zero(t, st.Queued, "no wait ended twice")
	assert.Equal(t, 4, st.MaxQueue)
}

// gateOfCoalescer reads coalescer:campaign_gate from nd's coalescer process.
func gateOfCoalescer(t *testing.T, nd gen.Node) map[string]uint64 {
	share := shareOf(nd)
	require.NotNil(t, share, "a leader actor runs on %s", nd.Name())
	pid := share.coal.pid.Load()
	require.NotNil(t, pid, "%s's coalescer process runs", nd.Name())
	in, err := nd.Inspect(*pid, "coalescer:campaign_gate")
	require.NoError(t, err)
	out := map[string]uint64{}
	require.NoError(t, parseCounts(in["coalescer:campaign_gate"], func(k string, n uint64) { out[k] = n }))
	return out
}

// The gate's places are the process's, but each node counts its own
// members' waits and events: a node whose members never reach the gate
// reports none of the other node's, its coalescer process's
// coalescer:campaign_gate too, and the nodes' counts add up to the
// process's.
func TestCampaignGateCountsEachNodesMembersApart(t *testing.T) {
	saved := campaigns
	campaigns = newCampaignGate(1)
	t.Cleanup(func() { campaigns = saved })
	blocker := newGated(campaigns, 1)[0] // of no node: counted for the process alone
	blocker.fireDue()
	require.True(t, placed(blocker.owner))

	nodes := startTestNodes(t, "cgn", 2)
	a, b := nodes[0], nodes[1]
	log := &stepLog{steps: map[gen.PID][]observed{}}
	const clusters = 3
	var members [][]gen.PID
	for k := range clusters {
		name := gen.Atom(fmt.Sprintf("alone%d", k))
		members = append(members, spawnProbes(t, nodes[:1], name, log, Options{ClusterID: string(name), MinClusterSize: 1}))
	}
	// b's member declares no peer: below MinClusterSize, it never campaigns.
	spawnProbes(t, nodes[1:], "idle", log, Options{ClusterID: "idle"})

	require.Eventually(t, func() bool { return ReadNodeCampaignGate(a).Queued == clusters }, settleCoalescer, 10*time.Millisecond,
		"a's members wait at the gate")
	onA, onB, all := ReadNodeCampaignGate(a), ReadNodeCampaignGate(b), ReadCampaignGate()
	assert.Equal(t, CampaignGateStats{Capacity: 1, Holding: 1}, onB, "b's members never reached the gate: it counts nothing of a's")
	assert.Equal(t, clusters, all.Queued)
	assert.Equal(t, uint64(clusters), onA.Deferred)
	assert.Equal(t, all.Holding, onA.Holding, "places are the process's")
	gateA, gateB := gateOfCoalescer(t, a), gateOfCoalescer(t, b)
	assert.Equal(t, uint64(clusters), gateA["queued"])
	assert.Equal(t, uint64(clusters), gateA["deferred"])
	assert.Equal(t, map[string]uint64{"capacity": 1, "holding": 1, "admitted": 0, "deferred": 0, "passed": 0, "stale": 0,
		"probes_held": 0, "queued": 0, "max_queue": 0, "wait_ms": 0}, gateB, "b's coalescer reports b's members")

	campaigns.release(blocker.owner)
	for _, pids := range members {
		waitLeader(t, nodes[:1], pids)
	}
	require.Eventually(t, func() bool { return ReadCampaignGate().Holding == 0 }, settleCoalescer, 10*time.Millisecond,
		"no place stays held once every cluster leads")
	onA, onB, all = ReadNodeCampaignGate(a), ReadNodeCampaignGate(b), ReadCampaignGate()
	assert.Equal(t, CampaignGateStats{Capacity: 1}, onB)
	assert.Zero(t, onA.Queued)
	assert.Equal(t, clusters, onA.MaxQueue)
	assert.Positive(t, onA.Wait)
	// The blocker, of no node, is the process's one admission that is not a's.
	assert.Equal(t, onA.Admitted+1, all.Admitted)
	assert.Equal(t, onA.Deferred, all.Deferred)
	assert.Equal(t, onA.Passed, all.Passed)
	assert.Equal(t, onA.Stale, all.Stale)
	assert.Equal(t, onA.ProbesHeld, all.ProbesHeld)
	assert.Equal(t, onA.Wait, all.Wait)
}

// fireTimer makes a's timer of kind due now and runs its callback, as the
// Go timer would.
func fireTimer(a *Actor, kind election.TimerKind) {
	tm := &a.timers[kind]
	tm.mu.Lock()
	now := sinceEpoch(time.Now())
	tm.due, tm.runAt = now, now
	tm.mu.Unlock()
	tm.fire(a.inbox.owner, kind)
}

// armTimer arms a's timer of kind an hour ahead, or cancels it, as its
// core does through Actor.applyTimer.
func armTimer(a *Actor, kind election.TimerKind, cancel bool) {
	a.applyTimer(time.Now(), election.TimerOp{Timer: election.Timer{Kind: kind, Gen: a.timers[kind].gen + 1}, After: time.Hour, Cancel: cancel})
}

// sentOf lists the timer kinds a's timers sent it, in order.
func sentOf(a *Actor) []election.TimerKind {
	f := a.inbox.owner.process.(*firings)
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []election.TimerKind
	for _, s := range f.sent {
		out = append(out, s.(timerFired).kind)
	}
	return out
}

// Campaign gate, rule 4: a probe is held only while its member waits. One
// whose election timer's firing no longer waits (its core cancelled or
// re-armed that timer) gets the probe held for it at once, not at the turn
// it no longer needs; its probe timer fires as ever from then on; and a
// probe whose timer its core cancelled meanwhile is dropped.
func TestCampaignGateRule4AMemberThatNoLongerWaitsGetsItsHeldProbeAtOnce(t *testing.T) {
	g := newCampaignGate(1)
	as := newGatedActors(t, g, 3)
	for _, a := range as {
		armTimer(a, election.TimerProbe, false)
		fireElection(a)
	}
	fireTimer(as[1], election.TimerProbe)
	fireTimer(as[2], election.TimerProbe)
	require.Empty(t, sentOf(as[1]), "a waiting member's probe waits with it")
	require.Empty(t, sentOf(as[2]))
	require.Equal(t, uint64(2), g.Stats().ProbesHeld)

	armTimer(as[1], election.TimerElection, true)
	assert.Equal(t, []election.TimerKind{election.TimerProbe}, sentOf(as[1]),
		"its election timer cancelled, it no longer waits: its held probe comes at once")
	armTimer(as[1], election.TimerProbe, false)
	fireTimer(as[1], election.TimerProbe)
	assert.Equal(t, []election.TimerKind{election.TimerProbe, election.TimerProbe}, sentOf(as[1]),
		"its next probe is not held: it does not wait")

	armTimer(as[2], election.TimerProbe, true)
	armTimer(as[2], election.TimerElection, false)
	assert.Empty(t, sentOf(as[2]), "its election timer re-armed, it no longer waits, and its probe timer was cancelled: nothing to fire")

	g.took(as[0].inbox.owner)
	g.endRound(as[0].inbox.owner) // the turns of as[1] and as[2]: both stale
	assert.Len(t, sentOf(as[1]), 2, "its turn brings it nothing more")
	assert.Empty(t, sentOf(as[2]))
	st := g.Stats()
	assert.Zero(t, st.Holding)
	assert.Equal(t, uint64(2), st.ProbesHeld)
}

// mailbox is what a test's actors were sent and have not taken yet.
type mailbox map[*Actor]int

// next has a take the next firing sent to it, as Actor.handleMessage
// does, and reports whether there was one and whether its core was ticked
// with its election timer: a round began.
func (mb mailbox) next(a *Actor) (taken, round bool) {
	sent := sentOf(a)
	if mb[a] == len(sent) {
		return false, false
	}
	k := sent[mb[a]]
	mb[a]++
	_, due := a.onTimerFired(time.Now(), timerFired{kind: k})
	return true, due && k == election.TimerElection
}

// take has a take every firing sent to it since, and returns the rounds
// its core began.
func (mb mailbox) take(a *Actor) (rounds int) {
	for {
		taken, round := mb.next(a)
		if !taken {
			return rounds
		}
		if round {
			rounds++
		}
	}
}

// takeAll has every actor take its firings and returns the rounds begun.
func (mb mailbox) takeAll(as []*Actor) (rounds int) {
	for _, a := range as {
		rounds += mb.take(a)
	}
	return rounds
}

// endInTurn ends the round of holder, whose place passes to next: its
// round begins, and once it ends too the place is free.
func (mb mailbox) endInTurn(t *testing.T, as []*Actor, holder, next *Actor) {
	t.Helper()
	g := holder.inbox.owner.campaigns
	g.endRound(holder.inbox.owner)
	assert.Equal(t, 1, mb.take(next), "the place passes to the waiting member: its round begins")
	assert.Zero(t, mb.takeAll(as), "and no other")
	g.endRound(next.inbox.owner)
	assert.Zero(t, g.Stats().Holding, "every round ended: the place is free")
}

// onSend is a process that records what it is sent, and calls hook after
// each send.
type onSend struct {
	*firings
	hook func(message any)
}

func (p onSend) Send(to any, message any) error {
	err := p.firings.Send(to, message)
	p.hook(message)
	return err
}

// Campaign gate, rule 1: the rounds running at once never exceed the
// capacity, whatever order a member's actor takes its firings in and
// whenever its timer fires again: a member campaigns only on a firing that
// came with a place.
func TestCampaignGateRule1NoMemberCampaignsWithoutAPlace(t *testing.T) {
	t.Run("a member whose timer fires again before its actor takes the firing that came with its place keeps that place", func(t *testing.T) {
		g := newCampaignGate(1)
		as := newGatedActors(t, g, 2)
		mb := mailbox{}
		fireElection(as[0]) // given the place; its actor has yet to take the firing
		fireElection(as[1]) // waits
		fireElection(as[0]) // its core re-armed its timer before taking that firing, and it fired again
		assert.Equal(t, 1, mb.takeAll(as), "one place: one round")
		assert.Empty(t, sentOf(as[1]), "the place stays with the member it was given to")

		mb.endInTurn(t, as, as[0], as[1])
	})
	t.Run("a firing left in the mailbox does not start a round for a member whose round timed out and that waits", func(t *testing.T) {
		g := newCampaignGate(1)
		as := newGatedActors(t, g, 2)
		mb := mailbox{}
		fireElection(as[0]) // given the place
		fireElection(as[0]) // fired again before its actor took the first firing: a second firing
		_, round := mb.next(as[0])
		require.True(t, round, "its actor takes the first: its round begins; the second stays in its mailbox")
		armTimer(as[0], election.TimerElection, false)
		fireElection(as[1]) // waits
		fireElection(as[0]) // its round timed out: its place passes to as[1], it waits
		assert.Equal(t, 1, mb.takeAll(as), "one place: one round")
		assert.Equal(t, gateQueued, gateState(as[0].inbox.owner.gate.Load()), "as[0] still waits for its turn")

		mb.endInTurn(t, as, as[1], as[0])
	})
	t.Run("a member whose timer fires as its stale turn is passed over campaigns only with a place", func(t *testing.T) {
		g := newCampaignGate(1)
		as := newGatedActors(t, g, 3)
		mb := mailbox{}
		fireElection(as[0]) // holds
		require.Equal(t, 1, mb.take(as[0]))
		armTimer(as[1], election.TimerProbe, false)
		fireElection(as[1]) // waits
		fireTimer(as[1], election.TimerProbe)
		tm := &as[1].timers[election.TimerElection]
		tm.mu.Lock()
		tm.due = sinceEpoch(time.Now()) + time.Hour // its leader was heard from: its turn will be stale (rule 3)
		tm.mu.Unlock()
		// Its deadline comes while its stale turn is passed over: when its
		// held probe is delivered.
		f := as[1].inbox.owner.process.(*firings)
		as[1].inbox.owner.process = onSend{firings: f, hook: func(message any) {
			if message.(timerFired).kind == election.TimerProbe {
				fireElection(as[1])
			}
		}}
		g.endRound(as[0].inbox.owner)
		as[1].inbox.owner.process = f
		fireElection(as[2])
		assert.Equal(t, 1, mb.take(as[1]), "its deadline came as its stale turn was passed over: it campaigns, with a place")
		assert.Zero(t, mb.take(as[2]), "one place: one round")
		mb.endInTurn(t, as, as[1], as[2])
	})
}
