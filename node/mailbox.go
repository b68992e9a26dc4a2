package node

import (
	"sync"
	"sync/atomic"

	"github.com/regent-go/regent/gen"
)

// queue is a process's FIFO mailbox queue (gen.MailboxQueue). Many
// goroutines push, under mu, into the chain in; only the process's runner
// pops, from the chain out, which it owns: when out is empty it takes all
// that in holds in one swap under mu and pops those items without the
// lock, so producers and the runner meet on mu once per batch, not once
// per message.
//
// A chain holds the messages themselves, not pointers to them, in
// segments of segmentSize slots: a push copies its message into a slot,
// and a pop copies it out (PopInto, into storage the runner reuses), so a
// message costs no allocation on either side, and a backlog grows by
// linking a segment, never by copying what is queued. Only Pop, whose
// caller may keep what it returns, copies each message to the heap. An
// item pushed with Push, which may be any value, rides in a slot's
// Message, marked by the type rawItem. Segments come from segments, a
// pool, and go back to it as soon as the runner has popped their last
// slot, so an empty queue holds none.
//
// The producers' fields and the runner's sit on different cache lines, and
// the length is two counters, one written by each side, so that a push and
// a pop running at once on two cores do not pass a line back and forth.
type queue struct {
	mu      sync.Mutex    // guards in and popSeen, and orders the stores of pushed
	in      chain         // where producers push
	pushed  atomic.Uint64 // items ever pushed; stored under mu
	popSeen uint64        // a value popped had, for the limit check
	limit   uint64        // 0: unbounded; fixed at spawn

	// The runner's fields, after a gap of a cache line.
	_      [cacheLine]byte
	out    chain         // the runner's alone: items taken from in, oldest first
	popped atomic.Uint64 // items ever popped or dropped; stored by the runner alone
}

// rawItem is the type of a slot that holds, in Message, an item pushed
// with Push rather than a message of the runtime's.
const rawItem gen.MailboxMessageType = -1

// cacheLine is the span of a CPU cache line: bytes at least that far
// apart never share a line.
const cacheLine = 64

// segmentSize is the number of messages a segment holds: 32 of 120 bytes
// make a 4 KiB allocation, taken from the pool once per 32 pushes at most.
const segmentSize = 32

// segment is a run of a chain's slots. A slot not in use is zero, so a
// segment keeps nothing reachable that was popped from it.
type segment struct {
	slots [segmentSize]gen.MailboxMessage
	next  *segment // the segment after this one in its chain
}

// segments holds the segments no chain uses, every slot zero and next
// nil; a chain that takes one owns it alone.
var segments = sync.Pool{New: func() any { return new(segment) }}

// chain is a FIFO of messages in linked segments; its owner serializes
// its use. An empty chain holds no segment.
type chain struct {
	head, tail *segment // nil when empty
	first, end int32    // the oldest item is head.slots[first]; the newest is tail.slots[end-1]
}

// slot appends a zero message and returns it for the caller to fill.
func (c *chain) slot() *gen.MailboxMessage {
	if c.tail == nil || c.end == segmentSize {
		s := segments.Get().(*segment)
		if c.tail == nil {
			c.head, c.first = s, 0
		} else {
			c.tail.next = s
		}
		c.tail, c.end = s, 0
	}
	s := &c.tail.slots[c.end]
	c.end++
	return s
}

// popInto moves the oldest message into dst and reports whether there was
// one. A segment popped to its end goes back to the pool.
func (c *chain) popInto(dst *gen.MailboxMessage) bool {
	s := c.head
	if s == nil {
		return false
	}
	*dst, s.slots[c.first] = s.slots[c.first], gen.MailboxMessage{}
	c.first++
	switch {
	case s == c.tail && c.first == c.end:
		*c = chain{}
	case c.first == segmentSize:
		c.head, c.first = s.next, 0
	default:
		return true
	}
	s.next = nil
	segments.Put(s)
	return true
}

// release gives back the segments of a chain whose items are dropped.
func (c *chain) release() {
	for s := c.head; s != nil; {
		next := s.next
		*s = segment{}
		segments.Put(s)
		s = next
	}
	*c = chain{}
}

// Push appends item; it returns false when the queue is at its limit.
func (q *queue) Push(item any) bool {
	return q.pushMessage(&gen.MailboxMessage{Type: rawItem, Message: item}, true)
}

// PushPastLimit appends item whatever the limit: for a process's messages
// to itself (see process.deliver).
func (q *queue) PushPastLimit(item any) {
	q.pushMessage(&gen.MailboxMessage{Type: rawItem, Message: item}, false)
}

// pushMessage appends a copy of m, past the limit unless bounded; it
// returns false when the queue is at its limit. m itself is not kept.
func (q *queue) pushMessage(m *gen.MailboxMessage, bounded bool) bool {
	q.mu.Lock()
	pushed := q.pushed.Load()
	if bounded && q.full(pushed) {
		q.mu.Unlock()
		return false
	}
	fill(q.in.slot(), m)
	q.pushed.Store(pushed + 1)
	q.mu.Unlock()
	return true
}

// pushMessages appends copies of the first of ms that fit below the limit,
// in order, under one lock, and returns how many it appended.
func (q *queue) pushMessages(ms []gen.MailboxMessage) int {
	q.mu.Lock()
	pushed := q.pushed.Load()
	n := 0
	for n < len(ms) && !q.full(pushed+uint64(n)) {
		fill(q.in.slot(), &ms[n])
		n++
	}
	q.pushed.Store(pushed + uint64(n))
	q.mu.Unlock()
	return n
}

// fill copies m into slot, which is zero, field by field and only the
// fields set: most messages carry neither a Ref nor a Target.
func fill(slot, m *gen.MailboxMessage) {
	slot.From, slot.Type, slot.Message = m.From, m.Type, m.Message
	if m.Ref != (gen.Ref{}) {
		slot.Ref = m.Ref
	}
	if m.Target != nil {
		slot.Target = m.Target
	}
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

// Pop removes and returns the oldest item: a *gen.MailboxMessage of its
// own, which the caller may keep, or an item pushed with Push. Only the
// process's runner calls it.
func (q *queue) Pop() (any, bool) {
	var m gen.MailboxMessage
	if !q.popInto(&m) {
		return nil, false
	}
	if m.Type == rawItem {
		return m.Message, true
	}
	kept := new(gen.MailboxMessage)
	*kept = m
	return kept, true
}

// PopInto is Pop without an allocation: it removes the oldest item and
// returns dst, filled with it, when it is a message (dst is then valid
// until the caller reuses it), or the item pushed with Push, dst then
// zero. Only the process's runner calls it; act.Drain does, through an
// interface.
func (q *queue) PopInto(dst *gen.MailboxMessage) (any, bool) {
	if !q.popInto(dst) {
		return nil, false
	}
	if dst.Type == rawItem {
		item := dst.Message
		*dst = gen.MailboxMessage{}
		return item, true
	}
	return dst, true
}

// popInto moves the oldest message or item into dst.
func (q *queue) popInto(dst *gen.MailboxMessage) bool {
	if q.out.head == nil {
		if q.pushed.Load() == q.popped.Load() {
			return false
		}
		q.mu.Lock()
		q.in, q.out = chain{}, q.in // out is empty
		q.mu.Unlock()
	}
	if !q.out.popInto(dst) {
		return false
	}
	q.popped.Store(q.popped.Load() + 1)
	return true
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
	q.in.release()
	q.out.release()
	q.popped.Store(q.pushed.Load())
}

// spareQueue is a queue made on its first push, for a process's urgent and
// system queues: a queue is most of the size of a process, and most
// processes never use these two. It is a gen.MailboxQueue that reads as
// empty until then; producers make it with made, once, whoever comes
// first.
type spareQueue struct {
	q atomic.Pointer[queue] // nil until the first push
}

// made returns the queue, making it on first use.
func (s *spareQueue) made() *queue {
	if q := s.q.Load(); q != nil {
		return q
	}
	s.q.CompareAndSwap(nil, new(queue))
	return s.q.Load()
}

// Push appends item to the queue, made if need be.
func (s *spareQueue) Push(item any) bool { return s.made().Push(item) }

// Pop is the queue's Pop; a queue not made is empty.
func (s *spareQueue) Pop() (any, bool) {
	if q := s.q.Load(); q != nil {
		return q.Pop()
	}
	return nil, false
}

// PopInto is the queue's PopInto; a queue not made is empty.
func (s *spareQueue) PopInto(dst *gen.MailboxMessage) (any, bool) {
	if q := s.q.Load(); q != nil {
		return q.PopInto(dst)
	}
	return nil, false
}

// Len is the queue's Len, 0 while not made.
func (s *spareQueue) Len() int64 {
	if q := s.q.Load(); q != nil {
		return q.Len()
	}
	return 0
}

// pushedCount is the number of items ever pushed.
func (s *spareQueue) pushedCount() uint64 {
	if q := s.q.Load(); q != nil {
		return q.pushed.Load()
	}
	return 0
}

// reset is the queue's reset, when made.
func (s *spareQueue) reset() {
	if q := s.q.Load(); q != nil {
		q.reset()
	}
}
