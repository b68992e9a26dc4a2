package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/regent-go/regent/act"
	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/loopback"
)

// The environment of a child: envNode selects the child role and names its
// node, envPeers lists the other members' nodes (comma-separated), envCell is
// the same-host cell's path (empty runs without the shortcut).
const (
	envNode  = "REGENT_SAMEHOST_NODE"
	envPeers = "REGENT_SAMEHOST_PEERS"
	envCell  = "REGENT_SAMEHOST_CELL"
)

const (
	cookie    = "regent-samehost"
	clusterID = "samehost"
	// memberName is the election actor on every child.
	memberName gen.Atom = "election"
	// statsName is the child's helper that reports its node's frame counters.
	statsName gen.Atom = "netstats"
	// statsRequest is the Call statsName answers.
	statsRequest = "frames"
	// readyLine is what a child prints on its standard output once its member runs.
	readyLine = "ready"
)

// isChild reports whether this process was started as a member.
func isChild() bool { return os.Getenv(envNode) != "" }

// member is the election actor every child runs; it only supplies Options.
type member struct {
	leader.Actor
	opts leader.Options
}

func (m *member) Init(args ...any) (leader.Options, error) { return m.opts, nil }

// netStats answers statsRequest with its node's network counters, which can
// only be read from inside the node.
type netStats struct {
	act.Actor
}

func (s *netStats) HandleCall(from gen.PID, ref gen.Ref, request any) (any, error) {
	if request != statsRequest {
		return nil, fmt.Errorf("samehost: unknown request %v: %w", request, gen.ErrUnsupported)
	}
	st := s.Node().Network().Stats()
	return map[string]string{
		"frames_out": strconv.FormatUint(st.FramesOut, 10),
		"frames_in":  strconv.FormatUint(st.FramesIn, 10),
	}, nil
}

// runChild runs one member until its standard input closes.
func runChild(stdin io.Reader, stdout io.Writer) error {
	name := gen.Atom(os.Getenv(envNode))
	opts := leader.Options{ClusterID: clusterID, SameHost: os.Getenv(envCell)}
	for _, p := range strings.Split(os.Getenv(envPeers), ",") {
		if p != "" {
			opts.Bootstrap = append(opts.Bootstrap, gen.ProcessID{Name: memberName, Node: gen.Atom(p)})
		}
	}
	n, err := startNode(name)
	if err != nil {
		return err
	}
	defer n.Stop()
	if _, err := n.SpawnRegister(statsName, func() gen.ProcessBehavior { return &netStats{} }, gen.ProcessOptions{}); err != nil {
		return fmt.Errorf("samehost: %s: spawning the stats helper: %w", name, err)
	}
	if _, err := n.SpawnRegister(memberName, func() gen.ProcessBehavior { return &member{opts: opts} }, gen.ProcessOptions{}); err != nil {
		return fmt.Errorf("samehost: %s: spawning the member: %w", name, err)
	}
	if _, err := fmt.Fprintln(stdout, readyLine); err != nil {
		return fmt.Errorf("samehost: %s: telling the parent it is ready: %w", name, err)
	}
	if _, err := io.Copy(io.Discard, stdin); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("samehost: %s: reading standard input: %w", name, err)
	}
	return nil
}

// startNode starts a loopback node with the election's wire types; a name
// with host:port listens on that port and is dialled without routes.
func startNode(name gen.Atom) (gen.Node, error) {
	n, err := loopback.StartNode(name, loopback.Options{
		Cookie:  cookie,
		Network: gen.NetworkOptions{Acceptor: gen.AcceptorOptions{Host: loopback.Host}},
	})
	if err != nil {
		return nil, fmt.Errorf("samehost: %w", err)
	}
	return n, nil
}
