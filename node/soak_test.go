package node_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// envSoak enables TestSoak: its value is how long to run, e.g. "30s".
const envSoak = "REGENT_NODE_SOAK"

// TestSoak runs three nodes whose processes bounce messages and calls at
// random across them while connections are cut at random. It checks that
// nothing panics, every failure is one of the documented errors, traffic
// keeps flowing, and the nodes stop cleanly.
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv(envSoak))
	if err != nil || d <= 0 {
		t.Skipf("set %s to a duration to run the soak", envSoak)
	}
	nodes := make([]gen.Node, 3)
	for i := range nodes {
		nodes[i], _ = startNet(t, gen.Atom(fmt.Sprintf("soak%d@127.0.0.1", i)), fastNet(testCookie))
	}
	for _, a := range nodes {
		for _, b := range nodes {
			if a != b {
				route(t, a, b)
			}
		}
	}
	var pids []gen.PID
	var handled, unexpected atomic.Int64
	var stopping atomic.Bool // errors while the nodes stop are expected
	check := func(err error) {
		if err != nil && !stopping.Load() && !errors.Is(err, gen.ErrNoConnection) && !errors.Is(err, gen.ErrProcessTerminated) && !errors.Is(err, gen.ErrTimeout) {
			unexpected.Add(1)
			t.Logf("unexpected error: %v", err)
		}
	}
	c := newProbe()
	c.onMessage = func(p *probe, from gen.PID, message any) error {
		handled.Add(1)
		if _, isDown := message.(gen.MessageDownPID); isDown {
			return nil
		}
		target := pids[rand.IntN(len(pids))]
		if rand.IntN(10) == 0 && target != p.PID() {
			_, err := p.CallWithTimeout(target, "call", 1)
			check(err)
		}
		check(p.Send(target, ping{Seq: 1}))
		return nil
	}
	for _, n := range nodes {
		for i := 0; i < 30; i++ {
			pids = append(pids, spawnProbe(t, n, c))
		}
	}
	for _, pid := range pids[:10] {
		require.NoError(t, nodes[0].Send(pid, ping{}))
	}
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		before := handled.Load()
		n := nodes[rand.IntN(len(nodes))]
		for _, peer := range n.Network().Nodes() {
			_ = n.Network().Disconnect(peer)
		}
		for _, pid := range pids[:10] {
			_ = nodes[rand.IntN(len(nodes))].Send(pid, ping{})
		}
		if !assertEventually(t, func() bool { return handled.Load() > before+100 }) {
			for _, n := range nodes {
				t.Logf("%s: nodes %v stats %+v", n.Name(), n.Network().Nodes(), n.Network().Stats())
			}
			t.Fatalf("traffic stopped at %d handled", handled.Load())
		}
	}
	stopping.Store(true)
	for _, n := range nodes {
		n.Stop()
	}
	require.Zero(t, unexpected.Load())
	t.Logf("handled %d messages", handled.Load())
}

// assertEventually reports whether cond became true within the wait bound.
func assertEventually(t *testing.T, cond func() bool) bool {
	t.Helper()
	return assert.Eventually(t, cond, wait, time.Millisecond)
}
