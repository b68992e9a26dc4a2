package election

import (
	"maps"
	"slices"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/quorum"
)

// New makes the core of one member. self is this member's PID on node
// cfg.Self.Node and hs the persisted state (zero for a fresh start). The core
// starts as follower with its election timer armed and probes each Bootstrap
// peer; the first Ready holds those. Errors wrap gen.ErrIncorrect for a bad
// Config or a stored term that cannot be incremented, gen.ErrMalformed for a
// stored view that does not hold together.
func New(cfg Config, self gen.PID, hs HardState, now time.Time) (*Core, error) {
	return NewLent(cfg, self, hs, now, Ready{})
}

// NewLent is New with room lent, as by Lend, for the first Ready: the
// messages, timers and effects of room, emptied. A shell that lends its
// cores memory for every input's Ready lends it for the first too, which
// would otherwise be made beside the member's long-lived objects.
func NewLent(cfg Config, self gen.PID, hs HardState, now time.Time, room Ready) (*Core, error) {
	c, err := newCore(cfg, self, hs, now, room)
	if err != nil {
		return nil, err
	}
	for _, n := range c.peers.nodes() {
		c.negotiate(now, c.peers.get(n))
	}
	c.publish(now)
	return c, nil
}

// Step feeds one message from the peer process from. Protocol messages (the
// Message* types of this package) are applied; anything else, a foreign
// ClusterID, a stale term, a withdrawn sender, a second actor of the cluster
// on one node or an outsider's term is dropped and counted by reason in
// Status.Dropped.
func (c *Core) Step(now time.Time, from gen.PID, msg any) {
	c.step(now, from, msg)
	c.publish(now)
}

// Tick reports that a timer armed through Ready.Timers fired. A stale one
// (cancelled or re-armed since) is ignored.
func (c *Core) Tick(now time.Time, t Timer) {
	if !c.fire(t) {
		c.stats.staleTimers++
		return
	}
	switch t.Kind {
	case TimerElection:
		c.onElectionTimeout(now)
	case TimerHeartbeat:
		c.onHeartbeatTick(now)
	case TimerProbe:
		c.onProbeTick(now)
	case TimerStorage:
		c.onStorageTick()
	}
	c.publish(now)
}

// Join declares peer: before any view exists it counts toward the formation
// at once; once a view exists, the leader is asked to admit it as soon as it
// answers. Idempotent per node; a join cancels a withdrawal by Leave. Errors
// wrap gen.ErrIncorrect for an empty name or this member's own node.
func (c *Core) Join(now time.Time, peer gen.ProcessID) error {
	err := c.join(now, peer)
	c.publish(now)
	return err
}

// Leave withdraws node: the leader is asked to remove it from the view, and
// it is neither probed nor admitted for ElectionTimeoutMax, so traffic in
// flight cannot re-admit it. Errors wrap gen.ErrIncorrect for an empty name
// or self.
func (c *Core) Leave(now time.Time, node gen.Atom) error {
	err := c.leave(now, node)
	c.publish(now)
	return err
}

// PeerDown reports a monitor's down message for pid. gen.ErrNoConnection
// marks the member unreachable (its PID forgotten); any other reason makes a
// leader remove it at once. Either way a follower whose leader went down
// campaigns soon (fast failover).
func (c *Core) PeerDown(now time.Time, pid gen.PID, reason error) {
	c.peerDown(now, pid, reason)
	c.publish(now)
}

// ConfirmResult reports what HandleConfirmLeader answered for a Confirm effect
// at term. Only granted with a nil error publishes leadership; a false or an
// error is a denial, after which the member follows and re-campaigns after a
// backoff that grows with consecutive denials. Answers for an election that is
// no longer current are ignored.
func (c *Core) ConfirmResult(now time.Time, term uint64, granted bool, err error) {
	c.confirmResult(now, term, granted, err)
	c.publish(now)
}

// Reconfirm reports what HandleConfirmLeader answered when a visible leader
// consulted it again mid-term: a false or an error ends the leadership.
func (c *Core) Reconfirm(now time.Time, granted bool, err error) {
	c.reconfirm(now, granted, err)
	c.publish(now)
}

// BecomeLeaderFailed reports that HandleBecomeLeader returned err: the member
// steps down again. The shell then terminates the actor with err.
func (c *Core) BecomeLeaderFailed(now time.Time, err error) {
	if c.role == RoleLeader {
		c.more().leaderErr = err
		c.becomeFollower(now, gen.PID{})
	}
	c.publish(now)
}

// SendFailed reports that sending a Ready message to node failed with err. It
// marks the peer as send-failing (Status.SendFailingPeers) and withdraws the
// send as evidence of contact; sends not reported count as accepted.
func (c *Core) SendFailed(now time.Time, to gen.Atom, err error) {
	if p := c.peers.get(to); p != nil {
		p.sendFailing = true
		p.setSendErr(err)
		p.steadySince = 0
	}
}

// StorageFailed reports that the HardState of the last Ready could not be
// written: the shell must not send that Ready's messages. The member then
// votes for nobody and leads nothing (Role unclustered) until a write
// succeeds; it arms TimerStorage to have its state written again.
func (c *Core) StorageFailed(now time.Time, err error) {
	c.storageFailed(now, err)
	c.publish(now)
}

// StorageRecovered reports that the HardState was written after a failure:
// the member takes part again.
func (c *Core) StorageRecovered(now time.Time) {
	c.storageRecovered(now)
	c.publish(now)
}

// StorageFailing reports whether the member waits for its state to be written.
func (c *Core) StorageFailing() bool { return c.few().storageErr != nil }

// StepDown hands leadership over to the reachable member that answered most
// recently, preferring one that has not failed a handover lately: this
// member becomes follower (a BecomeFollower effect comes first) and sends it
// MessageTimeoutNow. Errors wrap gen.ErrNotAllowed when this member does not
// lead or no member is reachable.
func (c *Core) StepDown(now time.Time) error {
	err := c.stepDown(now, false)
	c.publish(now)
	return err
}

// StepDownToEnd is StepDown for a member whose process is ending: the
// target learns it with the handover and removes this member before its own
// leadership is published, instead of counting it until the down arrives.
func (c *Core) StepDownToEnd(now time.Time) error {
	err := c.stepDown(now, true)
	c.publish(now)
	return err
}

// TransferLeadership is StepDown to a chosen node. Errors wrap
// gen.ErrNotAllowed when this member does not lead or the node is not
// reachable, gen.ErrIncorrect when it is not a member of the view.
func (c *Core) TransferLeadership(now time.Time, to gen.Atom) error {
	err := c.transferLeadership(now, to)
	c.publish(now)
	return err
}

// Reform is the operator's way out when a majority of the view is gone for
// good: it replaces the view with this member and the members it heard from
// within two election timeouts, marks it agreed and campaigns with it at once.
// It breaks the intersection of quorums on purpose: if the members left out
// are alive behind a partition and elect their own leader, two leaders act.
// It returns the new view. Errors wrap gen.ErrNotAllowed when this member
// leads a working cluster, its state cannot be written or its term is
// exhausted.
func (c *Core) Reform(now time.Time) (View, error) {
	v, err := c.reform(now)
	c.publish(now)
	if err != nil {
		return View{}, err
	}
	return *v, nil
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
	if allowed && c.role == RoleFollower && !c.leaderLive(now) && c.mayCampaign() {
		c.armElectionAfter(now, c.failoverDelay())
	}
	c.publish(now)
}

// ElectionTimeouts is the configured range of the randomised election
// timeout, ElectionTimeoutMin and ElectionTimeoutMax.
func (c *Core) ElectionTimeouts() (least, most time.Duration) {
	return c.cfg.ElectionTimeoutMin, c.cfg.ElectionTimeoutMax
}

// Evidence is the configured rule for a leader's quorum evidence.
func (c *Core) Evidence() Evidence { return c.cfg.Evidence }

// ElectionDue is when the election timer is due as the core sees it now, and
// whether it is armed. A heartbeat from the leader moves it later without a
// TimerOp (a firing before it re-arms for the rest), so a shell that checks
// it after each input can hold the firing until then instead of waking the
// core early. Firing at the armed TimerOp's time is correct too.
func (c *Core) ElectionDue() (time.Time, bool) {
	if !c.armed[TimerElection] {
		return time.Time{}, false
	}
	return c.clock().time(c.electionStart).Add(c.electionWait), true
}

// Campaigning reports whether this member runs an election round, a
// pre-vote or a vote, that has not ended: a shell that bounds the rounds
// running at once frees this member's place when it turns false.
func (c *Core) Campaigning() bool { return c.camp != nil }

// Lend gives the Core empty slices to collect the messages, timers and
// effects of its next Ready in, for each it holds none of: the shell
// lends memory it reuses, so that an input's Ready makes none of its own
// (an election's burst is made of such inputs, and their Readys were most
// of its garbage). The Core keeps what it was lent until Ready returns it,
// or Reclaim takes it back; the shell must not touch it meanwhile.
func (c *Core) Lend(messages []Outbound, timers []TimerOp, effects []Effect) {
	if c.ready.Messages == nil {
		c.ready.Messages = messages[:0]
	}
	if c.ready.Timers == nil {
		c.ready.Timers = timers[:0]
	}
	if c.ready.Effects == nil {
		c.ready.Effects = effects[:0]
	}
}

// Reclaim drops the empty slices the Core holds, those it was lent and did
// not fill, and reports whether it now holds none: the memory it was lent
// is then the shell's again. It is not while a Ready is pending (HasReady).
func (c *Core) Reclaim() bool {
	if len(c.ready.Messages) == 0 {
		c.ready.Messages = nil
	}
	if len(c.ready.Timers) == 0 {
		c.ready.Timers = nil
	}
	if len(c.ready.Effects) == 0 {
		c.ready.Effects = nil
	}
	return c.ready.Messages == nil && c.ready.Timers == nil && c.ready.Effects == nil
}

// HasReady reports whether Ready has anything to do.
func (c *Core) HasReady() bool { return c.hasReady() }

// Ready returns the effects accumulated since the last call, in order, and
// clears them. Handle it fully before feeding further inputs, then check
// HasReady again: inputs given while handling (ConfirmResult, SendFailed)
// produce more.
func (c *Core) Ready() Ready { return c.takeReady() }

// Role is the role the user sees (see Status.Role).
func (c *Core) Role() Role { return c.visibleRole() }

// Term is the current term.
func (c *Core) Term() uint64 { return c.term }

// Leader is the PID of the leader this member recognises (itself when it
// leads), zero when none — and zero where no visible leader may exist
// (unclustered) or while this member leads without having published it, so
// code that forwards requests to the leader never forwards them to a member
// that will not act on them.
func (c *Core) Leader() gen.PID {
	switch role := c.visibleRole(); {
	case role == RoleUnclustered, role == RoleCandidate && c.role == RoleLeader:
		return gen.PID{}
	}
	return c.leader
}

// IsLeader reports whether this member holds published leadership.
func (c *Core) IsLeader() bool { return c.visibleRole() == RoleLeader }

// EvidenceWindow is how recent a reply must be to count as evidence of
// contact: ElectionTimeoutMin, or two heartbeat intervals when heartbeats
// are not faster than that.
func (c *Core) EvidenceWindow() time.Duration { return c.cfg.evidenceWindow() }

// LeadsAt reports whether this member holds published leadership and, at
// now, still has the quorum evidence its heartbeat tick checks. A leader
// steps down only at a tick, and only once it is stepped: between the
// instant its evidence lapses and that step (its process busy, say),
// another member may already have been elected, so code about to act as
// leader asks this rather than IsLeader. Acknowledgements not yet stepped
// do not count, so it errs towards false.
func (c *Core) LeadsAt(now time.Time) bool {
	return c.IsLeader() && c.quorumReached(now)
}

// IsProtocolLeader reports whether this member leads the election, visibly
// or not.
func (c *Core) IsProtocolLeader() bool { return c.role == RoleLeader }

// FencingToken is the term at which this member holds published leadership,
// zero when it does not. Terms only grow and each has at most one leader per
// cluster, so tokens of successive leaders of a cluster strictly increase.
func (c *Core) FencingToken() uint64 {
	if !c.IsLeader() {
		return 0
	}
	return c.term
}

// View is the latest view this member accepted; ok is false before any. Its
// Members are the core's own, never changed by it: read them, and copy them
// before changing them.
func (c *Core) View() (v View, ok bool) {
	if c.view == nil {
		return View{}, false
	}
	return *c.view, true
}

// viewPeers lists the peers that make up the view: its members, or the
// declared peers before any view exists.
func (c *Core) viewPeers() []*peer {
	var out []*peer
	for _, n := range c.peers.nodes() {
		p := c.peers.get(n)
		if c.view.has(n) || (c.view == nil && p.declared) {
			out = append(out, p)
		}
	}
	return out
}

// Peers lists the PIDs known of the members of the view (the declared
// peers before any view), by node name.
func (c *Core) Peers() []gen.PID {
	var out []gen.PID
	for _, p := range c.viewPeers() {
		if p.pid != (gen.PID{}) {
			out = append(out, p.pid)
		}
	}
	return out
}

// PeerCount is len(Peers()).
func (c *Core) PeerCount() int { return len(c.Peers()) }

// HasPeer reports whether pid is the known PID of a member of the view.
func (c *Core) HasPeer(pid gen.PID) bool {
	p := c.peers.byPID(pid)
	return p != nil && (c.view.has(pid.Node) || (c.view == nil && p.declared))
}

// Members describes every peer this member knows except itself, by node
// name: the members of its view, declared peers, and peers that contacted it.
func (c *Core) Members() []MemberStatus {
	out := make([]MemberStatus, 0, len(c.peers.sorted))
	for _, n := range c.peers.nodes() {
		out = append(out, c.memberStatus(c.peers.get(n)))
	}
	return out
}

// ViewMembers describes the members of the view other than this one (the
// declared peers before any view); Broadcast addresses each by PID when
// known, by name otherwise.
func (c *Core) ViewMembers() []MemberStatus {
	ps := c.viewPeers()
	out := make([]MemberStatus, 0, len(ps))
	for _, p := range ps {
		out = append(out, c.memberStatus(p))
	}
	return out
}

func (c *Core) memberStatus(p *peer) MemberStatus {
	var sendErr error
	if p.sendFailing {
		sendErr = p.lastSendErr()
	}
	ms := MemberStatus{
		Node: p.id.Node, ProcessID: p.id, PID: p.pid, InView: c.view.has(p.id.Node), Declared: p.declared,
		UnreachableSince: c.clock().time(p.unreachableSince), SendError: sendErr, Started: p.started(),
	}
	if c.role == RoleLeader && ms.InView {
		ms.Acked = p.ackedStamp()
		ms.Lags = p.ackedTerm != c.term || p.ackedLineage != c.view.Stamp.Lineage || p.ackedKey != c.view.Stamp.Key
	}
	return ms
}

// ViewSize counts the members of the view, this one included; before any
// view, the declared set.
func (c *Core) ViewSize() int {
	if c.view != nil {
		return c.view.size()
	}
	return c.declaredCount()
}

// Quorum is the majority of ViewSize.
func (c *Core) Quorum() int { return quorum.Majority(c.ViewSize()) }

// VotesGranted counts the votes behind the current or last election this
// member ran, itself included.
func (c *Core) VotesGranted() int { return len(c.lastGranted) }

// HardState is the term, vote and view as they stand.
func (c *Core) HardState() HardState {
	return HardState{Term: c.term, VotedFor: c.votedFor, View: c.view}
}

// Status snapshots everything inspection shows.
func (c *Core) Status(now time.Time) Status {
	s := Status{
		Role:                  c.visibleRole(),
		ProtocolLeader:        c.role == RoleLeader,
		Term:                  c.term,
		VotedFor:              c.votedFor,
		TermChangedAt:         c.clock().time(c.termChangedAt),
		Leader:                c.Leader(),
		LeaderNode:            c.Leader().Node,
		ClusterID:             c.cfg.ClusterID,
		View:                  c.view.detached(),
		Committed:             c.committed,
		Below:                 c.below(),
		Joining:               c.out().stamp.Lineage,
		ViewSize:              c.ViewSize(),
		Quorum:                c.Quorum(),
		MinClusterSize:        c.cfg.MinClusterSize,
		Members:               c.Members(),
		Bootstrap:             slices.Clone(c.cfg.Bootstrap),
		GhostTTL:              c.cfg.GhostTTL,
		VotesGranted:          slices.Clone(c.lastGranted),
		VotesCount:            len(c.lastGranted),
		ElectionTimerArmed:    c.armed[TimerElection],
		ProbeTimerArmed:       c.armed[TimerProbe],
		CampaignHeld:          c.campaignHeld,
		HeartbeatTimerArmed:   c.armed[TimerHeartbeat],
		HeartbeatInLast:       c.clock().time(c.heartbeatInLast),
		HeartbeatOutLast:      c.clock().time(c.heartbeatOutLast),
		ElectionTimeoutMin:    c.cfg.ElectionTimeoutMin,
		ElectionTimeoutMax:    c.cfg.ElectionTimeoutMax,
		HeartbeatInterval:     c.cfg.HeartbeatInterval,
		Dropped:               droppedCopy(c.stats.dropped),
		ConfirmDenied:         c.stats.confirmDenied,
		LastDeniedAt:          c.clock().time(c.stats.lastDeniedAt),
		LastDenyError:         c.few().lastDenied,
		LastBecomeLeaderError: c.few().leaderErr,
		StorageError:          c.few().storageErr,
		Fatal:                 c.few().fatal,
		ElectionsStarted:      c.stats.electionsStarted,
		ElectionsWon:          c.stats.electionsWon,
		LeadershipChanges:     c.stats.leaderChanges,
		Rounds:                c.stats.rounds,
		QuorumLostStepDowns:   c.stats.quorumLost,
		LeaderConflicts:       c.stats.conflicts,
		ViewChanges:           c.stats.viewChanges,
		StaleTimers:           c.stats.staleTimers,
		Started:               c.cfg.Started,
		Prefer:                c.cfg.Prefer.Kind,
		PreferStableFor:       c.cfg.PreferStableFor,
		PreferredTransfers:    c.stats.preferredTransfers,
		FailedHandovers:       c.stats.failedHandovers,
	}
	if c.camp != nil {
		s.PreVoting, s.Formation = c.camp.preVote, c.camp.formation
	}
	if c.lead != nil {
		s.PendingChange = c.lead.change
		s.AwaitingConfirm = c.lead.awaitingConfirm
	}
	for _, n := range c.peers.nodes() {
		if c.peers.get(n).sendFailing {
			s.SendFailingPeers = append(s.SendFailingPeers, n)
		}
	}
	return s
}

// droppedCopy copies the dropped counters for Status: an empty map, never
// nil, while nothing was dropped (the counters are made on first drop).
func droppedCopy(d map[string]uint64) map[string]uint64 {
	if d == nil {
		return map[string]uint64{}
	}
	return maps.Clone(d)
}
