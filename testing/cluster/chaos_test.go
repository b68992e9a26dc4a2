package cluster_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/testing/cluster"
	"github.com/regent-go/regent/testing/history"
)

// defaultChaosCycles keeps the default run near half a minute;
// REGENT_CHAOS_CYCLES asks for more, REGENT_CHAOS_SEED replays a run.
const defaultChaosCycles = 30

func chaosSetting(t *testing.T, name string, def uint64) uint64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	require.NoError(t, err, "%s=%q", name, v)
	return n
}

// Random partitions, heals, kills and restarts over real TCP; after each
// cycle's repair, one leader; at the end, every invariant checker.
func TestChaos(t *testing.T) {
	cycles := int(chaosSetting(t, "REGENT_CHAOS_CYCLES", defaultChaosCycles))
	seed := chaosSetting(t, "REGENT_CHAOS_SEED", uint64(time.Now().UnixNano()))
	t.Logf("chaos: %d cycles, REGENT_CHAOS_SEED=%d", cycles, seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	c := start(t, cluster.Config{Size: 5, Seed: seed, Options: docOptions(false)})
	waitLeader(t, c)
	settles := map[string][]time.Duration{}
	for cycle := 0; cycle < cycles; cycle++ {
		kind, what := chaosFault(t, c, rng)
		t.Logf("cycle %d: %s", cycle, what)
		healed := time.Now()
		require.NoError(t, c.Heal())
		for i := 0; i < c.Size(); i++ {
			if !c.Alive(i) {
				require.NoError(t, c.Restart(i))
			}
		}
		waitLeader(t, c)
		d, ok := history.SettleTime(c.History())
		if !ok {
			d = time.Since(healed) // converged between polls before any recorded change
		}
		settles[kind] = append(settles[kind], d)
		settles["all"] = append(settles["all"], d)
	}
	require.NoError(t, c.Check())
	t.Logf("chaos: %d cycles over real TCP; time from the last repair (heal or restart) to a single leader:", cycles)
	for _, kind := range slices.Sorted(maps.Keys(settles)) {
		d := settles[kind]
		slices.Sort(d)
		t.Logf("  %-26s n=%-4d p50 %-12v p99 %-12v max %v", kind, len(d), percentile(d, 0.50), percentile(d, 0.99), d[len(d)-1])
	}
}

// chaosFault does one random fault and waits for it to take effect; it
// returns the fault's kind and a description.
func chaosFault(t *testing.T, c *cluster.Cluster, rng *rand.Rand) (string, string) {
	order := rng.Perm(c.Size())
	switch rng.IntN(5) {
	case 0:
		require.NoError(t, c.Partition(order[:3], order[3:]))
		waitLeader(t, c)
		return "partition 3|2", fmt.Sprintf("silent partition %v | %v", order[:3], order[3:])
	case 1:
		require.NoError(t, c.Partition(order[:2], order[2:4], order[4:]))
		require.Eventually(t, func() bool { return len(c.Leaders()) == 0 }, settle, poll, "no side has a majority")
		return "partition 2|2|1", fmt.Sprintf("silent partition with no majority %v | %v | %v", order[:2], order[2:4], order[4:])
	case 2:
		n := 1 + rng.IntN(2)
		for _, i := range order[:n] {
			require.NoError(t, c.Kill(i))
		}
		waitLeader(t, c)
		return "kill+restart", fmt.Sprintf("kill %v", order[:n])
	case 3:
		require.NoError(t, c.PartitionReset(order[:3], order[3:]))
		require.NoError(t, c.Kill(order[3]))
		waitLeader(t, c)
		return "reset partition+kill", fmt.Sprintf("reset partition %v | %v, kill %d", order[:3], order[3:], order[3])
	}
	l := waitLeader(t, c)
	require.NoError(t, c.Isolate(l))
	waitLeader(t, c)
	return "isolate leader", fmt.Sprintf("isolate the leader %d", l)
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
