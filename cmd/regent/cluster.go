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
	"github.com/regent-go/regent/node"
)

// memberName is the registered name of the election actor on every node the
// CLI starts.
const memberName gen.Atom = "election"

// member is the CLI's election actor: it does no singleton work of its own;
// the CLI watches it through OnTransition and inspection.
type member struct {
	leader.Actor
	opts leader.Options
}

func (m *member) Init(...any) (leader.Options, error) { return m.opts, nil }
func (m *member) HandleBecomeLeader() error           { return nil }
func (m *member) HandleBecomeFollower(gen.PID) error  { return nil }
func memberFactory(o leader.Options) gen.ProcessFactory {
	return func() gen.ProcessBehavior { return &member{opts: o} }
}

// startLoopbackNode starts a node listening on a free 127.0.0.1 port, with
// the election's wire types registered.
func startLoopbackNode(name gen.Atom, cookie string, level gen.LogLevel) (gen.Node, error) {
	n, err := node.Start(name, gen.NodeOptions{
		Network: gen.NetworkOptions{Cookie: cookie, Acceptor: gen.AcceptorOptions{Host: "127.0.0.1"}},
		Log:     gen.LogOptions{Level: level},
	})
	if err != nil {
		return nil, fmt.Errorf("starting node %s: %w", name, err)
	}
	if err := n.Network().RegisterTypes(leader.NetworkTypes()); err != nil {
		n.StopForce()
		return nil, fmt.Errorf("registering the election's types on %s: %w", name, err)
	}
	return n, nil
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
	level  gen.LogLevel
	opts   leader.Options // template: Bootstrap and OnTransition are filled per member
	mesh   *faultproxy.Mesh
	rec    *recorder

	names []gen.Atom
	nodes []gen.Node // nil while a node is down
	pids  []gen.PID
}

// newLocalCluster names size nodes prefix1..prefixN; nothing runs until start.
func newLocalCluster(size int, prefix string, opts leader.Options, withMesh bool, rec *recorder) *localCluster {
	c := &localCluster{cookie: "regent-local", level: gen.LogLevelError, opts: opts, rec: rec,
		nodes: make([]gen.Node, size), pids: make([]gen.PID, size)}
	for i := 0; i < size; i++ {
		c.names = append(c.names, gen.Atom(fmt.Sprintf("%s%d@127.0.0.1", prefix, i+1)))
	}
	if withMesh {
		c.mesh = faultproxy.New(faultproxy.Options{HoldDials: true})
	}
	return c
}

// start starts every node, then every member.
func (c *localCluster) start(ctx context.Context) error {
	for i := range c.names {
		if err := c.startNode(i); err != nil {
			return err
		}
	}
	for i := range c.names {
		if err := c.spawn(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// route returns where from dials to.
func (c *localCluster) route(from, to int) string {
	if c.mesh != nil {
		return c.mesh.Route(c.names[from], c.names[to])
	}
	if c.nodes[to] == nil {
		return ""
	}
	return c.nodes[to].Network().AcceptorAddress()
}

// startNode starts node i and routes it to and from every other node.
func (c *localCluster) startNode(i int) error {
	n, err := startLoopbackNode(c.names[i], c.cookie, c.level)
	if err != nil {
		return err
	}
	c.nodes[i] = n
	if c.mesh != nil {
		if err := c.mesh.Add(c.names[i], n.Network().AcceptorAddress()); err != nil {
			return fmt.Errorf("adding %s to the mesh: %w", c.names[i], err)
		}
	}
	for j := range c.names {
		if j == i {
			continue
		}
		if r := c.route(i, j); r != "" {
			if err := n.Network().AddRoute(c.names[j], r); err != nil {
				return fmt.Errorf("route %s→%s: %w", c.names[i], c.names[j], err)
			}
		}
		if c.nodes[j] != nil {
			if r := c.route(j, i); r != "" {
				if err := c.nodes[j].Network().AddRoute(c.names[i], r); err != nil {
					return fmt.Errorf("route %s→%s: %w", c.names[j], c.names[i], err)
				}
			}
		}
	}
	return nil
}

// spawn starts member i, bootstrapped with every other member.
func (c *localCluster) spawn(ctx context.Context, i int) error {
	o := c.opts
	o.Bootstrap = nil
	for j, name := range c.names {
		if j != i {
			o.Bootstrap = append(o.Bootstrap, gen.ProcessID{Name: memberName, Node: name})
		}
	}
	if c.rec != nil {
		o.OnTransition = c.rec.record
	}
	pid, err := spawnMember(ctx, c.nodes[i], memberName, o)
	if err != nil {
		return err
	}
	c.pids[i] = pid
	return nil
}

// stopNode kills node i abruptly (StopForce): peers see ErrNoConnection.
func (c *localCluster) stopNode(i int) {
	if c.nodes[i] == nil {
		return
	}
	c.nodes[i].StopForce()
	c.nodes[i] = nil
	if c.rec != nil {
		c.rec.forget(c.pids[i])
	}
}

// killMember kills member i's process only; peers see its real reason.
func (c *localCluster) killMember(i int) error {
	if err := c.nodes[i].Kill(c.pids[i]); err != nil {
		return fmt.Errorf("killing %s on %s: %w", c.pids[i], c.names[i], err)
	}
	if c.rec != nil {
		c.rec.forget(c.pids[i])
	}
	return nil
}

// restart brings node i back (if down) and respawns its member.
func (c *localCluster) restart(ctx context.Context, i int) error {
	if c.nodes[i] == nil {
		if err := c.startNode(i); err != nil {
			return err
		}
	}
	return c.spawn(ctx, i)
}

// index returns the position of the member with pid, or -1.
func (c *localCluster) index(pid gen.PID) int {
	return slices.Index(c.pids, pid)
}

// live lists the indexes of running nodes.
func (c *localCluster) live() []int {
	var out []int
	for i, n := range c.nodes {
		if n != nil {
			out = append(out, i)
		}
	}
	return out
}

// short is the node name of member i without the host, for logs.
func (c *localCluster) short(i int) string {
	return shortNode(c.names[i])
}

// counter sums an integer inspection key over the live members other than
// except (-1: all).
func (c *localCluster) counter(key string, except int) uint64 {
	var sum uint64
	for _, i := range c.live() {
		if i == except {
			continue
		}
		in, err := c.nodes[i].Inspect(c.pids[i], key)
		if err != nil {
			continue // the member is restarting; its counter restarts too
		}
		var v uint64
		if _, err := fmt.Sscan(in[key], &v); err == nil {
			sum += v
		}
	}
	return sum
}

// stop stops every node and the mesh.
func (c *localCluster) stop() error {
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		if n != nil {
			wg.Add(1)
			go func() { defer wg.Done(); n.Stop() }()
			c.nodes[i] = nil
		}
	}
	wg.Wait()
	if c.mesh != nil {
		return c.mesh.Close()
	}
	return nil
}

// view is what one member last reported: whom it follows at which term, and
// since when it has believed that.
type view struct {
	role   string
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

// agreement is a leader recognised by enough members.
type agreement struct {
	leader gen.PID
	term   uint64
	// at is when the last member needed for the quorum came to recognise it.
	at time.Time
	// members is how many recognise it.
	members int
}

// agreed looks for a leader at a term above afterTerm, other than not,
// recognised by at least quorum members.
func (r *recorder) agreed(afterTerm uint64, not gen.PID, quorum int) (agreement, bool, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	type key struct {
		leader gen.PID
		term   uint64
	}
	groups := map[key][]time.Time{}
	for _, v := range r.views {
		if v.leader == (gen.PID{}) || v.term <= afterTerm || v.leader == not {
			continue
		}
		k := key{v.leader, v.term}
		groups[k] = append(groups[k], v.since)
	}
	for k, times := range groups {
		if len(times) >= quorum {
			slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
			return agreement{leader: k.leader, term: k.term, at: times[quorum-1], members: len(times)}, true, r.changed
		}
	}
	return agreement{}, false, r.changed
}

// waitAgreed waits until agreed succeeds or ctx ends.
func (r *recorder) waitAgreed(ctx context.Context, afterTerm uint64, not gen.PID, quorum int) (agreement, error) {
	for {
		a, ok, changed := r.agreed(afterTerm, not, quorum)
		if ok {
			return a, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return agreement{}, fmt.Errorf("waiting for %d members to agree on a leader above term %d: %w", quorum, afterTerm, ctx.Err())
		}
	}
}
