package node

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

func TestQueue(t *testing.T) {
	t.Run("items come out in the order they went in, across growth and wrap-around", func(t *testing.T) {
		var q queue
		next := 0
		for round := 0; round < 50; round++ {
			for i := 0; i < round; i++ {
				require.True(t, q.Push(next+i))
			}
			for i := 0; i < round/2+1 && q.Len() > 0; i++ {
				v, ok := q.Pop()
				require.True(t, ok)
				require.Equal(t, next, v)
				next++
			}
			// keep the remainder queued: it wraps around the ring next round
			for q.Len() > 0 {
				v, _ := q.Pop()
				require.Equal(t, next, v)
				next++
			}
		}
		_, ok := q.Pop()
		require.False(t, ok)
	})
	t.Run("a queue found empty gives its large buffer back holding nothing, and keeps no buffer", func(t *testing.T) {
		var q queue
		for round := 0; round < 20; round++ {
			for i := 0; i < 200; i++ {
				require.True(t, q.Push(&[4]int{round, i}))
			}
			for i := 0; i < 200; i++ {
				v, ok := q.Pop()
				require.True(t, ok)
				require.Equal(t, &[4]int{round, i}, v)
			}
			_, ok := q.Pop() // the runner finds the queue empty before it sleeps
			require.False(t, ok)
			require.Nil(t, q.in.buf, "a buffer above keptRing slots goes back to its pool")
			require.Nil(t, q.out.buf, "a buffer above keptRing slots goes back to its pool")
		}
		for size := keptRing * 2; size <= 256; size *= 2 {
			if b, ok := ringPools[ringClass(size)].Get().(*[]any); ok {
				require.Len(t, *b, size)
				for i, v := range *b {
					require.Nil(t, v, "slot %d of a pooled buffer of %d still holds an item", i, size)
				}
			}
		}
	})
	t.Run("a limited queue refuses pushes beyond its limit", func(t *testing.T) {
		q := queue{limit: 2}
		require.True(t, q.Push(1))
		require.True(t, q.Push(2))
		require.False(t, q.Push(3))
		require.EqualValues(t, 2, q.Len())
	})
	t.Run("a limited queue takes pushes again once the runner pops, and past the limit when told", func(t *testing.T) {
		q := queue{limit: 2}
		m := gen.MailboxMessage{Message: "m"}
		require.True(t, q.pushMessage(&m, true))
		require.True(t, q.Push(2))
		require.False(t, q.pushMessage(&m, true))
		require.True(t, q.pushMessage(&m, false), "past the limit")
		require.EqualValues(t, 3, q.Len())
		for range 2 {
			_, ok := q.Pop()
			require.True(t, ok)
		}
		require.True(t, q.Push(4), "one below the limit after two pops")
		require.False(t, q.Push(5))
		require.EqualValues(t, 2, q.Len())
	})
	t.Run("a popped message stays as it was while later ones are pushed and popped", func(t *testing.T) {
		var q queue
		var kept []*gen.MailboxMessage
		sent := 0
		for burst := 1; burst <= 40; burst++ { // backlogs of many sizes, so slabs of many sizes
			for range burst {
				m := gen.MailboxMessage{From: gen.PID{Node: "n@h", ID: uint64(sent)}, Message: sent}
				require.True(t, q.pushMessage(&m, true))
				sent++
			}
			for {
				v, ok := q.Pop()
				if !ok {
					break
				}
				kept = append(kept, v.(*gen.MailboxMessage))
			}
		}
		require.Len(t, kept, sent)
		for i, m := range kept {
			require.Equal(t, gen.MailboxMessage{From: gen.PID{Node: "n@h", ID: uint64(i)}, Message: i}, *m)
		}
	})
	t.Run("a queue found empty after a burst keeps no slab", func(t *testing.T) {
		var q queue
		m := gen.MailboxMessage{Message: "burst"}
		for range 100 {
			require.True(t, q.pushMessage(&m, true))
		}
		_, ok := q.Pop()
		require.True(t, ok)
		for range 100 { // slabs grow with the backlog
			require.True(t, q.pushMessage(&m, true))
		}
		require.NotNil(t, q.slab, "a backlog of 99 gets a slab larger than one message")
		for q.Len() > 0 {
			_, ok := q.Pop()
			require.True(t, ok)
		}
		_, ok = q.Pop() // the runner finds the queue empty before it sleeps
		require.False(t, ok)
		require.Nil(t, q.slab, "the slab, and through it the payloads of popped messages, is let go")
	})
	t.Run("concurrent producers lose nothing and keep each producer's order", func(t *testing.T) {
		var q queue
		const producers, each = 4, 5000
		var wg sync.WaitGroup
		for p := 0; p < producers; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					q.Push([2]int{p, i})
				}
			}()
		}
		last := make([]int, producers)
		for i := range last {
			last[i] = -1
		}
		got := 0
		for got < producers*each {
			v, ok := q.Pop()
			if !ok {
				continue
			}
			item := v.([2]int)
			require.Equal(t, last[item[0]]+1, item[1])
			last[item[0]] = item[1]
			got++
		}
		wg.Wait()
	})
}

// mpsc is a lock-free multi-producer single-consumer linked queue (the
// classic intrusive design with a stub node), kept here only as the
// alternative BenchmarkMailboxQueue measures the mutex ring against.
type mpsc struct {
	head atomic.Pointer[mpscNode] // producers swap themselves in here
	tail *mpscNode                // consumer only
	size atomic.Int64
}

type mpscNode struct {
	next  atomic.Pointer[mpscNode]
	value any
}

func newMPSC() *mpsc {
	stub := &mpscNode{}
	q := &mpsc{tail: stub}
	q.head.Store(stub)
	return q
}

func (q *mpsc) Push(v any) bool {
	n := &mpscNode{value: v}
	prev := q.head.Swap(n)
	prev.next.Store(n)
	q.size.Add(1)
	return true
}

func (q *mpsc) Pop() (any, bool) {
	next := q.tail.next.Load()
	if next == nil {
		return nil, false
	}
	q.tail = next
	v := next.value
	next.value = nil
	q.size.Add(-1)
	return v, true
}

// BenchmarkMailboxQueue pushes from two producers while one consumer pops:
// Regent's queue (producers' ring under a mutex, swapped for the
// consumer's in batches) against the lock-free linked queue. x-baseline
// is the ring's time over the linked queue's.
func BenchmarkMailboxQueue(b *testing.B) {
	run := func(push func(any) bool, pop func() (any, bool), count int) {
		var wg sync.WaitGroup
		for p := 0; p < 2; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < count/2; i++ {
					push(i)
				}
			}()
		}
		for got := 0; got < count/2*2; {
			if _, ok := pop(); ok {
				got++
			}
		}
		wg.Wait()
	}
	b.StopTimer()
	lf := newMPSC()
	start := time.Now()
	run(lf.Push, lf.Pop, b.N)
	base := time.Since(start)
	var q queue
	b.StartTimer()
	b.ResetTimer()
	run(q.Push, q.Pop, b.N)
	b.StopTimer()
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "baseline-ns/op")
	b.ReportMetric(float64(b.Elapsed())/float64(base), "x-baseline")
}
