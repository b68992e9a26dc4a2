package cluster

import (
	"fmt"
	"strings"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/history"
)

// pollEvery is how often WaitLeader looks.
const pollEvery = 20 * time.Millisecond

// Size is the number of members.
func (c *Cluster) Size() int { return len(c.members) }

// NodeName is member i's node name, the same in every life.
func (c *Cluster) NodeName(i int) gen.Atom { return c.cfg.nodeName(i) }

// Label is member i's name in the history.
func (c *Cluster) Label(i int) string { return c.cfg.label(i) }

// Alive reports whether member i is running.
func (c *Cluster) Alive(i int) bool { return c.alive(i) }

func (c *Cluster) alive(i int) bool { return c.snapshot(i).alive }

// snapshot copies member i's mutable fields; the zero member when i is out of range.
func (c *Cluster) snapshot(i int) member {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.members) {
		return member{}
	}
	return *c.members[i]
}

// Life is member i's current life, counted from 1.
func (c *Cluster) Life(i int) int { return c.snapshot(i).life }

// Node is member i's node in in-process mode, nil when it is down or runs in
// its own OS process.
func (c *Cluster) Node(i int) gen.Node { return c.snapshot(i).node }

// PID is the PID of member i's leader actor in its current life.
func (c *Cluster) PID(i int) gen.PID { return c.snapshot(i).pid }

// History is the record of every member's role, term and leader transitions
// and of every fault, with times since Start.
func (c *Cluster) History() *history.History { return c.hist }

// NetStats are the proxies' counters.
type NetStats struct {
	// Accepted counts proxied connections; Refused those closed on arrival
	// (a reset cut, or a target that was down).
	Accepted, Refused uint64
	// FramesDropped counts frames lost to SetLoss.
	FramesDropped uint64
	// Open is the number of connections proxied now.
	Open int
}

// NetStats returns the proxies' counters.
func (c *Cluster) NetStats() NetStats {
	s := c.mesh.Stats()
	return NetStats{Accepted: s.Accepted, Refused: s.Refused, FramesDropped: s.FramesDropped, Open: s.Open}
}

// Inspect reads member i's inspection (all keys, or the named ones).
func (c *Cluster) Inspect(i int, keys ...string) (map[string]string, error) {
	m, err := c.member(i)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	n, pid, alive := m.node, m.pid, m.alive
	c.mu.Unlock()
	if !alive {
		return nil, fmt.Errorf("cluster: inspect member %d: it is down: %w", i, gen.ErrNoConnection)
	}
	if c.procs != nil {
		n = c.procs.harness
	}
	got, err := n.Inspect(pid, keys...)
	if err != nil {
		return nil, fmt.Errorf("cluster: inspect member %d: %w", i, err)
	}
	return got, nil
}

// Leaders lists the running members whose inspection says they lead.
func (c *Cluster) Leaders() []int {
	var out []int
	for i := range c.members {
		if s, err := c.read(i, "ergo:state"); err == nil && s.Role == leader.RoleLeader {
			out = append(out, i)
		}
	}
	return out
}

// read is Inspect, parsed.
func (c *Cluster) read(i int, keys ...string) (leader.Inspection, error) {
	raw, err := c.Inspect(i, keys...)
	if err != nil {
		return leader.Inspection{}, err
	}
	return leader.ParseInspection(raw)
}

// WaitLeader waits until exactly one running member leads, every running
// member connected to it both ways follows it at its term, and those
// followers with the leader are a majority of the leader's view; it returns
// the leader. Members cut off from the leader are not required to follow. It fails with
// an error wrapping gen.ErrTimeout, which shows each member's state.
func (c *Cluster) WaitLeader(timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	ticker := time.NewTicker(pollEvery)
	defer ticker.Stop()
	for {
		leaderIdx, states := c.agreedLeader()
		if leaderIdx >= 0 {
			return leaderIdx, nil
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("cluster: no single agreed leader within %v (%s): %w", timeout, strings.Join(states, "; "), gen.ErrTimeout)
		}
		<-ticker.C
	}
}

// agreedLeader returns the agreed leader, or -1 and each member's state:
// exactly one running member leads, and every member connected to it both
// ways recognises it at its term (leader.Agree, all of them needed), a
// majority of the leader's view.
func (c *Cluster) agreedLeader() (int, []string) {
	views := make([]*leader.Inspection, len(c.members))
	states := make([]string, len(c.members))
	leaderIdx, leaders := -1, 0
	for i := range c.members {
		v, err := c.read(i, "ergo:state", "ergo:term", "ergo:leader_node", "ergo:view_size")
		if err != nil {
			states[i] = fmt.Sprintf("%s: %v", c.cfg.label(i), err)
			continue
		}
		views[i] = &v
		states[i] = fmt.Sprintf("%s: %s term %d leader %q", c.cfg.label(i), v.Role, v.Term, v.LeaderNode)
		if v.Role == leader.RoleLeader {
			leaderIdx, leaders = i, leaders+1
		}
	}
	if leaders != 1 {
		return -1, states
	}
	var beliefs []leader.Belief
	for i, v := range views {
		if v != nil && c.connected(leaderIdx, i) {
			beliefs = append(beliefs, v.Belief(c.cfg.nodeName(i)))
		}
	}
	a, ok := leader.Agree(beliefs, len(beliefs))
	if !ok || a.Leader != c.cfg.nodeName(leaderIdx) || 2*len(a.Members) <= views[leaderIdx].ViewSize {
		return -1, states // disagreement, or a leader cut off from a majority of its view, on its way out
	}
	return leaderIdx, states
}

// Check runs every invariant checker of testing/history over the history so
// far, with Config.Bounds, and returns an error describing each violation
// with the history around it (errors.As finds the first *history.Violation).
// The convergence rule is skipped while a one-way cut, loss or delay stands.
func (c *Cluster) Check() error {
	c.hist.Finish(c.now())
	b := c.cfg.Bounds
	c.mu.Lock()
	if c.oneWay || c.noisy {
		b.Converge = 0
	}
	c.mu.Unlock()
	vs := history.CheckAll(c.hist, b)
	if len(vs) == 0 {
		return nil
	}
	return fmt.Errorf("cluster: %d invariant violation(s): %w\n%s", len(vs), &vs[0], history.Report(vs[1:]))
}
