package election

import (
	"time"

	"github.com/regent-go/regent/gen"
)

// step handles one inbound protocol message.
func (c *Core) step(now time.Time, from gen.PID, msg any) {
	h, ok := header(msg)
	switch {
	case !ok:
		c.drop(dropUnknownMessage)
		return
	case c.few().fatal != nil:
		c.drop(dropFatal)
		return
	case h.ClusterID != c.cfg.ClusterID:
		c.drop(dropClusterID)
		return
	case from.Node == "" || h.From.Name == "" || h.From.Node != from.Node:
		c.drop(dropMalformed)
		return
	case from.Node == c.cfg.Self.Node:
		c.drop(dropSelf)
		return
	case h.Term > lastTerm:
		c.drop(dropTermExhausted)
		return
	case !c.validPayload(msg):
		c.drop(dropMalformedView)
		return
	case c.duplicate(from, h.From):
		c.drop(dropDuplicate)
		return
	case c.isWithdrawn(from.Node, now):
		c.drop(dropWithdrawn)
		return
	case c.few().storageErr != nil:
		c.drop(dropStorage)
		return
	}
	// Pre-vote traffic never moves terms, so a stale term in it is no reason
	// to ignore it: a probe's answer from a member behind us is how a leader
	// learns the member answered.
	if h.Term < c.term && !isPreVote(msg) {
		c.drop(dropStaleTerm)
		switch m := msg.(type) {
		case MessageRequestVote:
			c.sendTo(now, from, h.From, c.voteMsg(from.Node, false, false, c.term, h.View, m.Sent))
		case MessageHeartbeat:
			c.sendTo(now, from, h.From, c.ackMsg(now, m.Sent))
		}
		return
	}
	c.observe(now, from, h, c.evidenceOf(now, msg))
	c.learnAgreed(h.View)
	if h.Term > c.term && c.movesTerm(now, h, msg) {
		c.setTerm(now, h.Term)
		c.becomeFollower(now, gen.PID{})
	}
	switch m := msg.(type) {
	case MessageRequestVote:
		c.onRequestVote(now, from, m)
	case MessageVote:
		c.onVote(now, from, m)
	case MessageHeartbeat:
		c.onHeartbeat(now, from, m)
	case MessageHeartbeatAck:
		c.onHeartbeatAck(now, from, m)
	case MessageTimeoutNow:
		c.onTimeoutNow(now, from, m)
	case MessageMembership:
		c.onMembership(now, m)
	}
}

// evidenceOf is when msg, arrived at now, shows this member reached its
// sender, zero when it shows nothing: a vote answer, or an acknowledgement
// that does not say the sender follows another leader, is evidence of the
// time this member sent what it answers (its Echo), not of its arrival. A
// leader then counts a member as reached only as long after that send as
// the member itself waits before it may vote anew (its election timeout
// runs from the heartbeat's arrival, which is later), however long the
// answer took: an answer delayed in the network cannot keep a superseded
// leader visible (guarantees.md, quorum evidence).
func (c *Core) evidenceOf(now time.Time, msg any) instant {
	var echo int64
	switch m := msg.(type) {
	case MessageVote:
		if m.Term != c.term && !m.PreVote {
			return 0
		}
		echo = m.Echo
	case MessageHeartbeatAck:
		if m.Follows != (gen.PID{}) && m.Follows != c.self {
			return 0
		}
		echo = m.Echo
	default:
		return 0
	}
	return evidence(echo, c.clock().at(now))
}

// isPreVote reports whether msg is pre-vote traffic: a pre-vote request or
// its answer.
func isPreVote(msg any) bool {
	switch m := msg.(type) {
	case MessageRequestVote:
		return m.PreVote
	case MessageVote:
		return m.PreVote
	}
	return false
}

// validPayload checks the views and names a message carries.
func (c *Core) validPayload(msg any) bool {
	var v *View
	switch m := msg.(type) {
	case MessageVote:
		v = m.View
	case MessageHeartbeat:
		v = m.View
	}
	if v != nil && !validView(v) {
		return false
	}
	h, _ := header(msg)
	return h.View.IsZero() || h.View.Lineage.Node != "" && h.View.Key.Epoch > 0
}

// duplicate reports whether from is a second actor of this cluster on a node
// whose member is another process: two actors with one ClusterID on one node
// are a misconfiguration, and counting both would let one node vote twice.
func (c *Core) duplicate(from gen.PID, id gen.ProcessID) bool {
	if m, ok := c.view.member(id.Node); ok && m.Name != id.Name {
		return true
	}
	p := c.peers.get(id.Node)
	return p != nil && p.id.Name != id.Name && p.pid != (gen.PID{}) && p.pid != from && p.unreachableSince.IsZero()
}

// learnAgreed takes the news that the view this member holds is agreed from
// any sender holding the same key: one key names one set of members.
func (c *Core) learnAgreed(s ViewStamp) {
	if c.view == nil || c.view.Stamp.Agreed || !s.Agreed || s.Lineage != c.view.Stamp.Lineage || s.Key != c.view.Stamp.Key || c.role == RoleLeader {
		return
	}
	stamp := c.view.Stamp
	stamp.Agreed = true
	c.install(c.viewOf(stamp, c.view.Members), "the cluster agreed on it")
}

// sameCluster reports whether a sender with header h belongs to this
// member's cluster, so that its term may move this member's: a member of the
// view, a holder of the same lineage, or an agreed cluster this member would
// join. A member of an agreed view takes no terms from outsiders, so a
// removed or foreign member cannot unseat its leader.
func (c *Core) sameCluster(h Header) bool {
	switch {
	case c.view == nil || !c.view.Stamp.Agreed:
		return true
	case h.View.Lineage == c.view.Stamp.Lineage, c.view.has(h.From.Node):
		return true
	}
	return c.wouldSwitch(h.View)
}

// wouldSwitch reports whether this member would move to the cluster of an
// agreed view stamped s: it holds no agreed view, or s's lineage outranks
// its own (two agreed clusters that formed apart, merging).
func (c *Core) wouldSwitch(s ViewStamp) bool {
	if !s.Agreed || s.IsZero() || (c.view != nil && s.Lineage == c.view.Stamp.Lineage) {
		return false
	}
	return c.view == nil || !c.view.Stamp.Agreed || s.Lineage.outranks(c.view.Stamp.Lineage)
}

// movesTerm says whether a message with a newer term moves this member to it.
// Outsiders never do; pre-vote traffic never does, except a refusal that
// reveals a newer term; a vote request refused for stickiness does not either.
func (c *Core) movesTerm(now time.Time, h Header, msg any) bool {
	if !c.sameCluster(h) {
		c.drop(dropForeign)
		return false
	}
	switch m := msg.(type) {
	case MessageRequestVote:
		return !m.PreVote && !c.sticky(now, m)
	case MessageVote:
		return !m.PreVote || !m.Granted
	case MessageMembership:
		return false
	}
	return true
}

// sticky reports whether a vote request must be refused for leader stickiness.
func (c *Core) sticky(now time.Time, m MessageRequestVote) bool {
	return c.cfg.preVote() && !m.Transfer && c.leaderLive(now)
}

// observe records contact with the sender of a valid message: its PID,
// liveness and evidence. Senders outside the view are remembered as peers
// (joiners, foreign members) without joining the view.
func (c *Core) observe(now time.Time, from gen.PID, h Header, evidence instant) {
	p := c.peers.ensure(h.From)
	if p.ended() != "" && p.endedPID() == from {
		// Sent before its process ended (a down can overtake the process's
		// last messages): the message still counts, the process stays ended.
		return
	}
	p.id = h.From
	if p.pid != from {
		if old := p.pid; old != (gen.PID{}) {
			c.effect(Effect{Kind: EffectDemonitor, PID: old})
		}
		p.setPID(from)
		p.steadySince = 0
		c.effect(Effect{Kind: EffectMonitor, PID: from})
	}
	p.learnStarted(h.Started)
	p.answered = true
	p.lastInbound = c.clock().at(now)
	p.inboundSinceReply = evidence.IsZero()
	if !evidence.IsZero() {
		p.replied(evidence, c.cfg.evidenceWindow())
	}
	p.unreachableSince = 0
	p.clearEnded()
	c.syncPeer(p)
	if h.View.Agreed && c.wouldSwitch(h.View) && h.View.Lineage != c.out().stamp.Lineage {
		c.outside = &outsideCluster{stamp: h.View}
		c.armProbe()
	}
}

// syncPeer reports a member's PID to the user when it became known or was
// forgotten, or the peer joined or left the view: HandlePeerJoined and
// HandlePeerLeft speak of members of the view with a known PID.
func (c *Core) syncPeer(p *peer) {
	want, reported := c.reportedPID(p), p.reportedPID()
	if reported == want {
		return
	}
	if reported != (gen.PID{}) {
		c.effect(Effect{Kind: EffectPeerLeft, PID: reported})
	}
	if want != (gen.PID{}) {
		c.effect(Effect{Kind: EffectPeerJoined, PID: want})
	}
	p.setReported(want)
}

// isWithdrawn reports whether node was withdrawn by Leave less than a sticky
// period ago; an expired withdrawal is forgotten.
func (c *Core) isWithdrawn(node gen.Atom, now time.Time) bool {
	until, ok := c.withdrawn[node]
	if !ok {
		return false
	}
	if now.Before(until) {
		return true
	}
	delete(c.withdrawn, node)
	return false
}
