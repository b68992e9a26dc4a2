package leader

import (
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// The pair beats' promises (coalescer.go, rule 8; pairbeat.go), checked on
// random runs of the real leader node side (pairBeats, beatAhead, fold,
// withdrawBeat, hold) and follower node side (receiveBeat, withdraw) of
// one leader node and two follower nodes, over a wire the test plays:
// frames go in order, but now and then one is lost, doubled or overtaken.
// Followers publish and withdraw their steady answers (some not the one
// their leader expects) or step an input with their binding suspended,
// leaders wake, the coalescer stops for a while, and
// time moves on a virtual clock far ahead of the real one, so nothing
// fires on its own. The promises, from what the test saw go over the wire:
//
//	P1: each acknowledgement a pairing credits a leader for member m comes
//	    from a PairAck whose beat m's follower node took while m's answer
//	    stood and matched the leader's expectation.
//	P2: each tick counted for a leader went out as a beat carrying all of
//	    its slots; no beat sent after it was unpaired carries one; a
//	    follower holds, for a bound slot, only beats that carried it.
//	P3: what a leader catches up on arrived no later than the credit says,
//	    and rule 7's windows hold for it (each tick within the window of
//	    every member's last credited reply, each reply within the window of
//	    the one before), no tick past the beat's end.
//	P4: a leader that is not paired never has its heartbeat timer parked
//	    beyond its next tick; a follower's binding ends with its answer,
//	    and stands through a step only when the answer after it is the one
//	    it was bound with.
var (
	pairRuns  = flag.Int("pair.runs", 300, "random runs of TestPairBeatsKeepTheirPromises")
	pairSteps = flag.Int("pair.steps", 600, "steps of each run")
	pairSeed  = flag.Int64("pair.seed", 0, "first seed (0: fixed default)")
)

func TestPairBeatsKeepTheirPromises(t *testing.T) {
	testPairBeatsKeepTheirPromises(t, 0)
}

// The promises hold with both sides tidying now and then (far more often
// than every tidyEvery): a pair forgotten on either side, or joined again
// after standing unused, starts afresh without breaking one.
func TestPairBeatsKeepTheirPromisesThroughTidying(t *testing.T) {
	testPairBeatsKeepTheirPromises(t, 40)
}

func testPairBeatsKeepTheirPromises(t *testing.T, tidyOdds int) {
	seed := *pairSeed
	if seed == 0 {
		seed = 1
	}
	var seen phSeen
	for r := range *pairRuns {
		h := newPairHarness(t, seed+int64(r))
		h.tidyOdds = tidyOdds
		h.run(*pairSteps)
		h.close()
		seen.add(h)
		if t.Failed() {
			t.Logf("seed %d (rerun with -pair.seed=%d -pair.runs=1)", seed+int64(r), seed+int64(r))
			return
		}
	}
	t.Logf("%+v", seen)
	// Runs that stop pairing check nothing: the harness must keep reaching
	// every kind of event the promises are about.
	for name, n := range map[string]uint64{"paired": seen.Paired, "beats": seen.Beats, "PairAcks credited": seen.Credited,
		"acknowledgements credited": seen.AcksCredited, "bound": seen.Bound, "unbound": seen.Unbound,
		"kept through a step": seen.Kept, "refused": seen.Refused, "resets": seen.Resets} {
		if n == 0 && *pairRuns >= 100 {
			t.Errorf("no run had %s", name)
		}
	}
}

// phSeen is what the runs did, so a run that stops exercising the pairs
// shows.
type phSeen struct {
	Paired, Unpaired, Beats, Credited, AcksCredited, Resets, Refused, Bound, Unbound, Kept, Held uint64
}

func (s *phSeen) add(h *pairHarness) {
	l := h.cL.Stats()
	s.Paired += l.Paired
	s.Unpaired += l.Unpaired
	s.Beats += l.PairBeatsOut
	s.Credited += l.PairAcksIn
	s.Resets += l.PairResets
	s.Refused += l.PairRefused
	s.Held += l.Held
	for _, l := range h.leaders {
		for _, r := range l.recs {
			for _, a := range r.q.done.acks {
				s.AcksCredited += uint64(a.Count)
			}
		}
	}
	for _, c := range h.cF {
		f := c.Stats()
		s.Bound += f.PairBound
		s.Unbound += f.PairUnbound
		s.Kept += f.PairKept
		s.Resets += f.PairResets
	}
}

const (
	phD     = 10 * time.Millisecond // the leaders' HeartbeatInterval
	phNodeL = gen.Atom("l@h")
)

var phNodesF = []gen.Atom{"f1@h", "f2@h"}

// phNode is a node whose local sends reach the harness: wake-ups of its
// members.
type phNode struct {
	gen.Node
	name gen.Atom
	h    *pairHarness
}

func (n *phNode) Name() gen.Atom { return n.name }

func (n *phNode) Send(to any, message any) error {
	n.h.localSend(n.name, to, message)
	return nil
}

// phProcess is a coalescer process's gen.Process: its sends are its node's.
type phProcess struct {
	gen.Process
	n *phNode
}

func (p *phProcess) Send(to any, message any) error { return p.n.Send(to, message) }

type phLeader struct {
	a       *Actor
	pid     gen.PID
	tm      *shellTimer
	o       *timerOwner
	hb      election.MessageHeartbeat
	window  time.Duration
	members []*phMember
	lastAck []time.Duration // the core's evidence of each member's last reply
	mail    bool
	recs    []*phPairing
}

type phMember struct {
	ib       *inbox
	pid      gen.PID
	node     int
	leader   *phLeader
	index    int // in its leader's Members
	ack      election.MessageHeartbeatAck
	wrong    election.MessageHeartbeatAck // the answer of a member that moved on
	publish  bool                         // an answer stands
	correct  bool                         // it is the one its leader expects
	gen      int                          // counts publishes and withdrawals
	mail     bool                         // a heartbeat was delivered to it
	stepping bool                         // its answer is suspended for a step (suspendPaired)
	bound    map[*pairBinding]int         // bindings seen, with gen then
	heard    int64                        // the Sent of the last heartbeat or beat of its leader's its node took
}

// phPairing is one pairing of a leader as the test saw it start.
type phPairing struct {
	q       *pairedLeader
	l       *phLeader
	dests   []gen.Atom
	epochs  []uint64
	ids     []uint32
	joins   []uint64
	lastAck []time.Duration
	until   time.Duration
	checked bool
}

type phSlotKey struct {
	dest gen.Atom
	id   uint32
}

type phTickKey struct {
	dest gen.Atom
	tick uint64
}

// phAckIn is a PairAck as the leader node got it, with the members whose
// answers stood when their node took its beat.
type phAckIn struct {
	a     PairAck
	at    time.Duration
	stood map[gen.PID]bool
}

type phFrameToF struct{ b MessageHeartbeatBatch }

type phFrameToL struct {
	b     MessageHeartbeatBatch
	stood map[gen.PID]bool // members whose answers stood when it was made
	legit []bool           // per Acks entry: a reply the member's core made or stood by
}

type pairHarness struct {
	t      *testing.T
	rng    *rand.Rand
	now    time.Duration
	step   int
	nodeL  *phNode
	cL     *coalescer
	pL     *coalescerProcess
	pb     *pairBeats
	cF     []*coalescer
	pF     []*coalescerProcess
	nodesF []*phNode
	pidL   gen.PID

	leaders []*phLeader
	members map[gen.PID]*phMember
	byPID   map[gen.PID]*phLeader

	toF [][]phFrameToF
	toL [][]phFrameToL

	// The wire as sent: the slots standing after each beat, per pair.
	replayEpoch map[gen.Atom]uint64
	standing    map[gen.Atom]map[uint32]bool
	sent        map[phTickKey]map[uint32]bool
	slotOwner   map[phSlotKey]*phPairing
	tickAt      map[uint64]time.Duration
	// What arrived at the leader node: PairAcks per follower node, and
	// the arrivals of each member's genuine replies per leader.
	acksIn  map[gen.Atom][]phAckIn
	genuine map[[2]gen.PID][]time.Duration
	stopped int // steps left with the leader node's coalescer stopped
	failed  bool
	// tidyOdds, when above zero, has one step in tidyOdds tidy both
	// sides, as the coalescer processes do every tidyEvery.
	tidyOdds int
}

func newPairHarness(t *testing.T, seed int64) *pairHarness {
	h := &pairHarness{t: t, rng: rand.New(rand.NewSource(seed)), members: make(map[gen.PID]*phMember), byPID: make(map[gen.PID]*phLeader),
		replayEpoch: make(map[gen.Atom]uint64), standing: make(map[gen.Atom]map[uint32]bool), sent: make(map[phTickKey]map[uint32]bool),
		slotOwner: make(map[phSlotKey]*phPairing), tickAt: make(map[uint64]time.Duration), acksIn: make(map[gen.Atom][]phAckIn),
		genuine: make(map[[2]gen.PID][]time.Duration)}
	// The virtual clock runs far ahead of the real one: the few real
	// clock reads of the code under test (resuming a timer at once) fall
	// in the virtual past, so fire at the next grid instant.
	start := sinceEpoch(time.Now()) + 1000*time.Hour
	h.now = start + onGrid(gridEpoch.Add(start), phD, 0)
	h.nodeL = &phNode{name: phNodeL, h: h}
	h.cL = h.quietCoalescer(h.nodeL, phNodesF...)
	h.pL = &coalescerProcess{Process: &phProcess{n: h.nodeL}, c: h.cL}
	h.pb = newPairBeats(h.cL, phD, 0)
	g := newHeartbeatGrid(h.pb)
	g.loop.rt, g.loop.running = time.NewTimer(time.Hour), true // no goroutine fires the grid: the test does
	h.cL.share = &nodeShare{coal: h.cL, grids: map[time.Duration]*heartbeatGrid{phD: g}}
	h.pidL = gen.PID{Node: phNodeL, ID: 1, Creation: 1}
	for _, name := range phNodesF {
		n := &phNode{name: name, h: h}
		c := h.quietCoalescer(n, phNodeL)
		h.nodesF = append(h.nodesF, n)
		h.cF = append(h.cF, c)
		h.pF = append(h.pF, &coalescerProcess{Process: &phProcess{n: n}, c: c})
	}
	h.toF, h.toL = make([][]phFrameToF, len(phNodesF)), make([][]phFrameToL, len(phNodesF))
	nextID := uint64(100)
	for j := range 2 + h.rng.Intn(3) {
		l := &phLeader{a: &Actor{}, pid: gen.PID{Node: phNodeL, ID: uint64(10 + j), Creation: 1}, tm: &shellTimer{},
			window: phD * time.Duration(2+h.rng.Intn(4))}
		l.hb = election.MessageHeartbeat{Header: election.Header{ClusterID: fmt.Sprintf("c%d", j), Term: 3, From: gen.ProcessID{Name: "m", Node: phNodeL}}}
		l.o = &timerOwner{pid: l.pid, inbox: &l.a.inbox, grid: g, coal: h.cL, pairs: h.pb}
		l.a.inbox.ticking.Store(true)
		h.cL.addInbox(l.pid, &l.a.inbox)
		for i := range 1 + h.rng.Intn(3) {
			f := h.rng.Intn(len(phNodesF))
			nextID++
			m := &phMember{ib: &inbox{}, pid: gen.PID{Node: phNodesF[f], ID: nextID, Creation: 1}, node: f, leader: l, index: i,
				bound: make(map[*pairBinding]int)}
			m.ack = election.MessageHeartbeatAck{Header: election.Header{ClusterID: l.hb.ClusterID, Term: 3, From: gen.ProcessID{Name: "m", Node: m.pid.Node}}}
			m.wrong = m.ack
			m.wrong.Declines = true
			h.cF[f].addInbox(m.pid, m.ib)
			l.members = append(l.members, m)
			h.members[m.pid] = m
		}
		l.lastAck = make([]time.Duration, len(l.members))
		h.leaders = append(h.leaders, l)
		h.byPID[l.pid] = l
		// The leader starts with its first tick due now.
		l.tm.due = h.now
	}
	return h
}

// quietCoalescer is a running coalescer whose outboxes never flush on
// their own: the test takes them.
func (h *pairHarness) quietCoalescer(n *phNode, dests ...gen.Atom) *coalescer {
	c := newCoalescer(n)
	pid := gen.PID{Node: n.name, ID: 1, Creation: 1}
	c.pid.Store(&pid)
	for _, d := range dests {
		ob := &outbox{dest: d}
		ob.flusher.rt, ob.flusher.running = time.NewTimer(time.Hour), true // no goroutine flushes it
		c.out[d] = ob
	}
	return c
}

func (h *pairHarness) close() {
	for _, c := range append([]*coalescer{h.cL}, h.cF...) {
		if c.pid.Load() == nil {
			pid := gen.PID{Node: c.self, ID: 1, Creation: 1}
			c.pid.Store(&pid)
		}
		c.stop()
	}
	h.cL.share.grids[phD].loop.rt.Stop()
}

func (h *pairHarness) errorf(format string, args ...any) {
	h.t.Helper()
	if !h.failed {
		h.t.Errorf("step %d at %v: "+format, append([]any{h.step, h.now}, args...)...)
	}
	h.failed = true
}

// localSend is a send on a node to one of its processes.
func (h *pairHarness) localSend(node gen.Atom, to any, message any) {
	pid, _ := to.(gen.PID)
	if node == phNodeL {
		if l := h.byPID[pid]; l != nil {
			l.mail = true
		}
		return
	}
	if m := h.members[pid]; m != nil {
		if in, ok := message.(coalescedIn); ok && in.hb != nil {
			m.mail = true
		}
	}
}

func (h *pairHarness) run(steps int) {
	// Each run has its own pace: how often the grid ticks, against how
	// often frames arrive and members move.
	pace := 3 + h.rng.Intn(20)
	for h.step = 0; h.step < steps && !h.failed; h.step++ {
		switch x := h.rng.Intn(100 + pace); {
		case x >= 100:
			h.tick()
		case x < 35:
			h.deliverToF(h.rng.Intn(len(phNodesF)))
		case x < 70:
			h.deliverToL(h.rng.Intn(len(phNodesF)))
		case x < 75:
			h.now += time.Duration(h.rng.Int63n(int64(phD)))
		case x < 78:
			h.withdrawMember()
		case x < 85:
			if m := h.someMember(); !m.publish && !m.stepping {
				h.publishMember(m, h.rng.Intn(6))
			}
		case x < 89:
			h.stepMember()
		case x < 93:
			h.wakeMember()
		case x < 96:
			l := h.leaders[h.rng.Intn(len(h.leaders))]
			h.wakeLeader(l, false)
		case x < 97:
			h.restartMember()
		default:
			if h.stopped == 0 && h.rng.Intn(4) == 0 {
				h.cL.pid.Store(nil)
				h.stopped = 1 + h.rng.Intn(20)
			}
		}
		if h.stopped > 0 {
			if h.stopped--; h.stopped == 0 {
				h.cL.pid.Store(&h.pidL)
			}
		}
		if h.tidyOdds > 0 && h.rng.Intn(h.tidyOdds) == 0 {
			h.tidy()
		}
		for _, l := range h.leaders {
			if l.mail {
				h.wakeLeader(l, false)
			}
		}
		h.afterStep()
	}
}

// tidy is what the coalescer processes' tidying does to the pairs: the
// leader node's side, then each follower node's (coalescer_tidy.go).
func (h *pairHarness) tidy() {
	h.pb.tidy(h.now)
	for _, c := range h.cF {
		for key, src := range c.pairsIn {
			if src.tidy() {
				delete(c.pairsIn, key)
			}
		}
	}
}

// tick moves to the next grid instant and does what the grid does there:
// the leaders' timers due, then the pairs.
func (h *pairHarness) tick() {
	h.now += onGrid(gridEpoch.Add(h.now), phD, 0)
	for _, j := range h.rng.Perm(len(h.leaders)) {
		h.fireTimer(h.leaders[j])
	}
	before := h.pb.tick
	h.pb.fire(h.now)
	if h.pb.tick != before {
		h.tickAt[h.pb.tick] = h.now
	}
}

// fireTimer is shellTimer.fire for a heartbeat timer on the grid.
func (h *pairHarness) fireTimer(l *phLeader) {
	t := l.tm
	t.mu.Lock()
	if t.due == 0 || h.now < t.due {
		t.mu.Unlock()
		return
	}
	next, ok := h.cL.beatAhead(&l.a.inbox, t, l.o, h.now)
	if ok {
		t.due = next
		t.schedule(h.now, l.o, election.TimerHeartbeat)
	} else {
		t.due = 0
	}
	t.mu.Unlock()
	if !ok {
		h.wakeLeader(l, true)
		return
	}
	l.a.inbox.mu.Lock()
	q := l.a.inbox.lead.paired
	l.a.inbox.mu.Unlock()
	if q != nil && (len(l.recs) == 0 || l.recs[len(l.recs)-1].q != q) {
		h.paired(l, q)
	}
}

// paired records a new pairing of l.
func (h *pairHarness) paired(l *phLeader, q *pairedLeader) {
	h.pb.mu.Lock()
	defer h.pb.mu.Unlock()
	r := &phPairing{q: q, l: l, until: q.until}
	for _, s := range q.slots {
		r.dests = append(r.dests, s.pair.dest)
		r.epochs = append(r.epochs, s.pair.epoch)
		r.ids = append(r.ids, s.id)
		r.joins = append(r.joins, s.join)
		r.lastAck = append(r.lastAck, s.lastAck)
		h.slotOwner[phSlotKey{s.pair.dest, s.id}] = r
	}
	l.recs = append(l.recs, r)
}

// wakeLeader is the leader handling a message (its tick, when tick is
// set): it withdraws its beat, catches up on what was done and steps what
// was held, sends its own heartbeats on a tick, and publishes its beat
// again.
func (h *pairHarness) wakeLeader(l *phLeader, tick bool) {
	l.mail = false
	l.a.withdrawBeat()
	acks, _, ahead := l.a.inbox.take()
	for i, m := range l.members {
		if i < len(ahead.Acks) && ahead.Acks[i].Count > 0 {
			at := sinceEpoch(ahead.Acks[i].Last)
			h.checkGenuine(l, m, at, "caught up on")
			l.lastAck[i] = max(l.lastAck[i], at)
		}
	}
	for _, a := range acks {
		m := h.members[a.from]
		expected := m.ack
		expected.Echo = a.ack.Echo
		at, evidence := evidenceAt(a.ack.Echo, sinceEpoch(a.at))
		if m == nil || m.leader != l || a.ack != expected || !evidence {
			continue // the core takes no evidence from it
		}
		h.checkGenuine(l, m, at, "held")
		l.lastAck[m.index] = max(l.lastAck[m.index], at)
	}
	if tick {
		for _, m := range l.members {
			e := CoalescedHeartbeat{CoalescedRoute: CoalescedRoute{FromID: l.pid.ID, FromCreation: 1, ToID: m.pid.ID, ToCreation: 1}, Message: l.hb}
			e.Message.From.Node = ""
			e.Message.Sent = stampOf(h.now) // as its core stamps its own
			h.cL.enqueue(m.pid.Node, &e, nil, time.Hour)
		}
		l.tm.mu.Lock()
		l.tm.due = h.now + onGrid(gridEpoch.Add(h.now), phD, 0)
		l.tm.schedule(h.now, l.o, election.TimerHeartbeat)
		l.tm.mu.Unlock()
	}
	h.publishBeat(l)
}

func (h *pairHarness) publishBeat(l *phLeader) {
	until := h.now + time.Hour
	if h.rng.Intn(3) == 0 {
		until = h.now + time.Duration(h.rng.Int63n(int64(12*phD))) // its lease ends soon
	}
	b := steadyBeat{SteadyBeat: election.SteadyBeat{Term: 3, Heartbeat: l.hb, Interval: phD, Window: l.window, Until: gridEpoch.Add(until)},
		fromID: l.pid.ID, fromCreation: l.pid.Creation, since: h.now, until: until, linger: time.Hour}
	for _, m := range l.members {
		b.Members = append(b.Members, election.SteadyMember{PID: m.pid, Ack: m.ack})
	}
	l.a.inbox.publishBeat(&b, slices.Clone(l.lastAck))
	l.a.beating = true
}

// checkGenuine checks that l credits m's reply at at only if a genuine one
// arrived then.
func (h *pairHarness) checkGenuine(l *phLeader, m *phMember, at time.Duration, what string) {
	h.t.Helper()
	if !slices.Contains(h.genuine[[2]gen.PID{l.pid, m.pid}], at) {
		h.errorf("P1/P3: %v %s a reply of %v at %v, when none that stood arrived (genuine arrivals %v)",
			l.pid, what, m.pid, at, h.genuine[[2]gen.PID{l.pid, m.pid}])
	}
}

// pick takes the next frame of q off the wire, now and then losing,
// doubling or reordering one.
func pick[F any](h *pairHarness, q *[]F) []F {
	if len(*q) == 0 {
		return nil
	}
	f := (*q)[0]
	switch x := h.rng.Intn(200); {
	case x == 0:
		*q = (*q)[1:]
		return nil // lost
	case x == 1:
		return []F{f, f} // doubled
	case x == 2 && len(*q) > 1:
		(*q)[0], (*q)[1] = (*q)[1], (*q)[0] // overtaken
		f = (*q)[0]
	}
	*q = (*q)[1:]
	return []F{f}
}

// stood reports the members whose answers stand as their leaders expect.
func (h *pairHarness) stood() map[gen.PID]bool {
	s := make(map[gen.PID]bool)
	for pid, m := range h.members {
		if m.publish && m.correct {
			s[pid] = true
		}
	}
	return s
}

// deliverToF has follower node f take the next frame from the leader node.
func (h *pairHarness) deliverToF(f int) {
	frames := pick(h, &h.toF[f])
	p, c := h.pF[f], h.cF[f]
	for _, fr := range frames {
		h.now += time.Microsecond
		at := gridEpoch.Add(h.now)
		for i := range fr.b.Heartbeats {
			e := fr.b.Heartbeats[i]
			t, ok := p.check(e.CoalescedRoute, &e.Message.From, phNodeL)
			if !ok {
				continue
			}
			if m := h.members[t.pid]; m != nil {
				m.heard = max(m.heard, e.Message.Sent)
			}
			if !c.answer(t.pid, e.from(phNodeL), at, &e.Message) {
				p.deliver(t, inbound{from: e.from(phNodeL), hb: &e.Message})
			}
		}
		for i := range fr.b.Beats {
			b := fr.b.Beats[i]
			for _, m := range h.members {
				if m.node == f {
					m.heard = max(m.heard, b.Sent)
				}
			}
			b.Leaves, b.Joins = slices.Clone(b.Leaves), slices.Clone(b.Joins)
			p.receiveBeat(phNodeL, &b, at)
		}
		h.takeF(f, h.stood(), nil)
	}
}

// takeF puts what follower node f has for the leader node on the wire;
// own marks a reply a member's core made itself.
func (h *pairHarness) takeF(f int, stood map[gen.PID]bool, own map[gen.PID]bool) {
	b, ok := h.cF[f].take(phNodeL)
	if !ok {
		return
	}
	fr := phFrameToL{b: b, stood: stood}
	for _, e := range b.Acks {
		pid := gen.PID{Node: phNodesF[f], ID: e.FromID, Creation: e.FromCreation}
		m := h.members[pid]
		fr.legit = append(fr.legit, m != nil && (stood[pid] || own[pid]))
	}
	h.toL[f] = append(h.toL[f], fr)
}

// deliverToL has the leader node take the next frame from follower node f.
func (h *pairHarness) deliverToL(f int) {
	frames := pick(h, &h.toL[f])
	node := phNodesF[f]
	for _, fr := range frames {
		h.now += time.Microsecond
		at := gridEpoch.Add(h.now)
		for i := range fr.b.Acks {
			e := fr.b.Acks[i]
			t, ok := h.pL.check(e.CoalescedRoute, &e.Message.From, node)
			if !ok {
				continue
			}
			from := e.from(node)
			if sent, ok := evidenceAt(e.Message.Echo, h.now); ok && fr.legit[i] {
				// Evidence of when the heartbeat it answers was sent.
				k := [2]gen.PID{t.pid, from}
				h.genuine[k] = append(h.genuine[k], sent)
			}
			if !h.cL.hold(t.pid, from, at, &e.Message) {
				if l := h.byPID[t.pid]; l != nil {
					l.mail = true
				}
			}
		}
		for i := range fr.b.BeatAcks {
			a := fr.b.BeatAcks[i]
			a.Refused = slices.Clone(a.Refused)
			// Its acknowledgements are evidence of when its beat was sent.
			sent, _ := evidenceAt(a.Echo, h.now)
			h.acksIn[node] = append(h.acksIn[node], phAckIn{a: a, at: sent, stood: fr.stood})
			for id := range h.sent[phTickKey{node, a.Tick}] {
				// A reply of each member whose slot the beat carried and
				// whose answer stood.
				if r := h.slotOwner[phSlotKey{node, id}]; r != nil && !a.Reset {
					for i, m := range r.l.members {
						if r.dests[i] == node && r.ids[i] == id && fr.stood[m.pid] {
							k := [2]gen.PID{r.l.pid, m.pid}
							h.genuine[k] = append(h.genuine[k], sent)
						}
					}
				}
			}
			h.pb.acked(node, &a, h.now)
		}
	}
}

func (h *pairHarness) someMember() *phMember {
	var all []*phMember
	for _, l := range h.leaders {
		all = append(all, l.members...)
	}
	return all[h.rng.Intn(len(all))]
}

// withdrawMember is a follower starting to handle a message.
func (h *pairHarness) withdrawMember() {
	m := h.someMember()
	if m.stepping {
		return
	}
	m.ib.withdrawPaired(h.cF[m.node])
	m.publish = false
	m.gen++
}

// publishMember is a follower done handling a message: it publishes its
// answer, the one its leader expects unless variant is 0 or 1.
func (h *pairHarness) publishMember(m *phMember, variant int) {
	l := m.leader
	r := steadyReply{SteadyAnswer: election.SteadyAnswer{Leader: l.pid, Heartbeat: steadyOf(l.hb), Ack: m.ack, Timeout: 10 * phD},
		fromID: m.pid.ID, fromCreation: 1, linger: time.Hour, since: h.now}
	m.correct = true
	switch variant {
	case 0:
		r.Ack, m.correct = m.wrong, false // it moved on
	case 1:
		r.Heartbeat.Term, m.correct = 2, false // it answers another heartbeat
	}
	m.ib.publish(&r)
	m.publish = true
	m.gen++
}

// stepMember is a follower beginning to handle a message with its binding
// suspended (Actor.suspendSteady), or, when it is in such a step, ending
// it (Actor.publishSteady): with its answer as before, another one or none.
func (h *pairHarness) stepMember() {
	m := h.someMember()
	c := h.cF[m.node]
	if !m.stepping {
		if !m.publish {
			return
		}
		m.ib.suspendPaired()
		m.ib.take()
		m.publish, m.stepping = false, true
		if h.rng.Intn(2) == 0 {
			return // it ends its step later, perhaps after beats came
		}
	}
	m.stepping = false
	variant := h.rng.Intn(8)
	if variant == 7 {
		if m.ib.resumePaired(c, nil) {
			h.errorf("P4: %v's binding stood through a step that left it no answer", m.pid)
		}
		m.gen++
		return
	}
	l := m.leader
	r := steadyReply{SteadyAnswer: election.SteadyAnswer{Leader: l.pid, Heartbeat: steadyOf(l.hb), Ack: m.ack, Timeout: 10 * phD},
		fromID: m.pid.ID, fromCreation: 1, linger: time.Hour, since: h.now}
	correct := true
	switch variant {
	case 0:
		r.Ack, correct = m.wrong, false
	case 1:
		r.Heartbeat.Term, correct = 2, false
	}
	m.gen++
	if m.ib.resumePaired(c, &r) {
		if !correct {
			h.errorf("P1: %v's binding stood through a step that changed its answer", m.pid)
		}
		m.ib.mu.Lock()
		m.bound[m.ib.paired] = m.gen
		m.ib.mu.Unlock()
	} else {
		m.ib.publish(&r)
	}
	m.publish, m.correct = true, correct
}

// restartMember is a follower ending and starting again at once, with
// a fresh inbox.
func (h *pairHarness) restartMember() {
	m := h.someMember()
	h.cF[m.node].removeInbox(m.pid)
	m.ib, m.bound, m.publish, m.mail, m.stepping = &inbox{}, make(map[*pairBinding]int), false, false, false
	m.gen++
	h.cF[m.node].addInbox(m.pid, m.ib)
}

// wakeMember is a follower woken by a heartbeat delivered to it: it steps
// what it holds, answers on its own, and publishes again.
func (h *pairHarness) wakeMember() {
	m := h.someMember()
	if !m.mail || m.stepping {
		return
	}
	m.mail = false
	m.ib.withdrawPaired(h.cF[m.node])
	m.ib.take()
	correct := h.rng.Intn(4) > 0 // where its core stands
	m.publish = false
	m.gen++
	ack := m.ack
	if !correct {
		ack = m.wrong
	}
	ack.From.Node = ""
	ack.Echo = m.heard // its core answers the last heartbeat it stepped
	e := CoalescedAck{CoalescedRoute: CoalescedRoute{FromID: m.pid.ID, FromCreation: 1, ToID: m.leader.pid.ID, ToCreation: 1}, Message: ack}
	h.cF[m.node].enqueue(phNodeL, nil, &e, time.Hour)
	h.takeF(m.node, h.stood(), map[gen.PID]bool{m.pid: correct})
	if h.rng.Intn(3) > 0 {
		h.publishMember(m, h.rng.Intn(6))
	}
}

// afterStep puts what the leader node sent on the wire, and checks the
// promises on what the step changed.
func (h *pairHarness) afterStep() {
	for f, node := range phNodesF {
		b, ok := h.cL.take(node)
		if !ok {
			continue
		}
		for _, beat := range b.Beats {
			h.sentBeat(node, &beat)
		}
		h.toF[f] = append(h.toF[f], phFrameToF{b: b})
	}
	for _, l := range h.leaders {
		h.checkLeader(l)
	}
	for _, m := range h.members {
		h.checkMember(m)
	}
}

// sentBeat replays a beat as sent (P2: no beat after an unpairing carries
// the leader's slots).
func (h *pairHarness) sentBeat(dest gen.Atom, b *PairBeat) {
	st := h.standing[dest]
	if st == nil || b.Epoch != h.replayEpoch[dest] || b.Prev == 0 {
		st = make(map[uint32]bool)
		h.standing[dest], h.replayEpoch[dest] = st, b.Epoch
	}
	for _, id := range b.Leaves {
		delete(st, id)
	}
	for _, j := range b.Joins {
		st[j.Slot] = true
	}
	h.sent[phTickKey{dest, b.Tick}] = cloneSet(st)
	for id := range st {
		r := h.slotOwner[phSlotKey{dest, id}]
		if r == nil {
			h.errorf("P2: beat %d to %s carries slot %d, which no pairing the test saw has", b.Tick, dest, id)
			continue
		}
		h.pb.mu.Lock()
		ended := r.q.ended
		h.pb.mu.Unlock()
		if ended {
			h.errorf("P2: beat %d to %s carries slot %d of %v, unpaired before it was sent", b.Tick, dest, id, r.l.pid)
		}
	}
}

func cloneSet(m map[uint32]bool) map[uint32]bool {
	c := make(map[uint32]bool, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// checkLeader checks P4 for l's timer, and P1 to P3 for each of its
// pairings that ended.
func (h *pairHarness) checkLeader(l *phLeader) {
	l.a.inbox.mu.Lock()
	live := l.a.inbox.lead != nil && l.a.inbox.lead.paired != nil
	l.a.inbox.mu.Unlock()
	h.pb.mu.Lock()
	var ended []*phPairing
	for _, r := range l.recs {
		if r.q.ended && !r.checked {
			r.checked = true
			ended = append(ended, r)
		}
	}
	if live {
		live = !l.recs[len(l.recs)-1].q.ended
	}
	h.pb.mu.Unlock()
	l.tm.mu.Lock()
	due := l.tm.due
	l.tm.mu.Unlock()
	if !live && due > h.now+phD {
		h.errorf("P4: %v is not paired, yet its heartbeat timer is parked at %v, beyond its next tick", l.pid, due)
	}
	for _, r := range ended {
		h.checkPairing(r)
	}
}

// checkPairing checks what a pairing did for its leader, once it ended.
func (h *pairHarness) checkPairing(r *phPairing) {
	d, q := r.q.done, r.q
	// P2: every tick counted went out carrying every slot.
	for k := q.since; d.beats > 0 && k < q.since+uint64(d.beats); k++ {
		at, ok := h.tickAt[k]
		if !ok {
			h.errorf("P2: %v was counted tick %d, which never was", r.l.pid, k)
			continue
		}
		if at > r.until {
			h.errorf("P3: %v was counted tick %d at %v, past its beat's end %v", r.l.pid, k, at, r.until)
		}
		for i, dest := range r.dests {
			if !h.sent[phTickKey{dest, k}][r.ids[i]] {
				h.errorf("P2: %v was counted tick %d, whose beat to %s did not carry its slot %d", r.l.pid, k, dest, r.ids[i])
			}
		}
	}
	if d.beats > 0 && d.lastBeat != h.tickAt[q.since+uint64(d.beats)-1] {
		h.errorf("P3: %v's last tick counted at %v, not when it was done", r.l.pid, d.lastBeat)
	}
	// P1 and P3: the acknowledgements credited are the first that came
	// for each slot, each from a member whose answer stood, each within
	// the window of the one before.
	credited := make([][]time.Duration, len(r.dests))
	for i, dest := range r.dests {
		m := r.l.members[i]
		var last uint64
		var got []phAckIn
		for _, a := range h.acksIn[dest] {
			if a.a.Epoch != r.epochs[i] || a.a.Reset || a.a.Tick <= last {
				continue
			}
			last = a.a.Tick
			if a.a.Tick >= r.joins[i] {
				got = append(got, a)
			}
		}
		n := d.acks[i].Count
		if n > len(got) {
			h.errorf("P1: %v credited %d acknowledgements of %v, more than the %d PairAcks that came", r.l.pid, n, m.pid, len(got))
			continue
		}
		if n > 0 && !slices.Contains(got[0].a.Bound, r.ids[i]) {
			h.errorf("P1: %v credited %v from PairAck %d, which does not name its slot %d bound", r.l.pid, m.pid, got[0].a.Tick, r.ids[i])
		}
		prev := r.lastAck[i]
		for _, a := range got[:n] {
			prev = h.lastGenuine(r.l, m, prev, a.at)
			if !a.stood[m.pid] {
				h.errorf("P1: %v credited %v for PairAck %d (epoch %d), whose beat its node took while its answer did not stand",
					r.l.pid, m.pid, a.a.Tick, a.a.Epoch)
			}
			if slices.Contains(a.a.Refused, r.ids[i]) {
				h.errorf("P1: %v credited %v for PairAck %d, which refused its slot", r.l.pid, m.pid, a.a.Tick)
			}
			if a.at-prev >= r.l.window {
				h.errorf("P3: %v credited %v a reply at %v, a window after the one before at %v", r.l.pid, m.pid, a.at, prev)
			}
			prev = a.at
			credited[i] = append(credited[i], a.at)
		}
		if n > 0 && got[n-1].at != d.acks[i].Last {
			h.errorf("P3: %v credited %v's last reply at %v, when it came at %v", r.l.pid, m.pid, d.acks[i].Last, got[n-1].at)
		}
	}
	// P3: each tick counted was within the window of every member's last
	// reply credited by then.
	for k := q.since; d.beats > 0 && k < q.since+uint64(d.beats); k++ {
		at := h.tickAt[k]
		for i := range r.dests {
			last := r.lastAck[i]
			for _, c := range credited[i] {
				if c <= at {
					last = c
				}
			}
			last = h.lastGenuine(r.l, r.l.members[i], last, at)
			if at-last >= r.l.window {
				h.errorf("P3: %v was counted tick %d at %v, a window after %v's last reply credited at %v",
					r.l.pid, k, at, r.l.members[i].pid, last)
			}
		}
	}
}

// checkMember checks a follower's binding: it stands only while the
// answer it was bound with does (P1, P4), and holds only beats that
// carried its slot (P2).
func (h *pairHarness) checkMember(m *phMember) {
	m.ib.mu.Lock()
	bd := m.ib.paired
	var at time.Duration
	var tick uint64
	if bd != nil {
		at, _ = bd.lastBeat()
		tick = bd.src.lastTick.Load()
	}
	m.ib.mu.Unlock()
	if bd == nil {
		return
	}
	g, seen := m.bound[bd]
	if !seen {
		if !m.publish || !m.correct {
			h.errorf("P1: %v was bound to slot %d while its answer did not stand as its leader expects", m.pid, bd.slot)
		}
		m.bound[bd] = m.gen
		g = m.gen
	}
	if g != m.gen && !m.stepping {
		h.errorf("P4: %v is still bound to slot %d after its answer was withdrawn", m.pid, bd.slot)
	}
	if tick >= bd.first && !h.sent[phTickKey{m.pid.Node, tick}][bd.slot] {
		h.errorf("P2: %v holds beat %d (at %v) for slot %d, which that beat did not carry", m.pid, tick, at, bd.slot)
	}
	if at > h.now {
		h.errorf("P3: %v holds a beat at %v, after now", m.pid, at)
	}
}

// lastGenuine is the later of last and the last genuine reply of m to l
// that arrived before at. A paired leader takes such a reply under its
// beat (rule 7) while no PairAck covers the member's slot yet, or is
// unpaired by it, so the windows of P3 run from it too. Strictly before:
// a PairAck is itself a genuine reply at its arrival, and must not be
// judged against itself.
func (h *pairHarness) lastGenuine(l *phLeader, m *phMember, last, at time.Duration) time.Duration {
	for _, t := range h.genuine[[2]gen.PID{l.pid, m.pid}] {
		if t < at {
			last = max(last, t)
		}
	}
	return last
}
