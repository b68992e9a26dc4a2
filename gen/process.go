package gen

import "time"

// ProcessBehavior is what the runtime drives. ProcessInit runs once on the
// spawning goroutine; ProcessRun runs whenever the mailbox has messages and
// returns nil once it is drained (the process then sleeps without holding a
// goroutine) or a non-nil reason to terminate; ProcessTerminate runs once, last.
type ProcessBehavior interface {
	ProcessInit(process Process, args ...any) error
	ProcessRun() error
	ProcessTerminate(reason error)
}

// ProcessFactory makes a fresh behavior value for each spawned process.
type ProcessFactory func() ProcessBehavior

// ProcessState is the lifecycle state of a process.
type ProcessState int32

const (
	ProcessStateInit ProcessState = iota
	ProcessStateSleep
	ProcessStateRunning
	ProcessStateWaitResponse
	ProcessStateTerminated
)

// String names the state as inspection shows it.
func (s ProcessState) String() string {
	switch s {
	case ProcessStateInit:
		return "init"
	case ProcessStateSleep:
		return "sleep"
	case ProcessStateRunning:
		return "running"
	case ProcessStateWaitResponse:
		return "wait response"
	case ProcessStateTerminated:
		return "terminated"
	}
	return "unknown"
}

// ProcessOptions tune a spawned process. The zero value is a process with an
// unbounded mailbox, not linked to its parent, logging at the node's level.
type ProcessOptions struct {
	// MailboxSize caps the Main queue; a send to a full mailbox fails with
	// ErrProcessMailboxFull. 0 means unbounded. A process's messages to
	// itself (SendAfter to its own PID, above all) pass the cap: the cap
	// guards it against others, and a timer lost to it would never re-arm.
	MailboxSize int64
	// LinkParent links the new process to its parent before Init returns.
	LinkParent bool
	// LinkChild makes the parent link to the new process.
	LinkChild bool
	// LogLevel overrides the node's log level for this process; the zero
	// value inherits it.
	LogLevel LogLevel
}

// MailboxMessageType says how a behavior should treat a MailboxMessage.
type MailboxMessageType int

const (
	// MailboxMessageTypeRegular: an asynchronous message from Send.
	MailboxMessageTypeRegular MailboxMessageType = iota
	// MailboxMessageTypeRequest: a Call; answer with SendResponse(From, Ref, ...).
	MailboxMessageTypeRequest
	// MailboxMessageTypeExit: an exit signal; Message is a MessageExitPID (or
	// ...ProcessID / ...Node). Terminate with its reason unless trapping exits.
	MailboxMessageTypeExit
	// MailboxMessageTypeInspect: an inspection request; Message is a []string
	// of items; answer with a map[string]string through SendResponse.
	MailboxMessageTypeInspect
)

// MailboxMessage is the envelope the runtime puts in a process's queues.
type MailboxMessage struct {
	From    PID
	Ref     Ref
	Type    MailboxMessageType
	Target  any
	Message any
}

// MailboxQueue is a multi-producer, single-consumer FIFO queue.
type MailboxQueue interface {
	Push(item any) bool
	Pop() (any, bool)
	Len() int64
}

// ProcessMailbox is a process's set of queues, drained in priority order:
// Urgent (exit signals), System (down messages, inspection), Main (everything
// else). Log is reserved for log messages and unused by Regent today.
type ProcessMailbox struct {
	Main   MailboxQueue
	System MailboxQueue
	Urgent MailboxQueue
	Log    MailboxQueue
}

// Process is a running process as its behavior sees it. Use it only from the
// behavior's own callbacks.
type Process interface {
	// Node returns the node the process runs on.
	Node() Node
	// Name returns the registered name, empty if none.
	Name() Atom
	// PID returns the process identifier.
	PID() PID
	// Parent returns the spawning process, or a zero PID for a node-spawned one.
	Parent() PID

	// Spawn starts a child process.
	Spawn(factory ProcessFactory, options ProcessOptions, args ...any) (PID, error)
	// SpawnRegister starts a child process under a registered name.
	SpawnRegister(register Atom, factory ProcessFactory, options ProcessOptions, args ...any) (PID, error)

	// Send delivers message asynchronously. to is a PID, a ProcessID or an
	// Atom naming a local registered process. A nil error means the message
	// was accepted for delivery (queued locally, queued for the peer's
	// connection, or queued while that connection is dialled), not that it
	// was handled. A local target's full mailbox fails it with
	// ErrProcessMailboxFull; a remote node's full send queue makes it wait
	// while the queue drains, and fail with ErrTimeout when nothing was
	// written for NetworkOptions.SendQueueWait.
	Send(to any, message any) error
	// SendAfter sends message after the delay. The returned CancelFunc
	// reports whether it stopped the send.
	SendAfter(to any, message any, after time.Duration) (CancelFunc, error)
	// SendExit sends an exit signal with reason to the process.
	SendExit(to PID, reason error) error
	// SendResponse answers the Call identified by ref.
	SendResponse(to PID, ref Ref, message any) error
	// SendResponseError answers the Call identified by ref with an error.
	SendResponseError(to PID, ref Ref, err error) error

	// Call sends a request and waits for its response for DefaultRequestTimeout.
	// It fails fast with ErrProcessUnknown or ErrNoConnection when the target
	// is known to be gone.
	Call(to any, message any) (any, error)
	// CallWithTimeout is Call with a timeout in seconds, as in ergo.
	CallWithTimeout(to any, message any, timeout int) (any, error)
	// Inspect asks a local or remote process for its inspection map.
	Inspect(target PID, item ...string) (map[string]string, error)

	// Link ties this process's life to target (a PID, a ProcessID, or an Atom
	// naming a node): when it ends, this process receives an exit signal. A
	// remote target is linked without waiting for a round trip: an unknown
	// one is reported by an exit signal with ErrProcessUnknown.
	Link(target any) error
	// Unlink removes a link made by Link.
	Unlink(target any) error
	// Monitor asks for a Down message when target (a PID, a ProcessID, or an
	// Atom naming a node) terminates or becomes unreachable. A local unknown
	// target is an error at once; a remote target is watched without waiting
	// for a round trip, and an unknown one is reported by a Down with
	// ErrProcessUnknown.
	Monitor(target any) error
	// Demonitor removes a monitor made by Monitor.
	Demonitor(target any) error

	// Log returns the process's logger.
	Log() Log
	// SetTrapExit makes exit signals (except Kill) arrive as MessageExit*
	// messages instead of terminating the process.
	SetTrapExit(trap bool) error
	// TrapExit reports whether exits are trapped.
	TrapExit() bool
	// State returns the process's lifecycle state.
	State() ProcessState
	// Behavior returns the behavior value the process runs.
	Behavior() ProcessBehavior
	// Mailbox returns the process's queues; the behavior drains them in ProcessRun.
	Mailbox() ProcessMailbox
}

// DefaultRequestTimeout is the timeout of Call, in seconds.
const DefaultRequestTimeout = 5

// ProcessInfo is a snapshot of a process for listings such as the observer's.
type ProcessInfo struct {
	PID         PID
	Name        Atom
	Parent      PID
	Behavior    string
	State       ProcessState
	MailboxLen  int64
	MessagesIn  uint64
	MessagesOut uint64
	TrapExit    bool
	Uptime      time.Duration
}
