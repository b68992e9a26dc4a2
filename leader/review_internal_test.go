package leader

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/act"
	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
	"github.com/regent-go/regent/node"
)

// reviewMember runs closures on its own goroutine, so a test can drive the
// shell's internals as the core would.
type reviewMember struct{ Actor }

func (m *reviewMember) Init(args ...any) (Options, error) {
	return Options{ClusterID: "review", MinClusterSize: 1}, nil
}

func (m *reviewMember) HandleCall(from gen.PID, ref gen.Ref, request any) (any, error) {
	if f, ok := request.(func(a *Actor) any); ok {
		return f(&m.Actor), nil
	}
	return nil, gen.ErrUnsupported
}

type idle struct{ act.Actor }

func (*idle) Init(args ...any) error { return nil }

// Review finding: the shell remembers every PID the core demonitored
// (a.demonitored) to swallow a down that was already queued, but forgets it
// only when such a down arrives. A PID that is demonitored and later
// monitored again keeps its entry, and its real down, much later, is
// swallowed: the core never hears that the member (maybe its leader) ended.
// The core re-monitors a PID it demonitored when messages of two PIDs of one
// node interleave (observe switches p.pid back and forth: frames of a
// restarted process's earlier life read from a retiring connection after
// the new life's), or when tidyPeers forgot a peer that talks again later.
func TestReviewDownOfARemonitoredPIDIsSwallowed(t *testing.T) {
	n, err := node.Start("review1@127.0.0.1", gen.NodeOptions{
		Network: gen.NetworkOptions{Cookie: "review", Acceptor: gen.AcceptorOptions{Host: "127.0.0.1"}},
		Log:     gen.LogOptions{Level: gen.LogLevelError},
	})
	require.NoError(t, err)
	defer n.Stop()
	require.NoError(t, n.Network().RegisterTypes(NetworkTypes()))
	pid, err := n.SpawnRegister("review", func() gen.ProcessBehavior { return &reviewMember{} }, gen.ProcessOptions{})
	require.NoError(t, err)
	victim, err := n.Spawn(func() gen.ProcessBehavior { return &idle{} }, gen.ProcessOptions{})
	require.NoError(t, err)

	unknownPeer := func() uint64 { return reviewUnknownPeer(t, n, pid) }
	before := unknownPeer()
	_, err = n.Call(pid, func(a *Actor) any {
		for _, e := range []election.Effect{election.Monitor{PID: victim}, election.Demonitor{PID: victim}, election.Monitor{PID: victim}} {
			require.NoError(t, a.applyEffect(e))
		}
		return true
	})
	require.NoError(t, err)
	require.NoError(t, n.Kill(victim))
	// The victim is no peer of the core, so a down that reaches the core is
	// counted as unknown_peer; a swallowed one leaves no trace.
	assert.True(t, reviewWait(func() bool { return unknownPeer() > before }),
		"the down of a PID monitored again after a demonitor never reached the core")
}

// confirmSpy records, for every HandleConfirmLeader call, whether the core
// still led the election at that moment.
type confirmSpy struct {
	Actor
	opts  Options
	calls chan bool
}

func (m *confirmSpy) Init(args ...any) (Options, error) { return m.opts, nil }

func (m *confirmSpy) HandleConfirmLeader() (bool, error) {
	m.calls <- m.core.IsProtocolLeader()
	return true, nil
}

// Review finding: flush runs the effects of a Ready even when its HardState
// could not be written. StorageFailed has already ended the leadership the
// Ready's Confirm effect asks about, yet HandleConfirmLeader runs (and, were
// a BecomeLeader effect in that Ready, HandleBecomeLeader would too, before
// the HandleBecomeFollower the failure queued). With the Lease recipe of
// docs/operations.md that call starts contending for the Lease on behalf of
// a member that leads nothing.
func TestReviewConfirmAskedAfterTheStateWriteFailed(t *testing.T) {
	n, err := node.Start("review2@127.0.0.1", gen.NodeOptions{
		Network: gen.NetworkOptions{Cookie: "review", Acceptor: gen.AcceptorOptions{Host: "127.0.0.1"}},
		Log:     gen.LogOptions{Level: gen.LogLevelPanic},
	})
	require.NoError(t, err)
	defer n.Stop()
	require.NoError(t, n.Network().RegisterTypes(NetworkTypes()))
	calls := make(chan bool, 16)
	// A state file in a directory that does not exist: it reads as a fresh
	// start, and every write fails (a lost volume).
	state := t.TempDir() + "/gone/election.state"
	_, err = n.SpawnRegister("review", func() gen.ProcessBehavior {
		return &confirmSpy{opts: Options{ClusterID: "review", MinClusterSize: 1, StateFile: state}, calls: calls}
	}, gen.ProcessOptions{})
	require.NoError(t, err)
	select {
	case leading := <-calls:
		assert.True(t, leading, "HandleConfirmLeader ran for a leadership the storage failure had already ended")
	case <-time.After(3 * time.Second):
		t.Log("HandleConfirmLeader was not called")
	}
}

// Review finding: the runtime keeps one watch per watcher and target, so the
// election's monitor of a member and a subscription's monitor of the same
// PID are one watch. MessageUnsubscribe names its subscriber in the message,
// not by its sender, and the shell demonitors it: unsubscribing a member's
// PID (any process may send it, or an observer that passes the wrong PID)
// silently removes the election's monitor of that member, whose end then
// never reaches the core (no fast failover, no removal at once).
func TestReviewUnsubscribeRemovesTheElectionsMonitor(t *testing.T) {
	n, err := node.Start("review3@127.0.0.1", gen.NodeOptions{
		Network: gen.NetworkOptions{Cookie: "review", Acceptor: gen.AcceptorOptions{Host: "127.0.0.1"}},
		Log:     gen.LogOptions{Level: gen.LogLevelError},
	})
	require.NoError(t, err)
	defer n.Stop()
	require.NoError(t, n.Network().RegisterTypes(NetworkTypes()))
	pid, err := n.SpawnRegister("review", func() gen.ProcessBehavior { return &reviewMember{} }, gen.ProcessOptions{})
	require.NoError(t, err)
	member, err := n.Spawn(func() gen.ProcessBehavior { return &idle{} }, gen.ProcessOptions{})
	require.NoError(t, err)
	unknownPeer := func() uint64 { return reviewUnknownPeer(t, n, pid) }
	before := unknownPeer()
	_, err = n.Call(pid, func(a *Actor) any { return a.applyEffect(election.Monitor{PID: member}) == nil }) // the core watches a member
	require.NoError(t, err)
	require.NoError(t, n.Send(pid, MessageSubscribe{Subscriber: member}))
	require.NoError(t, n.Send(pid, MessageUnsubscribe{Subscriber: member}))
	unknownPeer() // both handled
	require.NoError(t, n.Kill(member))
	assert.True(t, reviewWait(func() bool { return unknownPeer() > before }),
		"the member's end never reached the core: the unsubscription removed the election's monitor")
}

// reviewUnknownPeer reads the core's unknown_peer drop count on its goroutine.
func reviewUnknownPeer(t *testing.T, n gen.Node, pid gen.PID) uint64 {
	t.Helper()
	v, err := n.Call(pid, func(a *Actor) any { return a.core.Status(time.Now()).Dropped["unknown_peer"] })
	require.NoError(t, err)
	return v.(uint64)
}

// reviewWait polls cond on the test's goroutine for up to two seconds.
func reviewWait(cond func() bool) bool {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
