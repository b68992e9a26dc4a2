package act_test

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/regent-go/regent/act"
	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/syncbuf"
	"github.com/regent-go/regent/node"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func start(t *testing.T) (gen.Node, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	n, err := node.Start("act@localhost", gen.NodeOptions{
		Network: gen.NetworkOptions{Mode: gen.NetworkModeDisabled},
		Log:     gen.LogOptions{Handler: slog.NewTextHandler(logs, nil)},
	})
	require.NoError(t, err)
	t.Cleanup(n.Stop)
	return n, logs
}

// bare overrides nothing.
type bare struct{ act.Actor }

// notAnActor is a gen.ProcessBehavior that reuses act.Actor's ProcessInit
// without implementing the ActorBehavior callbacks.
type notAnActor struct{}

func (notAnActor) ProcessInit(p gen.Process, args ...any) error {
	return (&act.Actor{}).ProcessInit(p, args...)
}
func (notAnActor) ProcessRun() error          { return nil }
func (notAnActor) ProcessTerminate(err error) {}

// trapper traps exits.
type trapper struct{ act.Actor }

func (a *trapper) Init(args ...any) error { return a.SetTrapExit(true) }

// spawner spawns one child in Init and sends an exit signal to any PID it
// is sent.
type spawner struct {
	act.Actor
	child   gen.ProcessFactory
	spawned chan gen.PID
}

func (a *spawner) Init(args ...any) error {
	pid, err := a.Spawn(a.child, gen.ProcessOptions{})
	a.spawned <- pid
	return err
}

func (a *spawner) HandleMessage(from gen.PID, message any) error {
	return a.SendExit(message.(gen.PID), gen.TerminateReasonShutdown)
}

// greeter uses the embedded process from its callbacks.
type greeter struct {
	act.Actor
	seen chan string
}

func (g *greeter) Init(args ...any) error {
	return g.Send(g.PID(), "hello from init")
}

func (g *greeter) HandleMessage(from gen.PID, message any) error {
	g.seen <- message.(string)
	return nil
}

func TestActor(t *testing.T) {
	n, logs := start(t)

	t.Run("the embedded process works from Init on", func(t *testing.T) {
		seen := make(chan string, 1)
		_, err := n.Spawn(func() gen.ProcessBehavior { return &greeter{seen: seen} }, gen.ProcessOptions{})
		require.NoError(t, err)
		select {
		case m := <-seen:
			require.Equal(t, "hello from init", m)
		case <-time.After(10 * time.Second):
			t.Fatal("the message sent in Init never arrived")
		}
	})
	t.Run("an unhandled message is logged at warning and the actor lives", func(t *testing.T) {
		pid, err := n.Spawn(func() gen.ProcessBehavior { return &bare{} }, gen.ProcessOptions{})
		require.NoError(t, err)
		require.NoError(t, n.Send(pid, "nobody handles me"))
		require.Eventually(t, func() bool {
			return bytes.Contains([]byte(logs.String()), []byte("unhandled message"))
		}, 10*time.Second, time.Millisecond)
		require.Contains(t, logs.String(), "level=WARN")
		_, err = n.ProcessInfo(pid)
		require.NoError(t, err)
	})
	t.Run("an unhandled call answers ErrUnsupported at once", func(t *testing.T) {
		pid, err := n.Spawn(func() gen.ProcessBehavior { return &bare{} }, gen.ProcessOptions{})
		require.NoError(t, err)
		_, err = n.Call(pid, "question")
		require.ErrorIs(t, err, gen.ErrUnsupported)
	})
	t.Run("the default inspection is an empty map", func(t *testing.T) {
		pid, err := n.Spawn(func() gen.ProcessBehavior { return &bare{} }, gen.ProcessOptions{})
		require.NoError(t, err)
		m, err := n.Inspect(pid)
		require.NoError(t, err)
		require.Empty(t, m)
	})
	t.Run("a behavior that does not implement ActorBehavior fails to spawn", func(t *testing.T) {
		_, err := n.Spawn(func() gen.ProcessBehavior { return notAnActor{} }, gen.ProcessOptions{})
		require.ErrorIs(t, err, gen.ErrIncorrect)
	})
	t.Run("an exit from the parent terminates a trapping child", func(t *testing.T) {
		childPID := make(chan gen.PID, 1)
		parentPID, err := n.Spawn(func() gen.ProcessBehavior {
			return &spawner{child: func() gen.ProcessBehavior { return &trapper{} }, spawned: childPID}
		}, gen.ProcessOptions{})
		require.NoError(t, err)
		child := <-childPID
		require.NoError(t, n.Send(parentPID, child))
		require.Eventually(t, func() bool {
			_, err := n.ProcessInfo(child)
			return err != nil
		}, 10*time.Second, time.Millisecond)
	})
	t.Run("an untrapped exit terminates the actor with its reason", func(t *testing.T) {
		pid, err := n.Spawn(func() gen.ProcessBehavior { return &bare{} }, gen.ProcessOptions{})
		require.NoError(t, err)
		require.NoError(t, n.SendExit(pid, gen.TerminateReasonNormal))
		require.Eventually(t, func() bool {
			_, err := n.ProcessInfo(pid)
			return err != nil
		}, 10*time.Second, time.Millisecond)
	})
}
