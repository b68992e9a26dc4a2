package loopback

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/regent-go/regent/gen"
)

// State is one member's election state, read from its inspection.
type State struct {
	Role       string
	Term       uint64
	LeaderNode gen.Atom
}

// Read inspects the member pid on n; ok is false when it cannot be read.
func Read(n gen.Node, pid gen.PID) (State, bool) {
	in, err := n.Inspect(pid, "ergo:state", "ergo:term", "ergo:leader_node")
	if err != nil {
		return State{}, false
	}
	term, err := strconv.ParseUint(in["ergo:term"], 10, 64)
	if err != nil {
		return State{}, false
	}
	return State{Role: in["ergo:state"], Term: term, LeaderNode: gen.Atom(in["ergo:leader_node"])}, true
}

// Agreed reports the leader every listed member recognises, when exactly one
// of them leads and all the others follow it at its term.
func Agreed(nodes []gen.Node, pids []gen.PID, members []int) (int, uint64, bool) {
	leaderIdx, term := -1, uint64(0)
	states := make([]State, len(nodes))
	for _, i := range members {
		s, ok := Read(nodes[i], pids[i])
		if !ok {
			return -1, 0, false
		}
		states[i] = s
		if s.Role == "leader" {
			if leaderIdx >= 0 {
				return -1, 0, false
			}
			leaderIdx, term = i, s.Term
		}
	}
	if leaderIdx < 0 {
		return -1, 0, false
	}
	for _, i := range members {
		if states[i].Term != term || states[i].LeaderNode != nodes[leaderIdx].Name() {
			return -1, 0, false
		}
	}
	return leaderIdx, term, true
}

// WaitAgreed polls Agreed until it succeeds or timeout passes.
func WaitAgreed(ctx context.Context, nodes []gen.Node, pids []gen.PID, members []int, timeout time.Duration) (int, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if i, term, ok := Agreed(nodes, pids, members); ok {
			return i, term, nil
		}
		select {
		case <-ctx.Done():
			return -1, 0, fmt.Errorf("members %v did not agree on a leader: %w", members, ctx.Err())
		case <-tick.C:
		}
	}
}

// All returns 0..n-1.
func All(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
