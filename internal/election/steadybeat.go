package election

import (
	"fmt"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/quorum"
)

// SteadyBeat is a leader's steady heartbeat, declared before its next ticks
// come: the leader side of SteadyAnswer. A shell that hosts many members may,
// on the leader's heartbeat ticks, send Heartbeat to every member itself
// without waking the leader, and take the members' acknowledgements that
// equal their Ack but for its Echo without handing each to the core, under
// two rules that keep each skipped tick and each skipped acknowledgement a
// no-op. Each heartbeat a tick at t sends carries Sent = Stamp(Origin, t);
// an acknowledgement is evidence of the time its Echo names,
// StampTime(Origin, Echo), which must not be after its arrival (the core's
// evidenceOf), and none with a zero Echo may be taken.
//
//   - An acknowledgement is taken only when its evidence is within Window
//     of the member's last (the core's LastReply from it for the first),
//     so the member's run of replies goes unbroken; another is stepped as
//     usual.
//   - A tick at t is sent ahead only when t is not after Until and every
//     member's last evidence is after t - Window, so the tick would find
//     every member reached and none silent; otherwise the tick goes to the
//     core.
//
// The shell then reports what it did with CatchUp, before the core steps
// anything else, and the core is in the state stepping each tick and each
// acknowledgement at its time would have left it in, having sent the same
// heartbeats. The members see the same heartbeats at the same times; the
// leader wakes for what changes something instead of once per tick.
type SteadyBeat struct {
	// Term is the leader's term; Heartbeat what each tick sends to every
	// member, stamped with the tick's time: carrying no view, as every
	// member acknowledged the leader's.
	Term      uint64
	Heartbeat MessageHeartbeat
	// Origin is the leader's clock origin (Config.Origin), which its
	// heartbeats' stamps count from.
	Origin time.Time
	// Members are the other members of the view, in the view's order.
	Members []SteadyMember
	// Interval is the HeartbeatInterval: each tick re-arms the heartbeat
	// timer that far ahead.
	Interval time.Duration
	// Window bounds the silence the two rules allow; Until is the last
	// instant a tick may be sent ahead (a time-bound rule of the tick, such
	// as a withdrawal that ends, falls due after it).
	Window time.Duration
	Until  time.Time
}

// SteadyMember is one member a SteadyBeat heartbeats.
type SteadyMember struct {
	PID gen.PID
	// Ack is the acknowledgement that changes nothing but the time the
	// member was last heard from: what a steady follower sends
	// (SteadyAnswer.Ack), but for its Echo, which is zero here.
	Ack MessageHeartbeatAck
}

// BeatenAhead is what a shell did for a leader under its SteadyBeat: Beats
// ticks sent ahead, the last at LastBeat, and, for each of the beat's
// Members in order, the number of acknowledgements taken, the latest
// evidence among them and the arrival of the last one (zero when none).
type BeatenAhead struct {
	Beats    int
	LastBeat time.Time
	Acks     []TakenAcks
}

// TakenAcks are the acknowledgements of one member a shell took under a
// SteadyBeat.
type TakenAcks struct {
	Count   int
	Last    time.Time
	Arrived time.Time
}

// SteadyBeat returns this leader's steady heartbeat when its next ticks, up
// to the beat's Until, would do nothing but send it again, provided every
// member keeps acknowledging as the beat's rules require, and such an
// acknowledgement would change nothing but the member's contact time. That
// holds for a visible leader whose view is agreed, committed in its term and
// acknowledged by every member at it, with no change, admission, removal or
// handover pending, no member preferred over it, no member ended, failing
// sends or of unknown PID, and healthy storage. A member cut off (its
// connection dropped) is left out while the others make a quorum: the ticks
// send it nothing, and the beat ends before it would be a ghost. It reports
// false in every other case.
//
// prev is the Members of the beat the shell holds (nil for none): when the
// beat lists the same members, expecting the same acknowledgements, its
// Members is prev itself, so that a shell that asks after every wake-up
// makes a list only when a member changed. The core never changes prev, nor
// a list it returned.
func (c *Core) SteadyBeat(now time.Time, prev []SteadyMember) (SteadyBeat, bool) {
	l := c.lead
	if c.role != RoleLeader || l == nil || c.few().fatal != nil || c.few().storageErr != nil || c.view == nil ||
		!l.visible || l.awaitingConfirm || !l.committedInTerm || !c.agreed() || c.committed != c.view.Stamp.Key ||
		l.change != "" || len(l.adds) > 0 || len(l.removes) > 0 || len(c.removals) > 0 || c.few().handover.target != "" {
		return SteadyBeat{}, false
	}
	window := c.cfg.evidenceWindow()
	if window > c.cfg.GhostTTL {
		return SteadyBeat{}, false // a silence the rules allow could make a ghost
	}
	until := now.Add(steadyBeatHorizon)
	for n, end := range c.withdrawn {
		if !now.Before(end) {
			return SteadyBeat{}, false // tidyPeers forgets it on the next tick
		}
		if c.view.has(n) {
			return SteadyBeat{}, false
		}
		until = earliest(until, end.Add(-time.Nanosecond))
	}
	for _, n := range c.peers.nodes() {
		p := c.peers.get(n)
		if c.view.has(n) || p.declared {
			continue
		}
		// A stray peer is forgotten once silent for GhostTTL (tidyPeers).
		end := c.clock().time(p.lastInbound).Add(c.cfg.GhostTTL)
		if !now.Before(end) {
			return SteadyBeat{}, false
		}
		until = earliest(until, end.Add(-time.Nanosecond))
	}
	self := c.selfCandidate()
	sb := SteadyBeat{
		Term:      c.term,
		Heartbeat: MessageHeartbeat{Header: c.hdr(c.term), Committed: c.committed, Sent: int64(c.clock().at(now))},
		Origin:    c.cfg.Origin,
		Interval:  c.cfg.HeartbeatInterval,
		Window:    window,
		Until:     until,
	}
	// Every member must stand before the list is made: a leader asks after
	// every wake-up, and until its members all acknowledged it, mostly in
	// vain.
	standing := 0
	for _, m := range c.view.Members {
		if m.Node == c.cfg.Self.Node {
			continue
		}
		p := c.peers.get(m.Node)
		if steadyCutOff(p, m) {
			// Its ticks send it nothing (sendHeartbeats) until it is heard
			// from again, which ends the beat, and no handover picks it;
			// the beat ends before it has been silent for GhostTTL, when
			// a tick removes it.
			left := c.cfg.GhostTTL - p.silentFor(c.clock(), now)
			if left <= 0 {
				return SteadyBeat{}, false // the next tick removes it
			}
			sb.Until = earliest(sb.Until, now.Add(left-time.Nanosecond))
			continue
		}
		if p == nil || p.pid == (gen.PID{}) || p.id != m || p.ended() != "" || !p.unreachableSince.IsZero() || p.sendFailing ||
			p.ackedTerm != c.term || p.ackedStamp() != c.view.Stamp || p.steadySince.IsZero() || p.lastReply.IsZero() ||
			p.inboundSinceReply || p.reportedPID() != c.reportedPID(p) || c.duplicate(p.pid, p.id) {
			return SteadyBeat{}, false
		}
		if c.cfg.Prefer.Kind != PreferNone && c.cfg.Prefer.Prefers(p.candidate(), self) {
			return SteadyBeat{}, false // it hands over once that member is steady
		}
		standing++
	}
	if !quorum.Reached(standing+1, c.view.size()) {
		return SteadyBeat{}, false
	}
	sb.Members = prev
	if len(prev) != standing || !c.steadyMembers(func(i int, m SteadyMember) bool { return prev[i] == m }) {
		sb.Members = make([]SteadyMember, 0, standing)
		c.steadyMembers(func(_ int, m SteadyMember) bool {
			sb.Members = append(sb.Members, m)
			return true
		})
	}
	return sb, true
}

// steadyMembers calls f with each member a steady beat lists, in order,
// while f returns true, and reports whether it always did.
func (c *Core) steadyMembers(f func(int, SteadyMember) bool) bool {
	i := 0
	for _, m := range c.view.Members {
		p := c.peers.get(m.Node)
		if m.Node == c.cfg.Self.Node || steadyCutOff(p, m) {
			continue
		}
		sm := SteadyMember{
			PID: p.pid,
			Ack: MessageHeartbeatAck{
				Header: Header{
					ClusterID: c.cfg.ClusterID, Term: c.term, From: p.id,
					Started: p.startedNanos, View: c.view.Stamp,
				},
				Declines: p.declines,
			},
		}
		if !f(i, sm) {
			return false
		}
		i++
	}
	return true
}

// LastReply is the evidence of the last reply this member heard from the
// member pid, when what it answered was sent (zero for none, or for a PID
// it does not know): for a steady beat's member, what the evidence of its
// first acknowledgement under the beat is timed from.
func (c *Core) LastReply(pid gen.PID) time.Time {
	if p := c.peers.byPID(pid); p != nil {
		return c.clock().time(p.lastReply)
	}
	return time.Time{}
}

// steadyCutOff reports whether p, the peer of member m, is cut off (its
// connection dropped): a steady beat leaves it out.
func steadyCutOff(p *peer, m gen.ProcessID) bool {
	return p != nil && p.id == m && p.cutOff() && p.ended() == ""
}

// steadyBeatHorizon bounds a SteadyBeat's Until when nothing earlier does,
// so a shell re-reads the beat now and then.
const steadyBeatHorizon = time.Hour

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// CatchUp applies what a shell did under sb, a SteadyBeat this core gave and
// stepped nothing since: the state becomes what stepping each tick sent
// ahead and each acknowledgement taken, at its time, would have made it. The
// heartbeat timer stays armed as it was: the shell keeps it on the grid the
// ticks were sent on. It returns an error wrapping gen.ErrIncorrect, and
// changes nothing, when b does not fit sb or sb no longer stands: a defect
// of the shell, which must then step the core's inputs itself.
func (c *Core) CatchUp(sb *SteadyBeat, b BeatenAhead) error {
	if c.role != RoleLeader || c.term != sb.Term || c.lead == nil || len(b.Acks) != len(sb.Members) {
		return fmt.Errorf("catching up on a steady beat at term %d, now at term %d as %s: %w", sb.Term, c.term, c.role, gen.ErrIncorrect)
	}
	if b.Beats > 0 && b.LastBeat.After(sb.Until) {
		return fmt.Errorf("a beat sent ahead at %s, after the steady beat's end %s: %w", b.LastBeat, sb.Until, gen.ErrIncorrect)
	}
	peers := make([]*peer, len(sb.Members))
	for i, m := range sb.Members {
		p := c.peers.byPID(m.PID)
		if p == nil || p.ackedTerm != c.term || p.ackedStamp() != c.view.Stamp {
			return fmt.Errorf("catching up on a steady beat: member %s no longer stands: %w", m.PID, gen.ErrIncorrect)
		}
		peers[i] = p
	}
	for i, p := range peers {
		if b.Beats > 0 {
			p.lastSend, p.sendFailing = c.clock().at(b.LastBeat), false
		}
		if a := b.Acks[i]; a.Count > 0 {
			// Each within the window of the one before: the run of replies
			// goes on, only its end moves.
			p.lastInbound, p.lastReply = max(p.lastInbound, c.clock().at(a.Arrived)), max(p.lastReply, c.clock().at(a.Last))
			p.inboundSinceReply = false
		}
	}
	if b.Beats > 0 {
		c.heartbeatOutLast = c.clock().at(b.LastBeat)
	}
	return nil
}
