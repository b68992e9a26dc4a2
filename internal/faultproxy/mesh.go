package faultproxy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/regent-go/regent/gen"
)

// Cut is whether, and how, a direction is stopped.
type Cut int

const (
	// Open lets the direction's bytes through.
	Open Cut = iota
	// Stall holds the bytes of live connections and closes nothing: a silent
	// partition that only keepalives notice. New connections between the two
	// nodes are refused at once, or held with Options.HoldDials.
	Stall
	// Reset closes every connection between the two nodes and refuses new
	// ones (in both directions: a connection needs both to handshake).
	Reset
)

// String names the cut.
func (c Cut) String() string {
	switch c {
	case Open:
		return "open"
	case Stall:
		return "stall"
	case Reset:
		return "reset"
	}
	return fmt.Sprintf("cut(%d)", int(c))
}

// Fault is what the mesh does to the bytes of one direction. Its parts are
// independent: lifting a cut leaves delay and loss as they were.
type Fault struct {
	// Cut stops the direction.
	Cut Cut
	// Delay and Jitter postpone each unit (a handshake message, a frame or a
	// raw chunk) by Delay plus a uniform random part of Jitter, never before
	// the unit ahead of it.
	Delay, Jitter time.Duration
	// Loss is the probability, 0 to 1, that a frame after the handshake is
	// dropped whole; handshake messages and unparsed streams lose nothing.
	Loss float64
}

// Options configure a Mesh.
type Options struct {
	// HoldDials makes a stalled direction hold new connections too, so their
	// handshake hangs until the dialler gives up (a firewall that drops
	// packets), instead of refusing them at once (one that rejects them).
	HoldDials bool
	// Seed makes the random choices (jitter, loss) reproducible for a given
	// order of connections.
	Seed uint64
}

// Stats are the mesh's counters.
type Stats struct {
	// Accepted counts connections forwarded to their target.
	Accepted uint64
	// Refused counts connections closed on arrival: a cut that refuses them,
	// or a target that is unknown or down.
	Refused uint64
	// FramesDropped counts frames lost to Fault.Loss.
	FramesDropped uint64
	// Open is the number of connections being forwarded now.
	Open int
}

// dialTimeout bounds the mesh's own dial to a node's acceptor.
const dialTimeout = 2 * time.Second

// flow is a direction of bytes: from src to dst.
type flow struct{ src, dst gen.Atom }

// Mesh is a set of fault-injecting proxies between named nodes on loopback.
// Every method is safe for concurrent use.
type Mesh struct {
	opts Options

	// mu guards targets, links, faults, conns, changed, closed and rng.
	mu      sync.Mutex
	targets map[gen.Atom]string
	links   map[flow]net.Listener // keyed by (dialler, acceptor)
	faults  map[flow]Fault        // absent means no fault
	conns   map[*conn]struct{}
	// changed is closed and replaced on every fault change, waking held writers.
	changed chan struct{}
	closed  bool
	rng     *rand.Rand

	wg                         sync.WaitGroup
	accepted, refused, dropped atomic.Uint64
}

// New returns a mesh with no nodes and no faults.
func New(opts Options) *Mesh {
	return &Mesh{
		opts:    opts,
		targets: make(map[gen.Atom]string),
		links:   make(map[flow]net.Listener),
		faults:  make(map[flow]Fault),
		conns:   make(map[*conn]struct{}),
		changed: make(chan struct{}),
		rng:     rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
	}
}

// Add registers node name, whose acceptor listens on acceptorAddr ("" while
// it is not running yet: connections to it are refused until SetTarget),
// and opens a listener for each direction between it and every node added
// before. Adding a known name is SetTarget.
func (m *Mesh) Add(name gen.Atom, acceptorAddr string) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return fmt.Errorf("faultproxy: adding %s: mesh closed: %w", name, gen.ErrNotAllowed)
	}
	if _, ok := m.targets[name]; ok {
		doomed := m.setTargetLocked(name, acceptorAddr)
		m.mu.Unlock()
		closeAll(doomed)
		return nil
	}
	defer m.mu.Unlock()
	var opened []flow
	for other := range m.targets {
		for _, f := range []flow{{name, other}, {other, name}} {
			if err := m.listenLocked(f); err != nil {
				for _, o := range opened {
					_ = m.links[o].Close() // never used: nothing to report
					delete(m.links, o)
				}
				return err
			}
			opened = append(opened, f)
		}
	}
	m.targets[name] = acceptorAddr
	return nil
}

// listenLocked starts the listener through which f.src dials f.dst.
func (m *Mesh) listenLocked(f flow) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("faultproxy: listening for %s→%s: %w", f.src, f.dst, err)
	}
	m.links[f] = ln
	m.wg.Add(1)
	go m.accept(ln, f)
	return nil
}

// Route returns the address from should dial to reach to through the mesh,
// or "" when either node is unknown.
func (m *Mesh) Route(from, to gen.Atom) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ln, ok := m.links[flow{from, to}]; ok {
		return ln.Addr().String()
	}
	return ""
}

// Nodes lists the registered node names, sorted.
func (m *Mesh) Nodes() []gen.Atom {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]gen.Atom, 0, len(m.targets))
	for n := range m.targets {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// SetTarget points name at its acceptor's address (again after the node
// restarts on another port) and closes the connections to the old one.
func (m *Mesh) SetTarget(name gen.Atom, acceptorAddr string) error {
	m.mu.Lock()
	if _, ok := m.targets[name]; !ok {
		m.mu.Unlock()
		return fmt.Errorf("faultproxy: target of %s: unknown node: %w", name, gen.ErrIncorrect)
	}
	doomed := m.setTargetLocked(name, acceptorAddr)
	m.mu.Unlock()
	closeAll(doomed)
	return nil
}

// setTargetLocked records addr and returns the connections to close.
func (m *Mesh) setTargetLocked(name gen.Atom, addr string) []*conn {
	m.targets[name] = addr
	var doomed []*conn
	for c := range m.conns {
		if c.pair.dst == name {
			doomed = append(doomed, c)
		}
	}
	return doomed
}

// Fault returns the fault of the direction src→dst.
func (m *Mesh) Fault(src, dst gen.Atom) Fault {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.faults[flow{src, dst}]
}

// Update calls fn with the fault of every direction (src, dst) between
// registered nodes, all under one lock, so a change of many directions is
// seen at once; then it wakes held bytes and closes the connections a Reset
// now forbids. Changes apply to bytes not yet delivered.
func (m *Mesh) Update(fn func(src, dst gen.Atom, f *Fault)) {
	m.mu.Lock()
	for src := range m.targets {
		for dst := range m.targets {
			if src == dst {
				continue
			}
			f := m.faults[flow{src, dst}]
			fn(src, dst, &f)
			if f == (Fault{}) {
				delete(m.faults, flow{src, dst})
			} else {
				m.faults[flow{src, dst}] = f
			}
		}
	}
	close(m.changed)
	m.changed = make(chan struct{})
	var doomed []*conn
	for c := range m.conns {
		if m.cutLocked(c.pair, Reset) {
			doomed = append(doomed, c)
		}
	}
	m.mu.Unlock()
	closeAll(doomed)
}

// Set replaces the fault of the direction src→dst.
func (m *Mesh) Set(src, dst gen.Atom, fault Fault) {
	m.Update(func(s, d gen.Atom, f *Fault) {
		if s == src && d == dst {
			*f = fault
		}
	})
}

// Cut stalls the bytes from src to dst: one direction, silently.
func (m *Mesh) Cut(src, dst gen.Atom) {
	m.Update(func(s, d gen.Atom, f *Fault) {
		if s == src && d == dst {
			f.Cut = Stall
		}
	})
}

// Reset closes every connection between a and b and refuses new ones until
// Heal.
func (m *Mesh) Reset(a, b gen.Atom) {
	m.Update(func(s, d gen.Atom, f *Fault) {
		if (s == a && d == b) || (s == b && d == a) {
			f.Cut = Reset
		}
	})
}

// Partition stalls, in both directions, every pair of nodes that are not in
// the same group, and opens every pair within one; a registered node named
// in no group is alone in a group of its own. It replaces earlier cuts.
func (m *Mesh) Partition(groups ...[]gen.Atom) { m.partition(Stall, groups) }

// PartitionReset is Partition with Reset cuts: connections across groups are
// closed at once and new ones refused.
func (m *Mesh) PartitionReset(groups ...[]gen.Atom) { m.partition(Reset, groups) }

func (m *Mesh) partition(cut Cut, groups [][]gen.Atom) {
	groupOf := make(map[gen.Atom]int)
	for i, g := range groups {
		for _, n := range g {
			groupOf[n] = i
		}
	}
	type side struct {
		group int
		alone gen.Atom // set for a node in no group
	}
	group := func(n gen.Atom) side {
		if g, ok := groupOf[n]; ok {
			return side{group: g}
		}
		return side{alone: n}
	}
	m.Update(func(s, d gen.Atom, f *Fault) {
		f.Cut = Open
		if group(s) != group(d) {
			f.Cut = cut
		}
	})
}

// Isolate stalls every direction to and from name.
func (m *Mesh) Isolate(name gen.Atom) {
	m.Update(func(s, d gen.Atom, f *Fault) {
		if s == name || d == name {
			f.Cut = Stall
		}
	})
}

// Heal lifts every cut; held bytes move on. Delay and loss stay as set.
func (m *Mesh) Heal() {
	m.Update(func(_, _ gen.Atom, f *Fault) { f.Cut = Open })
}

// Stats returns the mesh's counters.
func (m *Mesh) Stats() Stats {
	m.mu.Lock()
	open := len(m.conns)
	m.mu.Unlock()
	return Stats{Accepted: m.accepted.Load(), Refused: m.refused.Load(), FramesDropped: m.dropped.Load(), Open: open}
}

// Close stops every listener and connection and waits for the mesh's
// goroutines. It is idempotent; a closed mesh accepts no new node.
func (m *Mesh) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	var errs []error
	for f, ln := range m.links {
		if err := ln.Close(); err != nil {
			errs = append(errs, fmt.Errorf("faultproxy: closing listener %s→%s: %w", f.src, f.dst, err))
		}
	}
	doomed := make([]*conn, 0, len(m.conns))
	for c := range m.conns {
		doomed = append(doomed, c)
	}
	m.mu.Unlock()
	closeAll(doomed)
	m.wg.Wait()
	return errors.Join(errs...)
}

// cutLocked reports whether either direction between f's nodes is cut in
// one of the given ways.
func (m *Mesh) cutLocked(f flow, cuts ...Cut) bool {
	return slices.Contains(cuts, m.faults[f].Cut) || slices.Contains(cuts, m.faults[flow{f.dst, f.src}].Cut)
}

// refusesLocked reports whether a new connection for f is refused.
func (m *Mesh) refusesLocked(f flow) bool {
	if m.opts.HoldDials {
		return m.cutLocked(f, Reset)
	}
	return m.cutLocked(f, Stall, Reset)
}

// accept runs until ln closes, handing each connection to connect.
func (m *Mesh) accept(ln net.Listener, f flow) {
	defer m.wg.Done()
	for {
		client, err := ln.Accept()
		if err != nil {
			return // the listener was closed by Close
		}
		m.wg.Add(1)
		go m.connect(client, f)
	}
}

// connect dials the target for a newly accepted client and starts forwarding.
func (m *Mesh) connect(client net.Conn, f flow) {
	defer m.wg.Done()
	refuse := func(server net.Conn) {
		m.refused.Add(1)
		// Refusing: the dialler sees its connection dropped, as it would a
		// rejected dial; the close errors say nothing more.
		_ = client.Close()
		if server != nil {
			_ = server.Close()
		}
	}
	m.mu.Lock()
	refused, target := m.refusesLocked(f), m.targets[f.dst]
	m.mu.Unlock()
	if refused || target == "" {
		refuse(nil)
		return
	}
	server, err := net.DialTimeout("tcp", target, dialTimeout)
	if err != nil {
		refuse(nil) // the target is down
		return
	}
	c := &conn{m: m, pair: f, client: client, server: server, done: make(chan struct{})}
	m.mu.Lock()
	if m.closed || m.refusesLocked(f) || m.targets[f.dst] != target {
		m.mu.Unlock()
		refuse(server)
		return
	}
	m.conns[c] = struct{}{}
	up := rand.New(rand.NewPCG(m.rng.Uint64(), m.rng.Uint64()))
	down := rand.New(rand.NewPCG(m.rng.Uint64(), m.rng.Uint64()))
	m.wg.Add(4)
	m.mu.Unlock()
	m.accepted.Add(1)
	c.pump(client, server, f, true, up)
	c.pump(server, client, flow{f.dst, f.src}, false, down)
}

// await returns the fault to apply once a unit that arrived at arrived may
// be delivered in direction f: not cut, and its due time reached. last is
// the due time of the previous unit, to keep order. ok is false when the
// connection closed (or was reset) while waiting.
func (m *Mesh) await(f flow, arrived time.Time, jitter float64, last *time.Time, done <-chan struct{}) (Fault, bool) {
	for {
		m.mu.Lock()
		fault, changed := m.faults[f], m.changed
		m.mu.Unlock()
		if fault.Cut != Open {
			select {
			case <-changed:
				continue
			case <-done:
				return fault, false
			}
		}
		due := arrived.Add(fault.Delay + time.Duration(jitter*float64(fault.Jitter)))
		if due.Before(*last) {
			due = *last
		}
		wait := time.Until(due)
		if wait <= 0 {
			*last = due
			return fault, true
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
			*last = due
			return fault, true
		case <-changed:
			timer.Stop()
		case <-done:
			timer.Stop()
			return fault, false
		}
	}
}

func closeAll(conns []*conn) {
	for _, c := range conns {
		c.close()
	}
}
