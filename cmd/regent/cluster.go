package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/faultproxy"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/loopback"
)

// memberName is the registered name of the election actor on every node the
// CLI starts.
const memberName gen.Atom = "election"

// member is the CLI's election actor: it does no singleton work of its own;
// the CLI watches it through OnTransition and inspection.
type member struct {
	leader.Actor
	opts leader.Options
	// confirm gates leadership (--confirm-file); nil confirms every election.
	confirm func() (bool, error)
}

func (m *member) Init(...any) (leader.Options, error) { return m.opts, nil }
func (m *member) HandleBecomeLeader() error           { return nil }
func (m *member) HandleBecomeFollower(gen.PID) error  { return nil }

func (m *member) HandleConfirmLeader() (bool, error) {
	if m.confirm == nil {
		return true, nil
	}
	return m.confirm()
}
func memberFactory(o leader.Options) gen.ProcessFactory {
	return func() gen.ProcessBehavior { return &member{opts: o} }
}

// spawnMember starts a member registered as name on n, retrying while a
// previous holder of the name is still terminating.
func spawnMember(ctx context.Context, n gen.Node, name gen.Atom, o leader.Options) (gen.PID, error) {
	for {
		pid, err := n.SpawnRegister(name, memberFactory(o), gen.ProcessOptions{})
		if err == nil {
			return pid, nil
		}
		if !errors.Is(err, gen.ErrTaken) {
			return gen.PID{}, fmt.Errorf("spawning %s on %s: %w", name, n.Name(), err)
		}
		select {
		case <-ctx.Done():
			return gen.PID{}, fmt.Errorf("spawning %s on %s: %w", name, n.Name(), ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// localCluster is one election cluster of members in this process, one node
// each, on loopback TCP: directly, or through a fault-injecting mesh. It is
// driven from one goroutine (the demo's or the benchmark's schedule).
type localCluster struct {
	cookie string
	log    gen.LogOptions // the nodes' runtime log; zero: errors only, to stderr
	opts   leader.Options // template: Bootstrap and OnTransition are filled per member
	mesh   *faultproxy.Mesh
	rec    *recorder

	names []gen.Atom
	nodes *loopback.Cluster // nil until startNodes
	pids  []gen.PID
}

// newLocalCluster names size nodes prefix1..prefixN, with a random cookie;
// nothing runs until start.
func newLocalCluster(size int, prefix string, opts leader.Options, withMesh bool, rec *recorder) *localCluster {
	c := &localCluster{cookie: loopback.RandomCookie(), opts: opts, rec: rec,
		names: loopback.Names(prefix, size), pids: make([]gen.PID, size)}
	if withMesh {
		c.mesh = faultproxy.New(faultproxy.Options{HoldDials: true})
	}
	return c
}

// startNodes starts every node, routed to every other.
func (c *localCluster) startNodes() error {
	o := loopback.Options{Cookie: c.cookie, Log: c.log}
	if c.mesh != nil {
		o.Mesh = c.mesh
	}
	nodes, err := loopback.Start(c.names, o)
	if err != nil {
		return err
	}
	c.nodes = nodes
	return nil
}

// start starts every node, then every member.
func (c *localCluster) start(ctx context.Context) error {
	if err := c.startNodes(); err != nil {
		return err
	}
	for i := range c.names {
		if err := c.spawn(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// node is node i, nil while it is down.
func (c *localCluster) node(i int) gen.Node { return c.nodes.Node(i) }

// spawn starts member i, bootstrapped with every other member.
func (c *localCluster) spawn(ctx context.Context, i int) error {
	o := c.opts
	o.Bootstrap = c.nodes.Peers(memberName, i)
	if c.rec != nil {
		o.OnTransition = c.rec.record
	}
	pid, err := spawnMember(ctx, c.node(i), memberName, o)
	if err != nil {
		return err
	}
	c.pids[i] = pid
	return nil
}

// stopNode kills node i abruptly (StopForce): peers see ErrNoConnection.
func (c *localCluster) stopNode(i int) {
	c.nodes.Kill(i)
	if c.rec != nil {
		c.rec.forget(c.pids[i])
	}
}

// killMember kills member i's process only; peers see its real reason.
func (c *localCluster) killMember(i int) error {
	if err := c.node(i).Kill(c.pids[i]); err != nil {
		return fmt.Errorf("killing %s on %s: %w", c.pids[i], c.names[i], err)
	}
	if c.rec != nil {
		c.rec.forget(c.pids[i])
	}
	return nil
}

// restart brings node i back (if down) and respawns its member.
func (c *localCluster) restart(ctx context.Context, i int) error {
	if err := c.nodes.Restart(i); err != nil {
		return err
	}
	return c.spawn(ctx, i)
}

// index returns the position of the member with pid, or -1.
func (c *localCluster) index(pid gen.PID) int {
	return slices.Index(c.pids, pid)
}

// live lists the indexes of running nodes.
func (c *localCluster) live() []int { return c.nodes.Live() }

// short is the node name of member i without the host, for logs.
func (c *localCluster) short(i int) string {
	return shortNode(c.names[i])
}

// electionsStarted sums the elections started by the live members other
// than except (-1: all).
func (c *localCluster) electionsStarted(except int) uint64 {
	var sum uint64
	for _, i := range c.live() {
		if i == except {
			continue
		}
		in, err := leader.ReadInspection(c.node(i), c.pids[i], "ergo:elections_started")
		if err != nil {
			continue // the member is restarting; its counter restarts too
		}
		sum += in.ElectionsStarted
	}
	return sum
}

// stop stops every node and the mesh.
func (c *localCluster) stop() error {
	if c.nodes != nil {
		c.nodes.Close()
	}
	if c.mesh != nil {
		return c.mesh.Close()
	}
	return nil
}

// view is what one member last reported: whom it follows at which term, and
// since when it has believed that.
type view struct {
	role   leader.Role
	term   uint64
	leader gen.PID
	since  time.Time
}

// recorder keeps every member's latest view from OnTransition, so a waiter
// learns the moment a majority recognises a new leader. Its lock guards views
// and changed; members report from their own goroutines.
type recorder struct {
	mu      sync.Mutex
	views   map[gen.PID]view
	changed chan struct{}
	// sink, when set, receives every transition after it is recorded, with
	// the member's previous view (zero for its first report).
	sink func(t leader.Transition, prev view)
}

func newRecorder(sink func(t leader.Transition, prev view)) *recorder {
	return &recorder{views: make(map[gen.PID]view), changed: make(chan struct{}), sink: sink}
}

// record is the members' OnTransition.
func (r *recorder) record(t leader.Transition) {
	r.mu.Lock()
	old, ok := r.views[t.Member] // old is the zero view when !ok
	v := view{role: t.Role, term: t.Term, leader: t.Leader, since: t.At}
	if ok && old.term == t.Term && old.leader == t.Leader {
		v.since = old.since
	}
	r.views[t.Member] = v
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	if r.sink != nil {
		r.sink(t, old)
	}
}

// forget drops a dead member's view.
func (r *recorder) forget(pid gen.PID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.views, pid)
}

// agreed looks for a leader at a term above afterTerm, other than not,
// recognised by at least quorum members (leader.Agree over the latest views).
func (r *recorder) agreed(afterTerm uint64, not gen.PID, quorum int) (leader.Agreement, bool, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	beliefs := make([]leader.Belief, 0, len(r.views))
	for member, v := range r.views {
		if v.term > afterTerm && v.leader != not {
			beliefs = append(beliefs, leader.Belief{Member: member.Node, Role: v.role, Term: v.term, Leader: v.leader.Node, LeaderPID: v.leader, Since: v.since})
		}
	}
	a, ok := leader.Agree(beliefs, quorum)
	return a, ok, r.changed
}

// led reports whether quorum members name one leader in one term, as
// agreed with no term or leader excluded does, without building the
// agreement: --trace counts thousands of clusters a second with it, and
// must not feed the garbage collector of the run it watches.
func (r *recorder) led(quorum int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.views {
		if a.term == 0 || a.leader.Node == "" {
			continue
		}
		same := 0
		for _, b := range r.views {
			if b.term == a.term && b.leader.Node == a.leader.Node {
				same++
			}
		}
		if same >= quorum {
			return true
		}
	}
	return false
}

// waitAgreed waits until agreed succeeds or ctx ends.
func (r *recorder) waitAgreed(ctx context.Context, afterTerm uint64, not gen.PID, quorum int) (leader.Agreement, error) {
	for {
		a, ok, changed := r.agreed(afterTerm, not, quorum)
		if ok {
			return a, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return leader.Agreement{}, fmt.Errorf("waiting for %d members to agree on a leader above term %d: %w", quorum, afterTerm, ctx.Err())
		}
	}
}
