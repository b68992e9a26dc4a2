package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/loopback"
)

// lease is an exclusive flock on a shared file. Each lease opens the file
// itself, so two leases in one process exclude each other as two processes
// would. A lease is used by one goroutine (its member's, or main's).
type lease struct {
	f    *os.File
	held bool
}

func openLease(path string) (*lease, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("confirm: opening the lease file: %w", err)
	}
	return &lease{f: f}, nil
}

// tryAcquire takes the lease without waiting; false means another holder has it.
func (l *lease) tryAcquire() (bool, error) {
	if l.held {
		return true, nil
	}
	err := unix.Flock(int(l.f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("confirm: flock: %w", err)
	}
	l.held = true
	return true, nil
}

// record writes the holder and its fencing token into the lease file.
func (l *lease) record(holder gen.Atom, token uint64) error {
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("confirm: recording the holder: %w", err)
	}
	if _, err := l.f.WriteAt([]byte(string(holder)+" "+strconv.FormatUint(token, 10)+"\n"), 0); err != nil {
		return fmt.Errorf("confirm: recording the holder: %w", err)
	}
	return nil
}

func (l *lease) release() error {
	if !l.held {
		return nil
	}
	l.held = false
	if err := unix.Flock(int(l.f.Fd()), unix.LOCK_UN); err != nil {
		return fmt.Errorf("confirm: releasing the lease: %w", err)
	}
	return nil
}

func (l *lease) close() error {
	return errors.Join(l.release(), l.f.Close())
}

// event is one thing a member or the schedule did.
type event struct {
	Who  gen.Atom
	What string // denied, confirmed, leader, released, outsider-acquired, outsider-released
	Held bool   // whether the member held the lease when it happened
}

// events prints and keeps what happens; its lock guards list, out and
// closed.
type events struct {
	mu     sync.Mutex
	out    io.Writer
	list   []event
	closed bool // set when the schedule ends: shutdown noise is not news
}

func (e *events) add(ev event, detail string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.list = append(e.list, ev)
	fmt.Fprintf(e.out, "%s  %-19s %-18s %s\n", time.Now().Format("15:04:05.000"), ev.Who, ev.What, detail)
}

func (e *events) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
}

func (e *events) snapshot() []event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]event(nil), e.list...)
}

type member struct {
	leader.Actor
	lease *lease
	log   *events
}

func (m *member) Init(args ...any) (leader.Options, error) {
	return leader.Options{ClusterID: "confirm", Bootstrap: args[0].([]gen.ProcessID)}, nil
}

// HandleConfirmLeader is consulted after a won election: leadership is
// published only if the lease is ours. An error counts as a denial.
func (m *member) HandleConfirmLeader() (bool, error) {
	ok, err := m.lease.tryAcquire()
	if err != nil {
		return false, err
	}
	if ok {
		m.log.add(event{Who: m.Node().Name(), What: "confirmed", Held: true}, fmt.Sprintf("won term %d and took the lease", m.Term()))
	} else {
		m.log.add(event{Who: m.Node().Name(), What: "denied"}, fmt.Sprintf("won term %d but the lease is held elsewhere: withholding leadership", m.Term()))
	}
	return ok, nil
}

func (m *member) HandleBecomeLeader() error {
	if err := m.lease.record(m.Node().Name(), m.FencingToken()); err != nil {
		return err
	}
	m.log.add(event{Who: m.Node().Name(), What: "leader", Held: m.lease.held}, fmt.Sprintf("leads with fencing token %d", m.FencingToken()))
	return nil
}

func (m *member) HandleBecomeFollower(gen.PID) error {
	if !m.lease.held {
		return nil
	}
	// Logged before the unlock, so the log never shows the next holder first.
	m.log.add(event{Who: m.Node().Name(), What: "released"}, "no longer leads: releasing the lease")
	return m.lease.release()
}

func (m *member) Terminate(reason error) {
	if err := m.lease.close(); err != nil {
		m.Log().Error("%v", err)
	}
}

// config paces the schedule.
type config struct {
	denials int           // denials to see while the outsider holds the lease
	settle  time.Duration // bound on each wait
}

// run holds the lease from outside, starts three members, shows their
// elections denied, releases it, shows one leader with the lease, then hands
// leadership over and shows the lease move with it.
func run(ctx context.Context, out io.Writer, dir string, cfg config) ([]event, error) {
	log := &events{out: out}
	path := filepath.Join(dir, "regent-confirm.lease")
	outsider, err := openLease(path)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := outsider.close(); err != nil {
			fmt.Fprintln(out, err)
		}
	}()
	if ok, err := outsider.tryAcquire(); err != nil || !ok {
		return nil, fmt.Errorf("confirm: the outsider could not take the lease first (held elsewhere: %v): %w", !ok, err)
	}
	log.add(event{Who: "outsider", What: "outsider-acquired"}, "holds the lease (an old deployment, say)")

	c, err := loopback.Start(loopback.Names("conf", 3), loopback.Options{})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	nodes := c.Nodes()
	defer log.close()
	pids := make([]gen.PID, len(nodes))
	for i, n := range nodes {
		l, err := openLease(path)
		if err != nil {
			return nil, err
		}
		pids[i], err = n.SpawnRegister("member", func() gen.ProcessBehavior { return &member{lease: l, log: log} },
			gen.ProcessOptions{}, c.Peers("member", i))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("spawning on %s: %w", n.Name(), err), l.close())
		}
	}

	deadline := time.Now().Add(cfg.settle)
	for denied(log.snapshot()) < cfg.denials {
		if time.Now().After(deadline) {
			return log.snapshot(), fmt.Errorf("confirm: fewer than %d denials: %w", cfg.denials, gen.ErrTimeout)
		}
		select {
		case <-ctx.Done():
			return log.snapshot(), ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := outsider.release(); err != nil {
		return log.snapshot(), err
	}
	log.add(event{Who: "outsider", What: "outsider-released"}, "lets the lease go")
	first, term, err := c.WaitAgreed(ctx, pids, loopback.All(3), cfg.settle)
	if err != nil {
		return log.snapshot(), err
	}
	fmt.Fprintf(out, "-- %s leads at term %d; handing leadership over --\n", nodes[first].Name(), term)
	// A member whose confirmation was denied lately declines leadership for
	// a while (its acknowledgements say so), and a leader hands over only to
	// a member that would take it: until one would, StepDown says there is
	// none, and the leader keeps leading.
	for {
		err := leader.StepDownLeader(nodes[first], pids[first])
		if err == nil {
			break
		}
		if !errors.Is(err, gen.ErrNotAllowed) || time.Now().After(deadline) {
			return log.snapshot(), err
		}
		select {
		case <-ctx.Done():
			return log.snapshot(), ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	next, term, err := c.WaitAgreed(ctx, pids, loopback.All(3), cfg.settle)
	if err != nil {
		return log.snapshot(), err
	}
	fmt.Fprintf(out, "-- %s leads at term %d --\n", nodes[next].Name(), term)
	return log.snapshot(), nil
}

func denied(list []event) int {
	n := 0
	for _, e := range list {
		if e.What == "denied" {
			n++
		}
	}
	return n
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	dir, err := os.MkdirTemp("", "regent-confirm")
	if err == nil {
		_, err = run(ctx, os.Stdout, dir, config{denials: 3, settle: 30 * time.Second})
		err = errors.Join(err, os.RemoveAll(dir))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "confirm:", err)
		stop()
		os.Exit(1)
	}
}
