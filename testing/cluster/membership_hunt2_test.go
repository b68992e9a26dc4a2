package cluster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/cluster"
)

// TestHunt2JoinLeaveDuringCutsOverTCP starts five members whose Bootstrap
// lists differ (each lists the next two, wrapping), MinClusterSize 3, and
// in each cycle cuts the network (a partition or an isolation) and has
// random members Join and Leave random peers while it stands, with a short
// GhostTTL so that cuts outlast it; then heals, re-declares everyone, and
// waits for one leader. Every safety rule must hold throughout.
func TestHunt2JoinLeaveDuringCutsOverTCP(t *testing.T) {
	cycles, seed, rng := hunt2Soak(t)
	const n = 5
	cfg := cluster.Config{Size: n, Seed: seed}
	cfg.Options = func(i int) leader.Options {
		return leader.Options{ClusterID: cluster.DefaultClusterID, MinClusterSize: 3, GhostTTL: 600,
			Bootstrap: bootstrap(cfg, (i+1)%n, (i+2)%n)}
	}
	c := start(t, cfg)
	waitLeader(t, c)
	for cycle := range cycles {
		order := rng.Perm(n)
		l := waitLeader(t, c)
		switch rng.IntN(3) {
		case 0:
			require.NoError(t, c.Partition(order[:3], order[3:]))
		case 1:
			require.NoError(t, c.Partition(order[:2], order[2:4], order[4:]))
		default:
			require.NoError(t, c.Isolate(l))
		}
		var ops []string
		for range 1 + rng.IntN(4) {
			time.Sleep(time.Duration(rng.IntN(700)) * time.Millisecond)
			i, j := rng.IntN(n), rng.IntN(n)
			if i == j {
				continue
			}
			if rng.IntN(2) == 0 {
				_ = c.Join(i, j)
				ops = append(ops, "join")
			} else {
				_ = c.Leave(i, j)
				ops = append(ops, "leave")
			}
		}
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		t.Logf("cycle %d: leader %d, order %v, ops %v", cycle, l, order, ops)
		require.NoError(t, c.Heal())
		for i := range n {
			for j := range n {
				if i != j && rng.IntN(3) == 0 {
					_ = c.Join(i, j)
				}
			}
		}
	}
	waitLeader(t, c)
	require.NoError(t, c.Check())
}
