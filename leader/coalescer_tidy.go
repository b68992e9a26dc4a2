package leader

import (
	"errors"
	"time"

	"github.com/regent-go/regent/gen"
)

// What a coalescer keeps per peer node — an outbox, and for each heartbeat
// grid the leader side of a pair (pairOut) and the follower side
// (pairIn) — is made on first use and would otherwise live as long as the
// node: an outbox keeps its last batch's capacity (up to maxBatchEntries
// entries, tens of kilobytes) and a pair its maps' buckets. A service whose
// peers come and go under new names (a rolling restart of pods) would add
// one set per name for good. So the coalescer process tidies every
// tidyEvery: what was unused for a whole period, and holds nothing, is
// forgotten, and made afresh if the node is heard from again.
//
// Forgetting changes nothing a member sees:
//   - an outbox is forgotten only when empty, with no flush set or under
//     way, so no entry is lost or sent out of order (a flush takes entries
//     from the outbox it holds, never from a newer one of the same node);
//   - a pair is forgotten on the leader side only with no slot, join or
//     leave, so no leader is paired there, and with its join cap (pair
//     beat rule 7) never lowered, which it keeps; the next pairing there
//     starts a new epoch, as after a reset (pair beat rule 6);
//   - a pair is forgotten on the follower side only with nothing bound or
//     being stepped and no beat for a whole period. A leader that joins a
//     pair that is empty and had no join since the leader side's last tidy
//     starts a new epoch, which a forgotten side takes as any; a beat of an
//     old epoch that comes later all the same (the two sides tidy at their
//     own times) is out of sequence there and resets the pair, which is
//     what any anomaly costs (rule 6).

// tidyEvery is how often the coalescer process forgets what went unused
// (above): what was unused at one tidy and still is at the next. A pair
// or outbox in use sees traffic every heartbeat interval, far shorter. A
// variable only for tests, which run it shorter.
var tidyEvery = time.Minute

// tidyTick is the message the coalescer process sends itself to tidy.
type tidyTick struct{}

// armTidy has the process tidy in one period. A failure is logged: the
// coalescer works without it, and keeps what it would have freed.
func (p *coalescerProcess) armTidy() {
	cancel, err := p.SendAfter(p.PID(), tidyTick{}, tidyEvery)
	switch {
	case errors.Is(err, gen.ErrNodeTerminated):
		return // the node stops, and the coalescer with it
	case err != nil:
		p.Log().Error("leader: the heartbeat coalescer could not arm its tidying: %v", err)
		return
	}
	p.tidyCancel = cancel
}

// tidy forgets what was unused since the last tidy and holds nothing, marks
// the rest unused until its next use, and counts what it forgot.
func (p *coalescerProcess) tidy() {
	c := p.c
	forgotten := c.tidyOutboxes()
	for key, src := range c.pairsIn {
		if src.tidy() {
			delete(c.pairsIn, key)
			forgotten++
		}
	}
	now := sinceEpoch(time.Now())
	for _, pb := range c.allPairBeats() {
		forgotten += pb.tidy(now)
	}
	c.stats.forgotten.Add(uint64(forgotten))
}

// tidyOutboxes forgets the outboxes unused since the last tidy that hold
// nothing and have no flush set or under way (a flush under way holds
// sending; TryLock never waits, so taking it under mu keeps the lock
// order), and marks the others unused. It returns how many it forgot.
func (c *coalescer) tidyOutboxes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for dest, ob := range c.out {
		if !ob.unused || ob.scheduled || len(ob.heartbeats)+len(ob.acks)+len(ob.beats)+len(ob.beatAcks) > 0 || !ob.sending.TryLock() {
			ob.unused = true
			continue
		}
		ob.sending.Unlock()
		ob.flusher.close()
		delete(c.out, dest)
		n++
	}
	return n
}

// tidy reports whether the follower side of a pair can be forgotten: no
// beat since the last tidy, nothing bound or being stepped; it stops the
// watchdog then. Otherwise it is marked unused until the next beat. Called
// by the coalescer process, which owns unused.
func (src *pairIn) tidy() bool {
	src.mu.Lock()
	defer src.mu.Unlock()
	if !src.unused || len(src.bound)+len(src.stepping) > 0 {
		src.unused = true
		return false
	}
	if src.watchdog != nil {
		src.watchdog.Stop()
	}
	return true
}

// tidy forgets the pairs unused since the last tidy that hold no slot,
// join, leave, lowered join cap or acknowledgement owed at now (on the shell's clock; the
// pairs may have stopped ticking since the last slot left, so what is owed
// expires here too), marks the others unused until a slot joins them, and
// returns how many it forgot.
func (pb *pairBeats) tidy(now time.Duration) int {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	n := 0
	for dest, po := range pb.pairs {
		po.expireTrailing(now)
		// A pair whose joins learnt a lower cap (pair beat rule 7) keeps
		// it: forgetting would have the next burst of joins pay the
		// resets that taught it.
		if !po.unused || po.joinCap != 0 || !po.empty() {
			po.unused = true
			continue
		}
		delete(pb.pairs, dest)
		n++
	}
	return n
}

// allPairBeats lists the pair beats of every grid of the coalescer's node.
func (c *coalescer) allPairBeats() []*pairBeats {
	s := c.share
	if s == nil {
		return nil
	}
	s.gridsMu.Lock()
	defer s.gridsMu.Unlock()
	out := make([]*pairBeats, 0, len(s.grids))
	for _, g := range s.grids {
		if g.pairs != nil {
			out = append(out, g.pairs)
		}
	}
	return out
}
