package act_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/act"
	"github.com/regent-go/regent/gen"
)

// sliceQueue is a gen.MailboxQueue with no PopInto: Drain pops it with Pop.
type sliceQueue struct{ items []any }

func (q *sliceQueue) Push(item any) bool { q.items = append(q.items, item); return true }
func (q *sliceQueue) Len() int64         { return int64(len(q.items)) }
func (q *sliceQueue) Pop() (any, bool) {
	if len(q.items) == 0 {
		return nil, false
	}
	item := q.items[0]
	q.items = q.items[1:]
	return item, true
}

// intoQueue also copies its messages into the storage PopInto is given,
// as the runtime's queues do.
type intoQueue struct{ sliceQueue }

func (q *intoQueue) PopInto(dst *gen.MailboxMessage) (any, bool) {
	item, ok := q.Pop()
	if m, isMessage := item.(*gen.MailboxMessage); isMessage {
		*dst = *m
		return dst, true
	}
	return item, ok
}

// errorLog records what is logged at Error.
type errorLog struct {
	gen.Log
	errors []string
}

func (l *errorLog) Error(format string, args ...any) {
	l.errors = append(l.errors, fmt.Sprintf(format, args...))
}

// mailboxOnly is a gen.Process that has a mailbox and a log, nothing else.
type mailboxOnly struct {
	gen.Process
	mailbox gen.ProcessMailbox
	log     *errorLog
}

func (p *mailboxOnly) Mailbox() gen.ProcessMailbox { return p.mailbox }
func (p *mailboxOnly) Log() gen.Log                { return p.log }

func msg(text string) *gen.MailboxMessage { return &gen.MailboxMessage{Message: text} }

func TestDrain(t *testing.T) {
	setup := func() (*mailboxOnly, *intoQueue, *sliceQueue, *intoQueue) {
		urgent, system, main := &intoQueue{}, &sliceQueue{}, &intoQueue{}
		p := &mailboxOnly{mailbox: gen.ProcessMailbox{Urgent: urgent, System: system, Main: main}, log: &errorLog{}}
		return p, urgent, system, main
	}
	t.Run("every queued message is handled, the most urgent queue first, and items that are not messages are logged and skipped", func(t *testing.T) {
		p, urgent, system, main := setup()
		main.Push(msg("main 1"))
		main.Push("not a message")
		main.Push(msg("main 2"))
		system.Push(msg("system"))
		urgent.Push(msg("urgent"))
		var got []any
		require.NoError(t, act.Drain(p, func(m *gen.MailboxMessage) error {
			got = append(got, m.Message)
			return nil
		}))
		require.Equal(t, []any{"urgent", "system", "main 1", "main 2"}, got)
		require.Len(t, p.log.errors, 1)
		require.Contains(t, p.log.errors[0], "string")
	})
	t.Run("an error from handle stops the drain, is returned, and leaves the rest queued", func(t *testing.T) {
		p, _, _, main := setup()
		for _, text := range []string{"one", "two", "three"} {
			main.Push(msg(text))
		}
		stop := errors.New("stop")
		var got []any
		err := act.Drain(p, func(m *gen.MailboxMessage) error {
			got = append(got, m.Message)
			if m.Message == "two" {
				return stop
			}
			return nil
		})
		require.ErrorIs(t, err, stop)
		require.Equal(t, []any{"one", "two"}, got)
		require.EqualValues(t, 1, main.Len())
	})
	t.Run("a message from Next stays as it was while later ones are drained", func(t *testing.T) {
		p, _, _, main := setup()
		main.Push(msg("kept"))
		main.Push(msg("later"))
		kept, ok := act.Next(p)
		require.True(t, ok)
		require.NoError(t, act.Drain(p, func(*gen.MailboxMessage) error { return nil }))
		require.Equal(t, "kept", kept.Message)
	})
}
