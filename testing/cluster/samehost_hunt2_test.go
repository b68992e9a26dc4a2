package cluster_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/cluster"
)

// hunt2Soak skips t unless REGENT_HUNT2_SOAK (the number of cycles) is
// set, and returns the cycles, the seed (REGENT_HUNT2_SEED, or the clock)
// and a generator of it.
func hunt2Soak(t *testing.T) (cycles int, seed uint64, rng *rand.Rand) {
	t.Helper()
	if os.Getenv("REGENT_HUNT2_SOAK") == "" {
		t.Skip("set REGENT_HUNT2_SOAK=<cycles> to run")
	}
	cycles = int(chaosSetting(t, "REGENT_HUNT2_SOAK", 10))
	seed = chaosSetting(t, "REGENT_HUNT2_SEED", uint64(time.Now().UnixNano()))
	t.Logf("REGENT_HUNT2_SEED=%d", seed)
	return cycles, seed, rand.New(rand.NewPCG(seed, seed))
}

// holderOf is the member whose ergo:same_host says it holds the cell, -1
// when none can be read as holding it.
func holderOf(c *cluster.Cluster) int {
	for i := range c.Size() {
		if c.Alive(i) && strings.Contains(item(c, i, "ergo:same_host"), "holds=true") {
			return i
		}
	}
	return -1
}

// TestHunt2SameHostCellOverTCP runs five members as separate OS processes
// on one host sharing one same-host cell, so only the lowest live PID
// campaigns, and strikes the holder and the leader: kills (a dead holder is
// replaced at once; a restarted process gets a new PID), a killed holder
// restarted at once, the holder isolated (it keeps beating the cell while it
// cannot win), partitions. Every safety rule must hold; after each repair
// one leader must emerge.
func TestHunt2SameHostCellOverTCP(t *testing.T) {
	cycles, seed, rng := hunt2Soak(t)
	dir := t.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "hunt2")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(d) })
		dir = d
	}
	cell := filepath.Join(dir, "cell")
	evidence := leader.EvidenceReplies
	if os.Getenv("REGENT_HUNT2_CONTACT") != "" {
		evidence = leader.EvidenceContact
	}
	c := start(t, cluster.Config{Size: 5, Seed: seed, Processes: true, Options: func(int) leader.Options {
		return leader.Options{ClusterID: cluster.DefaultClusterID, SameHost: cell, Evidence: evidence}
	}})
	waitLeader(t, c)
	for cycle := range cycles {
		l := waitLeader(t, c)
		h := holderOf(c)
		order := rng.Perm(c.Size())
		var what string
		switch rng.IntN(6) {
		case 0:
			if h >= 0 {
				require.NoError(t, c.Kill(h))
			}
			what = "kill the holder"
		case 1:
			if h >= 0 {
				require.NoError(t, c.Kill(h))
				require.NoError(t, c.Restart(h))
			}
			what = "kill and restart the holder"
		case 2:
			if h >= 0 {
				require.NoError(t, c.Isolate(h))
			}
			what = "isolate the holder"
		case 3:
			require.NoError(t, c.Isolate(l))
			what = "isolate the leader"
		case 4:
			require.NoError(t, c.Partition(order[:3], order[3:]))
			what = "partition 3|2"
		default:
			require.NoError(t, c.Kill(l))
			if order[0] != l {
				require.NoError(t, c.Kill(order[0]))
			}
			what = "kill the leader and one more"
		}
		t.Logf("cycle %d: leader %d, holder %d: %s", cycle, l, h, what)
		time.Sleep(time.Duration(200+rng.IntN(1500)) * time.Millisecond)
		require.NoError(t, c.Heal())
		for i := range c.Size() {
			if !c.Alive(i) {
				require.NoError(t, c.Restart(i))
			}
		}
	}
	waitLeader(t, c)
	require.NoError(t, c.Check())
}

// TestHunt2TwoClustersShareACellPath starts two clusters of OS processes on
// one host with the same SameHost path (the guarantees' "one path per
// cluster per host"). The hunt found the second cluster stuck at term 0 for
// good; a cell is now bound to the first cluster, and the second one's
// members fail to start.
func TestHunt2TwoClustersShareACellPath(t *testing.T) {
	if os.Getenv("REGENT_HUNT2_SOAK") == "" {
		t.Skip("set REGENT_HUNT2_SOAK to run")
	}
	cell := filepath.Join(t.TempDir(), "cell")
	opts := func(id string) func(int) leader.Options {
		return func(int) leader.Options { return leader.Options{ClusterID: id, SameHost: cell} }
	}
	a := start(t, cluster.Config{Size: 3, Processes: true, NodePrefix: "a", Options: opts("a")})
	waitLeader(t, a)
	_, err := cluster.Start(t, cluster.Config{Size: 3, Processes: true, NodePrefix: "b", Options: opts("b")})
	require.Error(t, err, "a second cluster on the first one's cell path starts")
	t.Logf("the second cluster is refused: %v", err)
}
