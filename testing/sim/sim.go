package sim

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
	"github.com/regent-go/regent/testing/history"
)

// epoch is the wall-clock time the virtual clock starts from.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// clusterID is the ClusterID of every simulated member.
const clusterID = "sim"

// Simulator runs one simulated cluster. It is owned by one goroutine.
type Simulator struct {
	cfg   Config
	now   time.Duration
	queue queue
	seq   uint64
	net   *rand.Rand // delivery decisions

	members []*member
	byNode  map[gen.Atom]int

	group  []int      // partition side of each member; all zero when healed
	cutGen [][]uint64 // per pair, bumped whenever the pair is cut or rejoined
	noted  [][]bool   // per pair, whether the current cut has been noticed
	hist   *history.History
	sched  Schedule
	// skipped counts planned faults that could not apply (see Skipped).
	skipped int
	steps   uint64
	digest  uint64
}

// member is one simulated member: its current core and what the shell keeps.
type member struct {
	index int
	name  string // as the history shows it
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
	lastVote   election.HardState
}

// snapshot is the part of a member's state whose change is recorded.
type snapshot struct {
	role     election.Role
	term     uint64
	leader   gen.Atom
	viewSize int
	recorded bool
}

// New starts every member of cfg (filling its defaults) at virtual time zero
// and schedules the planned and chaos faults. Errors wrap gen.ErrIncorrect.
func New(cfg Config) (*Simulator, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Simulator{
		cfg:    cfg,
		net:    rand.New(rand.NewPCG(cfg.Seed, 1)),
		byNode: map[gen.Atom]int{},
		group:  make([]int, cfg.Members),
		cutGen: make([][]uint64, cfg.Members),
		noted:  make([][]bool, cfg.Members),
		hist:   history.New(),
		sched:  Schedule{Config: describe(cfg)},
		digest: 14695981039346656037,
	}
	for i := range cfg.Members {
		s.cutGen[i] = make([]uint64, cfg.Members)
		s.noted[i] = make([]bool, cfg.Members)
		node := gen.Atom(fmt.Sprintf("m%d@sim", i+1))
		s.members = append(s.members, &member{index: i, name: fmt.Sprintf("m%d", i+1), id: gen.ProcessID{Name: "regent", Node: node}})
		s.byNode[node] = i
	}
	plan := cfg.Plan
	if cfg.Chaos != nil {
		plan = append(slices.Clone(plan), chaosPlan(rand.New(rand.NewPCG(cfg.Seed, 2)), cfg.Members, *cfg.Chaos)...)
	}
	for _, f := range sortPlan(plan) {
		s.push(&item{at: f.At, kind: itemFault, fault: f})
	}
	for _, m := range s.members {
		if err := s.start(m); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Now is the virtual time since the start.
func (s *Simulator) Now() time.Duration { return s.now }

// Steps counts the queue items processed so far.
func (s *Simulator) Steps() uint64 { return s.steps }

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

// Leaders lists the live members that hold leadership, by index.
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
		if best < 0 || s.cfg.Prefer.Prefers(c, bestCand) {
			best, bestCand = m.index, c
		}
	}
	if s.cfg.Prefer.Kind == election.PreferNone {
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
	m := s.members[i]
	if !m.live {
		return election.Status{}, false
	}
	return m.core.Status(s.clock()), true
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
		// A planned fault that cannot apply (a crash of a member already
		// down) is written to the schedule as skipped by apply itself; the
		// plan was validated by New, so nothing else can fail here.
		if err := s.apply(it.fault); err != nil {
			s.skipped++
		}
	}
	return true
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

// start begins a new life of m: a fresh core with its stored state when
// durable, declared to every peer.
func (s *Simulator) start(m *member) error {
	m.life++
	m.live = true
	m.started = s.now
	m.stopped = false
	m.pid = gen.PID{Node: m.id.Node, ID: 1, Creation: int64(m.life)}
	m.armed = map[election.TimerKind]election.Timer{}
	m.monitors = nil
	m.last = snapshot{}
	m.lastVote = election.HardState{}
	hs := election.HardState{}
	if s.cfg.Durable {
		hs = m.stored
	} else {
		m.stored = election.HardState{}
	}
	var peers []gen.ProcessID
	for _, p := range s.members {
		if p != m {
			peers = append(peers, p.id)
		}
	}
	cfg := election.Config{
		ClusterID:           clusterID,
		Self:                m.id,
		MinClusterSize:      s.cfg.MinClusterSize,
		ElectionTimeoutMin:  s.cfg.ElectionTimeoutMin,
		ElectionTimeoutMax:  s.cfg.ElectionTimeoutMax,
		HeartbeatInterval:   s.cfg.HeartbeatInterval,
		GhostTTL:            s.cfg.GhostTTL,
		DisablePreVote:      !s.cfg.PreVote,
		Evidence:            s.cfg.Evidence,
		DisableFastFailover: !s.cfg.FastFailover,
		Started:             s.clock(),
		Prefer:              s.cfg.Prefer,
		PreferStableFor:     s.cfg.PreferStableFor,
		Rand:                rand.New(rand.NewPCG(s.cfg.Seed, uint64(1000*(m.index+1)+m.life))),
	}
	if !s.cfg.Join {
		cfg.Bootstrap = peers
	}
	core, err := election.New(cfg, m.pid, hs, s.clock())
	if err != nil {
		return fmt.Errorf("sim: start %s life %d: %w", m.name, m.life, err)
	}
	m.core = core
	if m.life > 1 {
		s.hist.Append(history.Event{At: s.now, Kind: history.KindRestart, Member: m.name, Life: m.life, Durable: s.cfg.Durable})
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
func (s *Simulator) drain(m *member) {
	now := s.clock()
	for m.core.HasReady() {
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
		for _, e := range rd.Effects {
			switch e := e.(type) {
			case election.Confirm:
				m.core.ConfirmResult(now, e.Term, true, nil)
			case election.Monitor:
				s.monitor(m, e.PID)
			case election.Demonitor:
				m.monitors = slices.DeleteFunc(m.monitors, func(p gen.PID) bool { return p == e.PID })
			}
		}
		for _, out := range rd.Messages {
			s.send(m, out)
		}
	}
	s.recordState(m)
}

// monitor starts m monitoring pid; a monitor of a process that is already
// gone, or behind a noticed cut, fires at once as the runtime's would.
func (s *Simulator) monitor(m *member, pid gen.PID) {
	if slices.Contains(m.monitors, pid) {
		return
	}
	m.monitors = append(m.monitors, pid)
	i, ok := s.byNode[pid.Node]
	if !ok {
		return
	}
	p := s.members[i]
	var reason error
	switch {
	case s.noted[m.index][i] || (!p.live && !p.stopped):
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
	p := s.members[i]
	if s.noted[m.index][i] || (!p.live && s.now >= p.downAt+p.downNotice) {
		m.core.SendFailed(s.clock(), node, fmt.Errorf("sim: send from %s to %s: %w", m.name, p.name, gen.ErrNoConnection))
		return
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
		s.push(&item{at: s.now + delay, kind: itemDeliver, to: i, from: m.pid, target: out.To, msg: out.Message})
	}
}

// deliver hands a message to its receiver, unless its connection died on
// the way: the sender's life ended, the receiver is down or is another
// life than the one addressed, or the pair is cut.
func (s *Simulator) deliver(it *item) {
	to := s.members[it.to]
	from := s.members[s.byNode[it.from.Node]]
	switch {
	case !from.live || from.pid != it.from, !to.live, it.target != (gen.PID{}) && it.target != to.pid,
		s.group[from.index] != s.group[to.index]:
		s.mix(0)
		return
	}
	s.mix(1, uint64(from.index))
	to.core.Step(s.clock(), it.from, it.msg)
	s.drain(to)
}

// fire hands a timer back to its core if it is the current arming.
func (s *Simulator) fire(it *item) {
	m := s.members[it.to]
	if t, ok := m.armed[it.timer.Kind]; !m.live || m.life != it.life || !ok || t != it.timer {
		return
	}
	delete(m.armed, it.timer.Kind)
	m.core.Tick(s.clock(), it.timer)
	s.drain(m)
}

// peerDown fires m's monitor of a peer, once.
func (s *Simulator) peerDown(it *item) {
	m := s.members[it.to]
	if !m.live || m.life != it.life || !slices.Contains(m.monitors, it.pid) {
		return
	}
	m.monitors = slices.DeleteFunc(m.monitors, func(p gen.PID) bool { return p == it.pid })
	m.core.PeerDown(s.clock(), it.pid, it.reason)
	s.drain(m)
}

// detect notices a cut between two members, if it still stands: sends
// across it fail from now on, and each side's monitors of the other fire
// with gen.ErrNoConnection.
func (s *Simulator) detect(it *item) {
	a, b := it.to, it.peer
	if s.group[a] == s.group[b] || s.cutGen[a][b] != it.cutGen {
		return
	}
	s.noted[a][b], s.noted[b][a] = true, true
	for _, pair := range [][2]int{{a, b}, {b, a}} {
		m, p := s.members[pair[0]], s.members[pair[1]]
		if !m.live {
			continue
		}
		for _, pid := range slices.Clone(m.monitors) {
			if pid.Node == p.id.Node {
				s.peerDown(&item{to: m.index, life: m.life, pid: pid, reason: gen.ErrNoConnection})
			}
		}
	}
}

// recordState appends m's state to the history when it changed.
func (s *Simulator) recordState(m *member) {
	c := m.core
	now := snapshot{role: c.Role(), term: c.Term(), leader: c.Leader().Node, viewSize: c.ViewSize(), recorded: true}
	if now == m.last {
		return
	}
	m.last = now
	e := history.Event{
		At: s.now, Kind: history.KindState, Member: m.name, Life: m.life,
		Role: now.role.String(), Term: now.term, ViewSize: now.viewSize, Quorum: c.Quorum(),
		MinClusterSize: s.cfg.MinClusterSize,
	}
	if now.leader != "" {
		e.Leader = s.members[s.byNode[now.leader]].name
	}
	if now.role == election.RoleLeader {
		e.VotesGranted = c.Status(s.clock()).VotesCount
	}
	s.hist.Append(e)
}

// recordVote appends a vote to the history when hs records a new one.
func (s *Simulator) recordVote(m *member, hs election.HardState) {
	if hs.VotedFor == (gen.ProcessID{}) || hs == m.lastVote {
		return
	}
	m.lastVote = hs
	s.hist.Append(history.Event{
		At: s.now, Kind: history.KindVote, Member: m.name, Life: m.life, Term: hs.Term,
		VotedFor: s.members[s.byNode[hs.VotedFor.Node]].name,
	})
}

// Skipped is the number of planned faults that could not apply, such as a
// crash of a member that was already down; the schedule says which and why.
func (s *Simulator) Skipped() int { return s.skipped }
