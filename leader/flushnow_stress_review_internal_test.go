package leader

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Review stress: beats queued and flushed at once by one goroutine while
// another queues PairAcks and flushes, the flusher sends what a full
// connection refused, and the connection fills and drains at random: every
// beat is sent once, in sequence.
func TestReviewFlushNowKeepsBeatsInSequenceUnderContention(t *testing.T) {
	n := &busyNode{}
	c, _, _ := runningCoalescer(t, n)
	const beats = 3000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				n.setBusy(false)
				return
			default:
			}
			n.setBusy(i%3 == 0)
			time.Sleep(time.Duration(i%5) * 10 * time.Microsecond)
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			c.enqueuePair("f@h", nil, &PairAck{Interval: int64(50 * time.Millisecond), Epoch: 1})
			c.flushNow("f@h", time.Millisecond)
		}
	}()
	for tick := uint64(1); tick <= beats; tick++ {
		require.True(t, c.enqueuePair("f@h", &PairBeat{Interval: int64(50 * time.Millisecond), Epoch: 1, Prev: tick - 1, Tick: tick}, nil))
		c.flushNow("f@h", time.Millisecond)
	}
	close(stop)
	wg.Wait()
	require.Eventually(t, func() bool { return len(n.ticks()) >= beats }, 10*time.Second, time.Millisecond)
	ticks := n.ticks()
	require.Len(t, ticks, beats)
	for i, tick := range ticks {
		require.EqualValues(t, i+1, tick, "beat %d out of sequence", i)
	}
}
