package faultproxy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/regent-go/regent/gen"
)

// Mode is what a direction does with the bytes that reach it.
type Mode int

const (
	// Pass forwards bytes as they arrive.
	Pass Mode = iota
	// Stall holds bytes and keeps the connection open: a silent partition.
	Stall
	// Reset closes the connections that carry the direction and refuses new ones.
	Reset
	// Delay forwards bytes after Fault.Delay plus up to Fault.Jitter, in order.
	Delay
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Stall:
		return "stall"
	case Reset:
		return "reset"
	case Delay:
		return "delay"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// Fault is the treatment of one direction of bytes.
type Fault struct {
	Mode Mode
	// Delay and Jitter apply in Delay mode: each chunk waits Delay plus a
	// uniform random part of Jitter, but never overtakes an earlier chunk.
	Delay  time.Duration
	Jitter time.Duration
}

// ErrClosed is returned by Add after Close.
var ErrClosed = errors.New("faultproxy: mesh is closed")

// flow is a direction of bytes: from src to dst.
type flow struct{ src, dst gen.Atom }

// gate is the current fault of one flow. changed is closed and replaced on
// every change so waiters wake up.
type gate struct {
	fault   Fault
	changed chan struct{}
}

// Mesh is a set of fault-injecting proxies between named nodes on loopback.
// Every method is safe for concurrent use.
type Mesh struct {
	mu      sync.Mutex // guards targets, links, gates, closed
	targets map[gen.Atom]string
	links   map[flow]*link // keyed by (dialler, acceptor)
	gates   map[flow]*gate
	closed  bool

	done chan struct{} // closed by Close
	wg   sync.WaitGroup
}

// New returns an empty mesh.
func New() *Mesh {
	return &Mesh{
		targets: make(map[gen.Atom]string),
		links:   make(map[flow]*link),
		gates:   make(map[flow]*gate),
		done:    make(chan struct{}),
	}
}

// Add registers node name, whose acceptor listens on acceptorAddr, and opens a
// listener for each direction between it and every node added before. Adding
// a known name is SetTarget.
func (m *Mesh) Add(name gen.Atom, acceptorAddr string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if _, ok := m.targets[name]; ok {
		m.setTargetLocked(name, acceptorAddr)
		return nil
	}
	var opened []*link
	for other := range m.targets {
		for _, f := range []flow{{name, other}, {other, name}} {
			l, err := m.openLink(f)
			if err != nil {
				for _, o := range opened {
					o.closeListener()
					delete(m.links, o.pair)
				}
				return err
			}
			opened = append(opened, l)
		}
	}
	m.targets[name] = acceptorAddr
	return nil
}

// openLink starts the listener through which pair.src dials pair.dst.
func (m *Mesh) openLink(pair flow) (*link, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listening for %s→%s: %w", pair.src, pair.dst, err)
	}
	l := &link{mesh: m, pair: pair, ln: ln, conns: make(map[*proxied]struct{})}
	m.links[pair] = l
	m.wg.Add(1)
	go l.accept()
	return l, nil
}

// Route returns the address from should dial to reach to through the mesh,
// or "" when either node is unknown.
func (m *Mesh) Route(from, to gen.Atom) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.links[flow{from, to}]; ok {
		return l.ln.Addr().String()
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

// SetTarget points name at a new acceptor address (the node restarted on
// another port) and closes the connections to the old one.
func (m *Mesh) SetTarget(name gen.Atom, acceptorAddr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setTargetLocked(name, acceptorAddr)
}

func (m *Mesh) setTargetLocked(name gen.Atom, addr string) {
	m.targets[name] = addr
	for pair, l := range m.links {
		if pair.dst == name {
			l.closeConns()
		}
	}
}

// Set applies fault to the bytes flowing from src to dst.
func (m *Mesh) Set(src, dst gen.Atom, fault Fault) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setLocked(flow{src, dst}, fault)
}

func (m *Mesh) setLocked(f flow, fault Fault) {
	g := m.gateLocked(f)
	g.fault = fault
	close(g.changed)
	g.changed = make(chan struct{})
	if fault.Mode == Reset {
		for _, pair := range []flow{f, {f.dst, f.src}} {
			if l, ok := m.links[pair]; ok {
				l.closeConns()
			}
		}
	}
}

func (m *Mesh) gateLocked(f flow) *gate {
	g, ok := m.gates[f]
	if !ok {
		g = &gate{changed: make(chan struct{})}
		m.gates[f] = g
	}
	return g
}

// current returns the fault of flow f and a channel closed at its next change.
func (m *Mesh) current(f flow) (Fault, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.gateLocked(f)
	return g.fault, g.changed
}

// refused reports whether a connection between a and b must be refused: a
// reset in either direction refuses it.
func (m *Mesh) refused(a, b gen.Atom) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gateLocked(flow{a, b}).fault.Mode == Reset || m.gateLocked(flow{b, a}).fault.Mode == Reset
}

// Cut stalls the bytes from src to dst (one direction, silently).
func (m *Mesh) Cut(src, dst gen.Atom) { m.Set(src, dst, Fault{Mode: Stall}) }

// Reset closes every connection between a and b and refuses new ones until
// Heal (or a Set to Pass in both directions).
func (m *Mesh) Reset(a, b gen.Atom) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setLocked(flow{a, b}, Fault{Mode: Reset})
	m.setLocked(flow{b, a}, Fault{Mode: Reset})
}

// Delay delays the bytes from src to dst by d plus up to jitter, in order.
func (m *Mesh) Delay(src, dst gen.Atom, d, jitter time.Duration) {
	m.Set(src, dst, Fault{Mode: Delay, Delay: d, Jitter: jitter})
}

// Partition silences, in both directions, every pair of nodes that are not in
// the same group; a registered node named in no group is alone in a group of
// its own. Pairs within a group pass.
func (m *Mesh) Partition(groups ...[]gen.Atom) {
	m.mu.Lock()
	defer m.mu.Unlock()
	groupOf := make(map[gen.Atom]int)
	for i, g := range groups {
		for _, n := range g {
			groupOf[n] = i
		}
	}
	next := len(groups)
	for n := range m.targets {
		if _, ok := groupOf[n]; !ok {
			groupOf[n] = next
			next++
		}
	}
	for a := range m.targets {
		for b := range m.targets {
			if a == b {
				continue
			}
			mode := Pass
			if groupOf[a] != groupOf[b] {
				mode = Stall
			}
			m.setLocked(flow{a, b}, Fault{Mode: mode})
		}
	}
}

// Isolate silences every direction to and from name.
func (m *Mesh) Isolate(name gen.Atom) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for other := range m.targets {
		if other != name {
			m.setLocked(flow{name, other}, Fault{Mode: Stall})
			m.setLocked(flow{other, name}, Fault{Mode: Stall})
		}
	}
}

// Heal sets every direction back to Pass; held bytes move on.
func (m *Mesh) Heal() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for f, g := range m.gates {
		if g.fault.Mode != Pass {
			m.setLocked(f, Fault{Mode: Pass})
		}
	}
}

// Close stops every listener and connection and waits for the mesh's goroutines.
func (m *Mesh) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.done)
	var errs []error
	for _, l := range m.links {
		if err := l.closeListener(); err != nil {
			errs = append(errs, err)
		}
		l.closeConns()
	}
	m.mu.Unlock()
	m.wg.Wait()
	return errors.Join(errs...)
}

// target returns the acceptor address of name.
func (m *Mesh) target(name gen.Atom) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	addr, ok := m.targets[name]
	return addr, ok && !m.closed
}

// jitter returns a uniform random duration in [0, j).
func jitter(j time.Duration) time.Duration {
	if j <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(j)))
}
