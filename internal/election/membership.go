package election

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/regent-go/regent/gen"
)

// acceptView decides whether to take view v, which a message carried;
// fromLeader says it came from the leader of this member's current term. It
// reports whether v was installed.
//
//   - A newer view of this member's lineage is taken from its leader, and from
//     anyone once agreed (an agreed view's successors are safe to gossip;
//     a proposal not yet agreed is accepted only from the leader of the
//     current term, as an acceptor in Paxos accepts only the current ballot).
//   - The same key with the agreed flag newly set is taken from anyone.
//   - The same key with other members is a fatal error.
//   - A view of another lineage is taken from its leader when this member
//     holds nothing agreed, or, once agreed, only if it includes this member
//     and this member would switch to it (wouldSwitch).
func (c *Core) acceptView(now time.Time, v *View, fromLeader bool) bool {
	if c.role == RoleLeader || c.few().fatal != nil {
		return false
	}
	mine := c.view
	reason := ""
	switch {
	case mine != nil && v.Stamp.Lineage == mine.Stamp.Lineage:
		switch cmp := v.Stamp.Key.Compare(mine.Stamp.Key); {
		case cmp == 0 && !v.sameMembers(mine):
			c.stop(fmt.Errorf("election: two views with one key: %s and %s: %w", mine, v, gen.ErrMalformed))
			return false
		case cmp == 0 && v.Stamp.Agreed && !mine.Stamp.Agreed:
			reason = "the cluster agreed on it"
		case cmp <= 0:
			return false
		case !v.Stamp.Agreed && !fromLeader:
			return false
		default:
			reason = "the leader changed it"
		}
	case v.Stamp.Agreed:
		if !v.has(c.cfg.Self.Node) || !c.wouldSwitch(v.Stamp) {
			return false
		}
		reason = "joined the agreed view of lineage " + v.Stamp.Lineage.String()
	default:
		if !fromLeader || (mine != nil && mine.Stamp.Agreed) {
			return false
		}
		reason = "proposed by a formation"
	}
	c.install(v, reason)
	if c.role == RoleCandidate {
		c.becomeFollower(now, gen.PID{})
	}
	c.camp = nil
	return true
}

// install makes v this member's view, to be persisted before anything is
// acknowledged, and brings the peers and the user up to date.
func (c *Core) install(v *View, reason string) {
	v = c.kept(v)
	old := c.view
	c.view = v
	c.declared = nil // only a member without a view sends it
	c.hardDirty = true
	c.stats.viewChanges++
	c.effect(Effect{Kind: EffectViewChanged, FromView: old, ToView: v, Why: reason})
	for _, m := range v.Members {
		if m.Node != c.cfg.Self.Node {
			c.peers.ensure(m).id = m
		}
	}
	for _, n := range c.peers.nodes() {
		c.syncPeer(c.peers.get(n))
	}
	switch {
	case v.Stamp.Agreed && !c.inView():
		c.outside = &outsideCluster{stamp: v.Stamp, leader: c.out().leader}
	case c.out().stamp.Lineage == v.Stamp.Lineage || c.inView():
		c.outside = nil
	}
	for n := range c.removals {
		if !v.has(n) {
			delete(c.removals, n)
		}
	}
	c.armProbe()
}

// stop ends this member's part in the election after a state the rules rule
// out; it reports the error once and then ignores every input.
func (c *Core) stop(err error) {
	c.more().fatal = err
	c.camp = nil
	c.lead = nil
	c.role = RoleFollower
	c.leader, c.leaderID = gen.PID{}, gen.ProcessID{}
	for k := range timerKinds {
		c.disarm(k)
	}
	c.effect(Effect{Kind: EffectFatal, Err: err})
}

// join declares peer and asks the leader to admit it.
func (c *Core) join(now time.Time, peer gen.ProcessID) error {
	if peer.Name == "" || peer.Node == "" {
		return fmt.Errorf("election: join %s: a peer needs a name and a node: %w", peer, gen.ErrIncorrect)
	}
	if peer.Node == c.cfg.Self.Node {
		return fmt.Errorf("election: join %s: that is this member's own node: %w", peer, gen.ErrIncorrect)
	}
	delete(c.withdrawn, peer.Node)
	delete(c.removals, peer.Node)
	p := c.peers.ensure(peer)
	p.declared = true
	if p.pid == (gen.PID{}) && !c.view.has(peer.Node) {
		p.id = peer
	}
	if !c.view.has(peer.Node) {
		c.requestAdd(now, p)
		c.negotiate(now, p)
	} else if !p.unreachableSince.IsZero() {
		c.negotiate(now, p)
	}
	c.armProbe()
	return nil
}

// requestAdd asks the leader to admit p, or queues it when leading. A peer
// is put forward only once it has answered, so a name that leads nowhere
// never raises the quorum.
func (c *Core) requestAdd(now time.Time, p *peer) {
	switch {
	case c.lead != nil:
		c.queueAdd(now, p.id)
		c.maybeChange(now)
	case p.alive(c.clock().at(now), c.admitWindow()) && c.agreed():
		c.forward(now, MessageMembership{Header: c.hdr(c.term), Add: []gen.ProcessID{p.id}})
	}
}

// leave withdraws node and asks the leader to remove it.
func (c *Core) leave(now time.Time, node gen.Atom) error {
	if node == "" {
		return fmt.Errorf("election: leave: empty node name: %w", gen.ErrIncorrect)
	}
	if node == c.cfg.Self.Node {
		return fmt.Errorf("election: leave %s: a member cannot withdraw itself: %w", node, gen.ErrIncorrect)
	}
	if c.withdrawn == nil {
		c.withdrawn = map[gen.Atom]time.Time{}
	}
	c.withdrawn[node] = now.Add(c.cfg.ElectionTimeoutMax)
	if p := c.peers.get(node); p != nil {
		p.declared = false
	}
	if c.lead != nil {
		delete(c.lead.adds, node)
	}
	if c.view.has(node) {
		c.markRemoval(node)
		c.requestRemove(now, node, "withdrawn by Leave")
	}
	c.armProbe()
	return nil
}

// requestRemove asks the leader to remove node, or queues it when leading.
func (c *Core) requestRemove(now time.Time, node gen.Atom, reason string) {
	if c.lead != nil {
		c.queueRemove(now, node, reason)
		c.maybeChange(now)
		return
	}
	c.forward(now, MessageMembership{Header: c.hdr(c.term), Remove: []gen.Atom{node}})
}

// forward sends a membership request to the leader this member follows, or
// to the leader of the cluster it wants to join.
func (c *Core) forward(now time.Time, m MessageMembership) {
	switch {
	case c.leader != (gen.PID{}) && c.role != RoleLeader:
		c.sendTo(now, c.leader, c.leaderID, m)
	case c.out().leader != (gen.ProcessID{}):
		c.sendByName(c.out().leader, m)
	}
}

// onMembership applies a membership request sent to this member as leader.
func (c *Core) onMembership(now time.Time, m MessageMembership) {
	if c.lead == nil {
		c.drop(dropNotLeader)
		return
	}
	for _, p := range m.Add {
		if p.Name != "" && p.Node != "" {
			c.queueAdd(now, p)
		}
	}
	for _, n := range m.Remove {
		if n != "" {
			c.queueRemove(now, n, fmt.Sprintf("withdrawn by Leave on %s", m.From.Node))
		}
	}
	c.maybeChange(now)
}

func (c *Core) queueAdd(now time.Time, p gen.ProcessID) {
	if p.Node == c.cfg.Self.Node || c.view.has(p.Node) || c.isWithdrawn(p.Node, now) {
		return
	}
	if _, queued := c.lead.adds[p.Node]; !queued {
		if c.lead.adds == nil {
			c.lead.adds = map[gen.Atom]admission{}
		}
		c.lead.adds[p.Node] = admission{id: p, since: now}
	}
	if pe := c.peers.ensure(p); c.clock().time(pe.lastInbound).Before(c.lead.adds[p.Node].since) {
		c.negotiate(now, pe)
	}
	c.armProbe()
}

func (c *Core) queueRemove(now time.Time, node gen.Atom, reason string) {
	delete(c.lead.adds, node)
	if c.view.has(node) {
		c.lead.remove(node, reason)
	}
}

// expireGhosts queues the removal of every member silent for GhostTTL. Only a
// leader does this, so a side that has no leader (a minority) never shrinks
// its view, however long it is cut off.
func (c *Core) expireGhosts(now time.Time) {
	for _, m := range c.view.Members {
		p := c.peers.get(m.Node)
		if m.Node == c.cfg.Self.Node || p == nil || p.silentFor(c.clock(), now) < c.cfg.GhostTTL {
			continue
		}
		if _, queued := c.lead.removes[m.Node]; !queued {
			c.lead.remove(m.Node, fmt.Sprintf("silent for GhostTTL (%s)", c.cfg.GhostTTL))
		}
	}
}

// maybeChange proposes the next membership change: only on an agreed view
// committed in this term, one member at a time, removals first.
func (c *Core) maybeChange(now time.Time) {
	l := c.lead
	if l == nil || !c.agreed() || !l.committedInTerm || c.committed != c.view.Stamp.Key {
		return
	}
	for _, n := range slices.Sorted(maps.Keys(l.removes)) {
		reason := l.removes[n]
		if !c.view.has(n) {
			delete(l.removes, n)
			continue
		}
		if n == c.cfg.Self.Node {
			continue // handed over on the heartbeat tick
		}
		delete(l.removes, n)
		c.propose(now, c.view.without(n, c.nextStamp()), fmt.Sprintf("removed %s: %s", n, reason))
		return
	}
	for _, n := range slices.Sorted(maps.Keys(l.adds)) {
		a := l.adds[n]
		p := c.peers.get(n)
		switch {
		case c.view.has(n) || c.isWithdrawn(n, now):
			delete(l.adds, n)
		case p == nil || c.clock().time(p.lastInbound).Before(a.since) || !p.unreachableSince.IsZero():
			continue // admitted once it answers; probed meanwhile
		default:
			delete(l.adds, n)
			c.propose(now, c.view.with(a.id, c.nextStamp()), fmt.Sprintf("added %s", n))
			return
		}
	}
}

// addsOf lists the admissions a leader waits on; none when not leading.
func (l *leadership) addsOf() map[gen.Atom]admission {
	if l == nil {
		return nil
	}
	return l.adds
}

// admitWindow is how recent a peer's last message must be for a leader to
// admit it: two probe intervals, so a peer that answers probes qualifies and
// one that fell silent does not raise the quorum.
func (c *Core) admitWindow() time.Duration { return 2 * c.probeInterval() }

// nextStamp is the stamp of this leader's next change.
func (c *Core) nextStamp() ViewStamp {
	s := c.view.Stamp
	s.Key = ViewKey{Term: c.term, Epoch: s.Key.Epoch + 1}
	return s
}

// propose makes v this leader's view and sends it at once; it commits when a
// majority of v has acknowledged it.
func (c *Core) propose(now time.Time, v *View, reason string) {
	old := c.view
	c.install(v, reason)
	c.lead.committedInTerm = false
	c.lead.change = reason
	for _, m := range v.Members {
		if !old.has(m.Node) {
			c.peers.get(m.Node).memberSince = c.clock().at(now)
		}
	}
	for _, m := range old.Members {
		if !v.has(m.Node) {
			// Tell the removed member once, so it knows to stop campaigning.
			p := c.peers.get(m.Node)
			c.send(now, p, MessageHeartbeat{Header: c.hdr(c.term), View: v, Committed: c.committed, Sent: int64(c.clock().at(now))})
		}
	}
	c.sendHeartbeats(now)
	c.checkCommit(now)
}

// tidyPeers forgets peers that are neither members, declared, wanted by the
// leader nor heard from within GhostTTL, and expired withdrawals.
func (c *Core) tidyPeers(now time.Time) {
	for n, until := range c.withdrawn {
		if !now.Before(until) {
			delete(c.withdrawn, n)
		}
	}
	for _, n := range c.peers.nodes() {
		p := c.peers.get(n)
		_, wanted := c.lead.addsOf()[n]
		if c.view.has(n) || p.declared || wanted ||
			(c.camp != nil && c.camp.reported[n] != nil) || now.Sub(c.clock().time(p.lastInbound)) < c.cfg.GhostTTL {
			continue
		}
		if p.pid != (gen.PID{}) {
			c.effect(Effect{Kind: EffectDemonitor, PID: p.pid})
		}
		c.peers.remove(n)
	}
}

// needsProbe reports whether someone must be reached out to again.
func (c *Core) needsProbe() bool {
	if len(c.removals) > 0 || c.joining() || (c.lead != nil && len(c.lead.adds) > 0) {
		return true
	}
	for _, n := range c.peers.nodes() {
		if p := c.peers.get(n); c.probeTarget(p) || c.reconnectTarget(p) {
			return true
		}
	}
	return false
}

// joining reports whether this member is outside an agreed cluster it knows.
func (c *Core) joining() bool { return !c.out().stamp.IsZero() }

// probeTarget reports whether p is a declared peer outside the view, not
// withdrawn: it may not know of this member, or may be waiting to be admitted.
func (c *Core) probeTarget(p *peer) bool {
	_, withdrawn := c.withdrawn[p.id.Node]
	return p.declared && !withdrawn && !c.view.has(p.id.Node)
}

// reconnectTarget reports whether p is a member of the view whose connection
// dropped. Followers send each other nothing, and a leader sends it no
// heartbeat (sendHeartbeats), so without a probe a live peer would stay
// unreachable until it campaigned.
func (c *Core) reconnectTarget(p *peer) bool {
	return c.view.has(p.id.Node) && p.cutOff()
}

// onProbeTick reaches out to declared peers outside the view, asks the
// leader to admit this member or the peers that answered, and forwards
// removals not yet applied.
func (c *Core) onProbeTick(now time.Time) {
	c.tidyPeers(now)
	// silent: the tick only reaches out to peers that stay silent.
	silent := !c.joining() && len(c.removals) == 0 && (c.lead == nil || len(c.lead.adds) == 0)
	for _, n := range c.peers.nodes() {
		p := c.peers.get(n)
		if c.reconnectTarget(p) {
			c.negotiate(now, p)
			continue
		}
		if !c.probeTarget(p) {
			continue
		}
		if c.view != nil && p.alive(c.clock().at(now), c.admitWindow()) {
			c.requestAdd(now, p)
			silent = false
		}
		c.negotiate(now, p)
	}
	switch {
	case !silent:
		c.probeBackoff = 0
	case c.probeBackoff < maxProbeBackoff:
		c.probeBackoff++
	}
	if c.lead != nil {
		for _, n := range slices.Sorted(maps.Keys(c.lead.adds)) {
			if p := c.peers.get(n); p != nil && !p.declared {
				c.negotiate(now, p) // an admission asked for by another member
			}
		}
	}
	if c.joining() {
		if c.out().leader != (gen.ProcessID{}) {
			c.sendByName(c.out().leader, MessageMembership{Header: c.hdr(c.term), Add: []gen.ProcessID{c.cfg.Self}})
		}
		// Ask the members we know too, even with a leader named: their
		// refusals name the leader they follow now and carry their term, so
		// a member whose leader lost leadership, or whose requests a newer
		// term drops as stale, catches up instead of asking in vain. The
		// members of the view it holds are asked even before they answered
		// (after a restart nobody has), as nobody need declare this member.
		for _, n := range c.peers.nodes() {
			if p := c.peers.get(n); p.answered || c.view.has(n) {
				c.negotiate(now, p)
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(c.removals)) {
		if !c.view.has(n) {
			delete(c.removals, n)
			continue
		}
		if n == c.cfg.Self.Node && c.lead == nil {
			c.forward(now, MessageMembership{Header: c.hdr(c.term), Remove: []gen.Atom{n}})
			continue
		}
		c.requestRemove(now, n, "withdrawn by Leave")
	}
	c.armProbe()
}

// negotiate opens contact with a peer without spending a vote: a pre-vote
// probe at this member's own term. Its answer admits the peer as known
// whatever its term, names the leader it follows and carries its view.
func (c *Core) negotiate(now time.Time, p *peer) {
	m := MessageRequestVote{Header: c.hdr(c.term), PreVote: true, Sent: int64(c.clock().at(now))}
	if c.view == nil {
		m.Declared = c.declaredSet()
	}
	c.send(now, p, m)
}

// learnLeaderHint follows the leader a refused vote names: a member outside
// a cluster asks that leader to admit it.
func (c *Core) learnLeaderHint(now time.Time, m MessageVote) {
	l := m.Leader
	if l.Node == "" || l.Name == "" || l.Node == c.cfg.Self.Node || c.isWithdrawn(l.Node, now) {
		return
	}
	if c.joining() && (m.Header.View.Lineage == c.out().stamp.Lineage || c.out().leader == (gen.ProcessID{})) {
		if c.out().leader != l {
			c.outside.leader = l // joining: outside is set
			c.sendByName(l, MessageMembership{Header: c.hdr(c.term), Add: []gen.ProcessID{c.cfg.Self}})
		}
	}
}

func (c *Core) peerDown(now time.Time, pid gen.PID, reason error) {
	p := c.peers.byPID(pid)
	if p == nil {
		c.drop(dropUnknownPeer)
		return
	}
	wasLeader := c.role != RoleLeader && c.leader == pid
	noConnection := errors.Is(reason, gen.ErrNoConnection)
	p.setPID(gen.PID{})
	p.unreachableSince = c.clock().at(now)
	p.steadySince = 0
	c.syncPeer(p)
	if c.probeBackoff > 0 {
		// A new loss: reach out at the base interval again, not after the
		// backed-off wait of the silent peers before it.
		c.probeBackoff = 0
		c.disarm(TimerProbe)
	}
	c.armProbe()
	if !noConnection {
		// A real end removes the member at once: now if this member leads,
		// else as soon as its successor's view commits.
		p.setEnded(fmt.Sprintf("its process ended: %v", reason), pid)
		if c.lead != nil {
			c.queueRemove(now, p.id.Node, p.ended())
			c.maybeChange(now)
		}
	}
	if !wasLeader {
		return
	}
	c.recognise(gen.PID{})
	c.leaderHeardAt = 0
	c.deadLeader = p.id.Node
	if c.cfg.fastFailover() && c.mayCampaign() {
		c.next.skipPreVote = !noConnection
		c.armElectionAfter(now, c.rankedFailoverDelay(p.id.Node))
	}
	c.answerDeferred(now)
}

// reform replaces the view with the members this one has heard from lately
// and campaigns with it at once: the operator's way out when a majority of
// the view is gone for good. It breaks the intersection of quorums on
// purpose, so it is never automatic.
func (c *Core) reform(now time.Time) (*View, error) {
	switch {
	case c.few().fatal != nil:
		return nil, fmt.Errorf("election: re-form: this member stopped: %w", c.few().fatal)
	case c.few().storageErr != nil:
		return nil, fmt.Errorf("election: re-form: durable state cannot be written (%v): %w", c.few().storageErr, gen.ErrNotAllowed)
	case c.term >= lastTerm:
		return nil, fmt.Errorf("election: re-form: term %d cannot be incremented: %w", c.term, gen.ErrNotAllowed)
	case c.role == RoleLeader && c.lead.visible:
		return nil, fmt.Errorf("election: re-form: this member leads a working cluster: %w", gen.ErrNotAllowed)
	}
	live := []gen.ProcessID{c.cfg.Self}
	for _, m := range c.ownSet() {
		p := c.peers.get(m.Node)
		if m.Node != c.cfg.Self.Node && p != nil && p.unreachableSince.IsZero() && !p.lastInbound.IsZero() &&
			now.Sub(c.clock().time(p.lastInbound)) < 2*c.cfg.ElectionTimeoutMax {
			live = append(live, m)
		}
	}
	term := c.term + 1
	stamp := ViewStamp{Lineage: Lineage{Term: term, Node: c.cfg.Self.Node}, Key: ViewKey{Term: term, Epoch: 1}, Agreed: true}
	if c.view != nil {
		stamp.Lineage = c.view.Stamp.Lineage
		stamp.Key.Epoch = c.view.Stamp.Key.Epoch + 1
	}
	if c.role == RoleLeader {
		c.becomeFollower(now, gen.PID{})
	}
	v := newView(stamp, live)
	c.install(v, "re-formed by the operator from the members heard from lately")
	c.outside = nil
	c.campaign(now, true)
	return v.detached(), nil
}
