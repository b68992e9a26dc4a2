package loopback

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
)

// pollEvery is how often WaitAgreed reads the members.
const pollEvery = 10 * time.Millisecond

// Read reads the election state of the leader actor pid on node i.
func (c *Cluster) Read(i int, pid gen.PID) (leader.Inspection, error) {
	n := c.nodes[i]
	if n == nil {
		return leader.Inspection{}, fmt.Errorf("%w: %s", errNotRunning, c.names[i])
	}
	return leader.ReadInspection(n, pid, "ergo:state", "ergo:term", "ergo:leader_node", "ergo:view_agreed")
}

// Agreed reports the leader that every listed member recognises at one
// term, when that leader is one of them (leader.Agree with every member
// needed) and every listed member holds the cluster's agreed view;
// pids[i] is the leader actor on node i. Requiring the agreed view means a
// cluster that Agreed reports is formed: losing its leader right after
// leaves the others a view to elect a successor in (a first view not yet
// known to be agreed finishes forming only once a candidate learns it was
// chosen, rule R13, or with MinClusterSize live members).
func (c *Cluster) Agreed(pids []gen.PID, members []int) (int, uint64, bool) {
	beliefs := make([]leader.Belief, 0, len(members))
	for _, i := range members {
		in, err := c.Read(i, pids[i])
		if err != nil || !in.ViewAgreed {
			return -1, 0, false
		}
		beliefs = append(beliefs, in.Belief(c.names[i]))
	}
	a, ok := leader.Agree(beliefs, len(members))
	if !ok {
		return -1, 0, false
	}
	i := slices.Index(c.names, a.Leader)
	if !slices.Contains(members, i) {
		return -1, 0, false
	}
	return i, a.Term, true
}

// WaitAgreed polls Agreed until it succeeds, ctx ends or timeout passes.
func (c *Cluster) WaitAgreed(ctx context.Context, pids []gen.PID, members []int, timeout time.Duration) (int, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		if i, term, ok := c.Agreed(pids, members); ok {
			return i, term, nil
		}
		select {
		case <-ctx.Done():
			return -1, 0, fmt.Errorf("loopback: members %v did not agree on a leader: %w; %s", members, ctx.Err(), c.describe(pids, members))
		case <-tick.C:
		}
	}
}

// diagnosisKeys are the inspection keys a failed wait reports per member:
// enough to tell a stuck vote from an unformed view or a lost peer.
var diagnosisKeys = []string{
	"ergo:state", "ergo:term", "ergo:leader_node", "ergo:voted_for", "ergo:view_epoch",
	"ergo:view_members", "ergo:pending_change", "ergo:unclustered_because",
	"ergo:unreachable", "ergo:votes_granted", "ergo:prevoting", "ergo:rounds",
}

// describe says what each listed member believes, for a wait's error.
func (c *Cluster) describe(pids []gen.PID, members []int) string {
	var b strings.Builder
	for _, i := range members {
		fmt.Fprintf(&b, "[%s:", c.names[i])
		n := c.nodes[i]
		if n == nil {
			b.WriteString(" down]")
			continue
		}
		raw, err := n.Inspect(pids[i], diagnosisKeys...)
		if err != nil {
			fmt.Fprintf(&b, " %v]", err)
			continue
		}
		for _, k := range diagnosisKeys {
			fmt.Fprintf(&b, " %s=%q", strings.TrimPrefix(k, "ergo:"), raw[k])
		}
		b.WriteString("]")
	}
	return b.String()
}

// All returns 0..n-1.
func All(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
