//go:build unix

package mmfcell

import (
	"errors"
	"math"

	"golang.org/x/sys/unix"
)

// SystemProbe is the default Probe: kill(pid, 0) for existence (ESRCH is
// dead, EPERM is alive), then, on Linux, /proc/PID/stat for the zombie state
// and the start time that, hashed with the boot ID, makes the fingerprint.
// When /proc cannot be read the process counts as alive with an unknown
// fingerprint.
func SystemProbe(pid uint32) ProcessState {
	if pid == NoLeader || pid > math.MaxInt32 {
		return ProcessState{}
	}
	err := unix.Kill(int(pid), 0)
	if errors.Is(err, unix.ESRCH) {
		return ProcessState{}
	}
	// nil or EPERM: the process exists. Any other error leaves the question
	// open, and an open question counts as alive.
	return inspect(pid, err == nil)
}
