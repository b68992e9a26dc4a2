package election

import (
	"errors"
	"fmt"
	"time"

	"github.com/regent-go/regent/gen"
)

// PreferKind selects how members are ranked for the preferred leader.
type PreferKind int

const (
	// PreferNone ranks nobody: leadership stays wherever elections put it.
	PreferNone PreferKind = iota
	// PreferOldest prefers the earliest Started; equal start times go to the
	// lower node name (byte-wise).
	PreferOldest
	// PreferHighestID prefers the highest node name, compared byte-wise.
	PreferHighestID
	// PreferFunc ranks with Preference.Less.
	PreferFunc
)

// String gives "none", "oldest", "highest-id" or "func".
func (k PreferKind) String() string {
	switch k {
	case PreferNone:
		return "none"
	case PreferOldest:
		return "oldest"
	case PreferHighestID:
		return "highest-id"
	case PreferFunc:
		return "func"
	}
	return "unknown"
}

// Preference is the preferred-leader rule of Config.Prefer. Every member of a
// cluster must use the same rule, or a handover could be answered by another.
type Preference struct {
	Kind PreferKind
	// Less, for PreferFunc, reports whether a is MORE preferred than b. It must
	// be a strict total order and identical on every member; a Candidate's
	// Started is zero when that member's start time is not known yet.
	Less func(a, b Candidate) bool `json:"-"`
}

// Candidate is what a Preference ranks a member by.
type Candidate struct {
	Node      gen.Atom
	ProcessID gen.ProcessID
	Started   time.Time
}

// Prefers reports whether a is strictly more preferred than b under p; always
// false for PreferNone. The simulator uses it to know where leadership should
// settle.
func (p Preference) Prefers(a, b Candidate) bool {
	switch p.Kind {
	case PreferOldest:
		if !a.Started.Equal(b.Started) {
			return a.Started.Before(b.Started)
		}
		return a.Node < b.Node
	case PreferHighestID:
		return a.Node > b.Node
	case PreferFunc:
		return p.Less(a, b)
	}
	return false
}

// validate checks the rule against this member's own start time.
func (p Preference) validate(started time.Time) error {
	switch p.Kind {
	case PreferNone, PreferHighestID:
	case PreferOldest:
		if started.IsZero() {
			return errors.New("PreferOldest needs Started")
		}
	case PreferFunc:
		if p.Less == nil {
			return errors.New("PreferFunc needs a Less function")
		}
	default:
		return fmt.Errorf("unknown Prefer kind %d", int(p.Kind))
	}
	return nil
}

// startedNanos is a start time as it travels: unix nanoseconds, 0 for unknown.
func startedNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// startedTime reverses startedNanos.
func startedTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// selfCandidate is this member as its peers see it: its start time passes
// through the wire form, so every member compares the same values.
func (c *Core) selfCandidate() Candidate {
	return Candidate{Node: c.cfg.Self.Node, ProcessID: c.cfg.Self, Started: startedTime(startedNanos(c.cfg.Started))}
}

func (p *peer) candidate() Candidate {
	return Candidate{Node: p.id.Node, ProcessID: p.id, Started: p.started()}
}

// learnStarted records a member's start time from one of its messages; a new
// start time is a new incarnation, whose steadiness starts over.
func (p *peer) learnStarted(nanos int64) {
	if nanos == 0 {
		return
	}
	if nanos != p.startedNanos {
		p.startedNanos = nanos
		p.steadySince = 0
	}
}

// replied records a reply from m that is evidence of contact at at,
// starting a new steady run when the previous reply is older than window.
// Evidence older than the last moves nothing.
func (p *peer) replied(at instant, window time.Duration) {
	if at <= p.lastReply {
		return
	}
	if p.steadySince.IsZero() || p.lastReply.IsZero() || at.Sub(p.lastReply) >= window {
		p.steadySince = at
	}
	p.lastReply = at
}

// preferredTarget picks the member to hand leadership to on a heartbeat tick:
// the most preferred reachable member of the view that is more preferred
// than self and has not failed a handover lately, once it has answered
// steadily for PreferStableFor. While that member is not yet steady the
// leader waits rather than hand over to a lesser one, so leadership moves
// once instead of along a chain. Only a visible leader hands over on its own.
func (c *Core) preferredTarget(now time.Time) (gen.Atom, bool) {
	pref := c.cfg.Prefer
	if pref.Kind == PreferNone || c.lead == nil || !c.lead.visible {
		return "", false
	}
	window := c.cfg.evidenceWindow()
	var best *peer
	bestCand := c.selfCandidate()
	for _, m := range c.view.Members {
		p := c.peers.get(m.Node)
		if m.Node == c.cfg.Self.Node || p == nil || !p.handOverTarget() || !p.reached(EvidenceReplies, c.clock().at(now), window) || c.avoided(m.Node, now) {
			continue
		}
		if pref.Kind == PreferOldest && p.startedNanos == 0 {
			continue
		}
		if cand := p.candidate(); pref.Prefers(cand, bestCand) {
			best, bestCand = p, cand
		}
	}
	if best == nil {
		return "", false
	}
	return best.id.Node, !best.steadySince.IsZero() && now.Sub(c.clock().time(best.steadySince)) >= c.cfg.PreferStableFor
}
