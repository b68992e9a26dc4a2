package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/observer"
	"github.com/regent-go/regent/testing/loopback"
)

const scaleSynopsis = `bench scale [flags]

Runs many 5-member clusters spread over 5 nodes in this process (one member of
every cluster on every node) and reports, for each number of clusters and
with heartbeat coalescing off and on (--coalescing both, the default, runs the
two back to back so their ratio is fair on a shared machine):

  settled    once every cluster has a leader, how long elections go on: the
             time to the last one before a quiet spell with none (4 election
             timeouts, at least 2 s); the window starts after that spell
  CPU        the process's CPU time over a steady window, as a share of one
             core, and per cluster (microseconds of CPU per second)
  floor      the CPU share of the window's frames alone, measured once the
             row's nodes have stopped: per tick as many beats between the
             same number of nodes, each answered at once, of the same mean
             size, over loopback TCP between plain goroutines (one ticker
             per beating node, one reader per connection); CPU over floor is
             what the runtime, the coalescer and the election add
  msgs/s     messages per second into a member's mailbox (timer firings,
             protocol messages, coalesced entries), averaged over the
             members: each may wake it; unlike CPU, the machine's load
             barely moves it
  frames/s   frames per second per node pair: every node's frames out over
  KB/s       the window, summed, divided by the number of node pairs
             n(n-1)/2 (both directions of a pair together); KB/s likewise
             with bytes
  heap       heap in use per member, once the clusters are quiet (settled);
             "-" below 500 members, where the runtime's own heap moves by
             more than the members weigh
  campaigns  elections started per minute during the window (the target is 0)
  failover   the time from a fault to a new leader recognised by a majority,
             p50 and p99 over --failovers trials, measured on one cluster
             while all the others run, and beside it the same on that one
             cluster alone (5 fresh nodes, nothing else running). The fault
             is --failover-case: process-kill kills the cluster's leader
             process (its peers see the real reason), node-kill stops the
             node of the cluster's leader abruptly and times every cluster
             that lost its leader with it; between trials the node restarts
             and every cluster takes it back in
  CPU per    with node-kill, the process's CPU from the kill until every
  failover   cluster that lost its leader has a new one, per such cluster;
  p50 work   the time the process's CPUs need for half of a kill's
             failovers at that cost (medians over the trials)
  node down  with node-kill, the CPU share over 2 s once the first trial's
             clusters have new leaders, the node still down and its members
             still in every view: what losing a node costs the survivors

Examples:
  regent bench scale
  regent bench scale --clusters 1000 --window 60s --coalescing on
  regent bench scale --clusters 10000 --window 60s --failovers 0 --ramp 1000
  regent bench scale --clusters 1000 --election-min 1000 --election-max 2000 --heartbeat 300`

// scaleRow is one measured number of clusters in one coalescing mode.
type scaleRow struct {
	Clusters      int           `json:"clusters"`
	Coalescing    bool          `json:"coalescing"`
	Actors        int           `json:"actors"`
	Nodes         int           `json:"nodes"`
	ElectionMinMS int           `json:"election_timeout_min_ms"`
	ElectionMaxMS int           `json:"election_timeout_max_ms"`
	HeartbeatMS   int           `json:"heartbeat_interval_ms"`
	Spawn         time.Duration `json:"spawn_ns"`
	AllLeaders    time.Duration `json:"all_leaders_ns"`
	// Settled is how long after AllLeaders the last election started
	// before a quiet spell (settleQuiet) with none; Unsettled says none came
	// within --settle-max, and the window then began anyway.
	Settled   time.Duration `json:"settled_ns"`
	Unsettled bool          `json:"unsettled,omitempty"`
	// Stall is --stall; StallCampaigns the elections started from the
	// stall until a quiet spell (settleQuiet); StallRecovered how long
	// after the stall's end the last of them came; StallUnrecovered that no
	// quiet spell came within --settle-max.
	Stall            time.Duration `json:"stall_ns,omitempty"`
	StallCampaigns   uint64        `json:"stall_elections,omitempty"`
	StallRecovered   time.Duration `json:"stall_recovered_ns,omitempty"`
	StallUnrecovered bool          `json:"stall_unrecovered,omitempty"`
	Window           time.Duration `json:"window_ns"`
	// Observer says the observer sampled the first node from the window on
	// (--observer).
	Observer bool    `json:"observer,omitempty"`
	CPUShare float64 `json:"cpu_share_of_one_core"`
	// IdleFloor is the CPU share of the window's frames alone: the same
	// number per tick, of the same mean size, between goroutines over
	// loopback TCP, measured once the row's nodes are stopped (scalefloor.go).
	IdleFloor float64 `json:"idle_floor_cpu_share"`
	// CPUPerCluster is CPU time per cluster per second of the window, in µs.
	CPUPerCluster float64 `json:"cpu_us_per_cluster_second"`
	HeapPerActor  float64 `json:"heap_bytes_per_member,omitempty"`
	// FramesPerPair and BytesPerPair are per second per node pair: the
	// frames (bytes) every node sent, summed, over n(n-1)/2 pairs.
	FramesPerPair float64 `json:"frames_per_second_per_node_pair"`
	BytesPerPair  float64 `json:"bytes_per_second_per_node_pair"`
	FramesPerSec  float64 `json:"frames_per_second"`
	Leaderless    int     `json:"clusters_without_leader_at_deadline"`
	Campaigns     uint64  `json:"elections_started_in_window"`
	CampaignsMin  float64 `json:"elections_started_per_minute"`
	LeaderChanges uint64  `json:"leaderships_won_in_window"`
	Goroutines    int     `json:"goroutines"`
	// MemberMessages is the messages a member's mailbox took per second
	// (timer firings, protocol messages, coalesced entries), averaged over
	// the members: each may wake it, so it sizes the runtime's work apart
	// from the machine's noise.
	MemberMessages float64 `json:"member_messages_per_second"`
	// Coalescer sums the nodes' coalescer counters over the window.
	Coalescer leader.CoalescerStats `json:"coalescer"`
	// Failover is the failover time of a cluster among all the others;
	// FailoverAlone the same on one cluster running alone.
	FailoverCase  string  `json:"failover_case,omitempty"`
	Failover      summary `json:"failover_ns"`
	FailoverAlone summary `json:"failover_alone_ns"`
	// NodeDownCPU is, for node-kill trials, the process's CPU share over
	// nodeDownSpan from the first trial's last failover, its node still
	// down: what losing a node costs the survivors while its members stay
	// in the views (GhostTTL).
	NodeDownCPU float64 `json:"node_down_cpu_share,omitempty"`
	// FailoverCPU is, for node-kill, the process's CPU from the kill until
	// every cluster that lost its leader had a new one, per such cluster
	// (median over the trials): what a failover costs among all the
	// others, its share of the loss's other work included.
	FailoverCPU time.Duration `json:"failover_cpu_per_failover_ns,omitempty"`
	// FailoverWork is, for node-kill, the median over the trials of the
	// time the process's CPUs need for half the trial's failovers at
	// FailoverCPU each: ceil(hit/2) × FailoverCPU / GOMAXPROCS. The median
	// failover against it says how much of that wait is the work itself:
	// only cheaper failovers, or less of the loss's other work, go below.
	FailoverWork time.Duration `json:"failover_work_p50_ns,omitempty"`
	// OthersReElected is, for each node-kill trial, how many clusters whose
	// leader was elsewhere had a new term by the time elections had stopped:
	// what the loss cost the clusters it did not touch (0 is the target).
	OthersReElected []int `json:"node_kill_others_reelected,omitempty"`
	// KillCoalescer is, for each node-kill trial, what the survivors'
	// coalescers counted from the kill until elections had stopped: how
	// many leaders were unpaired and paired again, bindings ended, members
	// woken by a silent pair (PairBarked), beside OthersReElected.
	KillCoalescer []leader.CoalescerStats `json:"node_kill_coalescer,omitempty"`
	// FailoverError says why the failover trials stopped early (a cluster
	// that found no new leader in time is a finding, not a failed run).
	FailoverError string `json:"failover_error,omitempty"`
}

// scaleConfig is the command line of bench scale.
type scaleConfig struct {
	clusters     intsFlag
	modes        []bool // coalescing off, on, or both in that order
	window       time.Duration
	settleMax    time.Duration
	stall        time.Duration
	nodes        int
	timings      scaleTimings
	failovers    int
	failoverCase string
	// ramp, when above zero, starts the clusters that many at a time,
	// each wave once the one before has its leaders; zero starts them all
	// at once (a cold start).
	ramp int
	// observe runs the observer on the first node from the window on, as
	// an operator watching the node would.
	observe bool
}

func runScale(ctx context.Context, args []string, env *environment) (err error) {
	cfg := scaleConfig{clusters: intsFlag{10, 100, 1000}}
	var (
		asJSON     bool
		noProgress bool
		trace      time.Duration
		coalescing string
		profile    string
	)
	fs := newFlags(env, "bench scale", scaleSynopsis)
	fs.Var(&cfg.clusters, "clusters", "numbers of clusters to measure, comma-separated (10,000 takes minutes; ask for it)")
	fs.DurationVar(&cfg.window, "window", 30*time.Second, "steady-state window over which CPU, traffic and spurious elections are counted")
	fs.DurationVar(&cfg.settleMax, "settle-max", 3*time.Minute, "once every cluster has a leader, wait at most this long for a quiet spell with no election (see \"settled\") before the window, and as long after --stall; 0: do not wait")
	fs.DurationVar(&cfg.stall, "stall", 0, "after the window, keep every CPU busy with other goroutines for this long (a noisy neighbour, a long collection) and count the elections it sets off until the clusters are quiet again (0: no stall)")
	fs.IntVar(&cfg.nodes, "nodes", 5, "nodes (and members per cluster)")
	fs.IntVar(&cfg.timings.eMin, "election-min", leader.DefaultElectionTimeoutMin, "ElectionTimeoutMin of every member, ms")
	fs.IntVar(&cfg.timings.eMax, "election-max", leader.DefaultElectionTimeoutMax, "ElectionTimeoutMax of every member, ms")
	fs.IntVar(&cfg.timings.hb, "heartbeat", leader.DefaultHeartbeatInterval, "HeartbeatInterval of every member, ms")
	fs.StringVar(&coalescing, "coalescing", "both", "heartbeat coalescing: on, off, or both (off then on, back to back)")
	fs.IntVar(&cfg.failovers, "failovers", 10, "failover trials per row after the window (0: none)")
	fs.StringVar(&cfg.failoverCase, "failover-case", "process-kill", "the fault of a failover trial: process-kill or node-kill")
	fs.IntVar(&cfg.ramp, "ramp", 0, "start the clusters this many at a time, each wave once the one before has its leaders (0: all at once, a cold start); \"all leaders ms\" then covers every wave")
	fs.BoolVar(&cfg.observe, "observer", false, "run the observer (observer.NewHandler, sampling at its default interval) on the first node from the window to the row's end, as an operator watching the node would: its reading counts in the CPU, and in the failovers' load")
	fs.BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	fs.BoolVar(&noProgress, "no-progress", false, "never draw the progress bar")
	fs.DurationVar(&trace, "trace", 0, "print a line to stderr this often, from the first spawn to the last failover trial: clusters with a leader, CPU, campaigns, the campaign gate, GC, every gate counter that moved, and until the failovers every coalescer and pair beat counter that moved (0: none)")
	fs.StringVar(&profile, "profile", "", "write CPU and blocking profiles of the run to PREFIX.cpu.pprof and PREFIX.block.pprof, and the heap after the first row settles to PREFIX.heap.pprof")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	switch coalescing {
	case "on":
		cfg.modes = []bool{true}
	case "off":
		cfg.modes = []bool{false}
	case "both":
		cfg.modes = []bool{false, true}
	default:
		return usageError("--coalescing %q: on, off or both", coalescing)
	}
	if cfg.failoverCase != "process-kill" && cfg.failoverCase != "node-kill" {
		return usageError("--failover-case %q: process-kill or node-kill", cfg.failoverCase)
	}
	if cfg.nodes < 3 {
		return usageError("--nodes %d: a cluster needs at least 3 members", cfg.nodes)
	}
	if cfg.ramp < 0 {
		return usageError("--ramp %d: a number of clusters, or 0", cfg.ramp)
	}
	if cfg.failovers < 0 {
		return usageError("--failovers must not be negative")
	}
	if cfg.settleMax < 0 {
		return usageError("--settle-max must not be negative")
	}
	if cfg.stall < 0 {
		return usageError("--stall must not be negative")
	}
	var heapProfile string
	if profile != "" {
		heapProfile = profile + ".heap.pprof"
		stop, err := startProfiles(profile)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stop()) }()
	}
	alone := map[bool]summary{}
	var rows []scaleRow
	for _, c := range cfg.clusters {
		for _, on := range cfg.modes {
			prog := newProgress(env.stderr, c, noProgress)
			run := &scaleRun{cfg: cfg, clusters: c, coalesce: on, prog: prog, heapProfile: heapProfile, trace: trace, traceTo: env.stderr}
			row, err := run.measure(ctx)
			prog.finish()
			if err == nil {
				row.IdleFloor, err = idleFloor(ctx, row, cfg.nodes, time.Duration(cfg.timings.hb)*time.Millisecond, cfg.window)
			}
			if err != nil {
				return fmt.Errorf("%d clusters, coalescing %s: %w", c, onOff(on), err)
			}
			heapProfile = ""
			if cfg.failovers > 0 {
				if _, done := alone[on]; !done {
					one := &scaleRun{cfg: cfg, clusters: 1, coalesce: on, prog: newProgress(env.stderr, 1, true)}
					if alone[on], err = one.failoverAlone(ctx); err != nil {
						return fmt.Errorf("one cluster alone, coalescing %s: %w", onOff(on), err)
					}
				}
				row.FailoverAlone = alone[on]
			}
			rows = append(rows, row)
		}
	}
	if asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	return writeScaleTable(env, cfg, rows)
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func writeScaleTable(env *environment, cfg scaleConfig, rows []scaleRow) error {
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	stallColumn := ""
	if cfg.stall > 0 {
		stallColumn = fmt.Sprintf("stall %s: elections, quiet after ms\t", cfg.stall)
	}
	nodeKill := cfg.failoverCase == "node-kill" && cfg.failovers > 0
	downColumn := ""
	if nodeKill {
		downColumn = "CPU ms per failover\tp50 work ms\tCPU % node down\tothers re-elected per kill\t"
	}
	fmt.Fprintln(tw, "clusters\tcoalescing\tall leaders ms\tsettled ms\tCPU % of a core\tfloor %\tCPU µs/s per cluster\tmsgs/s per member\tframes/s per pair\tKB/s per pair\theap B/member\tcampaigns/min\t"+stallColumn+"failover p50/p99 ms\talone p50/p99 ms\t"+downColumn)
	for _, r := range rows {
		all := ms(r.AllLeaders)
		if r.Leaderless > 0 {
			all = fmt.Sprintf("%d leaderless", r.Leaderless)
		}
		settled := ms(r.Settled)
		if r.Unsettled {
			settled = "not in " + cfg.settleMax.String()
		}
		stalled := ""
		switch {
		case cfg.stall == 0:
		case r.Stall == 0:
			stalled = "-\t"
		case r.StallUnrecovered:
			stalled = fmt.Sprintf("%d, not in %s\t", r.StallCampaigns, cfg.settleMax)
		default:
			stalled = fmt.Sprintf("%d, %s\t", r.StallCampaigns, ms(r.StallRecovered))
		}
		fo, alone := "-", "-"
		if r.Failover.N > 0 {
			fo = ms(r.Failover.P50) + " / " + ms(r.Failover.P99)
		}
		if r.FailoverError != "" {
			fo = fmt.Sprintf("stopped after %d", r.Failover.N)
		}
		if r.FailoverAlone.N > 0 {
			alone = ms(r.FailoverAlone.P50) + " / " + ms(r.FailoverAlone.P99)
		}
		down := ""
		if nodeKill {
			down = "-\t-\t"
			if r.FailoverCPU > 0 {
				down = fmt.Sprintf("%.2f\t%s\t", float64(r.FailoverCPU)/1e6, ms(r.FailoverWork))
			}
			if r.NodeDownCPU > 0 {
				down += fmt.Sprintf("%.1f\t", 100*r.NodeDownCPU)
			} else {
				down += "-\t"
			}
			down += othersColumn(r.OthersReElected) + "\t"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.1f\t%.2f\t%.0f\t%.1f\t%.0f\t%.1f\t%s\t%.1f\t%s%s\t%s\t%s\n", r.Clusters, onOff(r.Coalescing), all, settled,
			100*r.CPUShare, 100*r.IdleFloor, r.CPUPerCluster, r.MemberMessages, r.FramesPerPair, r.BytesPerPair/1000, heapColumn(r.HeapPerActor), r.CampaignsMin, stalled, fo, alone, down)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	_, err := fmt.Fprintf(env.stdout, "\n%d nodes, timeouts %d-%d ms, heartbeat %d ms, window %s. Per pair: all nodes' frames (bytes) out, over n(n-1)/2 node pairs.\n"+
		"Settled: after every cluster had a leader, how long until the last election before %s with none; the window starts then.\n"+
		"Campaigns are counted over the window; the target is 0. Failover (%s): from the fault until a majority\n"+
		"recognises a new leader, on one cluster among all the others, and on one cluster alone. Floor: the CPU of the\n"+
		"window's frames alone (as many per tick, of the same mean size, over loopback TCP between goroutines).\n",
		cfg.nodes, cfg.timings.eMin, cfg.timings.eMax, cfg.timings.hb, cfg.window, settleQuiet(cfg.timings), cfg.failoverCase)
	if err == nil && cfg.observe {
		_, err = fmt.Fprintf(env.stdout, "Observer: the observer sampled the first node (every %s; a large node's reading spread over longer, a tenth of the time reading) from the window on.\n", observer.DefaultSampleInterval)
	}
	if err == nil && cfg.stall > 0 {
		_, err = fmt.Fprintf(env.stdout, "Stall: after the window, every CPU kept busy by other goroutines for %s; the elections it set off, and when the last came after it.\n", cfg.stall)
	}
	if err == nil && nodeKill {
		_, err = fmt.Fprintf(env.stdout, "CPU node down: the process's CPU over %s once the first node-kill trial's clusters have new leaders, the node still down.\n"+
			"CPU per failover: the process's CPU from the kill until every cluster that lost its leader had a new one, per such\n"+
			"cluster. P50 work: the time the process's %d CPUs need for half a trial's failovers at that cost (median over\n"+
			"the trials); only cheaper failovers, or less of the loss's other work, bring the median failover below it.\n"+
			"Others re-elected: per kill, the clusters led from another node that had a new term once elections stopped\n"+
			"(mean, max, and in how many kills any); the target is 0.\n", nodeDownSpan, runtime.GOMAXPROCS(0))
	}
	return err
}

// scaleCounters count transitions during the window; members report from
// their own goroutines.
type scaleCounters struct {
	counting  atomic.Bool
	campaigns atomic.Uint64
	leaders   atomic.Uint64
	// allCampaigns counts every election started, in the window or not,
	// for --trace.
	allCampaigns atomic.Uint64
}

func (s *scaleCounters) observe(t leader.Transition, prev view) {
	if t.Role == prev.role {
		return
	}
	if t.Role == "candidate" {
		s.allCampaigns.Add(1)
	}
	if !s.counting.Load() {
		return
	}
	switch t.Role {
	case "candidate":
		s.campaigns.Add(1)
	case "leader":
		s.leaders.Add(1)
	}
}

// scaleTimings are the election timings every member of a scale run uses, in ms.
type scaleTimings struct{ eMin, eMax, hb int }

// scaleRun is one row's run: clusters clusters of nodes members over nodes
// nodes, every member with the same options.
type scaleRun struct {
	cfg         scaleConfig
	clusters    int
	coalesce    bool
	prog        *progress
	heapProfile string

	nodes      *loopback.Cluster
	heapBefore uint64 // heap in use once the nodes run, before any member
	counters   scaleCounters
	recs       []*recorder
	pids       [][]gen.PID // by cluster, then node
	// trace, when above zero, prints a line to traceTo that often from the
	// first spawn to the window's end (scaletrace.go); stopTrace ends it.
	trace     time.Duration
	traceTo   io.Writer
	stopTrace func()
	// failing is set once the failover trials start: they stop and restart
	// nodes, so the trace reads no node's counters from then on. failingMu
	// guards it, and the trace holds it while it reads the counters, so no
	// read is still under way when the first node is killed.
	failingMu sync.Mutex
	failing   bool
	spawned   atomic.Int64 // clusters whose recorder is in recs
	// nodeDownCPU is NodeDownCPU, measured on the first node-kill trial;
	// othersReElected is OthersReElected.
	nodeDownCPU     float64
	othersReElected []int
	killCoalescer   []leader.CoalescerStats // KillCoalescer
	// killWork is, per node-kill trial, how many clusters lost their leader
	// and the process's CPU until all of them had a new one.
	killWork []killWork
}

// killWork is one node-kill trial's work: hit clusters lost their leader,
// and the process spent cpu until every one of them had a new one.
type killWork struct {
	hit int
	cpu time.Duration
}

// failoverWork is FailoverCPU and FailoverWork of the trials in work, on
// cores CPUs.
func failoverWork(work []killWork, cores int) (perFailover, half time.Duration) {
	var per, halves []time.Duration
	for _, w := range work {
		if w.hit > 0 {
			c := w.cpu / time.Duration(w.hit)
			per = append(per, c)
			halves = append(halves, time.Duration((w.hit+1)/2)*c/time.Duration(max(cores, 1)))
		}
	}
	return summarize(per).P50, summarize(halves).P50
}

// options are member i's of cluster k.
func (s *scaleRun) options(k, i int) leader.Options {
	name := clusterName(k)
	o := leader.Options{ClusterID: fmt.Sprintf("scale-%d", k), OnTransition: s.recs[k].record,
		ElectionTimeoutMin: s.cfg.timings.eMin, ElectionTimeoutMax: s.cfg.timings.eMax, HeartbeatInterval: s.cfg.timings.hb,
		DisableHeartbeatCoalescing: !s.coalesce}
	for j := range s.cfg.nodes {
		if j != i {
			o.Bootstrap = append(o.Bootstrap, gen.ProcessID{Name: name, Node: s.nodes.Name(j)})
		}
	}
	return o
}

func clusterName(k int) gen.Atom { return gen.Atom(fmt.Sprintf("c%d", k)) }

// start starts the nodes and every member, and waits until every cluster
// has a leader a majority recognises (or the deadline passes: clusters
// without one are counted, not fatal, as a finding of the benchmark).
func (s *scaleRun) start(ctx context.Context, row *scaleRow) error {
	nodes, err := loopback.Start(loopback.Names("s", s.cfg.nodes), loopback.Options{})
	if err != nil {
		return err
	}
	s.nodes = nodes
	s.connect()
	s.heapBefore = heapInUse()
	s.recs = make([]*recorder, s.clusters)
	s.pids = make([][]gen.PID, s.clusters)
	if s.trace > 0 {
		s.stopTrace = s.startTrace(ctx, s.traceTo, s.trace)
	}
	t0 := time.Now()
	wave := s.clusters
	if s.cfg.ramp > 0 {
		wave = s.cfg.ramp
	}
	for first := 0; first < s.clusters; first += wave {
		last := min(first+wave, s.clusters)
		spawning := time.Now()
		for k := first; k < last; k++ {
			if err := ctx.Err(); err != nil {
				return err // stopped while spawning: thousands of actors take a while
			}
			s.recs[k] = newRecorder(s.counters.observe)
			s.pids[k] = make([]gen.PID, s.cfg.nodes)
			s.spawned.Store(int64(k + 1))
			for i := range s.cfg.nodes {
				if err := s.spawn(ctx, k, i); err != nil {
					return err
				}
			}
		}
		row.Spawn += time.Since(spawning)
		if err := s.waitLeaders(ctx, row, first, last); err != nil {
			return err
		}
		if last < s.clusters {
			if err := s.waitPaired(ctx, last); err != nil {
				return err
			}
		}
	}
	if row.Leaderless == 0 {
		row.AllLeaders = time.Since(t0)
	}
	return nil
}

// waitLeaders waits until the clusters [first, last) each have a leader a
// majority recognises, or a deadline passes; those without one are
// counted in row.Leaderless.
func (s *scaleRun) waitLeaders(ctx context.Context, row *scaleRow, first, last int) error {
	wctx, cancel := context.WithTimeout(ctx, settleTimeout+time.Duration(last-first)*20*time.Millisecond)
	defer cancel()
	for _, rec := range s.recs[first:last] {
		if _, err := rec.waitAgreed(wctx, 0, gen.PID{}, s.quorum()); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			row.Leaderless++
			continue
		}
		s.prog.step(fmt.Sprintf("%d clusters electing (coalescing %s)", s.clusters, onOff(s.coalesce)))
	}
	return nil
}

// waitPaired waits, with coalescing on, until n leaders are paired (their
// ticks beaten by their node's pair beats, rule 8 of the coalescer): a
// wave's clusters cost what uncoalesced ones do until then, so the next
// wave starts on a steady base. It gives up after a while: a wave whose
// leaders do not all pair is slower to measure, not wrong.
func (s *scaleRun) waitPaired(ctx context.Context, n int) error {
	if !s.coalesce {
		return nil
	}
	deadline := time.Now().Add(settleTimeout)
	for time.Now().Before(deadline) {
		_, c := s.traffic()
		if c.Paired-c.Unpaired >= uint64(n) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// connect opens every node's connection to every other (a message to a
// name nobody holds does), so that their buffers are not counted as the
// members' heap; it waits until each node sees all the others, or a while.
func (s *scaleRun) connect() {
	ns := s.nodes.Nodes()
	for _, a := range ns {
		for _, b := range ns {
			if a != b {
				_ = a.Send(gen.ProcessID{Name: "regent.scale.connect", Node: b.Name()}, "")
			}
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, n := range ns {
		for len(n.Network().Nodes()) < len(ns)-1 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func (s *scaleRun) spawn(ctx context.Context, k, i int) error {
	pid, err := spawnMember(ctx, s.nodes.Node(i), clusterName(k), s.options(k, i))
	if err != nil {
		return err
	}
	s.pids[k][i] = pid
	return nil
}

func (s *scaleRun) quorum() int { return s.cfg.nodes/2 + 1 }

func (s *scaleRun) close() {
	if s.nodes != nil {
		s.nodes.Close()
	}
}

// measure runs the row: start, settle, the steady window, then the failovers.
func (s *scaleRun) measure(ctx context.Context) (scaleRow, error) {
	row := scaleRow{Clusters: s.clusters, Coalescing: s.coalesce, Actors: s.clusters * s.cfg.nodes, Nodes: s.cfg.nodes,
		ElectionMinMS: s.cfg.timings.eMin, ElectionMaxMS: s.cfg.timings.eMax, HeartbeatMS: s.cfg.timings.hb}
	defer s.close()
	defer s.endTrace() // before the nodes close: it reads their counters
	if err := s.start(ctx, &row); err != nil {
		return row, err
	}
	if err := s.settle(ctx, &row); err != nil {
		return row, err
	}
	// Measured for every row, so that every window starts after the same
	// collection; shown from heapResolvedFrom members.
	heap := heapInUse()
	if row.Actors >= heapResolvedFrom {
		row.HeapPerActor = float64(int64(heap)-int64(s.heapBefore)) / float64(row.Actors)
	}
	if s.heapProfile != "" {
		if err := writeHeapProfile(s.heapProfile); err != nil {
			return row, err
		}
	}
	row.Goroutines = runtime.NumGoroutine()

	if s.cfg.observe {
		row.Observer = true
		h := observer.NewHandler(s.nodes.Node(0))
		defer h.Close()
	}
	s.counters.counting.Store(true)
	cpu0, err := cpuTime()
	if err != nil {
		return row, err
	}
	net0, coal0 := s.traffic()
	in0 := s.memberMessages()
	w0 := time.Now()
	select {
	case <-ctx.Done():
		return row, ctx.Err()
	case <-time.After(s.cfg.window):
	}
	wall := time.Since(w0)
	cpu1, err := cpuTime()
	if err != nil {
		return row, err
	}
	net1, coal1 := s.traffic()
	in1 := s.memberMessages()
	s.counters.counting.Store(false)
	pairs := float64(s.cfg.nodes*(s.cfg.nodes-1)) / 2
	row.Window = wall
	row.CPUShare = float64(cpu1-cpu0) / float64(wall)
	row.CPUPerCluster = row.CPUShare * 1e6 / float64(s.clusters)
	row.FramesPerSec = float64(net1.FramesOut-net0.FramesOut) / wall.Seconds()
	row.FramesPerPair = row.FramesPerSec / pairs
	row.BytesPerPair = float64(net1.BytesOut-net0.BytesOut) / wall.Seconds() / pairs
	row.Coalescer = coal1.Since(coal0)
	row.MemberMessages = float64(in1-in0) / wall.Seconds() / float64(row.Actors)
	row.Campaigns = s.counters.campaigns.Load()
	row.CampaignsMin = float64(row.Campaigns) / wall.Minutes()
	row.LeaderChanges = s.counters.leaders.Load()
	if err := s.stall(ctx, &row); err != nil {
		return row, err
	}
	s.failingMu.Lock()
	s.failing = true
	s.failingMu.Unlock()
	if s.cfg.failovers > 0 && row.Leaderless == 0 {
		row.FailoverCase = s.cfg.failoverCase
		if row.Failover, err = s.failovers(ctx); err != nil {
			if ctx.Err() != nil {
				return row, ctx.Err()
			}
			row.FailoverError = err.Error()
		}
		row.NodeDownCPU = s.nodeDownCPU
		row.OthersReElected = s.othersReElected
		row.KillCoalescer = s.killCoalescer
		row.FailoverCPU, row.FailoverWork = failoverWork(s.killWork, runtime.GOMAXPROCS(0))
	}
	return row, nil
}

// settleQuiet is the spell without any election that counts a run as
// settled: four of the longest election timeouts, and at least two seconds,
// so that a follower whose heartbeats still come late has time to campaign.
func settleQuiet(t scaleTimings) time.Duration {
	return max(2*time.Second, 4*time.Duration(t.eMax)*time.Millisecond)
}

// settle waits, up to --settle-max, until no election has started for
// settleQuiet, and records in row when the last one before that spell
// started. A start that forms every cluster can still churn for a while on
// a loaded machine; the window measures the steady state after it.
func (s *scaleRun) settle(ctx context.Context, row *scaleRow) error {
	if s.cfg.settleMax == 0 || row.Leaderless > 0 {
		return nil
	}
	var err error
	row.Settled, row.Unsettled, err = s.quietAfter(ctx, time.Now(), "settling")
	return err
}

// quietAfter waits, up to --settle-max from start, for settleQuiet without
// any election started, and returns how long after start the last one
// before that spell came, or unsettled when the spell never came.
func (s *scaleRun) quietAfter(ctx context.Context, start time.Time, doing string) (last time.Duration, unsettled bool, err error) {
	quiet := settleQuiet(s.cfg.timings)
	seen, seenAt := s.counters.allCampaigns.Load(), start
	for {
		now := time.Now()
		if n := s.counters.allCampaigns.Load(); n != seen {
			seen, seenAt = n, now
		}
		switch {
		case now.Sub(seenAt) >= quiet:
			return seenAt.Sub(start), false, nil
		case now.Sub(start) >= s.cfg.settleMax:
			return 0, true, nil
		}
		s.prog.say(fmt.Sprintf("%d clusters %s (coalescing %s)", s.clusters, doing, onOff(s.coalesce)))
		select {
		case <-ctx.Done():
			return 0, false, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stall contends every CPU of the process for --stall once the window is
// over, as a noisy neighbour or a long collection would, and counts what
// it set off: the elections started until the clusters are quiet again,
// and how long after the stall the last of them came.
func (s *scaleRun) stall(ctx context.Context, row *scaleRow) error {
	if s.cfg.stall == 0 || row.Leaderless > 0 {
		return nil
	}
	before := s.counters.allCampaigns.Load()
	s.prog.say(fmt.Sprintf("%d clusters stalled (coalescing %s)", s.clusters, onOff(s.coalesce)))
	contend(s.cfg.stall)
	var err error
	row.StallRecovered, row.StallUnrecovered, err = s.quietAfter(ctx, time.Now(), "recovering")
	row.Stall = s.cfg.stall
	row.StallCampaigns = s.counters.allCampaigns.Load() - before
	return err
}

// contend keeps two goroutines per CPU spinning for d, and returns when
// they stop: the scheduler then gives the process's own goroutines about
// a third of the CPU time they had.
func contend(d time.Duration) {
	end := time.Now().Add(d)
	var spinning sync.WaitGroup
	for range 2 * runtime.GOMAXPROCS(0) {
		spinning.Go(func() {
			for time.Now().Before(end) {
			}
		})
	}
	spinning.Wait()
}

// failoverAlone measures failover on this run's one cluster, alone.
func (s *scaleRun) failoverAlone(ctx context.Context) (summary, error) {
	var row scaleRow
	defer s.close()
	if err := s.start(ctx, &row); err != nil {
		return summary{}, err
	}
	if row.Leaderless > 0 {
		return summary{}, fmt.Errorf("one cluster alone elected no leader within %s: %w", settleTimeout, gen.ErrTimeout)
	}
	return s.failovers(ctx)
}

// traffic sums every node's network counters and coalescer counters.
func (s *scaleRun) traffic() (gen.NetworkStats, leader.CoalescerStats) {
	var net gen.NetworkStats
	for _, n := range s.nodes.Nodes() {
		if n == nil {
			continue
		}
		st := n.Network().Stats()
		net.FramesOut += st.FramesOut
		net.BytesOut += st.BytesOut
	}
	return net, s.coalescers(-1)
}

// coalescers sums the coalescer counters of every running node but the
// one at index skip (-1: none), as a node-kill trial reads the survivors'
// before and after, its victim gone.
func (s *scaleRun) coalescers(skip int) leader.CoalescerStats {
	coal := leader.CoalescerStats{Dropped: map[string]uint64{}}
	for i, n := range s.nodes.Nodes() {
		if n != nil && i != skip {
			coal = coal.Plus(leader.ReadCoalescer(n))
		}
	}
	return coal
}

// memberMessages sums the messages every member's mailbox has taken. A
// member that has ended counts nothing.
func (s *scaleRun) memberMessages() uint64 {
	var in uint64
	for _, pids := range s.pids {
		for i, pid := range pids {
			if info, err := s.nodes.Node(i).ProcessInfo(pid); err == nil {
				in += info.MessagesIn
			}
		}
	}
	return in
}

// failovers runs the failover trials on cluster 0 and summarises them; on
// an error it summarises the trials done so far.
func (s *scaleRun) failovers(ctx context.Context) (summary, error) {
	var samples []time.Duration
	for range s.cfg.failovers {
		var took []time.Duration
		var err error
		if s.cfg.failoverCase == "node-kill" {
			took, err = s.nodeKill(ctx)
		} else {
			took, err = s.processKill(ctx)
		}
		if err != nil {
			return summarize(samples), err
		}
		samples = append(samples, took...)
	}
	return summarize(samples), nil
}

// steady waits until every member of cluster k follows one leader, then
// until a random phase of the heartbeat cycle well after that election, so
// a fault never strikes just as followers take a new leader's first
// heartbeat (which no real failure does).
func (s *scaleRun) steady(ctx context.Context, k int) (leader.Agreement, error) {
	cur, err := s.agreedByAll(ctx, k)
	if err != nil {
		return cur, err
	}
	hb := time.Duration(s.cfg.timings.hb) * time.Millisecond
	time.Sleep(time.Duration(s.cfg.timings.eMax)*time.Millisecond + rand.N(hb))
	return cur, nil
}

// agreedByAll waits, up to settleTimeout, until every member of cluster k
// follows one leader, and returns that agreement.
func (s *scaleRun) agreedByAll(ctx context.Context, k int) (leader.Agreement, error) {
	wctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	return s.recs[k].waitAgreed(wctx, 0, gen.PID{}, s.cfg.nodes)
}

// steadyLeader waits until cluster 0 is steady and returns its agreed
// leader with the index of the node it runs on.
func (s *scaleRun) steadyLeader(ctx context.Context) (leader.Agreement, int, error) {
	cur, err := s.steady(ctx, 0)
	if err != nil {
		return cur, -1, err
	}
	victim := s.memberIndex(0, cur.LeaderPID)
	if victim < 0 {
		return cur, -1, fmt.Errorf("the agreed leader %s is not a current member: %w", cur.LeaderPID, gen.ErrProcessUnknown)
	}
	return cur, victim, nil
}

// processKill kills cluster 0's leader process, times the majority's
// recognition of a new leader, and respawns the member.
func (s *scaleRun) processKill(ctx context.Context) ([]time.Duration, error) {
	cur, victim, err := s.steadyLeader(ctx)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := s.nodes.Node(victim).Kill(cur.LeaderPID); err != nil {
		return nil, fmt.Errorf("killing %s: %w", cur.LeaderPID, err)
	}
	s.recs[0].forget(cur.LeaderPID)
	next, err := s.waitNewLeader(ctx, 0, cur)
	if err != nil {
		return nil, err
	}
	if err := s.spawn(ctx, 0, victim); err != nil {
		return nil, err
	}
	return []time.Duration{next.At.Sub(t0)}, nil
}

// nodeKill stops the node of cluster 0's leader abruptly, times every
// cluster whose leader was there until a majority recognises a new one,
// then restarts the node and its members.
func (s *scaleRun) nodeKill(ctx context.Context) ([]time.Duration, error) {
	_, victim, err := s.steadyLeader(ctx)
	if err != nil {
		return nil, err
	}
	// The clusters that lose their leader with the node, as their members see it now.
	var hit []int
	var before []leader.Agreement
	others := map[int]uint64{} // the other clusters agreed on a leader: their terms
	for k, rec := range s.recs {
		a, ok, _ := rec.agreed(0, gen.PID{}, s.quorum())
		switch {
		case ok && a.Leader == s.nodes.Name(victim):
			hit = append(hit, k)
			before = append(before, a)
		case ok:
			others[k] = a.Term
		}
	}
	coal0 := s.coalescers(victim)
	c0, err := cpuTime()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	s.nodes.Kill(victim)
	for k := range s.recs {
		s.recs[k].forget(s.pids[k][victim])
	}
	took := make([]time.Duration, len(hit))
	errs := make([]error, len(hit))
	var wg sync.WaitGroup
	for j, k := range hit {
		wg.Go(func() {
			next, err := s.waitNewLeader(ctx, k, before[j])
			took[j], errs[j] = next.At.Sub(t0), err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c1, err := cpuTime()
	if err != nil {
		return nil, err
	}
	s.killWork = append(s.killWork, killWork{hit: len(hit), cpu: c1 - c0})
	if s.nodeDownCPU == 0 {
		c0, err := cpuTime()
		if err != nil {
			return nil, err
		}
		start := time.Now()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(nodeDownSpan):
		}
		c1, err := cpuTime()
		if err != nil {
			return nil, err
		}
		s.nodeDownCPU = float64(c1-c0) / float64(time.Since(start))
	}
	if _, _, err := s.quietAfter(ctx, t0, "losing a node"); err != nil {
		return nil, err
	}
	reElected := 0
	for k, term := range others {
		if a, ok, _ := s.recs[k].agreed(0, gen.PID{}, s.quorum()); !ok || a.Term != term {
			reElected++
		}
	}
	s.othersReElected = append(s.othersReElected, reElected)
	s.killCoalescer = append(s.killCoalescer, s.coalescers(victim).Since(coal0))
	if err := s.nodes.Restart(victim); err != nil {
		return nil, err
	}
	for k := range s.clusters {
		if err := s.spawn(ctx, k, victim); err != nil {
			return nil, err
		}
	}
	// The next trial starts from the steady state this one did: every
	// cluster led with all its members again, then no election for a
	// quiet spell. Timing it amid the restarted node's rejoining would
	// count that churn as the failover's.
	for k := range s.recs {
		if _, err := s.agreedByAll(ctx, k); err != nil {
			return nil, fmt.Errorf("cluster %d after its node's restart: %w", k, err)
		}
	}
	if _, _, err := s.quietAfter(ctx, time.Now(), "recovering from a node kill"); err != nil {
		return nil, err
	}
	return took, nil
}

// heapColumn is the "heap B/member" cell: "-" for a row too small to
// resolve it (heapResolvedFrom).
func heapColumn(perMember float64) string {
	if perMember == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", perMember)
}

// othersColumn is the "others re-elected per kill" cell: the mean over the
// kills, the largest, and in how many kills there were any.
func othersColumn(per []int) string {
	if len(per) == 0 {
		return "-"
	}
	sum, most, any := 0, 0, 0
	for _, n := range per {
		sum += n
		most = max(most, n)
		if n > 0 {
			any++
		}
	}
	return fmt.Sprintf("%.1f, max %d, %d of %d", float64(sum)/float64(len(per)), most, any, len(per))
}

// nodeDownSpan is how long NodeDownCPU is measured: within the default
// GhostTTL, while the lost node's members are still in every view.
const nodeDownSpan = 2 * time.Second

// waitNewLeader waits until a majority of cluster k recognises a leader at
// a term above cur's, other than cur's leader.
func (s *scaleRun) waitNewLeader(ctx context.Context, k int, cur leader.Agreement) (leader.Agreement, error) {
	wctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	return s.recs[k].waitAgreed(wctx, cur.Term, cur.LeaderPID, s.quorum())
}

// memberIndex is the node index of pid in cluster k, or -1.
func (s *scaleRun) memberIndex(k int, pid gen.PID) int {
	for i, p := range s.pids[k] {
		if p == pid {
			return i
		}
	}
	return -1
}

// heapResolvedFrom is the fewest members whose heap the row reports. Below
// it the runtime's own heap (connection buffers grown and given back, spans
// of the nodes' start) moves by more than the members weigh: a row of 5
// members once measured -150 KB each, and one of 50 half as much again as
// one of 5,000.
const heapResolvedFrom = 500

// heapInUse collects garbage and returns the heap in use, in bytes.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// writeHeapProfile writes the heap profile (after a collection) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating the heap profile: %w", err)
	}
	runtime.GC()
	return errors.Join(pprof.Lookup("heap").WriteTo(f, 0), f.Close())
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// startProfiles starts a CPU profile and blocking-event sampling; the
// returned function writes both and stops them.
func startProfiles(prefix string) (func() error, error) {
	cpu, err := os.Create(prefix + ".cpu.pprof")
	if err != nil {
		return nil, fmt.Errorf("creating the CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		return nil, errors.Join(fmt.Errorf("starting the CPU profile: %w", err), cpu.Close())
	}
	runtime.SetBlockProfileRate(int(100 * time.Microsecond))
	return func() error {
		pprof.StopCPUProfile()
		errs := []error{cpu.Close()}
		block, err := os.Create(prefix + ".block.pprof")
		if err != nil {
			return errors.Join(append(errs, fmt.Errorf("creating the block profile: %w", err))...)
		}
		errs = append(errs, pprof.Lookup("block").WriteTo(block, 0), block.Close())
		runtime.SetBlockProfileRate(0)
		return errors.Join(errs...)
	}, nil
}
