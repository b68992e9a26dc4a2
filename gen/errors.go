package gen

import "errors"

// Sentinel errors of the runtime. Compare with errors.Is: the runtime wraps
// them with context.
var (
	ErrNoConnection       = errors.New("regent: no connection")
	ErrProcessUnknown     = errors.New("regent: unknown process")
	ErrProcessTerminated  = errors.New("regent: process terminated")
	ErrProcessMailboxFull = errors.New("regent: process mailbox is full")
	ErrTimeout            = errors.New("regent: timed out")
	ErrNotAllowed         = errors.New("regent: not allowed")
	ErrUnregistered       = errors.New("regent: type is not registered")
	ErrTooLarge           = errors.New("regent: too large")
	ErrMalformed          = errors.New("regent: malformed")
	ErrNoRoute            = errors.New("regent: no route to node")
	ErrNameUnknown        = errors.New("regent: unknown name")
	ErrTaken              = errors.New("regent: resource is taken")
	ErrIncorrect          = errors.New("regent: incorrect value or argument")
	ErrNodeTerminated     = errors.New("regent: node terminated")
	ErrUnauthorized       = errors.New("regent: authentication failed")
	ErrUnsupported        = errors.New("regent: not supported")
	// ErrWouldBlock: a send that may not wait found no room to queue its
	// message; nothing was sent.
	ErrWouldBlock = errors.New("regent: the send would wait")
	// ErrEmptyCookie refuses a network without a cookie; see
	// NetworkOptions.InsecureOpen.
	ErrEmptyCookie = errors.New("regent: empty cookie")
)

// Terminate reasons. A process that ends with one of these ended on purpose;
// any other reason is a failure and is logged as one.
var (
	// TerminateReasonNormal: the process finished its work.
	TerminateReasonNormal = errors.New("regent: normal")
	// TerminateReasonKill: the process was killed with Node.Kill.
	TerminateReasonKill = errors.New("regent: kill")
	// TerminateReasonPanic: a callback panicked; the stack is logged.
	TerminateReasonPanic = errors.New("regent: panic")
	// TerminateReasonShutdown: its node is stopping, or its parent asked it to.
	TerminateReasonShutdown = errors.New("regent: shutdown")
)

// IsTerminateReason reports whether err is one of the TerminateReason values
// (compared with errors.Is).
func IsTerminateReason(err error) bool {
	return errors.Is(err, TerminateReasonNormal) || errors.Is(err, TerminateReasonKill) ||
		errors.Is(err, TerminateReasonPanic) || errors.Is(err, TerminateReasonShutdown)
}
