package node_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// holdingProbe is a probe whose monitors' downs may wait hold when the
// connection to the node of target's process is lost (node.DownDeferrer).
type holdingProbe struct {
	probe
	hold func(lost gen.Atom) time.Duration
}

func (h *holdingProbe) DownDelayOnLoss(lost gen.Atom) time.Duration { return h.hold(lost) }

func spawnHolding(t *testing.T, n gen.Node, c *probeConfig, hold func(lost gen.Atom) time.Duration) gen.PID {
	t.Helper()
	pid, err := n.Spawn(func() gen.ProcessBehavior { return &holdingProbe{probe: probe{cfg: c}, hold: hold} }, gen.ProcessOptions{})
	require.NoError(t, err)
	return pid
}

func holdFor(d time.Duration) func(gen.Atom) time.Duration {
	return func(gen.Atom) time.Duration { return d }
}

// A watcher whose behavior lets its downs wait gets them after its delay
// when the connection drops, the others at once; links, monitors of the
// node itself and a delay of zero are never held; the held downs are counted in NetworkStats.DownsDeferred.
func TestDownsOfALostNodeWaitWhenTheWatcherLetsThem(t *testing.T) {
	a, b := pair(t)
	target := spawnProbe(t, b, newProbe())
	monitor := func(p *probe, args ...any) error { return p.Monitor(target) }

	eager := newProbe()
	eager.onInit = monitor
	spawnProbe(t, a, eager)
	zero := newProbe()
	zero.onInit = monitor
	spawnHolding(t, a, zero, holdFor(0))
	short := newProbe()
	short.onInit = monitor
	spawnHolding(t, a, short, holdFor(50*time.Millisecond))
	long := newProbe()
	long.onInit = monitor
	spawnHolding(t, a, long, holdFor(time.Hour))
	otherNode := newProbe()
	otherNode.onInit = monitor
	spawnHolding(t, a, otherNode, func(lost gen.Atom) time.Duration {
		if lost == b.Name() {
			return 0 // the loss of this node matters to it: not held
		}
		return time.Hour
	})
	linked := newProbe()
	linked.onInit = func(p *probe, args ...any) error { return p.Link(target) }
	spawnHolding(t, a, linked, holdFor(time.Hour))
	nodeWatch := newProbe()
	nodeWatch.onInit = func(p *probe, args ...any) error { return p.Monitor(b.Name()) }
	spawnHolding(t, a, nodeWatch, holdFor(time.Hour))
	watchRecorded(t, a, target)

	b.StopForce()
	for name, c := range map[string]*probeConfig{"no DownDeferrer": eager, "a delay of zero": zero, "not held for this node": otherNode, "held 50ms": short} {
		down, ok := c.next(t).(gen.MessageDownPID)
		require.True(t, ok, name)
		assert.Equal(t, target, down.PID, name)
		assert.ErrorIs(t, down.Reason, gen.ErrNoConnection, name)
	}
	assert.ErrorIs(t, linked.reason(t), gen.ErrNoConnection, "a link is never held: its process ends at once")
	_, ok := nodeWatch.next(t).(gen.MessageDownNode)
	assert.True(t, ok, "a monitor of the node itself is never held")
	select {
	case m := <-long.messages:
		t.Fatalf("a down held for an hour arrived: %v", m)
	default:
	}
	assert.Equal(t, uint64(2), a.Network().Stats().DownsDeferred, "the 50ms and the one-hour holds")
}

// A held down never arrives after a message from the connection that
// followed the lost one: when the connection is made again, the downs held
// for its node are delivered first.
func TestHeldDownsComeBeforeTheNextConnectionsMessages(t *testing.T) {
	a, b := pair(t)
	var wPID gen.PID
	target := newProbe()
	target.onMessage = func(p *probe, from gen.PID, message any) error { return p.Send(wPID, ping{Seq: 1}) }
	targetPID := spawnProbe(t, b, target)
	w := newProbe()
	w.onInit = func(p *probe, args ...any) error { return p.Monitor(targetPID) }
	wPID = spawnHolding(t, a, w, holdFor(time.Hour))
	watchRecorded(t, a, targetPID)

	require.NoError(t, a.Network().Disconnect(b.Name()))
	require.Eventually(t, func() bool { return a.Network().Stats().DownsDeferred == 1 }, wait, 5*time.Millisecond)
	// A message B wrote to the old connection before it saw it end would be
	// lost with it: poke once B knows.
	require.Eventually(t, func() bool { return b.Network().Stats().Connections == 0 }, wait, 5*time.Millisecond)
	require.NoError(t, b.Send(targetPID, "poke")) // the target answers W, over a new connection
	down, ok := w.next(t).(gen.MessageDownPID)
	require.True(t, ok, "the held down comes first")
	assert.Equal(t, targetPID, down.PID)
	assert.ErrorIs(t, down.Reason, gen.ErrNoConnection)
	assert.Equal(t, ping{Seq: 1}, w.next(t))
}

// heldReleaser is the node's ReleaseHeldDowns, which gen.Node does not have.
type heldReleaser interface {
	ReleaseHeldDowns(watcher gen.PID) int
}

// A process whose downs may no longer wait has its own held downs delivered
// at once, and only its own, once: the others' stay held until the
// connection comes back, and what was released does not come again then.
func TestReleaseHeldDownsDeliversOneWatchersDownsAtOnce(t *testing.T) {
	a, b := pair(t)
	releaser, ok := a.(heldReleaser)
	require.True(t, ok, "the node releases held downs")
	first := spawnProbe(t, b, newProbe())
	second := spawnProbe(t, b, newProbe())
	both := func(p *probe, args ...any) error { return errors.Join(p.Monitor(first), p.Monitor(second)) }
	released := newProbe()
	released.onInit = both
	releasedPID := spawnHolding(t, a, released, holdFor(time.Hour))
	kept := newProbe()
	kept.onInit = both
	keptPID := spawnHolding(t, a, kept, holdFor(time.Hour))
	watchRecorded(t, a, first)
	watchRecorded(t, a, second)

	assert.Zero(t, releaser.ReleaseHeldDowns(releasedPID), "nothing is held before a loss")
	require.NoError(t, a.Network().Disconnect(b.Name()))
	require.Eventually(t, func() bool { return a.Network().Stats().DownsDeferred == 4 }, wait, 5*time.Millisecond)
	assert.Equal(t, 2, releaser.ReleaseHeldDowns(releasedPID), "its two downs")
	got := map[gen.PID]bool{}
	for range 2 {
		down, ok := released.next(t).(gen.MessageDownPID)
		require.True(t, ok)
		assert.ErrorIs(t, down.Reason, gen.ErrNoConnection)
		got[down.PID] = true
	}
	assert.Equal(t, map[gen.PID]bool{first: true, second: true}, got)
	assert.Zero(t, releaser.ReleaseHeldDowns(releasedPID), "none are left for it")
	select {
	case m := <-kept.messages:
		t.Fatalf("another watcher's held down arrived: %v", m)
	case <-time.After(50 * time.Millisecond):
	}

	// The connection comes back: the rest is delivered before what it
	// carries, and nothing released before comes again.
	require.Eventually(t, func() bool { return b.Network().Stats().Connections == 0 }, wait, 5*time.Millisecond)
	require.NoError(t, b.Send(releasedPID, ping{Seq: 1}))
	require.NoError(t, b.Send(keptPID, ping{Seq: 2}))
	assert.Equal(t, ping{Seq: 1}, released.next(t), "its downs came once")
	for range 2 {
		_, ok := kept.next(t).(gen.MessageDownPID)
		require.True(t, ok, "the other's downs come with the new connection, first")
	}
	assert.Equal(t, ping{Seq: 2}, kept.next(t))
}

// A watcher that changes its mind while a loss is being sorted (asked for
// a delay, it then asks for its held downs before the loss's batch is
// listed, and finds none) is asked again, and gets its down at once.
func TestAWatcherThatStopsHoldingWhileALossIsSortedGetsItsDown(t *testing.T) {
	a, b := pair(t)
	releaser := a.(heldReleaser)
	target := spawnProbe(t, b, newProbe())
	var self atomic.Pointer[gen.PID]
	var asked atomic.Int32
	w := newProbe()
	w.onInit = func(p *probe, args ...any) error { return p.Monitor(target) }
	pid := spawnHolding(t, a, w, func(gen.Atom) time.Duration {
		if asked.Add(1) > 1 {
			return 0 // it no longer lets its downs wait
		}
		releaser.ReleaseHeldDowns(*self.Load()) // it changes its mind: nothing is listed yet
		return time.Hour
	})
	self.Store(&pid)
	watchRecorded(t, a, target)

	b.StopForce()
	down, ok := w.next(t).(gen.MessageDownPID)
	require.True(t, ok, "its down comes without the hour")
	assert.Equal(t, target, down.PID)
	assert.Equal(t, int32(2), asked.Load(), "asked again once")
}
