package loopback_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/loopback"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const settle = 30 * time.Second

type member struct {
	leader.Actor
	opts leader.Options
}

func (m *member) Init(...any) (leader.Options, error) { return m.opts, nil }
func (m *member) HandleBecomeLeader() error           { return nil }
func (m *member) HandleBecomeFollower(gen.PID) error  { return nil }

// message is a type of the test's own, registered through Options.Types.
type message struct{ Text string }

func spawn(t *testing.T, c *loopback.Cluster, i int) gen.PID {
	t.Helper()
	o := leader.Options{ClusterID: "loopback", Bootstrap: c.Peers("election", i)}
	pid, err := c.Node(i).SpawnRegister("election", func() gen.ProcessBehavior { return &member{opts: o} }, gen.ProcessOptions{})
	require.NoError(t, err)
	return pid
}

func TestStartNode(t *testing.T) {
	n, err := loopback.StartNode("solo@127.0.0.1", loopback.Options{Types: []any{message{}}, Network: gen.NetworkOptions{Acceptor: gen.AcceptorOptions{Host: loopback.Host}}})
	require.NoError(t, err)
	defer n.Stop()
	t.Run("the election's wire types and the caller's are registered", func(t *testing.T) {
		for _, typ := range append(leader.NetworkTypes(), message{}) {
			assert.True(t, n.Network().IsRegistered(typ), "%T", typ)
		}
	})
	t.Run("without log options only errors are logged", func(t *testing.T) {
		assert.Equal(t, gen.LogLevelError, n.Log().Level())
	})
}

func TestCluster(t *testing.T) {
	c, err := loopback.Start(loopback.Names("lb", 3), loopback.Options{})
	require.NoError(t, err)
	defer c.Close()
	pids := make([]gen.PID, c.Size())
	for i := range c.Size() {
		pids[i] = spawn(t, c, i)
	}

	t.Run("every node is routed to every other, so members elect one leader", func(t *testing.T) {
		_, _, err := c.WaitAgreed(context.Background(), pids, loopback.All(3), settle)
		require.NoError(t, err)
	})
	t.Run("the nodes share a random cookie", func(t *testing.T) {
		assert.NotEmpty(t, c.Cookie())
		other, err := loopback.Start(loopback.Names("other", 1), loopback.Options{})
		require.NoError(t, err)
		defer other.Close()
		assert.NotEqual(t, c.Cookie(), other.Cookie())
	})
	t.Run("a killed node is down until restarted, then routed again both ways", func(t *testing.T) {
		first, term, err := c.WaitAgreed(context.Background(), pids, loopback.All(3), settle)
		require.NoError(t, err)
		c.Kill(first)
		assert.Nil(t, c.Node(first))
		assert.NotContains(t, c.Live(), first)
		survivors := make([]int, 0, 2)
		for i := range 3 {
			if i != first {
				survivors = append(survivors, i)
			}
		}
		next, nextTerm, err := c.WaitAgreed(context.Background(), pids, survivors, settle)
		require.NoError(t, err)
		assert.NotEqual(t, first, next)
		assert.Greater(t, nextTerm, term)

		require.NoError(t, c.Restart(first))
		pids[first] = spawn(t, c, first)
		_, _, err = c.WaitAgreed(context.Background(), pids, loopback.All(3), settle)
		require.NoError(t, err, "the restarted node reaches and is reached by the others")
	})
	t.Run("waiting for members that cannot agree ends with the context's error", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, _, err := c.WaitAgreed(ctx, []gen.PID{{}, {}, {}}, loopback.All(3), settle)
		require.ErrorIs(t, err, context.Canceled)
	})
	t.Run("a failed wait says what each member believed, and which are down", func(t *testing.T) {
		c.Kill(2)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, _, err := c.WaitAgreed(ctx, pids, loopback.All(3), settle)
		require.ErrorIs(t, err, context.Canceled)
		for i := range 2 {
			assert.Contains(t, err.Error(), "["+string(c.Name(i))+": state=", "member %d's beliefs", i)
		}
		assert.Contains(t, err.Error(), "view_members=")
		assert.Contains(t, err.Error(), "["+string(c.Name(2))+": down]")
	})
}
