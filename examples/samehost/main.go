package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/regent-go/regent/gen"
)

// config is what the flags select.
type config struct {
	members  int
	rounds   int
	shortcut bool
	// settle bounds every wait for an outcome.
	settle time.Duration
}

// report is what the walkthrough saw, for the test to check.
type report struct {
	FirstHolder gen.Atom // empty without the shortcut
	FirstLeader gen.Atom
	Rounds      []round
	Dir         string // the removed temporary directory
	PIDs        []int  // every child process started, all reaped on return
}

func main() {
	if isChild() {
		os.Exit(childMain())
	}
	cfg := config{settle: 30 * time.Second}
	flag.IntVar(&cfg.members, "members", 5, "members of the cluster, each its own OS process")
	flag.IntVar(&cfg.rounds, "rounds", 1, "how many times to kill the cell's holder (the leader without the shortcut)")
	flag.BoolVar(&cfg.shortcut, "shortcut", true, "share a same-host cell (leader.Options.SameHost); false runs the same without it")
	trials := flag.Int("measure", 0, "instead of the walkthrough, time this many failovers with and without the shortcut")
	flag.Parse()

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	var err error
	if *trials > 0 {
		err = measure(ctx, os.Stdout, cfg, *trials)
	} else {
		_, err = run(ctx, os.Stdout, cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		cancel()
		os.Exit(1)
	}
}

// childMain runs this process as a member and returns its exit code. The
// parent decides when a child ends (by closing its standard input), so a
// terminal's interrupt, sent to the whole process group, is left to the
// parent.
func childMain() int {
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	if err := runChild(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// narrator prints each step with the time since the start.
type narrator struct {
	out   io.Writer
	start time.Time
}

func (n narrator) say(format string, args ...any) {
	fmt.Fprintf(n.out, "%7.3fs  %s\n", time.Since(n.start).Seconds(), fmt.Sprintf(format, args...))
}

// run is the walkthrough: start the members, show who holds the cell and who
// leads, kill the holder's process cfg.rounds times, and stop.
func run(ctx context.Context, out io.Writer, cfg config) (rep report, err error) {
	if cfg.members < 3 {
		return report{}, fmt.Errorf("samehost: --members %d: a cluster needs at least 3 members: %w", cfg.members, gen.ErrIncorrect)
	}
	n := narrator{out: out, start: time.Now()}
	c, err := startCluster(ctx, cfg)
	if err != nil {
		return report{}, err
	}
	rep.Dir = c.dir
	defer func() {
		err = errors.Join(err, c.stop())
		rep.PIDs = c.pids
		if err == nil {
			n.say("stopped: every member's process reaped, %s removed", c.dir)
		}
	}()
	for _, i := range c.running() {
		n.say("%s runs as OS process %d", c.names[i], c.children[i].cmd.Process.Pid)
	}
	lead, err := c.settledLeader()
	if err != nil {
		return rep, err
	}
	rep.FirstLeader = lead.Leader
	if cfg.shortcut {
		h, err := c.cellHolder(c.index(lead.Leader))
		if err != nil {
			return rep, err
		}
		if h < 0 {
			return rep, fmt.Errorf("samehost: the cell names no running member: %w", gen.ErrProcessUnknown)
		}
		rep.FirstHolder = c.names[h]
		n.say("%s holds the cell %s (lowest PID, %d): only it starts elections", c.names[h], c.cell, c.children[h].cmd.Process.Pid)
	} else {
		n.say("no same-host cell: every member may start elections")
	}
	n.say("%s leads at term %d, followed by all %d members", lead.Leader, lead.Term, len(c.running()))

	for k := range cfg.rounds {
		r, err := c.failover()
		if err != nil {
			return rep, err
		}
		rep.Rounds = append(rep.Rounds, r)
		what := "the leader"
		if r.KilledHeld {
			what += " and the cell's holder"
		} else if cfg.shortcut {
			what += " (not the cell's holder: the holder campaigns for the host)"
		}
		n.say("round %d: SIGKILL %s, %s", k+1, r.Killed, what)
		if r.KilledHeld {
			n.say("round %d: %s seen holding the cell %s after the kill (the first survivor to tick claims it)", k+1, r.NewHolder, r.Claim.Round(time.Millisecond))
		}
		n.say("round %d: %s won the election: it leads at term %d (was %d), followed by a majority %s after the kill, by every survivor after %s; %d election(s) started, %d frames sent",
			k+1, r.NewLeader, r.NewTerm, r.OldTerm, r.Failover.Round(time.Millisecond), r.Settled.Round(time.Millisecond), r.Campaigns, r.Frames)
		if r.KilledHeld && !r.ClaimedLead {
			n.say("round %d: the winner %s is not %s, the survivor first seen holding the cell", k+1, r.NewLeader, r.NewHolder)
		}
		if cfg.shortcut {
			n.say("round %d: %s, the lowest live PID, holds the cell", k+1, r.FinalHolder)
		}
		if k+1 < cfg.rounds {
			victim := c.index(r.Killed)
			if err := c.restart(victim); err != nil {
				return rep, err
			}
			n.say("round %d: %s restarted as OS process %d and follows %s", k+1, r.Killed, c.children[victim].cmd.Process.Pid, r.NewLeader)
		}
	}
	return rep, nil
}
