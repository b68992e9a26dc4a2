package cluster_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/cluster"
)

// scheduler is the worked example of docs/testing.md: a user's actor that
// runs a singleton job only while it leads.
type scheduler struct {
	leader.Actor
	opts    leader.Options
	running bool
}

func (s *scheduler) Init(args ...any) (leader.Options, error) { return s.opts, nil }

func (s *scheduler) HandleBecomeLeader() error {
	s.running = true // start the singleton job here
	return nil
}

func (s *scheduler) HandleBecomeFollower(gen.PID) error {
	s.running = false // and stop it here
	return nil
}

func (s *scheduler) HandleInspect(from gen.PID, item ...string) map[string]string {
	return map[string]string{"scheduler:running": strconv.FormatBool(s.running)}
}

func TestSchedulerRunsItsJobOnOneMemberOnly(t *testing.T) {
	c, err := cluster.Start(t, cluster.Config{
		Size: 3,
		Name: "scheduler",
		Options: func(i int) leader.Options {
			return leader.Options{ClusterID: "jobs"}
		},
		Factory: func(m cluster.Member) gen.ProcessBehavior {
			return &scheduler{opts: m.Options} // Init must return m.Options
		},
	})
	require.NoError(t, err)

	running := func(i int) bool {
		v, err := c.Inspect(i, "scheduler:running")
		return err == nil && v["scheduler:running"] == "true"
	}
	runners := func() (n int) {
		for i := 0; i < c.Size(); i++ {
			if running(i) {
				n++
			}
		}
		return n
	}

	first, err := c.WaitLeader(30 * time.Second)
	require.NoError(t, err)
	require.True(t, running(first))
	require.Equal(t, 1, runners())

	// Cut the leader off: it must stop its job, and another member take it over.
	require.NoError(t, c.Isolate(first))
	require.Eventually(t, func() bool { return !running(first) }, 30*time.Second, 20*time.Millisecond)
	second, err := c.WaitLeader(30 * time.Second)
	require.NoError(t, err)
	require.NotEqual(t, first, second)
	require.Eventually(t, func() bool { return running(second) && runners() == 1 }, 30*time.Second, 20*time.Millisecond)

	// Heal: still one job, and the history passes every invariant checker.
	require.NoError(t, c.Heal())
	_, err = c.WaitLeader(30 * time.Second)
	require.NoError(t, err)
	require.Equal(t, 1, runners())
	require.NoError(t, c.Check())
}
