package sim

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
	"github.com/regent-go/regent/internal/quorum"
	"github.com/regent-go/regent/testing/history"
)

// epoch is the wall-clock time the virtual clock starts from.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	// clusterID is the ClusterID of every simulated actor.
	clusterID = "sim"
	// memberName and rogueName are the registered names of a member and of
	// a second actor of the cluster on its node; memberID and rogueID their
	// PIDs' IDs, which tell them apart on one node.
	memberName = "regent"
	rogueName  = "rogue"
	memberID   = 1
	rogueID    = 2
)

// Simulator runs one simulated cluster. It is owned by one goroutine.
type Simulator struct {
	cfg   Config
	now   time.Duration
	queue queue
	seq   uint64
	net   *rand.Rand // delivery decisions

	// members are the cluster's members by index, one per node; actors are
	// the members followed by the second actors (rogues) started so far.
	members []*member
	actors  []*member
	byNode  map[gen.Atom]int // node name → member index
	rogueOn map[int]*member  // member index → the second actor on its node

	cut    [][]bool     // per pair of nodes: they cannot reach each other
	oneway [][]bool     // per (from, to): what from sends to is lost
	slow   [][]slowdown // per (from, to): the delay FaultDelay adds
	cutGen [][]uint64   // per pair, bumped whenever the pair's cuts change
	noted  [][]bool     // per (by, of): by noticed its connection to of died
	// heals counts the heals so far: the cut a FaultDelay plans applies
	// only if none came in between.
	heals uint64

	// awaiting are the faults waiting for a view change (Fault.AwaitChange)
	// by id; changed is set when a leader proposed one since the last step,
	// subject is the member that change added or removed (-1: none yet).
	awaiting map[uint64]Fault
	awaitSeq uint64
	changed  bool
	subject  int
	// lastFault is when the last planned fault applies at the latest.
	lastFault time.Duration

	hist  *history.History
	sched Schedule
	// skipped counts planned faults that could not apply (see Skipped).
	skipped int
	steps   uint64
	digest  uint64
	// handovers counts the MessageTimeoutNow delivered: a leader handing
	// over (a preferred member, a stop).
	handovers int
	// late counts the confirmations answered after the evidence of a
	// majority lapsed (Config.ConfirmTakes): the core then leads without
	// publishing until a majority answers.
	late int
	// unbacked counts the publications of leadership (HandleBecomeLeader)
	// made without the evidence of a majority at that instant.
	unbacked int
}

// member is one simulated actor, a member or a second actor on a member's
// node: its current core and what the shell keeps.
type member struct {
	index int    // in Simulator.actors
	node  int    // the member whose node it runs on; its own index for a member
	name  string // as the history shows it
	host  string // for a second actor, the name of the member whose node it shares
	id    gen.ProcessID
	life  int
	live  bool
	// downAt and downNotice: when it went down and how long its peers take
	// to see the connection gone.
	downAt     time.Duration
	downNotice time.Duration
	stopped    bool          // down by a graceful stop
	started    time.Duration // when the current life began
	pid        gen.PID
	core       *election.Core
	armed      map[election.TimerKind]election.Timer // current arming per kind
	stored     election.HardState                    // durable storage
	monitors   []gen.PID                             // PIDs this life monitors, in order
	last       snapshot                              // what the history last recorded of this life
	lease      leaseState                            // the lease the history last recorded of this life
	sentAt     []time.Duration                       // the distinct instants this life sent at, within an evidence window (leaseEnd)
	lastVote   election.HardState
	// confirming is the rest of the Ready a HandleConfirmLeader that takes
	// Config.ConfirmTakes holds up, nil when none runs; the life steps
	// nothing until busyUntil.
	confirming *confirming
	busyUntil  time.Duration
}

// confirming is what waits for a HandleConfirmLeader to answer: its term,
// and the effects of its Ready after it (the Ready's messages went before
// it, as the shell sends them).
type confirming struct {
	term    uint64
	effects []election.Effect
}

// busy reports whether m is in a HandleConfirmLeader at now; what reaches
// it then waits in its mailbox.
func (m *member) busy(now time.Duration) bool { return m.confirming != nil && now < m.busyUntil }

func (m *member) rogue() bool { return m.host != "" }

// snapshot is the part of an actor's state whose change is recorded.
type snapshot struct {
	role     election.Role
	protocol bool
	term     uint64
	leader   gen.PID
	viewSize int
	stamp    election.ViewStamp
	view     string
	recorded bool
}

// New starts every member of cfg (filling its defaults) at virtual time zero
// and schedules the planned and chaos faults. Errors wrap gen.ErrIncorrect.
func New(cfg Config) (*Simulator, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n := cfg.Members
	s := &Simulator{
		cfg:      cfg,
		net:      rand.New(rand.NewPCG(cfg.Seed, 1)),
		byNode:   map[gen.Atom]int{},
		rogueOn:  map[int]*member{},
		cut:      square[bool](n),
		oneway:   square[bool](n),
		slow:     square[slowdown](n),
		cutGen:   square[uint64](n),
		noted:    square[bool](n),
		awaiting: map[uint64]Fault{},
		subject:  -1,
		hist:     history.New(),
		sched:    Schedule{Config: describe(cfg)},
		digest:   14695981039346656037,
	}
	for i := range n {
		node := gen.Atom(fmt.Sprintf("m%d@sim", i+1))
		m := &member{index: i, node: i, name: fmt.Sprintf("m%d", i+1), id: gen.ProcessID{Name: memberName, Node: node}}
		s.members = append(s.members, m)
		s.actors = append(s.actors, m)
		s.byNode[node] = i
	}
	plan := cfg.Plan
	if cfg.Chaos != nil {
		plan = append(slices.Clone(plan), chaosPlan(rand.New(rand.NewPCG(cfg.Seed, 2)), n, *cfg.Chaos)...)
	}
	for _, f := range sortPlan(plan) {
		s.push(&item{at: f.At, kind: itemFault, fault: f})
		s.lastFault = max(s.lastFault, f.At+f.AwaitChange+f.CutAfter)
	}
	for _, m := range s.members {
		if err := s.start(m); err != nil {
			return nil, err
		}
	}
	for _, i := range cfg.Rogues {
		what, err := s.startRogue(s.members[i])
		if err != nil {
			return nil, err
		}
		s.sched.Entries = append(s.sched.Entries, Entry{What: what + " (from the start: no view names anyone yet)"})
	}
	return s, nil
}

func square[T any](n int) [][]T {
	out := make([][]T, n)
	for i := range out {
		out[i] = make([]T, n)
	}
	return out
}

// Now is the virtual time since the start.
func (s *Simulator) Now() time.Duration { return s.now }

// Steps counts the queue items processed so far.
func (s *Simulator) Steps() uint64 { return s.steps }

// LateConfirmations counts the HandleConfirmLeader answers (of
// Config.ConfirmTakes) that left their member leading unpublished: given
// after the evidence of a majority lapsed, they publish only once a
// majority answers again.
func (s *Simulator) LateConfirmations() int { return s.late }

// UnbackedPublications counts the members that became the visible leader
// (HandleBecomeLeader) without the evidence of a majority at that instant
// (Core.LeadsAt false): leader work started on lapsed evidence, which the
// core must never do, however late its HandleConfirmLeader answered. Under
// EvidenceReplies only: under EvidenceContact a send the runtime accepted
// is evidence until it is reported failed, so a publication on sends that
// fail in the same Ready (a cut) is the contact rule, not a lapse.
func (s *Simulator) UnbackedPublications() int { return s.unbacked }

// Fingerprint digests every step processed so far (time, kind, member,
// message); two runs that did the same things have the same fingerprint.
func (s *Simulator) Fingerprint() uint64 { return s.digest }

// History is the record of the run, for the checkers in testing/history.
func (s *Simulator) History() *history.History { return s.hist }

// Schedule lists the faults applied so far and the config that reproduces them.
func (s *Simulator) Schedule() Schedule {
	out := s.sched
	out.Entries = slices.Clone(s.sched.Entries)
	return out
}

// Bounds are the limits of the timed invariants for this run's config.
func (s *Simulator) Bounds() history.Bounds { return s.cfg.Bounds() }

// Config is the configuration of the run, defaults filled in.
func (s *Simulator) Config() Config { return s.cfg }

// Name is the name of member i (from 0) as the history shows it.
func (s *Simulator) Name(i int) string { return s.members[i].name }

// LastFault is the time the last fault of the plan (chaos included)
// applies at the latest: after it, only the cluster's own settling remains.
func (s *Simulator) LastFault() time.Duration { return s.lastFault }

// Settled reports whether the cluster is whole and agreed now: every member
// live, no cut, no second actor running, and one visible leader that every
// other member follows and whose view holds every member. It is the live
// counterpart of the history's convergence rule.
func (s *Simulator) Settled() bool {
	var leader *member
	for _, a := range s.actors {
		switch {
		case a.live == a.rogue():
			return false
		case a.live && a.core.IsLeader() && leader != nil:
			return false
		case a.live && a.core.IsLeader():
			leader = a
		}
	}
	if leader == nil {
		return false
	}
	if !s.whole() {
		return false
	}
	v, _ := leader.core.View()
	for _, m := range s.members {
		if !slices.Contains(v.Members, m.id) || m != leader && (m.core.Role() != election.RoleFollower || m.core.Leader() != leader.pid) {
			return false
		}
	}
	return true
}

// Leaders lists the live members that hold leadership visibly, by index.
func (s *Simulator) Leaders() []int {
	var out []int
	for _, m := range s.members {
		if m.live && m.core.IsLeader() {
			out = append(out, m.index)
		}
	}
	return out
}

// Preferred is the live member the preferred-leader rule ranks first, by
// index, or -1 under PreferNone or when every member is down: where
// leadership should settle once the cluster is quiet.
func (s *Simulator) Preferred() int {
	best := -1
	var bestCand election.Candidate
	for _, m := range s.members {
		if !m.live {
			continue
		}
		c := election.Candidate{Node: m.id.Node, ProcessID: m.id, Started: epoch.Add(m.started)}
		if best < 0 || s.cfg.Election.Prefer.Prefers(c, bestCand) {
			best, bestCand = m.index, c
		}
	}
	if s.cfg.Election.Prefer.Kind == election.PreferNone {
		return -1
	}
	return best
}

// Term is member i's current term, zero while it is down.
func (s *Simulator) Term(i int) uint64 {
	if m := s.members[i]; m.live {
		return m.core.Term()
	}
	return 0
}

// Status snapshots member i's core; ok is false while it is down.
func (s *Simulator) Status(i int) (st election.Status, ok bool) {
	return s.members[i].status(s.clock())
}

// RogueStatus snapshots the core of the second actor on member i's node;
// ok is false while none runs.
func (s *Simulator) RogueStatus(i int) (st election.Status, ok bool) {
	if r := s.rogueOn[i]; r != nil {
		return r.status(s.clock())
	}
	return election.Status{}, false
}

// status snapshots m's core at now; ok is false while m is down.
func (m *member) status(now time.Time) (election.Status, bool) {
	if !m.live {
		return election.Status{}, false
	}
	return m.core.Status(now), true
}

// Step processes the next queue item, advancing the clock to it. It reports
// false when nothing is left to happen.
func (s *Simulator) Step() bool {
	if len(s.queue) == 0 {
		return false
	}
	it := heap.Pop(&s.queue).(*item)
	s.now = max(s.now, it.at)
	s.steps++
	s.mix(uint64(it.at), uint64(it.kind), uint64(it.to), uint64(it.life))
	switch it.kind {
	case itemDeliver:
		s.deliver(it)
	case itemTimer:
		s.fire(it)
	case itemPeerDown:
		s.peerDown(it)
	case itemDetect:
		s.detect(it)
	case itemFault:
		s.planned(it)
	case itemConfirm:
		s.confirmed(it)
	}
	if s.changed {
		s.changed = false
		s.releaseAwaiting("on a view change")
	}
	return true
}

// planned applies a fault of the plan when its time comes: at once, or
// once a view change is proposed when it awaits one (its deadline comes
// back as an item marked with the await id).
func (s *Simulator) planned(it *item) {
	f := it.fault
	switch {
	case it.await != 0:
		if _, pending := s.awaiting[it.await]; !pending {
			return
		}
		delete(s.awaiting, it.await)
		f.AwaitChange = 0
		s.applyPlanned(f, fmt.Sprintf("no view change within %s", it.fault.AwaitChange))
		return
	case it.unlessHealed && it.heals != s.heals:
		s.skipped++
		s.sched.Entries = append(s.sched.Entries, Entry{At: s.now, What: fmt.Sprintf("skipped %s of %s: a heal came first", f.Kind, s.members[f.Member].name), Fault: f})
		return
	case f.AwaitChange > 0:
		s.awaitSeq++
		s.awaiting[s.awaitSeq] = f
		s.push(&item{at: s.now + f.AwaitChange, kind: itemFault, fault: f, await: s.awaitSeq})
		return
	}
	s.applyPlanned(f, "")
}

// releaseAwaiting applies every fault waiting for a view change, in the
// order they started waiting.
func (s *Simulator) releaseAwaiting(why string) {
	ids := make([]uint64, 0, len(s.awaiting))
	for id := range s.awaiting {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		f := s.awaiting[id]
		delete(s.awaiting, id)
		f.AwaitChange = 0
		s.applyPlanned(f, why)
	}
}

// applyPlanned applies a fault of the plan. A planned fault that cannot
// apply (a crash of a member already down) is written to the schedule as
// skipped by apply itself; the plan was validated by New, so nothing else
// can fail here.
func (s *Simulator) applyPlanned(f Fault, why string) {
	if err := s.applyNoting(f, why); err != nil {
		s.skipped++
	}
}

// Run processes everything due within d of now and moves the clock to now+d.
func (s *Simulator) Run(d time.Duration) {
	s.RunUntil(func() bool { return false }, d)
}

// RunUntil runs like Run but stops after the first step at which done
// reports true; it reports whether done did.
func (s *Simulator) RunUntil(done func() bool, limit time.Duration) bool {
	end := s.now + limit
	for len(s.queue) > 0 && s.queue[0].at <= end {
		s.Step()
		if done() {
			s.hist.Finish(s.now)
			return true
		}
	}
	s.now = end
	s.hist.Finish(s.now)
	return false
}

// mix folds values into the fingerprint (FNV-1a over 64-bit words).
func (s *Simulator) mix(vs ...uint64) {
	for _, v := range vs {
		s.digest ^= v
		s.digest *= 1099511628211
	}
}

func (s *Simulator) clock() time.Time { return epoch.Add(s.now) }

// actorOf finds the actor a PID belongs to, whichever its life; nil for a
// PID no actor ever had.
func (s *Simulator) actorOf(pid gen.PID) *member {
	return s.on(pid.Node, pid.ID == memberID, pid.ID == rogueID)
}

// named finds the actor registered as id, nil when none ever was.
func (s *Simulator) named(id gen.ProcessID) *member {
	return s.on(id.Node, id.Name == memberName, id.Name == rogueName)
}

// on finds the member on node, or the second actor there; nil when node is
// no member's or the actor asked for never ran.
func (s *Simulator) on(node gen.Atom, isMember, isRogue bool) *member {
	i, ok := s.byNode[node]
	switch {
	case !ok:
		return nil
	case isMember:
		return s.members[i]
	case isRogue:
		return s.rogueOn[i]
	}
	return nil
}

// nameOf is how the history names the actor registered as id.
func (s *Simulator) nameOf(id gen.ProcessID) string {
	if a := s.named(id); a != nil {
		return a.name
	}
	return id.String()
}

// start begins a new life of m: a fresh core with its stored state when
// durable, declaring its peers.
func (s *Simulator) start(m *member) error {
	m.life++
	m.confirming, m.busyUntil = nil, 0
	m.live = true
	m.started = s.now
	m.stopped = false
	id := memberID
	if m.rogue() {
		id = rogueID
	}
	m.pid = gen.PID{Node: m.id.Node, ID: uint64(id), Creation: int64(m.life)}
	m.armed = map[election.TimerKind]election.Timer{}
	m.monitors = nil
	m.last = snapshot{}
	m.lease = leaseState{}
	m.sentAt = m.sentAt[:0]
	m.lastVote = election.HardState{}
	hs := election.HardState{}
	if s.cfg.Durable {
		hs = m.stored
	} else {
		m.stored = election.HardState{}
	}
	var peers []gen.ProcessID
	if m.rogue() {
		for _, p := range s.members {
			if p.index != m.node {
				peers = append(peers, p.id)
			}
		}
	} else {
		for _, j := range s.cfg.Lists[m.index] {
			peers = append(peers, s.members[j].id)
		}
	}
	cfg := s.cfg.Election
	cfg.ClusterID = clusterID
	cfg.Self = m.id
	cfg.Started = s.clock()
	cfg.Rand = rand.New(rand.NewPCG(s.cfg.Seed, uint64(1000*(m.index+1)+m.life)))
	cfg.Bootstrap = nil
	if !s.cfg.Join {
		cfg.Bootstrap = peers
	}
	core, err := election.New(cfg, m.pid, hs, s.clock())
	if err != nil {
		return fmt.Errorf("sim: start %s life %d: %w", m.name, m.life, err)
	}
	m.core = core
	switch {
	case m.life > 1:
		s.hist.Append(history.Event{At: s.now, Kind: history.KindRestart, Member: m.name, Life: m.life, Durable: s.cfg.Durable, Node: m.host})
	case m.rogue():
		s.hist.Append(history.Event{At: s.now, Kind: history.KindStart, Member: m.name, Life: m.life, Node: m.host})
	}
	if s.cfg.Join {
		for _, p := range peers {
			if err := core.Join(s.clock(), p); err != nil {
				return fmt.Errorf("sim: %s joins %s: %w", m.name, p, err)
			}
		}
	}
	s.drain(m)
	return nil
}

// drain handles every Ready of m as the leader shell would, then records
// m's state if it changed.
func (s *Simulator) drain(m *member) { s.drainFrom(m, false) }

// drainFrom is drain after a part of a Ready that changed the view or not.
func (s *Simulator) drainFrom(m *member, viewChanged bool) {
	for m.confirming == nil && m.core.HasReady() {
		rd := m.core.Ready()
		if rd.HardState != nil {
			m.stored = *rd.HardState
			s.recordVote(m, *rd.HardState)
		}
		for _, op := range rd.Timers {
			if op.Cancel {
				delete(m.armed, op.Timer.Kind)
				continue
			}
			m.armed[op.Timer.Kind] = op.Timer
			s.push(&item{at: s.now + op.After, kind: itemTimer, to: m.index, life: m.life, timer: op.Timer})
		}
		s.carryOut(m, rd.Effects, rd.Messages, &viewChanged)
	}
	if s.cfg.Election.Evidence == election.EvidenceReplies && m.core.IsLeader() && m.last.role != election.RoleLeader && !m.core.LeadsAt(s.clock()) {
		s.unbacked++
	}
	s.recordState(m, viewChanged)
	s.recordLease(m)
}

// carryOut runs a Ready's effects in order, then sends its messages; as the
// shell does, a HandleConfirmLeader has them sent first. One that takes
// Config.ConfirmTakes holds up the effects after it until its answer
// (confirmed).
func (s *Simulator) carryOut(m *member, effects []election.Effect, messages []election.Outbound, viewChanged *bool) {
	for i, e := range effects {
		switch e.Kind {
		case election.EffectConfirm:
			if d := s.cfg.ConfirmTakes; d > 0 {
				// The shell sends a Ready's messages before it asks.
				for _, out := range messages {
					s.send(m, out)
				}
				m.confirming = &confirming{term: e.Term, effects: effects[i+1:]}
				m.busyUntil = s.now + d
				s.push(&item{at: m.busyUntil, kind: itemConfirm, to: m.index, life: m.life})
				return
			}
			m.core.ConfirmResult(s.clock(), e.Term, true, nil)
		case election.EffectMonitor:
			s.monitor(m, e.PID)
		case election.EffectDemonitor:
			m.monitors = slices.DeleteFunc(m.monitors, func(p gen.PID) bool { return p == e.PID })
		case election.EffectViewChanged:
			*viewChanged = true
			s.noteChange(m, e)
		}
	}
	for _, out := range messages {
		s.send(m, out)
	}
}

// confirmed answers m's slow HandleConfirmLeader with a grant, as the shell
// does when it returns, and carries out what it held up.
func (s *Simulator) confirmed(it *item) {
	m := s.actors[it.to]
	c := m.confirming
	if !m.live || m.life != it.life || c == nil {
		return
	}
	m.confirming = nil
	if m.core.IsProtocolLeader() && m.core.Term() == c.term {
		m.core.ConfirmResult(s.clock(), c.term, true, nil)
		if m.core.IsProtocolLeader() && !m.core.IsLeader() {
			s.late++
		}
	}
	viewChanged := false
	s.carryOut(m, c.effects, nil, &viewChanged)
	s.drainFrom(m, viewChanged)
}

// waits puts it back in the queue for when m's HandleConfirmLeader answers,
// and reports whether it did: what reaches a busy member waits in its
// mailbox, in order.
func (s *Simulator) waits(m *member, it *item) bool {
	if !m.busy(s.now) {
		return false
	}
	again := *it
	again.at, again.arrived = m.busyUntil, true
	s.push(&again)
	return true
}

// noteChange marks a view change a leader proposed (a member added or
// removed), for the faults that await one.
func (s *Simulator) noteChange(m *member, e election.Effect) {
	if e.FromView == nil || e.ToView == nil || !m.core.IsProtocolLeader() || slices.Equal(e.FromView.Members, e.ToView.Members) {
		return
	}
	s.changed = true
	for _, sets := range [][2][]gen.ProcessID{{e.FromView.Members, e.ToView.Members}, {e.ToView.Members, e.FromView.Members}} {
		for _, p := range sets[0] {
			if !slices.Contains(sets[1], p) {
				if a := s.named(p); a != nil {
					s.subject = a.node
				}
			}
		}
	}
}

// monitor starts m monitoring pid; a monitor of a process that is already
// gone, or behind a noticed cut, fires at once as the runtime's would.
func (s *Simulator) monitor(m *member, pid gen.PID) {
	if slices.Contains(m.monitors, pid) {
		return
	}
	m.monitors = append(m.monitors, pid)
	p := s.actorOf(pid)
	if p == nil {
		return
	}
	var reason error
	switch {
	case s.noted[m.node][p.node] || (!p.live && !p.stopped):
		reason = gen.ErrNoConnection
	case !p.live:
		reason = gen.TerminateReasonShutdown
	case p.pid != pid:
		reason = gen.ErrProcessUnknown
	default:
		return
	}
	s.push(&item{at: s.now + s.cfg.Network.Latency, kind: itemPeerDown, to: m.index, life: m.life, pid: pid, reason: reason})
}

// nodeDown reports whether node i is gone for its peers: its member is
// down and noticed so, and no second actor keeps the node running.
func (s *Simulator) nodeDown(i int) bool {
	p := s.members[i]
	r := s.rogueOn[i]
	return !p.live && s.now >= p.downAt+p.downNotice && (r == nil || !r.live)
}

// send puts one outbound message on the simulated network, or reports it
// failed when its connection is known dead.
func (s *Simulator) send(m *member, out election.Outbound) {
	node := out.To.Node
	if out.To == (gen.PID{}) {
		node = out.ToName.Node
	}
	i, ok := s.byNode[node]
	if !ok {
		m.core.SendFailed(s.clock(), node, fmt.Errorf("sim: send to %s: %w", node, gen.ErrNoRoute))
		return
	}
	if s.noted[m.node][i] || s.nodeDown(i) {
		m.core.SendFailed(s.clock(), node, fmt.Errorf("sim: send from %s to %s: %w", m.name, s.members[i].name, gen.ErrNoConnection))
		return
	}
	if k := len(m.sentAt); k == 0 || m.sentAt[k-1] != s.now {
		w := evidenceWindow(s.cfg.Election)
		m.sentAt = append(slices.DeleteFunc(m.sentAt, func(t time.Duration) bool { return t+w <= s.now }), s.now)
	}
	n := s.cfg.Network
	if s.net.Float64() < n.Loss {
		return
	}
	copies := 1
	if s.net.Float64() < n.Duplicate {
		copies = 2
	}
	for range copies {
		delay := n.Latency
		if n.Jitter > 0 {
			delay += time.Duration(s.net.Int64N(int64(n.Jitter)))
		}
		if n.Reorder > 0 && s.net.Float64() < n.Reorder {
			delay += time.Duration(s.net.Int64N(int64(n.ReorderDelay) + 1))
		}
		delay += s.slow[m.node][i].at(s.now)
		s.push(&item{at: s.now + delay, kind: itemDeliver, to: i, from: m.pid, target: out.To, toName: out.ToName, msg: out.Message})
	}
}

// deliver hands a message to its receiver (by PID, or by name on node
// it.to), unless its connection died on the way: the sender's life ended,
// the receiver is down or is another life than the one addressed, or the
// pair of nodes is cut.
func (s *Simulator) deliver(it *item) {
	from := s.actorOf(it.from)
	to := s.actorOf(it.target)
	if it.target == (gen.PID{}) {
		to = s.named(it.toName)
	}
	// A member that stopped gracefully closed its connections after what it
	// had sent (its handover among them), so that still arrives; a crash
	// loses what was in flight.
	sent := from != nil && from.pid == it.from && (from.live || from.stopped)
	switch {
	case it.arrived && (to == nil || !to.live || to.life != it.life):
		s.mix(0)
		return
	case it.arrived:
	case !sent, to == nil || !to.live,
		it.target != (gen.PID{}) && it.target != to.pid, s.cut[from.node][to.node], s.oneway[from.node][to.node]:
		s.mix(0)
		return
	}
	if !it.arrived {
		it.life = to.life
	}
	if s.waits(to, it) {
		return
	}
	s.mix(1, uint64(from.index))
	if _, ok := it.msg.(election.MessageTimeoutNow); ok {
		s.handovers++
	}
	to.core.Step(s.clock(), it.from, it.msg)
	s.drain(to)
}

// fire hands a timer back to its core if it is the current arming.
func (s *Simulator) fire(it *item) {
	m := s.actors[it.to]
	if t, ok := m.armed[it.timer.Kind]; !m.live || m.life != it.life || !ok || t != it.timer || s.waits(m, it) {
		return
	}
	delete(m.armed, it.timer.Kind)
	m.core.Tick(s.clock(), it.timer)
	s.drain(m)
}

// peerDown fires m's monitor of a peer, once.
func (s *Simulator) peerDown(it *item) {
	m := s.actors[it.to]
	if !m.live || m.life != it.life || !slices.Contains(m.monitors, it.pid) || s.waits(m, it) {
		return
	}
	m.monitors = slices.DeleteFunc(m.monitors, func(p gen.PID) bool { return p == it.pid })
	m.core.PeerDown(s.clock(), it.pid, it.reason)
	s.drain(m)
}

// detect notices a cut that still stands. A two-way cut is noticed by both
// sides; a one-way cut from peer to to (it.oneWay) first by to, the side
// that hears nothing any more, which closes the connection, and then
// (it.closing) by peer, when that close reaches it over the direction that
// still works, delayed as anything sent on it. From then on that side's
// sends across it fail and its monitors of the other side fire with
// gen.ErrNoConnection.
func (s *Simulator) detect(it *item) {
	a, b := it.to, it.peer
	if s.cutGen[a][b] != it.cutGen {
		return
	}
	switch {
	case it.closing:
		if s.oneway[a][b] && !s.oneway[b][a] {
			s.notice(a, b)
		}
	case it.oneWay:
		if !s.oneway[b][a] {
			return
		}
		s.notice(a, b)
		if !s.oneway[a][b] {
			close := s.cfg.Network.Latency + s.slow[a][b].at(s.now)
			s.push(&item{at: s.now + close, kind: itemDetect, to: b, peer: a, oneWay: true, closing: true, cutGen: it.cutGen})
		}
	case s.cut[a][b]:
		s.notice(a, b)
		s.notice(b, a)
	}
}

// notice makes node by see its connection to node of dead.
func (s *Simulator) notice(by, of int) {
	s.noted[by][of] = true
	other := s.members[of].id.Node
	for _, m := range slices.Clone(s.actors) {
		if !m.live || m.node != by {
			continue
		}
		for _, pid := range slices.Clone(m.monitors) {
			if pid.Node == other {
				s.peerDown(&item{to: m.index, life: m.life, pid: pid, reason: gen.ErrNoConnection})
			}
		}
	}
}

// recordState appends m's state to the history when it changed. The view
// is read only when it may have changed: viewChanged (a ViewChanged effect
// in the Ready just handled), or a change of role or term (a leader
// re-stamps its view when it wins, without an effect).
func (s *Simulator) recordState(m *member, viewChanged bool) {
	c := m.core
	now := snapshot{role: c.Role(), protocol: c.IsProtocolLeader(), term: c.Term(), leader: c.Leader(), viewSize: c.ViewSize(), recorded: true}
	now.stamp, now.view = m.last.stamp, m.last.view
	if now == m.last && !viewChanged {
		return
	}
	v, hasView := c.View()
	now.stamp, now.view = election.ViewStamp{}, ""
	var names []string
	if hasView {
		now.stamp = v.Stamp
		names = make([]string, len(v.Members))
		for i, p := range v.Members {
			names[i] = s.nameOf(p)
		}
		now.view = strings.Join(names, ",")
	}
	if now == m.last {
		return
	}
	m.last = now
	e := history.Event{
		At: s.now, Kind: history.KindState, Member: m.name, Life: m.life, Node: m.host,
		Role: now.role.String(), Term: now.term, ViewSize: now.viewSize, Quorum: c.Quorum(),
		MinClusterSize: s.cfg.Election.MinClusterSize, ProtocolLeader: now.protocol,
	}
	if now.leader != (gen.PID{}) {
		e.Leader = string(now.leader.Node)
		if a := s.actorOf(now.leader); a != nil {
			e.Leader = a.name
		}
	}
	if hasView {
		e.Lineage, e.ViewTerm, e.ViewEpoch, e.Agreed, e.View = v.Stamp.Lineage.String(), v.Stamp.Key.Term, v.Stamp.Key.Epoch, v.Stamp.Agreed, names
		if v.Stamp.Agreed {
			e.AgreedSize, e.AgreedQuorum = len(v.Members), quorum.Majority(len(v.Members))
		}
	}
	if now.protocol {
		e.VotesGranted = c.VotesGranted()
	}
	s.hist.Append(e)
}

// leaseState is a lease as recorded: zero when the actor does not lead.
type leaseState struct {
	until   time.Duration
	term    uint64
	lineage election.Lineage
}

// recordLease records m's lease in the history when it changed: until
// when, with no further input, its core's LeadsAt holds; none once m is
// down. Only under EvidenceReplies, the rule Bounds.Lease applies to.
func (s *Simulator) recordLease(m *member) {
	if s.cfg.Election.Evidence != election.EvidenceReplies {
		return
	}
	var now leaseState
	if until, ok := s.leaseEnd(m); ok && m.live {
		v, _ := m.core.View()
		now = leaseState{until: until, term: m.core.Term(), lineage: v.Stamp.Lineage}
	}
	if now == m.lease {
		return
	}
	m.lease = now
	l := history.Lease{Member: m.name, Life: m.life, Node: m.host, From: s.now, Until: s.now}
	if now != (leaseState{}) {
		l.Until, l.Term, l.Lineage = now.until, now.term, now.lineage.String()
	}
	s.hist.RecordLease(l)
}

// leaseEnd is the first time from now at which m's LeadsAt is false with
// no further input, history.Forever when it stays true (a view of one);
// ok is false when it is false now. LeadsAt can only turn false as time
// passes between steps, and does so within the evidence window W, since
// every reply it counts was credited by now. It turns false W after the
// evidence of some reply, which is when m sent what the reply answers: the
// first of those instants (m.sentAt) plus W at which it is false, checked
// to be false just there and true just before, is the end. A search over
// (now, now + W] finds it otherwise.
func (s *Simulator) leaseEnd(m *member) (until time.Duration, ok bool) {
	at := func(t time.Duration) bool { return m.core.LeadsAt(epoch.Add(t)) }
	ends := func(t time.Duration) bool { return t > s.now && !at(t) && at(t-1) }
	if prev := m.lease.until; prev != history.Forever && ends(prev) {
		return prev, true // most steps of a leader leave its lease as it was
	}
	if !at(s.now) {
		return 0, false
	}
	w := evidenceWindow(s.cfg.Election)
	// m.sentAt holds only instants within W of its last send (send).
	if i, _ := slices.BinarySearchFunc(m.sentAt, true, func(t time.Duration, _ bool) int {
		if at(t + w) {
			return -1
		}
		return 1
	}); i < len(m.sentAt) && ends(m.sentAt[i]+w) {
		return m.sentAt[i] + w, true
	}
	lo, hi := s.now, s.now+w // at(lo) holds; at(hi) does not, unless it never ends
	if at(hi) {
		return history.Forever, true
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if at(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, true
}

// recordVote appends a vote to the history when hs records a new one.
func (s *Simulator) recordVote(m *member, hs election.HardState) {
	if hs.VotedFor == (gen.ProcessID{}) || (hs.Term == m.lastVote.Term && hs.VotedFor == m.lastVote.VotedFor) {
		return
	}
	m.lastVote = hs
	s.hist.Append(history.Event{
		At: s.now, Kind: history.KindVote, Member: m.name, Life: m.life, Term: hs.Term, Node: m.host,
		VotedFor: s.nameOf(hs.VotedFor),
	})
}

// Skipped is the number of planned faults that could not apply, such as a
// crash of a member that was already down; the schedule says which and why.
func (s *Simulator) Skipped() int { return s.skipped }
