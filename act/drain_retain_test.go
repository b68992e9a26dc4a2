package act_test

import (
	"runtime"
	"testing"
	"weak"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/act"
	"github.com/regent-go/regent/gen"
)

// releasingQueue pops into the storage it is given and keeps nothing of
// what it popped, as the runtime's queues do.
type releasingQueue struct{ items []gen.MailboxMessage }

func (q *releasingQueue) Push(item any) bool {
	q.items = append(q.items, *item.(*gen.MailboxMessage))
	return true
}
func (q *releasingQueue) Len() int64 { return int64(len(q.items)) }
func (q *releasingQueue) Pop() (any, bool) {
	var m gen.MailboxMessage
	if _, ok := q.PopInto(&m); !ok {
		return nil, false
	}
	return &m, true
}
func (q *releasingQueue) PopInto(dst *gen.MailboxMessage) (any, bool) {
	if len(q.items) == 0 {
		return nil, false
	}
	*dst = q.items[0]
	q.items[0] = gen.MailboxMessage{}
	q.items = q.items[1:]
	return dst, true
}

type payload struct{ b [1 << 10]byte }

// A message Drain handled is the behavior's to keep or let go: the storage
// Drain lent for it keeps nothing of it once Drain has returned, so a
// large payload a behavior dropped is collected, not held by an idle pool.
func TestDrainKeepsNothingOfTheLastMessage(t *testing.T) {
	q := &releasingQueue{}
	p := &mailboxOnly{mailbox: gen.ProcessMailbox{Urgent: &releasingQueue{}, System: &releasingQueue{}, Main: q}, log: &errorLog{}}
	big := &payload{}
	wp := weak.Make(big)
	q.Push(&gen.MailboxMessage{Message: big})
	big = nil
	handled := 0
	require.NoError(t, act.Drain(p, func(*gen.MailboxMessage) error { handled++; return nil }))
	require.Equal(t, 1, handled)
	runtime.GC()
	require.True(t, wp.Value() == nil, "the payload of the last message drained is still reachable after a GC")
}
