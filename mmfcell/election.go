package mmfcell

import "time"

// NoLeader is the PID value that means the cell has no leader. It is never a
// valid claimant: every operation given PID 0 fails.
const NoLeader uint32 = 0

// DefaultGraceEpochs is a reasonable staleness window: a leader whose
// heartbeat is more than three epochs behind the global epoch is replaceable.
const DefaultGraceEpochs uint64 = 3

// pack and unpack a word of two uint32 halves: the low half first in memory.
func pack(low, high uint32) uint64 { return uint64(low) | uint64(high)<<32 }

func unpack(w uint64) (low, high uint32) { return uint32(w), uint32(w >> 32) }

// termBefore reports whether term a precedes term b, allowing terms to wrap.
func termBefore(a, b uint32) bool { return int32(a-b) < 0 }

// TryClaim makes pid the leader if it may be: the cell has no leader, pid is
// lower than the leader's PID, or the leader is unfit (its process is gone or
// its heartbeat is more than graceEpochs behind the global epoch). It reports
// whether pid leads afterwards; for the current leader it returns true and
// changes nothing. Every claim increments the term. A process that reuses the
// PID of a dead leader is a new claimant, not that leader. PID 0 always fails.
func (c *Cell) TryClaim(pid uint32, graceEpochs uint64) bool {
	if pid == NoLeader {
		return false
	}
	fp := c.fingerprintOf(pid)
	for {
		lw := c.leader.Load()
		cur, term := unpack(lw)
		switch {
		case cur == pid:
			if !c.otherIncarnation(lw, fp) {
				return true
			}
		case cur != NoLeader && pid > cur && c.fit(lw, graceEpochs):
			return false
		}
		// Raise the heartbeat before the swap so nobody sees the new leader
		// with its predecessor's heartbeat.
		c.raiseBeat()
		next := term + 1
		if c.leader.CompareAndSwap(lw, pack(pid, next)) {
			c.publishIdentity(next, fp)
			return true
		}
	}
}

// Beat refreshes pid's heartbeat to the current global epoch if pid still
// leads, and reports whether it does. A leader that gets false has been
// replaced and must stop acting as leader.
func (c *Cell) Beat(pid uint32) bool {
	if !c.holds(pid) {
		return false
	}
	c.raiseBeat()
	return true
}

// StepDown empties the cell if pid leads, so the next claim wins at once
// without waiting for staleness, and reports whether it did. The term is
// unchanged until the next claim increments it.
func (c *Cell) StepDown(pid uint32) bool {
	for {
		lw := c.leader.Load()
		if !c.holdsWord(lw, pid) {
			return false
		}
		_, term := unpack(lw)
		if c.leader.CompareAndSwap(lw, pack(NoLeader, term)) {
			return true
		}
	}
}

// TickEpoch advances the global epoch by one and returns the new value.
func (c *Cell) TickEpoch() uint64 { return c.epoch.Add(1) }

// AdvanceEpoch advances the global epoch by one if no call to AdvanceEpoch,
// in any process, has done so within the last period, and returns the epoch
// and whether this call advanced it. Every member may call it on a timer of
// the same period: the epoch then moves once per period even when the leader
// is gone. A period of zero or less advances it on every call. It uses the
// wall clock shared by the host's processes; a clock step costs at most one
// extra or one early advance.
func (c *Cell) AdvanceEpoch(period time.Duration) (uint64, bool) {
	// Read the clock after the last advance, so that a later reader never
	// holds an earlier time than the advance it saw.
	last := c.advance.Load()
	now := uint64(time.Now().UnixNano())
	if period > 0 && last != 0 && now >= last && now-last < uint64(period) {
		return c.epoch.Load(), false
	}
	if !c.advance.CompareAndSwap(last, now) {
		return c.epoch.Load(), false
	}
	return c.TickEpoch(), true
}

// CurrentLeader returns the recorded leader's PID and true, or 0 and false
// when the cell is empty. The leader may since have died: see IsStale.
func (c *Cell) CurrentLeader() (uint32, bool) {
	pid, _ := unpack(c.leader.Load())
	return pid, pid != NoLeader
}

// Term returns the election term, incremented by every claim; a change means
// leadership changed hands (or was claimed again after a step-down).
func (c *Cell) Term() uint32 {
	_, term := unpack(c.leader.Load())
	return term
}

// GlobalEpoch returns the global epoch.
func (c *Cell) GlobalEpoch() uint64 { return c.epoch.Load() }

// IsStale reports whether the cell records a leader that anyone may now
// replace: its process is gone or reused, or its heartbeat is more than
// graceEpochs behind the global epoch. An empty cell is not stale.
func (c *Cell) IsStale(graceEpochs uint64) bool {
	lw := c.leader.Load()
	if pid, _ := unpack(lw); pid == NoLeader {
		return false
	}
	return !c.fit(lw, graceEpochs)
}

// Snapshot is a consistent view of the cell for inspection.
type Snapshot struct {
	// Leader is the recorded leader's PID, NoLeader when empty.
	Leader uint32
	// Term is the election term.
	Term uint32
	// Heartbeat is the global epoch at the last beat or claim.
	Heartbeat uint64
	// Epoch is the global epoch.
	Epoch uint64
	// Fingerprint is the recorded leader's process fingerprint, 0 when there
	// is no leader or it is unknown or not yet published for this term.
	Fingerprint uint32
	// LastAdvance is when AdvanceEpoch last moved the epoch; zero if never.
	LastAdvance time.Time
	// Stale is IsStale(graceEpochs) for the recorded leader.
	Stale bool
}

// Snapshot reads the whole cell, judging staleness with graceEpochs. The
// heartbeat, epoch and fingerprint are read while the leader word stays
// unchanged, so they belong to the reported leader and term.
func (c *Cell) Snapshot(graceEpochs uint64) Snapshot {
	for {
		lw := c.leader.Load()
		s := Snapshot{Heartbeat: c.beat.Load(), Epoch: c.epoch.Load()}
		if nanos := c.advance.Load(); nanos != 0 {
			s.LastAdvance = time.Unix(0, int64(nanos))
		}
		s.Leader, s.Term = unpack(lw)
		if s.Leader != NoLeader {
			if idTerm, fp := unpack(c.identity.Load()); idTerm == s.Term {
				s.Fingerprint = fp
			}
			s.Stale = !c.fit(lw, graceEpochs)
		}
		if c.leader.Load() == lw {
			return s
		}
	}
}

// fingerprintOf returns the fingerprint of pid, asking the probe unless pid
// is this process.
func (c *Cell) fingerprintOf(pid uint32) uint32 {
	if pid == c.self {
		return c.selfPrint
	}
	return c.probe(pid).Fingerprint
}

// holds reports whether pid is the recorded leader, in this incarnation.
func (c *Cell) holds(pid uint32) bool {
	return c.holdsWord(c.leader.Load(), pid)
}

func (c *Cell) holdsWord(lw uint64, pid uint32) bool {
	cur, _ := unpack(lw)
	return pid != NoLeader && cur == pid && !c.otherIncarnation(lw, c.fingerprintOf(pid))
}

// otherIncarnation reports whether the leader recorded in lw is known to be a
// different process from the one whose fingerprint is fp, although both
// have the same PID.
func (c *Cell) otherIncarnation(lw uint64, fp uint32) bool {
	_, term := unpack(lw)
	idTerm, recorded := unpack(c.identity.Load())
	return idTerm == term && recorded != 0 && fp != 0 && recorded != fp
}

// fit reports whether the leader recorded in lw keeps the cell against a
// higher PID: its heartbeat is within graceEpochs and its process is this
// incarnation and alive. The cheap heartbeat test comes first.
func (c *Cell) fit(lw uint64, graceEpochs uint64) bool {
	if epoch, beat := c.epoch.Load(), c.beat.Load(); epoch > beat && epoch-beat > graceEpochs {
		return false
	}
	pid, _ := unpack(lw)
	state := c.probe(pid)
	return state.Alive && !c.otherIncarnation(lw, state.Fingerprint)
}

// raiseBeat lifts the heartbeat to the current epoch; it never lowers it.
func (c *Cell) raiseBeat() {
	epoch := c.epoch.Load()
	for {
		beat := c.beat.Load()
		if beat >= epoch || c.beat.CompareAndSwap(beat, epoch) {
			return
		}
	}
}

// publishIdentity records fp as the fingerprint of the leader of term,
// unless a later term has already published its own.
func (c *Cell) publishIdentity(term, fp uint32) {
	for {
		old := c.identity.Load()
		if idTerm, _ := unpack(old); !termBefore(idTerm, term) {
			return
		}
		if c.identity.CompareAndSwap(old, pack(term, fp)) {
			return
		}
	}
}
