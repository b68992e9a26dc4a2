package election

import (
	"encoding/binary"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/regent-go/regent/gen"
)

// This file is support for tools that branch a whole cluster (the model
// checker in testing/modelcheck): Clone copies a Core, AppendStateKey
// encodes what of it can change its behaviour. Both must follow every field
// of Core and of the structs it holds; clone_test.go lists each field with
// how it is copied and keyed, and fails when one is added without being
// listed.

// Clone returns a copy of c that shares no mutable memory with it: feeding
// both the same inputs gives the same outputs, and neither sees the other's
// changes. A *rand.Rand hides its source, so the Core cannot copy it: r
// becomes the clone's Config.Rand, and for the clone to draw what c would, r
// must read a copy of the source c reads (math/rand/v2's PCG and ChaCha8
// copy through MarshalBinary and UnmarshalBinary; a PCG also by value). A nil
// r shares c's Rand, which is right only when one of the two is never used
// again. Config.Prefer.Less is shared: it must be a pure function.
func (c *Core) Clone(r *rand.Rand) *Core {
	n := *c // every value field; the fields below hold shared memory
	if r != nil {
		n.cfg.Rand = r
	}
	n.cfg.Bootstrap = slices.Clone(c.cfg.Bootstrap)
	n.view = c.view // immutable: see View
	n.store = nil   // its taken slots are immutable views; the clone makes its own
	if c.outside != nil {
		o := *c.outside
		n.outside = &o
	}
	n.peers = c.peers.clone()
	n.withdrawn = maps.Clone(c.withdrawn)
	n.removals = maps.Clone(c.removals)
	n.camp = c.camp.clone()
	n.lead = c.lead.clone()
	if c.rare != nil {
		r := *c.rare
		r.handover.avoid = maps.Clone(c.rare.handover.avoid)
		n.rare = &r
	}
	n.ready = c.ready.clone()
	n.lastGranted = slices.Clone(c.lastGranted)
	n.stats.dropped = maps.Clone(c.stats.dropped)
	n.deferred = c.deferred.clone()
	return &n
}

func (d *deferredRequest) clone() *deferredRequest {
	if d == nil {
		return nil
	}
	n := *d
	n.msg.Declared = slices.Clone(d.msg.Declared)
	return &n
}

// appendKey encodes the kept request when answerDeferred would still answer
// it at now; an expired one is as good as none.
func (d *deferredRequest) appendKey(b []byte, cfg Config, now time.Time) []byte {
	live := d != nil && now.Sub(d.at) < cfg.ElectionTimeoutMin
	b = appendBools(b, live)
	if !live {
		return b
	}
	m := d.msg
	b = appendPID(b, d.from)
	b = binary.AppendUvarint(b, m.Term)
	b = appendProcessID(b, m.From)
	b = binary.AppendVarint(b, m.Started)
	b = appendStamp(b, m.View)
	b = appendBools(b, m.PreVote, m.Transfer)
	b = binary.AppendVarint(b, m.Sent) // the candidate's clock: echoed as it is
	return appendMembers(b, m.Declared)
}

func (t peerTable) clone() peerTable {
	n := peerTable{sorted: slices.Clone(t.sorted), list: make([]*peer, len(t.list))}
	copies := make([]peer, len(t.list)) // one allocation for all
	for i, p := range t.list {
		copies[i] = *p // a peer holds values, and rare
		if p.rare != nil {
			r := *p.rare
			copies[i].rare = &r
		}
		n.list[i] = &copies[i]
	}
	return n
}

func (camp *campaign) clone() *campaign {
	if camp == nil {
		return nil
	}
	n := *camp
	n.answers = maps.Clone(camp.answers)
	n.reported = maps.Clone(camp.reported) // the sets are never changed: reported views' members, or declared sets
	// newest is immutable: see View
	n.holders = maps.Clone(camp.holders)
	return &n
}

func (l *leadership) clone() *leadership {
	if l == nil {
		return nil
	}
	n := *l
	n.adds = maps.Clone(l.adds)
	n.removes = maps.Clone(l.removes)
	return &n
}

func (r Ready) clone() Ready {
	n := Ready{
		Messages: slices.Clone(r.Messages),
		Timers:   slices.Clone(r.Timers),
		Effects:  slices.Clone(r.Effects),
	}
	if r.HardState != nil {
		hs := *r.HardState // its View is immutable: see View
		n.HardState = &hs
	}
	return n
}

// AppendStateKey appends to b a canonical encoding of c's protocol state as
// its owner sees it at now, and returns the extended slice. Two cores of the
// same Config with equal keys take the same decisions on the same inputs
// given at now, except for timestamps: the key holds no absolute time, only
// whether each timestamp is set and the predicates the core evaluates on it
// at now (a live leader, a member reached within the evidence window, alive
// enough to admit, silent past GhostTTL, a withdrawal standing, an election
// timeout due, a denial still declining) and the orders it compares
// timestamps in (which member answered last, whether an admitted peer
// answered since it was asked for). Also left out: Config (fixed for a
// member's life), the random source, timer generations (the current one is
// always the one armed), statistics, texts that only explain (reasons,
// errors) and what only inspection shows. Merging cores that differ only
// there is the model checker's abstraction. Call it with Ready drained.
func (c *Core) AppendStateKey(b []byte, now time.Time) []byte {
	b = appendPID(b, c.self)
	b = append(b, byte(c.role))
	b = binary.AppendUvarint(b, c.term)
	b = appendProcessID(b, c.votedFor)
	b = appendView(b, c.view)
	b = appendPID(b, c.leader)
	b = appendProcessID(b, c.leaderID)
	b = appendKey(b, c.committed)
	b = appendStamp(b, c.out().stamp)
	b = appendProcessID(b, c.out().leader)
	b = append(b, byte(c.reported.role))
	b = appendPID(b, c.reported.leader)
	b = binary.AppendUvarint(b, uint64(c.few().denials))
	b = appendBools(b, c.hardDirty, !c.leaderHeardAt.IsZero(), c.leaderLive(now),
		c.next.skipPreVote, c.next.transfer, c.campaignHeld, c.hostShortcut,
		c.declines(now), c.few().storageErr != nil, c.few().fatal != nil,
		!c.electionStart.IsZero(), !c.electionStart.IsZero() && !now.Before(c.clock().time(c.electionStart).Add(c.electionWait)),
		c.electionLazy, c.hasReady())
	for _, armed := range c.armed {
		b = appendBools(b, armed)
	}
	b = c.peers.appendKey(b, c.cfg, c.clock(), now)
	b = c.appendRecency(b)
	b = appendNodes(b, standing(c.withdrawn, now))
	b = appendNodes(b, slices.Sorted(maps.Keys(c.removals)))
	b = c.camp.appendKey(b)
	b = c.lead.appendKey(b, c.peers, c.clock(), c.clock().at(now), c.cfg.evidenceWindow())
	b = appendString(b, string(c.deadLeader))
	b = c.deferred.appendKey(b, c.cfg, now)
	return c.few().handover.appendKey(b, c.cfg, now)
}

func (t peerTable) appendKey(b []byte, cfg Config, k clock, now time.Time) []byte {
	at := k.at(now)
	window := cfg.evidenceWindow()
	admit := 2 * cfg.ElectionTimeoutMax // Core.admitWindow
	b = binary.AppendUvarint(b, uint64(len(t.sorted)))
	for i, node := range t.sorted {
		p := t.list[i]
		b = appendString(b, string(node))
		b = appendProcessID(b, p.id)
		b = appendPID(b, p.pid)
		b = binary.AppendVarint(b, p.startedNanos)
		b = appendStamp(b, p.ackedStamp())
		b = binary.AppendUvarint(b, p.ackedTerm)
		b = appendPID(b, p.endedPID())
		b = appendPID(b, p.reportedPID())
		b = appendBools(b, p.declared, p.answered, !p.unreachableSince.IsZero(),
			!p.lastInbound.IsZero(), !p.lastReply.IsZero(), !p.lastSend.IsZero(), p.sendFailing,
			!p.steadySince.IsZero(), !p.steadySince.IsZero() && at.Sub(p.steadySince) >= cfg.PreferStableFor,
			!p.memberSince.IsZero(), p.ended() != "", p.declines, p.inboundSinceReply,
			p.reached(EvidenceContact, at, window), p.reached(EvidenceReplies, at, window),
			!p.lastReply.IsZero() && at.Sub(p.lastReply) < window,
			p.alive(at, admit), now.Sub(k.time(p.lastInbound)) < cfg.GhostTTL,
			p.silentFor(k, now) >= cfg.GhostTTL)
	}
	return b
}

// appendRecency encodes the order of the peers by their last answer, as a
// leader choosing whom to hand over to compares them: each peer's rank,
// equal times sharing one.
func (c *Core) appendRecency(b []byte) []byte {
	at := func(p *peer) time.Time { return latest(c.clock().time(p.lastReply), c.clock().time(p.lastInbound)) }
	order := slices.Clone(c.peers.sorted)
	slices.SortStableFunc(order, func(x, y gen.Atom) int {
		return at(c.peers.get(y)).Compare(at(c.peers.get(x)))
	})
	rank := 0
	for i, node := range order {
		if i > 0 && !at(c.peers.get(node)).Equal(at(c.peers.get(order[i-1]))) {
			rank++
		}
		b = appendString(b, string(node))
		b = binary.AppendUvarint(b, uint64(rank))
	}
	return b
}

func (camp *campaign) appendKey(b []byte) []byte {
	if camp == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	b = binary.AppendUvarint(b, camp.term)
	b = appendBools(b, camp.preVote, camp.transfer, camp.formation)
	b = binary.AppendUvarint(b, uint64(len(camp.answers)))
	for _, node := range slices.Sorted(maps.Keys(camp.answers)) {
		b = appendBools(appendString(b, string(node)), camp.answers[node])
	}
	b = binary.AppendUvarint(b, uint64(len(camp.reported)))
	for _, node := range slices.Sorted(maps.Keys(camp.reported)) {
		b = appendString(b, string(node))
		b = appendMembers(b, camp.reported[node])
	}
	b = appendView(b, camp.newest)
	b = binary.AppendUvarint(b, uint64(len(camp.holders)))
	for _, node := range slices.Sorted(maps.Keys(camp.holders)) {
		b = appendString(b, string(node))
	}
	return b
}

// appendKey encodes a leadership; peers tell whether each admission's peer
// answered since it was asked for, the only way its time is read, and a
// late confirmation is keyed as awaiting answers at now or not.
func (l *leadership) appendKey(b []byte, peers peerTable, k clock, now instant, window time.Duration) []byte {
	if l == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	b = appendBools(b, l.committedInTerm, l.awaitingConfirm, l.visible, !l.confirmedLate.IsZero(), l.awaitsAnswers(now, window))
	b = binary.AppendUvarint(b, uint64(len(l.adds)))
	for _, node := range slices.Sorted(maps.Keys(l.adds)) {
		a := l.adds[node]
		p := peers.get(node)
		b = appendProcessID(b, a.id)
		b = appendBools(b, p != nil && !k.time(p.lastInbound).Before(a.since))
	}
	return appendNodes(b, slices.Sorted(maps.Keys(l.removes)))
}

func (h handoverState) appendKey(b []byte, cfg Config, now time.Time) []byte {
	b = appendString(b, string(h.target))
	b = appendBools(b, !h.leadingSince.IsZero(), !h.leadingSince.IsZero() && now.Sub(h.leadingSince) >= cfg.ElectionTimeoutMax)
	b = binary.AppendUvarint(b, uint64(len(h.avoid)))
	for _, node := range slices.Sorted(maps.Keys(h.avoid)) {
		a := h.avoid[node]
		b = appendString(b, string(node))
		b = binary.AppendUvarint(b, uint64(a.failures))
		b = appendBools(b, now.Before(a.until))
	}
	return b
}

// standing lists, sorted, the nodes whose deadline in m is after now.
func standing(m map[gen.Atom]time.Time, now time.Time) []gen.Atom {
	var out []gen.Atom
	for node, until := range m {
		if now.Before(until) {
			out = append(out, node)
		}
	}
	slices.Sort(out)
	return out
}

func appendView(b []byte, v *View) []byte {
	if v == nil {
		return append(b, 0)
	}
	return appendMembers(appendStamp(append(b, 1), v.Stamp), v.Members)
}

func appendStamp(b []byte, s ViewStamp) []byte {
	b = binary.AppendUvarint(b, s.Lineage.Term)
	b = appendString(b, string(s.Lineage.Node))
	b = appendKey(b, s.Key)
	return appendBools(b, s.Agreed)
}

func appendKey(b []byte, k ViewKey) []byte {
	return binary.AppendUvarint(binary.AppendUvarint(b, k.Term), k.Epoch)
}

func appendMembers(b []byte, members []gen.ProcessID) []byte {
	b = binary.AppendUvarint(b, uint64(len(members)))
	for _, m := range members {
		b = appendProcessID(b, m)
	}
	return b
}

func appendNodes(b []byte, nodes []gen.Atom) []byte {
	b = binary.AppendUvarint(b, uint64(len(nodes)))
	for _, n := range nodes {
		b = appendString(b, string(n))
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendPID(b []byte, p gen.PID) []byte {
	b = appendString(b, string(p.Node))
	b = binary.AppendUvarint(b, p.ID)
	return binary.AppendVarint(b, p.Creation)
}

func appendProcessID(b []byte, p gen.ProcessID) []byte {
	return appendString(appendString(b, string(p.Name)), string(p.Node))
}

// appendBools packs flags into bytes, eight to a byte.
func appendBools(b []byte, flags ...bool) []byte {
	var cur byte
	for i, f := range flags {
		if f {
			cur |= 1 << (i % 8)
		}
		if i%8 == 7 || i == len(flags)-1 {
			b = append(b, cur)
			cur = 0
		}
	}
	return b
}
