package node_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"
	"time"

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
	c := newProbe()
	c.onMessage = func(p *probe, from gen.PID, message any) error {
		handled.Add(1)
		if _, isDown := message.(gen.MessageDownPID); isDown {
			return nil
		}
		target := pids[rand.IntN(len(pids))]
		var err error
		if rand.IntN(10) == 0 && target != p.PID() {
			_, err = p.CallWithTimeout(target, "call", 1)
		} else {
			err = p.Send(target, ping{Seq: 1})
		}
		if err != nil && !errors.Is(err, gen.ErrNoConnection) && !errors.Is(err, gen.ErrProcessTerminated) && !errors.Is(err, gen.ErrTimeout) {
			unexpected.Add(1)
			t.Logf("unexpected error: %v", err)
		}
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
		require.Eventually(t, func() bool { return handled.Load() > before+100 }, wait, time.Millisecond, "traffic stopped")
	}
	for _, n := range nodes {
		n.Stop()
	}
	require.Zero(t, unexpected.Load())
	t.Logf("handled %d messages", handled.Load())
}
