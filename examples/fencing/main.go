package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/loopback"
)

// writer is a member that, while it leads, writes to the resource with its
// fencing token when asked.
type writer struct {
	leader.Actor
	peers []gen.ProcessID
}

// writeRequest asks the leader to write entry; the answer is the token used.
type writeRequest struct{ entry string }

func (w *writer) Init(args ...any) (leader.Options, error) {
	return leader.Options{ClusterID: "fencing", MinClusterSize: 3, Bootstrap: w.peers}, nil
}

func (w *writer) HandleBecomeLeader() error                 { return nil }
func (w *writer) HandleBecomeFollower(leader gen.PID) error { return nil }

func (w *writer) HandleCall(from gen.PID, ref gen.Ref, request any) (any, error) {
	if _, ok := request.(writeRequest); !ok {
		return nil, gen.ErrUnsupported
	}
	if !w.IsLeader() {
		return nil, gen.ErrNotAllowed
	}
	return w.FencingToken(), nil
}

func main() {
	dir, err := os.MkdirTemp("", "regent-fencing-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	if err := run(context.Background(), os.Stdout, resource{dir: dir}); err != nil {
		fmt.Fprintln(os.Stderr, "fencing:", err)
		os.Exit(1)
	}
}

// run plays the story and returns an error if the resource did not refuse
// the superseded leader's late write.
func run(ctx context.Context, out io.Writer, res resource) error {
	names := loopback.Names("f", 3)
	c, err := loopback.Start(names, loopback.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	nodes := c.Nodes()
	pids := make([]gen.PID, len(nodes))
	for i, n := range nodes {
		peers := c.Peers("writer", i)
		if pids[i], err = n.SpawnRegister("writer", func() gen.ProcessBehavior { return &writer{peers: peers} }, gen.ProcessOptions{}); err != nil {
			return err
		}
	}
	const settle = 30 * time.Second

	first, _, err := c.WaitAgreed(ctx, pids, loopback.All(3), settle)
	if err != nil {
		return err
	}
	oldToken, err := tokenOf(nodes[first], pids[first])
	if err != nil {
		return err
	}
	if err := res.write(oldToken, string(names[first]), "first leader's work"); err != nil {
		return err
	}
	fmt.Fprintf(out, "1. %s leads with fencing token %d and writes\n", names[first], oldToken)

	// The old leader has a write in flight (a GC pause, a slow network)
	// when leadership moves on.
	if err := leader.StepDownLeader(nodes[first], pids[first]); err != nil {
		return err
	}
	var next int
	for {
		if next, _, err = c.WaitAgreed(ctx, pids, loopback.All(3), settle); err != nil {
			return err
		}
		if next != first {
			break
		}
	}
	newToken, err := tokenOf(nodes[next], pids[next])
	if err != nil {
		return err
	}
	if err := res.write(newToken, string(names[next]), "new leader's work"); err != nil {
		return err
	}
	fmt.Fprintf(out, "2. leadership moved to %s with token %d, which writes\n", names[next], newToken)

	err = res.write(oldToken, string(names[first]), "late write of the superseded leader")
	if !errors.Is(err, errStaleToken) {
		return fmt.Errorf("the late write with token %d was not refused: %v", oldToken, err)
	}
	fmt.Fprintf(out, "3. %s's late write with token %d is refused: %v\n", names[first], oldToken, err)
	entries, err := res.entries()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "the ledger holds %d entries, every one from the leader of its time\n", len(entries))
	return nil
}

// tokenOf asks the member pid, which must lead, for its fencing token.
func tokenOf(n gen.Node, pid gen.PID) (uint64, error) {
	v, err := n.Call(pid, writeRequest{})
	if err != nil {
		return 0, fmt.Errorf("asking %s for its token: %w", pid, err)
	}
	return v.(uint64), nil
}
