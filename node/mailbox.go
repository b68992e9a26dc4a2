package node

import (
	"sync"
	"sync/atomic"
)

// queue is a process's FIFO mailbox queue (gen.MailboxQueue). Many
// goroutines push, under mu, into the ring in; only the process's runner
// pops, from the ring out, which it owns: when out is empty it takes all
// that in holds in one swap under mu and pops those items without the
// lock, so producers and the runner meet on mu once per batch, not once
// per message. Rings are allocated on first use; one that drains gives a
// buffer larger than keptRing slots back to ringPools, so an idle process
// keeps at most small ones and the next burst, here or in another
// process, reuses the large one instead of allocating it again.
type queue struct {
	mu    sync.Mutex   // guards in
	in    ring         // where producers push
	out   ring         // the runner's alone: items taken from in, oldest first
	size  atomic.Int64 // items in in and out: raised under mu by Push, lowered by Pop without it
	limit int64        // 0: unbounded; fixed at spawn
}

// ring is a FIFO ring buffer of items; its owner serializes its use.
type ring struct {
	buf  []any // len is 0 or a power of two, at least minRing
	head int
	n    int
}

func (r *ring) push(item any) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = item
	r.n++
}

// pop removes the oldest item; the ring must not be empty.
func (r *ring) pop() any {
	item := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	if r.n == 0 {
		r.head = 0
		if len(r.buf) > keptRing {
			releaseRing(r.buf) // give a burst's large buffer back
			r.buf = nil
		}
	}
	return item
}

// grow doubles the buffer, keeping the items' order.
func (r *ring) grow() {
	buf := newRing(max(2*len(r.buf), minRing))
	for i := 0; i < r.n; i++ {
		j := (r.head + i) & (len(r.buf) - 1)
		buf[i] = r.buf[j]
		r.buf[j] = nil
	}
	releaseRing(r.buf)
	r.buf, r.head = buf, 0
}

// Ring buffer sizes, in slots: the first buffer of a ring has minRing, a
// drained ring keeps one of at most keptRing, and ringPools recycle the
// buffers of ringClasses sizes, doubling from minRing (larger ones are
// left to the garbage collector).
const (
	minRing     = 8
	keptRing    = 16
	ringClasses = 14 // minRing up to minRing<<13: 8 to 64 Ki slots
)

// ringPools holds ring buffers that no ring uses any more, drained or
// outgrown: class i those of minRing<<i slots, every slot nil. A buffer in
// a pool belongs to no ring; a ring that takes one owns it alone. The
// garbage collector empties the pools of what nobody reuses.
var ringPools [ringClasses]sync.Pool

// ringClass returns the pool class of a buffer of size slots, or -1 when
// buffers of that size are not pooled.
func ringClass(size int) int {
	for i := range ringClasses {
		if size == minRing<<i {
			return i
		}
	}
	return -1
}

// newRing returns an empty buffer of size slots, from its pool if it has one.
func newRing(size int) []any {
	if c := ringClass(size); c >= 0 {
		if b, ok := ringPools[c].Get().(*[]any); ok {
			return *b
		}
	}
	return make([]any, size)
}

// releaseRing gives buf, whose slots are all nil, to its pool.
func releaseRing(buf []any) {
	if c := ringClass(len(buf)); c >= 0 {
		ringPools[c].Put(&buf)
	}
}

// Push appends item; it returns false when the queue is at its limit.
func (q *queue) Push(item any) bool { return q.push(item, true) }

// PushPastLimit appends item whatever the limit: for a process's messages
// to itself (see process.deliver).
func (q *queue) PushPastLimit(item any) { q.push(item, false) }

func (q *queue) push(item any, bounded bool) bool {
	q.mu.Lock()
	if bounded && q.limit > 0 && q.size.Load() >= q.limit {
		q.mu.Unlock()
		return false
	}
	q.in.push(item)
	q.size.Add(1)
	q.mu.Unlock()
	return true
}

// Pop removes and returns the oldest item. Only the process's runner calls
// it.
func (q *queue) Pop() (any, bool) {
	if q.out.n == 0 {
		if q.size.Load() == 0 {
			return nil, false
		}
		q.mu.Lock()
		q.in, q.out = q.out, q.in // out is empty: in gets its buffer
		q.mu.Unlock()
		if q.out.n == 0 {
			return nil, false
		}
	}
	item := q.out.pop()
	q.size.Add(-1)
	return item, true
}

// Len returns the number of queued items.
func (q *queue) Len() int64 { return q.size.Load() }

// reset drops everything queued; a terminated process's mailbox is never
// read again. The runner calls it, after the behavior's last callback.
func (q *queue) reset() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.in, q.out = ring{}, ring{}
	q.size.Store(0)
}
