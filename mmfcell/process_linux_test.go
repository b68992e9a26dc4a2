package mmfcell

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/internal/syncbuf"
)

// soakEnv, when set, makes the process race long: more processes, more rounds.
const soakEnv = "MMFCELL_SOAK"

// replyWait bounds every wait for a child's answer; generous for a loaded
// two-core machine running the race detector, and longer still for a soak.
func replyWait() time.Duration {
	if os.Getenv(soakEnv) != "" {
		return 30 * time.Minute
	}
	return time.Minute
}

// child is this test binary re-executed as a member process (see runChild).
type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	pid    uint32
	in     io.WriteCloser
	lines  chan string // lines the child writes, closed when its output ends
	stderr *syncbuf.Buffer
	reaped bool
}

// spawn starts a child on the cell at path and returns it with its first
// line of output ("ready PID" or "error ...") already read.
func spawn(t *testing.T, path string) (*child, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// The race detector otherwise sleeps a second at every exit.
	cmd.Env = append(os.Environ(), childEnv+"="+path, "GORACE=atexit_sleep_ms=0")
	ch := &child{t: t, cmd: cmd, lines: make(chan string, 16), stderr: &syncbuf.Buffer{}}
	cmd.Stderr = ch.stderr
	var err error
	ch.in, err = cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		defer close(ch.lines)
		scan := bufio.NewScanner(out)
		for scan.Scan() {
			ch.lines <- scan.Text()
		}
	}()
	t.Cleanup(ch.stop)
	first := ch.next()
	if pid, ok := strings.CutPrefix(first, "ready "); ok {
		n, err := strconv.ParseUint(pid, 10, 32)
		require.NoError(t, err)
		ch.pid = uint32(n)
		require.Equal(t, cmd.Process.Pid, int(ch.pid))
	}
	return ch, first
}

// spawnMembers starts n children on the cell at path, sorted by PID.
func spawnMembers(t *testing.T, path string, n int) []*child {
	t.Helper()
	members := make([]*child, n)
	for i := range members {
		ch, first := spawn(t, path)
		require.True(t, strings.HasPrefix(first, "ready "), "child said %q; stderr: %s", first, ch.stderr)
		members[i] = ch
	}
	slices.SortFunc(members, func(a, b *child) int { return int(a.pid) - int(b.pid) })
	return members
}

// heldCell starts n members on a new cell, has members[holder] claim it and
// every member with a higher PID fail to, and returns the members ordered by
// PID with the test's own view of the cell.
func heldCell(t *testing.T, n, holder int) ([]*child, *Cell) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cell")
	members := spawnMembers(t, path, n)
	require.True(t, members[holder].do("claim "+huge))
	for _, m := range members[holder+1:] {
		require.False(t, m.do("claim "+huge))
	}
	return members, watch(t, path)
}

// next waits for the child's next line of output.
func (ch *child) next() string {
	ch.t.Helper()
	select {
	case line, ok := <-ch.lines:
		require.True(ch.t, ok, "child %d ended its output; stderr: %s", ch.pid, ch.stderr)
		return line
	case <-time.After(replyWait()):
		require.FailNow(ch.t, "child did not answer", "child %d; stderr: %s", ch.pid, ch.stderr)
		return ""
	}
}

// send writes one command without waiting for the answer.
func (ch *child) send(command string) {
	ch.t.Helper()
	_, err := fmt.Fprintln(ch.in, command)
	require.NoError(ch.t, err)
}

// answer reads the reply to a command sent earlier.
func (ch *child) answer(command string) bool {
	ch.t.Helper()
	verb := strings.Fields(command)[0]
	reply := ch.next()
	result, ok := strings.CutPrefix(reply, verb+" ")
	require.True(ch.t, ok, "child %d answered %q to %q", ch.pid, reply, command)
	return result == "true"
}

// do sends a command and returns the child's boolean answer.
func (ch *child) do(command string) bool {
	ch.t.Helper()
	ch.send(command)
	return ch.answer(command)
}

// kill sends SIGKILL and leaves the process unreaped, a zombie.
func (ch *child) kill() {
	ch.t.Helper()
	require.NoError(ch.t, ch.cmd.Process.Signal(syscall.SIGKILL))
}

// stop ends the child: it exits on end of input, or is killed if it does not
// within the bound; then it is reaped.
func (ch *child) stop() {
	if ch.reaped {
		return
	}
	ch.reaped = true
	if err := ch.in.Close(); err != nil {
		ch.t.Errorf("closing child %d input: %v", ch.pid, err)
	}
	deadline := time.After(replyWait())
	for drained := false; !drained; {
		select {
		case _, ok := <-ch.lines:
			drained = !ok
		case <-deadline:
			ch.t.Errorf("child %d did not exit; killing it", ch.pid)
			if err := ch.cmd.Process.Kill(); err != nil {
				ch.t.Errorf("killing child %d: %v", ch.pid, err)
			}
			deadline = nil
		}
	}
	if err := ch.cmd.Wait(); err != nil && !killed(err) {
		ch.t.Errorf("child %d: %v; stderr: %s", ch.pid, err, ch.stderr)
	}
}

func killed(err error) bool {
	exit, ok := err.(*exec.ExitError)
	if !ok {
		return false
	}
	status, ok := exit.Sys().(syscall.WaitStatus)
	return ok && status.Signaled() && status.Signal() == syscall.SIGKILL
}

// watch opens the cell at path in the test process for inspection.
func watch(t *testing.T, path string) *Cell {
	t.Helper()
	c, err := Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// huge is a grace so long that only death or a lower PID can move the leader.
var huge = strconv.FormatUint(math.MaxUint64, 10)

func TestProcesses(t *testing.T) {
	t.Run("processes racing for one new file leave exactly one holder, the lowest PID", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cell")
		processes, rounds := 4, "2000"
		if os.Getenv(soakEnv) != "" {
			processes, rounds = 8, "200000"
		}
		members := spawnMembers(t, path, processes)
		for _, m := range members {
			m.send("race " + huge + " " + rounds)
		}
		for _, m := range members {
			m.answer("race")
		}

		var holders []uint32
		for _, m := range members {
			if m.do("beat") {
				holders = append(holders, m.pid)
			}
		}
		assert.Equal(t, []uint32{members[0].pid}, holders)
		c := watch(t, path)
		assert.Equal(t, members[0].pid, leaderOf(c))
		assert.Equal(t, SystemProbe(members[0].pid).Fingerprint, c.Snapshot(0).Fingerprint)
	})

	t.Run("when the holder is killed another process claims at once and the term increments", func(t *testing.T) {
		members, c := heldCell(t, 3, 0)
		holder, next := members[0], members[1]
		term := c.Term()

		holder.kill()
		require.Eventually(t, func() bool { return !SystemProbe(holder.pid).Alive },
			replyWait(), time.Millisecond, "the killed holder, still a zombie, must read as dead")
		assert.True(t, c.IsStale(math.MaxUint64))

		assert.True(t, next.do("claim "+huge), "no epoch has passed, so only death detection allows this")
		assert.Equal(t, next.pid, leaderOf(c))
		assert.Equal(t, term+1, c.Term())
		assert.False(t, members[2].do("claim "+huge))
	})

	t.Run("a lower PID preempts a higher one across processes", func(t *testing.T) {
		members, c := heldCell(t, 2, 1)
		low, high := members[0], members[1]
		term := c.Term()

		require.True(t, low.do("claim "+huge))
		assert.Equal(t, low.pid, leaderOf(c))
		assert.Equal(t, term+1, c.Term())
		assert.False(t, high.do("beat"))
		assert.False(t, high.do("claim "+huge))
	})

	t.Run("a step-down hands over to the next claimant immediately", func(t *testing.T) {
		members, c := heldCell(t, 2, 0)
		low, high := members[0], members[1]
		term := c.Term()

		require.True(t, low.do("stepdown"))
		require.True(t, high.do("claim "+huge))
		assert.Equal(t, high.pid, leaderOf(c))
		assert.Equal(t, term+1, c.Term())
		assert.False(t, low.do("beat"))
	})

	t.Run("a process refuses a file of garbage or of the wrong size", func(t *testing.T) {
		for name, content := range map[string][]byte{
			"garbage":    bytes.Repeat([]byte{0x5A}, HeaderSize),
			"wrong size": append(freshHeader(), 0),
		} {
			path := filepath.Join(t.TempDir(), "cell")
			require.NoError(t, os.WriteFile(path, content, 0o600))
			_, first := spawn(t, path)
			assert.Contains(t, first, "error mmfcell: not a valid cell file", name)
		}
	})
}
