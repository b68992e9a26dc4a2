package leader

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// busyNode is a runtime with TrySend whose connection is full while busy:
// TrySend then refuses, as node.TrySend does; Send always takes the batch.
type busyNode struct {
	gen.Node
	mu    sync.Mutex // guards busy and sent
	busy  bool
	sent  []MessageHeartbeatBatch
	onTry func() // runs in each TrySend, as another sender would meanwhile
}

func (n *busyNode) Name() gen.Atom { return "n@h" }

func (n *busyNode) Send(to any, message any) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sent = append(n.sent, message.(MessageHeartbeatBatch))
	return nil
}

func (n *busyNode) TrySend(to any, message any) error {
	if n.onTry != nil {
		n.onTry()
	}
	n.mu.Lock()
	busy := n.busy
	n.mu.Unlock()
	if busy {
		return fmt.Errorf("send to %v: the queue is full: %w", to, gen.ErrWouldBlock)
	}
	return n.Send(to, message)
}

func (n *busyNode) setBusy(busy bool) {
	n.mu.Lock()
	n.busy = busy
	n.mu.Unlock()
}

// ticks lists the ticks of the pair beats sent so far, in order.
func (n *busyNode) ticks() []uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	var ticks []uint64
	for _, b := range n.sent {
		for _, beat := range b.Beats {
			ticks = append(ticks, beat.Tick)
		}
	}
	return ticks
}

// Rule 8 of the coalescer: the pair beats of an instant leave when the
// grid has queued them, on its goroutine, not a linger later from the
// outbox's; when the connection has no room they wait for the flusher in
// front of what came after them, so the pair's beats stay in sequence.
func TestPairBeatsLeaveAtOnceAndInSequenceWhenTheConnectionIsFull(t *testing.T) {
	n := &busyNode{}
	c, _, _ := runningCoalescer(t, n)
	beat := func(tick uint64) {
		require.True(t, c.enqueuePair("f@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 1, Prev: tick - 1, Tick: tick}, nil))
	}

	beat(1)
	c.flushNow("f@h", time.Hour)
	assert.Equal(t, []uint64{1}, n.ticks(), "sent before flushNow returned, though the linger is an hour")

	n.setBusy(true)
	beat(2)
	n.onTry = func() { beat(3) } // queued while the refused try was under way
	c.flushNow("f@h", time.Hour)
	n.onTry = nil
	assert.Equal(t, []uint64{1}, n.ticks(), "a full connection sends nothing")
	n.setBusy(false)
	require.Eventually(t, func() bool { return len(n.ticks()) == 3 }, 5*time.Second, time.Millisecond, "the flusher sends what a full connection refused")
	assert.Equal(t, []uint64{1, 2, 3}, n.ticks(), "in sequence")
}

// A runtime without TrySend leaves the outbox to its linger.
func TestFlushNowWaitsForTheLingerWithoutTrySend(t *testing.T) {
	c, _, _ := runningCoalescer(t, &lossyNode{sent: map[gen.PID][]any{}})
	require.True(t, c.enqueuePair("f@h", &PairBeat{Epoch: 1, Tick: 1}, nil))
	c.flushNow("f@h", time.Hour)
	b, ok := c.take("f@h")
	require.True(t, ok, "the beat still waits in the outbox")
	assert.Len(t, b.Beats, 1)
}

// Pair beats that leave at once set no timer: the flusher of their outbox
// is never started for them. One that cannot leave at once, because
// another flush of the outbox is under way, has the flusher send it.
func TestPairBeatsSentAtOnceSetNoTimer(t *testing.T) {
	n := &busyNode{}
	c, _, _ := runningCoalescer(t, n)
	require.True(t, c.enqueuePair("f@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 1, Tick: 1}, nil))
	c.flushNow("f@h", time.Hour)
	assert.Equal(t, []uint64{1}, n.ticks())
	ob := c.outboxFor("f@h")
	c.mu.Lock()
	scheduled := ob.scheduled
	c.mu.Unlock()
	ob.flusher.mu.Lock()
	started := ob.flusher.running
	ob.flusher.mu.Unlock()
	assert.False(t, scheduled, "no flush is scheduled")
	assert.False(t, started, "the flusher's goroutine never ran")

	ob.sending.Lock() // a flush under way, which took its entries before the next beat came
	require.True(t, c.enqueuePair("f@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 1, Prev: 1, Tick: 2}, nil))
	c.flushNow("f@h", time.Millisecond)
	ob.sending.Unlock()
	require.Eventually(t, func() bool { return len(n.ticks()) == 2 }, 5*time.Second, time.Millisecond, "the flusher sends it")
}
