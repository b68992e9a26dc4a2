package mmfcell

import (
	"bytes"
	"errors"
	"hash/fnv"
	"io/fs"
	"os"
	"strconv"
	"sync"
)

// bootID returns the kernel's boot ID, read once; it is empty when
// unreadable, and fingerprints then rest on the start time alone.
var bootID = sync.OnceValue(func() []byte {
	id, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return nil
	}
	return bytes.TrimSpace(id)
})

// inspect reads /proc/PID/stat of a PID that kill(pid, 0) found; signalled
// says whether the kill was allowed. A missing entry means the process exited
// since, unless it belongs to another user: /proc mounted with hidepid hides
// those, and it then counts as alive with an unknown fingerprint.
func inspect(pid uint32, signalled bool) ProcessState {
	stat, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/stat")
	if errors.Is(err, fs.ErrNotExist) && signalled {
		return ProcessState{}
	}
	if err != nil {
		return ProcessState{Alive: true}
	}
	state, start, ok := parseStat(stat)
	if !ok {
		return ProcessState{Alive: true}
	}
	if state == 'Z' || state == 'X' || state == 'x' {
		return ProcessState{}
	}
	return ProcessState{Alive: true, Fingerprint: fingerprint(bootID(), start)}
}

// parseStat extracts the state (field 3) and start time (field 22) from a
// /proc/PID/stat line. The command name (field 2) is parenthesised and may
// itself hold spaces and parentheses, so fields are counted from the last
// closing parenthesis.
func parseStat(stat []byte) (state byte, start []byte, ok bool) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, nil, false
	}
	fields := bytes.Fields(stat[end+1:])
	const stateField, startField = 3, 22
	const first = stateField // fields[0] is field 3
	if len(fields) <= startField-first || len(fields[0]) != 1 {
		return 0, nil, false
	}
	return fields[0][0], fields[startField-first], true
}

// fingerprint hashes a boot ID and a start time into a non-zero value.
func fingerprint(boot, start []byte) uint32 {
	h := fnv.New32a()
	h.Write(boot)
	h.Write([]byte{':'})
	h.Write(start)
	if sum := h.Sum32(); sum != 0 {
		return sum
	}
	return 1
}
