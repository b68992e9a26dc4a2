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
	return b.Init(args...)
}

// ProcessRun handles queued messages, most urgent first, until the mailbox
// is empty (nil) or a callback asks to terminate (the reason).
func (a *Actor) ProcessRun() error {
	return Drain(a, a.handle)
}

// ProcessTerminate calls Terminate.
func (a *Actor) ProcessTerminate(reason error) {
	a.behavior.Terminate(reason)
}

func (a *Actor) handle(m *gen.MailboxMessage) error {
	switch m.Type {
	case gen.MailboxMessageTypeRequest:
		result, err := a.behavior.HandleCall(m.From, m.Ref, m.Message)
		return Answer(a, m, result, err)
	case gen.MailboxMessageTypeExit:
		if reason := ExitReason(a, m); reason != nil {
			return reason
		}
		return a.behavior.HandleMessage(m.From, m.Message)
	case gen.MailboxMessageTypeInspect:
		AnswerInspect(a, m, a.behavior.HandleInspect(m.From, InspectItems(m)...))
		return nil
	default:
		return a.behavior.HandleMessage(m.From, m.Message)
	}
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
