package proxy

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

// Mode says how a cut direction behaves.
type Mode int

const (
	// ModeSilent holds the bytes of live connections without closing
	// anything, and refuses new connections at once (as a firewall that
	// rejects them would).
	ModeSilent Mode = iota
	// ModeDrop holds the bytes of live connections and of new ones too, so
	// a new connection's handshake hangs until the dialler gives up (as a
	// firewall that drops packets would).
	ModeDrop
	// ModeReset closes the connections between the two members and refuses new ones.
	ModeReset
)

// Faults are what the switch does to the bytes of one direction.
type Faults struct {
	// Cut stops the direction, in Mode's way.
	Cut  bool
	Mode Mode
	// Delay and Jitter postpone each unit by Delay plus a uniform random part of Jitter.
	Delay, Jitter time.Duration
	// Loss is the probability, 0 to 1, that a frame after the handshake is dropped.
	Loss float64
}

// Stats are the switch's counters.
type Stats struct {
	// Accepted counts connections forwarded to their target.
	Accepted uint64
	// Refused counts connections closed on arrival: a reset cut, or an unreachable target.
	Refused uint64
	// FramesDropped counts frames lost to Loss.
	FramesDropped uint64
	// Open is the number of connections being forwarded now.
	Open int
}

// dialTimeout bounds the switch's own dial to a member's acceptor.
const dialTimeout = 2 * time.Second

// Switch is the set of proxies between the members of one cluster.
type Switch struct {
	size int

	// mu guards faults, targets, conns, listeners, changed, closed and rng.
	mu        sync.Mutex
	faults    []Faults // indexed from*size+to
	targets   []string
	conns     map[*conn]struct{}
	listeners []net.Listener
	// changed is closed and replaced on every Update, waking held writers.
	changed chan struct{}
	closed  bool
	rng     *rand.Rand

	wg                          sync.WaitGroup
	accepted, refused, droppedN atomic.Uint64
}

// New returns a switch for size members with no faults. seed makes the
// random choices (jitter, loss) reproducible per connection.
func New(size int, seed uint64) *Switch {
	return &Switch{
		size:    size,
		faults:  make([]Faults, size*size),
		targets: make([]string, size),
		conns:   map[*conn]struct{}{},
		changed: make(chan struct{}),
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
}

func (s *Switch) check(i int) error {
	if i < 0 || i >= s.size {
		return fmt.Errorf("proxy: member %d out of range [0,%d): %w", i, s.size, gen.ErrIncorrect)
	}
	return nil
}

// Listen opens the loopback listener through which member from dials member
// to, and returns its address: give it to from as its route to to.
func (s *Switch) Listen(from, to int) (string, error) {
	if err := errors.Join(s.check(from), s.check(to)); err != nil {
		return "", err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("proxy: listening for %d->%d: %w", from, to, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		l.Close()
		return "", fmt.Errorf("proxy: listening for %d->%d: switch closed: %w", from, to, gen.ErrNotAllowed)
	}
	s.listeners = append(s.listeners, l)
	s.wg.Add(1)
	go s.accept(l, from, to)
	return l.Addr().String(), nil
}

// SetTarget says where member's real acceptor listens; new connections to it go there.
func (s *Switch) SetTarget(member int, addr string) error {
	if err := s.check(member); err != nil {
		return err
	}
	s.mu.Lock()
	s.targets[member] = addr
	s.mu.Unlock()
	return nil
}

// Update calls fn for every direction (from, to), from != to, with its faults
// to edit, all under one lock; then it wakes held bytes and closes the
// connections a reset cut now forbids.
func (s *Switch) Update(fn func(from, to int, f *Faults)) {
	s.mu.Lock()
	for from := 0; from < s.size; from++ {
		for to := 0; to < s.size; to++ {
			if from != to {
				fn(from, to, &s.faults[from*s.size+to])
			}
		}
	}
	close(s.changed)
	s.changed = make(chan struct{})
	var doomed []*conn
	for c := range s.conns {
		if s.cutLocked(c.dialler, c.target, ModeReset) {
			doomed = append(doomed, c)
		}
	}
	s.mu.Unlock()
	for _, c := range doomed {
		c.close()
	}
}

// Faults returns the faults of the direction from -> to.
func (s *Switch) Faults(from, to int) Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults[from*s.size+to]
}

// Stats returns the switch's counters.
func (s *Switch) Stats() Stats {
	s.mu.Lock()
	open := len(s.conns)
	s.mu.Unlock()
	return Stats{Accepted: s.accepted.Load(), Refused: s.refused.Load(), FramesDropped: s.droppedN.Load(), Open: open}
}

// Close stops every listener and connection and waits for the switch's goroutines.
func (s *Switch) Close() {
	s.mu.Lock()
	s.closed = true
	listeners := s.listeners
	s.listeners = nil
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, l := range listeners {
		l.Close()
	}
	for _, c := range conns {
		c.close()
	}
	s.wg.Wait()
}

// cutLocked reports whether either direction between a and b is cut in one of modes.
func (s *Switch) cutLocked(a, b int, modes ...Mode) bool {
	for _, f := range []Faults{s.faults[a*s.size+b], s.faults[b*s.size+a]} {
		if f.Cut && slices.Contains(modes, f.Mode) {
			return true
		}
	}
	return false
}

// refusesLocked reports whether a new connection between a and b is refused:
// a connection needs both directions to handshake.
func (s *Switch) refusesLocked(a, b int) bool { return s.cutLocked(a, b, ModeSilent, ModeReset) }

func (s *Switch) accept(l net.Listener, from, to int) {
	defer s.wg.Done()
	for {
		client, err := l.Accept()
		if err != nil {
			return // the listener was closed
		}
		s.wg.Add(1)
		go s.connect(client, from, to)
	}
}

// connect dials the target for a newly accepted client and starts forwarding.
func (s *Switch) connect(client net.Conn, from, to int) {
	defer s.wg.Done()
	s.mu.Lock()
	refuse, target := s.refusesLocked(from, to), s.targets[to]
	s.mu.Unlock()
	if refuse || target == "" {
		s.refused.Add(1)
		client.Close()
		return
	}
	server, err := net.DialTimeout("tcp", target, dialTimeout)
	if err != nil {
		// The target is down: the dialler sees its connection closed, as it
		// would see a refused dial.
		s.refused.Add(1)
		client.Close()
		return
	}
	c := &conn{s: s, dialler: from, target: to, client: client, server: server, done: make(chan struct{})}
	s.mu.Lock()
	if s.closed || s.refusesLocked(from, to) {
		s.mu.Unlock()
		s.refused.Add(1)
		client.Close()
		server.Close()
		return
	}
	s.conns[c] = struct{}{}
	up := rand.New(rand.NewPCG(s.rng.Uint64(), s.rng.Uint64()))
	down := rand.New(rand.NewPCG(s.rng.Uint64(), s.rng.Uint64()))
	s.wg.Add(4)
	s.mu.Unlock()
	s.accepted.Add(1)
	c.pump(client, server, from, to, true, up)
	c.pump(server, client, to, from, false, down)
}

// await returns the faults to apply once unit u (arrived at) may be
// delivered in direction from -> to: not cut, and its due time reached. last
// is the due time of the previous unit, to keep order. ok is false when the
// connection closed while waiting.
func (s *Switch) await(from, to int, arrived time.Time, jitter float64, last *time.Time, done <-chan struct{}) (Faults, bool) {
	for {
		s.mu.Lock()
		f, changed := s.faults[from*s.size+to], s.changed
		s.mu.Unlock()
		if f.Cut {
			select {
			case <-changed:
				continue
			case <-done:
				return f, false
			}
		}
		due := arrived.Add(f.Delay + time.Duration(jitter*float64(f.Jitter)))
		if due.Before(*last) {
			due = *last
		}
		wait := time.Until(due)
		if wait <= 0 {
			*last = due
			return f, true
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
			*last = due
			return f, true
		case <-changed:
			timer.Stop()
		case <-done:
			timer.Stop()
			return f, false
		}
	}
}
