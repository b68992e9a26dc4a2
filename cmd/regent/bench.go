package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/regent-go/regent/act"
	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/loopback"
)

const benchSynopsis = `bench [flags]
       bench scale [flags]

Measures how fast a cluster on loopback TCP gets a leader, for each cluster
size: from a cold start; after the leader's node is killed (StopForce: peers
see the connection drop), with and without fast failover; after only the
leader's process is killed (peers see a real exit reason); after a planned
handover (StepDown); and after the leader is silently cut off (a stalled
proxy). Failover runs from the fault until a majority recognises a new
leader, timed in-process by OnTransition. Each case is printed with
min/p50/p90/p99/max beside a theoretical lower bound and mean/bound.
MinClusterSize is a majority of N, capped at the default 3: a member whose
process ended leaves the view, and 3 members minus one would otherwise sit
below the floor.
"bench scale --help" describes the many-clusters benchmark. Its nodes talk
over loopback with a random cookie of their own.

Examples:
  regent bench --sizes 3,5 --trials 10
  regent bench --cases handover,process-kill --trials 20 --csv`

// benchCase is one kind of measured fault.
type benchCase struct {
	name string
	// what the bound is made of, for the table's footnote
	boundModel string
}

var benchCases = []benchCase{
	{"cold", "E[min of N timeouts] + 2 RTT (prevote, vote)"},
	{"node-kill", "HB/40 (the first-ranked member's expected jitter, below a quarter of HB/5) + 2 RTT (prevote, vote)"},
	{"node-kill-nofast", "E[min of N-1 timeouts] - HB/2 + RTT"},
	{"process-kill", "HB/40 + 1 RTT (fast failover skips the prevote on a real exit)"},
	{"handover", "1.5 RTT (TimeoutNow, then one vote round)"},
	{"partition", "E[min of N-1 timeouts] - HB/2 + RTT"},
}

// benchConfig is the failover benchmark's command line.
type benchConfig struct {
	sizes          intsFlag
	trials         int
	cases          listFlag
	eMin, eMax, hb int
	asJSON, asCSV  bool
	plot           string
	noProgress     bool
}

// benchRow is the result of one case at one size.
type benchRow struct {
	Case       string        `json:"case"`
	Size       int           `json:"size"`
	Summary    summary       `json:"summary_ns"`
	Bound      time.Duration `json:"bound_ns"`
	Ratio      float64       `json:"mean_over_bound"`
	OneRound   float64       `json:"one_round_share"`
	MeanRounds float64       `json:"mean_rounds"`
	// Void counts trials repeated because leadership had already moved
	// before the fault was injected (a busy machine delayed a heartbeat).
	Void    int             `json:"void_trials"`
	Samples []time.Duration `json:"samples_ns"`
	rounds  []uint64
}

// benchResult is the whole run.
type benchResult struct {
	ElectionTimeoutMin int           `json:"election_timeout_min_ms"`
	ElectionTimeoutMax int           `json:"election_timeout_max_ms"`
	HeartbeatInterval  int           `json:"heartbeat_interval_ms"`
	RTT                time.Duration `json:"rtt_ns"`
	Rows               []benchRow    `json:"rows"`
}

func runBench(ctx context.Context, args []string, env *environment) error {
	if len(args) > 0 && args[0] == "scale" {
		return runScale(ctx, args[1:], env)
	}
	cfg := benchConfig{sizes: intsFlag{3, 5, 7}}
	fs := newFlags(env, "bench", benchSynopsis)
	fs.Var(&cfg.sizes, "sizes", "cluster sizes, comma-separated")
	fs.IntVar(&cfg.trials, "trials", 40, "trials per case and size")
	names := make([]string, len(benchCases))
	for i, c := range benchCases {
		names[i] = c.name
	}
	fs.Var(&cfg.cases, "cases", "cases to run, comma-separated (default all: "+strings.Join(names, ",")+")")
	fs.IntVar(&cfg.eMin, "election-min", leader.DefaultElectionTimeoutMin, "ElectionTimeoutMin, ms")
	fs.IntVar(&cfg.eMax, "election-max", leader.DefaultElectionTimeoutMax, "ElectionTimeoutMax, ms")
	fs.IntVar(&cfg.hb, "heartbeat", leader.DefaultHeartbeatInterval, "HeartbeatInterval, ms")
	fs.BoolVar(&cfg.asJSON, "json", false, "print JSON (with every sample) instead of a table")
	fs.BoolVar(&cfg.asCSV, "csv", false, "print CSV instead of a table")
	fs.StringVar(&cfg.plot, "plot", "", "write an SVG plot of the distributions to this file")
	fs.BoolVar(&cfg.noProgress, "no-progress", false, "never draw the progress bar")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if len(cfg.cases) == 0 {
		cfg.cases = names
	}
	for _, c := range cfg.cases {
		if !slices.Contains(names, c) {
			return usageError("unknown case %q (known: %s)", c, strings.Join(names, ", "))
		}
	}
	if cfg.trials < 1 {
		return usageError("--trials must be at least 1")
	}
	for _, n := range cfg.sizes {
		if n < 3 {
			return usageError("--sizes: %d is below the default MinClusterSize 3", n)
		}
	}
	res, err := benchFailover(ctx, cfg, newProgress(env.stderr, len(cfg.sizes)*len(cfg.cases)*cfg.trials, cfg.noProgress))
	if err != nil {
		return err
	}
	if cfg.plot != "" {
		if err := os.WriteFile(cfg.plot, []byte(plotSVG(res)), 0o644); err != nil {
			return fmt.Errorf("writing the plot: %w", err)
		}
	}
	switch {
	case cfg.asJSON:
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	case cfg.asCSV:
		return writeBenchCSV(env, res)
	}
	return writeBenchTable(env, res)
}

// benchFailover runs every case at every size.
func benchFailover(ctx context.Context, cfg benchConfig, prog *progress) (benchResult, error) {
	defer prog.finish()
	res := benchResult{ElectionTimeoutMin: cfg.eMin, ElectionTimeoutMax: cfg.eMax, HeartbeatInterval: cfg.hb}
	rtt, err := measureRTT(ctx, 200)
	if err != nil {
		return res, err
	}
	res.RTT = rtt
	for _, size := range cfg.sizes {
		for _, name := range cfg.cases {
			b := &benchRun{cfg: cfg, size: size, name: name, prog: prog}
			row, err := b.run(ctx)
			if err != nil {
				return res, fmt.Errorf("%s with %d members: %w", name, size, err)
			}
			row.Bound = bound(cfg, name, size, rtt)
			if row.Bound > 0 {
				row.Ratio = float64(row.Summary.Mean) / float64(row.Bound)
			}
			res.Rows = append(res.Rows, row)
		}
	}
	return res, nil
}

// bound is the theoretical lower bound of a case (see benchCases).
func bound(cfg benchConfig, name string, size int, rtt time.Duration) time.Duration {
	msd := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	lo, hi, hb := msd(cfg.eMin), msd(cfg.eMax), msd(cfg.hb)
	switch name {
	case "cold":
		return lo + (hi-lo)/time.Duration(size+1) + 2*rtt
	case "node-kill-nofast", "partition":
		return lo + (hi-lo)/time.Duration(size) - hb/2 + rtt
	case "node-kill":
		return hb/40 + 2*rtt
	case "process-kill":
		return hb/40 + rtt
	case "handover":
		return rtt * 3 / 2
	}
	return 0
}

// errTrialVoid says a failover trial measured nothing: leadership moved by
// itself before the fault. The trial is repeated, up to maxVoidTrials times
// per row, and counted.
var errTrialVoid = errors.New("leadership moved before the fault")

const maxVoidTrials = 20

// benchRun measures one case at one size.
type benchRun struct {
	cfg  benchConfig
	size int
	name string
	prog *progress
	rec  *recorder
	c    *localCluster
}

func (b *benchRun) options() leader.Options {
	return leader.Options{ClusterID: "bench", MinClusterSize: min(b.quorum(), leader.DefaultMinClusterSize), ElectionTimeoutMin: b.cfg.eMin, ElectionTimeoutMax: b.cfg.eMax,
		HeartbeatInterval: b.cfg.hb, DisableFastFailover: b.name == "node-kill-nofast"}
}

func (b *benchRun) quorum() int { return b.size/2 + 1 }

func (b *benchRun) run(ctx context.Context) (benchRow, error) {
	row := benchRow{Case: b.name, Size: b.size}
	for trial := 0; trial < b.cfg.trials; trial++ {
		var took time.Duration
		var rounds uint64
		var err error
		if b.name == "cold" {
			took, rounds, err = b.cold(ctx)
		} else {
			took, rounds, err = b.failover(ctx)
		}
		if errors.Is(err, errTrialVoid) && row.Void < maxVoidTrials {
			row.Void++
			trial--
			continue
		}
		if err != nil {
			return row, errors.Join(err, b.close())
		}
		row.Samples = append(row.Samples, took)
		row.rounds = append(row.rounds, rounds)
		b.prog.step(fmt.Sprintf("%s N=%d", b.name, b.size))
	}
	if err := b.close(); err != nil {
		return row, err
	}
	row.Summary = summarize(row.Samples)
	one, total := 0, uint64(0)
	for _, r := range row.rounds {
		total += r
		if r == 1 {
			one++
		}
	}
	row.OneRound = float64(one) / float64(len(row.rounds))
	row.MeanRounds = float64(total) / float64(len(row.rounds))
	return row, nil
}

func (b *benchRun) close() error {
	if b.c == nil {
		return nil
	}
	err := b.c.stop()
	b.c = nil
	return err
}

// cold starts a fresh cluster's nodes, then its members, and times the
// members' start to a majority's first leader.
func (b *benchRun) cold(ctx context.Context) (time.Duration, uint64, error) {
	b.rec = newRecorder(nil)
	b.c = newLocalCluster(b.size, "c", b.options(), false, b.rec)
	if err := b.c.startNodes(); err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	for i := range b.c.names {
		if err := b.c.spawn(ctx, i); err != nil {
			return 0, 0, err
		}
	}
	a, err := b.wait(ctx, 0, gen.PID{}, b.quorum())
	if err != nil {
		return 0, 0, err
	}
	if _, err := b.wait(ctx, 0, gen.PID{}, b.size); err != nil {
		return 0, 0, err
	}
	rounds := b.c.electionsStarted(-1)
	return a.At.Sub(t0), rounds, b.close()
}

// failover injects the case's fault into a settled cluster (started on first
// use and kept across trials), times the majority's recognition of a new
// leader, then repairs the fault and waits until every member follows again.
func (b *benchRun) failover(ctx context.Context) (time.Duration, uint64, error) {
	if b.c == nil {
		b.rec = newRecorder(nil)
		b.c = newLocalCluster(b.size, "f", b.options(), b.name == "partition", b.rec)
		if err := b.c.start(ctx); err != nil {
			return 0, 0, err
		}
	}
	cur, err := b.wait(ctx, 0, gen.PID{}, b.size)
	if err != nil {
		return 0, 0, err
	}
	victim := b.c.index(cur.LeaderPID)
	if victim < 0 {
		return 0, 0, fmt.Errorf("the agreed leader %s is not a current member: %w", cur.LeaderPID, gen.ErrProcessUnknown)
	}
	before := b.c.electionsStarted(victim)
	// Strike at a random phase of the heartbeat cycle, well after the last
	// election settled: the agreement is seen just as followers take the new
	// leader's first heartbeat, and a fault at that instant would make every
	// follower's last heartbeat brand new, which no real failure does.
	hb := time.Duration(b.cfg.hb) * time.Millisecond
	time.Sleep(time.Duration(b.cfg.eMax)*time.Millisecond + rand.N(hb))
	if _, moved, _ := b.rec.agreed(cur.Term, gen.PID{}, 1); moved {
		return 0, 0, errTrialVoid
	}
	t0 := time.Now()
	switch b.name {
	case "node-kill", "node-kill-nofast":
		b.c.stopNode(victim)
	case "process-kill":
		err = b.c.killMember(victim)
	case "handover":
		if err = leader.StepDownLeader(b.c.node(victim), cur.LeaderPID); errors.Is(err, gen.ErrNotAllowed) {
			return 0, 0, errTrialVoid // it stopped leading since the check above
		}
	case "partition":
		b.c.mesh.Isolate(b.c.names[victim])
	}
	if err != nil {
		return 0, 0, err
	}
	next, err := b.wait(ctx, cur.Term, cur.LeaderPID, b.quorum())
	if err != nil {
		return 0, 0, err
	}
	took := next.At.Sub(t0)
	switch b.name {
	case "node-kill", "node-kill-nofast":
		err = b.c.restart(ctx, victim)
	case "process-kill":
		err = b.c.spawn(ctx, victim)
	case "partition":
		b.c.mesh.Heal()
	}
	if err != nil {
		return 0, 0, err
	}
	if _, err := b.wait(ctx, next.Term-1, gen.PID{}, b.size); err != nil {
		return 0, 0, err
	}
	after := b.c.electionsStarted(victim)
	return took, after - before, nil
}

func (b *benchRun) wait(ctx context.Context, term uint64, not gen.PID, quorum int) (leader.Agreement, error) {
	wctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	return b.rec.waitAgreed(wctx, term, not, quorum)
}

// pingRequest is the round-trip probe's request.
type pingRequest struct{ Seq uint64 }

// echoActor answers every Call with its request.
type echoActor struct{ act.Actor }

func (e *echoActor) HandleCall(_ gen.PID, _ gen.Ref, request any) (any, error) { return request, nil }

// measureRTT starts two nodes and returns the median round trip of samples
// Calls from one to an echo process on the other.
func measureRTT(ctx context.Context, samples int) (time.Duration, error) {
	pair, err := loopback.Start(loopback.Names("rtt", 2), loopback.Options{Types: []any{pingRequest{}}})
	if err != nil {
		return 0, err
	}
	defer pair.Close()
	a, b := pair.Node(0), pair.Node(1)
	if _, err := b.SpawnRegister("echo", func() gen.ProcessBehavior { return &echoActor{} }, gen.ProcessOptions{}); err != nil {
		return 0, fmt.Errorf("spawning the echo process: %w", err)
	}
	target := gen.ProcessID{Name: "echo", Node: b.Name()}
	if _, err := a.Call(target, pingRequest{}); err != nil { // connect and warm up
		return 0, fmt.Errorf("first probe call: %w", err)
	}
	times := make([]time.Duration, 0, samples)
	for i := 0; i < samples; i++ {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		t0 := time.Now()
		if _, err := a.Call(target, pingRequest{Seq: uint64(i)}); err != nil {
			return 0, fmt.Errorf("probe call: %w", err)
		}
		times = append(times, time.Since(t0))
	}
	return summarize(times).P50, nil
}

func writeBenchTable(env *environment, res benchResult) error {
	fmt.Fprintf(env.stdout, "timeouts %d-%d ms, heartbeat %d ms, measured round trip %s ms\n\n",
		res.ElectionTimeoutMin, res.ElectionTimeoutMax, res.HeartbeatInterval, ms(res.RTT))
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tN\ttrials\tmin\tp50\tp90\tp99\tmax\tmean\tbound\tmean/bound\tone round\tcampaigns\t")
	for _, r := range res.Rows {
		s := r.Summary
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.0f%%\t%.2f\t\n", r.Case, r.Size, s.N,
			ms(s.Min), ms(s.P50), ms(s.P90), ms(s.P99), ms(s.Max), ms(s.Mean), ms(r.Bound), r.Ratio, 100*r.OneRound, r.MeanRounds)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	fmt.Fprintln(env.stdout, "\ntimes in ms, from the fault until a majority recognises the new leader. Bounds:")
	for _, c := range benchCases {
		fmt.Fprintf(env.stdout, "  %-17s %s\n", c.name, c.boundModel)
	}
	if _, err := fmt.Fprintln(env.stdout, "one round: share of trials in which exactly one campaign ran; campaigns: mean per trial."); err != nil {
		return err
	}
	for _, r := range res.Rows {
		if r.Void > 0 {
			if _, err := fmt.Fprintf(env.stdout, "%s N=%d: %d trials repeated: leadership moved by itself before the fault (a busy machine?).\n", r.Case, r.Size, r.Void); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeBenchCSV(env *environment, res benchResult) error {
	w := csv.NewWriter(env.stdout)
	rows := [][]string{{"case", "n", "trials", "min_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms", "mean_ms", "bound_ms", "mean_over_bound", "one_round_share", "mean_campaigns", "rtt_ms"}}
	for _, r := range res.Rows {
		s := r.Summary
		rows = append(rows, []string{r.Case, strconv.Itoa(r.Size), strconv.Itoa(s.N), ms(s.Min), ms(s.P50), ms(s.P90), ms(s.P99), ms(s.Max), ms(s.Mean),
			ms(r.Bound), fmt.Sprintf("%.3f", r.Ratio), fmt.Sprintf("%.3f", r.OneRound), fmt.Sprintf("%.3f", r.MeanRounds), ms(res.RTT)})
	}
	if err := w.WriteAll(rows); err != nil {
		return fmt.Errorf("writing CSV: %w", err)
	}
	return nil
}
