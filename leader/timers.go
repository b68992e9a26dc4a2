package leader

import (
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// The shell's timers. The core arms and cancels its timers through
// Ready.Timers and expects each firing back, with the Timer it armed last, at
// or after the deadline it asked for. The shell keeps that promise with as
// few runtime timers and actor wake-ups as it can:
//
//  1. Each timer kind has one Go timer, made once and reset. Its callback
//     runs off the actor: it wakes the actor only when the deadline has come.
//  2. Re-arming to a later deadline is lazy: the Go timer keeps its time,
//     and when it fires early the callback resets it for the remainder,
//     without waking the actor. Only a deadline that moves earlier, or a
//     timer with nothing scheduled, resets it ahead of its time.
//  3. The election timer's deadline also moves later without any TimerOp (a
//     heartbeat restarts the timeout inside the core): after every input the
//     shell reads Core.ElectionDue and extends the deadline lazily, so a
//     follower that hears its leader wakes for no timer at all.
//  4. A cancelled timer is stopped; a firing that raced with the cancel, or
//     that an earlier re-arm made stale, finds nothing due and does nothing.
//     A firing is sent as the actor itself, which its bounded mailbox
//     never refuses: nothing else would wake the actor for it.
//  5. While heartbeats answered ahead wait in the actor's coalescer inbox
//     (coalescer.go, rule 6), the election timer's callback moves the
//     deadline to where stepping them will move it (the last one's arrival
//     plus the steady answer's Timeout) instead of waking the actor: a
//     follower whose leader is steady is not woken by its election timer.
//     While the actor is bound on a pair (rule 8) the timer is parked, not
//     re-armed: the pair's watchdog fires it once the member's own Timeout
//     has passed since the pair's last beat (inbox.fireParked), and the
//     binding's end resumes it otherwise, so a bound follower's timer
//     fires only when its leader falls silent.
//  6. The heartbeat timer fires on a grid shared by every leader of the node
//     with the same HeartbeatInterval d (one Go timer for them all, a
//     heartbeatGrid): at the last instant gridEpoch +
//     phase + k*d (on the monotonic clock) not after the time the core asked
//     for, where the phase in [0, d) comes from the node's name. So no
//     interval exceeds d, steady intervals are exactly d (a late firing does
//     not push the next one later), the first after a leadership starts may
//     be shorter, the leaders of one node emit in one burst, which the
//     heartbeat coalescer gathers into one frame per node pair, and the
//     nodes of one process burst at different instants.
//  7. While the actor's steady beat stands (coalescer.go, rule 7), the
//     heartbeat timer's callback sends the tick's heartbeats itself, when
//     the beat's rules allow, and re-arms on the grid without waking the
//     actor; the core's arming stays as it was, and fires the next tick
//     that the beat cannot send.
//  8. An election timer that comes due passes the process's campaign gate
//     (campaigngate.go) before it wakes the actor: while the process has as
//     many members campaigning as the gate has places, it waits there
//     instead, without waking the actor, and fires when a place frees. Its
//     probe timer's firings wait with it.

// timerKinds is the number of election timer kinds (election.TimerKind
// values run from 0 to TimerStorage).
const timerKinds = int(election.TimerStorage) + 1

// gridEpoch is the origin of the heartbeat grid and of the shell's clock:
// one per process, so all leaders of all nodes in it share the grid.
var gridEpoch = time.Now()

// sinceEpoch is t on the shell's monotonic clock.
func sinceEpoch(t time.Time) time.Duration { return t.Sub(gridEpoch) }

// stampOf is the stamp of a message sent at at, on the shell's clock, as
// the members' cores stamp theirs (their clocks count from gridEpoch):
// MessageHeartbeat.Sent, PairBeat.Sent.
func stampOf(at time.Duration) int64 { return election.Stamp(gridEpoch, gridEpoch.Add(at)) }

// evidenceAt is when an answer that echoes stamp and arrived at arrived
// shows its sender heard this node, on the shell's clock, as the members'
// cores judge it (election.EvidenceAt); false when it shows nothing.
func evidenceAt(stamp int64, arrived time.Duration) (time.Duration, bool) {
	sent, ok := election.EvidenceAt(gridEpoch, stamp, gridEpoch.Add(arrived))
	return sinceEpoch(sent), ok
}

// onGrid returns how long from now until the last instant gridEpoch +
// phase + k*d that is not later than now+d: a duration in (0, d].
func onGrid(now time.Time, d time.Duration, phase uint64) time.Duration {
	if d <= 0 {
		return d
	}
	elapsed := sinceEpoch(now) - time.Duration(phase%uint64(d))
	target := elapsed + d
	return target - mod(target, d) - elapsed
}

// nextInstant is the first instant of the grid of interval d and phase
// after t, on the shell's clock: t + onGrid(t).
func nextInstant(t, d time.Duration, phase uint64) time.Duration {
	return t + onGrid(gridEpoch.Add(t), d, phase)
}

// mod is x modulo d, in [0, d) for negative x too.
func mod(x, d time.Duration) time.Duration {
	r := x % d
	if r < 0 {
		r += d
	}
	return r
}

// gridPhase is a node's phase seed: its name hashed.
func gridPhase(node gen.Atom) uint64 {
	h := fnv.New64a()
	h.Write([]byte(node))
	return h.Sum64()
}

// timerOwner is what the timers' callbacks need of their actor. Its fields
// are set before any timer is armed and never change; armed is counted by
// the actor and by the callbacks.
type timerOwner struct {
	// process sends the firings: Send reads only immutable fields, so the
	// timers' goroutines may call it.
	process gen.Process
	pid     gen.PID
	phase   uint64 // the node's heartbeat grid phase seed (gridPhase)
	// inbox is the actor's coalescer inbox: the election timer's callback
	// reads when the heartbeats held there move the timeout (rule 5).
	inbox *inbox
	// grid fires the heartbeat timer with those of the node's other
	// leaders (rule 6), and coal sends a steady leader's ticks for it
	// (rule 7); both nil until the actor joins its node's share.
	grid *heartbeatGrid
	coal *coalescer
	// pairs are the grid's pair beats, which a steady leader's ticks are
	// paired on (coalescer.go, rule 8); nil until the actor joins its
	// node's share.
	pairs *pairBeats
	// armed counts the times a Go timer was set (made or reset) for this
	// actor's election timers: ergo:runtime_timers.
	armed atomic.Uint64
	// campaigns is the campaign gate its election timer passes
	// (campaigngate.go); gate is where it stands there, a gateState written
	// under the gate's mu. Guarded by the gate's mu: probeHeld, whether a
	// probe firing waits with it; gateWaits, whether it is counted as
	// waiting (its election timer's firing waits for a place), since
	// gateSince.
	campaigns *campaignGate
	gate      atomic.Int32
	probeHeld bool
	gateWaits bool
	gateSince time.Duration
	// election is the actor's election timer, which a pair's watchdog
	// fires and a binding's end resumes (rule 8); nil in tests. Here, not
	// in the inbox, where gate and probeHeld leave room: every member holds
	// an inbox, in its Actor.
	election *shellTimer
}

// shellTimer is the shell's side of one election timer kind. Its Go
// timer's callback is told the timer's owner and kind; the struct does not
// keep them, as every member holds one per kind: its kind is its place in
// Actor.timers.
type shellTimer struct {
	// gen is the generation of the core's latest arming of this kind
	// (election.Timer's Gen), pending whether it waits to fire; the actor's
	// goroutine owns both.
	gen     uint64
	pending bool
	// inGrid says the timer was scheduled on its owner's heartbeatGrid, not
	// on rt, since it was last stopped; guarded by mu.
	inGrid bool

	// mu guards due, runAt, rt and inGrid; the actor's goroutine and the
	// timer's callback take it. While it is held, only the inbox's lock
	// (fire, rule 5) and the grid's (schedule, stop) are taken.
	mu sync.Mutex
	// due is when the pending arming is due, on the shell's clock; zero
	// when none is. runAt is when the timer fires; zero when it is not
	// scheduled.
	due, runAt time.Duration
	rt         *time.Timer
}

// timerFired tells the actor that a timer of kind is due. Only the shell's
// timers send it, from the actor's node; it never crosses the network.
type timerFired struct{ kind election.TimerKind }

// initTimers binds the timers to the actor; it runs before the core exists.
func (a *Actor) initTimers() {
	a.inbox.owner = &timerOwner{process: a.Process, pid: a.PID(), phase: gridPhase(a.Node().Name()), inbox: &a.inbox,
		election: &a.timers[election.TimerElection]}
}

// resumeElection makes the election timer of the inbox's member run again
// when it was parked (rule 8): for its deadline, where its callback judges
// the heartbeats held. Called with no inbox or pair lock held.
func (ib *inbox) resumeElection() {
	t := ib.electionTimer()
	if t == nil {
		return
	}
	t.mu.Lock()
	t.resume(sinceEpoch(time.Now()), ib.owner, election.TimerElection)
	t.mu.Unlock()
}

// fireParked fires the member's parked election timer in the caller's
// goroutine, as its Go timer would have at its deadline: the pair's
// watchdog wakes the bound members whose timeout passed so (rule 8). It
// reports whether it fired the timer (fireHeld). Called with no inbox or
// pair lock held.
func (ib *inbox) fireParked() bool {
	t := ib.electionTimer()
	if t == nil {
		return false
	}
	return t.fireHeld(ib.owner, election.TimerElection)
}

// fireHeld fires t in the caller's goroutine when it has a deadline and
// nothing scheduled: its firing was held (parked, rule 8, or at the
// campaign gate). A timer scheduled or cancelled since is left to that;
// one whose deadline moved later is scheduled for it. It reports whether
// it fired the timer. Called without t's mu.
func (t *shellTimer) fireHeld(o *timerOwner, kind election.TimerKind) bool {
	t.mu.Lock()
	if t.runAt != 0 || t.due == 0 {
		t.mu.Unlock()
		return false
	}
	if now := sinceEpoch(time.Now()); t.due > now {
		t.schedule(now, o, kind)
		t.mu.Unlock()
		return false
	}
	t.runAt = t.due
	t.mu.Unlock()
	t.fire(o, kind)
	return true
}

// fireHeldProbe fires the actor's probe timer, whose firing the campaign
// gate held, once the gate holds it no more (leftGate): at once, or not at
// all when its core cancelled or re-armed that timer since.
func (a *Actor) fireHeldProbe(held bool) {
	if held {
		a.timers[election.TimerProbe].fireHeld(a.inbox.owner, election.TimerProbe)
	}
}

// resume schedules t for its deadline when it has one and nothing is
// scheduled: it was parked (rule 5) or waited at the campaign gate (rule
// 8). Called with mu held.
func (t *shellTimer) resume(now time.Duration, o *timerOwner, kind election.TimerKind) {
	if t.runAt == 0 && t.due != 0 {
		t.schedule(now, o, kind)
	}
}

// applyTimer carries out one of the core's timer operations.
func (a *Actor) applyTimer(now time.Time, op election.TimerOp) {
	k := int(op.Timer.Kind)
	if k < 0 || k >= timerKinds {
		a.Log().Error("leader: the core armed an unknown timer kind %d", k)
		return
	}
	t := &a.timers[k]
	if op.Cancel {
		t.pending = false
		t.mu.Lock()
		t.due = 0
		t.stop(a.inbox.owner)
		// Its Go timer goes too, to be made again if the kind is armed
		// again: a settled member keeps its probe timer cancelled, and a
		// leader its election timer, and each would hold one for nothing.
		t.rt = nil
		held := t.leftGate(a.inbox.owner, op.Timer.Kind)
		t.mu.Unlock()
		a.fireHeldProbe(held)
		return
	}
	after := op.After
	if op.Timer.Kind == election.TimerHeartbeat {
		after = onGrid(now, after, a.inbox.owner.phase)
	}
	t.gen, t.pending = op.Timer.Gen, true
	at := sinceEpoch(now)
	t.mu.Lock()
	t.due = max(at+after, 1)
	if t.runAt == 0 || t.due < t.runAt {
		t.schedule(at, a.inbox.owner, op.Timer.Kind)
	}
	held := t.leftGate(a.inbox.owner, op.Timer.Kind)
	t.mu.Unlock()
	a.fireHeldProbe(held)
}

// leftGate ends the wait at the campaign gate of o's member when t is its
// election timer, just cancelled or re-armed: the firing that waited
// there is moot (campaigngate.go, endWait). It reports whether a probe
// firing was held for the member, which the caller fires once mu is
// released (Actor.fireHeldProbe). Called with mu held.
func (t *shellTimer) leftGate(o *timerOwner, kind election.TimerKind) bool {
	return kind == election.TimerElection && o.endWait()
}

// extendElection moves the election timer's deadline to where the core now
// has it, when that is later: lazily, without touching the Go timer.
func (a *Actor) extendElection() {
	t := &a.timers[election.TimerElection]
	if !t.pending {
		return
	}
	due, ok := a.core.ElectionDue()
	if !ok {
		return
	}
	at := sinceEpoch(due)
	t.mu.Lock()
	if at > t.due {
		t.due = at
	}
	t.mu.Unlock()
}

// schedule sets the Go timer, or the owner's grid for a heartbeat timer,
// for due; now is the shell's clock, o and kind the timer's owner and kind.
// Called with mu held.
func (t *shellTimer) schedule(now time.Duration, o *timerOwner, kind election.TimerKind) {
	t.runAt = t.due
	o.armed.Add(1)
	if kind == election.TimerHeartbeat && o.grid != nil {
		t.inGrid = true
		o.grid.add(t, o, t.due, now)
		return
	}
	d := t.due - now
	if t.rt == nil {
		t.rt = time.AfterFunc(d, func() { t.fire(o, kind) })
	} else {
		t.rt.Reset(d)
	}
}

// stop stops the Go timer, or leaves o's grid. Called with mu held.
func (t *shellTimer) stop(o *timerOwner) {
	if t.inGrid {
		// Also after the grid fired it: the grid may hold it again.
		t.inGrid = false
		o.grid.remove(t)
	}
	if t.runAt == 0 {
		return
	}
	t.runAt = 0
	if t.rt != nil {
		t.rt.Stop()
	}
}

// heartbeatGrid fires the heartbeat timers of one node's leaders that share
// a HeartbeatInterval from one Go timer, which runs at each grid instant
// (rule 6 of the shell's timers) where a timer is due, instead of one Go
// timer and one goroutine per leader per tick.
type heartbeatGrid struct {
	// pairs beat for the node's paired leaders of this interval (coalescer.go,
	// rule 8), after the timers due at each instant; nil when the node has
	// no coalescer.
	pairs *pairBeats

	// mu guards due and next. It is taken with a shellTimer's mu held
	// (schedule, stop), never the other way round: fire calls the due
	// timers and the pairs after releasing it.
	mu sync.Mutex
	// due holds each scheduled timer with the instant it fires at, on the
	// shell's clock, and its owner; next is when loop fires, zero when it
	// is stopped.
	due  map[*shellTimer]gridEntry
	next time.Duration
	// loop fires the grid from one long-lived goroutine.
	loop timerLoop
}

// gridFiring is a due timer of a heartbeatGrid with its owner.
type gridFiring struct {
	timer *shellTimer
	owner *timerOwner
}

func newHeartbeatGrid(pairs *pairBeats) *heartbeatGrid {
	g := &heartbeatGrid{pairs: pairs, due: make(map[*shellTimer]gridEntry)}
	g.loop.fn = g.fire
	return g
}

// gridEntry is a timer scheduled on a heartbeatGrid.
type gridEntry struct {
	at    time.Duration
	owner *timerOwner
}

// add schedules t, of owner o, for at; now is the shell's clock.
func (g *heartbeatGrid) add(t *shellTimer, o *timerOwner, at, now time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.due[t] = gridEntry{at: at, owner: o}
	g.runAt(at, now)
}

// runAt makes the grid fire at at, unless it fires earlier. Called with mu
// held.
func (g *heartbeatGrid) runAt(at, now time.Duration) {
	if g.next == 0 || at < g.next {
		g.next = at
		g.loop.reset(at - now)
	}
}

// remove unschedules t; the grid stops firing with the last one, unless the
// pairs still beat.
func (g *heartbeatGrid) remove(t *shellTimer) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.due, t)
	if len(g.due) == 0 && g.next != 0 && (g.pairs == nil || g.pairs.next() == 0) {
		g.next = 0
		g.loop.stop()
	}
}

// close unschedules everything, for good, once the node's last leader
// actor has ended: its goroutine ends.
func (g *heartbeatGrid) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.due)
	g.next = 0
	g.loop.close()
}

// fire fires every timer that is due, then the pairs' beats, then runs
// again for the earliest of the rest.
func (g *heartbeatGrid) fire() {
	g.mu.Lock()
	now := sinceEpoch(time.Now())
	var ready []gridFiring
	next := time.Duration(0) // the earliest of the rest
	for t, e := range g.due {
		switch {
		case e.at <= now:
			ready = append(ready, gridFiring{t, e.owner})
			delete(g.due, t)
		case next == 0 || e.at < next:
			next = e.at
		}
	}
	// A timer added while the due ones fire sets the Go timer itself
	// (runAt, from next zero); one removed meanwhile costs at most an early
	// run that finds nothing due.
	g.next = 0
	g.mu.Unlock()
	for _, f := range ready {
		f.timer.fire(f.owner, election.TimerHeartbeat)
	}
	if g.pairs != nil {
		g.pairs.fire(now)
		if at := g.pairs.next(); at != 0 && (next == 0 || at < next) {
			next = at
		}
	}
	if next != 0 {
		g.mu.Lock()
		g.runAt(next, sinceEpoch(time.Now()))
		g.mu.Unlock()
	}
}

// fire is the Go timer's callback: it wakes the actor when the deadline has
// come, re-arms for the rest when it moved later, and does nothing for a
// firing that a reset made stale or a cancel made moot.
func (t *shellTimer) fire(o *timerOwner, kind election.TimerKind) {
	t.mu.Lock()
	now := sinceEpoch(time.Now())
	if t.runAt == 0 || now < t.runAt {
		t.mu.Unlock()
		return // stopped, or a reset scheduled a later firing
	}
	t.runAt = 0
	switch {
	case t.due == 0:
		t.mu.Unlock()
		return
	case now < t.due:
		t.schedule(now, o, kind)
		t.mu.Unlock()
		return
	}
	switch kind {
	case election.TimerElection:
		// Heartbeats answered ahead and held for the actor move its
		// election timeout once stepped: hold the firing until then.
		if until, ok, parked := o.inbox.heardUntil(); ok && now < until {
			t.due = until
			if !parked {
				t.schedule(now, o, kind)
			}
			// Parked: the pair's watchdog fires it once the beats stop
			// for its Timeout (rule 8), whoever ends the binding resumes
			// it otherwise.
			t.mu.Unlock()
			return
		}
		if o.campaigns != nil {
			if ok, next := o.campaigns.admit(t, o, now); !ok {
				// It campaigns when a place frees (campaigngate.go).
				t.mu.Unlock()
				o.campaigns.wake(next)
				return
			}
		}
	case election.TimerProbe:
		// A member waiting at the campaign gate probes with its turn (rule 8).
		if o.campaigns != nil && o.campaigns.holdProbe(o) {
			t.mu.Unlock()
			return
		}
	case election.TimerHeartbeat:
		// A steady leader's tick is sent for it (rule 7).
		if o.coal != nil {
			if next, ok := o.coal.beatAhead(o.inbox, t, o, now); ok {
				t.due = next
				t.schedule(now, o, kind)
				t.mu.Unlock()
				return
			}
		}
	}
	t.mu.Unlock()
	// Sent as the actor itself, so its bounded mailbox cannot refuse it
	// (gen.ProcessOptions.MailboxSize); the actor may be gone (its node
	// stopping), and then nobody waits for this: nobody will end the round
	// of the place its firing was let through with either.
	if err := o.process.Send(o.pid, timerFired{kind: kind}); err != nil && kind == election.TimerElection && o.campaigns != nil {
		o.campaigns.release(o)
	}
}

// onTimerFired handles a timerFired and reports whether the core must be
// ticked with the Timer it returns: only when the pending arming is due,
// and for an election firing at the campaign gate, only when a place came
// with it (campaignGate.took): its round starts.
func (a *Actor) onTimerFired(now time.Time, f timerFired) (election.Timer, bool) {
	if o := a.inbox.owner; f.kind == election.TimerElection && o.campaigns != nil && !o.campaigns.took(o) {
		return election.Timer{}, false
	}
	k := int(f.kind)
	if k < 0 || k >= timerKinds || !a.timers[k].pending {
		return election.Timer{}, false
	}
	t := &a.timers[k]
	at := sinceEpoch(now)
	t.mu.Lock()
	if at < t.due {
		// Re-armed or extended since the callback sent this; make sure the
		// Go timer runs for the new deadline.
		if t.runAt == 0 {
			t.schedule(at, a.inbox.owner, f.kind)
		}
		t.mu.Unlock()
		return election.Timer{}, false
	}
	t.due = 0
	t.stop(a.inbox.owner)
	t.mu.Unlock()
	t.pending = false
	return election.Timer{Kind: f.kind, Gen: t.gen}, true
}

// stopTimers stops every Go timer, then leaves the campaign gate; the
// actor is ending. In that order: a firing that reaches the gate once the
// actor left it would hold a place nobody frees, and once the timers are
// stopped (due zero) none fires, nor does wake or resumeElection
// reschedule one.
func (a *Actor) stopTimers() {
	for k := range a.timers {
		t := &a.timers[k]
		t.pending = false
		t.mu.Lock()
		t.due = 0
		t.stop(a.inbox.owner)
		t.mu.Unlock()
	}
	if a.inbox.owner != nil && a.inbox.owner.campaigns != nil {
		a.inbox.owner.campaigns.release(a.inbox.owner)
	}
}
