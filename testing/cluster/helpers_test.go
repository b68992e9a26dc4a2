package cluster_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/testing/cluster"
)

// settle bounds every wait for an election outcome: generous for a loaded
// 2-core machine running -race, though a loopback election takes well under
// a second.
const settle = 30 * time.Second

const poll = 20 * time.Millisecond

// holdDials is set by REGENT_CLUSTER_HOLD_DIALS=1: the leader-document
// tests then run with new connections held across partitions (see
// Config.HoldDials), which today exposes the runtime dialling inside Send.
var holdDials = os.Getenv("REGENT_CLUSTER_HOLD_DIALS") == "1"

func start(t *testing.T, cfg cluster.Config) *cluster.Cluster {
	t.Helper()
	c, err := cluster.Start(t, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("history:\n%s", c.History())
		}
	})
	return c
}

func waitLeader(t *testing.T, c *cluster.Cluster) int {
	t.Helper()
	l, err := c.WaitLeader(settle)
	require.NoError(t, err)
	return l
}

// item reads one inspection key of member i, empty when it cannot be read.
func item(c *cluster.Cluster, i int, key string) string {
	v, err := c.Inspect(i, key)
	if err != nil {
		return ""
	}
	return v[key]
}

func term(t *testing.T, c *cluster.Cluster, i int) uint64 {
	t.Helper()
	v, err := c.Inspect(i, "ergo:term")
	require.NoError(t, err)
	n, err := strconv.ParseUint(v["ergo:term"], 10, 64)
	require.NoError(t, err)
	return n
}

// others lists the members of c except those given.
func others(c *cluster.Cluster, except ...int) []int {
	var out []int
	for i := 0; i < c.Size(); i++ {
		keep := true
		for _, e := range except {
			keep = keep && i != e
		}
		if keep {
			out = append(out, i)
		}
	}
	return out
}
