package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
)

// summary condenses the rounds of one configuration.
type summary struct {
	Shortcut     bool
	Trials       int
	MultiRound   int // failovers in which the survivors started more than one election
	Campaigns    uint64
	Frames       int64
	Failover     []time.Duration // sorted
	Claim        []time.Duration // sorted; only failovers whose victim held the cell
	NewHolderLed int
	// HolderKilled counts the failovers whose victim held the cell, and
	// HolderFailover are their failover times, sorted.
	HolderKilled   int
	HolderFailover []time.Duration
}

func summarize(shortcut bool, rounds []round) summary {
	s := summary{Shortcut: shortcut, Trials: len(rounds)}
	for _, r := range rounds {
		if r.Campaigns > 1 {
			s.MultiRound++
		}
		s.Campaigns += r.Campaigns
		s.Frames += r.Frames
		s.Failover = append(s.Failover, r.Failover)
		if r.KilledHeld {
			s.Claim = append(s.Claim, r.Claim)
			s.HolderKilled++
			s.HolderFailover = append(s.HolderFailover, r.Failover)
		}
		if r.ClaimedLead {
			s.NewHolderLed++
		}
	}
	slices.Sort(s.Failover)
	slices.Sort(s.Claim)
	slices.Sort(s.HolderFailover)
	return s
}

// percentile is the nearest-rank percentile p (0..100) of sorted, 0 when empty.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

// trials runs n failovers of one configuration, restarting each victim.
func trials(ctx context.Context, cfg config, n int, progress narrator) (s summary, err error) {
	c, err := startCluster(ctx, cfg)
	if err != nil {
		return summary{}, err
	}
	defer func() { err = errors.Join(err, c.stop()) }()
	if _, err := c.settledLeader(); err != nil {
		return summary{}, err
	}
	var rounds []round
	for k := range n {
		r, err := c.failover()
		if err != nil {
			return summary{}, fmt.Errorf("samehost: trial %d: %w", k+1, err)
		}
		rounds = append(rounds, r)
		progress.say("shortcut=%t trial %d/%d: killed %s, %s leads after %sms, %d election(s), %d frames",
			cfg.shortcut, k+1, n, r.Killed, r.NewLeader, ms(r.Failover), r.Campaigns, r.Frames)
		if err := c.restart(c.index(r.Killed)); err != nil {
			return summary{}, fmt.Errorf("samehost: trial %d: %w", k+1, err)
		}
	}
	return summarize(cfg.shortcut, rounds), nil
}

// measure runs n failovers with and without the shortcut and prints the figures.
func measure(ctx context.Context, out io.Writer, cfg config, n int) error {
	if cfg.members < 3 {
		return fmt.Errorf("samehost: --members %d: a cluster needs at least 3 members: %w", cfg.members, gen.ErrIncorrect)
	}
	progress := narrator{out: out, start: time.Now()}
	var sums []summary
	for _, shortcut := range []bool{true, false} {
		cfg.shortcut = shortcut
		s, err := trials(ctx, cfg, n, progress)
		if err != nil {
			return err
		}
		sums = append(sums, s)
	}
	fmt.Fprintf(out, "\n%d members on one host, %d SIGKILLs of the holder/leader each, default timeouts (election %d-%d ms, heartbeat %d ms)\n",
		cfg.members, n, leader.DefaultElectionTimeoutMin, leader.DefaultElectionTimeoutMax, leader.DefaultHeartbeatInterval)
	fmt.Fprintf(out, "%-15s %14s %14s %14s %14s %18s %16s %14s\n",
		"", "failover p50", "failover p99", "failover max", ">1 election", "elections/failover", "frames/failover", "cell claim p50")
	for _, s := range sums {
		claim := "-"
		if len(s.Claim) > 0 {
			claim = ms(percentile(s.Claim, 50)) + "ms"
		}
		fmt.Fprintf(out, "%-15s %12sms %12sms %12sms %8d/%-5d %18.2f %16.1f %14s\n",
			fmt.Sprintf("shortcut=%t", s.Shortcut),
			ms(percentile(s.Failover, 50)), ms(percentile(s.Failover, 99)), ms(s.Failover[len(s.Failover)-1]),
			s.MultiRound, s.Trials, float64(s.Campaigns)/float64(s.Trials), float64(s.Frames)/float64(s.Trials), claim)
	}
	for _, s := range sums {
		if s.HolderKilled > 0 {
			fmt.Fprintf(out, "shortcut=%t: %d of %d victims held the cell; their failover p50 %sms, max %sms; the first claimer led %d times\n",
				s.Shortcut, s.HolderKilled, s.Trials, ms(percentile(s.HolderFailover, 50)), ms(s.HolderFailover[len(s.HolderFailover)-1]), s.NewHolderLed)
		}
	}
	fmt.Fprintln(out, "failover: from the SIGKILL to a new leader followed by a majority, as the parent's subscriptions saw it;")
	fmt.Fprintln(out, "frames: sent by the survivors from the kill until all follow the new leader, less those sent to the parent.")
	fmt.Fprintln(out, "One machine, other work running: the figures carry its noise.")
	return nil
}
