package mmfcell

// ProcessState is what a Probe learns about one PID.
type ProcessState struct {
	// Alive is false only when the PID certainly names no running process
	// (it does not exist, or it is a zombie); when in doubt it is true, so
	// that a live leader is never replaced by mistake.
	Alive bool
	// Fingerprint identifies this incarnation of the PID: a different process
	// that reuses the PID has a different fingerprint. 0 means unknown, and
	// then no reuse check is made.
	Fingerprint uint32
}

// Probe reports on a PID. The cell calls it for its own PID when opened, for
// a caller's PID other than its own, and for the recorded leader whenever
// lowest PID and heartbeat alone do not settle a claim. It must be safe for
// concurrent use.
type Probe func(pid uint32) ProcessState
