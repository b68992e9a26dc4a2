package election

import (
	"fmt"
	"time"

	"github.com/regent-go/regent/gen"
)

// Core is one member's election state machine. It has no lock: the goroutine
// of the process that embeds it (or the simulator) owns it and every call.
type Core struct {
	// cfg.Origin, never zero here, is what its clock counts from.
	cfg  Config
	self gen.PID

	// Durable state: what HardState carries.
	term     uint64
	votedFor gen.ProcessID
	// view is the latest view this member accepted, committed or not; nil
	// before it took part in a formation. Voting, candidacy and every
	// comparison use it.
	view          *View
	termChangedAt instant
	// store holds the views and leadership this member keeps, made with
	// the Core: see memberStore. Nil in a clone, which makes them as it
	// goes.
	store *memberStore

	// role is the protocol role: follower, candidate or leader. What the user
	// sees (Role) also depends on the view and on confirmation.
	role          Role
	leader        gen.PID       // the leader recognised at term; self when leading
	leaderID      gen.ProcessID // its name
	leaderHeardAt instant       // last heartbeat from a live leader, for stickiness
	// committed is the newest view key known committed: computed when
	// leading, told by heartbeats when following.
	committed ViewKey

	peers peerTable
	// withdrawn holds the nodes Leave withdrew, until the end of their
	// sticky period: they are neither probed nor admitted meanwhile.
	withdrawn map[gen.Atom]time.Time
	// removals are nodes Leave asked to remove, forwarded to the leader until
	// the view no longer holds them. Both maps are made on first write
	// (markRemoval): most members never withdraw anyone.
	removals map[gen.Atom]bool
	// outside is the agreed cluster this member has heard of without being in
	// its view: it asks that cluster's leader to admit it instead of forming
	// a cluster of its own. Nil when none, as for most members; read it
	// through out.
	outside *outsideCluster

	camp *campaign   // the running election; nil when none
	lead *leadership // set while leading
	// deadLeader is the node of the leader whose end this member learned of,
	// until a leader is recognised again: a refusal that names it comes from
	// a voter not told yet, and will be followed by its real answer.
	deadLeader gen.Atom
	// deferred is the last vote request refused only because this member's
	// leader was live; it is answered again if that leader is reported down
	// soon after (see deferIfLeaderLive).
	deferred *deferredRequest

	// The flags and small fields below sit together so that they share one
	// word: every member holds a Core, and at most 888 bytes (with the
	// allocator's 8-byte header) fit an 896-byte allocation instead of a
	// 1,024-byte one (TestCoreFitsItsAllocation).
	hardDirty bool // term, vote or view changed since the last Ready
	next      nextCampaign
	// campaignHeld: another member on this host holds the same-host cell, so
	// this one votes and follows but starts no election (SetCampaign).
	campaignHeld bool
	// hostShortcut: the shell drives SetCampaign, so one member per host campaigns.
	hostShortcut bool
	// probeBackoff counts the probe ticks in a row that only reached out to
	// peers that stay silent (cut off, or declared and never answering):
	// each doubles the wait for the next, up to maxProbeBackoff times.
	probeBackoff uint8
	// electionLazy: a heartbeat moves electionStart without re-arming the
	// election timer (see electionStart).
	electionLazy bool
	// armed says whether each timer kind is armed, at generation timers.
	armed [timerKinds]bool

	// reported is the role and leader the user was last told of, so
	// callbacks fire on changes only.
	reported reportedState
	// rare holds what a member needs only once a confirmation was denied,
	// a callback or a write failed, or it handed leadership over; nil
	// until then (more, few).
	rare *coreRare

	// timers is the generation of each kind's latest arming; whether it is
	// armed is among the flags above, not beside it in an array of pairs
	// padded to 16 bytes each.
	timers [timerKinds]uint64
	// The election timeout runs from electionStart for electionWait; with
	// electionLazy a heartbeat moves the start without re-arming the timer.
	electionStart instant
	electionWait  time.Duration
	ready         Ready

	heartbeatInLast  instant
	heartbeatOutLast instant
	lastGranted      []gen.Atom
	stats            counters
	// declared is the declared set declaredSet last made, handed out again
	// while it stands: a member without a view sends it to every peer it
	// asks, and it seldom changes; dropped once a view is installed. Never
	// changed once made (messages and clones share it).
	declared []gen.ProcessID
}

// coreRare is what a Core keeps of rare events: behind a pointer, made on
// first use, so that a Core fits a smaller allocation (every member holds
// one). Its fields are read through few and written through more.
type coreRare struct {
	handover   handoverState
	denials    int   // consecutive confirmation denials
	lastDenied error // the error of the last denial, nil for a plain false
	leaderErr  error // what HandleBecomeLeader last failed with
	// storageErr is set while the durable state cannot be written: the
	// member then votes for nobody and leads nothing.
	storageErr error
	// fatal is set once the member met a state the protocol rules out; it
	// then ignores every input.
	fatal error
}

// more returns the rare fields to write, made on first use.
func (c *Core) more() *coreRare {
	if c.rare == nil {
		c.rare = new(coreRare)
	}
	return c.rare
}

// few returns the rare fields to read: their zero values while none is
// made. What it returns must not be written: it may be noRare, which every
// Core shares.
func (c *Core) few() *coreRare {
	if c.rare == nil {
		return &noRare
	}
	return c.rare
}

// noRare is the rare fields of every Core that made none. Never written.
var noRare coreRare

// counters are the totals Status reports.
type counters struct {
	dropped            map[string]uint64
	confirmDenied      uint64
	lastDeniedAt       instant
	electionsStarted   uint64
	electionsWon       uint64
	leaderChanges      uint64
	rounds             uint64 // campaigns since a leader was last known
	quorumLost         uint64
	conflicts          uint64
	staleTimers        uint64
	preferredTransfers uint64
	viewChanges        uint64
	failedHandovers    uint64
}

// nextCampaign shapes the next election timeout's campaign.
type nextCampaign struct {
	skipPreVote bool // campaign at once (the leader is known dead)
	transfer    bool // pass leader stickiness (the operator re-formed the view)
}

// deferredRequest is a vote request kept to be answered again.
type deferredRequest struct {
	from gen.PID
	msg  MessageRequestVote
	at   time.Time
}

// outsideCluster is an agreed cluster this member is not part of.
type outsideCluster struct {
	stamp  ViewStamp
	leader gen.ProcessID // its leader, when someone named it
}

// Reasons a message or input is dropped, as counted in Status.Dropped.
const (
	dropUnknownMessage = "unknown_message"
	dropClusterID      = "cluster_mismatch"
	dropStaleTerm      = "stale_term"
	dropWithdrawn      = "withdrawn_peer"
	dropMalformed      = "malformed_sender"
	dropMalformedView  = "malformed_view"
	dropSelf           = "from_self"
	dropUnexpected     = "unexpected_message"
	dropStaleConfirm   = "stale_confirm"
	dropTwoLeaders     = "conflicting_leader"
	dropUnknownPeer    = "unknown_peer"
	dropNotVoter       = "not_a_voter"
	dropForeign        = "foreign_cluster"
	dropDuplicate      = "duplicate_member"
	dropTermExhausted  = "term_exhausted"
	dropNotLeader      = "not_leader"
	dropStorage        = "storage_failing"
	dropFatal          = "stopped"
)

func newCore(cfg Config, self gen.PID, hs HardState, now time.Time, room Ready) (*Core, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if self == (gen.PID{}) || self.Node != cfg.Self.Node {
		return nil, fmt.Errorf("election: self PID %s must be on node %s: %w", self, cfg.Self.Node, gen.ErrIncorrect)
	}
	switch {
	case cfg.Origin.IsZero():
		cfg.Origin = now
	case cfg.Origin.After(now):
		return nil, fmt.Errorf("election: clock origin %s is after the time the member is made, %s: %w", cfg.Origin, now, gen.ErrIncorrect)
	}
	if hs.Term > lastTerm {
		return nil, fmt.Errorf("election: stored term %d cannot be incremented; the cluster could never elect again: %w", hs.Term, gen.ErrIncorrect)
	}
	if hs.View != nil && !validView(hs.View) {
		return nil, fmt.Errorf("election: stored view is malformed (%s): %w", hs.View, gen.ErrMalformed)
	}
	c := &Core{
		cfg:      cfg,
		self:     self,
		role:     RoleFollower,
		term:     hs.Term,
		votedFor: hs.VotedFor,
		view:     hs.View,
		peers:    newPeerTable(cfg.Self.Node, cfg.Bootstrap, hs.View.members()),
		store:    newMemberStore(),
	}
	c.Lend(room.Messages, room.Timers, room.Effects)
	for _, p := range cfg.Bootstrap {
		if p.Node != cfg.Self.Node {
			c.peers.ensure(p).declared = true
		}
	}
	for _, m := range c.view.members() {
		if m.Node != cfg.Self.Node {
			c.peers.ensure(m)
		}
	}
	if c.view != nil && c.view.Stamp.Agreed && !c.inView() {
		// Removed before it stopped: it asks that cluster to admit it again,
		// as it would had it learned of its removal now.
		c.outside = &outsideCluster{stamp: c.view.Stamp}
	}
	c.termChangedAt = c.clock().at(now)
	c.reported = reportedState{role: c.visibleRole()}
	c.armCampaign(now)
	c.armProbe()
	return c, nil
}

// out is the agreed cluster this member is outside of; zero when none.
func (c *Core) out() outsideCluster {
	if c.outside == nil {
		return outsideCluster{}
	}
	return *c.outside
}

// members lists v's members; nil for no view.
func (v *View) members() []gen.ProcessID {
	if v == nil {
		return nil
	}
	return v.Members
}

// drop counts an input dropped for reason; the map is made on first use.
func (c *Core) drop(reason string) {
	if c.stats.dropped == nil {
		c.stats.dropped = map[string]uint64{}
	}
	c.stats.dropped[reason]++
}

// markRemoval records node among the removals Leave asked for.
func (c *Core) markRemoval(node gen.Atom) {
	if c.removals == nil {
		c.removals = map[gen.Atom]bool{}
	}
	c.removals[node] = true
}

func (c *Core) effect(e Effect) { c.ready.Effects = append(c.ready.Effects, e) }

// send queues msg for p and records the attempt as evidence until reported failed.
func (c *Core) send(now time.Time, p *peer, msg any) {
	p.lastSend = c.clock().at(now)
	p.sendFailing = false
	c.ready.Messages = append(c.ready.Messages, p.target(msg))
}

// sendTo addresses a process that may not be a known peer (a stale sender).
func (c *Core) sendTo(now time.Time, pid gen.PID, id gen.ProcessID, msg any) {
	if p := c.peers.get(id.Node); p != nil {
		c.send(now, p, msg)
		return
	}
	c.ready.Messages = append(c.ready.Messages, Outbound{To: pid, ToName: id, Message: msg})
}

// sendByName sends to a process by its registered name.
func (c *Core) sendByName(id gen.ProcessID, msg any) {
	c.ready.Messages = append(c.ready.Messages, Outbound{ToName: id, Message: msg})
}

// hdr is this member's Header at term.
func (c *Core) hdr(term uint64) Header {
	h := Header{ClusterID: c.cfg.ClusterID, Term: term, From: c.cfg.Self, Started: startedNanos(c.cfg.Started)}
	if c.view != nil {
		h.View = c.view.Stamp
	}
	return h
}

// setTerm moves to a newer term, clearing the vote.
func (c *Core) setTerm(now time.Time, term uint64) {
	c.term = term
	c.votedFor = gen.ProcessID{}
	c.termChangedAt = c.clock().at(now)
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
	return !c.leaderHeardAt.IsZero() && c.clock().at(now).Sub(c.leaderHeardAt) < c.cfg.ElectionTimeoutMin
}

// inView reports whether this member belongs to the view it holds.
func (c *Core) inView() bool { return c.view.has(c.cfg.Self.Node) }

// agreed reports whether this member holds an agreed view it belongs to.
func (c *Core) agreed() bool { return c.view != nil && c.view.Stamp.Agreed && c.inView() }

// declaredSet lists this member, the peers it declared and the peers that
// contacted it (the document's view: "a node that sends a valid message is a
// member"), none withdrawn: what a formation would be made of. It is a
// local belief only; a formation's safety rests on its grants.
func (c *Core) declaredSet() []gen.ProcessID {
	if c.declaredStands() {
		return c.declared
	}
	out := make([]gen.ProcessID, 1, 1+len(c.peers.list))
	out[0] = c.cfg.Self
	for i, n := range c.peers.nodes() {
		if p := c.peers.list[i]; c.declaredPeer(n, p) {
			out = append(out, p.id)
		}
	}
	c.declared = out
	return out
}

// declaredStands reports whether c.declared is the declared set now.
func (c *Core) declaredStands() bool {
	d := c.declared
	if len(d) == 0 || d[0] != c.cfg.Self {
		return false
	}
	j := 1
	for i, n := range c.peers.nodes() {
		if p := c.peers.list[i]; c.declaredPeer(n, p) {
			if j == len(d) || d[j] != p.id {
				return false
			}
			j++
		}
	}
	return j == len(d)
}

// declaredCount is len(declaredSet()), without making the set: members
// without a view ask it after every input.
func (c *Core) declaredCount() int {
	count := 1
	for i, n := range c.peers.nodes() {
		if c.declaredPeer(n, c.peers.list[i]) {
			count++
		}
	}
	return count
}

// declaredPeer reports whether p, on node n, belongs to the declared set.
func (c *Core) declaredPeer(n gen.Atom, p *peer) bool {
	return (p.declared || p.answered) && c.withdrawn[n].IsZero()
}

func (c *Core) takeReady() Ready {
	rd := c.ready
	if c.hardDirty {
		rd.HardState = &HardState{Term: c.term, VotedFor: c.votedFor, View: c.view}
		c.hardDirty = false
	}
	c.ready = Ready{}
	return rd
}

func (c *Core) hasReady() bool {
	return c.hardDirty || len(c.ready.Messages) > 0 || len(c.ready.Timers) > 0 || len(c.ready.Effects) > 0
}
