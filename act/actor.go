package act

import (
	"fmt"

	"github.com/regent-go/regent/gen"
)

// ActorBehavior is what a type embedding Actor implements; Actor supplies
// defaults for every callback so you override only what you need.
type ActorBehavior interface {
	gen.ProcessBehavior

	// Init runs once, on the spawning goroutine, before any message; an
	// error fails the Spawn.
	Init(args ...any) error
	// HandleMessage handles a message sent with Send, a down message or a
	// trapped exit; a non-nil error terminates the process with it.
	HandleMessage(from gen.PID, message any) error
	// HandleCall answers a request; see the package doc for what its
	// results mean.
	HandleCall(from gen.PID, ref gen.Ref, request any) (any, error)
	// Terminate runs once, last, with the reason the process ends.
	Terminate(reason error)
	// HandleInspect answers an inspection request with the given items
	// (all items when none are given).
	HandleInspect(from gen.PID, item ...string) map[string]string
}

// Actor is the embeddable plain actor. It embeds the gen.Process it runs as,
// so the embedding type calls Send, Call, PID, Log and the rest directly.
type Actor struct {
	gen.Process

	behavior ActorBehavior
	mailbox  gen.ProcessMailbox
}

// ProcessInit binds the actor to its process and calls Init. It fails with
// gen.ErrIncorrect when the spawned value does not implement ActorBehavior.
func (a *Actor) ProcessInit(process gen.Process, args ...any) error {
	b, ok := process.Behavior().(ActorBehavior)
	if !ok {
		return fmt.Errorf("act: %T does not implement act.ActorBehavior: %w", process.Behavior(), gen.ErrIncorrect)
	}
	a.Process = process
	a.behavior = b
	a.mailbox = process.Mailbox()
	return b.Init(args...)
}

// ProcessRun handles queued messages, most urgent first, until the mailbox
// is empty (nil) or a callback asks to terminate (the reason).
func (a *Actor) ProcessRun() error {
	for {
		item, ok := a.mailbox.Urgent.Pop()
		if !ok {
			item, ok = a.mailbox.System.Pop()
		}
		if !ok {
			item, ok = a.mailbox.Main.Pop()
		}
		if !ok {
			return nil
		}
		m, isMessage := item.(*gen.MailboxMessage)
		if !isMessage {
			a.Log().Error("act: dropped a mailbox item of type %T", item)
			continue
		}
		if err := a.handle(m); err != nil {
			return err
		}
	}
}

// ProcessTerminate calls Terminate.
func (a *Actor) ProcessTerminate(reason error) {
	a.behavior.Terminate(reason)
}

func (a *Actor) handle(m *gen.MailboxMessage) error {
	switch m.Type {
	case gen.MailboxMessageTypeRequest:
		return a.handleCall(m)
	case gen.MailboxMessageTypeExit:
		// An exit from the parent is never trapped: a child does not outlive
		// the parent that tells it to stop.
		fromParent := m.From != (gen.PID{}) && m.From == a.Parent()
		if !a.TrapExit() || fromParent {
			return exitReason(m.Message)
		}
		return a.behavior.HandleMessage(m.From, m.Message)
	case gen.MailboxMessageTypeInspect:
		items, _ := m.Message.([]string)
		result := a.behavior.HandleInspect(m.From, items...)
		if result == nil {
			result = map[string]string{}
		}
		a.respond(m, result)
		return nil
	default:
		return a.behavior.HandleMessage(m.From, m.Message)
	}
}

// handleCall runs HandleCall and answers; it returns a terminate reason the
// callback returned (the runtime then answers the caller with
// gen.ErrProcessTerminated).
func (a *Actor) handleCall(m *gen.MailboxMessage) error {
	result, err := a.behavior.HandleCall(m.From, m.Ref, m.Message)
	switch {
	case err != nil && gen.IsTerminateReason(err):
		return err
	case err != nil:
		if e := a.SendResponseError(m.From, m.Ref, err); e != nil {
			a.Log().Error("act: answering %s with an error: %v", m.From, e)
		}
	case result != nil:
		a.respond(m, result)
	}
	return nil
}

// respond sends result to a waiting caller; when the result cannot be sent
// (for example an unregistered type for a remote caller) the caller gets
// that error instead of waiting out its timeout.
func (a *Actor) respond(m *gen.MailboxMessage, result any) {
	err := a.SendResponse(m.From, m.Ref, result)
	if err == nil {
		return
	}
	a.Log().Error("act: answering %s: %v", m.From, err)
	if e := a.SendResponseError(m.From, m.Ref, err); e != nil {
		a.Log().Error("act: answering %s with an error: %v", m.From, e)
	}
}

func exitReason(message any) error {
	switch e := message.(type) {
	case gen.MessageExitPID:
		return e.Reason
	case gen.MessageExitProcessID:
		return e.Reason
	case gen.MessageExitNode:
		return gen.ErrNoConnection
	}
	return fmt.Errorf("act: exit signal carrying %T: %w", message, gen.ErrMalformed)
}

// Init does nothing; override it to set the actor up.
func (a *Actor) Init(args ...any) error { return nil }

// HandleMessage logs the unhandled message at Warning.
func (a *Actor) HandleMessage(from gen.PID, message any) error {
	a.Log().Warning("act: unhandled message from %s: %#v", from, message)
	return nil
}

// HandleCall logs the unhandled request at Warning and answers
// gen.ErrUnsupported so the caller does not wait out its timeout.
func (a *Actor) HandleCall(from gen.PID, ref gen.Ref, request any) (any, error) {
	a.Log().Warning("act: unhandled request from %s: %#v", from, request)
	return nil, fmt.Errorf("act: request of type %T: %w", request, gen.ErrUnsupported)
}

// Terminate does nothing; override it to release resources.
func (a *Actor) Terminate(reason error) {}

// HandleInspect returns an empty map; override it to expose state.
func (a *Actor) HandleInspect(from gen.PID, item ...string) map[string]string {
	return map[string]string{}
}
