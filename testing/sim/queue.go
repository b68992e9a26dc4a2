package sim

import (
	"container/heap"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// itemKind says what a queue item does when its time comes.
type itemKind int

const (
	itemDeliver  itemKind = iota // a message reaches member to
	itemTimer                    // a timer of member to fires
	itemPeerDown                 // member to's monitor of pid fires
	itemDetect                   // the cut between to and peer is noticed
	itemFault                    // a planned fault applies
	itemConfirm                  // member to's HandleConfirmLeader answers (Config.ConfirmTakes)
)

// item is one future happening. Only the fields of its kind are set.
type item struct {
	at   time.Duration
	seq  uint64 // insertion order, breaking ties of at deterministically
	kind itemKind
	// to is the actor a timer or monitor belongs to, the node a message
	// travels to, or one node of a detected cut.
	to   int
	life int // the life of actor to the item was meant for

	from   gen.PID
	target gen.PID       // zero when addressed by name
	toName gen.ProcessID // the registered name addressed otherwise
	msg    any

	timer election.Timer

	pid    gen.PID
	reason error

	peer   int
	cutGen uint64
	// oneWay marks the notice of a one-way cut from peer to to; closing,
	// its notice by the side that still receives (to being that side).
	oneWay  bool
	closing bool

	// arrived marks a message that reached its actor's mailbox while the
	// actor was busy (Config.ConfirmTakes), handed over when it is not.
	arrived bool

	fault Fault
	// await, when not zero, marks the deadline of a fault that awaits a
	// view change under that id.
	await uint64
	// unlessHealed marks a fault that applies only if the count of heals
	// is still heals (the cut a FaultDelay plans).
	unlessHealed bool
	heals        uint64
}

// queue is a min-heap of items by (at, seq).
type queue []*item

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(*item)) }
func (q *queue) Pop() any {
	old := *q
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return it
}

// push schedules it, stamping its sequence number.
func (s *Simulator) push(it *item) {
	s.seq++
	it.seq = s.seq
	heap.Push(&s.queue, it)
}
