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
	return next(p, nil)
}

// Drain hands the queued messages of p, most urgent first as Next takes
// them, to handle until the mailbox is empty (nil) or handle returns an
// error (which Drain returns). The message handle gets is lent for that
// call only: its storage is reused for the next message, so the caller
// must not keep its address. A behavior's ProcessRun is Drain with its
// own handle.
func Drain(p gen.Process, handle func(m *gen.MailboxMessage) error) error {
	lent := lentMessages.Get().(*gen.MailboxMessage)
	for {
		m, ok := next(p, lent)
		if !ok {
			lentMessages.Put(lent) // empty: next left nothing in it
			return nil
		}
		if err := handle(m); err != nil {
			*lent = gen.MailboxMessage{}
			lentMessages.Put(lent)
			return err
		}
	}
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

// next pops as Next does, into dst when it is not nil and the queue can.
func next(p gen.Process, dst *gen.MailboxMessage) (*gen.MailboxMessage, bool) {
	mailbox := p.Mailbox()
	for {
		item, found := pop(mailbox.Urgent, dst)
		if !found {
			item, found = pop(mailbox.System, dst)
		}
		if !found {
			item, found = pop(mailbox.Main, dst)
		}
		if !found {
			return nil, false
		}
		if m, isMessage := item.(*gen.MailboxMessage); isMessage {
			return m, true
		}
		p.Log().Error("act: dropped a mailbox item of type %T", item)
	}
}

func pop(q gen.MailboxQueue, dst *gen.MailboxMessage) (any, bool) {
	if into, ok := q.(intoPopper); ok && dst != nil {
		return into.PopInto(dst)
	}
	return q.Pop()
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
