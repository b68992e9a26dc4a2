package leader

import (
	"cmp"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// Pair beats (coalescer.go, rule 8): the leader node's side. While a
// leader's steady beat stands, its ticks need not travel as one heartbeat
// entry per member per tick: once its follower's coalescer has bound each
// member (taken it on as answering that heartbeat ahead), one PairBeat per
// node pair per tick stands for the ticks of every leader paired on it, and
// one PairAck back for the acknowledgements of every member bound there.
// Nothing per cluster crosses the wire, is decoded, answered or taken per
// tick, and no paired leader's timer fires: its heartbeat timer is parked
// at its beat's end while the grid's own tick does the work.
//
// The rules, over a connection that keeps order (node/doc.go, rule 8) and
// with every anomaly turned into a fresh start:
//
//  1. A steady leader whose tick its timer would send ahead (rule 7) is
//     paired instead: each member gets a slot on the pair of its node, and
//     the tick's heartbeats go as the slots' joins in the pair's beat at
//     the same grid instant. The leader's timer is parked at the beat's end.
//  2. The follower node binds a slot when the member's published answer
//     answers the join's heartbeat with the join's expected acknowledgement
//     (pairbeat_in.go); a bound slot stands for the member answering every
//     later beat of the pair, until the member withdraws its answer (a
//     wake-up whose step leaves the answer as it was does not end it) or
//     the slot leaves. Any other slot is refused: its heartbeat is delivered as
//     a coalesced one would be, at each beat, and it is named in every
//     PairAck until its leave arrives.
//  3. Each PairAck for tick k is every bound slot's acknowledgement of
//     tick k, arriving when the PairAck arrives and evidence of when the
//     beat of tick k was sent (its Sent, which the PairAck echoes; every
//     window below is judged on that evidence): a slot is covered from the
//     PairAck that names it bound (the one for its join's tick) on, until
//     one names it refused; a slot whose join's PairAck does not name it
//     bound is never covered, and its leader is unpaired. The leader node
//     credits it to each slot covered, under the
//     rules of rule 7: within the window of the pair's previous PairAck's
//     evidence (the member's last reply's for a slot's first), else the leaders of the
//     slots it covers are unpaired and it is held for them as a coalesced
//     acknowledgement.
//  4. At each grid instant the pair beats tick, after the node's leader
//     timers due then. Before a tick, a leader is unpaired without it when a
//     member would be silent for the window by then (the pair's last PairAck,
//     or a slot's last reply before its first), or the tick is past its
//     beat's end; its timer is resumed at once, and its next tick is judged
//     as rule 7 says.
//  5. A leader is unpaired when it wakes (withdrawing its beat), when a slot
//     is refused, when its beat breaks, or when its pair is reset; it then
//     catches up on every tick done and acknowledgement credited, and its
//     slots leave with the pair's next beat. Acknowledgements of ticks
//     before that leave that arrive later are held for it as coalesced ones.
//  6. A pair beat out of sequence (its Prev is not the last tick received in
//     its epoch) resets the follower node's side of the pair: every slot is
//     unbound and the PairAck says Reset. A Reset, or a pair beat that could
//     not be sent, resets the leader node's side: its leaders are unpaired
//     and it starts a new epoch, whose first beat has Prev 0. A leader that
//     joins a pair that is empty and had no join since the coalescer's last
//     tidy starts a new epoch too (its follower side may be forgotten,
//     coalescer.go rule 9).
//  7. A pair's beats carry at most its cap of joins (maxBatchEntries while
//     none is set); a leader that would pass it pairs on a later tick. A
//     beat too large for the network's MaxFrameSize sets the cap to half
//     its joins, down to one, and the pair remembers that size as failed.
//     Each beat at the cap that is sent doubles it, back to none, but not
//     while a failed size is remembered: that is forgotten once joinWait
//     beats at the cap were sent since, and joinWait doubles with each
//     beat too large, from joinWaitMin to joinWaitMax, and never shrinks.
//     Joins vary in size (cluster IDs, names), so a size that failed once
//     may fit later, and a cap that only shrank made every later burst of
//     joins trickle; but a beat too large costs a reset, which unpairs
//     every leader of the pair, so one that grew back at once would reset
//     every other beat. Under this rule a pair whose joins never fit above
//     N settles at a cap of at least N/2 after at most
//     log2(maxBatchEntries) resets, and then resets at most once per
//     joinWait beats at the cap: the beats of a burst of joins, not of the
//     steady state, which carry none. That is log2(joinWaitMax/joinWaitMin)
//     more, then one in joinWaitMax.

// PairBeat is one tick of the paired leaders of the sending node, for their
// members on the receiving node (rule 8 of the coalescer).
type PairBeat struct {
	// Interval is the HeartbeatInterval of the leaders it beats for, in
	// nanoseconds: the sender has one grid per interval.
	Interval int64
	// Epoch starts afresh after a reset; Prev is the Tick of the previous
	// beat of the epoch, 0 for its first; Tick counts the grid's ticks.
	Epoch, Prev, Tick uint64
	// Sent is when the beat was sent, stamped as its leaders' cores stamp
	// their heartbeats (stampOf): the heartbeats it stands for, and those
	// of refused slots delivered with it, carry it as their Sent.
	Sent int64
	// Leaves are slots that no longer stand, from this beat on; Joins are
	// slots that stand from this beat on, each with the heartbeat it stands
	// for.
	Leaves []uint32
	Joins  []PairJoin
}

// PairJoin is a slot joining a pair: a leader's heartbeat to one member, and
// the acknowledgement the leader expects of it.
type PairJoin struct {
	Slot uint32
	CoalescedRoute
	// Heartbeat names no sender node (the frame does); Ack is complete.
	Heartbeat MessageHeartbeat
	Ack       MessageHeartbeatAck
}

// PairAck is a follower node's acknowledgement of a PairBeat for every slot
// bound there.
type PairAck struct {
	Interval    int64
	Epoch, Tick uint64
	// Echo is the beat's Sent: the acknowledgements it stands for are
	// evidence of that time, not of their arrival (rule 3).
	Echo int64
	// Bound are the slots that joined with this beat and stand: a slot is
	// covered from the acknowledgement that names it here on, and never
	// before. Refused are the slots that do not stand, which this
	// acknowledgement does not cover; named until their leave arrives.
	Bound   []uint32
	Refused []uint32
	// Reset says the beats came out of sequence: nothing is bound any more.
	Reset bool
}

// pairBeats is the leader node's side of the pair beats of one heartbeat
// grid (one node, one HeartbeatInterval).
type pairBeats struct {
	coal   *coalescer
	d      time.Duration
	phase  uint64
	linger time.Duration

	// mu guards everything below. It is taken after a shellTimer's mu and
	// an inbox's mu (a leader is paired from beatAhead), and before
	// coalescer.mu (beats are enqueued under it); never the other way
	// round. Timers are resumed, failures told and acknowledgements held
	// after it is released.
	mu sync.Mutex
	// tick counts the ticks done, the last at lastTick on the shell's
	// clock; nextAt is the instant of the next, zero while idle.
	tick     uint64
	lastTick time.Duration
	nextAt   time.Duration
	epochs   uint64 // epochs started, for the next one's number
	pairs    map[gen.Atom]*pairOut
	leaders  map[*pairedLeader]struct{}
	// untilAt is no later than the earliest end of a paired leader's beat.
	untilAt time.Duration
}

// pairOut is one pair: the slots of the members on one node.
type pairOut struct {
	dest        gen.Atom
	epoch, prev uint64
	nextSlot    uint32
	slots       map[uint32]*beatSlot
	joins       []PairJoin
	leaves      []uint32
	trailing    map[uint32]*beatSlot // left, owed the acknowledgements of ticks before their leave
	pending     map[uint32]*beatSlot // joined, not yet covered by a PairAck
	ackTick     uint64
	ackAt       time.Duration // the evidence of the last PairAck credited: its beat's send time
	ackArrived  time.Duration // that PairAck's arrival
	acks        int           // PairAcks credited in this epoch
	covered     int           // slots covered by the last PairAck
	coverWindow time.Duration // the shortest window of a slot joined since the pair was last empty
	// The joins a beat may carry (rule 7): joinCap, zero for
	// maxBatchEntries; joinFail, the joins of the last beat too large,
	// zero once forgotten; joinFits, the beats at the cap sent since;
	// joinWait, how many must be sent before joinFail is forgotten.
	joinCap, joinFail, joinFits, joinWait int
	// unused says no slot joined since the coalescer process last tidied
	// (coalescer_tidy.go).
	unused bool
}

// joinWaitMin and joinWaitMax bound joinWait (rule 7): the beats at its cap
// a pair sends after a beat too large before it tries a larger cap again.
const (
	joinWaitMin = 8
	joinWaitMax = 1024
)

// joinLimit is the joins the pair's next beat may carry (rule 7).
func (po *pairOut) joinLimit() int {
	return cmp.Or(po.joinCap, maxBatchEntries)
}

// tooLarge takes a beat of the pair carrying n joins that was too large
// for the network's MaxFrameSize (rule 7).
func (po *pairOut) tooLarge(n int) {
	po.joinCap, po.joinFail, po.joinFits = max(1, n/2), n, 0
	po.joinWait = min(max(2*po.joinWait, joinWaitMin), joinWaitMax)
}

// fits takes a beat of the pair carrying n joins that was sent (rule 7).
func (po *pairOut) fits(n int) {
	if po.joinCap == 0 || n < po.joinCap {
		return // not at the cap: it says nothing of a larger beat
	}
	if po.joinFail > 0 {
		if po.joinFits++; po.joinFits < po.joinWait {
			return
		}
		po.joinFail = 0 // the next beat at the cap tries twice as many
	}
	if po.joinCap *= 2; po.joinCap >= maxBatchEntries {
		po.joinCap = 0
	}
}

// pairedLeader is a leader whose ticks the pair beats do.
type pairedLeader struct {
	pb    *pairBeats
	owner *timerOwner
	timer *shellTimer
	pid   gen.PID
	// since is the tick of its joins, the first tick done for it; parked
	// is the due time its heartbeat timer was parked at; sent is the tick
	// it sent itself before its joins (pair's sent), zero when none.
	since  uint64
	parked time.Duration
	sent   time.Duration
	until  time.Duration
	window time.Duration
	slots  []*beatSlot // in the beat's Members order
	ended  bool
	done   pairedDone // set when ended
}

// pairedDone is what the pair beats did for a leader until it was unpaired.
type pairedDone struct {
	beats    int
	lastBeat time.Duration
	acks     []takenPairAcks
}

// takenPairAcks are the acknowledgements of one member credited by PairAcks.
type takenPairAcks struct {
	Count   int
	Last    time.Duration // the evidence of the last (its beat's send time)
	Arrived time.Duration
}

// beatSlot is one member of a paired leader on its node's pair.
type beatSlot struct {
	id     uint32
	leader *pairedLeader
	pair   *pairOut
	// join is the tick the slot joined on, leave the tick of the beat that
	// carries its leave (zero while it stands), and leftAt when it left.
	join, leave uint64
	leftAt      time.Duration
	// lastAck is the member's last reply before the slot joined; firstAck
	// is the pair's acks count at the PairAck that first covered it (zero
	// while none did).
	lastAck  time.Duration
	firstAck int
	// member is the member, with the acknowledgement expected of it: its
	// entry of the leader's steady beat, which the core never changes. Not
	// a copy: every follower of a steady leader has a slot.
	member *election.SteadyMember
}

func newPairBeats(c *coalescer, d time.Duration, phase uint64) *pairBeats {
	return &pairBeats{coal: c, d: d, phase: phase, linger: lingerFor(d),
		pairs: make(map[gen.Atom]*pairOut), leaders: make(map[*pairedLeader]struct{})}
}

// pairEffects are what must be done once mu is released: timers to resume,
// failures to tell, acknowledgements to hold.
type pairEffects struct {
	resume []resumeAt
	failed []failedTo
	held   []heldFor
}

type resumeAt struct {
	q  *pairedLeader
	at time.Duration
}

type failedTo struct {
	pid  gen.PID
	node gen.Atom
	err  error
}

type heldFor struct {
	leader, from gen.PID
	ack          election.MessageHeartbeatAck
	at           time.Duration // its arrival, on the shell's clock
}

// active reports whether the beats must tick: a leader is paired or a
// leave is still to be sent. Called with mu held.
func (pb *pairBeats) active() bool {
	if len(pb.leaders) > 0 {
		return true
	}
	for _, p := range pb.pairs {
		if len(p.leaves) > 0 {
			return true
		}
	}
	return false
}

// pair pairs a steady leader whose tick is due at now, on the shell's
// clock (rule 1). When sent is false, its joins carry that tick, in the
// pairs' beats of this very instant (the grid ticks the pairs after the
// timers due now); it reports false when they went out already, or when it
// cannot pair at all, and the tick is then sent as rule 7 says. When sent
// is true, the tick was sent so, and the joins carry the next. Called by
// beatAhead with the timer's and the inbox's mu held.
func (pb *pairBeats) pair(ib *inbox, o *timerOwner, t *shellTimer, now time.Duration, sent bool) (*pairedLeader, bool) {
	b, p := &ib.lead.beat, &ib.lead.ahead
	if len(b.Members) == 0 || b.until <= now+pb.d {
		return nil, false
	}
	pb.mu.Lock()
	defer pb.mu.Unlock()
	if !sent && pb.nextAt != 0 && pb.nextAt > now {
		return nil, false // this instant's beats went out: it joins the next
	}
	for _, m := range b.Members {
		if po := pb.pairs[m.PID.Node]; po != nil && len(po.joins) >= po.joinLimit() {
			return nil, false // the next beat to that node is full: another tick
		}
	}
	switch {
	case pb.nextAt == 0 && sent:
		pb.nextAt = pb.instantAfter(now)
	case pb.nextAt == 0:
		pb.nextAt = now // the pairs tick at this very instant
	}
	q := &pairedLeader{pb: pb, owner: o, timer: t, pid: o.pid, since: pb.tick + 1, parked: b.until,
		until: b.until, window: b.Window, slots: make([]*beatSlot, len(b.Members))}
	if sent {
		q.sent = now
	}
	for i, m := range b.Members {
		po := pb.pairs[m.PID.Node]
		if po == nil {
			pb.epochs++
			po = &pairOut{dest: m.PID.Node, epoch: pb.epochs, slots: make(map[uint32]*beatSlot),
				trailing: make(map[uint32]*beatSlot), pending: make(map[uint32]*beatSlot)}
			pb.pairs[m.PID.Node] = po
		}
		if po.unused && po.empty() {
			// Empty, and no join since the last tidy: the follower's
			// node may have forgotten its side already
			// (coalescer_tidy.go), and would reset a beat of this
			// epoch. A new one it takes as any.
			pb.epochs++
			po.epoch, po.prev = pb.epochs, 0
			po.ackTick, po.ackAt, po.ackArrived, po.acks, po.covered = 0, 0, 0, 0, 0
		}
		po.unused = false
		if len(po.slots) == 0 {
			po.coverWindow = b.Window
		}
		po.coverWindow = min(po.coverWindow, b.Window)
		po.nextSlot++
		s := &beatSlot{id: po.nextSlot, leader: q, pair: po, join: q.since, lastAck: p.lastAck[i], member: &b.Members[i]}
		q.slots[i] = s
		po.slots[s.id] = s
		po.pending[s.id] = s
		e := b.entry(i, stampOf(now))
		po.joins = append(po.joins, PairJoin{Slot: s.id, CoalescedRoute: e.CoalescedRoute, Heartbeat: e.Message, Ack: m.Ack})
	}
	pb.leaders[q] = struct{}{}
	if len(pb.leaders) == 1 || b.until < pb.untilAt {
		pb.untilAt = b.until
	}
	pb.coal.stats.paired.Add(1)
	return q, true
}

// unpair ends q's pairing (rule 5) and returns what was done for it; its
// slots leave with the pair's next beat. Called with mu held, before the
// tick being done is counted.
func (pb *pairBeats) unpair(q *pairedLeader) pairedDone {
	if q.ended {
		return q.done
	}
	q.ended = true
	delete(pb.leaders, q)
	d := pairedDone{acks: make([]takenPairAcks, len(q.slots))}
	if pb.tick >= q.since {
		d.beats, d.lastBeat = int(pb.tick-q.since+1), pb.lastTick
	}
	for i, s := range q.slots {
		po := s.pair
		if s.firstAck > 0 {
			d.acks[i] = takenPairAcks{Count: po.acks - s.firstAck + 1, Last: po.ackAt, Arrived: po.ackArrived}
			po.covered--
		}
		delete(po.slots, s.id)
		delete(po.pending, s.id)
		if s.join > pb.tick {
			// Its join was never sent: it leaves by not joining.
			po.joins = slices.DeleteFunc(po.joins, func(j PairJoin) bool { return j.Slot == s.id })
			continue
		}
		if s.leave == 0 {
			s.leave, s.leftAt = pb.tick+1, pb.lastTick
			po.leaves = append(po.leaves, s.id)
			po.trailing[s.id] = s
		}
	}
	q.done = d
	pb.coal.stats.unpaired.Add(1)
	return d
}

// unpairTo unpairs q and has its timer resume at at once mu is released.
// Called with mu held.
func (pb *pairBeats) unpairTo(q *pairedLeader, at time.Duration, fx *pairEffects) {
	pb.unpair(q)
	fx.resume = append(fx.resume, resumeAt{q, at})
}

// withdraw unpairs q for its leader, which woke; the leader resumes its own
// timer.
func (pb *pairBeats) withdraw(q *pairedLeader) pairedDone {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	return pb.unpair(q)
}

// resetPair ends the epoch of po (rule 6): its leaders are unpaired, to
// resume at resumeAt, and told err when it is not nil. Called with mu held.
func (pb *pairBeats) resetPair(po *pairOut, resume time.Duration, err error, fx *pairEffects) {
	// Unpairing a leader takes all its slots off po.slots, so the loop
	// meets each leader once.
	for _, s := range po.slots {
		q := s.leader
		pb.unpairTo(q, resume, fx)
		if err != nil {
			fx.failed = append(fx.failed, failedTo{q.pid, po.dest, err})
		}
	}
	pb.epochs++
	po.epoch, po.prev = pb.epochs, 0
	po.joins, po.leaves = po.joins[:0], po.leaves[:0]
	clear(po.trailing)
	clear(po.pending)
	po.ackTick, po.ackAt, po.ackArrived, po.acks, po.covered = 0, 0, 0, 0, 0
	pb.coal.stats.pairResets.Add(1)
}

// fire ticks the pairs when their instant has come (rule 4); the grid
// calls it after the timers due at now.
func (pb *pairBeats) fire(now time.Duration) {
	var fx pairEffects
	var beaten []gen.Atom // the pairs' nodes this tick's beats go to
	pb.mu.Lock()
	if pb.nextAt == 0 || now < pb.nextAt {
		pb.mu.Unlock()
		return
	}
	if !pb.coal.running() {
		for _, po := range pb.pairs {
			pb.resetPair(po, now, nil, &fx)
		}
	}
	// Rule 4: who may not have this tick.
	if len(pb.leaders) > 0 && now > pb.untilAt {
		pb.untilAt = 0
		first := true
		for q := range pb.leaders {
			if now > q.until {
				pb.unpairTo(q, now, &fx)
				continue
			}
			if first || q.until < pb.untilAt {
				pb.untilAt, first = q.until, false
			}
		}
	}
	for _, po := range pb.pairs {
		if po.covered > 0 && now-po.ackAt >= po.coverWindow {
			pb.unpairAll(po, now, &fx)
			continue
		}
		for _, s := range po.pending {
			if now-s.lastAck >= s.leader.window {
				pb.unpairTo(s.leader, now, &fx)
			}
		}
	}
	pb.tick++
	pb.lastTick = now
	for _, po := range pb.pairs {
		po.expireTrailing(now)
		if len(po.slots) == 0 && len(po.leaves) == 0 && len(po.joins) == 0 {
			continue
		}
		beat := PairBeat{Interval: int64(pb.d), Epoch: po.epoch, Prev: po.prev, Tick: pb.tick, Sent: stampOf(now), Leaves: po.leaves, Joins: po.joins}
		po.prev, po.leaves, po.joins = pb.tick, nil, nil
		if !pb.coal.enqueuePair(po.dest, &beat, nil) {
			pb.resetPair(po, pb.instantAfter(now), nil, &fx)
			continue
		}
		beaten = append(beaten, po.dest)
	}
	if pb.active() {
		pb.nextAt = pb.instantAfter(now)
	} else {
		pb.nextAt = 0
	}
	pb.mu.Unlock()
	pb.coal.stats.pairBeatsOut.Add(uint64(len(beaten)))
	// The beats leave first: the effects (thousands of timers resumed when
	// a pair resets) touch no outbox, and would otherwise delay them.
	for _, dest := range beaten {
		pb.coal.flushNow(dest, pb.linger)
	}
	pb.apply(&fx)
}

// empty reports whether po holds no slot, join, leave or acknowledgement
// owed. Called with mu held.
func (po *pairOut) empty() bool {
	return len(po.slots)+len(po.trailing)+len(po.pending)+len(po.joins)+len(po.leaves) == 0
}

// expireTrailing forgets the slots that left more than two of their
// leader's windows before now: an acknowledgement owed that has not come
// by then is not coming in time to count, as its leader judged the
// silence. Called with mu held.
func (po *pairOut) expireTrailing(now time.Duration) {
	for id, s := range po.trailing {
		if now-s.leftAt >= 2*s.leader.window {
			delete(po.trailing, id)
		}
	}
}

// unpairAll unpairs every leader with a slot on po, to resume at now.
// Called with mu held.
func (pb *pairBeats) unpairAll(po *pairOut, now time.Duration, fx *pairEffects) {
	for _, s := range po.slots {
		if !s.leader.ended {
			pb.unpairTo(s.leader, now, fx)
		}
	}
}

// instantAfter is the first instant of the pairs' grid after t.
func (pb *pairBeats) instantAfter(t time.Duration) time.Duration {
	return nextInstant(t, pb.d, pb.phase)
}

// next is when the pairs tick next, zero while they are idle.
func (pb *pairBeats) next() time.Duration {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	return pb.nextAt
}

// failed resets the pair to dest whose beat b could not be sent. A beat
// too large for the network's MaxFrameSize lowers the joins a beat of the
// pair may carry (rule 7).
func (pb *pairBeats) failed(dest gen.Atom, b *PairBeat, err error) {
	var fx pairEffects
	pb.mu.Lock()
	if po := pb.pairs[dest]; po != nil && po.epoch == b.Epoch {
		if errors.Is(err, gen.ErrTooLarge) {
			po.tooLarge(len(b.Joins))
		}
		pb.coal.stats.pairFailed.Add(1)
		pb.resetPair(po, pb.instantAfter(pb.lastTick), err, &fx)
	}
	pb.mu.Unlock()
	pb.apply(&fx)
}

// sent takes b, a beat to dest with joins that was sent, as a sign that
// beats as large fit (rule 7).
func (pb *pairBeats) sent(dest gen.Atom, b *PairBeat) {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	if po := pb.pairs[dest]; po != nil && po.epoch == b.Epoch {
		po.fits(len(b.Joins))
	}
}

// acked credits a PairAck from node, arrived at at on the shell's clock
// (rule 3).
func (pb *pairBeats) acked(node gen.Atom, a *PairAck, at time.Duration) {
	var fx pairEffects
	pb.mu.Lock()
	po := pb.pairs[node]
	switch {
	case po == nil || a.Epoch != po.epoch:
		pb.coal.stats.drop(dropStalePair, 1)
	case a.Reset:
		pb.resetPair(po, pb.instantAfter(pb.lastTick), nil, &fx)
	default:
		pb.credit(po, a, at, &fx)
	}
	pb.mu.Unlock()
	pb.apply(&fx)
}

// credit is acked for a PairAck of po's epoch, arrived at arrived: its
// acknowledgements are evidence of when its beat was sent (a.Echo), and
// every window below is judged on that. Called with mu held.
func (pb *pairBeats) credit(po *pairOut, a *PairAck, arrived time.Duration, fx *pairEffects) {
	next := pb.instantAfter(pb.lastTick)
	at, ok := evidenceAt(a.Echo, arrived)
	for _, id := range a.Refused {
		if s := po.slots[id]; s != nil && !s.leader.ended {
			pb.unpairTo(s.leader, next, fx)
			pb.coal.stats.pairRefused.Add(1)
		}
	}
	if !ok || a.Tick <= po.ackTick || a.Tick > po.prev {
		pb.coal.stats.drop(dropStalePair, 1)
		return
	}
	ack := func(s *beatSlot) heldFor {
		h := heldFor{leader: s.leader.pid, from: s.member.PID, ack: s.member.Ack, at: arrived}
		h.ack.Echo = a.Echo
		return h
	}
	// Acknowledgements owed to slots that left (rule 5).
	for id, s := range po.trailing {
		if a.Tick >= s.leave {
			delete(po.trailing, id)
			continue
		}
		if a.Tick >= s.join && !slices.Contains(a.Refused, id) {
			fx.held = append(fx.held, ack(s))
		}
	}
	if po.covered > 0 && at-po.ackAt >= po.coverWindow {
		// A late one (rule 3): its leaders step it themselves.
		for _, s := range po.slots {
			if s.firstAck > 0 && !s.leader.ended {
				pb.unpairTo(s.leader, next, fx)
				fx.held = append(fx.held, ack(s))
			}
		}
	}
	po.ackTick, po.ackAt, po.ackArrived = a.Tick, at, arrived
	po.acks++
	for id, s := range po.pending {
		if s.join > a.Tick || slices.Contains(a.Refused, id) {
			continue
		}
		delete(po.pending, id)
		if !slices.Contains(a.Bound, id) {
			// Not confirmed: its join or its PairAck was lost, or the
			// follower node did not take it. Nothing covers it.
			pb.unpairTo(s.leader, next, fx)
			pb.coal.stats.pairRefused.Add(1)
			continue
		}
		if at-s.lastAck >= s.leader.window {
			pb.unpairTo(s.leader, next, fx)
			fx.held = append(fx.held, ack(s))
			continue
		}
		s.firstAck = po.acks
		po.covered++
	}
	pb.coal.stats.pairAcksIn.Add(1)
}

// apply does what a change under mu left to do: it resumes the heartbeat
// timers of leaders unpaired by the grid or a PairAck, tells them of
// failed sends, and holds the acknowledgements owed to them.
func (pb *pairBeats) apply(fx *pairEffects) {
	for _, r := range fx.resume {
		r.q.resume(r.at)
	}
	for _, f := range fx.failed {
		pb.coal.tellFailed(f.pid, f.node, f.err)
	}
	for i := range fx.held {
		h := &fx.held[i]
		if !pb.coal.hold(h.leader, h.from, gridEpoch.Add(h.at), &h.ack) {
			pb.coal.deliver(pb.coal.node, deliveryTarget{pid: h.leader}, inbound{from: h.from, ack: &h.ack})
		}
	}
}

// resume moves q's heartbeat timer from where pairing parked it to at, on
// the shell's clock; a timer its leader re-armed or stopped since is left
// alone.
func (q *pairedLeader) resume(at time.Duration) {
	t := q.timer
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.due != q.parked {
		return
	}
	t.due = max(at, 1)
	if t.runAt == 0 || t.due < t.runAt {
		t.schedule(sinceEpoch(time.Now()), q.owner, election.TimerHeartbeat)
	}
}

// pairedLeader returns the pairing of the leader whose beat this is, nil
// when it is not paired. Called with the inbox's mu held.
func (lb *leaderBeat) pairedLeader() *pairedLeader {
	if lb == nil {
		return nil
	}
	return lb.paired
}

// pending reports whether q still stands and from is a member of it whose
// slot no PairAck covers yet, with the member's index.
func (pb *pairBeats) pending(q *pairedLeader, from gen.PID) (int, bool) {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	if q.ended {
		return 0, false
	}
	for i, s := range q.slots {
		if s.member.PID == from {
			return i, s.firstAck == 0
		}
	}
	return 0, false
}

// replied records a reply of q's member i at at, taken as rule 7 takes it,
// as the member's last before its slot's first PairAck.
func (pb *pairBeats) replied(q *pairedLeader, i int, at time.Duration) {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	if s := q.slots[i]; !q.ended && s.firstAck == 0 {
		s.lastAck = max(s.lastAck, at)
	}
}

// resumeNext resumes q's heartbeat timer for the tick after the last one
// done for it, or at once when none was: the pairs did none, and it sent
// none itself before its joins (a late one's members reply to that tick
// before its joins go out, and it must not tick again at once).
func (q *pairedLeader) resumeNext() {
	q.pb.mu.Lock()
	at := sinceEpoch(time.Now())
	switch last := q.done.lastBeat; {
	case q.done.beats > 0:
		at = q.pb.instantAfter(last)
	case q.sent > 0:
		at = q.pb.instantAfter(q.sent)
	}
	q.pb.mu.Unlock()
	q.resume(at)
}

// fold adds what the pair beats did for the leader to what was beaten
// ahead (rule 5), unpairing it first if it still is, and returns the
// pairing it ended, nil when there was none. Called with the inbox's mu
// held; the caller resumes the leader's timer (resumeNext, resume) once it
// is released, when it is not the timer itself.
func (ib *inbox) fold() *pairedLeader {
	q := ib.lead.pairedLeader()
	if q == nil {
		return nil
	}
	ib.lead.paired = nil
	d := q.pb.withdraw(q)
	p := &ib.lead.ahead
	if d.beats > 0 {
		p.Beats += d.beats
		p.LastBeat = gridEpoch.Add(d.lastBeat)
	}
	for i, a := range d.acks {
		if a.Count == 0 {
			continue
		}
		p.Acks[i].Count += a.Count
		if t := gridEpoch.Add(a.Last); t.After(p.Acks[i].Last) {
			p.Acks[i].Last = t
		}
		if t := gridEpoch.Add(a.Arrived); t.After(p.Acks[i].Arrived) {
			p.Acks[i].Arrived = t
		}
		p.lastAck[i] = max(p.lastAck[i], a.Last)
	}
	return q
}
