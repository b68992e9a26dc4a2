package election

import (
	"fmt"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/quorum"
)

// leadership is what a leader keeps for its term; it ends with the term.
type leadership struct {
	// committedInTerm: the view this leader holds was acknowledged by a
	// majority at this term. Changes wait for it.
	committedInTerm bool
	// change describes the change proposed and not yet committed, "" when none.
	change string
	// adds and removes are the changes asked for, applied one at a time;
	// each map is made on first write (queueAdd, remove), as most leaders
	// change nothing: made with the leadership, in an election's burst,
	// they would sit among its garbage.
	adds    map[gen.Atom]admission
	removes map[gen.Atom]string
	// awaitingConfirm: HandleConfirmLeader was asked; visible: it granted,
	// and the user was told (HandleBecomeLeader).
	awaitingConfirm bool
	visible         bool
	// confirmedLate is when it granted after the evidence of a majority had
	// lapsed, zero when it did not: the leadership becomes visible once a
	// majority answers again (maybeConfirm), and steps down if none has
	// within the evidence window of that instant (onHeartbeatTick).
	confirmedLate instant
}

// awaitsAnswers reports whether l was confirmed late and its members may
// still answer the heartbeats sent then: a tick at now leaves it leading
// without the evidence of a majority, unpublished.
func (l *leadership) awaitsAnswers(now instant, window time.Duration) bool {
	return !l.confirmedLate.IsZero() && now.Sub(l.confirmedLate) < window
}

// remove queues the removal of node for reason.
func (l *leadership) remove(node gen.Atom, reason string) {
	if l.removes == nil {
		l.removes = map[gen.Atom]string{}
	}
	l.removes[node] = reason
}

// admission is a peer a leader was asked to admit, and since when: the
// leader admits it only once the peer answers after that, so a name that
// leads nowhere, or a peer this leader cannot reach, never raises the quorum.
type admission struct {
	id    gen.ProcessID
	since time.Time
}

// becomeLeader takes leadership of a won election: the view is re-stamped
// with this term, so it outranks every view proposed in an earlier term, and
// is sent to every member. Leadership is visible to the user only once that
// view is committed (publishable).
func (c *Core) becomeLeader(now time.Time) {
	c.camp = nil
	c.disarm(TimerElection)
	c.role = RoleLeader
	c.recognise(c.self)
	c.leaderID = c.cfg.Self
	c.stats.electionsWon++
	stamp := c.view.Stamp
	stamp.Key.Term = c.term
	c.view = c.viewOf(stamp, c.view.Members)
	c.hardDirty = true
	c.lead = c.newLeadership()
	for _, m := range c.view.Members {
		if m.Node == c.cfg.Self.Node {
			continue
		}
		p := c.peers.ensure(m)
		p.memberSince = c.clock().at(now)
		if p.ended() != "" {
			c.lead.remove(m.Node, p.ended())
		}
	}
	c.sendHeartbeats(now)
	c.checkCommit(now)
}

// sendHeartbeats asserts leadership to every member of the view, with the
// whole view to those whose last acknowledgement shows another stamp.
func (c *Core) sendHeartbeats(now time.Time) {
	for _, m := range c.view.Members {
		if m.Node == c.cfg.Self.Node {
			continue
		}
		p := c.peers.ensure(m)
		if p.cutOff() {
			// Nothing sent would reach it: the probe timer reaches out to
			// it instead (reconnectTarget), and its answer resumes them.
			continue
		}
		hb := MessageHeartbeat{Header: c.hdr(c.term), Committed: c.committed, Sent: int64(c.clock().at(now))}
		if p.ackedStamp() != c.view.Stamp || p.ackedTerm != c.term {
			hb.View = c.view
		}
		c.send(now, p, hb)
	}
	c.heartbeatOutLast = c.clock().at(now)
	c.arm(TimerHeartbeat, c.cfg.HeartbeatInterval)
}

// onHeartbeat follows the leader of this term and takes its view.
func (c *Core) onHeartbeat(now time.Time, from gen.PID, m MessageHeartbeat) {
	if m.Term != c.term {
		c.drop(dropForeign) // a newer term this member did not take: an outsider
		return
	}
	if p := c.peers.get(from.Node); p != nil && p.ended() != "" && p.endedPID() == from {
		// Sent before its process ended, read after the down (the runtime
		// hands downs over first): a dead process leads nothing.
		c.drop(dropUnexpected)
		return
	}
	sameLineage := c.view != nil && m.Header.View.Lineage == c.view.Stamp.Lineage
	joins := m.View != nil && m.View.has(c.cfg.Self.Node) && (c.wouldSwitch(m.View.Stamp) || c.view == nil || !c.view.Stamp.Agreed)
	if c.view != nil && !sameLineage && !joins {
		c.drop(dropForeign)
		return
	}
	switch c.role {
	case RoleLeader:
		if sameLineage {
			// Two leaders of one lineage and term: the rules rule it out.
			// Stand down rather than argue; the next election settles it.
			c.drop(dropTwoLeaders)
			c.stats.conflicts++
			c.becomeFollower(now, gen.PID{})
			return
		}
		c.becomeFollower(now, gen.PID{}) // joining a cluster that outranks this one
	case RoleCandidate:
		c.becomeFollower(now, from)
	case RoleFollower:
		switches := m.View != nil && m.View.has(c.cfg.Self.Node) && c.wouldSwitch(m.View.Stamp)
		if !switches && c.leader != (gen.PID{}) && c.leader != from && c.leaderLive(now) {
			// A second leader in this term: stay with the first and tell the
			// second, which stands down. A leader of an agreed cluster that
			// outranks this member's and admitted it is not a second leader
			// but the one to follow: this member switches, as a leader in
			// its place does, or that cluster, whose view now counts it,
			// may need its vote for every election.
			c.drop(dropTwoLeaders)
			ack := c.ackMsg(now, m.Sent)
			ack.Follows = c.leader
			c.send(now, c.peers.get(from.Node), ack)
			return
		}
	}
	c.camp = nil
	c.next = nextCampaign{}
	c.recognise(from)
	c.leaderID = m.From
	c.leaderHeardAt = c.clock().at(now)
	c.heartbeatInLast = c.leaderHeardAt
	c.touchElection(now)
	if m.View != nil {
		c.acceptView(now, m.View, true)
	}
	if c.view != nil && m.Header.View.Lineage == c.view.Stamp.Lineage && m.Committed.Compare(c.committed) > 0 {
		c.committed = m.Committed
	}
	c.send(now, c.peers.get(from.Node), c.ackMsg(now, m.Sent))
}

// ackMsg acknowledges the heartbeat stamped sent (MessageHeartbeat.Sent).
func (c *Core) ackMsg(now time.Time, sent int64) MessageHeartbeatAck {
	return MessageHeartbeatAck{Header: c.hdr(c.term), Declines: c.declines(now), Echo: sent}
}

// declines reports whether this member would not take leadership now: its
// HandleConfirmLeader denied within a period that starts at ten election
// timeouts and doubles with each consecutive denial, as a failed handover
// target is avoided.
func (c *Core) declines(now time.Time) bool {
	if c.few().denials == 0 {
		return false
	}
	return now.Sub(c.clock().time(c.stats.lastDeniedAt)) < avoidTimeouts*c.cfg.ElectionTimeoutMax<<min(c.few().denials-1, maxAvoidShift)
}

// onHeartbeatAck records which view a member acknowledged, and a second
// leader it reports.
func (c *Core) onHeartbeatAck(now time.Time, from gen.PID, m MessageHeartbeatAck) {
	if c.role != RoleLeader || m.Term != c.term {
		return
	}
	if m.Follows != (gen.PID{}) && m.Follows != c.self {
		c.drop(dropTwoLeaders)
		c.stats.conflicts++
		c.becomeFollower(now, gen.PID{})
		return
	}
	p := c.peers.get(from.Node)
	p.ackedLineage, p.ackedKey, p.ackedAgreed = m.Header.View.Lineage, m.Header.View.Key, m.Header.View.Agreed
	p.ackedTerm, p.declines = m.Term, m.Declines
	c.checkCommit(now)
}

// checkCommit counts the members that acknowledged this leader's view at its
// term, itself included. A majority commits it; the first view of a lineage
// also needs MinClusterSize acknowledgements, and committing it makes the
// lineage agreed.
func (c *Core) checkCommit(now time.Time) {
	if c.role != RoleLeader {
		return
	}
	key, acked := c.view.Stamp.Key, 0
	for _, m := range c.view.Members {
		if m.Node == c.cfg.Self.Node {
			acked++
			continue
		}
		if p := c.peers.get(m.Node); p != nil && p.ackedTerm == c.term && p.ackedLineage == c.view.Stamp.Lineage && p.ackedKey == key {
			acked++
		}
	}
	if !quorum.Reached(acked, c.view.size()) {
		return
	}
	if !c.view.Stamp.Agreed {
		if acked < c.cfg.MinClusterSize {
			return
		}
		old := c.view
		stamp := old.Stamp
		stamp.Agreed = true
		c.view = c.viewOf(stamp, old.Members)
		c.hardDirty = true
		c.effect(Effect{Kind: EffectViewChanged, FromView: old, ToView: c.view, Why: fmt.Sprintf("agreed: acknowledged by %d members", acked)})
		defer c.sendHeartbeats(now) // tell the members at once
	}
	if c.lead.committedInTerm && c.committed == key {
		return
	}
	c.committed = key
	c.lead.committedInTerm = true
	c.lead.change = ""
	c.maybeChange(now)
}

// onHeartbeatTick checks quorum evidence, applies membership, maybe hands
// over to a preferred member, then asserts leadership again.
func (c *Core) onHeartbeatTick(now time.Time) {
	if c.role != RoleLeader {
		return
	}
	c.tidyPeers(now)
	var reached bool
	if c.lead.confirmedLate.IsZero() {
		reached = c.quorumReached(now)
	} else {
		// Only answers count until it publishes: under EvidenceContact the
		// heartbeats it sent itself would otherwise.
		reached = c.quorumAnswered(now)
		if !reached && c.lead.awaitsAnswers(c.clock().at(now), c.cfg.evidenceWindow()) {
			c.sendHeartbeats(now)
			return
		}
	}
	if !reached {
		c.stats.quorumLost++
		c.becomeFollower(now, gen.PID{})
		return
	}
	c.expireGhosts(now)
	if c.lead.removes[c.cfg.Self.Node] != "" {
		// A leader never removes itself: it hands over, and asks its
		// successor to remove it.
		c.markRemoval(c.cfg.Self.Node)
		c.armProbe()
		if to, ok := c.handOverCandidate(now); ok {
			c.handOver(now, to, false)
			return
		}
	}
	c.maybeChange(now)
	if to, ok := c.preferredTarget(now); ok {
		c.stats.preferredTransfers++
		c.handOver(now, to, false)
		return
	}
	c.sendHeartbeats(now)
}

// quorumReached reports whether, at now, this leader reached a majority of
// its view, itself included, within the evidence window (peer.reached):
// the check of every heartbeat tick.
func (c *Core) quorumReached(now time.Time) bool { return c.quorumBy(c.cfg.Evidence, now) }

// quorumAnswered is quorumReached counting replies only, whatever the
// rule: a leader confirmed late publishes on answers to the heartbeats it
// sent then, never on having sent them, which EvidenceContact counts.
func (c *Core) quorumAnswered(now time.Time) bool { return c.quorumBy(EvidenceReplies, now) }

// quorumBy counts the members reached under rule e.
func (c *Core) quorumBy(e Evidence, now time.Time) bool {
	reached := 1
	for _, m := range c.view.Members {
		if p := c.peers.get(m.Node); p != nil && m.Node != c.cfg.Self.Node && p.reached(e, c.clock().at(now), c.cfg.evidenceWindow()) {
			reached++
		}
	}
	return quorum.Reached(reached, c.view.size())
}

// publishable reports whether this leader's leadership may be shown to the
// user: its view is agreed, has at least MinClusterSize members including
// itself, was committed in this term, and counts no member whose process is
// known to have ended (those are removed first, so a leader never publishes
// with fewer live members than the view claims).
func (c *Core) publishable() bool {
	if c.role != RoleLeader || c.few().storageErr != nil || !c.agreed() || c.view.size() < c.cfg.MinClusterSize ||
		!c.lead.committedInTerm || c.committed.Term != c.term {
		return false
	}
	for _, m := range c.view.Members {
		if p := c.peers.get(m.Node); p != nil && p.ended() != "" {
			return false
		}
	}
	return true
}

// maybeConfirm asks HandleConfirmLeader once leadership is publishable, and
// withdraws a visible leadership whose view fell below MinClusterSize.
func (c *Core) maybeConfirm(now time.Time) {
	l := c.lead
	if l == nil {
		return
	}
	withdrawn := c.few().storageErr != nil || !c.agreed() || c.view.size() < c.cfg.MinClusterSize
	switch {
	case !l.confirmedLate.IsZero() && withdrawn:
		// What would withdraw a visible leadership voids the confirmation
		// it waits to publish on, as it voids a published one: once
		// publishable again, HandleConfirmLeader is asked again.
		l.confirmedLate = 0
	case !l.confirmedLate.IsZero():
		if c.publishable() && c.quorumAnswered(now) {
			l.confirmedLate, l.visible = 0, true
		}
		return
	case l.visible:
		if withdrawn {
			l.visible = false
		}
		return
	}
	if !l.awaitingConfirm && c.publishable() {
		l.awaitingConfirm = true
		c.effect(Effect{Kind: EffectConfirm, Term: c.term})
		// HandleConfirmLeader holds the actor; heartbeats sent as it is asked
		// (the shell sends them first) keep the members from timing out
		// for as long as they can, and their answers are the evidence it
		// publishes on when the answer comes.
		c.sendHeartbeats(now)
	}
}

func (c *Core) confirmResult(now time.Time, term uint64, granted bool, err error) {
	if c.lead == nil || !c.lead.awaitingConfirm || term != c.term {
		c.drop(dropStaleConfirm)
		return
	}
	c.lead.awaitingConfirm = false
	if granted && err == nil {
		if c.rare != nil {
			c.rare.denials = 0
		}
		if !c.quorumReached(now) {
			// The confirmation took longer than the evidence of a majority
			// lasted, and no heartbeat went out meanwhile: the others may
			// have elected someone else, and publishing now would start the
			// user's leader work beside them. Publish once a majority
			// answers again (maybeConfirm): heartbeats go out now, and the
			// ticks of the evidence window that follows do not step down.
			c.lead.confirmedLate = c.clock().at(now)
			c.sendHeartbeats(now)
			return
		}
		c.lead.visible = true
		return
	}
	c.deny(now, err)
}

// deny records a denial of leadership by HandleConfirmLeader, follows, and
// re-campaigns after a backoff that grows with consecutive denials.
func (c *Core) deny(now time.Time, err error) {
	c.stats.confirmDenied++
	c.stats.lastDeniedAt = c.clock().at(now)
	r := c.more()
	r.lastDenied = err
	r.denials++
	c.becomeFollower(now, gen.PID{})
	if c.mayCampaign() {
		c.armElectionAfter(now, c.electionTimeout()+c.cfg.ElectionTimeoutMin<<min(r.denials-1, maxBackoffShift))
	}
}

// reconfirm handles a leader's periodic re-consultation of HandleConfirmLeader.
func (c *Core) reconfirm(now time.Time, granted bool, err error) {
	if c.lead == nil || !c.lead.visible {
		c.drop(dropStaleConfirm)
		return
	}
	if granted && err == nil {
		return
	}
	c.deny(now, err)
}

// maxBackoffShift caps the confirmation backoff at 32 ElectionTimeoutMin.
const maxBackoffShift = 5
