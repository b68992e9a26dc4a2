package node_test

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node"
)

// envChildNode makes the test binary run as a child node instead of tests.
const envChildNode = "REGENT_NODE_TEST_CHILD"

// runChildNode is the child's main: it starts the node named by the
// environment, registers an echo process, prints "ready <creation>" and
// serves until it is killed.
func runChildNode(name string) {
	n, err := node.Start(gen.Atom(name), gen.NodeOptions{
		Network: fastNet(testCookie),
		Log:     gen.LogOptions{Handler: slog.NewTextHandler(os.Stderr, nil)},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child node:", err)
		os.Exit(2)
	}
	if _, err := n.SpawnRegister("echo", newProbe().factory(), gen.ProcessOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, "child echo:", err)
		os.Exit(2)
	}
	fmt.Printf("ready %d\n", n.Creation())
	n.Wait()
}

// childNode is a node running in another OS process.
type childNode struct {
	cmd      *exec.Cmd
	creation int64
}

func startChild(t *testing.T, name gen.Atom) *childNode {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChildNode+"="+string(name))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the child node did not report ready")
	fields := strings.Fields(line)
	require.Len(t, fields, 2)
	require.Equal(t, "ready", fields[0])
	creation, err := strconv.ParseInt(fields[1], 10, 64)
	require.NoError(t, err)
	return &childNode{cmd: cmd, creation: creation}
}

func TestNodeInAnotherOSProcess(t *testing.T) {
	a, _ := startNet(t, "parent@127.0.0.1", fastNet(testCookie))
	name := gen.Atom("child@" + freeAddr(t))
	echo := gen.ProcessID{Name: "echo", Node: name}
	first := startChild(t, name)

	v, err := a.Call(echo, "across processes")
	require.NoError(t, err)
	require.Equal(t, "across processes", v)

	w := newProbe()
	w.onInit = func(p *probe, args ...any) error {
		if err := p.Monitor(echo); err != nil {
			return err
		}
		return p.Monitor(name)
	}
	spawnProbe(t, a, w)

	t.Run("after SIGKILL the monitors receive ErrNoConnection downs", func(t *testing.T) {
		require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
		got := w.byType(t, 2)
		down := got["gen.MessageDownProcessID"].(gen.MessageDownProcessID)
		require.ErrorIs(t, down.Reason, gen.ErrNoConnection)
		require.Equal(t, gen.MessageDownNode{Name: name}, got["gen.MessageDownNode"])
	})
	t.Run("a fresh process with the same name and a new creation is accepted", func(t *testing.T) {
		second := startChild(t, name)
		require.NotEqual(t, first.creation, second.creation)
		require.Eventually(t, func() bool {
			v, err := a.Call(echo, "again")
			return err == nil && v == "again"
		}, wait, 20*time.Millisecond)
	})
	t.Run("a frozen peer (SIGSTOP) is declared down by keepalive", func(t *testing.T) {
		frozenName := gen.Atom("frozen@" + freeAddr(t))
		frozen := startChild(t, frozenName)
		fw := newProbe()
		fw.onInit = func(p *probe, args ...any) error { return p.Monitor(gen.ProcessID{Name: "echo", Node: frozenName}) }
		spawnProbe(t, a, fw)
		// The connection exists and the monitor is recorded before the freeze.
		_, err := a.Call(gen.ProcessID{Name: "echo", Node: frozenName}, "are you there")
		require.NoError(t, err)
		before := a.Network().Stats().Dropped["keepalive_timeout"]
		require.NoError(t, frozen.cmd.Process.Signal(syscall.SIGSTOP))
		down := fw.next(t).(gen.MessageDownProcessID)
		require.ErrorIs(t, down.Reason, gen.ErrNoConnection)
		require.Equal(t, before+1, a.Network().Stats().Dropped["keepalive_timeout"])
	})
}
