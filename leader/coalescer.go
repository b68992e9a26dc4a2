package leader

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// The heartbeat coalescer. A process hosting many clusters over the same few
// nodes would otherwise send one frame per heartbeat and per acknowledgement
// and wake every leader once per acknowledgement; the coalescer sends the
// steady heartbeats of every cluster whose members sit on two nodes in one
// frame per tick, their acknowledgements in one frame back, and hands a
// leader its acknowledgements when it wakes for its next tick. It lives
// beside the election, not in it: the core still sees one heartbeat and one
// acknowledgement per peer, stepped with the original sender's PID.
//
// The rules:
//  1. Each node life has one coalescer, whose process is registered as
//     CoalescerName, started by the first leader actor on the node and
//     stopped with the last, whatever the actors' options, so peers can
//     always reach it.
//  2. What is coalesced: the heartbeats a leader sends on its own heartbeat
//     tick without a view attached, and the acknowledgements of heartbeats
//     that arrived coalesced, when the destination is on another node. All
//     else goes direct and at once: votes, TimeoutNow, membership, a view
//     change, the first heartbeats of a new leadership and their
//     acknowledgements, so failover and handover pay no linger.
//  3. Sender side: the member appends an entry to its node's outbox for the
//     destination node (under coalescer.mu); the first entry into an empty
//     outbox (but a pair beat's or a PairAck's, below) sets the outbox's
//     timer for a linger (lingerFor), whose
//     callback sends the entries as MessageHeartbeatBatch frames of at most
//     maxBatchEntries to the destination's coalescer; a full outbox is sent
//     at once by the member that filled it. The pair beats of a grid
//     instant and the PairAcks of a received frame (rule 8) leave at once
//     from the goroutine that queued them (flushNow), when the runtime can
//     send without waiting (node.TrySend), and set the outbox's timer only
//     when they cannot: when the connection's queue is full they wait for
//     the outbox's flusher, at once, in front of what came after them;
//     without TrySend, or behind another flush of the outbox under way,
//     for a linger at most. One flush of an outbox at a time sends its frames in the order
//     their entries came. A failed send reports
//     SendFailed to every member whose entries it carried, as a direct send
//     would.
//  4. Receiver side: entries name no nodes: the sender is on the node the
//     frame came from and the receiver on this one, so a node cannot speak
//     for members of another; an entry whose message names a sender node is
//     dropped. Every entry dropped is counted by reason. Heartbeats are delivered at
//     once, one mailbox message per member per frame. An acknowledgement
//     for a leader whose heartbeat timer is armed is held in the leader's
//     inbox with its arrival time, without waking it: the leader steps what
//     its inbox holds, each at its arrival time, first thing on every
//     wake-up, so its next tick sees the same evidence as if each had been
//     stepped on arrival, and the core sees its inputs in time order. Other
//     acknowledgements are delivered at once. Deliveries to a process that
//     is gone are counted, not logged.
//  5. Heartbeat ticks are aligned on a per-node grid (timers.go), so the
//     leaders of a node emit in one burst that one linger gathers, and the
//     bursts of different nodes fall at different instants.
//  6. Answering ahead: after each message it handled, a follower publishes
//     in its inbox its answer to its leader's steady heartbeat
//     (election.Core.SteadyAnswer), and withdraws it, under the inbox's
//     lock, before it steps anything else. A coalesced heartbeat that the
//     published answer matches is answered from the inbox at once (the
//     acknowledgement goes to the outbox as the follower's own would) and
//     held, without waking the follower, which steps what its inbox holds,
//     each at its arrival time, first thing on its next wake-up (its
//     election timer's at the latest) and drops the acknowledgement its core
//     sends again for each. The leader gets the same acknowledgements at
//     the same times; the follower's core sees every heartbeat, in order,
//     before any later input; a follower that hears its leader wakes about
//     once per election timeout instead of once per heartbeat.
//  7. Beating ahead: after each message it handled, a leader publishes in
//     its inbox its steady beat (election.Core.SteadyBeat), and withdraws
//     it, under the inbox's lock, before it steps anything else. While it
//     stands, the leader's heartbeat timer sends each tick's heartbeats to
//     the outboxes itself (timers.go, rule 7), each stamped with its tick's
//     time, and the coalescer takes each member's expected acknowledgement
//     (counting it and keeping its evidence, the send time it echoes, and
//     the last arrival), under the beat's two rules: an acknowledgement
//     whose evidence is within the window of the member's last, a tick
//     while every member's evidence is within the window and before the
//     beat's end. Anything else is handed
//     to the leader as rules 3 and 4 say, and stops the beat. The leader
//     catches up on what was done (election.Core.CatchUp) first thing on its
//     next wake-up, before what its inbox holds; a steady leader wakes for
//     what changes something, not once per tick.
//  8. Pair beats (pairbeat.go, pairbeat_in.go): a leader whose tick rule 7
//     would send is paired instead: its members' slots join the pairs of
//     their nodes, and from then on one PairBeat per node pair per tick,
//     and one PairAck back, stand for the ticks and acknowledgements of
//     every leader paired there; the follower's node binds a slot while the
//     member's published answer answers it (a wake-up that leaves the
//     answer as it was keeps the binding), the leader's node credits a
//     slot only once a PairAck names it bound, and anything else falls back
//     to rule 7. A steady cluster then costs nothing per tick on the wire,
//     in the coalescers or in its timers.
//  9. What a coalescer keeps per peer node (an outbox, either side of a
//     pair) is forgotten once unused for a whole tidy period and empty
//     (coalescer_tidy.go), so peers that come and go under new names
//     leave nothing behind.
//
// A frame's sender node is the node its envelope names, which the runtime
// checks against the peer of the connection it came on (a frame naming a
// sender elsewhere is dropped as foreign_sender in the network's counters).
// What the peer's name is worth is the handshake's: any cookie holder may
// announce any name unless TLSVerifyNodeName ties it to a certificate.

// CoalescerName is the registered name of every node's heartbeat coalescer.
// Do not register a process of your own under it.
const CoalescerName gen.Atom = "regent.heartbeat_coalescer"

// MessageHeartbeatBatch carries the heartbeats and acknowledgements that
// members on one node send to members on another, from coalescer to
// coalescer. It is part of NetworkTypes; nothing else sends it.
type MessageHeartbeatBatch struct {
	Heartbeats []CoalescedHeartbeat
	Acks       []CoalescedAck
	// Beats and BeatAcks are the pair beats and their acknowledgements
	// (rule 8), each in the order they were made.
	Beats    []PairBeat
	BeatAcks []PairAck
}

// CoalescedRoute says who sent an entry of a MessageHeartbeatBatch and for
// whom it is. Node names are not repeated: the sender is on the node the
// frame comes from, the receiver on the node it goes to, and the message's
// Header.From.Node travels empty and is restored on arrival.
type CoalescedRoute struct {
	// FromID and FromCreation are the sending member's PID on the frame's node.
	FromID       uint64
	FromCreation int64
	// ToID and ToCreation are the receiving member's PID; ToID is 0 when it
	// is addressed by ToName, its registered name.
	ToID       uint64
	ToCreation int64
	ToName     gen.Atom
}

// from is the sender's PID, on node.
func (r CoalescedRoute) from(node gen.Atom) gen.PID {
	return gen.PID{Node: node, ID: r.FromID, Creation: r.FromCreation}
}

// CoalescedHeartbeat is one heartbeat of a MessageHeartbeatBatch.
type CoalescedHeartbeat struct {
	CoalescedRoute
	Message MessageHeartbeat
}

// CoalescedAck is one acknowledgement of a MessageHeartbeatBatch.
type CoalescedAck struct {
	CoalescedRoute
	Message MessageHeartbeatAck
}

// maxBatchEntries caps the entries of one frame (about 150 bytes each); a
// fuller outbox is flushed at once. A batch larger than the network's
// MaxFrameSize is sent in halves (sendBatch).
const maxBatchEntries = 256

// lingerFor is how long an outbox waits after its first entry before it is
// flushed: a fiftieth of the heartbeat interval, between 200µs and 5ms.
// A node's leaders fire on one grid instant; the linger covers the time
// their goroutines take to run.
func lingerFor(heartbeat time.Duration) time.Duration {
	return min(max(heartbeat/50, 200*time.Microsecond), 5*time.Millisecond)
}

// Reasons a coalescer drops an entry or a message, as CoalescerStats.Dropped
// counts them.
const (
	// dropForeignSender: the entry's message names a sender node, which a
	// coalescer never sends: only the frame says where the sender is.
	dropForeignSender = "foreign_sender"
	// dropMalformedEntry: an entry with no sender or no address.
	dropMalformedEntry = "malformed_entry"
	// dropLocalBatch: a batch from this very node; members here are sent to directly.
	dropLocalBatch = "local_batch"
	// dropGone: the member it is for has ended.
	dropGone = "gone"
	// dropMailboxFull: the member it is for lives, but its bounded mailbox
	// (gen.ProcessOptions.MailboxSize) is full.
	dropMailboxFull = "mailbox_full"
	// dropUnexpectedMessage: a message the coalescer does not take.
	dropUnexpectedMessage = "unexpected_message"
	// dropStalePair: a PairAck of an earlier epoch or tick, or for a pair
	// this node does not beat (rule 8): what it says is already known or
	// moot.
	dropStalePair = "stale_pair"
)

var dropReasons = [...]string{dropForeignSender, dropMalformedEntry, dropLocalBatch, dropGone, dropMailboxFull, dropUnexpectedMessage, dropStalePair}

// undelivered is the reason a local send that failed with err drops what it
// carried.
func undelivered(err error) string {
	if errors.Is(err, gen.ErrProcessMailboxFull) {
		return dropMailboxFull
	}
	return dropGone
}

// CoalescerStats are a node's heartbeat coalescer counters since it started.
type CoalescerStats struct {
	// Running is false when the node has no coalescer (no leader actor runs there).
	Running bool
	// FramesOut counts batches sent, EntriesOut the entries they carried,
	// Flushes the outboxes taken to be sent; FailedFrames the batches whose
	// send failed (their senders were told, as with a direct send).
	FramesOut, EntriesOut, Flushes, FailedFrames uint64
	// FramesIn counts batches received, EntriesIn their entries; Deliveries
	// the mailbox messages that took entries to members, Held the
	// acknowledgements held for a leader's next wake-up instead, Answered
	// the heartbeats answered with their follower's steady answer and held
	// for its next wake-up (rule 6).
	FramesIn, EntriesIn, Deliveries, Held, Answered uint64
	// BeatenAhead counts the heartbeat ticks of steady leaders sent on
	// their behalf without waking them, Taken the acknowledgements taken
	// for them meanwhile (rule 7).
	BeatenAhead, Taken uint64
	// Pair beats (rule 8), on the leaders' node: Paired counts leaders
	// paired, Unpaired their pairings ended, PairBeatsOut the beats sent,
	// PairAcksIn the acknowledgements credited, PairResets the pairs
	// started afresh (on either side), PairFailed the beats that could not
	// be sent. On the followers' node: PairBeatsIn the beats received,
	// PairBound the slots bound to a member, PairRefused the slots refused
	// (on either side), PairUnbound the bindings ended, PairKept the
	// bindings that stood through their member's wake-up, its answer the
	// same after it, PairBarked the bound members whose parked election
	// timer the pair's watchdog fired because its beats stopped (rule 8).
	Paired, Unpaired, PairBeatsOut, PairAcksIn, PairResets, PairFailed uint64
	PairBeatsIn, PairBound, PairRefused, PairUnbound, PairKept         uint64
	PairBarked                                                         uint64
	// Forgotten counts what the coalescer kept for a peer node and freed
	// once unused for a whole tidy period (an outbox, either side of a
	// pair; coalescer_tidy.go): it follows the peers that came and went.
	Forgotten uint64
	// Mismatched counts heartbeats answered ahead whose follower, stepping
	// them later, sent another answer (sent too), and catch-ups on a steady
	// beat its leader's core refused: 0 unless the core breaks the promise
	// of election.Core.SteadyAnswer or SteadyBeat.
	Mismatched uint64
	// Dropped counts entries (and unexpected messages) dropped, by reason.
	Dropped map[string]uint64
}

// Plus returns s and o counted together: the counters of two nodes'
// coalescers, summed. Running is true when either runs.
func (s CoalescerStats) Plus(o CoalescerStats) CoalescerStats {
	return combineStats(s, o, func(a, b uint64) uint64 { return a + b })
}

// Since returns what s counted after earlier, counter by counter, for two
// readings of the same coalescers. Running is s's.
func (s CoalescerStats) Since(earlier CoalescerStats) CoalescerStats {
	c := combineStats(s, earlier, func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	})
	c.Running = s.Running
	return c
}

// combineStats applies op to each counter of a and b; every counter is
// listed here once, so Plus and Since never miss one.
func combineStats(a, b CoalescerStats, op func(a, b uint64) uint64) CoalescerStats {
	c := CoalescerStats{Running: a.Running || b.Running,
		FramesOut: op(a.FramesOut, b.FramesOut), EntriesOut: op(a.EntriesOut, b.EntriesOut),
		Flushes: op(a.Flushes, b.Flushes), FailedFrames: op(a.FailedFrames, b.FailedFrames),
		FramesIn: op(a.FramesIn, b.FramesIn), EntriesIn: op(a.EntriesIn, b.EntriesIn),
		Deliveries: op(a.Deliveries, b.Deliveries), Held: op(a.Held, b.Held), Answered: op(a.Answered, b.Answered),
		BeatenAhead: op(a.BeatenAhead, b.BeatenAhead), Taken: op(a.Taken, b.Taken),
		Paired: op(a.Paired, b.Paired), Unpaired: op(a.Unpaired, b.Unpaired),
		PairBeatsOut: op(a.PairBeatsOut, b.PairBeatsOut), PairAcksIn: op(a.PairAcksIn, b.PairAcksIn),
		PairResets: op(a.PairResets, b.PairResets), PairFailed: op(a.PairFailed, b.PairFailed),
		PairBeatsIn: op(a.PairBeatsIn, b.PairBeatsIn), PairBound: op(a.PairBound, b.PairBound),
		PairRefused: op(a.PairRefused, b.PairRefused), PairUnbound: op(a.PairUnbound, b.PairUnbound),
		PairKept: op(a.PairKept, b.PairKept), PairBarked: op(a.PairBarked, b.PairBarked),
		Forgotten: op(a.Forgotten, b.Forgotten), Mismatched: op(a.Mismatched, b.Mismatched), Dropped: make(map[string]uint64)}
	for r, v := range a.Dropped {
		if n := op(v, b.Dropped[r]); n > 0 {
			c.Dropped[r] = n
		}
	}
	for r, v := range b.Dropped {
		if _, seen := a.Dropped[r]; !seen {
			if n := op(0, v); n > 0 {
				c.Dropped[r] = n
			}
		}
	}
	return c
}

// PairEvents returns the pair beat counters (rule 8) by event name, as the
// inspection key coalescer:pairs and the metric
// regent_coalescer_pair_events_total name them.
func (s CoalescerStats) PairEvents() map[string]uint64 {
	return map[string]uint64{
		"paired": s.Paired, "unpaired": s.Unpaired, "beats_out": s.PairBeatsOut, "acks_in": s.PairAcksIn,
		"resets": s.PairResets, "failed": s.PairFailed, "beats_in": s.PairBeatsIn, "bound": s.PairBound,
		"refused": s.PairRefused, "unbound": s.PairUnbound, "kept": s.PairKept, "barked": s.PairBarked,
	}
}

// coalescerCounters are CoalescerStats, written by members, timers and the
// coalescer process, read by anyone.
type coalescerCounters struct {
	framesOut, entriesOut, flushes, failedFrames atomic.Uint64
	framesIn, entriesIn, deliveries, held        atomic.Uint64
	answered, mismatched                         atomic.Uint64
	beatenAhead, taken                           atomic.Uint64
	paired, unpaired, pairBeatsOut, pairAcksIn   atomic.Uint64
	pairResets, pairFailed                       atomic.Uint64
	pairBeatsIn, pairBound, pairRefused          atomic.Uint64
	pairUnbound, pairKept, pairBarked            atomic.Uint64
	forgotten                                    atomic.Uint64
	dropped                                      [len(dropReasons)]atomic.Uint64
}

func (c *coalescerCounters) drop(reason string, n uint64) {
	for i, r := range dropReasons {
		if r == reason {
			c.dropped[i].Add(n)
			return
		}
	}
}

// coalescer is what the leader actors of one node life share: the outboxes
// of their coalesced messages, their inboxes, the counters, and the process
// that takes the peers' batches.
type coalescer struct {
	node gen.Node
	self gen.Atom

	// mu guards out and every outbox in it. Members take it to append an
	// entry, an outbox's timer to take the entries. It is never held while
	// sending, nor while waiting for another lock than an outbox
	// flusher's (tidying tries an outbox's sending, which never waits).
	mu  sync.Mutex
	out map[gen.Atom]*outbox

	// inboxMu guards inboxes: members add and remove theirs at start and
	// end; the coalescer process looks them up. Held for nothing else.
	inboxMu sync.RWMutex
	inboxes map[gen.PID]*inbox

	// pairsIn are the follower side of the pairs whose beats come here
	// (rule 8): used by the coalescer process only.
	pairsIn map[pairKey]*pairIn

	// ackLinger, when set (by tests), replaces the linger of PairAcks.
	ackLinger time.Duration

	// share is the node's share, whose grids beat the pairs (rule 8).
	share *nodeShare

	// pid is the coalescer process, nil while none runs (between an
	// abnormal end and its replacement, or after the last member).
	pid   atomic.Pointer[gen.PID]
	stats coalescerCounters
}

// outbox holds the entries waiting for one destination node.
type outbox struct {
	dest       gen.Atom
	heartbeats []CoalescedHeartbeat
	acks       []CoalescedAck
	// beats and beatAcks are pair beats and their acknowledgements
	// (rule 8); each travels in the next frame, in order.
	beats    []PairBeat
	beatAcks []PairAck
	// flusher flushes the outbox a linger after its first entry (a pair
	// beat's or PairAck's only when flushNow could not send it); scheduled
	// says it is set.
	flusher   timerLoop
	scheduled bool
	// unused says no entry came since the coalescer process last tidied
	// (coalescer_tidy.go).
	unused bool
	// sending is held from taking the entries to sending them (flush,
	// flushNow), so that the outbox's frames leave in the order its
	// entries came: pair beats out of sequence reset their pair. Taken
	// before the coalescer's mu, never while holding it.
	sending sync.Mutex
}

// trySender is a runtime whose Send has a variant that never waits
// (node.TrySend); without one, outboxes are flushed by their linger only.
type trySender interface {
	TrySend(to any, message any) error
}

func newCoalescer(node gen.Node) *coalescer {
	return &coalescer{node: node, self: node.Name(), out: make(map[gen.Atom]*outbox), inboxes: make(map[gen.PID]*inbox),
		pairsIn: make(map[pairKey]*pairIn)}
}

// running reports whether the coalescer process runs.
func (c *coalescer) running() bool { return c.pid.Load() != nil }

// enqueue appends a heartbeat (hb) or an acknowledgement (ack) to the
// outbox for dest and makes sure it is flushed. It reports false when the
// coalescer cannot take it (its process is not running, so neither could a
// peer's reach this node): the member then sends directly.
func (c *coalescer) enqueue(dest gen.Atom, hb *CoalescedHeartbeat, ack *CoalescedAck, linger time.Duration) bool {
	return c.enqueueMode(dest, outItem{hb: hb, ack: ack}, linger, flushInline)
}

// enqueuePair is enqueue for a pair beat or its acknowledgement (rule 8),
// which is never flushed inline: the grid and the coalescer process enqueue
// them, and then flush the outbox at once (flushNow), which sets its
// flusher only when it cannot send. A timer set for every beat and stopped
// by the flush at once after cost two timer changes, and often a wake-up
// of the runtime's poller, per node pair and tick.
func (c *coalescer) enqueuePair(dest gen.Atom, beat *PairBeat, ack *PairAck) bool {
	return c.enqueueMode(dest, outItem{beat: beat, beatAck: ack}, 0, flushNowNext)
}

// outItem is one thing to enqueue: exactly one of its fields is set.
type outItem struct {
	hb      *CoalescedHeartbeat
	ack     *CoalescedAck
	beat    *PairBeat
	beatAck *PairAck
}

// flushMode is who flushes an outbox that enqueueMode added to.
type flushMode uint8

const (
	// flushInline: the outbox's flusher, a linger after its first entry;
	// a full outbox the caller, at once.
	flushInline flushMode = iota
	// flushOnTimer: the outbox's flusher, a full outbox at once. The
	// coalescer process answering ahead holds an inbox lock and takes
	// every node's batches, so it must never wait on a send
	// (SendQueueWait) to one node.
	flushOnTimer
	// flushNowNext: the caller, with flushNow once it has enqueued what
	// the instant has (pair beats, rule 8); a full outbox the flusher, at
	// once.
	flushNowNext
)

// enqueueMode is enqueue, with the outbox flushed as mode says.
func (c *coalescer) enqueueMode(dest gen.Atom, it outItem, linger time.Duration, mode flushMode) bool {
	if !c.running() {
		return false
	}
	c.mu.Lock()
	ob := c.out[dest]
	if ob == nil {
		ob = &outbox{dest: dest}
		ob.flusher.fn = func() { c.flush(dest) }
		c.out[dest] = ob
	}
	ob.unused = false
	switch {
	case it.hb != nil:
		ob.heartbeats = append(ob.heartbeats, *it.hb)
	case it.ack != nil:
		ob.acks = append(ob.acks, *it.ack)
	case it.beat != nil:
		ob.beats = append(ob.beats, *it.beat)
	default:
		ob.beatAcks = append(ob.beatAcks, *it.beatAck)
	}
	full := len(ob.heartbeats)+len(ob.acks) >= maxBatchEntries
	switch {
	case full && mode != flushInline:
		// Flushed now, on the flusher's goroutine.
		ob.flushIn(0)
		full = false
	case !full && !ob.scheduled && mode != flushNowNext:
		ob.flushIn(linger)
	}
	c.mu.Unlock()
	if full {
		c.flush(dest)
	}
	return true
}

// takeOut removes and returns the entries waiting in ob: in the outbox
// the caller holds sending for, never in a newer one of the same node made
// after ob was forgotten (coalescer_tidy.go).
func (c *coalescer) takeOut(ob *outbox) (MessageHeartbeatBatch, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := MessageHeartbeatBatch{Heartbeats: ob.heartbeats, Acks: ob.acks, Beats: ob.beats, BeatAcks: ob.beatAcks}
	// The taken slices travel in a message the runtime may still hold; the
	// next entries go to fresh ones, sized for as many.
	ob.heartbeats, ob.acks = make([]CoalescedHeartbeat, 0, len(b.Heartbeats)), make([]CoalescedAck, 0, len(b.Acks))
	ob.beats, ob.beatAcks = nil, nil
	if ob.scheduled {
		// Harmless from the flusher's own run; a full outbox flushed early
		// stops it (one that fires anyway finds what came since).
		ob.flusher.stop()
		ob.scheduled = false
	}
	return b, len(b.Heartbeats)+len(b.Acks)+len(b.Beats)+len(b.BeatAcks) > 0
}

// outboxFor returns the outbox for dest, nil when none was made.
func (c *coalescer) outboxFor(dest gen.Atom) *outbox {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out[dest]
}

// flushNow sends what waits for dest at once, on the caller's goroutine,
// when that needs no waiting: the runtime can send without waiting for
// room (trySender), no other flush of dest is under way, and the entries
// fit one frame. Otherwise the outbox's flusher sends them: at once when
// the connection had no room or they need more than one frame, else within
// linger. The grid and the coalescer process call it once they have queued
// the pair beats, or the PairAcks, of an instant (rule 8), which then leave
// without a linger and a hand-off to the flusher's goroutine each tick.
func (c *coalescer) flushNow(dest gen.Atom, linger time.Duration) {
	ts, ok := c.node.(trySender)
	if !ok {
		c.schedule(dest, linger)
		return
	}
	ob := c.outboxFor(dest)
	if ob == nil {
		return
	}
	if !ob.sending.TryLock() {
		// A flush under way may have taken the entries before those just
		// enqueued: the flusher sends them if it did not.
		c.schedule(dest, linger)
		return
	}
	defer ob.sending.Unlock()
	all, ok := c.takeOut(ob)
	if !ok {
		return
	}
	if len(all.Heartbeats)+len(all.Acks) > maxBatchEntries {
		c.putBack(ob, all)
		return
	}
	to := gen.ProcessID{Name: CoalescerName, Node: dest}
	err := ts.TrySend(to, all)
	if errors.Is(err, gen.ErrWouldBlock) || errors.Is(err, gen.ErrTooLarge) {
		c.putBack(ob, all)
		return
	}
	c.stats.flushes.Add(1)
	c.settle(dest, to, all, err)
}

// schedule has the flusher of dest's outbox send what waits there a linger
// from now, unless it is set already.
func (c *coalescer) schedule(dest gen.Atom, linger time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ob := c.out[dest]; ob != nil && !ob.scheduled {
		ob.flushIn(linger)
	}
}

// putBack returns the entries b, taken from ob and not sent, to the front
// of ob, and has its flusher send them at once. Called with ob.sending
// held: no other flush took entries meanwhile.
func (c *coalescer) putBack(ob *outbox, b MessageHeartbeatBatch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ob.heartbeats = append(b.Heartbeats, ob.heartbeats...)
	ob.acks = append(b.Acks, ob.acks...)
	ob.beats = append(b.Beats, ob.beats...)
	ob.beatAcks = append(b.BeatAcks, ob.beatAcks...)
	ob.flushIn(0)
}

// flushIn has ob's flusher send what waits in ob after d. Called with the
// coalescer's mu held.
func (ob *outbox) flushIn(d time.Duration) {
	ob.scheduled = true
	ob.flusher.reset(d)
}

// flush sends what waits for dest, in frames of at most maxBatchEntries,
// from the node itself, and tells the senders of a frame that failed.
func (c *coalescer) flush(dest gen.Atom) {
	ob := c.outboxFor(dest)
	if ob == nil {
		return
	}
	ob.sending.Lock()
	defer ob.sending.Unlock()
	all, ok := c.takeOut(ob)
	if !ok {
		return
	}
	c.stats.flushes.Add(1)
	to := gen.ProcessID{Name: CoalescerName, Node: dest}
	hbs, acks := all.Heartbeats, all.Acks
	// The pair beats and their acknowledgements go in the first frame.
	b := MessageHeartbeatBatch{Beats: all.Beats, BeatAcks: all.BeatAcks}
	for first := true; first || len(hbs)+len(acks) > 0; first = false {
		n := min(len(hbs), maxBatchEntries)
		b.Heartbeats, hbs = hbs[:n:n], hbs[n:]
		n = min(len(acks), maxBatchEntries-n)
		b.Acks, acks = acks[:n:n], acks[n:]
		c.sendBatch(dest, to, b)
		b = MessageHeartbeatBatch{}
	}
}

// sendBatch sends b to dest's coalescer. A batch too large for the
// network's MaxFrameSize is sent in halves, down to single entries, rather
// than failed whole; a batch that fails otherwise is reported to its senders.
func (c *coalescer) sendBatch(dest gen.Atom, to gen.ProcessID, b MessageHeartbeatBatch) {
	c.settle(dest, to, b, c.node.Send(to, b))
}

// settle counts a batch sent to dest's coalescer, or deals with its send's
// error as sendBatch says.
func (c *coalescer) settle(dest gen.Atom, to gen.ProcessID, b MessageHeartbeatBatch, err error) {
	entries := len(b.Heartbeats) + len(b.Acks)
	switch {
	case err == nil:
		c.stats.framesOut.Add(1)
		c.stats.entriesOut.Add(uint64(entries + len(b.Beats) + len(b.BeatAcks)))
		c.settleBeats(dest, b.Beats, nil)
	case entries > 0 && len(b.Beats)+len(b.BeatAcks) > 0 && errors.Is(err, gen.ErrTooLarge):
		// The pair beats first, on their own: a beat is never split.
		c.sendBatch(dest, to, MessageHeartbeatBatch{Beats: b.Beats, BeatAcks: b.BeatAcks})
		c.sendBatch(dest, to, MessageHeartbeatBatch{Heartbeats: b.Heartbeats, Acks: b.Acks})
	case entries > 1 && errors.Is(err, gen.ErrTooLarge):
		half := entries / 2
		nh := min(len(b.Heartbeats), half)
		c.sendBatch(dest, to, MessageHeartbeatBatch{Heartbeats: b.Heartbeats[:nh:nh], Acks: b.Acks[: half-nh : half-nh]})
		c.sendBatch(dest, to, MessageHeartbeatBatch{Heartbeats: b.Heartbeats[nh:], Acks: b.Acks[half-nh:]})
	default:
		c.stats.failedFrames.Add(1)
		c.reportFailed(dest, b, err)
		c.settleBeats(dest, b.Beats, err)
	}
}

// settleBeats tells the pair beats of each beat's interval that it was
// sent to dest (err nil) or failed (rule 8).
func (c *coalescer) settleBeats(dest gen.Atom, beats []PairBeat, err error) {
	for i := range beats {
		b := &beats[i]
		if err == nil && len(b.Joins) == 0 {
			// Only a beat with joins tells its pair's cap anything: the
			// steady state's carry none, and take no lock here.
			continue
		}
		switch pb := c.pairBeatsFor(time.Duration(b.Interval)); {
		case pb == nil:
		case err == nil:
			pb.sent(dest, b)
		default:
			pb.failed(dest, b, err)
		}
	}
}

// stop stops the outboxes' timers; the coalescer's last member has ended.
func (c *coalescer) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ob := range c.out {
		ob.flusher.close()
		ob.heartbeats, ob.acks, ob.beats, ob.beatAcks, ob.scheduled = nil, nil, nil, nil, false
	}
}

// coalescedFailed tells a member that a batch carrying its entries to node
// could not be sent: the core hears SendFailed, as after a direct send.
type coalescedFailed struct {
	node gen.Atom
	err  error
}

// reportFailed tells each member with entries in a failed batch, once.
func (c *coalescer) reportFailed(dest gen.Atom, b MessageHeartbeatBatch, err error) {
	told := make(map[gen.PID]struct{})
	tell := func(from gen.PID) {
		if _, ok := told[from]; ok {
			return
		}
		told[from] = struct{}{}
		c.tellFailed(from, dest, err)
	}
	for i := range b.Heartbeats {
		tell(b.Heartbeats[i].from(c.self))
	}
	for i := range b.Acks {
		tell(b.Acks[i].from(c.self))
	}
}

// tellFailed tells the member pid that what it sent to node through the
// coalescer could not be sent, for err.
func (c *coalescer) tellFailed(pid gen.PID, node gen.Atom, err error) {
	if serr := c.node.Send(pid, coalescedFailed{node: node, err: err}); serr != nil {
		c.stats.drop(undelivered(serr), 1)
	}
}

// sender sends a member what the coalescer hands it: the coalescer process
// does, or the node itself off any process (the grid's goroutine).
type sender interface {
	Send(to any, message any) error
}

// deliver hands one entry to the member t, sent by s, and counts it.
func (c *coalescer) deliver(s sender, t deliveryTarget, in inbound) {
	if err := s.Send(t.value(), coalescedIn{in}); err != nil {
		c.stats.drop(undelivered(err), 1)
		return
	}
	c.stats.deliveries.Add(1)
}

// Stats returns a snapshot of the counters.
func (c *coalescer) Stats() CoalescerStats {
	s := CoalescerStats{
		Running:   c.running(),
		FramesOut: c.stats.framesOut.Load(), EntriesOut: c.stats.entriesOut.Load(),
		Flushes: c.stats.flushes.Load(), FailedFrames: c.stats.failedFrames.Load(),
		FramesIn: c.stats.framesIn.Load(), EntriesIn: c.stats.entriesIn.Load(),
		Deliveries: c.stats.deliveries.Load(), Held: c.stats.held.Load(),
		Answered: c.stats.answered.Load(), Mismatched: c.stats.mismatched.Load(),
		BeatenAhead: c.stats.beatenAhead.Load(), Taken: c.stats.taken.Load(),
		Paired: c.stats.paired.Load(), Unpaired: c.stats.unpaired.Load(),
		PairBeatsOut: c.stats.pairBeatsOut.Load(), PairAcksIn: c.stats.pairAcksIn.Load(),
		PairResets: c.stats.pairResets.Load(), PairFailed: c.stats.pairFailed.Load(),
		PairBeatsIn: c.stats.pairBeatsIn.Load(), PairBound: c.stats.pairBound.Load(),
		PairRefused: c.stats.pairRefused.Load(), PairUnbound: c.stats.pairUnbound.Load(),
		PairKept: c.stats.pairKept.Load(), PairBarked: c.stats.pairBarked.Load(),
		Forgotten: c.stats.forgotten.Load(),
		Dropped:   make(map[string]uint64),
	}
	for i, r := range dropReasons {
		if n := c.stats.dropped[i].Load(); n > 0 {
			s.Dropped[r] = n
		}
	}
	return s
}

// inbox holds, for one member, what the coalescer took for it without
// waking it: a leader's acknowledgements while its heartbeat timer is armed,
// and a follower's heartbeats that the coalescer answered with the member's
// steady answer. The member steps them all, in arrival order, first thing on
// its next wake-up (Actor.stepHeld).
type inbox struct {
	// ticking says the member's heartbeat timer is armed; the member sets
	// it after every input. While it is false, acknowledgements for it are
	// delivered at once.
	ticking atomic.Bool
	// mu guards everything below. It is taken before coalescer.mu (answer
	// and beatAhead enqueue while holding it) and a grid's pairBeats.mu
	// (beatAhead pairs, fold unpairs), and after shellTimer.mu (the
	// election timer's callback reads heardUntil, the heartbeat timer's
	// calls beatAhead) and a pairIn.mu (binding and unbinding), never the
	// other way round.
	mu sync.Mutex
	// closed: the member ended and its inbox was emptied for good; nothing
	// is held in it any more (hold looks the inbox up before it locks it).
	// It and the two flags after it sit beside mu, in what would be
	// padding: every member holds an inbox.
	closed bool
	// answering: steady (below) is usable; beating: lead's beat is (each
	// where its field is described).
	answering, beating bool
	// acks are the acknowledgements held for the member, in arrival order.
	acks []heldAck
	// beats are the arrival times, on the shell's clock, of the heartbeats
	// answered ahead and held: each is steady.Heartbeat from steady.Leader.
	beats []time.Duration
	// spareAcks and spareBeats are the slices the member stepped last,
	// given back for reuse.
	spareAcks  []heldAck
	spareBeats []time.Duration
	// steady is the member's answer to its leader's steady heartbeat,
	// usable while answering is set: the member publishes it after each
	// message it handled and withdraws it before the next (Actor.handle),
	// so it is never used while the member's state moves. Only the member
	// writes it, so the member reads it without the lock.
	steady steadyReply
	// paired is the member's binding to a slot of its leader's pair beats
	// (rule 8), nil when none: written under both this mu and the pair's,
	// which comes first.
	paired *pairBinding
	// skipped counts the heartbeats the held ones stand for beyond
	// themselves (beatenAhead.skipped).
	skipped int
	// owner is what the member's timers' callbacks know of it, with its
	// election timer, which a pair's watchdog fires and a binding's end
	// resumes (rule 8); set before the inbox is added and never changed.
	// Nil in tests.
	owner *timerOwner
	// lead holds the member's steady beat as leader, usable while beating
	// is set (rule 7); nil until the member first leads steadily, so a
	// member that never does keeps none.
	lead *leaderBeat
}

// electionTimer is the member's election timer (timerOwner.election); nil
// when it has none.
func (ib *inbox) electionTimer() *shellTimer {
	if ib.owner == nil {
		return nil
	}
	return ib.owner.election
}

// leaderBeat is a leader's steady beat, published and withdrawn as a
// follower's steady answer is, and what was done under it since, for the
// member to catch up on. Only the member writes beat; ahead is written
// under the inbox's mu by the coalescer and the heartbeat timer, and taken
// by the member.
type leaderBeat struct {
	beat  steadyBeat
	ahead beatenAhead
	// spareAcks and spareLastAck are the lists of an ahead the member took
	// and caught up on, for the next beat's (keepSpares). Only the member
	// reads or writes them.
	spareAcks    []election.TakenAcks
	spareLastAck []time.Duration
	// paired is the leader's pairing while the pair beats do its ticks
	// (rule 8); written under mu.
	paired *pairedLeader
}

// steadyReply is a member's steady answer with what the coalescer needs to
// send it: the member's PID on its node (the entry's route goes from it to
// the answer's Leader: route) and its linger.
type steadyReply struct {
	election.SteadyAnswer
	fromID       uint64
	fromCreation int64
	linger       time.Duration
	// since is when the answer was given (the time passed to
	// Core.SteadyAnswer), on the shell's clock. The promise holds from then
	// on only: a heartbeat whose arrival the coalescer read earlier is held
	// as arriving then.
	since time.Duration
}

// route is the answer's entry route: from the member to its leader. Kept
// as the member's half, the leader's being the answer's: every member holds
// a steadyReply, in its Actor.
func (r *steadyReply) route() CoalescedRoute {
	return CoalescedRoute{FromID: r.fromID, FromCreation: r.fromCreation, ToID: r.Leader.ID, ToCreation: r.Leader.Creation}
}

// maxHeldAcks and maxHeldBeats bound what one inbox holds for a member that
// does not wake: past them, entries are delivered and wake the member,
// which empties the inbox. A follower whose leader is steady wakes about
// once per maxHeldBeats heartbeats (rule 6).
const (
	maxHeldAcks  = 256
	maxHeldBeats = 64
)

// heldAck is an acknowledgement held in an inbox, with when it arrived.
type heldAck struct {
	from gen.PID
	at   time.Time
	ack  election.MessageHeartbeatAck
}

// addInbox registers the inbox of the member pid.
func (c *coalescer) addInbox(pid gen.PID, ib *inbox) {
	ib.mu.Lock()
	ib.closed = false
	ib.mu.Unlock()
	c.inboxMu.Lock()
	c.inboxes[pid] = ib
	c.inboxMu.Unlock()
}

// removeInbox forgets pid's inbox; what it still holds is dropped.
func (c *coalescer) removeInbox(pid gen.PID) {
	c.inboxMu.Lock()
	ib := c.inboxes[pid]
	delete(c.inboxes, pid)
	c.inboxMu.Unlock()
	if ib != nil {
		ib.withdrawPaired(c)
		ib.mu.Lock()
		q := ib.fold()
		n := len(ib.acks) + len(ib.beats)
		ib.acks, ib.beats, ib.spareAcks, ib.spareBeats, ib.closed, ib.answering = nil, nil, nil, nil, true, false
		if ib.lead != nil {
			n += ib.lead.ahead.entries()
			ib.lead.ahead = beatenAhead{}
		}
		ib.beating = false
		ib.mu.Unlock()
		if q != nil {
			q.resume(sinceEpoch(time.Now()))
		}
		if n > 0 {
			c.stats.drop(dropGone, uint64(n))
		}
	}
}

// inboxOf returns pid's inbox, nil when it has none.
func (c *coalescer) inboxOf(pid gen.PID) *inbox {
	c.inboxMu.RLock()
	defer c.inboxMu.RUnlock()
	return c.inboxes[pid]
}

// hold keeps ack for pid's next wake-up and reports whether it did: only
// while pid's heartbeat timer is armed.
func (c *coalescer) hold(pid gen.PID, from gen.PID, at time.Time, ack *election.MessageHeartbeatAck) bool {
	ib := c.inboxOf(pid)
	if ib == nil || !ib.ticking.Load() {
		return false
	}
	held, unpaired := ib.hold(c, from, at, ack)
	if unpaired != nil {
		// Not before the inbox is unlocked: the timer's lock comes first.
		unpaired.resumeNext()
	}
	return held
}

// hold is coalescer.hold once the inbox is found; it also returns the
// pairing it ended, whose leader's timer must be resumed.
func (ib *inbox) hold(c *coalescer, from gen.PID, at time.Time, ack *election.MessageHeartbeatAck) (bool, *pairedLeader) {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	if ib.closed || len(ib.acks) >= maxHeldAcks {
		// Its member ended since the look-up: deliver, which counts it
		// gone. Or it holds enough: deliver, which wakes it.
		return false, nil
	}
	var unpaired *pairedLeader
	if q := ib.lead.pairedLeader(); q != nil {
		// A reply to a tick the leader sent itself before it was paired,
		// from a member no PairAck covers yet, is taken as rule 7 takes
		// it, and is that member's last reply before its slot's first
		// PairAck.
		if i, pending := q.pb.pending(q, from); pending && ib.takeAck(from, at, ack) {
			q.pb.replied(q, i, ib.lead.ahead.lastAck[i])
			c.stats.taken.Add(1)
			return true, nil
		}
		// Another reply of a member of a paired leader (its slot was
		// refused, say): the leader's ticks are its timer's again from
		// the next instant, and the reply is judged on all it took.
		unpaired = q
		ib.fold()
	}
	if ib.takeAck(from, at, ack) {
		c.stats.taken.Add(1)
		return true, unpaired
	}
	ib.acks = append(ib.acks, heldAck{from: from, at: at, ack: *ack})
	c.stats.held.Add(1)
	return true, unpaired
}

// answer sends pid's steady answer to hb from from, when it is the
// heartbeat that answer matches, and holds hb for pid's next wake-up; it
// reports whether it did. The answer is in the outbox before the inbox is
// unlocked, so the member, which withdraws its answer under the same lock
// before it steps anything, never sends a message that the answer should
// have preceded before the answer is queued.
func (c *coalescer) answer(pid gen.PID, from gen.PID, at time.Time, hb *election.MessageHeartbeat) bool {
	ib := c.inboxOf(pid)
	if ib == nil {
		return false
	}
	ib.mu.Lock()
	defer ib.mu.Unlock()
	if ib.closed || !ib.answering || len(ib.beats) >= maxHeldBeats || !ib.steady.Answers(from, hb) {
		return false
	}
	ack := CoalescedAck{CoalescedRoute: ib.steady.route(), Message: ib.steady.Ack}
	ack.Message.From.Node = "" // the frame says where the sender is
	ack.Message.Echo = hb.Sent
	if !c.enqueueMode(from.Node, outItem{ack: &ack}, ib.steady.linger, flushOnTimer) {
		return false
	}
	ib.beats = append(ib.beats, max(sinceEpoch(at), ib.steady.since))
	c.stats.answered.Add(1)
	return true
}

// publish makes r the member's steady answer.
func (ib *inbox) publish(r *steadyReply) {
	ib.mu.Lock()
	ib.steady, ib.answering = *r, true
	ib.mu.Unlock()
}

// heardUntil is when the member's election timer will be due once it has
// stepped the heartbeats held for it, on the shell's clock: the last one's
// arrival plus the steady answer's Timeout. It reports false when none is
// held.
// parked says the timer may be parked meanwhile: the member is bound on a
// pair whose watchdog has not fired since its last beat, so it will fire
// the timer should the beats stop for its Timeout (rule 8).
func (ib *inbox) heardUntil() (until time.Duration, ok, parked bool) {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	if b := ib.paired; b != nil {
		// Bound on a pair: every beat of it is a heartbeat held (rule 8).
		at, _ := b.lastBeat()
		return at + ib.steady.Timeout, true, b.src.watching()
	}
	if len(ib.beats) == 0 {
		return 0, false, false
	}
	return ib.beats[len(ib.beats)-1] + ib.steady.Timeout, true, false
}

// take removes and returns what the inbox holds, each kind in arrival
// order, and what was done under the member's steady beat (rule 7), which
// came before every acknowledgement held.
func (ib *inbox) take() ([]heldAck, []time.Duration, beatenAhead) {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	acks, beats := ib.acks, ib.beats
	ib.acks, ib.spareAcks = ib.spareAcks[:0], nil
	ib.beats, ib.spareBeats = ib.spareBeats[:0], nil
	var ahead beatenAhead
	if ib.lead != nil {
		ahead, ib.lead.ahead = ib.lead.ahead, beatenAhead{}
	}
	ahead.skipped, ib.skipped = ib.skipped, 0
	return acks, beats, ahead
}

// giveBack returns the slices take returned, once their entries are stepped.
func (ib *inbox) giveBack(acks []heldAck, beats []time.Duration) {
	clear(acks)
	ib.mu.Lock()
	ib.spareAcks, ib.spareBeats = acks[:0], beats[:0]
	ib.mu.Unlock()
}

// inbound is one coalesced heartbeat or acknowledgement on its way to a
// member, with the PID of the member that sent it.
type inbound struct {
	from gen.PID
	hb   *election.MessageHeartbeat // into the batch that carried it
	ack  *election.MessageHeartbeatAck
}

// coalescedIn is what the coalescer puts in a member's mailbox: one entry
// of a batch. It never crosses the network.
type coalescedIn struct {
	inbound
}
