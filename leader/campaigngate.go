package leader

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// The campaign gate bounds the election rounds the members of one process
// run at once. An election round (a pre-vote or a vote) costs every member
// it asks a message each way; when thousands of clusters campaign together
// (a cold start, or a CPU stall long enough that their followers all time
// out) the rounds' messages queue behind each other for longer than an
// election timeout, every round times out before its answers arrive, and
// each retry adds more: a campaign storm that never ends by itself (in
// `regent bench scale`, 2,500 clusters on 2 cores stayed leaderless at
// 4,000 campaigns a second). The gate turns that overload into a queue:
//
//  1. An election timer that fires while the process already has its
//     capacity of members campaigning does not wake its member: the member
//     waits in the gate's queue, oldest first, and campaigns when a round
//     ends. A member campaigns only on a firing that came with a place: one
//     its actor takes without (one more sent with its place, or one left
//     in its mailbox when it queued again) starts no round. So the rounds
//     running at once never exceed the capacity, and each finishes in the
//     time a round takes, not in the time the storm takes.
//  2. A member holds its place from when its actor takes the firing that
//     let it campaign (inputs it takes before do not count) until its core
//     runs no round (Core.Campaigning) after an input: it won, it lost, or
//     it heard of a leader; or until no election timer can end its round
//     any more (the core may no longer campaign). A member whose round times out while
//     others wait gives its place to the oldest of them and queues again
//     (not one whose timer fires again before its actor took the firing
//     that came with its place: its round has not begun, and it keeps it),
//     so a cluster that cannot win (too few members alive) never starves
//     the others: each member waits at most (queue ahead / capacity)
//     election timeouts.
//  3. A member waiting in the queue whose leader is heard from meanwhile
//     (its election deadline moved later) does not campaign when its turn
//     comes: its timer is rescheduled for the new deadline and its place
//     passes on.
//  4. A member waiting in the queue does not probe its peers either: its
//     probe timer's firing waits with it and is delivered with its turn,
//     or as soon as it waits no more (its core cancelled or re-armed its
//     election timer), unless its core cancelled its probe timer meanwhile.
//     A member without a view probes every declared peer each
//     ElectionTimeoutMax, so thousands of clusters waiting to form would
//     otherwise spend on probes what their rounds need (in `regent bench
//     scale`, a cold start of 3,000 clusters took 26 s with waiting
//     members probing and 2.3 s without).
//
// Only when rounds and probes start changes: the gate delays a timer's
// firing, which no rule of the election depends on for safety (a timer
// may always fire late), and a cluster below the capacity never waits.
// Directed campaigns (a handover's TimeoutNow, a re-formed view) bypass
// it: each has one candidate by design.
//
// Its places are the process's; its counters are kept for the process and
// for each node's members (ReadCampaignGate, ReadNodeCampaignGate). A
// member counts as waiting while the election timer firing that queued it
// waits for a place: not once its core cancels or re-arms that timer,
// nor once it stops, though its entry stays until its turn (rule 3
// passes it over then).

// campaignsPerCore sizes the gate: rounds running at once per CPU the Go
// runtime may use. At about 0.3 ms of CPU per round (4 peers asked), 32
// rounds per core keep a saturated process's round well under the default
// ElectionTimeoutMin of 150 ms.
const campaignsPerCore = 32

// campaigns is the process's campaign gate: CPU is what the rounds of all
// the process's nodes share.
var campaigns = newCampaignGate(campaignsPerCore * runtime.GOMAXPROCS(0))

// gateState is where a member stands at the gate.
type gateState int32

const (
	gateIdle    gateState = iota // not campaigning through the gate
	gateQueued                   // its election timer fired; waiting for a place
	gateGranted                  // given a place with a firing its actor has yet to take
	gateHolding                  // holds a place: its actor took the firing, its round runs
)

// gateEntry is a member waiting at the gate: its election timer and owner;
// probe says, once it is given a place, that its probe timer's firing
// waited with it (rule 4).
type gateEntry struct {
	timer *shellTimer
	owner *timerOwner
	probe bool
}

// campaignGate is the gate (see above).
type campaignGate struct {
	capacity int

	// mu guards holding, queue, the waiting and maxQueue of the process's
	// tally and of every node's, and every owner's gate fields. It is
	// taken after a shellTimer's mu (admit, from the timer's callback;
	// endWait; wake, freeing a stale turn), never before: a place passed on
	// is delivered after it is released.
	mu      sync.Mutex
	holding int         // places given, taken by their actor or not
	queue   []gateEntry // may hold entries whose member no longer waits: skipped, or found stale at its turn
	// total is what the gate counted for every member of the process;
	// each node's share counts its own members' (nodeShare.gate).
	total gateTally
}

func newCampaignGate(capacity int) *campaignGate {
	return &campaignGate{capacity: max(capacity, 1)}
}

// gateEvent names a counter of the campaign gate.
type gateEvent int

const (
	gateAdmitted   gateEvent = iota // election timer firings let through at once
	gateDeferred                    // firings that had to wait
	gatePassed                      // places given on by a round that timed out while others waited
	gateStale                       // places given to a member that did not campaign with them
	gateProbesHeld                  // probe timer firings held for a waiting member
	gateEvents
)

// gateTally is what the gate counted for a set of members: the process's,
// or one node's.
type gateTally struct {
	events    [gateEvents]atomic.Uint64
	waitNanos atomic.Int64
	// waiting is how many of the members wait (their election timer's
	// firing waits for a place), maxQueue the most seen at once; guarded
	// by the gate's mu.
	waiting, maxQueue int
}

// startWait counts a member that begins to wait. Called with the gate's mu
// held.
func (c *gateTally) startWait() {
	c.waiting++
	c.maxQueue = max(c.maxQueue, c.waiting)
}

// endWait counts a member whose wait of d ended. Called with the gate's mu
// held.
func (c *gateTally) endWait(d time.Duration) {
	c.waiting--
	c.waitNanos.Add(int64(d))
}

// stats reads the tally, with the gate's capacity and holding. Called with
// the gate's mu held.
func (c *gateTally) stats(g *campaignGate) CampaignGateStats {
	return CampaignGateStats{Capacity: g.capacity, Holding: g.holding, Queued: c.waiting,
		Admitted: c.events[gateAdmitted].Load(), Deferred: c.events[gateDeferred].Load(), Passed: c.events[gatePassed].Load(),
		Stale: c.events[gateStale].Load(), ProbesHeld: c.events[gateProbesHeld].Load(),
		Wait: time.Duration(c.waitNanos.Load()), MaxQueue: c.maxQueue}
}

// nodeTally is the tally of o's node; nil for an owner that joined no
// node's share (tests).
func (o *timerOwner) nodeTally() *gateTally {
	if o.coal == nil || o.coal.share == nil {
		return nil
	}
	return &o.coal.share.gate
}

// count counts an event of o's, for the process and for o's node.
func (g *campaignGate) count(o *timerOwner, e gateEvent) {
	g.total.events[e].Add(1)
	if n := o.nodeTally(); n != nil {
		n.events[e].Add(1)
	}
}

// startWaitLocked counts o as waiting from now: its election timer's
// firing waits for a place. Called with mu held.
func (g *campaignGate) startWaitLocked(o *timerOwner, now time.Duration) {
	o.gateWaits, o.gateSince = true, now
	g.total.startWait()
	if n := o.nodeTally(); n != nil {
		n.startWait()
	}
}

// endWaitLocked ends o's wait when it waits: each wait is counted out once,
// however it ends (a place, a cancelled or re-armed timer, the member's
// end). Called with mu held.
func (g *campaignGate) endWaitLocked(o *timerOwner, now time.Duration) {
	if !o.gateWaits {
		return
	}
	o.gateWaits = false
	d := now - o.gateSince
	g.total.endWait(d)
	if n := o.nodeTally(); n != nil {
		n.endWait(d)
	}
}

// endWait ends the wait of o, in the queue, whose election timer's firing
// that waited for a place was cancelled or re-armed. Its entry
// stays: at its turn it campaigns if that timer fired again meanwhile,
// which made it wait again (admit), and is found stale otherwise (rule 3).
// A probe held for it is held no more (rule 4): it reports whether one
// was, which its actor fires (Actor.fireHeldProbe). Called with the
// election timer's mu held.
func (o *timerOwner) endWait() (probeHeld bool) {
	// Only admit, called with the election timer's mu held, queues o: a
	// state read here that is not gateQueued stays so.
	if o.campaigns == nil || gateState(o.gate.Load()) != gateQueued {
		return false
	}
	g := o.campaigns
	now := sinceEpoch(time.Now())
	g.mu.Lock()
	if gateState(o.gate.Load()) == gateQueued {
		g.endWaitLocked(o, now)
		probeHeld, o.probeHeld = o.probeHeld, false
	}
	g.mu.Unlock()
	return probeHeld
}

// CampaignGateStats are the campaign gate's counters: for the members of
// the whole process (ReadCampaignGate), or of one node (ReadNodeCampaignGate).
type CampaignGateStats struct {
	// Capacity is how many members of the process may campaign at once,
	// and Holding how many do now: the places are the process's, whoever
	// reads them. Queued is how many members wait: their election timer
	// fired and waits for a place (not one whose timer was cancelled or
	// re-armed since, nor one whose actor stopped; one whose deadline only
	// moved later still does, as its turn decides: rule 3).
	Capacity, Holding, Queued int
	// Admitted counts election timer firings let through, Deferred those
	// that had to wait, Passed the places given on by a member whose round
	// timed out while others waited, and Stale the places given to a
	// waiting member that did not campaign with them (its deadline moved,
	// its timer was cancelled or re-armed, or it is gone). ProbesHeld
	// counts the probe timer firings of waiting members held for their
	// turn.
	Admitted, Deferred, Passed, Stale, ProbesHeld uint64
	// Wait is the total time members waited; MaxQueue the most members
	// seen waiting at once.
	Wait     time.Duration
	MaxQueue int
}

// Counts returns the gate's counters by name, as the metric
// regent_campaign_gate_events_total names its events.
func (s CampaignGateStats) Counts() map[string]uint64 {
	return map[string]uint64{"admitted": s.Admitted, "deferred": s.Deferred, "passed": s.Passed, "stale": s.Stale,
		"probes_held": s.ProbesHeld}
}

// Events returns the gate's counters and figures by name, as the
// inspection key coalescer:campaign_gate names them.
func (s CampaignGateStats) Events() map[string]uint64 {
	e := s.Counts()
	e["capacity"], e["holding"], e["queued"] = uint64(s.Capacity), uint64(s.Holding), uint64(s.Queued)
	e["max_queue"], e["wait_ms"] = uint64(s.MaxQueue), uint64(s.Wait/time.Millisecond)
	return e
}

// ReadCampaignGate returns the counters of the process's campaign gate, for
// the members of all its nodes.
func ReadCampaignGate() CampaignGateStats { return campaigns.Stats() }

// ReadNodeCampaignGate returns the counters of the process's campaign gate
// for the members of node alone, counted since its first leader actor
// started (as ReadCoalescer's are); Capacity and Holding are the
// process's. Its counts are zero when no leader actor runs on node.
func ReadNodeCampaignGate(node gen.Node) CampaignGateStats {
	return campaigns.nodeStats(shareOf(node))
}

// Stats returns the gate's counters for the whole process.
func (g *campaignGate) Stats() CampaignGateStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.total.stats(g)
}

// nodeStats returns the gate's counters for the members of share's node;
// nil counts none.
func (g *campaignGate) nodeStats(share *nodeShare) CampaignGateStats {
	var none gateTally
	g.mu.Lock()
	defer g.mu.Unlock()
	if share == nil {
		return none.stats(g)
	}
	return share.gate.stats(g)
}

// admit is asked by o's election timer t when it fires, with t's mu held:
// it reports whether the firing may wake the member now (rule 1). When it
// returns an entry, a place was passed on to it (rule 2), which the caller
// delivers with wake once t's mu is released.
func (g *campaignGate) admit(t *shellTimer, o *timerOwner, now time.Duration) (bool, *gateEntry) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch gateState(o.gate.Load()) {
	case gateQueued:
		// Still in the queue: its place stands, and it waits again when
		// its wait ended since (endWait).
		if !o.gateWaits {
			g.startWaitLocked(o, now)
		}
		return false, nil
	case gateGranted:
		// Its actor has yet to take the firing that came with its place:
		// its round has not begun, and this firing goes on with that one
		// (its actor campaigns on whichever it takes first, took).
		return true, nil
	case gateHolding:
		next := g.nextLocked(now)
		if next == nil {
			o.gate.Store(int32(gateGranted))
			return true, nil // nobody waits: its next round goes on
		}
		g.count(o, gatePassed)
		g.enqueueLocked(t, o, now)
		return false, next
	}
	if g.holding < g.capacity {
		g.holding++
		o.gate.Store(int32(gateGranted))
		g.count(o, gateAdmitted)
		return true, nil
	}
	g.count(o, gateDeferred)
	g.enqueueLocked(t, o, now)
	return false, nil
}

// enqueueLocked puts o, whose election timer t fired at now, at the back of
// the queue. Called with mu held.
func (g *campaignGate) enqueueLocked(t *shellTimer, o *timerOwner, now time.Duration) {
	o.gate.Store(int32(gateQueued))
	g.queue = append(g.queue, gateEntry{timer: t, owner: o})
	g.startWaitLocked(o, now)
}

// nextLocked takes the oldest member off the queue and gives it the place
// being freed; nil when the queue is empty. The member may wait no more (its
// timer was cancelled or re-armed): wake then finds it stale. Called with
// mu held.
func (g *campaignGate) nextLocked(now time.Duration) *gateEntry {
	for len(g.queue) > 0 {
		e := g.queue[0]
		g.queue[0] = gateEntry{}
		g.queue = g.queue[1:]
		if gateState(e.owner.gate.Load()) != gateQueued {
			continue // left, or queued again further back: its wait ended then
		}
		e.owner.gate.Store(int32(gateGranted))
		g.endWaitLocked(e.owner, now)
		e.probe, e.owner.probeHeld = e.owner.probeHeld, false
		if len(g.queue) == 0 {
			g.queue = nil // let the backing array go
		}
		return &e
	}
	return nil
}

// release takes o away from the gate, it stops: its place, when it holds
// one, passes to the oldest waiting member; its entry, when it waits, is
// skipped.
func (g *campaignGate) release(o *timerOwner) {
	now := sinceEpoch(time.Now())
	g.mu.Lock()
	var next *gateEntry
	switch gateState(o.gate.Load()) {
	case gateHolding, gateGranted:
		next = g.freeLocked(o, now)
	case gateQueued:
		// It stops (Actor.stopTimers): its entry is skipped, and a probe
		// held for it is for nobody.
		o.gate.Store(int32(gateIdle))
		o.probeHeld = false
		g.endWaitLocked(o, now)
	}
	g.mu.Unlock()
	g.wake(next)
}

// holdProbe holds the firing of o's probe timer while o waits in the queue
// (rule 4), and reports whether it did: not once its election timer's
// firing no longer waits, though its entry stays. Called with the probe
// timer's mu held.
func (g *campaignGate) holdProbe(o *timerOwner) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if gateState(o.gate.Load()) != gateQueued || !o.gateWaits {
		return false
	}
	if !o.probeHeld {
		o.probeHeld = true
		g.count(o, gateProbesHeld)
	}
	return true
}

// endRound frees o's place when it still holds one: its round ended. Its
// actor read holds() without the lock, and o's timer may have fired since
// and queued it again (rule 2): then it keeps its turn, which its fired
// timer waits for, or the timer would be scheduled nowhere.
func (g *campaignGate) endRound(o *timerOwner) {
	now := sinceEpoch(time.Now())
	g.mu.Lock()
	var next *gateEntry
	if gateState(o.gate.Load()) == gateHolding {
		next = g.freeLocked(o, now)
	}
	g.mu.Unlock()
	g.wake(next)
}

// freeLocked frees the place o holds and returns the waiting member it
// passes to, nil when it is free. Called with mu held.
func (g *campaignGate) freeLocked(o *timerOwner, now time.Duration) *gateEntry {
	o.gate.Store(int32(gateIdle))
	next := g.nextLocked(now)
	if next == nil {
		g.holding--
	}
	return next
}

// wake delivers a place to e: its member's election timer fires now, when
// it is still due (rule 3); otherwise the place passes on and a timer whose
// deadline moved is rescheduled for it. A probe held for a member given a
// place fires too (rule 4).
func (g *campaignGate) wake(e *gateEntry) {
	for e != nil {
		t, o := e.timer, e.owner
		var next *gateEntry
		t.mu.Lock()
		now := sinceEpoch(time.Now())
		due := t.runAt == 0 && t.due != 0 && now >= t.due
		if !due {
			// Freed before its timer is rescheduled, with its mu held: a
			// firing of that timer finds the member without a place, and
			// asks for one (admit), instead of going on with this one, which
			// its actor would take without it (took).
			g.count(o, gateStale)
			next = g.free(o, now)
			t.resume(now, o, election.TimerElection)
		}
		t.mu.Unlock()
		// Sent as the actor itself, as every firing is (timers.go); when
		// that fails the actor is gone, and the place passes on too. A
		// probe held for it comes after its election firing.
		if due && o.process.Send(o.pid, timerFired{kind: election.TimerElection}) != nil {
			g.count(o, gateStale)
			next = g.free(o, now)
		}
		if e.probe {
			_ = o.process.Send(o.pid, timerFired{kind: election.TimerProbe})
		}
		e = next
	}
}

// free frees the place o was given and returns the waiting member it
// passes to, when o still has it and its actor has yet to take it.
func (g *campaignGate) free(o *timerOwner, now time.Duration) *gateEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	if gateState(o.gate.Load()) != gateGranted {
		return nil
	}
	return g.freeLocked(o, now)
}

// holds reports whether o holds a place and its actor took the firing that
// came with it. Read without the lock by o's actor after each input: only
// the actor itself moves a place from granted to held (took).
func (o *timerOwner) holds() bool { return gateState(o.gate.Load()) == gateHolding }

// took records that o's actor takes an election timer firing, and reports
// whether the firing came with a place: one granted with it is now held,
// and is settled after this input. Until then, inputs the actor takes
// before the firing do not free the place: its round has not begun. A
// firing taken without a place (one more sent with the place, taken after
// it; or one left in the mailbox when its member's round timed out and it
// queued again) must not start a round (rule 1): its timer, if it is due,
// waits at the gate or fires again.
func (g *campaignGate) took(o *timerOwner) bool {
	if gateState(o.gate.Load()) != gateGranted {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if gateState(o.gate.Load()) != gateGranted {
		return false
	}
	o.gate.Store(int32(gateHolding))
	return true
}

// settleCampaign frees the actor's place at the gate once its core runs no
// round (rule 2), or keeps one no election timer will end: a core that may
// no longer campaign (its same-host cell went to another member, it left
// the view, its formation fell below MinClusterSize) disarms that timer
// but keeps the round it opened, and the place would be held for good.
func (a *Actor) settleCampaign() {
	o := a.inbox.owner
	if o == nil || o.campaigns == nil || !o.holds() {
		return
	}
	if !a.core.Campaigning() || !a.timers[election.TimerElection].pending {
		o.campaigns.endRound(o)
	}
}
