package node

import (
	"sync"
	"sync/atomic"
)

// queue is a process's FIFO mailbox queue (gen.MailboxQueue): a ring buffer
// behind a mutex. Many goroutines push; only the process's runner pops. The
// buffer is allocated on first push and released when the queue drains, so
// an idle process keeps no backing array.
type queue struct {
	mu    sync.Mutex // guards buf and head
	buf   []any
	head  int
	size  atomic.Int64 // number of items; written under mu, read without it
	limit int64        // 0: unbounded; fixed at spawn
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
	q.buf[(q.head+n)%len(q.buf)] = item
	q.size.Store(int64(n + 1))
	q.mu.Unlock()
	return true
}

func (q *queue) grow(n int) {
	size := 2 * len(q.buf)
	if size < 8 {
		size = 8
	}
	buf := make([]any, size)
	for i := 0; i < n; i++ {
		buf[i] = q.buf[(q.head+i)%len(q.buf)]
	}
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
	q.head = (q.head + 1) % len(q.buf)
	n--
	q.size.Store(int64(n))
	if n == 0 && len(q.buf) > 64 {
		q.buf, q.head = nil, 0 // give a burst's large buffer back
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
