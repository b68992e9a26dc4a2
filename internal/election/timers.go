package election

import "time"

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
	if t.Kind < 0 || t.Kind >= timerKinds {
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

// armProbe arms the probe timer while there is someone to reach out to, and
// cancels it when there is not.
func (c *Core) armProbe() {
	switch {
	case !c.needsProbe():
		c.disarm(TimerProbe)
	case !c.timers[TimerProbe].armed:
		c.arm(TimerProbe, c.probeInterval())
	}
}

// probeInterval is how often probes and membership requests are repeated:
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
