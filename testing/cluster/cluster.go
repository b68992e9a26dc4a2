package cluster

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/faultproxy"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/history"
	"github.com/regent-go/regent/testing/loopback"
)

// Cluster is a running test cluster: Size members over real TCP on
// loopback, every member-to-member connection through a fault-injecting
// proxy. Operations (faults, Kill, Stop, Restart, Join, Leave, Close) are
// serialised; queries may run concurrently with them.
type Cluster struct {
	cfg   Config
	start time.Time
	mesh  *faultproxy.Mesh
	hist  *history.History
	// byNode maps node names to member indexes; written only by Start.
	byNode map[gen.Atom]int
	// procs is the OS-process machinery; nil in in-process mode.
	procs *processes

	// ops serialises operations, so that a fault and its history event are
	// one step.
	ops sync.Mutex

	// mu guards the mutable fields of members, and oneWay, noisy and closed.
	mu      sync.Mutex
	members []*member
	// oneWay: a one-way cut stands, which the history cannot express.
	oneWay bool
	// noisy: loss or delay is set.
	noisy  bool
	closed bool
}

// member is one member slot; its node name and routes stay the same across lives.
type member struct {
	index  int
	name   gen.Atom
	routes map[gen.Atom]string // immutable after Start

	life  int
	alive bool
	// over is set when the current life is killed or stopped: an in-process
	// node's abandoned callbacks may still report transitions after
	// StopForce, which a dead process could not, so the recorder drops them.
	over *atomic.Bool
	node gen.Node   // in-process mode
	proc *osProcess // OS-process mode
	pid  gen.PID
}

// Start starts cfg.Size members and returns once each has spawned its
// leader actor (not once a leader is elected: use WaitLeader). With t
// non-nil, Close runs at the test's cleanup.
func Start(t testing.TB, cfg Config) (*Cluster, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		cfg:    cfg,
		start:  time.Now(),
		mesh:   faultproxy.New(faultproxy.Options{HoldDials: cfg.HoldDials, Seed: cfg.Seed}),
		hist:   history.New(),
		byNode: map[gen.Atom]int{},
	}
	for i := 0; i < cfg.Size; i++ {
		m := &member{index: i, name: cfg.nodeName(i), routes: map[gen.Atom]string{}}
		c.byNode[m.name] = i
		c.members = append(c.members, m)
		// The member's acceptor is not running yet: SetTarget names it at launch.
		if err := c.mesh.Add(m.name, ""); err != nil {
			return nil, errors.Join(fmt.Errorf("cluster: %w", err), c.mesh.Close())
		}
	}
	for _, m := range c.members {
		for _, peer := range c.members {
			if peer != m {
				m.routes[peer.name] = c.mesh.Route(m.name, peer.name)
			}
		}
	}
	if cfg.Processes {
		if c.procs, err = startProcesses(c); err != nil {
			return nil, errors.Join(err, c.mesh.Close())
		}
	}
	for i := range c.members {
		if err := c.launch(i); err != nil {
			return nil, errors.Join(err, c.Close())
		}
	}
	if t != nil {
		t.Cleanup(func() {
			if err := c.Close(); err != nil {
				t.Errorf("cluster: close: %v", err)
			}
		})
	}
	return c, nil
}

// Close stops every member and the proxies and waits for their goroutines
// (and processes). It is idempotent.
func (c *Cluster) Close() error {
	c.ops.Lock()
	defer c.ops.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	// Cut the network first, so that stopping nodes fail their remote
	// notices fast instead of waiting on peers.
	errs := []error{c.mesh.Close()}
	for i, m := range c.members {
		if c.alive(i) {
			errs = append(errs, c.halt(m, false)) // graceful: it waits for every callback
		}
	}
	if c.procs != nil {
		errs = append(errs, c.procs.close())
	}
	c.hist.Finish(c.now())
	return errors.Join(errs...)
}

// now is the time since Start, the history's clock.
func (c *Cluster) now() time.Duration { return time.Since(c.start) }

// memberOptions are member i's options for one life: the user's base
// options, Bootstrap filled in, and the history recorder chained after the
// user's OnTransition.
func (c *Cluster) memberOptions(i, life int, over *atomic.Bool) leader.Options {
	o := c.cfg.Options(i)
	if o.Bootstrap == nil {
		for j := 0; j < c.cfg.Size; j++ {
			if j != i {
				o.Bootstrap = append(o.Bootstrap, gen.ProcessID{Name: c.cfg.Name, Node: c.cfg.nodeName(j)})
			}
		}
	}
	user, label := o.OnTransition, c.cfg.label(i)
	o.OnTransition = func(tr leader.Transition) {
		if user != nil {
			user(tr)
		}
		if over.Load() {
			return
		}
		c.hist.Append(c.event(tr.At.Sub(c.start), label, observed{
			life: life, role: string(tr.Role), term: tr.Term, leader: c.labelOf(tr.Leader.Node),
			view: tr.ViewSize, quorum: tr.Quorum, min: tr.MinClusterSize, votes: tr.VotesGranted,
			protocol: tr.ProtocolLeader, agreed: tr.View.Stamp.Agreed, lineage: lineageOf(tr.View),
			members: strings.Join(c.viewLabels(tr.View.Members), ","), viewTerm: tr.View.Stamp.Key.Term, viewEpoch: tr.View.Stamp.Key.Epoch,
		}))
	}
	return o
}

// labelOf names a node as the history does: a member's label, or the node
// name itself for a node outside the cluster; empty for none.
func (c *Cluster) labelOf(n gen.Atom) string {
	if i, ok := c.byNode[n]; ok {
		return c.cfg.label(i)
	}
	return string(n)
}

// launch starts member i's next life.
func (c *Cluster) launch(i int) error {
	m := c.members[i]
	c.mu.Lock()
	life := m.life + 1
	c.mu.Unlock()
	over := new(atomic.Bool)
	opts := c.memberOptions(i, life, over)
	var (
		n    gen.Node
		proc *osProcess
		pid  gen.PID
		err  error
	)
	if c.procs != nil {
		proc, pid, err = c.procs.launch(m, life, opts)
	} else {
		n, pid, err = c.launchInProcess(m, opts, life)
	}
	if err != nil {
		return fmt.Errorf("cluster: starting member %d (%s), life %d: %w", i, m.name, life, err)
	}
	c.mu.Lock()
	m.life, m.alive, m.node, m.proc, m.pid, m.over = life, true, n, proc, pid, over
	c.mu.Unlock()
	return nil
}

func (c *Cluster) launchInProcess(m *member, opts leader.Options, life int) (gen.Node, gen.PID, error) {
	n, err := loopback.StartNode(m.name, loopback.Options{
		Types:   c.cfg.Types,
		Network: c.cfg.networkOptions(maps.Clone(m.routes)),
		Log:     gen.LogOptions{Level: c.cfg.LogLevel},
	})
	if err != nil {
		return nil, gen.PID{}, err
	}
	fail := func(err error) (gen.Node, gen.PID, error) {
		n.StopForce()
		return nil, gen.PID{}, err
	}
	if err := c.mesh.SetTarget(m.name, n.Network().AcceptorAddress()); err != nil {
		return fail(err)
	}
	spec := Member{Index: m.index, Node: m.name, Life: life, Options: opts}
	pid, err := n.SpawnRegister(c.cfg.Name, func() gen.ProcessBehavior { return c.cfg.Factory(spec) }, gen.ProcessOptions{})
	if err != nil {
		return fail(fmt.Errorf("spawning %s: %w", c.cfg.Name, err))
	}
	return n, pid, nil
}

// halt ends member m's life: abruptly (connections cut, SIGKILL) or gracefully.
func (c *Cluster) halt(m *member, abrupt bool) error {
	c.mu.Lock()
	n, proc := m.node, m.proc
	m.alive, m.node, m.proc = false, nil, nil
	m.over.Store(true)
	c.mu.Unlock()
	switch {
	case proc != nil:
		return proc.halt(abrupt)
	case abrupt:
		n.StopForce()
		n.Wait()
	default:
		n.Stop()
	}
	return nil
}

// member returns member i, checking the index and that the cluster is open.
func (c *Cluster) member(i int) (*member, error) {
	if i < 0 || i >= len(c.members) {
		return nil, fmt.Errorf("cluster: member %d out of range [0,%d): %w", i, len(c.members), gen.ErrIncorrect)
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("cluster: closed: %w", gen.ErrNotAllowed)
	}
	return c.members[i], nil
}

// lifecycle runs one lifecycle operation on member i, which must be alive
// (or, for a restart, down), and records kind in the history.
func (c *Cluster) lifecycle(i int, kind history.Kind, wantAlive bool, op func(m *member) error) error {
	c.ops.Lock()
	defer c.ops.Unlock()
	m, err := c.member(i)
	if err != nil {
		return err
	}
	c.mu.Lock()
	alive, life, over := m.alive, m.life, m.over
	c.mu.Unlock()
	if alive != wantAlive {
		return fmt.Errorf("cluster: %s member %d: it is %s: %w", kind, i, map[bool]string{true: "running", false: "down"}[alive], gen.ErrNotAllowed)
	}
	if kind == history.KindRestart {
		life++
	} else {
		over.Store(true) // nothing this life reports from now on is recorded
	}
	c.hist.Append(history.Event{At: c.now(), Kind: kind, Member: c.cfg.label(i), Life: life})
	return op(m)
}

// Kill ends member i abruptly: its node stops at once (in-process, every
// connection is cut) or its process gets SIGKILL. Peers see a lost connection.
func (c *Cluster) Kill(i int) error {
	return c.lifecycle(i, history.KindCrash, true, func(m *member) error { return c.halt(m, true) })
}

// Stop ends member i gracefully: its actor terminates with a real reason,
// which peers see, so they drop it from their views at once.
func (c *Cluster) Stop(i int) error {
	return c.lifecycle(i, history.KindStop, true, func(m *member) error { return c.halt(m, false) })
}

// Restart starts a killed or stopped member i again: the same node name, a
// new Creation and acceptor port, fresh election state (a new Life).
func (c *Cluster) Restart(i int) error {
	return c.lifecycle(i, history.KindRestart, false, func(m *member) error { return c.launch(m.index) })
}

// Join makes member i declare member j as a peer (leader.JoinPeer).
// In-process mode only.
func (c *Cluster) Join(i, j int) error {
	return c.control(i, j, history.KindJoin, func(n gen.Node, pid gen.PID, peer gen.Atom) error {
		return leader.JoinPeer(n, pid, gen.ProcessID{Name: c.cfg.Name, Node: peer})
	})
}

// Leave makes member i withdraw member j from its view (leader.LeavePeer).
// In-process mode only.
func (c *Cluster) Leave(i, j int) error {
	return c.control(i, j, history.KindLeave, func(n gen.Node, pid gen.PID, peer gen.Atom) error {
		return leader.LeavePeer(n, pid, peer)
	})
}

// control runs a Join or Leave (kind) on member i for member j and records
// it: the convergence rule counts from it, as from any fault.
func (c *Cluster) control(i, j int, kind history.Kind, op func(gen.Node, gen.PID, gen.Atom) error) error {
	what := kind.String()
	c.ops.Lock()
	defer c.ops.Unlock()
	m, err := c.member(i)
	if err != nil {
		return err
	}
	peer, err := c.member(j)
	if err != nil {
		return err
	}
	c.mu.Lock()
	n, pid, alive := m.node, m.pid, m.alive
	c.mu.Unlock()
	switch {
	case c.procs != nil:
		return fmt.Errorf("cluster: %s in OS-process mode: %w", what, gen.ErrUnsupported)
	case !alive:
		return fmt.Errorf("cluster: %s: member %d is down: %w", what, i, gen.ErrNotAllowed)
	}
	if err := op(n, pid, peer.name); err != nil {
		return fmt.Errorf("cluster: %s: member %d, peer %d: %w", what, i, j, err)
	}
	c.mu.Lock()
	life := m.life
	c.mu.Unlock()
	c.hist.Append(history.Event{At: c.now(), Kind: kind, Member: c.cfg.label(i), Life: life, Peer: c.cfg.label(j)})
	return nil
}

// lineageOf names v's lineage as ergo:view_lineage does: empty before any
// view.
func lineageOf(v leader.View) string {
	if v.Stamp.Lineage.IsZero() {
		return ""
	}
	return v.Stamp.Lineage.String()
}
