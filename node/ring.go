package node

import "sync"

// ring is a FIFO ring buffer of items; its owner serializes its use. The
// node's run queue is one (see pool).
type ring struct {
	buf  []any // len is 0 or a power of two, at least minRing
	head int32
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
