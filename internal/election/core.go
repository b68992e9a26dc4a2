package election

import (
	"fmt"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/quorum"
)

// Core is one member's election state machine. It has no lock: the goroutine
// of the process that embeds it (or the simulator) owns it and every call.
type Core struct {
	cfg  Config
	self gen.PID

	role          Role
	term          uint64
	votedFor      gen.ProcessID
	termChangedAt time.Time
	hardDirty     bool // term or vote changed since the last Ready

	leader        gen.PID   // the leader recognised at term; self when leading
	leaderHeardAt time.Time // last heartbeat from a live leader, for stickiness

	view *view

	// The current election: a pre-vote round (preVoting) or a real one.
	tally           *quorum.Tally[gen.Atom]
	preVoting       bool
	awaitingConfirm bool // won; HandleConfirmLeader's answer is pending
	skipPreVote     bool // the next election timeout campaigns at once
	// campaignHeld: another member on this host holds the same-host cell, so
	// this one votes and follows but starts no election (SetCampaign).
	campaignHeld bool
	// hostShortcut: the shell drives SetCampaign, so one member per host campaigns.
	hostShortcut bool
	// campaignTransfer: the running campaign passes leader stickiness (a
	// handover or a merge), so members joining it are asked the same way.
	campaignTransfer bool
	// mergeCampaign: the next campaign passes leader stickiness (as a
	// handover does) because it resolves two leaders in one term.
	mergeCampaign bool
	// conflicts counts leaderships given up on meeting a second leader in the same term.
	conflicts     uint64
	lastGranted   []gen.Atom
	denials       int   // consecutive confirmation denials
	lastDenyErr   error // the error of the last denial, nil for a plain false
	lastLeaderErr error // what HandleBecomeLeader last failed with

	timers [4]timerState
	// The election timeout runs from electionStart for electionWait; with
	// electionLazy a heartbeat moves the start without re-arming the timer.
	electionStart time.Time
	electionWait  time.Duration
	electionLazy  bool
	ready         Ready

	heartbeatInLast  time.Time
	heartbeatOutLast time.Time
	dropped          map[string]uint64
	confirmDenied    uint64
	lastDeniedAt     time.Time
	electionsStarted uint64
	electionsWon     uint64
	leaderChanges    uint64
	rounds           uint64
	quorumLost       uint64
	staleTimers      uint64
	// preferredTransfers counts handovers to a more preferred member.
	preferredTransfers uint64
}

// Reasons a message or input is dropped, as counted in Status.Dropped.
const (
	dropUnknownMessage = "unknown_message"
	dropClusterID      = "cluster_mismatch"
	dropStaleTerm      = "stale_term"
	dropWithdrawn      = "withdrawn_peer"
	dropMalformed      = "malformed_sender"
	dropSelf           = "from_self"
	dropUnexpected     = "unexpected_message"
	dropStaleConfirm   = "stale_confirm"
	dropTwoLeaders     = "conflicting_leader"
	dropUnknownPeer    = "unknown_peer"
	dropNotVoter       = "not_a_voter"
)

func newCore(cfg Config, self gen.PID, hs HardState, now time.Time) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if self == (gen.PID{}) || self.Node != cfg.Self.Node {
		return nil, fmt.Errorf("election: self PID %s must be on node %s: %w", self, cfg.Self.Node, gen.ErrIncorrect)
	}
	c := &Core{
		cfg:           cfg,
		self:          self,
		role:          RoleUnclustered,
		term:          hs.Term,
		votedFor:      hs.VotedFor,
		termChangedAt: now,
		view:          newView(cfg.Self.Node),
		dropped:       map[string]uint64{},
	}
	for _, p := range cfg.Bootstrap {
		if p.Node == cfg.Self.Node {
			continue
		}
		c.declare(now, p)
	}
	if c.view.size() >= cfg.MinClusterSize {
		c.role = RoleFollower
		c.armElection(now)
	}
	c.armProbe()
	return c, nil
}

func (c *Core) drop(reason string) { c.dropped[reason]++ }

func (c *Core) effect(e Effect) { c.ready.Effects = append(c.ready.Effects, e) }

// send queues msg for m and records the attempt as evidence until reported failed.
func (c *Core) send(now time.Time, m *member, msg any) {
	m.lastSend = now
	m.sendFailing = false
	c.ready.Messages = append(c.ready.Messages, m.target(msg))
}

// broadcast sends msg to every member, or only those that answered.
func (c *Core) broadcast(now time.Time, msg any, answeredOnly bool) {
	for _, n := range c.view.nodes() {
		if m := c.view.members[n]; !answeredOnly || m.answered {
			c.send(now, m, msg)
		}
	}
}

// setTerm moves to a newer term, clearing the vote and the known leader.
func (c *Core) setTerm(now time.Time, term uint64) {
	c.term = term
	c.votedFor = gen.ProcessID{}
	c.termChangedAt = now
	c.hardDirty = true
}

func (c *Core) vote(for_ gen.ProcessID) {
	c.votedFor = for_
	c.hardDirty = true
}

// leaderLive reports whether this member has heard from a live leader within
// ElectionTimeoutMin (or leads itself): the stickiness that refuses votes.
func (c *Core) leaderLive(now time.Time) bool {
	if c.role == RoleLeader {
		return true
	}
	return !c.leaderHeardAt.IsZero() && now.Sub(c.leaderHeardAt) < c.cfg.ElectionTimeoutMin
}

// sticky reports whether a vote request must be refused for leader stickiness.
func (c *Core) sticky(now time.Time, m MessageRequestVote) bool {
	return c.cfg.PreVote && !m.Transfer && c.leaderLive(now)
}

// declare adds or marks a declared peer (Bootstrap or Join).
func (c *Core) declare(now time.Time, p gen.ProcessID) (added bool) {
	delete(c.view.withdrawn, p.Node)
	if m := c.view.members[p.Node]; m != nil {
		m.declared = true
		if m.pid == (gen.PID{}) {
			m.id = p
		}
		return false
	}
	c.view.add(p.Node, &member{id: p, declared: true})
	return true
}

// observe admits the sender of a valid message to the view and refreshes what
// is known of it: its PID, liveness and evidence.
func (c *Core) observe(now time.Time, from gen.PID, sender gen.ProcessID, started int64, reply, answersElection bool) {
	m := c.view.members[from.Node]
	added := m == nil
	if added {
		m = &member{id: sender}
		c.view.add(from.Node, m)
	}
	m.id = sender
	if m.pid != from {
		if old := m.pid; old != (gen.PID{}) {
			c.effect(Demonitor{PID: old})
			c.effect(PeerLeft{PID: old})
		}
		m.pid = from
		m.steadySince = time.Time{}
		c.effect(Monitor{PID: from})
		c.effect(PeerJoined{PID: from})
	}
	m.learnStarted(started)
	m.answered = true
	m.lastInbound = now
	if reply {
		m.replied(now, c.cfg.evidenceWindow())
	}
	if !m.unreachableSince.IsZero() {
		m.unreachableSince = time.Time{}
		c.armGhost(now)
	}
	if added {
		// A member that joins during an election votes in it and raises its
		// quorum, except the sender of a vote reply: a reply never grows the
		// quorum of the election it answers.
		if c.tally != nil && !answersElection {
			c.tally.Add(from.Node)
			c.negotiate(now, m)
		}
		c.membershipChanged(now)
	}
}

// removeMember takes node out of the view and out of the running election.
func (c *Core) removeMember(now time.Time, node gen.Atom, demonitor bool) {
	m := c.view.members[node]
	if m == nil {
		return
	}
	c.view.remove(node)
	if m.pid != (gen.PID{}) {
		if demonitor {
			c.effect(Demonitor{PID: m.pid})
		}
		c.effect(PeerLeft{PID: m.pid})
	}
	if c.leader.Node == node && c.role != RoleLeader {
		c.recognise(gen.PID{})
	}
	if !m.unreachableSince.IsZero() {
		c.armGhost(now)
	}
	// A running election keeps the member as a voter that will not answer:
	// "every quorum computed afterwards" is the next election's. Shrinking it
	// would let a stale electorate crown a candidate its current view does
	// not back.
	c.membershipChanged(now)
}

// membershipChanged applies MinClusterSize after the view grew or shrank.
func (c *Core) membershipChanged(now time.Time) {
	small := c.view.size() < c.cfg.MinClusterSize
	switch {
	case small && c.role != RoleUnclustered:
		c.becomeUnclustered()
	case !small && c.role == RoleUnclustered:
		c.becomeFollower(now, c.leader)
	}
}

// step handles one inbound protocol message.
func (c *Core) step(now time.Time, from gen.PID, msg any) {
	var (
		cluster string
		term    uint64
		sender  gen.ProcessID
		started int64
		reply   bool
		// preVote: pre-vote traffic (a request or its answer); isVote: an answer.
		preVote, isVote bool
	)
	switch m := msg.(type) {
	case MessageRequestVote:
		cluster, term, sender, started, preVote = m.ClusterID, m.Term, m.Candidate, m.Started, m.PreVote
	case MessageVote:
		cluster, term, sender, started, reply, preVote, isVote = m.ClusterID, m.Term, m.Voter, m.Started, true, m.PreVote, true
	case MessageHeartbeat:
		cluster, term, sender, started = m.ClusterID, m.Term, m.Leader, m.Started
	case MessageHeartbeatAck:
		// An ack from a member that follows another leader is no evidence
		// that this leader reaches it.
		cluster, term, sender, started = m.ClusterID, m.Term, m.Follower, m.Started
		reply = m.Follows == (gen.PID{}) || m.Follows == c.self
	case MessageTimeoutNow:
		cluster, term, sender, started = m.ClusterID, m.Term, m.Leader, m.Started
	default:
		c.drop(dropUnknownMessage)
		return
	}
	switch {
	case cluster != c.cfg.ClusterID:
		c.drop(dropClusterID)
		return
	case from.Node == "" || sender.Name == "" || sender.Node != from.Node:
		c.drop(dropMalformed)
		return
	case from.Node == c.cfg.Self.Node:
		c.drop(dropSelf)
		return
	case c.view.isWithdrawn(from.Node, now):
		c.drop(dropWithdrawn)
		return
	}
	// Pre-vote traffic never moves terms, so a stale term in it is no
	// reason to ignore it: a probe's answer from a member behind us is how a
	// leader learns the member answered.
	if term < c.term && !preVote {
		// Stale: counted and not applied, but a request is answered with our
		// term so its sender learns it.
		c.drop(dropStaleTerm)
		switch msg.(type) {
		case MessageRequestVote:
			c.sendTo(now, from, sender, c.voteMsg(false, false, c.term))
		case MessageHeartbeat:
			c.sendTo(now, from, sender, c.ackMsg())
		}
		return
	}
	// Only a real vote answering the real election running now is held out
	// of its tally; a pre-vote or a probe's answer admits its sender to it.
	answersElection := isVote && !preVote && c.tally != nil && !c.preVoting
	c.observe(now, from, sender, started, reply, answersElection)
	if term > c.term && c.adoptsTerm(now, msg) {
		leader := gen.PID{}
		if _, ok := msg.(MessageHeartbeat); ok {
			leader = from
		}
		c.setTerm(now, term)
		c.becomeFollower(now, leader)
	}
	switch m := msg.(type) {
	case MessageRequestVote:
		c.onRequestVote(now, from, m)
	case MessageVote:
		c.onVote(now, from, m)
	case MessageHeartbeat:
		c.onHeartbeat(now, from)
	case MessageHeartbeatAck:
		// Evidence was recorded by observe; a newer term by adoptsTerm.
		if m.Follows != (gen.PID{}) && m.Follows != c.self && m.Term == c.term {
			c.drop(dropTwoLeaders)
			c.resolveConflict(now)
		}
	case MessageTimeoutNow:
		c.onTimeoutNow(now, m)
	}
}

// adoptsTerm says whether a message with a newer term moves this member to it.
// Pre-vote traffic never does, except a refusal that reveals a newer term;
// a vote request refused for stickiness does not either.
func (c *Core) adoptsTerm(now time.Time, msg any) bool {
	switch m := msg.(type) {
	case MessageRequestVote:
		return !m.PreVote && !c.sticky(now, m)
	case MessageVote:
		return !m.PreVote || !m.Granted
	}
	return true
}

// sendTo addresses a member that may not be in the view (a stale sender).
func (c *Core) sendTo(now time.Time, pid gen.PID, id gen.ProcessID, msg any) {
	if m := c.view.members[pid.Node]; m != nil {
		c.send(now, m, msg)
		return
	}
	c.ready.Messages = append(c.ready.Messages, Outbound{To: pid, ToName: id, Message: msg})
}

func (c *Core) voteMsg(granted, preVote bool, term uint64) MessageVote {
	v := MessageVote{ClusterID: c.cfg.ClusterID, Term: term, Granted: granted, PreVote: preVote, Voter: c.cfg.Self, Started: c.started()}
	if !granted {
		v.Leader = c.leaderID()
	}
	return v
}

// leaderID is the name of the leader this member recognises, zero when none.
func (c *Core) leaderID() gen.ProcessID {
	switch {
	case c.leader == (gen.PID{}):
		return gen.ProcessID{}
	case c.leader == c.self:
		return c.cfg.Self
	}
	if m := c.view.members[c.leader.Node]; m != nil {
		return m.id
	}
	return gen.ProcessID{}
}

func (c *Core) ackMsg() MessageHeartbeatAck {
	return MessageHeartbeatAck{ClusterID: c.cfg.ClusterID, Term: c.term, Follower: c.cfg.Self, Started: c.started()}
}

func (c *Core) heartbeatMsg() MessageHeartbeat {
	return MessageHeartbeat{ClusterID: c.cfg.ClusterID, Term: c.term, Leader: c.cfg.Self, Started: c.started()}
}

func (c *Core) requestMsg(term uint64, preVote, transfer bool) MessageRequestVote {
	return MessageRequestVote{ClusterID: c.cfg.ClusterID, Term: term, Candidate: c.cfg.Self, PreVote: preVote, Transfer: transfer, Started: c.started()}
}

func (c *Core) timeoutNowMsg() MessageTimeoutNow {
	return MessageTimeoutNow{ClusterID: c.cfg.ClusterID, Term: c.term, Leader: c.cfg.Self, Started: c.started()}
}

// started is this member's start time as it travels.
func (c *Core) started() int64 { return startedNanos(c.cfg.Started) }

func (c *Core) takeReady() Ready {
	rd := c.ready
	if c.hardDirty {
		rd.HardState = &HardState{Term: c.term, VotedFor: c.votedFor}
		c.hardDirty = false
	}
	c.ready = Ready{}
	return rd
}

func (c *Core) hasReady() bool {
	return c.hardDirty || len(c.ready.Messages) > 0 || len(c.ready.Timers) > 0 || len(c.ready.Effects) > 0
}
