package gen

// MessageDownPID arrives at a process that monitors PID when that process
// terminates (Reason is its real reason) or its node becomes unreachable
// (Reason is ErrNoConnection).
type MessageDownPID struct {
	PID    PID
	Reason error
}

// MessageDownProcessID arrives at a process that monitors a registered name
// when the process holding it terminates or its node becomes unreachable.
type MessageDownProcessID struct {
	ProcessID ProcessID
	Reason    error
}

// MessageDownNode arrives at a process that monitors a node when the
// connection to it is lost.
type MessageDownNode struct {
	Name Atom
}

// MessageExitPID arrives, as a message, at a process that traps exits when a
// linked process terminates or sends it an exit signal.
type MessageExitPID struct {
	PID    PID
	Reason error
}

// MessageExitProcessID arrives at a trapping process linked to a registered
// name when the process holding the name terminates.
type MessageExitProcessID struct {
	ProcessID ProcessID
	Reason    error
}

// MessageExitNode arrives at a trapping process linked to a node when the
// connection to that node is lost.
type MessageExitNode struct {
	Name Atom
}
