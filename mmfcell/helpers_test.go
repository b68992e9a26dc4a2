//go:build unix

package mmfcell

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeHost is a process table for tests: PIDs it knows are alive with the
// fingerprint it gives them; every other PID is dead.
type fakeHost struct {
	mu    sync.Mutex // guards procs
	procs map[uint32]uint32
}

func newFakeHost(pids ...uint32) *fakeHost {
	h := &fakeHost{procs: map[uint32]uint32{}}
	for _, pid := range pids {
		h.start(pid, pid*7+1)
	}
	return h
}

func (h *fakeHost) start(pid, fp uint32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.procs[pid] = fp
}

func (h *fakeHost) kill(pid uint32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.procs, pid)
}

func (h *fakeHost) probe(pid uint32) ProcessState {
	h.mu.Lock()
	defer h.mu.Unlock()
	fp, ok := h.procs[pid]
	return ProcessState{Alive: ok, Fingerprint: fp}
}

// newCell creates a fresh cell in a temporary directory, closed at cleanup.
func newCell(t testing.TB, opts ...Option) *Cell {
	t.Helper()
	return openCell(t, filepath.Join(t.TempDir(), "leader.cell"), opts...)
}

// openCell creates or opens the cell at path, closed at cleanup.
func openCell(t testing.TB, path string, opts ...Option) *Cell {
	t.Helper()
	c, err := Create(path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// ledCell returns a fake host running leader and others, and a new cell on it
// that leader has claimed with graceEpochs.
func ledCell(t testing.TB, leader uint32, graceEpochs uint64, others ...uint32) (*fakeHost, *Cell) {
	t.Helper()
	host := newFakeHost(append(others, leader)...)
	c := newCell(t, WithProbe(host.probe))
	require.True(t, c.TryClaim(leader, graceEpochs))
	return host, c
}
