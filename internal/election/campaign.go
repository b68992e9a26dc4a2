package election

import (
	"fmt"
	"slices"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/quorum"
)

// campaign is one election this member runs, a pre-vote round or a real one.
// Everything about it lives here, so ending it is one assignment.
type campaign struct {
	term      uint64 // the term asked about: the next term for a pre-vote
	preVote   bool
	transfer  bool // passes leader stickiness (a handover, a re-formed view)
	formation bool // the candidate holds no agreed view: see formation rules
	// answers: true for a grant, false for a refusal; the first answer of
	// each node counts.
	answers map[gen.Atom]bool
	// reported is, for a formation, the set each granting voter reported:
	// its view's members, or its declared set when it holds no view.
	reported map[gen.Atom][]gen.ProcessID
	// newest is the newest view any granting voter (or this member) holds;
	// a formation re-proposes it instead of a fresh one.
	newest *View
	// holders are, for a formation, the nodes whose answers (grants or
	// refusals) reported holding this member's own view: same lineage, key
	// and members. Each accepted it at that key, which the learner rule
	// counts (learnChosen).
	holders map[gen.Atom]bool
}

// mayCampaign reports whether this member may start an election of its own
// accord: it is not held back by its host's cell, and mayCampaignDirected.
func (c *Core) mayCampaign() bool { return !c.campaignHeld && c.mayCampaignDirected() }

// mayCampaignDirected reports whether this member may campaign when it is
// asked to (a leader handing over, an operator re-forming the view): it is
// not stopped, its term can still grow, and it either belongs to an agreed
// view (a regular election) or may take part in a formation. The same-host
// hold does not apply: it keeps a host's members from racing each other,
// and a directed campaign has one candidate by design.
func (c *Core) mayCampaignDirected() bool {
	switch {
	case c.few().fatal != nil, c.few().storageErr != nil, c.term >= lastTerm:
		return false
	case c.view != nil && c.view.Stamp.Agreed:
		return c.inView()
	}
	return c.mayForm()
}

// mayForm reports whether this member may campaign for a formation: it
// holds no agreed view, knows of no agreed cluster to join instead, belongs
// to the view it holds (if any), and what it would form has at least
// MinClusterSize members.
func (c *Core) mayForm() bool {
	if !c.out().stamp.IsZero() {
		return false
	}
	if c.view != nil {
		return !c.view.Stamp.Agreed && c.inView() && c.view.size() >= c.cfg.MinClusterSize
	}
	return c.declaredCount() >= c.cfg.MinClusterSize
}

// ownSet is what this member reports in a formation: its view's members, or
// its declared set when it holds no view.
func (c *Core) ownSet() []gen.ProcessID {
	if c.view != nil {
		return c.view.Members
	}
	return c.declaredSet()
}

// onElectionTimeout starts an election when the timeout is really due.
func (c *Core) onElectionTimeout(now time.Time) {
	if c.role == RoleLeader {
		return
	}
	if c.role == RoleFollower && !c.electionDue(now) {
		return
	}
	c.tidyPeers(now)
	c.recognise(gen.PID{})
	if !c.mayCampaign() {
		if c.role == RoleCandidate {
			c.becomeFollower(now, gen.PID{})
		}
		c.disarm(TimerElection)
		return
	}
	if c.cfg.preVote() && !c.next.skipPreVote {
		if c.role == RoleCandidate {
			// A candidate whose round timed out stands down and asks first,
			// as any would-be candidate does: pre-voting is not a role.
			c.becomeFollower(now, gen.PID{})
		}
		c.open(now, c.term+1, true, c.next.transfer)
	} else {
		c.campaign(now, c.next.transfer)
	}
	c.next = nextCampaign{}
}

// campaign becomes candidate at the next term, votes for itself and asks for
// votes.
func (c *Core) campaign(now time.Time, transfer bool) {
	if !c.mayCampaign() && !(transfer && c.mayCampaignDirected()) {
		return
	}
	c.setTerm(now, c.term+1)
	c.vote(c.cfg.Self)
	c.leader, c.leaderID = gen.PID{}, gen.ProcessID{}
	c.role = RoleCandidate
	c.stats.electionsStarted++
	c.stats.rounds++
	c.open(now, c.term, false, transfer)
}

// open starts counting a round about term with this member's own grant,
// asks everyone it concerns and arms the retry.
func (c *Core) open(now time.Time, term uint64, preVote, transfer bool) {
	camp := &campaign{
		term: term, preVote: preVote, transfer: transfer, formation: !c.agreed(),
		answers: map[gen.Atom]bool{c.cfg.Self.Node: true},
	}
	if camp.formation {
		camp.reported = map[gen.Atom][]gen.ProcessID{c.cfg.Self.Node: c.ownSet()}
		camp.newest = c.view
		camp.holders = map[gen.Atom]bool{}
	}
	c.camp = camp
	c.endFormationIfAgreed() // the proposer and this member may be enough
	for _, n := range c.electorate() {
		c.ask(now, c.peers.ensure(c.nameOf(n)))
	}
	c.armElection(now)
	c.checkCampaign(now)
}

// electorate lists the nodes an election asks: the view's members, and for
// a formation every node any answer reported.
// It is made in one allocation, sorted and compacted, not through a set:
// an election's burst calls it once per answer.
func (c *Core) electorate() []gen.Atom {
	own := c.ownSet()
	n := len(own)
	if c.camp != nil {
		for _, s := range c.camp.reported {
			n += len(s)
		}
	}
	out := make([]gen.Atom, 0, n)
	add := func(ms []gen.ProcessID) {
		for _, m := range ms {
			if m.Node != c.cfg.Self.Node {
				out = append(out, m.Node)
			}
		}
	}
	add(own)
	if c.camp != nil {
		for _, s := range c.camp.reported {
			add(s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// nameOf finds the registered name of the member on node, from the view,
// the reports of the running formation, or the peers.
func (c *Core) nameOf(node gen.Atom) gen.ProcessID {
	if m, ok := c.view.member(node); ok {
		return m
	}
	if c.camp != nil {
		for _, s := range c.camp.reports() {
			for _, m := range s {
				if m.Node == node {
					return m
				}
			}
		}
	}
	if p := c.peers.get(node); p != nil {
		return p.id
	}
	return gen.ProcessID{Name: c.cfg.Self.Name, Node: node}
}

// ask sends p the running round's request.
func (c *Core) ask(now time.Time, p *peer) {
	camp := c.camp
	m := MessageRequestVote{Header: c.hdr(camp.term), PreVote: camp.preVote, Transfer: camp.transfer, Sent: int64(c.clock().at(now))}
	if camp.formation && c.view == nil {
		m.Declared = c.declaredSet()
	}
	c.send(now, p, m)
}

// checkCampaign acts on a decided election.
func (c *Core) checkCampaign(now time.Time) {
	camp := c.camp
	if camp == nil {
		return
	}
	c.endFormationIfAgreed()
	var won, lost bool
	if camp.formation {
		won = c.formationWon()
	} else {
		won, lost = c.regularResult()
	}
	c.lastGranted = camp.grantedBy()
	switch {
	case won && camp.preVote:
		c.campaign(now, camp.transfer)
	case won:
		c.win(now)
	case lost && camp.preVote:
		c.camp = nil // the armed timer retries
	case lost:
		c.becomeFollower(now, gen.PID{})
	}
}

// reports lists the sets the voters reported in the order of their nodes:
// where two reports name one node differently (a second actor of the
// cluster on it), the first name wins in every run, not the first a map
// happens to yield.
func (camp *campaign) reports() [][]gen.ProcessID {
	var room [8]gen.Atom // a cluster's worth, on the stack
	nodes := room[:0]
	for n := range camp.reported {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	out := make([][]gen.ProcessID, len(nodes))
	for i, n := range nodes {
		out[i] = camp.reported[n]
	}
	return out
}

// grantedBy lists the nodes that granted, sorted.
func (camp *campaign) grantedBy() []gen.Atom {
	granted := 0
	for _, ok := range camp.answers {
		if ok {
			granted++
		}
	}
	out := make([]gen.Atom, 0, granted) // one allocation, of the size kept
	for n, ok := range camp.answers {
		if ok {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// regularResult counts a regular election over the view: won with grants
// from a majority of its members, lost once refusals rule that out.
func (c *Core) regularResult() (won, lost bool) {
	granted, refused := 0, 0
	for _, m := range c.view.Members {
		ok, answered := c.camp.answers[m.Node]
		switch {
		case answered && ok:
			granted++
		case answered:
			refused++
		}
	}
	need := quorum.Majority(c.view.size())
	return granted >= need, c.view.size()-refused < need
}

// formationWon applies the formation rule: at least MinClusterSize grants,
// a majority of every set a granting voter reported and of this member's
// own, and a majority of what would be proposed, which must include this
// member. Losing is left to the timeout: a formation's electorate grows as
// answers report new members.
func (c *Core) formationWon() bool {
	camp := c.camp
	granted := map[gen.Atom]bool{}
	for n, ok := range camp.answers {
		if ok {
			granted[n] = true
		}
	}
	if len(granted) < c.cfg.MinClusterSize {
		return false
	}
	for _, s := range camp.reported {
		if !newView(ViewStamp{}, s).majorityOf(granted) {
			return false
		}
	}
	proposal := c.proposal()
	return proposal.has(c.cfg.Self.Node) && proposal.majorityOf(granted)
}

// proposal is what a formation won now would propose: the newest view a
// granting voter holds, or else a fresh view of every reported member, of a
// lineage this member starts at the campaign's term.
func (c *Core) proposal() *View {
	camp := c.camp
	if camp.newest != nil {
		return camp.newest
	}
	var all []gen.ProcessID
	for _, s := range camp.reports() {
		all = append(all, s...)
	}
	return newView(ViewStamp{Lineage: Lineage{Term: camp.term, Node: c.cfg.Self.Node}, Key: ViewKey{Term: camp.term, Epoch: 1}}, all)
}

// win makes a won real election leadership; a formation first adopts what
// it proposes.
func (c *Core) win(now time.Time) {
	if c.camp.formation {
		p := c.proposal()
		stamp := p.Stamp
		stamp.Agreed = false
		if c.view == nil || stamp != c.view.Stamp || !p.sameMembers(c.view) {
			c.install(c.viewOf(stamp, p.Members), "proposed by a formation this member won")
		}
	}
	c.becomeLeader(now)
}

// onRequestVote answers a vote or pre-vote request.
func (c *Core) onRequestVote(now time.Time, from gen.PID, m MessageRequestVote) {
	p := c.peers.get(from.Node)
	if m.PreVote {
		grant := m.Term > c.term && !c.leaderLive(now) && c.mayVoteFor(m.Header)
		term := c.term
		if grant {
			term = m.Term
			c.yieldFailoverTurn(now)
		}
		c.deferIfLeaderLive(now, from, m, grant)
		c.send(now, p, c.voteMsg(from.Node, grant, true, term, m.Header.View, m.Sent))
		return
	}
	grant := m.Term == c.term && c.role != RoleLeader && !c.sticky(now, m) &&
		(c.votedFor == (gen.ProcessID{}) || c.votedFor == m.From) && c.mayVoteFor(m.Header)
	if grant {
		c.vote(m.From)
		if c.role == RoleFollower {
			c.touchElection(now)
		}
	}
	c.deferIfLeaderLive(now, from, m, grant)
	c.send(now, p, c.voteMsg(from.Node, grant, false, c.term, m.Header.View, m.Sent))
}

// yieldFailoverTurn gives up this member's turn in a fast failover to the
// candidate whose pre-vote it grants: while its leader is known dead and it
// waits its ranked turn (rankedFailoverDelay) without campaigning, it waits
// a full election timeout instead, as it does after granting a vote. Under
// load the granted candidate's real round can take longer than a rank
// step; a member campaigning at its turn meanwhile would split that round's
// votes and cost every member an election timeout. Should the candidate
// fail, the regular timeout still elects.
func (c *Core) yieldFailoverTurn(now time.Time) {
	if c.role == RoleFollower && c.camp == nil && c.deadLeader != "" &&
		c.armed[TimerElection] && !c.electionLazy {
		c.armElection(now)
	}
}

// deferIfLeaderLive keeps a request refused while this member follows a
// live leader. A candidate that learnt of the leader's end a moment before
// this member did would otherwise lose a full election timeout; once this
// member learns it too, it answers the request again (answerDeferred). Only
// the newest such request is kept.
func (c *Core) deferIfLeaderLive(now time.Time, from gen.PID, m MessageRequestVote, granted bool) {
	if !granted && c.role == RoleFollower && c.leaderLive(now) && !m.Transfer {
		c.deferred = &deferredRequest{from: from, msg: m, at: now}
	}
}

// answerDeferred answers the kept request again once this member's leader
// is reported down, as if it had arrived now: a late delivery, which the
// rules admit of any message. A request older than ElectionTimeoutMin is
// dropped: its candidate has moved on.
func (c *Core) answerDeferred(now time.Time) {
	d := c.deferred
	c.deferred = nil
	if d != nil && now.Sub(d.at) < c.cfg.ElectionTimeoutMin {
		c.step(now, d.from, d.msg)
	}
}

// mayVoteFor applies the view rules to a candidate with header h. A member
// holding an agreed view grants only a candidate of the same lineage whose
// view is at least as new and agreed (Raft's up-to-date rule with the view as
// the log); a member holding no view, or one not yet agreed, grants any
// candidate whose view of its own lineage is not older (a promise of a
// formation, reporting what it holds).
func (c *Core) mayVoteFor(h Header) bool {
	if c.view == nil {
		return true
	}
	mine, cand := c.view.Stamp, h.View
	if cand.Lineage == mine.Lineage {
		return cand.Key.Compare(mine.Key) >= 0 && (cand.Agreed || !mine.Agreed)
	}
	return !mine.Agreed
}

// voteMsg builds an answer to a candidate whose view is stamped cand. A
// refusal names the leader; the voter's whole view goes with it when the
// candidate lacks it, and a formation grant reports the voter's view or
// declared set. It echoes sent, the request's Sent.
func (c *Core) voteMsg(to gen.Atom, granted, preVote bool, term uint64, cand ViewStamp, sent int64) MessageVote {
	v := MessageVote{Header: c.hdr(term), Granted: granted, PreVote: preVote, Echo: sent}
	if !granted {
		v.Leader = c.leaderID
		if c.role == RoleLeader {
			v.Leader = c.cfg.Self
		}
	}
	formation := !cand.Agreed
	switch {
	case c.view != nil && (formation || cand.Lineage != c.view.Stamp.Lineage || cand.Key.Compare(c.view.Stamp.Key) < 0 ||
		c.view.Stamp.Agreed != cand.Agreed):
		v.View = c.view
	case c.view == nil && formation && granted:
		v.Declared = c.declaredSet()
	}
	return v
}

// onVote counts an answer to the running election, and learns from any
// answer: the leader a refusal names, a newer view it carries.
func (c *Core) onVote(now time.Time, from gen.PID, m MessageVote) {
	c.learnLeaderHint(now, m)
	if m.View != nil && c.acceptView(now, m.View, false) {
		return
	}
	camp := c.camp
	if camp == nil || m.PreVote != camp.preVote {
		return
	}
	if m.Granted && m.Term != camp.term {
		return
	}
	if _, answered := camp.answers[from.Node]; answered {
		return
	}
	if !camp.formation && !c.view.has(from.Node) {
		c.drop(dropNotVoter)
		return
	}
	if !m.Granted && c.deadLeader != "" && m.Leader.Node == c.deadLeader {
		return // not told of the end yet: its real answer follows once it is
	}
	camp.answers[from.Node] = m.Granted
	if camp.formation && m.Granted {
		c.noteReport(now, from.Node, m)
	}
	if camp.formation && c.holds(m.View) {
		camp.holders[from.Node] = true
	}
	c.checkCampaign(now)
}

// holds reports whether v, a view a voter reported as the one it holds, is
// this member's own view: same lineage, same key, same members. The agreed
// flag may differ: it says what the holder knows, not what it accepted.
func (c *Core) holds(v *View) bool {
	return v != nil && c.view != nil && v.Stamp.Lineage == c.view.Stamp.Lineage &&
		v.Stamp.Key == c.view.Stamp.Key && v.sameMembers(c.view)
}

// endFormationIfAgreed turns a running formation into a regular election
// once this member's own view is agreed: it learnt so from a header
// (learnAgreed) or by the learner rule (learnChosen). Every grant the
// formation counted is one a regular election would count too (a voter's
// rule only widens for an agreed candidate, R2), and from here the
// within-lineage rules apply: a majority of the view wins (R3).
func (c *Core) endFormationIfAgreed() {
	camp := c.camp
	if camp == nil || !camp.formation {
		return
	}
	c.learnChosen()
	if c.agreed() {
		camp.formation = false
	}
}

// learnChosen is the learner rule (R13). A first view is chosen once at
// least MinClusterSize of its members, a majority of it, accepted it at one
// key (R9: what the leader that proposed it counts before it says
// "agreed"). A formation candidate counts, among the members of the view it
// holds: itself; every voter whose answer in this round reported holding
// the same view at the same key (holders); and the proposer of a fresh
// first view, identified by its stamp (lineage term equal to the key's
// term, epoch 1: only the node that lineage names creates it, by winning
// that term, and it holds the view, persisted, before any member can
// accept it). A re-proposed view names no proposer, so its proposer is not
// counted. When the count reaches the rule's figure, this member marks its
// view agreed, as if the proposer's agreed flag had reached it.
func (c *Core) learnChosen() {
	v := c.view
	if c.camp == nil || v == nil || v.Stamp.Agreed || !c.inView() {
		return
	}
	accepted := map[gen.Atom]bool{c.cfg.Self.Node: true}
	for n := range c.camp.holders {
		if v.has(n) {
			accepted[n] = true
		}
	}
	if p := v.Stamp.Lineage; p.Term == v.Stamp.Key.Term && v.Stamp.Key.Epoch == 1 && v.has(p.Node) {
		accepted[p.Node] = true
	}
	if len(accepted) < c.cfg.MinClusterSize || !v.majorityOf(accepted) {
		return
	}
	stamp := v.Stamp
	stamp.Agreed = true
	c.install(c.viewOf(stamp, v.Members), fmt.Sprintf("chosen: %d members accepted it at %s", len(accepted), v.Stamp.Key))
}

// noteReport records what a formation grant reported and asks any member it
// names that has not been asked yet.
func (c *Core) noteReport(now time.Time, voter gen.Atom, m MessageVote) {
	camp := c.camp
	before := c.electorate()
	switch {
	case m.View != nil:
		camp.reported[voter] = m.View.Members
		if camp.newest == nil || m.View.Stamp.Key.Compare(camp.newest.Stamp.Key) > 0 {
			camp.newest = m.View
		}
	default:
		camp.reported[voter] = m.Declared // never changed, as a view's members
	}
	for _, n := range c.electorate() {
		if _, ok := slices.BinarySearch(before, n); !ok {
			c.ask(now, c.peers.ensure(c.nameOf(n)))
		}
	}
}
