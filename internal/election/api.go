package election

import (
	"slices"
	"time"

	"github.com/regent-go/regent/gen"
)

// New makes the core of one member. self is this member's PID on node
// cfg.Self.Node and hs the persisted state (zero for a fresh start). The core
// starts as follower with its election timer armed, or unclustered when
// Bootstrap leaves the view below MinClusterSize; it sends a pre-vote probe to
// each Bootstrap peer. The first Ready holds those timers and probes.
func New(cfg Config, self gen.PID, hs HardState, now time.Time) (*Core, error) {
	c, err := newCore(cfg, self, hs, now)
	if err != nil {
		return nil, err
	}
	for _, n := range c.view.nodes() {
		c.negotiate(now, c.view.members[n])
	}
	return c, nil
}

// Step feeds one message from the peer process from. Protocol messages (the
// Message* types of this package) are applied; anything else, a foreign
// ClusterID, a stale term or a withdrawn sender is dropped and counted by
// reason in Status.Dropped.
func (c *Core) Step(now time.Time, from gen.PID, msg any) { c.step(now, from, msg) }

// Tick reports that a timer armed through Ready.Timers fired. A stale one
// (cancelled or re-armed since) is ignored.
func (c *Core) Tick(now time.Time, t Timer) {
	if !c.fire(t) {
		c.staleTimers++
		return
	}
	switch t.Kind {
	case TimerElection:
		c.onElectionTimeout(now)
	case TimerHeartbeat:
		c.onHeartbeatTick(now)
	case TimerGhost:
		c.onGhostTick(now)
	case TimerProbe:
		c.onProbeTick(now)
	}
}

// Join declares peer a member: it counts toward the view at once, before it
// answers, and gets a message that opens negotiation without spending anyone's
// vote. Idempotent per node; a join cancels a withdrawal by Leave. Errors wrap
// gen.ErrIncorrect for an empty name or this member's own node.
func (c *Core) Join(now time.Time, peer gen.ProcessID) error { return c.join(now, peer) }

// Leave withdraws node from the view and from every later quorum; messages
// from it are dropped for ElectionTimeoutMax so traffic in flight cannot
// re-admit it. Errors wrap gen.ErrIncorrect for an empty name or self.
func (c *Core) Leave(now time.Time, node gen.Atom) error { return c.leave(now, node) }

// PeerDown reports a monitor's down message for pid. A reason that is
// gen.ErrNoConnection keeps the member as unreachable (only its PID is
// forgotten) until it speaks again or GhostTTL passes; any other reason
// removes it at once.
func (c *Core) PeerDown(now time.Time, pid gen.PID, reason error) { c.peerDown(now, pid, reason) }

// ConfirmResult reports what HandleConfirmLeader answered for a Confirm effect
// at term. Only granted with a nil error publishes leadership; a false or an
// error is a denial, after which the member follows and re-campaigns after a
// backoff that grows with consecutive denials. Answers for an election that is
// no longer current are ignored.
func (c *Core) ConfirmResult(now time.Time, term uint64, granted bool, err error) {
	c.confirmResult(now, term, granted, err)
}

// Reconfirm reports what HandleConfirmLeader answered when a leader
// consulted it again mid-term (leader.Options.ConfirmInterval): a false or an
// error ends the leadership, so an external lease lost mid-term ends it too.
// The member then re-campaigns after the denial backoff. A report that
// arrives when this member no longer leads is ignored.
func (c *Core) Reconfirm(now time.Time, granted bool, err error) { c.reconfirm(now, granted, err) }

// BecomeLeaderFailed reports that HandleBecomeLeader returned err: the member
// steps down again. The shell then terminates the actor with err.
func (c *Core) BecomeLeaderFailed(now time.Time, err error) {
	if c.role != RoleLeader {
		return
	}
	c.lastLeaderErr = err
	c.becomeFollower(now, gen.PID{})
}

// SendFailed reports that sending a Ready message to node failed with err. It
// marks the peer as send-failing (Status.SendFailingPeers) and withdraws the
// send as evidence of contact; sends not reported count as accepted.
func (c *Core) SendFailed(now time.Time, to gen.Atom, err error) {
	m := c.view.members[to]
	if m == nil {
		return // a probe or a reply to a non-member: nothing to track
	}
	m.sendFailing = true
	m.lastSendErr = err
	m.steadySince = time.Time{}
}

// StepDown hands leadership over to the reachable peer that answered most
// recently: this member becomes follower (a BecomeFollower effect comes
// first) and sends that peer MessageTimeoutNow. Errors wrap gen.ErrNotAllowed
// when this member does not lead or no peer is reachable.
func (c *Core) StepDown(now time.Time) error { return c.stepDown(now) }

// TransferLeadership is StepDown to a chosen node. Errors wrap
// gen.ErrNotAllowed when this member does not lead or the node is not
// reachable, gen.ErrIncorrect when it is not a member.
func (c *Core) TransferLeadership(now time.Time, to gen.Atom) error {
	return c.transferLeadership(now, to)
}

// SetCampaign says whether this member may start elections. The same-host
// shortcut allows only the holder of the host's cell: the others still vote,
// follow and take heartbeats, and never campaign while the holder lives.
// Votes and quorum are unchanged, so safety is too. When a member is allowed
// again and knows no live leader, it campaigns after a short random delay.
func (c *Core) SetCampaign(now time.Time, allowed bool) {
	c.hostShortcut = true
	if c.campaignHeld == !allowed {
		return
	}
	c.campaignHeld = !allowed
	if allowed && c.role == RoleFollower && !c.leaderLive(now) {
		c.armElectionAfter(now, c.failoverDelay())
	}
}

// HasReady reports whether Ready has anything to do.
func (c *Core) HasReady() bool { return c.hasReady() }

// Ready returns the effects accumulated since the last call, in order, and
// clears them. Handle it fully before feeding further inputs, then check
// HasReady again: inputs given while handling (ConfirmResult, SendFailed)
// produce more.
func (c *Core) Ready() Ready { return c.takeReady() }

// Role is this member's current role.
func (c *Core) Role() Role { return c.role }

// Term is the current term.
func (c *Core) Term() uint64 { return c.term }

// Leader is the PID of the leader this member recognises (itself when it
// leads), zero when none.
func (c *Core) Leader() gen.PID { return c.leader }

// IsLeader reports whether this member holds published leadership.
func (c *Core) IsLeader() bool { return c.role == RoleLeader }

// FencingToken is the term at which this member holds leadership, zero when
// it does not lead. Terms only grow and each has at most one leader, so tokens
// of successive leaders strictly increase.
func (c *Core) FencingToken() uint64 {
	if c.role != RoleLeader {
		return 0
	}
	return c.term
}

// Peers lists the members whose PID is known, by node name.
func (c *Core) Peers() []gen.PID {
	var out []gen.PID
	for _, n := range c.view.nodes() {
		if pid := c.view.members[n].pid; pid != (gen.PID{}) {
			out = append(out, pid)
		}
	}
	return out
}

// PeerCount is len(Peers()).
func (c *Core) PeerCount() int { return len(c.Peers()) }

// HasPeer reports whether pid is the known PID of a member.
func (c *Core) HasPeer(pid gen.PID) bool { return c.view.byPID(pid) != nil }

// Members describes every member of the view except this one, by node name;
// Broadcast addresses each by PID when known, by ProcessID otherwise.
func (c *Core) Members() []MemberStatus {
	out := make([]MemberStatus, 0, len(c.view.members))
	for _, n := range c.view.nodes() {
		out = append(out, c.view.members[n].status(n))
	}
	return out
}

// ViewSize counts this member and every other member of the view.
func (c *Core) ViewSize() int { return c.view.size() }

// Quorum is the majority of the current view, counting this member.
func (c *Core) Quorum() int { return c.view.quorum() }

// VotesGranted counts the votes behind the current or last election this
// member ran, itself included.
func (c *Core) VotesGranted() int { return len(c.lastGranted) }

// HardState is the term and vote as they stand.
func (c *Core) HardState() HardState { return HardState{Term: c.term, VotedFor: c.votedFor} }

// Status snapshots everything inspection shows. now is unused by the core
// today but keeps the signature stable for age-based fields.
func (c *Core) Status(now time.Time) Status {
	s := Status{
		Role:                  c.role,
		Term:                  c.term,
		VotedFor:              c.votedFor,
		TermChangedAt:         c.termChangedAt,
		Leader:                c.leader,
		LeaderNode:            c.leader.Node,
		ClusterID:             c.cfg.ClusterID,
		ViewSize:              c.view.size(),
		Quorum:                c.view.quorum(),
		MinClusterSize:        c.cfg.MinClusterSize,
		Members:               c.Members(),
		Bootstrap:             slices.Clone(c.cfg.Bootstrap),
		GhostTTL:              c.cfg.GhostTTL,
		VotesGranted:          slices.Clone(c.lastGranted),
		VotesCount:            len(c.lastGranted),
		PreVoting:             c.preVoting,
		AwaitingConfirm:       c.awaitingConfirm,
		ElectionTimerArmed:    c.timers[TimerElection].armed,
		ProbeTimerArmed:       c.timers[TimerProbe].armed,
		CampaignHeld:          c.campaignHeld,
		HeartbeatTimerArmed:   c.timers[TimerHeartbeat].armed,
		HeartbeatInLast:       c.heartbeatInLast,
		HeartbeatOutLast:      c.heartbeatOutLast,
		ElectionTimeoutMin:    c.cfg.ElectionTimeoutMin,
		ElectionTimeoutMax:    c.cfg.ElectionTimeoutMax,
		HeartbeatInterval:     c.cfg.HeartbeatInterval,
		Dropped:               make(map[string]uint64, len(c.dropped)),
		ConfirmDenied:         c.confirmDenied,
		LastDeniedAt:          c.lastDeniedAt,
		LastDenyError:         c.lastDenyErr,
		LastBecomeLeaderError: c.lastLeaderErr,
		ElectionsStarted:      c.electionsStarted,
		ElectionsWon:          c.electionsWon,
		LeadershipChanges:     c.leaderChanges,
		Rounds:                c.rounds,
		QuorumLostStepDowns:   c.quorumLost,
		LeaderConflicts:       c.conflicts,
		StaleTimers:           c.staleTimers,
		Started:               c.cfg.Started,
		Prefer:                c.cfg.Prefer.Kind,
		PreferStableFor:       c.cfg.preferStableFor(),
		PreferredTransfers:    c.preferredTransfers,
	}
	for k, v := range c.dropped {
		s.Dropped[k] = v
	}
	for _, n := range c.view.nodes() {
		if c.view.members[n].sendFailing {
			s.SendFailingPeers = append(s.SendFailingPeers, n)
		}
	}
	return s
}
