package election

import (
	"slices"
	"time"

	"github.com/regent-go/regent/gen"
)

// arm (re)arms kind to fire after d; any earlier arming becomes stale.
func (c *Core) arm(kind TimerKind, d time.Duration) {
	c.timers[kind]++
	c.armed[kind] = true
	c.ready.Timers = append(c.ready.Timers, TimerOp{Timer: Timer{Kind: kind, Gen: c.timers[kind]}, After: d})
}

// disarm cancels kind if armed.
func (c *Core) disarm(kind TimerKind) {
	if !c.armed[kind] {
		return
	}
	c.ready.Timers = append(c.ready.Timers, TimerOp{Timer: Timer{Kind: kind, Gen: c.timers[kind]}, Cancel: true})
	c.timers[kind]++
	c.armed[kind] = false
}

// fire reports whether t is the current arming of its kind, and disarms it.
func (c *Core) fire(t Timer) bool {
	if t.Kind < 0 || t.Kind >= timerKinds {
		return false
	}
	if !c.armed[t.Kind] || c.timers[t.Kind] != t.Gen {
		return false
	}
	c.armed[t.Kind] = false
	return true
}

// electionTimeout draws a timeout uniformly from [ElectionTimeoutMin, ElectionTimeoutMax].
func (c *Core) electionTimeout() time.Duration {
	return c.cfg.ElectionTimeoutMin + c.jitter(c.cfg.ElectionTimeoutMax-c.cfg.ElectionTimeoutMin+1)
}

// jitter draws uniformly from [0, d); zero for d <= 0.
func (c *Core) jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(c.cfg.Rand.Int64N(int64(d)))
}

// armElection arms the election timer with a fresh random timeout. Until it
// fires, touchElection only moves its start, so a follower's heartbeats cost
// no timer operations: a firing before the moved deadline re-arms for the rest.
func (c *Core) armElection(now time.Time) {
	c.armElectionAfter(now, c.electionTimeout())
	c.electionLazy = true
}

// armElectionAfter arms the election timer for a chosen wait (a backoff, a
// fast-failover delay); a heartbeat replaces it with a regular one.
func (c *Core) armElectionAfter(now time.Time, d time.Duration) {
	c.electionStart, c.electionWait, c.electionLazy = c.clock().at(now), d, false
	c.arm(TimerElection, d)
}

// touchElection restarts the election timeout from now: on a heartbeat from
// the leader or a granted vote.
func (c *Core) touchElection(now time.Time) {
	if c.electionLazy && c.armed[TimerElection] {
		c.electionStart = c.clock().at(now)
		return
	}
	c.armElection(now)
}

// electionDue reports whether a firing election timer is really due; if the
// timeout was restarted since it was armed, it is re-armed for the rest.
func (c *Core) electionDue(now time.Time) bool {
	if !c.electionLazy {
		return true
	}
	rest := c.clock().time(c.electionStart).Add(c.electionWait).Sub(now)
	if rest <= 0 {
		return true
	}
	c.arm(TimerElection, rest)
	return false
}

// armProbe arms the probe timer while there is someone to reach out to, and
// cancels it when there is not.
func (c *Core) armProbe() {
	switch {
	case !c.needsProbe():
		c.disarm(TimerProbe)
		c.probeBackoff = 0
	case !c.armed[TimerProbe]:
		c.arm(TimerProbe, c.probeInterval()<<c.probeBackoff)
	}
}

// probeInterval is how often probes and membership requests are repeated:
// ElectionTimeoutMax, far below GhostTTL and cheap for a dead address, since
// the runtime fails sends fast while it backs off redialling. Probes that
// only reach out to peers that stay silent back off from it (probeBackoff).
func (c *Core) probeInterval() time.Duration { return c.cfg.ElectionTimeoutMax }

// maxProbeBackoff bounds the doublings of the probe interval: probes to
// peers that stay silent go at least every 8 ElectionTimeoutMax, 2.4 s at
// the defaults. Every member probes on its own, so after a node is lost
// each of its clusters' members would otherwise wake 3 times a second for
// it; a peer that comes back is found sooner by its own probes and
// campaigns, or by the next loss, which starts the interval again.
const maxProbeBackoff = 3

// failoverDelay is the random wait before campaigning when a member that
// knows no live leader is allowed to campaign again (the same-host cell
// passed to it): below a fifth of HeartbeatInterval.
func (c *Core) failoverDelay() time.Duration {
	return c.jitter(c.cfg.HeartbeatInterval / 5)
}

// rankedFailoverDelay is the wait before campaigning after the leader on
// node is reported down. Every follower that holds the same view computes the
// same order of the surviving members (failoverOrder), and the member ranked
// r waits r steps of a fifth of HeartbeatInterval, plus a little jitter: the
// first campaigns at once and its vote request reaches the others before
// their turn, so members told of the death at the same instant do not split
// the vote. A member outside the order (a lagging view) waits a full
// heartbeat interval, as before ranking. With the same-host shortcut only the
// host's cell holder campaigns, and the order is kept among hosts.
func (c *Core) rankedFailoverDelay(dead gen.Atom) time.Duration {
	step := max(c.cfg.HeartbeatInterval/5, time.Millisecond)
	order := c.failoverOrder(dead)
	rank := slices.Index(order, c.cfg.Self.Node)
	if rank < 0 {
		return c.cfg.HeartbeatInterval + c.jitter(step)
	}
	return time.Duration(rank)*step + c.jitter(step/4)
}

// failoverOrder lists the members of the view other than dead in the order
// they should campaign in: the most preferred first when a preference is
// set, otherwise by node name rotated by the term, so that successive
// failovers do not always crown the same member.
func (c *Core) failoverOrder(dead gen.Atom) []gen.Atom {
	var order []gen.Atom
	for _, m := range c.view.Members {
		if m.Node != dead {
			order = append(order, m.Node)
		}
	}
	if len(order) == 0 {
		return nil
	}
	if c.cfg.Prefer.Kind != PreferNone {
		cand := func(n gen.Atom) Candidate {
			if n == c.cfg.Self.Node {
				return c.selfCandidate()
			}
			if p := c.peers.get(n); p != nil {
				return p.candidate()
			}
			return Candidate{Node: n}
		}
		slices.SortStableFunc(order, func(a, b gen.Atom) int {
			switch {
			case c.cfg.Prefer.Prefers(cand(a), cand(b)):
				return -1
			case c.cfg.Prefer.Prefers(cand(b), cand(a)):
				return 1
			}
			return 0
		})
		return order
	}
	shift := int(c.term % uint64(len(order)))
	return append(order[shift:], order[:shift]...)
}
