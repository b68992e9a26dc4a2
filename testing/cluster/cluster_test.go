package cluster_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/cluster"
	"github.com/regent-go/regent/testing/history"
)

func TestStart(t *testing.T) {
	t.Run("a cluster of three elects one leader that the others follow", func(t *testing.T) {
		c := start(t, cluster.Config{Size: 3})
		l := waitLeader(t, c)
		assert.Equal(t, []int{l}, c.Leaders())
		for _, i := range others(c, l) {
			assert.Equal(t, string(c.NodeName(l)), item(c, i, "ergo:leader_node"))
		}
		require.NoError(t, c.Check())
	})
	t.Run("a bad configuration is refused with ErrIncorrect", func(t *testing.T) {
		_, err := cluster.Start(nil, cluster.Config{Size: 0})
		require.ErrorIs(t, err, gen.ErrIncorrect)
		_, err = cluster.Start(nil, cluster.Config{Size: 3, KeepAlivePeriod: time.Second, KeepAliveTimeout: time.Second})
		require.ErrorIs(t, err, gen.ErrIncorrect)
	})
	t.Run("operations after Close fail with ErrNotAllowed", func(t *testing.T) {
		c, err := cluster.Start(nil, cluster.Config{Size: 1, Options: func(int) leader.Options {
			return leader.Options{ClusterID: "solo", MinClusterSize: 1}
		}})
		require.NoError(t, err)
		require.NoError(t, c.Close())
		require.NoError(t, c.Close(), "Close is idempotent")
		require.ErrorIs(t, c.Kill(0), gen.ErrNotAllowed)
		require.ErrorIs(t, c.Heal(), gen.ErrNotAllowed)
		_, err = c.Inspect(0)
		require.ErrorIs(t, err, gen.ErrNotAllowed)
	})
}

// trackingMember is a user's own leader-based actor: it counts its
// leaderships, to show the harness runs any type that embeds leader.Actor.
type trackingMember struct {
	leader.Actor
	opts leader.Options
	led  *counter
}

type counter struct {
	mu sync.Mutex // guards n
	n  map[string]int
}

func (c *counter) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[key]++
}

func (c *counter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

func (m *trackingMember) Init(args ...any) (leader.Options, error) { return m.opts, nil }

func (m *trackingMember) HandleBecomeLeader() error {
	m.led.add(string(m.Node().Name()))
	return nil
}

func (m *trackingMember) HandleInspect(from gen.PID, item ...string) map[string]string {
	return map[string]string{"user:kind": "tracking"}
}

func TestUserActor(t *testing.T) {
	t.Run("a user type runs with the harness recorder chained after its own OnTransition", func(t *testing.T) {
		led := &counter{n: map[string]int{}}
		seen := &counter{n: map[string]int{}}
		var lives sync.Map
		c := start(t, cluster.Config{
			Size: 3,
			Name: "coordinator",
			Options: func(i int) leader.Options {
				return leader.Options{ClusterID: "users", OnTransition: func(tr leader.Transition) { seen.add(string(tr.Member.Node)) }}
			},
			Factory: func(m cluster.Member) gen.ProcessBehavior {
				lives.Store(m.Node, m.Life)
				return &trackingMember{opts: m.Options, led: led}
			},
		})
		l := waitLeader(t, c)
		assert.Equal(t, 1, led.get(string(c.NodeName(l))), "the user's HandleBecomeLeader ran on the leader")
		assert.Equal(t, "tracking", item(c, l, "user:kind"))
		info, err := c.Node(l).ProcessInfo(c.PID(l))
		require.NoError(t, err)
		assert.Equal(t, gen.Atom("coordinator"), info.Name, "the actor runs under the configured name")
		assert.Equal(t, "users", item(c, l, "ergo:cluster"), "and with the configured options")
		for i := 0; i < 3; i++ {
			assert.Positive(t, seen.get(string(c.NodeName(i))), "the user's OnTransition still runs")
		}
		assert.Positive(t, c.History().Len(), "the harness's recorder runs too")

		require.NoError(t, c.Kill(l))
		require.NoError(t, c.Restart(l))
		life, _ := lives.Load(c.NodeName(l))
		assert.Equal(t, 2, life, "Factory sees the member's new life")
		assert.Equal(t, 2, c.Life(l))
		waitLeader(t, c)
	})
}

func TestKillAndRestart(t *testing.T) {
	t.Run("killing the leader elects a survivor at a higher term and a restart rejoins", func(t *testing.T) {
		c := start(t, cluster.Config{Size: 5})
		first := waitLeader(t, c)
		firstTerm := term(t, c, first)
		require.NoError(t, c.Kill(first))
		assert.False(t, c.Alive(first))
		_, err := c.Inspect(first)
		require.ErrorIs(t, err, gen.ErrNoConnection)
		require.ErrorIs(t, c.Kill(first), gen.ErrNotAllowed, "a dead member cannot be killed again")

		next := waitLeader(t, c)
		assert.NotEqual(t, first, next)
		assert.Greater(t, term(t, c, next), firstTerm)

		oldPID := c.PID(first)
		require.NoError(t, c.Restart(first))
		assert.NotEqual(t, oldPID.Creation, c.PID(first).Creation, "a restarted member is a new life of its node")
		require.ErrorIs(t, c.Restart(first), gen.ErrNotAllowed, "a running member cannot be restarted")
		waitLeader(t, c)
		require.Eventually(t, func() bool { return item(c, first, "ergo:leader_node") != "" }, settle, poll)
		require.NoError(t, c.Check())

		kinds := map[history.Kind]int{}
		for _, e := range c.History().Events() {
			kinds[e.Kind]++
		}
		assert.Equal(t, 1, kinds[history.KindCrash])
		assert.Equal(t, 1, kinds[history.KindRestart])
	})
	t.Run("a graceful stop removes the member from the others' views at once", func(t *testing.T) {
		c := start(t, cluster.Config{Size: 4})
		waitLeader(t, c)
		require.NoError(t, c.Stop(3))
		for i := 0; i < 3; i++ {
			require.Eventually(t, func() bool { return item(c, i, "ergo:view_size") == "3" }, settle, poll, "member %d", i)
		}
		waitLeader(t, c)
		require.NoError(t, c.Check())
	})
}

func TestJoinAndLeave(t *testing.T) {
	t.Run("members that know nobody elect once they are joined", func(t *testing.T) {
		c := start(t, cluster.Config{Size: 3, Options: func(int) leader.Options {
			return leader.Options{ClusterID: "join", Bootstrap: []gen.ProcessID{}}
		}})
		for i := 0; i < 3; i++ {
			require.Eventually(t, func() bool { return item(c, i, "ergo:state") == "unclustered" }, settle, poll)
		}
		// Membership does not spread by gossip: each pair is declared.
		require.NoError(t, c.Join(0, 1))
		require.NoError(t, c.Join(0, 2))
		require.NoError(t, c.Join(1, 2))
		waitLeader(t, c)
		for i := 0; i < 3; i++ {
			require.Eventually(t, func() bool { return item(c, i, "ergo:view_size") == "3" }, settle, poll)
		}
	})
	t.Run("leaving a dead member shrinks the view below the floor", func(t *testing.T) {
		c := start(t, cluster.Config{Size: 3})
		waitLeader(t, c)
		require.NoError(t, c.Kill(2))
		assert.Equal(t, "3", item(c, 0, "ergo:view_size"), "a lost connection keeps the member in the view")
		require.NoError(t, c.Leave(0, 2))
		require.NoError(t, c.Leave(1, 2))
		for _, i := range []int{0, 1} {
			require.Eventually(t, func() bool {
				return item(c, i, "ergo:view_size") == "2" && item(c, i, "ergo:state") == "unclustered"
			}, settle, poll)
		}
		require.ErrorIs(t, c.Join(2, 0), gen.ErrNotAllowed, "a dead member cannot join")
	})
}

func TestNetworkFaults(t *testing.T) {
	t.Run("a reset partition refuses connections and the majority keeps a leader", func(t *testing.T) {
		c := start(t, cluster.Config{Size: 5})
		l := waitLeader(t, c)
		minority := others(c, l)[:2]
		majority := others(c, minority...)
		require.NoError(t, c.PartitionReset(majority, minority))
		assert.Equal(t, l, waitLeader(t, c), "the leader was on the majority side")
		require.Eventually(t, func() bool { return c.NetStats().Refused > 0 }, settle, poll, "the minority's redials are refused")
		require.NoError(t, c.Heal())
		waitLeader(t, c)
		require.NoError(t, c.Check())
	})
	t.Run("a one-way cut from the leader makes its follower lose the leader, and a heal restores it", func(t *testing.T) {
		c := start(t, cluster.Config{Size: 3})
		l := waitLeader(t, c)
		f := others(c, l)[0]
		require.NoError(t, c.CutOneWay(l, f))
		require.Eventually(t, func() bool { return item(c, f, "ergo:leader_node") == "" }, settle, poll)
		require.NoError(t, c.Heal())
		waitLeader(t, c)
		require.NoError(t, c.Check())
	})
	t.Run("a cluster elects through delay, jitter and frame loss", func(t *testing.T) {
		c := start(t, cluster.Config{Size: 3, Seed: 7})
		require.NoError(t, c.SetDelay(10*time.Millisecond, 10*time.Millisecond))
		require.NoError(t, c.SetLoss(0.05))
		waitLeader(t, c)
		require.Eventually(t, func() bool { return c.NetStats().FramesDropped > 0 }, settle, poll)
		require.ErrorIs(t, c.SetLoss(2), gen.ErrIncorrect)
		require.NoError(t, c.Check())
	})
	t.Run("a member in two groups is refused", func(t *testing.T) {
		c := start(t, cluster.Config{Size: 3})
		require.ErrorIs(t, c.Partition([]int{0, 1}, []int{1, 2}), gen.ErrIncorrect)
		require.ErrorIs(t, c.CutOneWay(1, 1), gen.ErrIncorrect)
	})
}

func TestCheck(t *testing.T) {
	t.Run("a bound the cluster cannot meet is reported with the history around it", func(t *testing.T) {
		c := start(t, cluster.Config{Size: 3, Bounds: history.Bounds{Converge: time.Nanosecond}})
		waitLeader(t, c)
		err := c.Check()
		var v *history.Violation
		require.True(t, errors.As(err, &v), "got %v", err)
		assert.Equal(t, history.RuleConvergence, v.Rule)
		assert.Contains(t, err.Error(), "leader")
	})
}
