package node

import (
	"sync"
	"sync/atomic"

	"github.com/regent-go/regent/gen"
)

// queue is a process's FIFO mailbox queue (gen.MailboxQueue). Many
// goroutines push, under mu, into the ring in; only the process's runner
// pops, from the ring out, which it owns: when out is empty it takes all
// that in holds in one swap under mu and pops those items without the
// lock, so producers and the runner meet on mu once per batch, not once
// per message. The two rings trade buffers at each swap, so a busy queue
// reuses them; rings are allocated on first use, and when the runner
// finds the queue empty it gives buffers larger than keptRing slots back
// to ringPools (see tidy), so an idle process keeps at most small ones
// and the next burst, here or in another process, reuses the large one.
//
// The runtime's messages are copied into slab, an array of them that
// pushes carve one by one, so that a burst allocates one array per many
// messages instead of one message each (see carve).
//
// The producers' fields and the runner's sit on different cache lines, and
// the length is two counters, one written by each side, so that a push and
// a pop running at once on two cores do not pass a line back and forth.
type queue struct {
	mu      sync.Mutex           // guards in, slab and popSeen, and orders the stores of pushed
	in      ring                 // where producers push
	slab    []gen.MailboxMessage // unused, zeroed messages that pushes carve; nil when none
	pushed  atomic.Uint64        // items ever pushed; stored under mu
	popSeen uint64               // a value popped had, for the limit check
	limit   uint64               // 0: unbounded; fixed at spawn

	// The runner's fields. untidy, written at most once per batch, and
	// the padding make a gap of a cache line between the two sides.
	untidy bool // a slab or a large buffer may be left since it last took in
	_      [cacheLine - 1]byte
	out    ring          // the runner's alone: items taken from in, oldest first
	popped atomic.Uint64 // items ever popped or dropped; stored by the runner alone
}

// cacheLine is the span of a CPU cache line: bytes at least that far
// apart never share a line.
const cacheLine = 64

// ring is a FIFO ring buffer of items; its owner serializes its use.
type ring struct {
	buf  []any // len is 0 or a power of two, at least minRing
	head int32 // 32 bits: three queues' rings are in every process
	n    int32
}

func (r *ring) push(item any) {
	if int(r.n) == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&r.mask()] = item
	r.n++
}

// pop removes the oldest item; the ring must not be empty.
func (r *ring) pop() any {
	item := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) & r.mask()
	r.n--
	if r.n == 0 {
		r.head = 0
	}
	return item
}

// trim gives a large buffer back to its pool once the ring is empty, so
// that an idle owner keeps at most a small one; a busy owner trims only
// when it finds nothing left to do, and meanwhile reuses its buffer
// instead of growing a new one for every batch.
func (r *ring) trim() {
	if r.n == 0 && len(r.buf) > keptRing {
		releaseRing(r.buf)
		r.buf = nil
	}
}

// mask turns a position into an index of buf.
func (r *ring) mask() int32 { return int32(len(r.buf) - 1) }

// grow doubles the buffer, keeping the items' order.
func (r *ring) grow() {
	buf := newRing(max(2*len(r.buf), minRing))
	for i := int32(0); i < r.n; i++ {
		j := (r.head + i) & r.mask()
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
	pushed := q.pushed.Load()
	if bounded && q.full(pushed) {
		q.mu.Unlock()
		return false
	}
	q.in.push(item)
	q.pushed.Store(pushed + 1)
	q.mu.Unlock()
	return true
}

// pushMessage appends a copy of m, carved from the slab, past the limit
// unless bounded; it returns false when the queue is at its limit. m
// itself is not kept.
func (q *queue) pushMessage(m *gen.MailboxMessage, bounded bool) bool {
	q.mu.Lock()
	pushed := q.pushed.Load()
	if bounded && q.full(pushed) {
		q.mu.Unlock()
		return false
	}
	slot := q.carve(pushed)
	// Field by field, and only the fields set: the slot is zeroed, and
	// most messages carry neither a Ref nor a Target.
	slot.From, slot.Type, slot.Message = m.From, m.Type, m.Message
	if m.Ref != (gen.Ref{}) {
		slot.Ref = m.Ref
	}
	if m.Target != nil {
		slot.Target = m.Target
	}
	q.in.push(slot)
	q.pushed.Store(pushed + 1)
	q.mu.Unlock()
	return true
}

// full reports whether pushed items leave no room below the limit; q.mu
// is held.
func (q *queue) full(pushed uint64) bool {
	if q.limit == 0 || pushed-q.popSeen < q.limit {
		return false
	}
	// Full by the last count of pops seen: only now read the runner's
	// line, so the pushes into a queue with room leave it alone.
	q.popSeen = q.popped.Load()
	return pushed-q.popSeen >= q.limit
}

// maxSlab is the most messages one slab holds (64 of 120 bytes).
const maxSlab = 64

// carve returns an unused message of the slab, making a slab first when
// none is left; q.mu is held. A slab is as large as the backlog, rounded
// up to a power of two and at most maxSlab: a process that keeps up gets
// slabs of one (a plain allocation each), one that falls behind gets
// larger ones. A message is never carved twice, so a behavior may keep
// the one it popped; the slab lives as long as any of its messages is
// reachable, and the runner lets go of it when it finds the queue empty (see tidy).
func (q *queue) carve(pushed uint64) *gen.MailboxMessage {
	if q.slab == nil {
		backlog := pushed - q.popped.Load()
		size := 1
		for size < maxSlab && uint64(size) < backlog {
			size *= 2
		}
		q.slab = make([]gen.MailboxMessage, size)
	}
	m := &q.slab[0]
	if len(q.slab) == 1 {
		q.slab = nil // a slice emptied by q.slab[1:] would still hold the array
	} else {
		q.slab = q.slab[1:]
	}
	return m
}

// Pop removes and returns the oldest item. Only the process's runner calls
// it.
func (q *queue) Pop() (any, bool) {
	if q.out.n == 0 {
		if q.pushed.Load() == q.popped.Load() {
			if q.untidy {
				q.tidy()
			}
			return nil, false
		}
		q.mu.Lock()
		q.in, q.out = q.out, q.in // out is empty: in gets its buffer
		q.untidy = q.slab != nil || len(q.in.buf) > keptRing || len(q.out.buf) > keptRing
		q.mu.Unlock()
		if q.out.n == 0 {
			return nil, false
		}
	}
	item := q.out.pop()
	q.popped.Store(q.popped.Load() + 1)
	return item, true
}

// tidy lets go of the slab and of large buffers when the queue is empty, so
// that a process that goes idle after a burst keeps neither them nor,
// through the slab's popped messages, their payloads. The runner calls it.
func (q *queue) tidy() {
	q.mu.Lock()
	if q.pushed.Load() == q.popped.Load() {
		q.slab = nil
		q.in.trim()
		q.out.trim()
	}
	q.untidy = false // a push since then makes Pop take in and look again
	q.mu.Unlock()
}

// Len returns the number of queued items.
func (q *queue) Len() int64 {
	popped := q.popped.Load() // first: a push after it only adds, so the difference is never negative
	return int64(q.pushed.Load() - popped)
}

// reset drops everything queued; a terminated process's mailbox is never
// read again. The runner calls it, after the behavior's last callback.
func (q *queue) reset() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.in, q.out, q.slab, q.untidy = ring{}, ring{}, nil, false
	q.popped.Store(q.pushed.Load())
}
