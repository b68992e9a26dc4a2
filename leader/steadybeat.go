package leader

import (
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// Beating ahead: the leader side of answering ahead (coalescer.go, rule 7).
// A steady leader's ticks are sent by its heartbeat timer and its members'
// acknowledgements taken by the coalescer, under the rules of
// election.SteadyBeat, without waking it; it catches up on both first
// thing on its next wake-up.

// steadyBeat is a leader's steady beat with what its timer and the
// coalescer need to keep its rules: its times on the shell's clock and the
// leader's half of its entries' routes.
type steadyBeat struct {
	election.SteadyBeat
	// fromID and fromCreation are the leader's PID on its node: every
	// entry's route starts there (entry).
	fromID       uint64
	fromCreation int64
	// since is when the beat was given and until the beat's end, both on
	// the shell's clock; linger is the member's outbox linger.
	since, until, linger time.Duration
}

// beatenAhead is what was done under a steady beat: ticks sent and
// acknowledgements taken, in the beat's terms, with each member's last
// reply on the shell's clock. broken says an acknowledgement was held
// that the beat could not take: nothing more is done under it, so what
// was held comes after everything done.
type beatenAhead struct {
	election.BeatenAhead
	lastAck []time.Duration
	broken  bool
	// skipped counts the heartbeats of a follower's leader that the held
	// ones stand for beyond themselves: a pair binding holds its last beat
	// only (rule 8). Told to Actor.observeStep, nothing else.
	skipped int
}

// entries is how many inputs of the member's core a is worth.
func (a *beatenAhead) entries() int {
	n := a.Beats
	for _, t := range a.Acks {
		n += t.Count
	}
	return n
}

// active reports whether something was done under the beat.
func (a *beatenAhead) active() bool { return a.entries() > 0 }

// takeAck takes ack from from, arrived at, under the member's steady beat,
// and reports whether it did: only an acknowledgement equal to the one
// the beat expects of its sender but for its Echo, whose evidence (when
// the heartbeat it echoes was sent, evidenceAt) is within the beat's window
// of that member's last. Any other stops the beat (broken): it is held and
// wakes the leader on its next tick. Called with mu held.
func (ib *inbox) takeAck(from gen.PID, at time.Time, ack *election.MessageHeartbeatAck) bool {
	if !ib.beating || ib.lead.ahead.broken {
		return false
	}
	b, p := &ib.lead.beat, &ib.lead.ahead
	for i := range b.Members {
		m := &b.Members[i]
		if m.PID != from {
			continue
		}
		arrived := sinceEpoch(at)
		t, ok := evidenceAt(ack.Echo, arrived)
		expected := m.Ack
		expected.Echo = ack.Echo
		if !ok || *ack != expected || t-p.lastAck[i] >= b.Window {
			break
		}
		p.lastAck[i] = max(p.lastAck[i], t)
		p.Acks[i].Count++
		p.Acks[i].Last = gridEpoch.Add(p.lastAck[i])
		p.Acks[i].Arrived = at
		return true
	}
	p.broken = true
	return false
}

// beatAhead sends the member's steady heartbeats for the tick due at now,
// on the shell's clock, when the beat's rules allow, and returns when the
// next tick is due: every member replied within the window, the tick is
// not past the beat's end, and the coalescer takes every entry. It reports
// false when the tick must wake the member instead. Called with the
// heartbeat timer's mu held.
func (c *coalescer) beatAhead(ib *inbox, t *shellTimer, o *timerOwner, now time.Duration) (time.Duration, bool) {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	// Its pairing ended (rule 8), or its beat did: what the pair beats did
	// counts first.
	ib.fold()
	if ib.closed || !ib.beating || ib.lead.ahead.broken || !c.running() {
		return 0, false
	}
	b, p := &ib.lead.beat, &ib.lead.ahead
	at := max(now, b.since)
	if at > b.until {
		return 0, false
	}
	for _, last := range p.lastAck {
		if at-last >= b.Window {
			return 0, false
		}
	}
	if o.pairs != nil {
		if q, ok := o.pairs.pair(ib, o, t, at, false); ok {
			// Its joins carry this tick's heartbeats, in the beats the grid
			// sends at this very instant; its timer parks at the beat's end.
			ib.lead.paired = q
			return q.parked, true
		}
	}
	sent := stampOf(at)
	for i := range b.Members {
		e := b.entry(i, sent)
		// Never inline: a full outbox waits for its timer, not for us.
		if !c.enqueueMode(b.Members[i].PID.Node, outItem{hb: &e}, b.linger, flushOnTimer) {
			// The coalescer stopped: the member's own tick sends them all
			// (some twice, which a heartbeat allows) and none counts as sent.
			p.broken = true
			return 0, false
		}
	}
	p.Beats++
	p.LastBeat = gridEpoch.Add(at)
	c.stats.beatenAhead.Add(1)
	if o.pairs != nil {
		if q, ok := o.pairs.pair(ib, o, t, at, true); ok {
			// This instant's pair beats went out before its tick came:
			// it joins the next.
			ib.lead.paired = q
			return q.parked, true
		}
	}
	return nextInstant(at, b.Interval, o.phase), true
}

// publishBeat publishes the leader's steady beat for its timer and the
// coalescer to keep (coalescer.go, rule 7), or none when the core gives
// none or its heartbeats do not all go through the coalescer.
func (a *Actor) publishBeat(now time.Time) {
	if !a.timers[election.TimerHeartbeat].pending || !a.share.coal.running() {
		return
	}
	// Only this member writes its lead's beat and spares: read without mu.
	prev := a.inbox.lead
	var held []election.SteadyMember
	if prev != nil {
		held = prev.beat.Members
	}
	sb, ok := a.core.SteadyBeat(now, held)
	if !ok || !sb.Origin.Equal(gridEpoch) {
		// The coalescer stamps and reads its heartbeats on gridEpoch's
		// clock (stampOf, evidenceAt): a core counting from another
		// origin beats for itself.
		return
	}
	self := a.PID()
	var lastAck []time.Duration
	if prev != nil {
		lastAck, prev.spareLastAck = prev.spareLastAck, nil
	}
	lastAck = resized(lastAck, len(sb.Members))
	for i, m := range sb.Members {
		if m.PID.Node == self.Node {
			return // members of one node are sent to directly
		}
		lastAck[i] = sinceEpoch(a.core.LastReply(m.PID))
	}
	b := steadyBeat{
		SteadyBeat:   sb,
		fromID:       self.ID,
		fromCreation: self.Creation,
		since:        sinceEpoch(now),
		until:        sinceEpoch(sb.Until),
		linger:       a.options.linger,
	}
	a.inbox.publishBeat(&b, lastAck)
	a.beating = true
}

// entry is b's heartbeat to Members[i] as the outbox wants it, stamped
// sent: routed from the leader, with the sender's node left out (the frame
// names it). Made at each send rather than kept: the members' entries
// differ in their route only, and a leader keeping one per member held the
// heartbeat as many times.
func (b *steadyBeat) entry(i int, sent int64) CoalescedHeartbeat {
	to := b.Members[i].PID
	e := CoalescedHeartbeat{
		CoalescedRoute: CoalescedRoute{FromID: b.fromID, FromCreation: b.fromCreation, ToID: to.ID, ToCreation: to.Creation},
		Message:        b.Heartbeat,
	}
	e.Message.From.Node = ""
	e.Message.Sent = sent
	return e
}

// publishBeat makes b the member's steady beat, with each member's last
// reply on the shell's clock, and starts afresh what is done under it.
func (ib *inbox) publishBeat(b *steadyBeat, lastAck []time.Duration) {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	if ib.lead == nil {
		ib.lead = new(leaderBeat)
	}
	ib.lead.beat, ib.beating = *b, true
	acks := resized(ib.lead.spareAcks, len(b.Members))
	ib.lead.spareAcks = nil
	ib.lead.ahead = beatenAhead{
		BeatenAhead: election.BeatenAhead{Acks: acks},
		lastAck:     lastAck,
		// Acknowledgements held since the member took its inbox came
		// before anything done under the beat: none is done.
		broken: len(ib.acks) > 0,
	}
}

// keepSpares keeps the lists of ahead, taken from the inbox and caught up
// on, for the next beat: a leader publishes one after every wake-up, and
// the lists of the last would otherwise be made in an election's burst
// and kept. Nil-safe: a member that never led has no lead.
func (lb *leaderBeat) keepSpares(ahead *beatenAhead) {
	if lb != nil && ahead.Acks != nil {
		lb.spareAcks, lb.spareLastAck = ahead.Acks, ahead.lastAck
	}
}

// resized is s with n zero elements, in s's array when it has room.
func resized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// withdrawBeat stops the timer and the coalescer from acting for the
// leader; what they did stays in the inbox for stepHeld.
func (a *Actor) withdrawBeat() {
	if a.beating {
		a.inbox.mu.Lock()
		a.inbox.beating = false
		q := a.inbox.fold()
		a.inbox.mu.Unlock()
		if q != nil {
			q.resumeNext()
		}
		a.beating = false
	}
}

// catchUp tells the core what was done under its steady beat, before any
// acknowledgement held after it is stepped. A refusal is a defect of the
// shell or the core: counted as a mismatch and logged; the ticks were
// sent, the acknowledgements are lost to the core.
func (a *Actor) catchUp(ahead *beatenAhead) {
	if !ahead.active() {
		return
	}
	if a.few().observeStep != nil {
		seen := caughtUp{beats: ahead.Beats, acks: make(map[gen.PID]int)}
		for i, m := range a.inbox.lead.beat.Members {
			seen.acks[m.PID] = ahead.Acks[i].Count
		}
		a.few().observeStep(a.lastInput, a.PID(), seen)
	}
	if err := a.core.CatchUp(&a.inbox.lead.beat.SteadyBeat, ahead.BeatenAhead); err != nil {
		a.share.coal.stats.mismatched.Add(1)
		a.Log().Error("leader: cluster %q: %v", a.options.ClusterID, err)
		return
	}
	if ahead.Beats > 0 && ahead.LastBeat.After(a.lastInput) {
		a.lastInput = ahead.LastBeat
	}
	for _, t := range ahead.Acks {
		if t.Count > 0 && t.Last.After(a.lastInput) {
			a.lastInput = t.Last
		}
	}
}

// caughtUp is what Actor.observeStep sees of a catch-up: the ticks and
// acknowledgements a leader's core took at once, or the heartbeats from a
// follower's leader it skipped, as stepping the last of them stands for.
type caughtUp struct {
	beats      int
	acks       map[gen.PID]int
	heartbeats int
	from       gen.PID
}
