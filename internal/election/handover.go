package election

import (
	"fmt"
	"time"

	"github.com/regent-go/regent/gen"
)

// handoverState remembers the last handover this member made, to learn
// whether its target took leadership, and the targets that failed lately.
type handoverState struct {
	target gen.Atom // "" when no handover awaits judgement
	// leadingSince is when the target was first seen leading without a
	// break; zero while it is not.
	leadingSince time.Time
	avoid        map[gen.Atom]avoidance
}

// avoidance keeps a failed handover target out of the choice until.
type avoidance struct {
	until    time.Time
	failures int
}

// Avoiding a failed target starts at ten election timeouts and doubles with
// each consecutive failure, up to 2^maxAvoidShift times that.
const (
	avoidTimeouts = 10
	maxAvoidShift = 6
)

// handOver steps down and tells the member on node to campaign at once;
// ending says this member's process is ending.
func (c *Core) handOver(now time.Time, node gen.Atom, ending bool) {
	p := c.peers.get(node)
	h := &c.more().handover
	h.target, h.leadingSince = node, time.Time{}
	c.becomeFollower(now, gen.PID{})
	c.send(now, p, MessageTimeoutNow{Header: c.hdr(c.term), Ending: ending})
}

// judgeHandover settles the last handover: the target leading for an
// election timeout clears its record; anyone else leading first marks it
// failed, so it is not chosen again for a while. A target that cannot win
// (its own HandleConfirmLeader denies, or its quorum is out of reach) may
// lead the protocol for a moment, then steps down; without this it would be
// handed leadership over and over.
func (c *Core) judgeHandover(now time.Time) {
	if c.few().handover.target == "" {
		return
	}
	h := &c.rare.handover // made, as a handover is awaited
	target := h.target
	switch {
	case c.leader.Node == target:
		if h.leadingSince.IsZero() {
			h.leadingSince = now
		}
		if now.Sub(h.leadingSince) >= c.cfg.ElectionTimeoutMax {
			h.target, h.leadingSince = "", time.Time{}
			delete(h.avoid, target)
			c.tidyRare()
		}
		return
	case c.leader == (gen.PID{}):
		h.leadingSince = time.Time{}
		return
	}
	h.target = ""
	if h.avoid == nil {
		h.avoid = map[gen.Atom]avoidance{}
	}
	a := h.avoid[target]
	a.until = now.Add(avoidTimeouts * c.cfg.ElectionTimeoutMax << min(a.failures, maxAvoidShift))
	a.failures++
	h.avoid[target] = a
	c.stats.failedHandovers++
}

// tidyRare drops the rare fields once they are all zero again (a handover
// judged done), so that a member keeps none for an event long past.
func (c *Core) tidyRare() {
	r := c.rare
	if r != nil && r.handover.target == "" && r.handover.leadingSince.IsZero() && len(r.handover.avoid) == 0 &&
		r.denials == 0 && r.lastDenied == nil && r.leaderErr == nil && r.storageErr == nil && r.fatal == nil {
		c.rare = nil
	}
}

// avoided reports whether node failed a handover lately.
func (c *Core) avoided(node gen.Atom, now time.Time) bool {
	a, ok := c.few().handover.avoid[node]
	return ok && now.Before(a.until)
}

// handOverCandidate picks the reachable member heard from most recently,
// preferring one that has not failed a handover lately.
func (c *Core) handOverCandidate(now time.Time) (gen.Atom, bool) {
	var best gen.Atom
	var bestAt time.Time
	bestAvoided := true
	for _, m := range c.view.Members {
		p := c.peers.get(m.Node)
		if m.Node == c.cfg.Self.Node || p == nil || !p.handOverTarget() {
			continue
		}
		at, avoided := latest(c.clock().time(p.lastReply), c.clock().time(p.lastInbound)), c.avoided(m.Node, now)
		if best == "" || (bestAvoided && !avoided) || (avoided == bestAvoided && at.After(bestAt)) {
			best, bestAt, bestAvoided = m.Node, at, avoided
		}
	}
	return best, best != ""
}

func (c *Core) stepDown(now time.Time, ending bool) error {
	if c.role != RoleLeader {
		return fmt.Errorf("election: step down: not the leader (%s): %w", c.visibleRole(), gen.ErrNotAllowed)
	}
	to, ok := c.handOverCandidate(now)
	if !ok {
		return fmt.Errorf("election: step down: no reachable member to hand over to: %w", gen.ErrNotAllowed)
	}
	c.handOver(now, to, ending)
	return nil
}

func (c *Core) transferLeadership(now time.Time, to gen.Atom) error {
	if c.role != RoleLeader {
		return fmt.Errorf("election: transfer to %s: not the leader (%s): %w", to, c.visibleRole(), gen.ErrNotAllowed)
	}
	p := c.peers.get(to)
	if !c.view.has(to) || p == nil {
		return fmt.Errorf("election: transfer to %s: not a member of the view: %w", to, gen.ErrIncorrect)
	}
	if !p.handOverTarget() {
		return fmt.Errorf("election: transfer to %s: not reachable: %w", to, gen.ErrNotAllowed)
	}
	c.handOver(now, to, false)
	return nil
}

// onTimeoutNow campaigns at once for a leader handing over to this member.
func (c *Core) onTimeoutNow(now time.Time, from gen.PID, m MessageTimeoutNow) {
	if m.Term != c.term || c.role == RoleLeader || !c.agreed() || !c.mayCampaignDirected() {
		c.drop(dropUnexpected)
		return
	}
	if p := c.peers.byPID(from); m.Ending && p != nil {
		// Its down follows; until it comes the member must not count as live.
		p.setEnded("its process is ending: it handed leadership over", from)
	}
	c.recognise(gen.PID{})
	c.leaderHeardAt = 0
	c.campaign(now, true)
}
