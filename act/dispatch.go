package act

import (
	"fmt"
	"sync"

	"github.com/regent-go/regent/gen"
)

// The helpers below are the mailbox discipline every Regent behavior shares
// (act.Actor and leader.Actor): which message comes next, what an exit signal
// does, and how a request is answered.

// Next pops the most urgent queued message of p: Urgent, then System, then
// Main. ok is false when the mailbox is empty. An item that is not a
// *gen.MailboxMessage is logged and skipped. The message is the caller's to
// keep; Drain, which lends each message for one call, allocates none.
func Next(p gen.Process) (m *gen.MailboxMessage, ok bool) {
	r := newMailboxReader(p, false)
	return r.next(nil)
}

// Drain hands the queued messages of p, most urgent first as Next takes
// them, to handle until the mailbox is empty (nil) or handle returns an
// error (which Drain returns). The message handle gets is lent for that
// call only: its storage is reused for the next message, so the caller
// must not keep its address. A behavior's ProcessRun is Drain with its
// own handle.
func Drain(p gen.Process, handle func(m *gen.MailboxMessage) error) error {
	r := newMailboxReader(p, true)
	lent := lentMessages.Get().(*gen.MailboxMessage)
	var err error
	for {
		m, ok := r.next(lent)
		if !ok {
			break
		}
		if err = handle(m); err != nil {
			break
		}
	}
	// An empty queue leaves lent as it was, holding the message handled
	// last: the pool must not keep that reachable.
	*lent = gen.MailboxMessage{}
	lentMessages.Put(lent)
	return err
}

// lentMessages holds the storage Drain lends, zero; a Drain whose handle
// panics leaves its own to the garbage collector.
var lentMessages = sync.Pool{New: func() any { return new(gen.MailboxMessage) }}

// intoPopper is a queue that can copy its oldest message into storage the
// caller provides instead of allocating one (Regent's queues can): PopInto
// returns dst filled, or an item that is not a message, dst then zero.
type intoPopper interface {
	PopInto(dst *gen.MailboxMessage) (any, bool)
}

// mailboxReader pops the queues of one process in priority order. It
// looks at the mailbox once, not at every message.
type mailboxReader struct {
	p      gen.Process
	queues [3]gen.MailboxQueue // Urgent, System, Main
	into   [3]intoPopper       // where not nil, the same queue, popped into storage
}

// newMailboxReader returns the reader of p's mailbox; lend says whether
// it pops into the storage next is given, where the queue can.
func newMailboxReader(p gen.Process, lend bool) mailboxReader {
	mailbox := p.Mailbox()
	r := mailboxReader{p: p, queues: [3]gen.MailboxQueue{mailbox.Urgent, mailbox.System, mailbox.Main}}
	if lend {
		for i, q := range r.queues {
			r.into[i], _ = q.(intoPopper)
		}
	}
	return r
}

// next pops the most urgent message, into dst where the reader lends, and
// logs and skips items that are not messages.
func (r *mailboxReader) next(dst *gen.MailboxMessage) (*gen.MailboxMessage, bool) {
	for {
		item, found := r.pop(dst)
		if !found {
			return nil, false
		}
		if m, isMessage := item.(*gen.MailboxMessage); isMessage {
			return m, true
		}
		r.p.Log().Error("act: dropped a mailbox item of type %T", item)
	}
}

// pop takes the oldest item of the most urgent queue that holds one.
func (r *mailboxReader) pop(dst *gen.MailboxMessage) (any, bool) {
	for i, q := range r.queues {
		var item any
		var found bool
		if r.into[i] != nil {
			item, found = r.into[i].PopInto(dst)
		} else {
			item, found = q.Pop()
		}
		if found {
			return item, true
		}
	}
	return nil, false
}

// ExitReason decides what the exit signal m does to p: it returns the reason
// p must terminate with, or nil when p traps exits and should handle the
// signal as a message. An exit from the parent is never trapped: a child does
// not outlive the parent that tells it to stop.
func ExitReason(p gen.Process, m *gen.MailboxMessage) error {
	fromParent := m.From != (gen.PID{}) && m.From == p.Parent()
	if p.TrapExit() && !fromParent {
		return nil
	}
	switch e := m.Message.(type) {
	case gen.MessageExitPID:
		return e.Reason
	case gen.MessageExitProcessID:
		return e.Reason
	case gen.MessageExitNode:
		return gen.ErrNoConnection
	}
	return fmt.Errorf("act: exit signal carrying %T: %w", m.Message, gen.ErrMalformed)
}

// Answer answers the request m with what a HandleCall returned. A non-nil
// result is the response; an error that is not a terminate reason is the
// caller's error; a terminate reason is returned for p to end with (the
// runtime then answers the caller gen.ErrProcessTerminated); a nil result and
// nil error send nothing, for an answer sent later with SendResponse.
func Answer(p gen.Process, m *gen.MailboxMessage, result any, err error) error {
	switch {
	case err != nil && gen.IsTerminateReason(err):
		return err
	case err != nil:
		if e := p.SendResponseError(m.From, m.Ref, err); e != nil {
			p.Log().Error("act: answering %s with an error: %v", m.From, e)
		}
	case result != nil:
		respond(p, m, result)
	}
	return nil
}

// AnswerInspect answers the inspection request m; a nil map is sent empty.
func AnswerInspect(p gen.Process, m *gen.MailboxMessage, result map[string]string) {
	if result == nil {
		result = map[string]string{}
	}
	respond(p, m, result)
}

// InspectItems returns the items an inspection request m asks for.
func InspectItems(m *gen.MailboxMessage) []string {
	items, _ := m.Message.([]string)
	return items
}

// respond sends result to a waiting caller; when it cannot be sent (an
// unregistered type for a remote caller, say) the caller gets that error
// instead of waiting out its timeout.
func respond(p gen.Process, m *gen.MailboxMessage, result any) {
	err := p.SendResponse(m.From, m.Ref, result)
	if err == nil {
		return
	}
	p.Log().Error("act: answering %s: %v", m.From, err)
	if e := p.SendResponseError(m.From, m.Ref, err); e != nil {
		p.Log().Error("act: answering %s with an error: %v", m.From, e)
	}
}
