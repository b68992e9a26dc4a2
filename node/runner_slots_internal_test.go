package node

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/act"
	"github.com/regent-go/regent/gen"
)

// slotsWait bounds the polls of these tests: generous for a loaded machine.
const slotsWait = 10 * time.Second

// slotProbe runs onMessage for each message it is sent.
type slotProbe struct {
	act.Actor
	onMessage func(from gen.PID, message any) error
}

func (p *slotProbe) HandleMessage(from gen.PID, message any) error { return p.onMessage(from, message) }

func startSlotsNode(t *testing.T, name gen.Atom) *node {
	t.Helper()
	g, err := Start(name, gen.NodeOptions{Network: gen.NetworkOptions{Mode: gen.NetworkModeDisabled}, Log: gen.LogOptions{Level: gen.LogLevelError}})
	require.NoError(t, err)
	t.Cleanup(g.Stop)
	return g.(*node)
}

func spawnSlotProbe(t *testing.T, n *node, onMessage func(from gen.PID, message any) error) gen.PID {
	t.Helper()
	pid, err := n.Spawn(func() gen.ProcessBehavior { return &slotProbe{onMessage: onMessage} }, gen.ProcessOptions{})
	require.NoError(t, err)
	return pid
}

// poolCounts reads the pool's slots and stall count under its lock.
func poolCounts(n *node) (bound, base int, stalls uint64) {
	n.pool.mu.Lock()
	defer n.pool.mu.Unlock()
	return n.pool.bound, n.pool.base, n.pool.stalls
}

func TestABurstOfWakeUpsRunsAtMostGOMAXPROCSBehaviorsAtOnce(t *testing.T) {
	n := startSlotsNode(t, "slots-burst@localhost")
	var inside, most atomic.Int64
	var done atomic.Int64
	const burst = 400
	var pids []gen.PID
	for range burst {
		pids = append(pids, spawnSlotProbe(t, n, func(gen.PID, any) error {
			now := inside.Add(1)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			// Yielding lets the Go scheduler run other goroutines: were
			// each woken process on a goroutine of its own, the burst's
			// callbacks would overlap here.
			for range 20 {
				runtime.Gosched()
			}
			inside.Add(-1)
			done.Add(1)
			return nil
		}))
	}
	for _, pid := range pids {
		require.NoError(t, n.Send(pid, "wake"))
	}
	require.Eventually(t, func() bool { return done.Load() == burst }, slotsWait, time.Millisecond)
	bound, base, stalls := poolCounts(n)
	require.Equal(t, runtime.GOMAXPROCS(0), base)
	require.LessOrEqual(t, most.Load(), int64(base)+int64(stalls),
		"behaviors running at once: GOMAXPROCS, plus a slot per stall the watch saw (%d)", stalls)
	require.Eventually(t, func() bool { b, _, _ := poolCounts(n); return b == base }, slotsWait, time.Millisecond,
		"once runq is empty the slots the watch added are given back (bound %d)", bound)
}

func TestAProcessWaitingInACallHoldsNoSlot(t *testing.T) {
	// Without the stall watch, only the slots given back by the waiting
	// Calls can run the process woken after them.
	before := stallAfter
	t.Cleanup(func() { stallAfter = before }) // after the node's stop, registered later
	stallAfter = time.Hour
	n := startSlotsNode(t, "slots-call@localhost")
	var calling atomic.Int64
	server, err := n.Spawn(func() gen.ProcessBehavior { return &heldServer{} }, gen.ProcessOptions{})
	require.NoError(t, err)
	slots := runtime.GOMAXPROCS(0)
	for range slots {
		caller, err := n.Spawn(func() gen.ProcessBehavior {
			return &slotCaller{server: server, calling: &calling}
		}, gen.ProcessOptions{})
		require.NoError(t, err)
		require.NoError(t, n.Send(caller, "call"))
	}
	require.Eventually(t, func() bool { return calling.Load() == int64(slots) }, slotsWait, time.Millisecond,
		"as many callers wait in a Call as there are slots")
	ran := make(chan struct{}, 1)
	other := spawnSlotProbe(t, n, func(gen.PID, any) error { ran <- struct{}{}; return nil })
	require.NoError(t, n.Send(other, "hello"))
	select {
	case <-ran:
	case <-time.After(slotsWait):
		t.Fatal("a process woken while every slot's behavior waits in a Call never ran")
	}
	_, _, stalls := poolCounts(n)
	require.Zero(t, stalls, "no stall: the Calls gave their slots back")
}

// heldServer takes Calls and answers none (act's HandleCall returning
// nil, nil): its callers wait until their node stops.
type heldServer struct{ act.Actor }

func (s *heldServer) HandleCall(gen.PID, gen.Ref, any) (any, error) { return nil, nil }

func (s *heldServer) HandleMessage(gen.PID, any) error { return nil }

// slotCaller calls server on any message, counting itself in calling
// while it waits.
type slotCaller struct {
	act.Actor
	server  gen.PID
	calling *atomic.Int64
}

func (c *slotCaller) HandleMessage(gen.PID, any) error {
	c.calling.Add(1)
	_, _ = c.CallWithTimeout(c.server, "wait", 600)
	return nil
}

// answerLater takes Calls and answers none itself: each goes to calls, for
// the test to answer when it chooses.
type answerLater struct {
	act.Actor
	calls chan heldCall
}

type heldCall struct {
	from gen.PID
	ref  gen.Ref
}

func (s *answerLater) HandleCall(from gen.PID, ref gen.Ref, _ any) (any, error) {
	s.calls <- heldCall{from, ref}
	return nil, nil
}

// callThenWait calls server on any message, then waits for otherRan and
// reports whether it came in time.
type callThenWait struct {
	act.Actor
	server   gen.PID
	otherRan chan struct{}
	result   chan bool
}

func (c *callThenWait) HandleMessage(gen.PID, any) error {
	_, _ = c.CallWithTimeout(c.server, "x", 60)
	select {
	case <-c.otherRan:
		c.result <- true
	case <-time.After(slotsWait / 2): // far above stallAfter
		c.result <- false
	}
	return nil
}

func TestAProcessWokenWhileACallWaitsRunsThoughTheCallerBlocksAfterIt(t *testing.T) {
	// One place: the caller gives it back while its Call waits, a process is
	// woken meanwhile, and the Call returns before that process's worker
	// arrives; the caller then blocks until that process has run. Only the
	// stall watch, armed as the Call took its place back, lets it run.
	prev := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) }) // after the node's stop, registered later
	n := startSlotsNode(t, "slots-unblock@localhost")
	calls := make(chan heldCall, 1)
	server, err := n.Spawn(func() gen.ProcessBehavior { return &answerLater{calls: calls} }, gen.ProcessOptions{})
	require.NoError(t, err)
	otherRan := make(chan struct{})
	result := make(chan bool, 1)
	caller, err := n.Spawn(func() gen.ProcessBehavior {
		return &callThenWait{server: server, otherRan: otherRan, result: result}
	}, gen.ProcessOptions{})
	require.NoError(t, err)
	other := spawnSlotProbe(t, n, func(gen.PID, any) error { close(otherRan); return nil })

	require.NoError(t, n.Send(caller, "go"))
	c := <-calls
	require.Eventually(t, func() bool { // the caller's place is back, the pool idle, no watch armed
		n.pool.mu.Lock()
		defer n.pool.mu.Unlock()
		return n.pool.running == 0 && n.pool.runq.n == 0 && n.pool.coming == 0 && !n.pool.watching
	}, slotsWait, time.Millisecond)
	require.NoError(t, n.Send(other, "hello"))
	require.NoError(t, n.respond(server, c.from, c.ref, "ok", nil))
	require.True(t, <-result, "the process woken while the Call waited ran while its caller blocked after the Call")
}

func TestAnUrgentProcessRunsWhileEveryPlaceIsTaken(t *testing.T) {
	before := stallAfter
	t.Cleanup(func() { stallAfter = before }) // after the node's stop, registered later
	stallAfter = time.Hour                    // no place is added: only the urgent lane can run it
	n := startSlotsNode(t, "slots-urgent@localhost")
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before the node's stop, which waits for the blockers
	var blocked atomic.Int64
	for range runtime.GOMAXPROCS(0) {
		require.NoError(t, n.Send(spawnSlotProbe(t, n, func(gen.PID, any) error {
			blocked.Add(1)
			<-release
			return nil
		}), "block"))
	}
	require.Eventually(t, func() bool { return blocked.Load() == int64(runtime.GOMAXPROCS(0)) }, slotsWait, time.Millisecond,
		"every place is held by a blocked behavior")

	normalRan := make(chan struct{}, 1)
	normal := spawnSlotProbe(t, n, func(gen.PID, any) error { normalRan <- struct{}{}; return nil })
	require.NoError(t, n.Send(normal, "wait your turn"))
	urgentRan := make(chan struct{}, 1)
	urgent, err := n.Spawn(func() gen.ProcessBehavior {
		return &slotProbe{onMessage: func(gen.PID, any) error { urgentRan <- struct{}{}; return nil }}
	}, gen.ProcessOptions{Urgent: true})
	require.NoError(t, err)
	require.NoError(t, n.Send(urgent, "now"))
	select {
	case <-urgentRan:
	case <-time.After(slotsWait):
		t.Fatal("an urgent process waited for a place")
	}
	select {
	case <-normalRan:
		t.Fatal("a process woken earlier ran without a place: the bound does not hold")
	default:
	}
}

// orderProbe appends its name to order when it runs, then wakes wake, if
// set, with its own name.
func orderProbe(t *testing.T, n *node, name string, mu *sync.Mutex, order *[]string, wake func() gen.PID) gen.PID {
	t.Helper()
	return spawnSlotProbe(t, n, func(gen.PID, any) error {
		mu.Lock()
		*order = append(*order, name)
		mu.Unlock()
		if wake != nil {
			if pid := wake(); pid != (gen.PID{}) {
				return n.Send(pid, name)
			}
		}
		return nil
	})
}

func TestTheProcessWokenLastRunsFirstAndTheBacklogStillMoves(t *testing.T) {
	// One place, held while the backlog is woken, so the order is the
	// pool's alone.
	prev := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) }) // after the node's stop, registered later
	n := startSlotsNode(t, "slots-next@localhost")
	var mu sync.Mutex
	var order []string
	hold := make(chan struct{})
	held := make(chan struct{})
	blocker := spawnSlotProbe(t, n, func(gen.PID, any) error { close(held); <-hold; return nil })
	require.NoError(t, n.Send(blocker, "hold"))
	<-held

	const backlog, chain = 3, 2 * nextLimit
	for i := range backlog {
		require.NoError(t, n.Send(orderProbe(t, n, fmt.Sprintf("b%d", i), &mu, &order, nil), "wake"))
	}
	// A chain: each link, when it runs, wakes the next, as a reply wakes
	// its requester.
	links := make([]gen.PID, chain)
	for i := chain - 1; i >= 0; i-- {
		next := gen.PID{}
		if i+1 < chain {
			next = links[i+1]
		}
		links[i] = orderProbe(t, n, fmt.Sprintf("c%d", i), &mu, &order, func() gen.PID { return next })
	}
	require.NoError(t, n.Send(links[0], "start"))
	close(hold)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == backlog+chain }, slotsWait, time.Millisecond)

	var want []string
	b := 0
	for i := range chain {
		want = append(want, fmt.Sprintf("c%d", i))
		if (i+1)%nextLimit == 0 && b < backlog {
			want = append(want, fmt.Sprintf("b%d", b)) // the oldest of the backlog, after nextLimit links in a row
			b++
		}
	}
	for ; b < backlog; b++ {
		want = append(want, fmt.Sprintf("b%d", b))
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, want, order, "each link runs as soon as it is woken, and the backlog's oldest after every %d", nextLimit)
}
