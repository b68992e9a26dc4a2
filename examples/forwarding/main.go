package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/loopback"
)

// request is the work a client asks any member to do.
type request struct{ Text string }

// reply says who handled a request, at which term.
type reply struct {
	Text      string
	HandledBy gen.Atom
	Term      uint64
}

type coordinator struct {
	leader.Actor
	peers []gen.ProcessID
}

type messageDiscoverPeers struct{}

func (c *coordinator) Init(args ...any) (leader.Options, error) {
	if err := c.Send(c.PID(), messageDiscoverPeers{}); err != nil {
		return leader.Options{}, err
	}
	return leader.Options{ClusterID: "forwarding", MinClusterSize: 3}, nil
}

func (c *coordinator) HandleMessage(from gen.PID, message any) error {
	if _, ok := message.(messageDiscoverPeers); ok {
		for _, p := range c.peers {
			if err := c.Join(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// HandleCall handles locally when leading, forwards when following, and
// rejects when there is no leader.
func (c *coordinator) HandleCall(from gen.PID, ref gen.Ref, message any) (any, error) {
	r, ok := message.(request)
	if !ok {
		return nil, fmt.Errorf("forwarding: unexpected request %T: %w", message, gen.ErrUnsupported)
	}
	if c.IsLeader() {
		return reply{Text: "done: " + r.Text, HandledBy: c.Node().Name(), Term: c.Term()}, nil
	}
	l := c.Leader()
	if l == (gen.PID{}) {
		return nil, fmt.Errorf("forwarding: no leader right now: %w", gen.ErrNotAllowed)
	}
	return c.Call(l, r)
}

func (c *coordinator) HandleBecomeLeader() error          { return nil }
func (c *coordinator) HandleBecomeFollower(gen.PID) error { return nil }

// outcome is one request and what came of it.
type outcome struct {
	Via       gen.Atom
	HandledBy gen.Atom
	Err       error
}

// client sends one request to the member on via and prints the outcome.
func client(out io.Writer, via gen.Node, pid gen.PID, text string) outcome {
	answer, err := via.Call(pid, request{Text: text})
	o := outcome{Via: via.Name(), Err: err}
	if err == nil {
		rep, ok := answer.(reply)
		if !ok {
			o.Err = fmt.Errorf("unexpected answer %T: %w", answer, gen.ErrMalformed)
		} else {
			o.HandledBy = rep.HandledBy
		}
	}
	switch {
	case errors.Is(o.Err, gen.ErrNotAllowed):
		fmt.Fprintf(out, "  %-8q via %-18s rejected: %v\n", text, via.Name(), o.Err)
	case o.Err != nil:
		fmt.Fprintf(out, "  %-8q via %-18s failed: %v\n", text, via.Name(), o.Err)
	default:
		fmt.Fprintf(out, "  %-8q via %-18s handled by %s\n", text, via.Name(), o.HandledBy)
	}
	return o
}

// run is the walkthrough; it returns every outcome, by phase.
func run(ctx context.Context, out io.Writer, settle time.Duration) (map[string][]outcome, error) {
	results := map[string][]outcome{}
	c, err := loopback.Start(loopback.Names("fwd", 3), loopback.Options{Types: []any{request{}, reply{}}})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	nodes := c.Nodes()
	pids := make([]gen.PID, len(nodes))
	spawn := func(i int) error {
		peers := c.Peers("coordinator", i)
		pid, err := nodes[i].SpawnRegister("coordinator", func() gen.ProcessBehavior { return &coordinator{peers: peers} }, gen.ProcessOptions{})
		pids[i] = pid
		return err
	}
	ask := func(phase string, members []int) {
		for _, i := range members {
			results[phase] = append(results[phase], client(out, nodes[i], pids[i], fmt.Sprintf("job-%d", len(results[phase])+1)))
		}
	}

	fmt.Fprintln(out, "1. Only one member runs: its view counts three declared peers, but nobody answers, so there is no leader.")
	if err := spawn(0); err != nil {
		return results, err
	}
	ask("no leader", []int{0})

	fmt.Fprintln(out, "2. The other members start and elect a leader; every member serves requests.")
	for i := 1; i < len(nodes); i++ {
		if err := spawn(i); err != nil {
			return results, err
		}
	}
	first, term, err := c.WaitAgreed(ctx, pids, loopback.All(3), settle)
	if err != nil {
		return results, err
	}
	fmt.Fprintf(out, "   %s leads at term %d\n", nodes[first].Name(), term)
	ask("leader", loopback.All(3))

	fmt.Fprintf(out, "3. The leader's node %s dies; the survivors elect another and requests follow it.\n", nodes[first].Name())
	c.Kill(first)
	var survivors []int
	for i := range nodes {
		if i != first {
			survivors = append(survivors, i)
		}
	}
	next, term, err := c.WaitAgreed(ctx, pids, survivors, settle)
	if err != nil {
		return results, err
	}
	fmt.Fprintf(out, "   %s leads at term %d\n", nodes[next].Name(), term)
	ask("new leader", survivors)
	return results, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, os.Stdout, 30*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "forwarding:", err)
		stop()
		os.Exit(1)
	}
}
