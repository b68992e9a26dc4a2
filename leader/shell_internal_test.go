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

// drivenMember runs closures on its own goroutine, so a test can drive the
// shell's internals as the core would.
type drivenMember struct{ Actor }

func (m *drivenMember) Init(args ...any) (Options, error) {
	return Options{ClusterID: "review", MinClusterSize: 1}, nil
}

func (m *drivenMember) HandleCall(from gen.PID, ref gen.Ref, request any) (any, error) {
	if f, ok := request.(func(a *Actor) any); ok {
		return f(&m.Actor), nil
	}
	return nil, gen.ErrUnsupported
}

// startDrivenMember starts a node named name with a drivenMember
// registered on it, stopped when the test ends.
func startDrivenMember(t *testing.T, name gen.Atom) (gen.Node, gen.PID) {
	t.Helper()
	n, err := node.Start(name, gen.NodeOptions{
		Network: gen.NetworkOptions{Cookie: "review", Acceptor: gen.AcceptorOptions{Host: "127.0.0.1"}},
		Log:     gen.LogOptions{Level: gen.LogLevelError},
	})
	require.NoError(t, err)
	t.Cleanup(n.Stop)
	require.NoError(t, n.Network().RegisterTypes(NetworkTypes()))
	pid, err := n.SpawnRegister("review", func() gen.ProcessBehavior { return &drivenMember{} }, gen.ProcessOptions{})
	require.NoError(t, err)
	return n, pid
}

type idle struct{ act.Actor }

func (*idle) Init(args ...any) error { return nil }

// Monitors: the shell swallows a down already queued when the core
// demonitored a PID, but once the core monitors that PID again its down,
// whenever it comes, reaches the core: a member (maybe its leader) that ends
// is never missed. Found by the adversarial review. The core monitors a PID
// again when messages of two lives of one node's member interleave, or when
// tidyPeers forgot a peer that talks again later.
func TestDownOfAPIDMonitoredAgainReachesTheCore(t *testing.T) {
	n, pid := startDrivenMember(t, "review1@127.0.0.1")
	victim, err := n.Spawn(func() gen.ProcessBehavior { return &idle{} }, gen.ProcessOptions{})
	require.NoError(t, err)

	unknownPeer := func() uint64 { return unknownPeerDrops(t, n, pid) }
	before := unknownPeer()
	_, err = n.Call(pid, func(a *Actor) any {
		for _, e := range []election.Effect{{Kind: election.EffectMonitor, PID: victim}, {Kind: election.EffectDemonitor, PID: victim}, {Kind: election.EffectMonitor, PID: victim}} {
			require.NoError(t, a.applyEffect(e))
		}
		return true
	})
	require.NoError(t, err)
	require.NoError(t, n.Kill(victim))
	// The victim is no peer of the core, so a down that reaches the core is
	// counted as unknown_peer; a swallowed one leaves no trace.
	assert.True(t, pollFor(func() bool { return unknownPeer() > before }),
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

// Durable state: when a Ready's HardState cannot be written, StorageFailed
// ends the leadership its Confirm effect asks about, so HandleConfirmLeader
// (and HandleBecomeLeader) must not run for it: with the Lease recipe of
// docs/operations.md the call would contend for the Lease on behalf of a
// member that leads nothing. Found by the adversarial review.
func TestConfirmIsNotAskedForALeadershipAFailedWriteEnded(t *testing.T) {
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

// Subscriptions and monitors: the runtime keeps one watch per watcher and
// target, so the election's monitor of a member and a subscription of the
// same PID share it. Unsubscribing that PID keeps the watch the election
// needs, so the member's end still reaches the core (fast failover, removal
// at once). Found by the adversarial review.
func TestUnsubscribingAMemberKeepsTheElectionsWatch(t *testing.T) {
	n, pid := startDrivenMember(t, "review3@127.0.0.1")
	member, err := n.Spawn(func() gen.ProcessBehavior { return &idle{} }, gen.ProcessOptions{})
	require.NoError(t, err)
	unknownPeer := func() uint64 { return unknownPeerDrops(t, n, pid) }
	before := unknownPeer()
	_, err = n.Call(pid, func(a *Actor) any {
		return a.applyEffect(election.Effect{Kind: election.EffectMonitor, PID: member}) == nil
	}) // the core watches a member
	require.NoError(t, err)
	require.NoError(t, n.Send(pid, MessageSubscribe{Subscriber: member}))
	require.NoError(t, n.Send(pid, MessageUnsubscribe{Subscriber: member}))
	unknownPeer() // both handled
	require.NoError(t, n.Kill(member))
	assert.True(t, pollFor(func() bool { return unknownPeer() > before }),
		"the member's end never reached the core: the unsubscription removed the election's monitor")
}

// unknownPeerDrops reads the core's unknown_peer drop count on its goroutine.
func unknownPeerDrops(t *testing.T, n gen.Node, pid gen.PID) uint64 {
	t.Helper()
	v, err := n.Call(pid, func(a *Actor) any { return a.core.Status(time.Now()).Dropped["unknown_peer"] })
	require.NoError(t, err)
	return v.(uint64)
}

// pollFor polls cond on the test's goroutine for up to two seconds.
func pollFor(cond func() bool) bool {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// pidSends records which of Send and SendPID a send took.
type pidSends struct {
	gen.Process
	byPID, byName, monitored, byAny []any
}

func (p *pidSends) Send(to any, message any) error {
	p.byAny = append(p.byAny, to)
	return nil
}

func (p *pidSends) SendPID(to gen.PID, message any) error {
	p.byPID = append(p.byPID, to)
	return nil
}

func (p *pidSends) SendProcessID(to gen.ProcessID, message any) error {
	p.byName = append(p.byName, to)
	return nil
}

func (p *pidSends) MonitorPID(to gen.PID) error {
	p.monitored = append(p.monitored, to)
	return nil
}

func (p *pidSends) Monitor(to any) error {
	p.byAny = append(p.byAny, to)
	return nil
}

// A member sends to a peer by the PID it knows, else by name, and monitors
// it, through the process's typed fast paths, which take the address
// unboxed (an allocation less per message), not Send and Monitor.
func TestSendToAPIDTakesSendPID(t *testing.T) {
	p := &pidSends{}
	a := &Actor{}
	a.Process = p
	pid := gen.PID{Node: "b@h", ID: 7, Creation: 1}
	name := gen.ProcessID{Name: "c", Node: "b@h"}
	require.NoError(t, a.sendTo(pid, name, "m"))
	require.NoError(t, a.sendTo(gen.PID{}, name, "m"))
	require.NoError(t, a.watch(pid))
	assert.Equal(t, []any{pid}, p.byPID)
	assert.Equal(t, []any{name}, p.byName)
	assert.Equal(t, []any{pid}, p.monitored)
	assert.Empty(t, p.byAny)
}

// quietLog is a process whose log takes errors only, and which counts the
// calls of Log.
type quietLog struct {
	gen.Process
	logCalls int
}

func (q *quietLog) LogLevel() gen.LogLevel { return gen.LogLevelError }

func (q *quietLog) Log() gen.Log {
	q.logCalls++
	return q.Process.Log()
}

// A member on a node that drops Info lines does not reach for its log to
// report role and view changes, which would make the process a logger of
// its own and box the lines' arguments for nothing.
func TestInfoLinesAskTheLevelFirst(t *testing.T) {
	q := &quietLog{}
	a := &Actor{options: &actorOptions{ClusterID: "c"}}
	a.Process = q
	require.NoError(t, a.applyEffect(election.Effect{Kind: election.EffectRoleChanged, From: election.RoleFollower, To: election.RoleCandidate, Term: 2}))
	require.NoError(t, a.applyEffect(election.Effect{Kind: election.EffectViewChanged, Why: "test"}))
	assert.Zero(t, q.logCalls)
	assert.False(t, a.logs(gen.LogLevelInfo))
	assert.True(t, a.logs(gen.LogLevelError))
}
