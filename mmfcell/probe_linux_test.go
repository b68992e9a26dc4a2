package mmfcell

import (
	"math"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSystemProbe(t *testing.T) {
	t.Run("this process is alive with a stable non-zero fingerprint", func(t *testing.T) {
		self := uint32(os.Getpid())
		first := SystemProbe(self)
		assert.True(t, first.Alive)
		assert.NotZero(t, first.Fingerprint)
		assert.Equal(t, first, SystemProbe(self))
	})

	t.Run("another live process has its own fingerprint", func(t *testing.T) {
		parent := SystemProbe(uint32(os.Getppid()))
		assert.True(t, parent.Alive)
		assert.NotZero(t, parent.Fingerprint)
		assert.NotEqual(t, SystemProbe(uint32(os.Getpid())).Fingerprint, parent.Fingerprint)
	})

	t.Run("PID 0 and PIDs beyond the kernel's range are dead", func(t *testing.T) {
		assert.Equal(t, ProcessState{}, SystemProbe(0))
		assert.Equal(t, ProcessState{}, SystemProbe(math.MaxInt32+1))
		assert.Equal(t, ProcessState{}, SystemProbe(math.MaxUint32))
	})

	t.Run("a killed process is dead while a zombie and after it is reaped", func(t *testing.T) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+t.TempDir()+"/cell", "GORACE=atexit_sleep_ms=0")
		// An open input keeps the child waiting for commands; Wait closes it.
		_, err := cmd.StdinPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		pid := uint32(cmd.Process.Pid)
		assert.True(t, SystemProbe(pid).Alive)

		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		require.Eventually(t, func() bool { return !SystemProbe(pid).Alive }, time.Minute, time.Millisecond)
		err = cmd.Wait()
		require.True(t, killed(err), "the child ended by %v, not by the kill", err)
		assert.False(t, SystemProbe(pid).Alive)
	})
}

func TestParseStat(t *testing.T) {
	t.Run("fields are counted from the last parenthesis, whatever the command name holds", func(t *testing.T) {
		line := []byte("4242 (odd) name (x) ) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 12345 6 ...\n")
		state, start, ok := parseStat(line)
		require.True(t, ok)
		assert.Equal(t, byte('S'), state)
		assert.Equal(t, "987654", string(start))
	})

	t.Run("a truncated line is not parsed", func(t *testing.T) {
		_, _, ok := parseStat([]byte("4242 (sh) S 1 2 3"))
		assert.False(t, ok)
		_, _, ok = parseStat([]byte("no parenthesis"))
		assert.False(t, ok)
	})

	t.Run("the fingerprint changes with the start time and with the boot", func(t *testing.T) {
		base := fingerprint([]byte("boot-a"), []byte("100"))
		assert.NotZero(t, base)
		assert.NotEqual(t, base, fingerprint([]byte("boot-a"), []byte("101")))
		assert.NotEqual(t, base, fingerprint([]byte("boot-b"), []byte("100")))
		assert.Equal(t, base, fingerprint([]byte("boot-a"), []byte("100")))
	})
}
