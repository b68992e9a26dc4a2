package leader

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/regent-go/regent/gen"
)

// Pair beats (coalescer.go, rule 8): the follower node's side. A slot is
// bound to a member whose published answer answers the slot's heartbeat
// with the acknowledgement its leader expects; while bound, each beat of the
// pair is that member's heartbeat, answered ahead and held as rule 6 holds
// one, except that only the pair's last beat is kept: of held heartbeats
// with nothing between them, stepping the last alone is stepping them all
// (election.Core.SteadyAnswer). The binding ends, under both the pair's and
// the member's inbox lock, when the member withdraws its answer, the slot
// leaves, or the pair resets; from then on the slot's heartbeat is
// delivered as a coalesced one at each beat until its leave arrives. A
// member that wakes only suspends it: its answer is withdrawn under both
// locks, a beat taken meanwhile ends the binding as after a withdrawal, and
// once the member has stepped its input the binding stands again, under
// both locks, only if its new answer is the one it was bound with (a
// probe's firing, say, or another member's down, changes nothing of it),
// which is the test a join passes: as if the slot were bound afresh,
// without the round trip that unpairing and pairing again would cost.

// pairKey names one pair from this node's side: the leaders' node and grid.
type pairKey struct {
	node     gen.Atom
	interval int64
}

// pairIn is the follower node's side of one pair. Its map lives in the
// coalescer and is used by the coalescer process only.
type pairIn struct {
	// mu guards everything below but lastTick and lastTickAt. It is taken
	// before an inbox's mu (binding, unbinding), never after it.
	mu sync.Mutex
	// epoch and prev are the sender's epoch and the last tick received in
	// it; poisoned says the beats came out of sequence, so only a new
	// epoch is taken.
	epoch, prev uint64
	poisoned    bool
	bound       map[uint32]*pairBinding
	// refused are slots that do not stand here: their heartbeat is
	// delivered at each beat until their leave arrives.
	refused map[uint32]*pairBinding
	// lastTick and lastTickAt are the last beat and its arrival on the
	// shell's clock, written under mu (lastTickAt first) and read without
	// it by the members' election timers (heardUntil).
	lastTick   atomic.Uint64
	lastTickAt atomic.Int64
	// watchdog fires when no beat came for minTimeout, the shortest
	// election Timeout of a member bound since the pair was last without
	// any (both under mu): it fires the parked election timers of the bound
	// members whose own Timeout has passed since the last beat, in deadline
	// order, and runs again for the next (overdue, next, under mu). barked
	// is the last tick it fired after, read by the timers without mu: a
	// timer parks only while it is not lastTick.
	watchdog   *time.Timer
	minTimeout time.Duration
	barked     atomic.Uint64
	overdue    []parkedDeadline
	next       int
	// closed says the coalescer ended for good (close): the watchdog is
	// stopped and never armed again, so its timer holds none of the
	// ended members' memory.
	closed bool
	// unbound are the members whose binding the coalescer ended under mu,
	// whose timers are resumed once it is released.
	unbound []*inbox
	// stepping are the bindings whose member is stepping an input
	// (suspendPaired), by slot: the next beat refuses them.
	stepping map[uint32]*pairBinding
	// stats are the coalescer's counters; the watchdog counts its firings.
	stats *coalescerCounters
	// unused says no beat came since the coalescer process last tidied
	// (coalescer_tidy.go).
	unused bool
}

// watching reports whether the watchdog will resume a parked election
// timer of a member bound now, should the beats stop.
func (src *pairIn) watching() bool {
	return src.barked.Load() != src.lastTick.Load()
}

// parkedDeadline is when a bound member's election timeout passes if no
// beat comes: the pair's last beat plus the member's Timeout.
type parkedDeadline struct {
	at time.Duration
	b  *pairBinding
}

// bark is the watchdog's callback: the beats stopped. It fires, itself and
// one after another, the election timers of the bound members whose own
// Timeout has passed since their last beat, and runs again at the next
// such deadline; a beat that comes meanwhile starts it afresh (watch), and
// the members not yet due stay parked. Resuming every bound member's Go
// timer at once instead would start thousands of goroutines on a loaded
// node at the moment it is late already, which is what makes it later.
func (src *pairIn) bark() {
	src.mu.Lock()
	now := sinceEpoch(time.Now())
	tick := src.lastTick.Load()
	if src.closed || len(src.bound) == 0 || now < time.Duration(src.lastTickAt.Load())+src.minTimeout {
		src.mu.Unlock()
		return // stopped, or a beat came since this firing was due
	}
	if src.barked.Load() != tick {
		src.barked.Store(tick)
		clear(src.overdue) // no binding of an earlier silence is kept alive
		src.overdue, src.next = src.overdue[:0], 0
		for _, b := range src.bound {
			at, _ := b.lastBeat()
			b.ib.mu.Lock()
			at += b.ib.steady.Timeout
			b.ib.mu.Unlock()
			src.overdue = append(src.overdue, parkedDeadline{at: at, b: b})
		}
		slices.SortFunc(src.overdue, func(x, y parkedDeadline) int { return cmp.Compare(x.at, y.at) })
	}
	var due []*inbox
	for ; src.next < len(src.overdue) && src.overdue[src.next].at <= now; src.next++ {
		if b := src.overdue[src.next].b; src.bound[b.slot] == b {
			due = append(due, b.ib)
		}
		src.overdue[src.next].b = nil
	}
	if src.next < len(src.overdue) {
		src.watchdog.Reset(src.overdue[src.next].at - now)
	}
	src.mu.Unlock()
	for _, ib := range due {
		if ib.fireParked() {
			src.stats.pairBarked.Add(1)
		}
	}
}

// watch re-arms the watchdog after a beat that arrived at at, on the
// shell's clock. Called with mu held.
func (src *pairIn) watch(at time.Duration) {
	if src.closed || len(src.bound) == 0 {
		src.minTimeout = 0
		if src.watchdog != nil {
			src.watchdog.Stop()
		}
		return
	}
	d := max(at+src.minTimeout-sinceEpoch(time.Now()), 0)
	if src.watchdog == nil {
		src.watchdog = time.AfterFunc(d, src.bark)
	} else {
		src.watchdog.Reset(d)
	}
}

// close stops the watchdog for good, once the coalescer has ended with
// its node or its last member: an armed runtime timer keeps its callback,
// and through the bindings every bound member, alive until it fires (an
// election timeout after the last beat).
func (src *pairIn) close() {
	src.mu.Lock()
	defer src.mu.Unlock()
	src.closed = true
	if src.watchdog != nil {
		src.watchdog.Stop()
	}
	clear(src.overdue)
}

// wakeUnbound resumes the election timers of the members whose binding the
// coalescer ended. Called after mu is released.
func (src *pairIn) wakeUnbound(woken []*inbox) {
	for _, ib := range woken {
		ib.resumeElection()
	}
}

// pairBinding is a slot of a pair, bound to a member or refused.
type pairBinding struct {
	src  *pairIn
	slot uint32
	// stepping says the member is stepping an input, its answer withdrawn
	// (suspendPaired): nothing is answered for it until it resumes. Beside
	// slot, in what would be padding.
	stepping bool
	// ib is the inbox of member, the member the slot is bound to (or was).
	// While it is bound (or suspended), the leader, its heartbeat and the
	// acknowledgement it expects of the member are those of the member's
	// steady answer (ib.steady), which does not change meanwhile
	// (Actor.publishSteady publishes only once the binding resumed or
	// ended): kept once, there, and not here too, a binding takes an
	// allocation of 96 bytes, not 416.
	ib     *inbox
	member gen.PID
	// refused is what a refused slot delivers at every beat, nil when it
	// delivers nothing and while the slot is bound: unbinding copies it
	// from the member's answer.
	refused *refusal
	// first is the first tick the member has not taken yet: its join's,
	// until it wakes while bound; sinceAt the arrival of the last beat it
	// took, or of its join.
	first   uint64
	sinceAt time.Duration
	// heldFrom is when the answer the binding stands on was given: a beat
	// is held as arriving no earlier, as coalescer.answer holds one.
	heldFrom time.Duration
}

// refusal is a refused slot's heartbeat, from the leader, the sender node
// restored, and to whom it is delivered.
type refusal struct {
	to   deliveryTarget
	from gen.PID
	hb   MessageHeartbeat
}

// lastBeat is the arrival of the last beat b stands for, on the shell's
// clock, and how many beats the member has not taken yet it stands for;
// with none, the arrival of the last one it took. Called with b.src.mu or
// the inbox's mu held.
func (b *pairBinding) lastBeat() (time.Duration, int) {
	tick := b.src.lastTick.Load()
	if tick < b.first {
		return b.sinceAt, 0
	}
	return max(time.Duration(b.src.lastTickAt.Load()), b.sinceAt), int(tick-b.first) + 1
}

// holdLocked holds, in the member's inbox, the beats b stands for that the
// member has not taken, as one heartbeat: the last, which stands for all
// of them. Called with b.src.mu and b.ib.mu held.
func (b *pairBinding) holdLocked() {
	ib := b.ib
	at, n := b.lastBeat()
	if n == 0 || ib.closed {
		return
	}
	at = max(at, b.heldFrom)
	if k := len(ib.beats); k > 0 && ib.beats[k-1] > at {
		at = ib.beats[k-1]
	}
	ib.beats = append(ib.beats, at)
	ib.skipped += n - 1
}

// unbindLocked ends b's binding: what it stood for is held in the member's
// inbox as one heartbeat, and the slot is refused until it leaves unless
// leaving says it already did. Called with b.src.mu and b.ib.mu held.
func (b *pairBinding) unbindLocked(c *coalescer, leaving bool) {
	src, ib := b.src, b.ib
	if ib.paired != b {
		return
	}
	ib.paired = nil
	delete(src.bound, b.slot)
	if b.stepping {
		b.stepping = false
		delete(src.stepping, b.slot)
	}
	if !leaving {
		// Refused, the slot's heartbeat is delivered at every beat: a
		// copy, as the answer it stood on may change once it is unbound.
		b.refused = &refusal{to: deliveryTarget{pid: b.member}, from: ib.steady.Leader, hb: ib.steady.Heartbeat.Message(0)}
		src.refused[b.slot] = b
	} else {
		src.unbound = append(src.unbound, ib)
	}
	if ib.closed {
		return
	}
	b.holdLocked()
	c.stats.pairUnbound.Add(1)
}

// suspendLocked withdraws b's answer for its member's step without ending
// the binding: the beats it stood for are held as unbindLocked holds them,
// and until the member resumes (resumeLocked) a beat refuses it. Called
// with b.src.mu and b.ib.mu held.
func (b *pairBinding) suspendLocked() {
	b.holdLocked()
	b.sinceAt, _ = b.lastBeat()
	b.first = b.src.lastTick.Load() + 1
	b.ib.answering = false
	if !b.stepping {
		b.stepping = true
		b.src.stepping[b.slot] = b
	}
}

// resumeLocked ends the member's step: b stands again, with r as the
// member's answer, when r answers b's heartbeat with the acknowledgement
// b was bound with (the test a join passes, so it is as if the slot were
// bound afresh, without the round trip); otherwise the binding ends and
// the slot is refused. It reports whether b stands. Called with b.src.mu
// and b.ib.mu held, while b is the member's binding.
func (b *pairBinding) resumeLocked(c *coalescer, r *steadyReply) bool {
	src, ib := b.src, b.ib
	// The slot was bound with ib.steady's leader, heartbeat and
	// acknowledgement.
	if !b.stepping || ib.closed || r == nil || r.Leader != ib.steady.Leader || r.Heartbeat != ib.steady.Heartbeat || r.Ack != ib.steady.Ack {
		b.unbindLocked(c, false)
		return false
	}
	b.stepping = false
	delete(src.stepping, b.slot)
	ib.steady, ib.answering = *r, true
	b.heldFrom = r.since
	if r.Timeout < src.minTimeout {
		// The watchdog runs for the shortest Timeout bound here.
		src.minTimeout = r.Timeout
		src.watch(time.Duration(src.lastTickAt.Load()))
	}
	c.stats.pairKept.Add(1)
	return true
}

// receiveBeat takes a PairBeat from node, arrived at now: it checks its
// sequence, takes its leaves, beats every bound slot and delivers every
// refused slot's heartbeat, binds its joins, and enqueues the PairAck.
func (p *coalescerProcess) receiveBeat(node gen.Atom, b *PairBeat, now time.Time) {
	c := p.c
	key := pairKey{node: node, interval: b.Interval}
	src := c.pairsIn[key]
	if src == nil {
		src = &pairIn{bound: make(map[uint32]*pairBinding), refused: make(map[uint32]*pairBinding), stepping: make(map[uint32]*pairBinding),
			stats: &c.stats}
		c.pairsIn[key] = src
	}
	at := sinceEpoch(now)
	c.stats.pairBeatsIn.Add(1)
	src.mu.Lock()
	src.unused = false
	ack := PairAck{Interval: b.Interval, Epoch: b.Epoch, Tick: b.Tick, Echo: b.Sent}
	switch {
	case b.Epoch == src.epoch && b.Prev == src.prev && !src.poisoned && b.Tick > b.Prev:
	case b.Epoch != src.epoch && b.Prev == 0:
		p.resetIn(src)
		src.epoch, src.poisoned = b.Epoch, false
	default:
		// Out of sequence (rule 6): nothing stands until a new epoch.
		p.resetIn(src)
		src.epoch, src.poisoned = b.Epoch, true
		ack.Reset = true
		src.watch(at)
		woken := src.unbound
		src.unbound = nil
		src.mu.Unlock()
		src.wakeUnbound(woken)
		c.stats.pairResets.Add(1)
		c.enqueuePair(node, nil, &ack)
		return
	}
	for _, id := range b.Leaves {
		if bd := src.bound[id]; bd != nil {
			bd.ib.mu.Lock()
			bd.unbindLocked(c, true)
			bd.ib.mu.Unlock()
		}
		delete(src.refused, id)
	}
	// Members stepping an input have no answer standing: their slots are
	// refused, and this beat's heartbeat delivered to them below.
	for _, bd := range src.stepping {
		bd.ib.mu.Lock()
		bd.unbindLocked(c, false)
		bd.ib.mu.Unlock()
	}
	src.prev = b.Tick
	src.lastTickAt.Store(int64(at))
	src.lastTick.Store(b.Tick)
	c.stats.answered.Add(uint64(len(src.bound)))
	for _, bd := range src.refused {
		if rf := bd.refused; rf != nil {
			// A copy: the binding's heartbeat is delivered again next
			// beat, each time stamped with its beat's send time.
			hb := rf.hb
			hb.Sent = b.Sent
			p.deliverHeartbeat(rf.to, rf.from, now, &hb)
		}
	}
	for i := range b.Joins {
		if p.join(src, &b.Joins[i], node, now, at, b.Tick, b.Sent) {
			ack.Bound = append(ack.Bound, b.Joins[i].Slot)
		}
	}
	if len(src.refused) > 0 {
		ack.Refused = make([]uint32, 0, len(src.refused))
		for id := range src.refused {
			ack.Refused = append(ack.Refused, id)
		}
	}
	src.watch(at)
	woken := src.unbound
	src.unbound = nil
	src.mu.Unlock()
	src.wakeUnbound(woken)
	c.enqueuePair(node, nil, &ack)
}

// join binds the slot j to its member and reports true, or refuses it and
// delivers its heartbeat as a coalesced one. Called with src.mu held.
func (p *coalescerProcess) join(src *pairIn, j *PairJoin, node gen.Atom, now time.Time, at time.Duration, tick uint64, sent int64) bool {
	c := p.c
	hb := j.Heartbeat
	hb.Sent = sent // it goes with this beat
	t, ok := p.check(j.CoalescedRoute, &hb.From, node)
	if !ok {
		// Counted; refused, as a PairAck covers every slot it does not
		// name, with nothing to deliver.
		src.refused[j.Slot] = &pairBinding{src: src, slot: j.Slot}
		return false
	}
	from := j.from(node)
	bd := &pairBinding{src: src, slot: j.Slot, first: tick, sinceAt: at}
	if t.pid != (gen.PID{}) {
		if ib := c.inboxOf(t.pid); ib != nil {
			ib.mu.Lock()
			if !ib.closed && ib.answering && ib.paired == nil && ib.steady.Answers(from, &hb) && ib.steady.Ack == j.Ack {
				bd.ib, bd.member, bd.sinceAt, bd.heldFrom = ib, t.pid, max(at, ib.steady.since), ib.steady.since
				ib.paired = bd
				if len(src.bound) == 0 || ib.steady.Timeout < src.minTimeout {
					src.minTimeout = ib.steady.Timeout
				}
				src.bound[j.Slot] = bd
				ib.mu.Unlock()
				c.stats.pairBound.Add(1)
				c.stats.answered.Add(1)
				return true
			}
			ib.mu.Unlock()
		}
	}
	bd.refused = &refusal{to: t, from: from, hb: hb} // delivered again at every beat
	src.refused[j.Slot] = bd
	c.stats.pairRefused.Add(1)
	p.deliverHeartbeat(t, from, now, &hb)
	return false
}

// deliverHeartbeat answers hb ahead or delivers it to t, as a coalesced
// heartbeat is (rules 4 and 6); hb must stay unchanged until t handles it.
func (p *coalescerProcess) deliverHeartbeat(t deliveryTarget, from gen.PID, now time.Time, hb *MessageHeartbeat) {
	if t.pid == (gen.PID{}) || !p.c.answer(t.pid, from, now, hb) {
		p.deliver(t, inbound{from: from, hb: hb})
	}
}

// resetIn unbinds every slot of src and forgets the refused. Called with
// src.mu held.
func (p *coalescerProcess) resetIn(src *pairIn) {
	for _, bd := range src.bound {
		bd.ib.mu.Lock()
		bd.unbindLocked(p.c, true)
		bd.ib.mu.Unlock()
	}
	clear(src.refused)
	src.prev = 0
	// The ticks of the sender's next epoch may start again (a new life of
	// its node): none of them is the one the watchdog last fired after.
	src.barked.Store(^uint64(0))
}

// pairAckLinger is the linger of a PairAck for beats of the given
// interval: a member's own (Actor.linger), unless a test set another.
func (c *coalescer) pairAckLinger(interval int64) time.Duration {
	if c.ackLinger > 0 {
		return c.ackLinger
	}
	return lingerFor(time.Duration(interval))
}

// withdrawPaired stops the coalescer from answering for the member and
// ends its binding, if any, in the same step: no beat counts for it once
// it moves.
func (ib *inbox) withdrawPaired(c *coalescer) {
	b := ib.lockBinding()
	if b != nil {
		b.unbindLocked(c, false)
	}
	ib.answering = false
	ib.unlockBinding(b)
}

// suspendPaired stops the coalescer from answering for the member while it
// steps an input, keeping its binding, if any, to be resumed or ended once
// its new answer is known (resumePaired); it reports whether the member
// was bound. A beat taken meanwhile refuses the slot, as one taken after
// withdrawPaired would.
func (ib *inbox) suspendPaired() bool {
	b := ib.lockBinding()
	if b != nil {
		b.suspendLocked()
	}
	ib.answering = false
	ib.unlockBinding(b)
	return b != nil
}

// resumePaired ends the step suspendPaired began, with r the member's new
// answer (nil for none): the binding stands again when r answers what it
// was bound to exactly, and r is then published. It reports whether the
// binding stands; false too when a beat refused it meanwhile.
func (ib *inbox) resumePaired(c *coalescer, r *steadyReply) bool {
	b := ib.lockBinding()
	kept := b != nil && b.resumeLocked(c, r)
	ib.unlockBinding(b)
	return kept
}

// lockBinding locks the pair of the member's binding and then the inbox,
// in that order (the binding can change only under both), and returns the
// binding; with none, it returns nil with the inbox alone locked.
func (ib *inbox) lockBinding() *pairBinding {
	for {
		ib.mu.Lock()
		b := ib.paired
		if b == nil {
			return nil
		}
		ib.mu.Unlock()
		b.src.mu.Lock()
		ib.mu.Lock()
		if ib.paired == b {
			return b
		}
		ib.mu.Unlock()
		b.src.mu.Unlock()
	}
}

// unlockBinding releases what lockBinding locked.
func (ib *inbox) unlockBinding(b *pairBinding) {
	ib.mu.Unlock()
	if b != nil {
		b.src.mu.Unlock()
	}
}
