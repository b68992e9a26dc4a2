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
	t.Run("a queue popped empty holds no segment, and gives them back holding nothing", func(t *testing.T) {
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
			require.Equal(t, chain{}, q.in, "an empty queue holds no segment")
			require.Equal(t, chain{}, q.out, "an empty queue holds no segment")
		}
		for range 10 {
			s := segments.Get().(*segment)
			require.Equal(t, segment{}, *s, "a pooled segment still holds an item")
		}
	})
	t.Run("reset drops what is queued and holds no segment", func(t *testing.T) {
		var q queue
		for i := range 3 * segmentSize {
			require.True(t, q.Push(i))
		}
		for range segmentSize + 1 {
			_, ok := q.Pop()
			require.True(t, ok)
		}
		require.True(t, q.Push("late"))
		q.reset()
		require.Zero(t, q.Len())
		require.Equal(t, chain{}, q.in)
		require.Equal(t, chain{}, q.out)
		_, ok := q.Pop()
		require.False(t, ok)
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
		for burst := 1; burst <= 40; burst++ { // backlogs of many sizes, across growth and wrap-around
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
	t.Run("messages and pushed items keep one order, popped by Pop or by PopInto", func(t *testing.T) {
		var q queue
		var dst gen.MailboxMessage
		for i := range 100 {
			if i%3 == 0 {
				require.True(t, q.Push(i))
				continue
			}
			m := gen.MailboxMessage{From: gen.PID{Node: "n@h", ID: uint64(i)}, Ref: gen.Ref{Node: "n@h", ID: [3]uint64{uint64(i)}}, Target: i, Message: i}
			require.True(t, q.pushMessage(&m, true))
		}
		for i := range 100 {
			var v any
			var ok bool
			if i%2 == 0 {
				v, ok = q.Pop()
			} else {
				v, ok = q.PopInto(&dst)
			}
			require.True(t, ok)
			if i%3 == 0 {
				require.Equal(t, i, v, "a pushed item comes out as itself")
				continue
			}
			m, isMessage := v.(*gen.MailboxMessage)
			require.True(t, isMessage)
			require.Equal(t, gen.MailboxMessage{From: gen.PID{Node: "n@h", ID: uint64(i)}, Ref: gen.Ref{Node: "n@h", ID: [3]uint64{uint64(i)}}, Target: i, Message: i}, *m)
			if i%2 == 1 {
				require.Same(t, &dst, m, "PopInto fills the storage it is given")
			}
		}
		_, ok := q.PopInto(&dst)
		require.False(t, ok)
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
