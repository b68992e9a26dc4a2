package cluster_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/cluster"
	"github.com/regent-go/regent/testing/history"
)

// Timings of these tests, twice the defaults: a shared 2-core machine
// under -race can stall a process for a default election timeout, and
// these tests assert that nothing changes for ten of them.
const (
	etMin, etMax, heartbeat = 300, 600, 75 // ms
	electionTimeoutMax      = etMax * time.Millisecond
)

// docOptions are the options of the leader-document scenarios. GhostTTL
// outlasts the ten-timeout windows: the document's partitions are shorter
// than GhostTTL (past it, unreachable members leave the views, quorum
// shrinks, and a minority may elect).
func docOptions(disablePreVote bool) func(int) leader.Options {
	return func(int) leader.Options {
		return leader.Options{ClusterID: "doc", ElectionTimeoutMin: etMin, ElectionTimeoutMax: etMax,
			HeartbeatInterval: heartbeat, GhostTTL: 30_000, DisablePreVote: disablePreVote}
	}
}

// "Partitions and Healing": take a five-node cluster {A,B,C,D,E},
// MinClusterSize 3, A leading; the network splits into {A,B,C} and {D,E}.
func TestPartitionsAndHealing(t *testing.T) {
	c := start(t, cluster.Config{Size: 5, HoldDials: holdDials, Options: docOptions(false)})
	a := waitLeader(t, c)
	termBefore := term(t, c, a)
	rest := others(c, a)
	abc, de := []int{a, rest[0], rest[1]}, []int{rest[2], rest[3]}
	require.NoError(t, c.Partition(abc, de))
	cut := c.History().End()

	t.Run("the minority stops hearing heartbeats and campaigns", func(t *testing.T) {
		for _, i := range de {
			require.Eventually(t, func() bool { return item(c, i, "ergo:leader_node") == "" }, settle, poll,
				"%s still recognises a leader across the partition", c.Label(i))
		}
	})
	t.Run("for ten election timeouts A keeps its term and D and E elect none with views of five", func(t *testing.T) {
		assert.Never(t, func() bool {
			if item(c, a, "ergo:state") != "leader" || item(c, a, "ergo:term") != strconv.FormatUint(termBefore, 10) {
				return true
			}
			for _, i := range de {
				if item(c, i, "ergo:state") == "leader" || item(c, i, "ergo:view_size") != "5" || item(c, i, "ergo:quorum") != "3" {
					return true
				}
			}
			return false
		}, 10*electionTimeoutMax, poll)
		for _, e := range c.History().Events() {
			if e.Kind == history.KindState && e.At > cut && (e.Member == c.Label(de[0]) || e.Member == c.Label(de[1])) {
				assert.NotEqual(t, history.RoleLeader, e.Role, "the minority never leads: %s", e)
			}
		}
	})
	t.Run("healing leaves one leader that every member follows", func(t *testing.T) {
		require.NoError(t, c.Heal())
		l := waitLeader(t, c)
		assert.Equal(t, a, l, "nobody outranked A (PreVote kept the minority's terms), so A keeps leading")
		assert.Equal(t, termBefore, term(t, c, l))
		for i := 0; i < c.Size(); i++ {
			require.Eventually(t, func() bool { return item(c, i, "ergo:view_size") == "5" }, settle, poll)
		}
		require.NoError(t, c.Check())
	})
}

// "If A had ended up in the minority instead, its heartbeat tick would have
// found fewer reachable members than its quorum requires, and it would have
// stepped down on its own within one election timeout."
func TestIsolatedLeaderStepsDown(t *testing.T) {
	c := start(t, cluster.Config{Size: 5, HoldDials: holdDials, Options: docOptions(false)})
	a := waitLeader(t, c)
	require.NoError(t, c.Isolate(a))
	require.Eventually(t, func() bool { return item(c, a, "ergo:state") != "leader" }, settle, poll)
	next := waitLeader(t, c)
	assert.NotEqual(t, a, next)
	require.NoError(t, c.Heal())
	waitLeader(t, c)

	// One election timeout from the leader's last evidence, which may be a
	// heartbeat older than the cut, plus the tick that notices.
	bound := electionTimeoutMax + 2*heartbeat*time.Millisecond
	require.NoError(t, history.CheckIsolatedStepDown(c.History(), bound), "history:\n%s", c.History())
	require.NoError(t, c.Check())
}

// PreVote: a follower cut off for ten election timeouts cannot disrupt the
// cluster when it returns, because it never raised its term while cut off;
// with PreVote disabled it comes back with a higher term and forces an
// election. (Whether the majority keeps its leader meanwhile is not this
// rule's: a process stall longer than the evidence window makes a leader
// step down, the safe way, with or without PreVote.)
func TestPreVoteKeepsAnIsolatedFollowerFromDisrupting(t *testing.T) {
	isolateFollower := func(t *testing.T, disable bool) (before, isolated, after uint64) {
		c := start(t, cluster.Config{Size: 5, HoldDials: holdDials, Options: docOptions(disable)})
		l := waitLeader(t, c)
		before = term(t, c, l)
		f := others(c, l)[0]
		require.NoError(t, c.Isolate(f))
		require.Eventually(t, func() bool { return item(c, f, "ergo:leader_node") == "" }, settle, poll)
		assert.Never(t, func() bool { return item(c, f, "ergo:state") == "leader" }, 10*electionTimeoutMax, poll,
			"an isolated follower cannot win")
		isolated = term(t, c, f)
		require.NoError(t, c.Heal())
		after = term(t, c, waitLeader(t, c))
		require.NoError(t, c.Check())
		return before, isolated, after
	}
	t.Run("with PreVote, the isolated follower's term stays as it was", func(t *testing.T) {
		before, isolated, after := isolateFollower(t, false)
		assert.Equal(t, before, isolated, "cut off, the follower never raised its term, so it has none to force on the cluster")
		t.Logf("terms consumed with PreVote: %d", after-before)
	})
	t.Run("without PreVote, the returning follower's term forces a new election", func(t *testing.T) {
		before, isolated, after := isolateFollower(t, true)
		assert.Greater(t, isolated, before+1, "the isolated follower campaigned on its own, raising its term each time")
		assert.GreaterOrEqual(t, after, isolated, "its term forced the cluster past its own")
		t.Logf("terms consumed without PreVote: %d", after-before)
	})
}
