package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/faultproxy"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/loopback"
)

type member struct{ leader.Actor }

func (m *member) Init(args ...any) (leader.Options, error) {
	o := args[1].(leader.Options)
	o.ClusterID, o.MinClusterSize, o.Bootstrap = "walkthrough", 3, args[0].([]gen.ProcessID)
	return o, nil
}
func (m *member) HandleBecomeLeader() error          { return nil }
func (m *member) HandleBecomeFollower(gen.PID) error { return nil }

// report is what the walkthrough observed, step by step.
type report struct {
	First     gen.Atom
	FirstTerm uint64
	// MajorityKept: the leader led at its term through the whole watch.
	MajorityKept bool
	// MinorityLed: some minority member claimed leadership during the watch.
	MinorityLed   bool
	Healed        gen.Atom
	HealedTerm    uint64
	StepDown      time.Duration // from the cut until the cut-off leader stopped leading
	NewLeader     gen.Atom
	NewTerm       uint64
	NewInMajority bool
	Final         gen.Atom
	FinalTerm     uint64
}

// config paces the walkthrough.
type config struct {
	watch  time.Duration // how long to watch a partition that should change nothing
	settle time.Duration // bound on each wait
	// timings are the members' election timings; zero means the defaults.
	// Slower ones tolerate a loaded machine's scheduling delays.
	timings leader.Options
}

type walk struct {
	out   io.Writer
	cfg   config
	mesh  *faultproxy.Mesh
	c     *loopback.Cluster
	nodes []gen.Node
	pids  []gen.PID
}

func (w *walk) name(i int) string {
	s := string(w.nodes[i].Name())
	return strings.ToUpper(s[:strings.IndexByte(s, '@')])
}

func (w *walk) names(members []int) string {
	out := make([]string, len(members))
	for k, i := range members {
		out[k] = w.name(i)
	}
	return "{" + strings.Join(out, ",") + "}"
}

func (w *walk) say(format string, args ...any) { fmt.Fprintf(w.out, format+"\n", args...) }

// states prints every listed member's role, term and leader.
func (w *walk) states(members []int) {
	for _, i := range members {
		s, err := w.c.Read(i, w.pids[i])
		if err != nil {
			w.say("     %s: unreadable", w.name(i))
			continue
		}
		lead := "none"
		if s.LeaderNode != "" {
			lead = strings.ToUpper(string(s.LeaderNode[:strings.IndexByte(string(s.LeaderNode), '@')]))
		}
		w.say("     %s: %-11s term %d, leader %s", w.name(i), s.Role, s.Term, lead)
	}
}

// partition stalls all traffic between the two sides.
func (w *walk) partition(a, b []int) {
	side := func(members []int) []gen.Atom {
		var out []gen.Atom
		for _, i := range members {
			out = append(out, w.nodes[i].Name())
		}
		return out
	}
	w.mesh.Partition(side(a), side(b))
}

// split returns a side of size members that includes l, and the others.
func split(all []int, l, size int) (withLeader, others []int) {
	withLeader = []int{l}
	for _, i := range all {
		switch {
		case i == l:
		case len(withLeader) < size:
			withLeader = append(withLeader, i)
		default:
			others = append(others, i)
		}
	}
	return withLeader, others
}

func run(ctx context.Context, out io.Writer, cfg config) (report, error) {
	var r report
	mesh := faultproxy.New(faultproxy.Options{HoldDials: true})
	defer func() {
		if err := mesh.Close(); err != nil {
			fmt.Fprintln(out, "closing the proxy:", err)
		}
	}()
	names := []gen.Atom{"a@127.0.0.1", "b@127.0.0.1", "c@127.0.0.1", "d@127.0.0.1", "e@127.0.0.1"}
	c, err := loopback.Start(names, loopback.Options{Mesh: mesh})
	if err != nil {
		return r, err
	}
	defer c.Close()
	nodes := c.Nodes()
	w := &walk{out: out, cfg: cfg, mesh: mesh, c: c, nodes: nodes, pids: make([]gen.PID, len(nodes))}
	for i, n := range nodes {
		w.pids[i], err = n.SpawnRegister("member", func() gen.ProcessBehavior { return &member{} }, gen.ProcessOptions{}, c.Peers("member", i), cfg.timings)
		if err != nil {
			return r, fmt.Errorf("spawning on %s: %w", n.Name(), err)
		}
	}
	all := loopback.All(5)

	l, term, err := c.WaitAgreed(ctx, w.pids, all, cfg.settle)
	if err != nil {
		return r, err
	}
	r.First, r.FirstTerm = nodes[l].Name(), term
	w.say("1. Five members, MinClusterSize 3. %s leads at term %d.", w.name(l), term)

	majority, minority := split(all, l, 3)
	w.say("2. The network splits into %s and %s, silently: no connection drops, traffic stops.", w.names(majority), w.names(minority))
	w.partition(majority, minority)
	r.MajorityKept, r.MinorityLed = true, false
	deadline := time.Now().Add(cfg.watch)
	for time.Now().Before(deadline) {
		if s, err := c.Read(l, w.pids[l]); err != nil || s.Role != leader.RoleLeader || s.Term != term {
			r.MajorityKept = false
		}
		for _, i := range minority {
			if s, err := c.Read(i, w.pids[i]); err == nil && s.Role == leader.RoleLeader {
				r.MinorityLed = true
			}
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	if r.MajorityKept {
		w.say("   Watched for %s. The majority side: %s still reaches two peers plus itself, three of five, and kept leading at term %d.", cfg.watch, w.name(l), term)
	} else {
		w.say("   Watched for %s. UNEXPECTED: %s did not keep leading at term %d throughout.", cfg.watch, w.name(l), term)
	}
	if !r.MinorityLed {
		w.say("   The minority side: its view is still five, so it needs three votes and can muster two. Nobody there led:")
	} else {
		w.say("   UNEXPECTED: a minority member claimed leadership. Now:")
	}
	w.states(minority)

	w.say("3. The partition heals.")
	mesh.Heal()
	healed, healedTerm, err := c.WaitAgreed(ctx, w.pids, all, cfg.settle)
	if err != nil {
		return r, err
	}
	r.Healed, r.HealedTerm = nodes[healed].Name(), healedTerm
	if healed == l && healedTerm == term {
		w.say("   Nobody outranked %s, so its heartbeats reached the minority again: all five follow it at term %d.", w.name(l), term)
	} else {
		w.say("   All five follow %s at term %d.", w.name(healed), healedTerm)
	}

	l = healed
	cutOff, rest := split(all, l, 2)
	w.say("4. Now the split leaves the leader in the minority: %s | %s.", w.names(cutOff), w.names(rest))
	t0 := time.Now()
	w.partition(cutOff, rest)
	for {
		if s, err := c.Read(l, w.pids[l]); err == nil && s.Role != leader.RoleLeader {
			break
		}
		if time.Since(t0) > cfg.settle {
			return r, fmt.Errorf("%s did not step down: %w", w.name(l), gen.ErrTimeout)
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	r.StepDown = time.Since(t0)
	w.say("   %s's heartbeat tick finds fewer reachable members than its quorum: it steps down on its own after %s.", w.name(l), r.StepDown.Round(time.Millisecond))
	next, nextTerm, err := c.WaitAgreed(ctx, w.pids, rest, cfg.settle)
	if err != nil {
		return r, err
	}
	r.NewLeader, r.NewTerm, r.NewInMajority = nodes[next].Name(), nextTerm, slices.Contains(rest, next)
	w.say("   The majority %s elects %s at term %d. The cut-off side:", w.names(rest), w.name(next), nextTerm)
	w.states(cutOff)

	w.say("5. The partition heals: the higher term wins and one leader remains.")
	mesh.Heal()
	final, finalTerm, err := c.WaitAgreed(ctx, w.pids, all, cfg.settle)
	if err != nil {
		return r, err
	}
	r.Final, r.FinalTerm = nodes[final].Name(), finalTerm
	w.say("   All five follow %s at term %d.", w.name(final), finalTerm)
	w.states(all)
	return r, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, os.Stdout, config{watch: 2 * time.Second, settle: 30 * time.Second}); err != nil {
		fmt.Fprintln(os.Stderr, "partition:", err)
		stop()
		os.Exit(1)
	}
}
