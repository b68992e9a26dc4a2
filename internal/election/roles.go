package election

import (
	"errors"
	"fmt"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/quorum"
)

// resetElection forgets the running election (pre-vote or real).
func (c *Core) resetElection() {
	c.tally = nil
	c.preVoting = false
	c.awaitingConfirm = false
}

// changeRole switches role and records the transition.
func (c *Core) changeRole(to Role) {
	if c.role == to {
		return
	}
	c.effect(RoleChanged{From: c.role, To: to, Term: c.term})
	c.role = to
}

// recognise records leader as the one this member follows; a follower is told
// of every change.
func (c *Core) recognise(leader gen.PID) {
	if c.leader == leader {
		return
	}
	c.leader = leader
	if leader != (gen.PID{}) {
		c.leaderChanges++
		c.rounds = 0
	}
	if c.role == RoleFollower {
		c.effect(BecomeFollower{Leader: leader})
	}
}

// becomeFollower moves to follower (or unclustered, when the view is too
// small) recognising leader, and arms the election timer.
func (c *Core) becomeFollower(now time.Time, leader gen.PID) {
	if c.view.size() < c.cfg.MinClusterSize {
		if c.role == RoleLeader {
			c.leader = gen.PID{}
		}
		c.becomeUnclustered()
		c.leader = leader
		return
	}
	prev := c.role
	c.resetElection()
	if prev == RoleLeader {
		c.disarm(TimerHeartbeat)
		c.leader = gen.PID{}
	}
	c.changeRole(RoleFollower)
	if prev == RoleFollower {
		c.recognise(leader)
	} else {
		if leader != (gen.PID{}) && leader != c.leader {
			c.leaderChanges++
			c.rounds = 0
		}
		c.leader = leader
		c.effect(BecomeFollower{Leader: leader})
	}
	c.armElection(now)
}

// becomeUnclustered stops electing: the view is below MinClusterSize.
func (c *Core) becomeUnclustered() {
	prev := c.role
	c.resetElection()
	c.disarm(TimerHeartbeat)
	c.disarm(TimerElection)
	c.changeRole(RoleUnclustered)
	if prev == RoleLeader {
		c.leader = gen.PID{}
	}
	if prev == RoleLeader || prev == RoleCandidate {
		c.effect(BecomeFollower{Leader: c.leader})
	}
}

// startPreVote asks whether members would vote at term+1, without changing
// term or vote; a won round then campaigns for real.
func (c *Core) startPreVote(now time.Time) {
	c.resetElection()
	c.preVoting = true
	c.openTally(now, c.requestMsg(c.term+1, true, false))
}

// openTally starts counting over the current view with self's grant, asks
// every member with request, and arms the retry.
func (c *Core) openTally(now time.Time, request MessageRequestVote) {
	c.tally = quorum.NewTally(c.view.voters())
	c.tally.Record(c.cfg.Self.Node, true)
	c.broadcast(now, request, false)
	c.armElection(now)
	c.checkTally(now)
}

// campaign becomes candidate at the next term, votes for itself and asks
// every member for its vote.
func (c *Core) campaign(now time.Time, transfer bool) {
	if c.view.size() < c.cfg.MinClusterSize {
		return
	}
	c.resetElection()
	c.setTerm(now, c.term+1)
	c.vote(c.cfg.Self)
	c.leader = gen.PID{}
	c.changeRole(RoleCandidate)
	c.electionsStarted++
	c.rounds++
	c.campaignTransfer = transfer
	c.openTally(now, c.requestMsg(c.term, false, transfer))
}

// checkTally acts on a decided election.
func (c *Core) checkTally(now time.Time) {
	if c.tally == nil || c.awaitingConfirm {
		return
	}
	c.lastGranted = c.tally.GrantedBy()
	switch c.tally.Result() {
	case quorum.Won:
		if c.preVoting {
			c.campaign(now, false)
			return
		}
		// Won: leadership waits for HandleConfirmLeader.
		c.awaitingConfirm = true
		c.effect(Confirm{Term: c.term})
	case quorum.Lost:
		if c.preVoting {
			c.resetElection() // the armed timer retries
			return
		}
		c.becomeFollower(now, gen.PID{})
	}
}

func (c *Core) confirmResult(now time.Time, term uint64, granted bool, err error) {
	if !c.awaitingConfirm || term != c.term || c.role != RoleCandidate {
		c.drop(dropStaleConfirm)
		return
	}
	if granted && err == nil {
		c.denials = 0
		c.becomeLeader(now)
		return
	}
	c.deny(now, err)
}

// deny records a denial of leadership by HandleConfirmLeader, follows, and
// re-campaigns after a backoff that grows with consecutive denials.
func (c *Core) deny(now time.Time, err error) {
	c.confirmDenied++
	c.lastDeniedAt = now
	c.lastDenyErr = err
	c.denials++
	c.becomeFollower(now, gen.PID{})
	if c.role == RoleFollower {
		c.armElectionAfter(now, c.electionTimeout()+c.cfg.ElectionTimeoutMin<<min(c.denials-1, maxBackoffShift))
	}
}

// reconfirm handles a leader's periodic re-consultation of HandleConfirmLeader:
// a denial (false or an error) ends the leadership as a denial at election
// time would have withheld it.
func (c *Core) reconfirm(now time.Time, granted bool, err error) {
	if c.role != RoleLeader {
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

func (c *Core) becomeLeader(now time.Time) {
	c.resetElection()
	c.disarm(TimerElection)
	c.changeRole(RoleLeader)
	c.leader = c.self
	c.leaderChanges++
	c.rounds = 0
	c.electionsWon++
	c.effect(BecomeLeader{Term: c.term})
	c.sendHeartbeats(now)
}

func (c *Core) sendHeartbeats(now time.Time) {
	c.broadcast(now, c.heartbeatMsg(), true)
	c.heartbeatOutLast = now
	c.arm(TimerHeartbeat, c.cfg.HeartbeatInterval)
}

func (c *Core) onRequestVote(now time.Time, from gen.PID, m MessageRequestVote) {
	peer := c.view.members[from.Node]
	if m.PreVote {
		grant := m.Term > c.term && !c.leaderLive(now)
		term := c.term
		if grant {
			term = m.Term
		}
		c.send(now, peer, c.voteMsg(grant, true, term))
		return
	}
	grant := m.Term == c.term && c.role != RoleLeader && !c.sticky(now, m) &&
		(c.votedFor == (gen.ProcessID{}) || c.votedFor == m.Candidate)
	if grant {
		c.vote(m.Candidate)
		if c.role == RoleFollower {
			c.touchElection(now)
		}
	}
	c.send(now, peer, c.voteMsg(grant, false, c.term))
}

func (c *Core) onVote(now time.Time, from gen.PID, m MessageVote) {
	c.followLeaderHint(now, m.Leader)
	// A vote outside an election (a probe's answer, a late reply) has served
	// as contact already and needs nothing else.
	if c.tally == nil || m.PreVote != c.preVoting {
		return
	}
	want := c.term
	if c.preVoting {
		want++
	}
	if m.Granted && m.Term != want {
		return
	}
	if !c.tally.Record(from.Node, m.Granted) {
		if !c.tally.Has(from.Node) {
			c.drop(dropNotVoter)
		}
		return
	}
	c.checkTally(now)
}

// followLeaderHint reaches out to a leader named by a refused vote when it is
// not in the view: the leader admits this member on hearing from it, and its
// heartbeats then bring this member back into the cluster it lost track of.
func (c *Core) followLeaderHint(now time.Time, leader gen.ProcessID) {
	if leader.Node == "" || leader.Name == "" || leader.Node == c.cfg.Self.Node ||
		c.view.members[leader.Node] != nil || c.view.isWithdrawn(leader.Node, now) {
		return
	}
	c.ready.Messages = append(c.ready.Messages, Outbound{ToName: leader, Message: c.requestMsg(c.term, true, false)})
}

func (c *Core) onHeartbeat(now time.Time, from gen.PID) {
	switch c.role {
	case RoleLeader:
		c.drop(dropTwoLeaders)
		c.resolveConflict(now)
		return
	case RoleCandidate:
		c.becomeFollower(now, from)
	case RoleFollower:
		if c.leader != (gen.PID{}) && c.leader != from && c.leaderLive(now) {
			// A second leader in this term: stay with the first and tell
			// the second, which stands down.
			c.drop(dropTwoLeaders)
			ack := c.ackMsg()
			ack.Follows = c.leader
			c.send(now, c.view.members[from.Node], ack)
			return
		}
		c.resetElection()
		c.skipPreVote = false
		c.mergeCampaign = false
		c.recognise(from)
		c.touchElection(now)
	case RoleUnclustered:
		c.leader = from
	}
	c.leaderHeardAt = now
	c.heartbeatInLast = now
	c.send(now, c.view.members[from.Node], c.ackMsg())
}

func (c *Core) onTimeoutNow(now time.Time, m MessageTimeoutNow) {
	if m.Term != c.term || (c.role != RoleFollower && c.role != RoleCandidate) {
		c.drop(dropUnexpected)
		return
	}
	c.recognise(gen.PID{})
	c.campaign(now, true)
}

func (c *Core) onElectionTimeout(now time.Time) {
	if c.role != RoleFollower && c.role != RoleCandidate {
		return
	}
	if c.role == RoleFollower && !c.electionDue(now) {
		return
	}
	c.recognise(gen.PID{})
	if c.campaignHeld {
		// Another member on this host campaigns for the host; wait for it.
		if c.role == RoleCandidate {
			c.becomeFollower(now, gen.PID{})
			return
		}
		c.armElection(now)
		return
	}
	if c.cfg.PreVote && !c.skipPreVote {
		if c.role == RoleCandidate {
			// A candidate whose round timed out stands down and asks first,
			// as any would-be candidate does: pre-voting is not a role.
			c.becomeFollower(now, gen.PID{})
			if c.role != RoleFollower {
				return
			}
		}
		c.startPreVote(now)
	} else {
		c.campaign(now, c.mergeCampaign)
	}
	c.skipPreVote = false
	c.mergeCampaign = false
}

// resolveConflict ends one of two leaderships in the same term. Raft never
// sees that; here it means two groups that elected separately in diverged
// views have just learned of each other. This leader stands down and, after a
// short random delay, campaigns at the next term past leader stickiness, so
// the merged view elects one leader by a majority of all of it.
func (c *Core) resolveConflict(now time.Time) {
	if c.role != RoleLeader {
		return
	}
	c.conflicts++
	c.becomeFollower(now, gen.PID{})
	if c.role != RoleFollower {
		return
	}
	c.skipPreVote = true
	c.mergeCampaign = true
	c.armElectionAfter(now, c.jitter(c.cfg.ElectionTimeoutMin))
}

// onHeartbeatTick checks quorum evidence, then asserts leadership again.
func (c *Core) onHeartbeatTick(now time.Time) {
	if c.role != RoleLeader {
		return
	}
	reached := 1
	for _, m := range c.view.members {
		if m.reached(c.cfg.Evidence, now, c.cfg.evidenceWindow()) {
			reached++
		}
	}
	if !quorum.Reached(reached, c.view.size()) {
		c.quorumLost++
		c.becomeFollower(now, gen.PID{})
		return
	}
	if to, ok := c.preferredTarget(now); ok {
		c.preferredTransfers++
		c.handOver(now, to)
		return
	}
	c.sendHeartbeats(now)
}

// onProbeTick reaches out again to every unreachable member and every
// declared member that never answered. In a converged cluster followers never
// talk to each other, so without this a follower that lost its link to
// another during a partition would drop it after GhostTTL even though the
// link healed long before, and a member whose first probe was lost would
// stay unknown to the peer it declared.
func (c *Core) onProbeTick(now time.Time) {
	for _, n := range c.view.nodes() {
		if m := c.view.members[n]; m.toProbe() {
			c.negotiate(now, m)
		}
	}
	for _, p := range c.absentBootstrap() {
		c.ready.Messages = append(c.ready.Messages, Outbound{ToName: p, Message: c.requestMsg(c.term, true, false)})
	}
	c.armProbe()
}

func (c *Core) onGhostTick(now time.Time) {
	for _, n := range c.view.nodes() {
		m := c.view.members[n]
		if !m.unreachableSince.IsZero() && !now.Before(m.unreachableSince.Add(c.cfg.GhostTTL)) {
			c.removeMember(now, n, false)
		}
	}
	c.armGhost(now)
}

func (c *Core) peerDown(now time.Time, pid gen.PID, reason error) {
	m := c.view.byPID(pid)
	if m == nil {
		c.drop(dropUnknownPeer)
		return
	}
	wasLeader := c.role != RoleLeader && c.leader == pid
	noConnection := errors.Is(reason, gen.ErrNoConnection)
	if noConnection {
		m.pid = gen.PID{}
		m.answered = false // no heartbeats by name to a ghost; probes reach it
		m.unreachableSince = now
		m.steadySince = time.Time{}
		c.effect(PeerLeft{PID: pid})
		c.armGhost(now)
		if wasLeader {
			c.recognise(gen.PID{})
		}
	} else {
		c.removeMember(now, pid.Node, false)
		if wasLeader {
			c.leaderHeardAt = time.Time{}
		}
	}
	if wasLeader && c.cfg.FastFailover && (c.role == RoleFollower || c.role == RoleCandidate) {
		c.leaderHeardAt = time.Time{}
		c.skipPreVote = !noConnection
		c.armElectionAfter(now, c.failoverDelay())
	}
}

func (c *Core) join(now time.Time, peer gen.ProcessID) error {
	if peer.Name == "" || peer.Node == "" {
		return fmt.Errorf("election: join %s: a peer needs a name and a node: %w", peer, gen.ErrIncorrect)
	}
	if peer.Node == c.cfg.Self.Node {
		return fmt.Errorf("election: join %s: that is this member's own node: %w", peer, gen.ErrIncorrect)
	}
	if !c.declare(now, peer) {
		// Declaring a member again (a discovery loop re-running Join) reaches
		// out to it if it is unreachable.
		if m := c.view.members[peer.Node]; !m.unreachableSince.IsZero() {
			c.negotiate(now, m)
		}
		return nil
	}
	if c.tally != nil {
		c.tally.Add(peer.Node)
	}
	c.armProbe()
	c.membershipChanged(now)
	c.negotiate(now, c.view.members[peer.Node])
	return nil
}

// negotiate opens contact with a peer without spending a vote: a pre-vote
// probe at this member's own term, from a leader too, since heartbeats go only
// to peers that have answered. Its answer admits the peer whatever its term.
// During an election the peer is asked the election's own question instead,
// since it now votes in it.
func (c *Core) negotiate(now time.Time, m *member) {
	switch {
	case c.tally != nil && c.preVoting:
		c.send(now, m, c.requestMsg(c.term+1, true, false))
	case c.tally != nil && !c.awaitingConfirm:
		c.send(now, m, c.requestMsg(c.term, false, c.campaignTransfer))
	default:
		c.send(now, m, c.requestMsg(c.term, true, false))
	}
}

func (c *Core) leave(now time.Time, node gen.Atom) error {
	if node == "" {
		return fmt.Errorf("election: leave: empty node name: %w", gen.ErrIncorrect)
	}
	if node == c.cfg.Self.Node {
		return fmt.Errorf("election: leave %s: a member cannot withdraw itself: %w", node, gen.ErrIncorrect)
	}
	c.removeMember(now, node, true)
	c.view.withdrawn[node] = now.Add(c.cfg.ElectionTimeoutMax)
	return nil
}

// handOver steps down and tells m to campaign at once.
func (c *Core) handOver(now time.Time, node gen.Atom) {
	m := c.view.members[node]
	c.becomeFollower(now, gen.PID{})
	c.send(now, m, c.timeoutNowMsg())
}

func (c *Core) stepDown(now time.Time) error {
	if c.role != RoleLeader {
		return fmt.Errorf("election: step down: not the leader (%s): %w", c.role, gen.ErrNotAllowed)
	}
	var best gen.Atom
	var bestAt time.Time
	for _, n := range c.view.nodes() {
		m := c.view.members[n]
		if !m.handOverTarget() {
			continue
		}
		if at := latest(m.lastReply, m.lastInbound); best == "" || at.After(bestAt) {
			best, bestAt = n, at
		}
	}
	if best == "" {
		return fmt.Errorf("election: step down: no reachable peer to hand over to: %w", gen.ErrNotAllowed)
	}
	c.handOver(now, best)
	return nil
}

func (c *Core) transferLeadership(now time.Time, to gen.Atom) error {
	if c.role != RoleLeader {
		return fmt.Errorf("election: transfer to %s: not the leader (%s): %w", to, c.role, gen.ErrNotAllowed)
	}
	m := c.view.members[to]
	if m == nil {
		return fmt.Errorf("election: transfer to %s: not a member: %w", to, gen.ErrIncorrect)
	}
	if !m.handOverTarget() {
		return fmt.Errorf("election: transfer to %s: not reachable: %w", to, gen.ErrNotAllowed)
	}
	c.handOver(now, to)
	return nil
}

// handOverTarget reports whether m can take leadership over: it answered, its
// PID is known and the last send to it did not fail.
func (m *member) handOverTarget() bool {
	return m.answered && m.pid != (gen.PID{}) && m.unreachableSince.IsZero() && !m.sendFailing
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
