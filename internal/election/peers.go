package election

import (
	"slices"
	"strings"
	"time"

	"github.com/regent-go/regent/gen"
)

// peer is another member this one knows of, keyed by node: a member of its
// view, a peer it declared (Bootstrap, Join), or one that contacted it. A
// member holds one per peer, so the fields are laid out to fit a 224-byte
// allocation: the flags together, the clock readings as instants of the
// Core's clock, the start time as its wire nanoseconds, and what only an
// ended or failing peer has behind a pointer.
type peer struct {
	id  gen.ProcessID
	pid gen.PID // zero until it answers, and again once its connection drops
	// declared: named by Bootstrap or Join.
	declared bool
	// answered: it has sent a valid protocol message.
	answered    bool
	sendFailing bool // the shell reported the last send to it failed
	// declines: its last acknowledgement said it would not take leadership.
	declines bool
	// reportedIsPID: the PID last reported to HandlePeerJoined is pid (see
	// reportedPID).
	reportedIsPID bool
	// ackedAgreed is the Agreed of the stamp it acked (see ackedStamp).
	ackedAgreed bool
	// inboundSinceReply: its last valid message was not a reply counted as
	// evidence (lastInbound is that message's arrival, later than any
	// reply's evidence, which is when what it answers was sent).
	inboundSinceReply bool
	// unreachableSince is non-zero while its connection is down.
	unreachableSince instant
	lastInbound      instant // last valid protocol message from it
	lastReply        instant // the evidence of its last vote answer or heartbeat ack: when what it answered was sent (evidenceOf)
	lastSend         instant // last message generated for it
	// steadySince starts its current run of replies, each within the
	// evidence window of the one before; zero when the run is broken.
	steadySince instant
	// memberSince is when this leader began counting the peer's silence: the
	// later of the leader's election and the peer's admission. A member
	// silent for GhostTTL since then is removed.
	memberSince instant
	// startedNanos is its start time, from its messages, as they carry it
	// (startedNanos); zero when unknown. See started.
	startedNanos int64
	// ackedLineage, ackedKey and ackedAgreed are the view stamp it last
	// acknowledged to this member as leader, at term ackedTerm; a view is
	// committed when a majority acked its key at the leader's term. Kept
	// apart, not as one ViewStamp, so that Agreed packs with the flags above:
	// four peers then fit an allocation of 768 (see newPeerTable).
	ackedLineage Lineage
	ackedKey     ViewKey
	ackedTerm    uint64
	// rare holds what few peers ever have; nil until one of its fields is set.
	rare *peerRare
}

// peerRare is what a peer holds only once its process ended or a send to
// it failed.
type peerRare struct {
	// ended says why its process ended, "" unless a monitor reported a real
	// end (not a lost connection); a leader removes such a member at once.
	ended    string
	endedPID gen.PID
	sendErr  error // why the last send failed, for inspection
	// reported is the PID last reported to HandlePeerJoined when that is
	// not pid (pid changed or was forgotten since; see reportedPID).
	reported gen.PID
}

// reportedPID is the PID last reported to HandlePeerJoined, zero when none.
// Nearly always it is pid, which a flag says: a PID of its own would be 32
// of a peer's bytes, which fit an allocation of 192 without it.
func (p *peer) reportedPID() gen.PID {
	switch {
	case p.reportedIsPID:
		return p.pid
	case p.rare != nil:
		return p.rare.reported
	}
	return gen.PID{}
}

// setReported records pid as the PID last reported to HandlePeerJoined.
func (p *peer) setReported(pid gen.PID) {
	p.reportedIsPID = pid != (gen.PID{}) && pid == p.pid
	switch {
	case p.reportedIsPID || pid == (gen.PID{}):
		if p.rare != nil {
			p.rare.reported = gen.PID{}
		}
	default:
		p.rareFields().reported = pid
	}
}

// setPID changes p's PID, keeping the one last reported to
// HandlePeerJoined when that was the old one.
func (p *peer) setPID(pid gen.PID) {
	if p.reportedIsPID && pid != p.pid {
		p.reportedIsPID = false
		p.rareFields().reported = p.pid
	}
	p.pid = pid
}

// rareFields is p.rare, made when nil.
func (p *peer) rareFields() *peerRare {
	if p.rare == nil {
		p.rare = &peerRare{}
	}
	return p.rare
}

// ackedStamp is the view stamp p last acknowledged to this member as leader.
func (p *peer) ackedStamp() ViewStamp {
	return ViewStamp{Lineage: p.ackedLineage, Key: p.ackedKey, Agreed: p.ackedAgreed}
}

// ended is why p's process ended, "" when it did not (see peerRare).
func (p *peer) ended() string {
	if p.rare == nil {
		return ""
	}
	return p.rare.ended
}

// endedPID is the PID whose end ended names.
func (p *peer) endedPID() gen.PID {
	if p.rare == nil {
		return gen.PID{}
	}
	return p.rare.endedPID
}

// setEnded records why p's process pid ended.
func (p *peer) setEnded(why string, pid gen.PID) {
	r := p.rareFields()
	r.ended, r.endedPID = why, pid
}

// clearEnded forgets why p's process ended (it spoke again); endedPID stays.
func (p *peer) clearEnded() {
	if p.rare != nil {
		p.rare.ended = ""
	}
}

// lastSendErr is why the last send to p failed, nil when none did.
func (p *peer) lastSendErr() error {
	if p.rare == nil {
		return nil
	}
	return p.rare.sendErr
}

// setSendErr records why the last send to p failed.
func (p *peer) setSendErr(err error) {
	if p.rare == nil && err == nil {
		return
	}
	p.rareFields().sendErr = err
}

// started is p's start time, zero when unknown.
func (p *peer) started() time.Time { return startedTime(p.startedNanos) }

// target is where to send to p: its PID when known, else its name.
func (p *peer) target(msg any) Outbound {
	if p.pid != (gen.PID{}) {
		return Outbound{To: p.pid, Message: msg}
	}
	return Outbound{ToName: p.id, Message: msg}
}

// cutOff reports whether p's connection dropped and it was not heard from
// since: its PID is forgotten, and only a message by name can reach it.
func (p *peer) cutOff() bool { return !p.unreachableSince.IsZero() }

// reached reports whether p counts, under rule e, as reached within window.
func (p *peer) reached(e Evidence, now instant, window time.Duration) bool {
	if !p.unreachableSince.IsZero() {
		return false // its connection dropped: nothing sent since reached it
	}
	recent := func(t instant) bool { return !t.IsZero() && now.Sub(t) < window }
	if e == EvidenceReplies {
		return recent(p.lastReply)
	}
	return recent(p.lastInbound) || (recent(p.lastSend) && !p.sendFailing)
}

// alive reports whether p was heard from within window and its connection
// has not dropped since: the evidence a leader needs before admitting it.
func (p *peer) alive(now instant, window time.Duration) bool {
	return p.unreachableSince.IsZero() && !p.lastInbound.IsZero() && now.Sub(p.lastInbound) < window
}

// handOverTarget reports whether p can take leadership over: it answered,
// its PID is known, the last send to it did not fail and it does not
// decline leadership.
func (p *peer) handOverTarget() bool {
	return p.answered && p.pid != (gen.PID{}) && p.unreachableSince.IsZero() && !p.sendFailing && !p.declines
}

// silentFor is how long p has been silent as a member of this leader's view.
func (p *peer) silentFor(k clock, now time.Time) time.Duration {
	return now.Sub(latest(k.time(p.lastInbound), k.time(p.memberSince)))
}

// peerTable holds the known peers with their nodes kept sorted, so every
// loop over them is deterministic. A peer is found by binary search: a
// member knows a few peers, for which a map would cost several times the
// two slices.
type peerTable struct {
	// sorted holds the peers' nodes in order, list the peers in the same
	// order. Both are replaced, never changed in place, so a loop over
	// them may add or remove peers.
	sorted []gen.Atom
	list   []*peer
}

// newPeerTable is the table of the members ids name on nodes other than
// self, the first name of a node winning as with ensure. Their peers are
// made in one allocation, with the Core and before any election: each
// apart, among the election burst's messages of their size, would pin
// pages of that garbage (four fit 768 bytes). Peers added later are made
// one by one.
func newPeerTable(self gen.Atom, ids ...[]gen.ProcessID) peerTable {
	n := 0
	for _, list := range ids {
		n += len(list)
	}
	nodes := make([]gen.ProcessID, 0, n)
	for _, list := range ids {
		for _, id := range list {
			if id.Node != self && !slices.ContainsFunc(nodes, func(n gen.ProcessID) bool { return n.Node == id.Node }) {
				nodes = append(nodes, id)
			}
		}
	}
	if len(nodes) == 0 {
		return peerTable{}
	}
	slices.SortFunc(nodes, func(a, b gen.ProcessID) int { return strings.Compare(string(a.Node), string(b.Node)) })
	t := peerTable{sorted: make([]gen.Atom, len(nodes)), list: make([]*peer, len(nodes))}
	block := make([]peer, len(nodes))
	for i, id := range nodes {
		block[i].id = id
		t.sorted[i], t.list[i] = id.Node, &block[i]
	}
	return t
}

func (t *peerTable) get(node gen.Atom) *peer {
	if i, found := slices.BinarySearch(t.sorted, node); found {
		return t.list[i]
	}
	return nil
}

// ensure returns the peer on node, adding it under id when unknown.
func (t *peerTable) ensure(id gen.ProcessID) *peer {
	i, found := slices.BinarySearch(t.sorted, id.Node)
	if found {
		return t.list[i]
	}
	p := &peer{id: id}
	t.sorted = slices.Insert(slices.Clip(t.sorted), i, id.Node)
	t.list = slices.Insert(slices.Clip(t.list), i, p)
	return p
}

// remove forgets node.
func (t *peerTable) remove(node gen.Atom) {
	if i, found := slices.BinarySearch(t.sorted, node); found {
		t.sorted = slices.Concat(t.sorted[:i], t.sorted[i+1:])
		t.list = slices.Concat(t.list[:i], t.list[i+1:])
	}
}

// nodes lists the peers' nodes, sorted; callers must not modify the slice.
func (t *peerTable) nodes() []gen.Atom { return t.sorted }

// byPID finds the peer currently known by pid.
func (t *peerTable) byPID(pid gen.PID) *peer {
	if p := t.get(pid.Node); p != nil && p.pid == pid {
		return p
	}
	return nil
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
