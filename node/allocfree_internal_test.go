package node

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// heldProcess keeps its gen.Process for the test and leaves its mailbox
// alone until released, so that what the test sends it stays queued.
type heldProcess struct {
	process chan gen.Process
	release chan struct{}
}

func (h *heldProcess) ProcessInit(p gen.Process, args ...any) error {
	h.process <- p
	return nil
}

func (h *heldProcess) ProcessRun() error {
	<-h.release
	return gen.TerminateReasonNormal
}

func (h *heldProcess) ProcessTerminate(error) {}

// startHeld starts a node without network at level (0: the default) and
// spawns count held processes on it, which it returns in order; all end
// with the test.
func startHeld(t *testing.T, name gen.Atom, level gen.LogLevel, count int, options ...gen.ProcessOptions) (*node, []*process) {
	t.Helper()
	n, err := Start(name, gen.NodeOptions{Network: gen.NetworkOptions{Mode: gen.NetworkModeDisabled}, Log: gen.LogOptions{Level: level}})
	require.NoError(t, err)
	t.Cleanup(n.Stop)
	h := &heldProcess{process: make(chan gen.Process, count), release: make(chan struct{})}
	t.Cleanup(func() { close(h.release) })
	var ps []*process
	for i := range count {
		o := gen.ProcessOptions{}
		if i < len(options) {
			o = options[i]
		}
		_, err := n.Spawn(func() gen.ProcessBehavior { return h }, o)
		require.NoError(t, err)
		ps = append(ps, (<-h.process).(*process))
	}
	return n.(*node), ps
}

// SendPID, the send an election member makes to each peer many times a
// second, allocates nothing for the address it is given: Send, given the
// same PID as an any, boxes it on every call.
func TestSendPIDAllocatesNoAddress(t *testing.T) {
	n, ps := startHeld(t, "sendpid@localhost", 0, 2)
	p, to := ps[0], ps[1].pid
	var sender interface {
		SendPID(gen.PID, any) error
	} = p
	var message any = "m" // boxed once, as the election's messages come
	// The queue links a pooled 4 KiB segment every 32 messages: below one
	// allocation per send on average, which AllocsPerRun rounds down.
	allocs := testing.AllocsPerRun(200, func() {
		if err := sender.SendPID(to, message); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs, "allocations per SendPID")
	require.NoError(t, sender.SendPID(to, message))
	assert.ErrorIs(t, sender.SendPID(gen.PID{Node: n.name, ID: 1 << 40}, message), gen.ErrProcessUnknown)
}

// registeredProbe is a registered type for TestIsRegisteredAllocatesNothing.
type registeredProbe struct {
	A uint64
	B string
}

// IsRegistered, which every election member calls for each of its wire
// types at spawn, encodes into pooled memory: it leaves no garbage.
func TestIsRegisteredAllocatesNothing(t *testing.T) {
	n, err := Start("isregistered@localhost", gen.NodeOptions{Network: gen.NetworkOptions{Mode: gen.NetworkModeDisabled}})
	require.NoError(t, err)
	defer n.Stop()
	require.NoError(t, n.Network().RegisterTypes([]any{registeredProbe{}}))
	var v any = registeredProbe{A: 1, B: "b"}
	var unknown any = struct{ C int }{}
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		if !n.Network().IsRegistered(v) {
			t.Fatal("registered type reported unregistered")
		}
	}))
	assert.False(t, n.Network().IsRegistered(unknown))
}

// LogLevel reports the level Log().Level() would, the process's own or
// its node's, without making the process's logger: a member that checks
// it before each Info line keeps none while its node logs only errors.
func TestLogLevelMakesNoLogger(t *testing.T) {
	_, ps := startHeld(t, "loglevel@localhost", gen.LogLevelError, 2, gen.ProcessOptions{}, gen.ProcessOptions{LogLevel: gen.LogLevelDebug})
	inherits, own := ps[0], ps[1]

	assert.Equal(t, gen.LogLevelError, inherits.LogLevel(), "the node's level")
	assert.Equal(t, gen.LogLevelDebug, own.LogLevel(), "the process's own")
	assert.Nil(t, inherits.log.Load(), "no logger made")
	assert.Nil(t, own.log.Load(), "no logger made")
	require.NoError(t, inherits.Log().SetLevel(gen.LogLevelWarning))
	assert.Equal(t, gen.LogLevelWarning, inherits.LogLevel(), "the level set on the logger made since")
	assert.Equal(t, own.Log().Level(), own.LogLevel())
}

// TestProcessFitsItsAllocation checks that a process, which every election
// member is, stays within an allocation of 320 bytes: its urgent and system
// queues, which most processes never use, are made on their first push
// (spareQueue), not kept inline at 152 bytes each.
func TestProcessFitsItsAllocation(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(process{}), uintptr(320))
}

// A process's urgent and system queues read as empty until their first
// push makes them; what is pushed then comes out in order.
func TestSpareQueueIsMadeOnFirstPush(t *testing.T) {
	var s spareQueue
	assert.Zero(t, s.Len())
	_, ok := s.Pop()
	assert.False(t, ok)
	var dst gen.MailboxMessage
	_, ok = s.PopInto(&dst)
	assert.False(t, ok)
	s.reset()
	assert.Nil(t, s.q.Load(), "reading makes no queue")

	require.True(t, s.Push("a"))
	require.True(t, s.made().Push("b"))
	assert.EqualValues(t, 2, s.Len())
	assert.EqualValues(t, 2, s.pushedCount())
	item, ok := s.Pop()
	require.True(t, ok)
	assert.Equal(t, "a", item)
	item, ok = s.PopInto(&dst)
	require.True(t, ok)
	assert.Equal(t, "b", item)
	assert.Zero(t, s.Len())
}

// A process keeps its parent as an ID (the parent lives on the same node
// life); Parent gives back the whole PID, and zero for the node's own.
func TestParentIsTheSpawnersPID(t *testing.T) {
	_, ps := startHeld(t, "parent@localhost", 0, 1)
	p := ps[0]
	assert.Zero(t, p.Parent())
	h := &heldProcess{process: make(chan gen.Process, 1), release: make(chan struct{})}
	defer close(h.release)
	child, err := p.Spawn(func() gen.ProcessBehavior { return h }, gen.ProcessOptions{})
	require.NoError(t, err)
	c := <-h.process
	assert.Equal(t, child, c.PID())
	assert.Equal(t, p.PID(), c.Parent())
	assert.Equal(t, p.PID(), c.(*process).info().Parent)
}

// SendProcessID and MonitorPID, an election member's send to a peer by
// name and its monitor of a peer, take the address unboxed: a send by name
// allocates nothing for it.
func TestSendProcessIDAndMonitorPID(t *testing.T) {
	n, ps := startHeld(t, "sendname@localhost", 0, 1)
	p := ps[0]
	h := &heldProcess{process: make(chan gen.Process, 1), release: make(chan struct{})}
	defer close(h.release)
	to, err := n.SpawnRegister("target", func() gen.ProcessBehavior { return h }, gen.ProcessOptions{})
	require.NoError(t, err)
	<-h.process

	var message any = "m"
	name := gen.ProcessID{Name: "target", Node: n.name}
	assert.Zero(t, testing.AllocsPerRun(200, func() {
		if err := p.SendProcessID(name, message); err != nil {
			t.Fatal(err)
		}
	}), "allocations per SendProcessID")
	require.NoError(t, p.SendProcessID(gen.ProcessID{Name: "target"}, message), "a name without a node is local")
	assert.ErrorIs(t, p.SendProcessID(gen.ProcessID{Name: "nobody"}, message), gen.ErrProcessUnknown)
	assert.ErrorIs(t, p.SendProcessID(gen.ProcessID{}, message), gen.ErrIncorrect)

	require.NoError(t, p.MonitorPID(to))
	require.True(t, p.node.rel.remove(pidTarget(to), watcher{pid: p.pid, kind: relMonitor}), "the monitor is recorded")
	assert.ErrorIs(t, p.MonitorPID(gen.PID{Node: n.name, ID: 1 << 40, Creation: to.Creation}), gen.ErrProcessUnknown)
}
