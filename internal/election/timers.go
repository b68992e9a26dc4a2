package election

import (
	"time"

	"github.com/regent-go/regent/gen"
)

// timerState is the current arming of one TimerKind.
type timerState struct {
	gen   uint64
	armed bool
}

// arm (re)arms kind to fire after d; any earlier arming becomes stale.
func (c *Core) arm(kind TimerKind, d time.Duration) {
	t := &c.timers[kind]
	t.gen++
	t.armed = true
	c.ready.Timers = append(c.ready.Timers, TimerOp{Timer: Timer{Kind: kind, Gen: t.gen}, After: d})
}

// disarm cancels kind if armed.
func (c *Core) disarm(kind TimerKind) {
	t := &c.timers[kind]
	if !t.armed {
		return
	}
	c.ready.Timers = append(c.ready.Timers, TimerOp{Timer: Timer{Kind: kind, Gen: t.gen}, Cancel: true})
	t.gen++
	t.armed = false
}

// fire reports whether t is the current arming of its kind, and disarms it.
func (c *Core) fire(t Timer) bool {
	if t.Kind < 0 || int(t.Kind) >= len(c.timers) {
		return false
	}
	s := &c.timers[t.Kind]
	if !s.armed || s.gen != t.Gen {
		return false
	}
	s.armed = false
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
	c.electionStart, c.electionWait, c.electionLazy = now, d, false
	c.arm(TimerElection, d)
}

// touchElection restarts the election timeout from now: on a heartbeat from
// the leader or a granted vote.
func (c *Core) touchElection(now time.Time) {
	if c.electionLazy && c.timers[TimerElection].armed {
		c.electionStart = now
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
	rest := c.electionStart.Add(c.electionWait).Sub(now)
	if rest <= 0 {
		return true
	}
	c.arm(TimerElection, rest)
	return false
}

// armGhost arms the ghost timer for the earliest expiry, or cancels it.
func (c *Core) armGhost(now time.Time) {
	c.armProbe()
	at, ok := c.view.nextGhostExpiry(c.cfg.GhostTTL)
	if !ok {
		c.disarm(TimerGhost)
		return
	}
	c.arm(TimerGhost, max(at.Sub(now), 0))
}

// armProbe arms the probe timer while some member needs reaching out to,
// and cancels it when none does.
func (c *Core) armProbe() {
	switch {
	case !c.view.anyToProbe() && len(c.absentBootstrap()) == 0:
		c.disarm(TimerProbe)
	case !c.timers[TimerProbe].armed:
		c.arm(TimerProbe, c.probeInterval())
	}
}

// probeInterval is how often unreachable members are probed:
// ElectionTimeoutMax, far below GhostTTL and cheap for a dead address, since
// the runtime fails sends fast while it backs off redialling.
func (c *Core) probeInterval() time.Duration { return c.cfg.ElectionTimeoutMax }

// failoverDelay is the random wait before campaigning after the leader is
// reported down: below HeartbeatInterval, so that members told at once do not
// all campaign at once. With the same-host shortcut only one member per host
// campaigns, so a fifth of it separates hosts well enough.
func (c *Core) failoverDelay() time.Duration {
	if c.hostShortcut {
		return c.jitter(c.cfg.HeartbeatInterval / 5)
	}
	return c.jitter(c.cfg.HeartbeatInterval)
}

// absentBootstrap lists the Bootstrap peers that are not in the view (dropped
// after GhostTTL, or removed by a real down) and not withdrawn by Leave. They
// keep being probed: Bootstrap is the static list of the cluster, so after a
// partition longer than GhostTTL both sides find each other again without a
// discovery loop.
func (c *Core) absentBootstrap() []gen.ProcessID {
	var out []gen.ProcessID
	for _, p := range c.cfg.Bootstrap {
		if p.Node == c.cfg.Self.Node || c.view.members[p.Node] != nil {
			continue
		}
		if _, withdrawn := c.view.withdrawn[p.Node]; withdrawn {
			continue
		}
		out = append(out, p)
	}
	return out
}
