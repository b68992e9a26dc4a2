package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/loopback"
)

// coordinator runs the singleton work while it leads.
type coordinator struct {
	leader.Actor

	peers   []gen.ProcessID // what discovery finds; a real service asks its registry
	every   time.Duration
	journal *journal

	running bool
	// generation tells the current run's ticks from a previous run's, so a
	// quick demotion and re-promotion never leaves two tick chains alive.
	generation int
	ticks      int
}

type messageDiscoverPeers struct{}

type messageTick struct{ generation int }

func (c *coordinator) Init(args ...any) (leader.Options, error) {
	// Join from a handler, not from Init: the options are not applied yet.
	if err := c.Send(c.PID(), messageDiscoverPeers{}); err != nil {
		return leader.Options{}, err
	}
	return leader.Options{ClusterID: "scheduler", MinClusterSize: 3}, nil
}

func (c *coordinator) HandleMessage(from gen.PID, message any) error {
	switch m := message.(type) {
	case messageDiscoverPeers:
		for _, p := range c.peers {
			if err := c.Join(p); err != nil {
				return err
			}
		}
		// Discovery re-runs: a node that starts before its peers must keep looking.
		_, err := c.SendAfter(c.PID(), messageDiscoverPeers{}, 5*time.Second)
		return err
	case messageTick:
		if !c.running || m.generation != c.generation {
			return nil // the run that scheduled this tick has ended
		}
		// Check right before acting: the token is 0 once this member can no
		// longer be sure it leads (its evidence of a majority lapsed, say
		// while a handler ran long), before HandleBecomeFollower stops the run.
		if token := c.FencingToken(); token != 0 {
			c.ticks++
			c.journal.add(c.Node().Name(), "tick", c.Term(), fmt.Sprintf("work #%d, fencing token %d", c.ticks, token))
		}
		_, err := c.SendAfter(c.PID(), messageTick{generation: c.generation}, c.every)
		return err
	}
	return nil
}

func (c *coordinator) HandleBecomeLeader() error {
	c.running = true
	c.generation++
	c.journal.add(c.Node().Name(), "start", c.Term(), "became leader: starting the work")
	return c.Send(c.PID(), messageTick{generation: c.generation})
}

// HandleBecomeFollower is the only place leadership ends; it stops the work
// unconditionally.
func (c *coordinator) HandleBecomeFollower(leaderPID gen.PID) error {
	if c.running {
		following := "nobody yet"
		if leaderPID != (gen.PID{}) {
			following = string(leaderPID.Node)
		}
		c.journal.add(c.Node().Name(), "stop", c.Term(), "no longer leader (following "+following+"): stopping the work")
	}
	c.running = false
	return nil
}

// entry is one line of the journal.
type entry struct {
	At   time.Time
	Node gen.Atom
	Kind string // start, tick, stop, killed, note
	Term uint64
	Text string
}

// journal records and prints what the coordinators and the schedule do. Its
// lock guards entries and out; coordinators write from their own goroutines.
type journal struct {
	mu      sync.Mutex
	out     io.Writer
	entries []entry
}

func (j *journal) add(node gen.Atom, kind string, term uint64, text string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e := entry{At: time.Now(), Node: node, Kind: kind, Term: term, Text: text}
	j.entries = append(j.entries, e)
	termText := "       "
	if term > 0 {
		termText = fmt.Sprintf("term %-2d", term)
	}
	fmt.Fprintf(j.out, "%s  %-16s %s %s\n", e.At.Format("15:04:05.000"), node, termText, text)
}

func (j *journal) snapshot() []entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]entry(nil), j.entries...)
}

// config is the schedule's pacing.
type config struct {
	every  time.Duration // between two runs of the work
	phase  time.Duration // how long each leader is left to work
	settle time.Duration // bound on each wait for a leader
}

// run starts the cluster, lets the leader work, hands leadership over, kills
// the new leader's node and lets the survivor work; it returns the journal.
func run(ctx context.Context, out io.Writer, cfg config) ([]entry, error) {
	j := &journal{out: out}
	c, err := loopback.Start(loopback.Names("sched", 3), loopback.Options{})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	nodes := c.Nodes()
	pids := make([]gen.PID, len(nodes))
	for i, n := range nodes {
		peers := c.Peers("coordinator", i)
		pids[i], err = n.SpawnRegister("coordinator", func() gen.ProcessBehavior {
			return &coordinator{peers: peers, every: cfg.every, journal: j}
		}, gen.ProcessOptions{})
		if err != nil {
			return nil, fmt.Errorf("spawning on %s: %w", n.Name(), err)
		}
	}
	pause := func() error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(cfg.phase):
			return nil
		}
	}

	first, _, err := c.WaitAgreed(ctx, pids, loopback.All(3), cfg.settle)
	if err != nil {
		return j.snapshot(), err
	}
	if err := pause(); err != nil {
		return j.snapshot(), err
	}
	j.add(nodes[first].Name(), "note", 0, "asked to hand leadership over")
	if err := leader.StepDownLeader(nodes[first], pids[first]); err != nil {
		return j.snapshot(), err
	}
	second, _, err := c.WaitAgreed(ctx, pids, loopback.All(3), cfg.settle)
	if err != nil {
		return j.snapshot(), err
	}
	if err := pause(); err != nil {
		return j.snapshot(), err
	}
	// Journalled once the node is down: a tick it made while the kill was
	// under way comes before the entry, as it came before the kill.
	c.Kill(second)
	j.add(nodes[second].Name(), "killed", 0, "node killed (StopForce): its work dies with it")
	var survivors []int
	for i := range nodes {
		if i != second {
			survivors = append(survivors, i)
		}
	}
	if _, _, err := c.WaitAgreed(ctx, pids, survivors, cfg.settle); err != nil {
		return j.snapshot(), err
	}
	if err := pause(); err != nil {
		return j.snapshot(), err
	}
	return j.snapshot(), nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, os.Stdout, config{every: 250 * time.Millisecond, phase: 2 * time.Second, settle: 30 * time.Second}); err != nil {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
		stop()
		os.Exit(1)
	}
}
