package cluster_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/testing/cluster"
	"github.com/regent-go/regent/testing/history"
)

func TestOSProcesses(t *testing.T) {
	t.Run("members in separate processes elect, survive a SIGKILL of the leader, and take a restart back", func(t *testing.T) {
		c := start(t, cluster.Config{Size: 3, Processes: true, Options: docOptions(false)})
		assert.Nil(t, c.Node(0), "no member runs in the test's process")
		first := waitLeader(t, c)
		require.NoError(t, c.Kill(first))
		next := waitLeader(t, c)
		assert.NotEqual(t, first, next)
		require.NoError(t, c.Restart(first))
		waitLeader(t, c)
		require.Eventually(t, func() bool { return item(c, first, "ergo:leader_node") != "" }, settle, poll)

		require.NoError(t, c.Isolate(next))
		require.Eventually(t, func() bool { return item(c, next, "ergo:state") != "leader" }, settle, poll,
			"the harness inspects members directly, through partitions")
		require.NoError(t, c.Heal())
		waitLeader(t, c)
		require.NoError(t, c.Check())

		leads, kills, restarts := 0, 0, 0
		for _, e := range c.History().Events() {
			switch {
			case e.Kind == history.KindState && e.Role == history.RoleLeader:
				leads++
			case e.Kind == history.KindCrash:
				kills++
			case e.Kind == history.KindRestart:
				restarts++
			}
		}
		// Polling every PollInterval can miss a short leadership on a loaded
		// machine, so only the lifecycle events are counted exactly.
		assert.GreaterOrEqual(t, leads, 1, "the polled history saw a leader")
		assert.Equal(t, 1, kills)
		assert.Equal(t, 1, restarts)
		require.ErrorIs(t, c.Join(0, 1), gen.ErrUnsupported)
	})
	t.Run("a gracefully stopped member process is dropped from the views", func(t *testing.T) {
		c := start(t, cluster.Config{Size: 4, Processes: true})
		waitLeader(t, c)
		require.NoError(t, c.Stop(3))
		for i := 0; i < 3; i++ {
			require.Eventually(t, func() bool { return item(c, i, "ergo:view_size") == "3" }, settle, poll)
		}
	})
}
