package modelcheck

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"reflect"
	"slices"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// State is one global state of a search: every member's core and shell, the
// network, the pending monitor downs, the path's history and what is left of
// its fault budgets. States reached by a search share the cores they did not
// change, so a State and its cores must be treated as read-only outside this
// package: an invariant may read a core, never feed it an input.
type State struct {
	cfg *Config
	// members are shared with the state this one was forked from until
	// mut or own makes them its own; see shellOwned.
	members []*member
	// net is the multiset of messages in flight, in the order they were
	// sent; envelopes are immutable and shared between states.
	net   []*envelope
	downs []down
	// leaders is the path's history: every (term, member, life) that led
	// the election, visibly or not, sorted; agreed lists, sorted, every
	// lineage a member held agreed on the path.
	leaders []Leadership
	agreed  []election.Lineage
	used    budget
	// script is how many Script inputs this path has applied.
	script int
	// shellOwned and coreOwned mark the members whose shell state, and whose
	// core, this state copied for itself since it was forked; the others are
	// shared with the state it was forked from and must not change.
	shellOwned, coreOwned uint64
}

// member is one member's core and the shell state around it.
type member struct {
	life int
	up   bool
	// killed: down by a process death on a live node, not a node crash.
	killed bool
	pid    gen.PID
	core   *election.Core // nil while down
	src    *rand.PCG      // the source core's Rand reads
	now    time.Time      // this member's local clock
	stored election.HardState
	// diskFailing: every write of HardState fails until healed.
	diskFailing bool
	// fatal is the error of the Fatal effect that ended this life, "" when
	// none did.
	fatal  string
	timers [maxTimers]armed // by election.TimerKind
	// monitors are the PIDs this life monitors, sorted; never changed in
	// place, since states share it.
	monitors []gen.PID
	// floor is the highest term this member held before the current step
	// within this life, starting from the term its life started with (the
	// stored one when restarts are durable).
	floor uint64
	// hash digests the member's part of the state key; valid only when
	// hashed is set.
	hash   uint64
	hashed bool
}

// maxTimers bounds the election.TimerKind values the shell can hold; raise
// it if the core grows more kinds.
const maxTimers = 8

// armed is one timer as the shell holds it.
type armed struct {
	timer election.Timer
	at    time.Time
	ok    bool
}

// envelope is one message in flight from member from to member to.
type envelope struct {
	from    int
	fromPID gen.PID
	to      int
	out     election.Outbound
	// key encodes all of the above; equal keys are equal messages. hash
	// digests it.
	key  string
	hash uint64
}

// down is a monitor's down message on its way to member observer (in life).
type down struct {
	observer int
	life     int
	pid      gen.PID
	reason   error
	key      string // encodes all of the above
	hash     uint64 // digests key
}

func newDown(observer, life int, pid gen.PID, reason error) down {
	d := down{observer: observer, life: life, pid: pid, reason: reason}
	b := binary.AppendUvarint(nil, uint64(observer))
	b = binary.AppendUvarint(b, uint64(life))
	b = appendValue(b, reflect.ValueOf(pid))
	d.key = string(appendString(b, reason.Error()))
	d.hash = maphash.String(hashSeed, d.key)
	return d
}

// budget counts the faults a path has used.
type budget struct {
	crashes, kills, disconnects, duplicates, storage int
}

// Leadership is one member life that led the election at a term, with the
// lineage of the view it led, as the path's history records it.
type Leadership struct {
	Term    uint64
	Member  int
	Life    int
	Lineage election.Lineage
}

func compareLeadership(a, b Leadership) int {
	return cmp.Or(cmp.Compare(a.Term, b.Term), cmp.Compare(a.Member, b.Member), cmp.Compare(a.Life, b.Life),
		compareLineage(a.Lineage, b.Lineage))
}

func compareLineage(a, b election.Lineage) int {
	return cmp.Or(cmp.Compare(a.Term, b.Term), cmp.Compare(a.Node, b.Node))
}

// initial builds the state in which every member has just started.
func initial(cfg *Config) (*State, error) {
	s := &State{cfg: cfg, members: make([]*member, cfg.Members)}
	for i := range s.members {
		// Every member is up before the first starts, so that the first
		// probes reach the members started after their sender.
		s.members[i] = &member{now: epoch, up: true, pid: gen.PID{Node: node(i), ID: 1, Creation: 1}}
	}
	for i := range s.members {
		if err := s.start(i); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// fork returns a child of s that shares everything until it owns it.
func (s *State) fork() *State {
	c := *s
	c.members = slices.Clone(s.members)
	c.shellOwned, c.coreOwned = 0, 0
	return &c
}

// mut makes member i's shell state the state's own before a change; its
// core stays shared.
func (s *State) mut(i int) *member {
	if s.shellOwned&(1<<i) == 0 {
		s.shellOwned |= 1 << i
		cp := *s.members[i]
		s.members[i] = &cp
	}
	return s.members[i]
}

// own makes member i, core included, the state's own before its core takes
// an input, and marks its digest stale.
func (s *State) own(i int) *member {
	m := s.mut(i)
	m.hashed = false
	if s.coreOwned&(1<<i) == 0 {
		s.coreOwned |= 1 << i
		if m.core != nil {
			src := *m.src // a PCG is two words: copying it copies its stream
			m.src = &src
			m.core = m.core.Clone(rand.New(m.src))
		}
	}
	return m
}

// start begins a new life of member i with its stored state when durable.
func (s *State) start(i int) error {
	m := s.own(i)
	m.life++
	m.up, m.killed, m.fatal = true, false, ""
	m.pid = gen.PID{Node: node(i), ID: 1, Creation: int64(m.life)}
	m.timers = [maxTimers]armed{}
	m.monitors = nil
	if !s.cfg.Durable {
		m.stored = election.HardState{}
	}
	// A new life holds what was stored. A term the last life raised while
	// its disk failed was neither stored nor sent (the shell sends nothing
	// a failed write covers), so no one saw it and forgetting it lowers no
	// term the member ever showed.
	m.floor = m.stored.Term
	m.src = rand.NewPCG(uint64(i+1), uint64(m.life))
	core, err := election.New(s.cfg.memberConfig(i, rand.New(m.src)), m.pid, m.stored, m.now)
	if err != nil {
		return fmt.Errorf("modelcheck: start %s as life %d: %w", name(i), m.life, err)
	}
	m.core = core
	s.drain(i)
	return nil
}

// Members is the number of members.
func (s *State) Members() int { return len(s.members) }

// Up reports whether member i is running.
func (s *State) Up(i int) bool { return s.members[i].up }

// Life counts member i's starts, from 1.
func (s *State) Life(i int) int { return s.members[i].life }

// Core is member i's core, nil while it is down. Read it; never feed it.
func (s *State) Core(i int) *election.Core { return s.members[i].core }

// Now is member i's local clock.
func (s *State) Now(i int) time.Time { return s.members[i].now }

// TermFloor is the highest term member i held before the step that led to
// this state, within its life, which starts from its stored term (0
// without durable state).
func (s *State) TermFloor(i int) uint64 { return s.members[i].floor }

// Leaders lists every member life that led the election (visibly or not)
// on the path to this state, by term.
func (s *State) Leaders() []Leadership { return slices.Clone(s.leaders) }

// Agreed lists every lineage a member held agreed on the path to this state.
func (s *State) Agreed() []election.Lineage { return slices.Clone(s.agreed) }

// Stored is the HardState member i last persisted; a restart starts from it
// when the search is Durable.
func (s *State) Stored(i int) election.HardState { return s.members[i].stored }

// Fatal is the error of the Fatal effect that ended member i's life, ""
// when none did.
func (s *State) Fatal(i int) string { return s.members[i].fatal }

// Config is the search's configuration, defaults filled in.
func (s *State) Config() Config { return *s.cfg }

// InFlight is the number of messages in flight.
func (s *State) InFlight() int { return len(s.net) }

// note records in the path's history whether member i, which just took
// an input, leads the election, and the lineage it holds agreed. Drain
// calls it after every input, so that a Flush, which feeds many, misses
// nothing.
func (s *State) note(i int) {
	m := s.members[i]
	if m.core == nil {
		return
	}
	v, ok := m.core.View()
	if !ok {
		return
	}
	if v.Stamp.Agreed {
		if at, found := slices.BinarySearchFunc(s.agreed, v.Stamp.Lineage, compareLineage); !found {
			s.agreed = slices.Insert(slices.Clip(s.agreed), at, v.Stamp.Lineage)
		}
	}
	if m.core.IsProtocolLeader() {
		l := Leadership{Term: m.core.Term(), Member: i, Life: m.life, Lineage: v.Stamp.Lineage}
		if at, found := slices.BinarySearchFunc(s.leaders, l, compareLeadership); !found {
			s.leaders = slices.Insert(slices.Clip(s.leaders), at, l)
		}
	}
}

// raiseFloors moves each member's term floor up to its term, once the
// invariants have judged the step against the old floors.
// The state's digest already holds the raised floors, so it stays valid.
func (s *State) raiseFloors() {
	for i, m := range s.members {
		if f := m.raisedFloor(); f != m.floor {
			s.mut(i).floor = f
		}
	}
}

// raisedFloor is the floor once the current step is judged.
func (m *member) raisedFloor() uint64 {
	if m.core != nil {
		return max(m.floor, m.core.Term())
	}
	return m.floor
}

var hashSeed = maphash.MakeSeed()

// scratch is what hashing reuses from one state to the next.
type scratch struct{ buf []byte }

// hash digests the state's key: every member's part (shell and core,
// without its clock), the network and the downs as multisets (sums of
// their elements' digests, so order does not count), the history and the
// budgets used. Equal states hash equally; distinct ones collide with a
// chance of about one in 2^64 per pair. Each member's digest is kept until
// the member changes, and each message's from when it is sent.
func (s *State) hash(sc *scratch) uint64 {
	b := sc.buf[:0]
	for _, m := range s.members {
		if !m.hashed {
			b = m.appendKey(b[:0], s.cfg.exactKeys)
			m.hash, m.hashed = maphash.Bytes(hashSeed, b), true
		}
	}
	b = b[:0]
	for _, m := range s.members {
		b = binary.LittleEndian.AppendUint64(b, m.hash)
	}
	var net, downs uint64
	for _, e := range s.net {
		net += mix(e.hash)
	}
	for _, d := range s.downs {
		downs += mix(d.hash)
	}
	b = binary.LittleEndian.AppendUint64(b, net)
	b = binary.LittleEndian.AppendUint64(b, downs)
	b = appendValue(b, reflect.ValueOf(s.leaders))
	b = appendValue(b, reflect.ValueOf(s.agreed))
	for _, n := range []int{s.used.crashes, s.used.kills, s.used.disconnects, s.used.duplicates, s.used.storage, s.script} {
		b = binary.AppendUvarint(b, uint64(n))
	}
	sc.buf = b
	return maphash.Bytes(hashSeed, b)
}

// mix scrambles a digest before it is summed into a multiset's (the
// finalizer of splitmix64), so that sums of related digests do not cancel.
func mix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

func (m *member) appendKey(b []byte, exact bool) []byte {
	b = binary.AppendUvarint(b, uint64(m.life))
	b = appendBools(b, m.up, m.killed, m.diskFailing)
	b = appendString(b, m.fatal)
	b = appendValue(b, reflect.ValueOf(m.stored))
	b = binary.AppendUvarint(b, m.raisedFloor())
	for _, t := range m.timers {
		b = appendBools(b, t.ok)
	}
	b = appendValue(b, reflect.ValueOf(m.monitors))
	if m.core != nil {
		b = m.core.AppendStateKey(b, m.now)
	}
	if exact {
		// Everything, clocks and random source included: no abstraction.
		b = appendValue(b, reflect.ValueOf(m.now))
		for _, t := range m.timers {
			b = appendValue(b, reflect.ValueOf(t.at))
		}
		if m.core != nil {
			b = appendValue(b, reflect.ValueOf(m.core).Elem())
		}
	}
	return b
}

func comparePID(a, b gen.PID) int {
	return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.ID, b.ID), cmp.Compare(a.Creation, b.Creation))
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBools(b []byte, flags ...bool) []byte {
	var cur byte
	for i, f := range flags {
		if f {
			cur |= 1 << i
		}
	}
	return append(b, cur)
}
