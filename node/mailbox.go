package node

import (
	"sync"
	"sync/atomic"
)

// queue is a process's FIFO mailbox queue (gen.MailboxQueue): a ring buffer
// behind a mutex. Many goroutines push; only the process's runner pops. The
// buffer is allocated on first push; when the queue drains, a buffer larger
// than keptRing slots goes back to ringPools, so an idle process keeps at
// most a small one and the next burst, here or in another process, reuses
// the large one instead of allocating it again.
type queue struct {
	mu    sync.Mutex // guards buf and head
	buf   []any      // len is 0 or a power of two, at least minRing
	head  int
	size  atomic.Int64 // number of items; written under mu, read without it
	limit int64        // 0: unbounded; fixed at spawn
}

// Ring buffer sizes, in slots: the first buffer of a queue has minRing, a
// drained queue keeps one of at most keptRing, and ringPools recycle the
// buffers of ringClasses sizes above keptRing (larger ones are left to the
// garbage collector).
const (
	minRing     = 8
	keptRing    = 64
	ringClasses = 10 // keptRing<<1 up to keptRing<<10: 128 to 64 Ki slots
)

// ringPools holds drained ring buffers: class i those of keptRing<<(i+1)
// slots, every slot nil. A buffer in a pool belongs to no queue; a queue
// that takes one owns it alone. The garbage collector empties the pools of
// what nobody reuses.
var ringPools [ringClasses]sync.Pool

// ringClass returns the pool class of a buffer of size slots, or -1 when
// buffers of that size are not pooled.
func ringClass(size int) int {
	for i := range ringClasses {
		if size == keptRing<<(i+1) {
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
func (q *queue) Push(item any) bool {
	q.mu.Lock()
	n := int(q.size.Load())
	if q.limit > 0 && int64(n) >= q.limit {
		q.mu.Unlock()
		return false
	}
	if n == len(q.buf) {
		q.grow(n)
	}
	q.buf[(q.head+n)&(len(q.buf)-1)] = item
	q.size.Store(int64(n + 1))
	q.mu.Unlock()
	return true
}

// grow doubles the buffer, which holds n items, keeping their order.
func (q *queue) grow(n int) {
	buf := newRing(max(2*len(q.buf), minRing))
	for i := 0; i < n; i++ {
		j := (q.head + i) & (len(q.buf) - 1)
		buf[i] = q.buf[j]
		q.buf[j] = nil
	}
	releaseRing(q.buf)
	q.buf = buf
	q.head = 0
}

// Pop removes and returns the oldest item.
func (q *queue) Pop() (any, bool) {
	if q.size.Load() == 0 {
		return nil, false
	}
	q.mu.Lock()
	n := int(q.size.Load())
	if n == 0 {
		q.mu.Unlock()
		return nil, false
	}
	item := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) & (len(q.buf) - 1)
	n--
	q.size.Store(int64(n))
	if n == 0 && len(q.buf) > keptRing {
		releaseRing(q.buf) // give a burst's large buffer back
		q.buf, q.head = nil, 0
	}
	q.mu.Unlock()
	return item, true
}

// Len returns the number of queued items.
func (q *queue) Len() int64 { return q.size.Load() }

// reset drops everything queued; a terminated process's mailbox is never read again.
func (q *queue) reset() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.buf, q.head = nil, 0
	q.size.Store(0)
}
