package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/loopback"
)

const scaleSynopsis = `bench scale [flags]

Runs many 5-member clusters spread over 5 nodes in this process (one member of
every cluster on every node) and reports, for each number of clusters: the
time until every cluster has a leader recognised by a majority of its
members (or how many have none by the deadline), then,
over a steady window, the process's CPU time as a share of one core, heap in
use per leader actor, network frames per second, and the elections started
and leaderships changed during the window (the target is none).

Examples:
  regent bench scale --clusters 10,100 --window 10s
  regent bench scale --clusters 1000 --election-min 1000 --election-max 2000 --heartbeat 300`

// scaleRow is one measured number of clusters.
type scaleRow struct {
	Clusters      int           `json:"clusters"`
	Actors        int           `json:"actors"`
	ElectionMinMS int           `json:"election_timeout_min_ms"`
	ElectionMaxMS int           `json:"election_timeout_max_ms"`
	HeartbeatMS   int           `json:"heartbeat_interval_ms"`
	Spawn         time.Duration `json:"spawn_ns"`
	AllLeaders    time.Duration `json:"all_leaders_ns"`
	Window        time.Duration `json:"window_ns"`
	CPUShare      float64       `json:"cpu_share_of_one_core"`
	HeapPerActor  float64       `json:"heap_bytes_per_actor"`
	FramesPerSec  float64       `json:"frames_per_second"`
	Leaderless    int           `json:"clusters_without_leader_at_deadline"`
	Campaigns     uint64        `json:"elections_started_in_window"`
	LeaderChanges uint64        `json:"leaderships_won_in_window"`
	Goroutines    int           `json:"goroutines"`
}

func runScale(ctx context.Context, args []string, env *environment) (err error) {
	clusters := intsFlag{10, 100, 1000}
	var (
		window     time.Duration
		nodes      int
		asJSON     bool
		noProgress bool
		timings    scaleTimings
	)
	fs := newFlags(env, "bench scale", scaleSynopsis)
	fs.Var(&clusters, "clusters", "numbers of clusters to measure, comma-separated")
	fs.DurationVar(&window, "window", 60*time.Second, "steady-state window over which CPU, traffic and spurious elections are counted")
	fs.IntVar(&nodes, "nodes", 5, "nodes (and members per cluster)")
	fs.IntVar(&timings.eMin, "election-min", leader.DefaultElectionTimeoutMin, "ElectionTimeoutMin of every member, ms")
	fs.IntVar(&timings.eMax, "election-max", leader.DefaultElectionTimeoutMax, "ElectionTimeoutMax of every member, ms")
	fs.IntVar(&timings.hb, "heartbeat", leader.DefaultHeartbeatInterval, "HeartbeatInterval of every member, ms")
	fs.BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	fs.BoolVar(&noProgress, "no-progress", false, "never draw the progress bar")
	var profile string
	fs.StringVar(&profile, "profile", "", "write CPU and blocking profiles of the run to PREFIX.cpu.pprof and PREFIX.block.pprof")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if profile != "" {
		stop, err := startProfiles(profile)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stop()) }()
	}
	if nodes < 3 {
		return usageError("--nodes %d: a cluster needs at least 3 members", nodes)
	}
	var rows []scaleRow
	for _, c := range clusters {
		prog := newProgress(env.stderr, c, noProgress)
		row, err := measureScale(ctx, c, nodes, window, timings, prog)
		prog.finish()
		if err != nil {
			return fmt.Errorf("%d clusters: %w", c, err)
		}
		rows = append(rows, row)
	}
	if asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clusters\tactors\tspawn ms\tall leaders ms\tleaderless\twindow s\tCPU % of a core\theap B/actor\tframes/s\tcampaigns\tnew leaders\t")
	for _, r := range rows {
		all := ms(r.AllLeaders)
		if r.Leaderless > 0 {
			all = "not reached"
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%.0f\t%.1f\t%.0f\t%.0f\t%d\t%d\t\n", r.Clusters, r.Actors, ms(r.Spawn), all, r.Leaderless,
			r.Window.Seconds(), 100*r.CPUShare, r.HeapPerActor, r.FramesPerSec, r.Campaigns, r.LeaderChanges)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	_, err = fmt.Fprintf(env.stdout, "\ntimeouts %d-%d ms, heartbeat %d ms; campaigns and new leaders are counted over the window, after every cluster had a leader; the target is 0.\n", timings.eMin, timings.eMax, timings.hb)
	return err
}

// scaleCounters count transitions during the window; members report from
// their own goroutines.
type scaleCounters struct {
	counting  atomic.Bool
	campaigns atomic.Uint64
	leaders   atomic.Uint64
}

func (s *scaleCounters) observe(t leader.Transition, prev view) {
	if !s.counting.Load() || t.Role == prev.role {
		return
	}
	switch t.Role {
	case "candidate":
		s.campaigns.Add(1)
	case "leader":
		s.leaders.Add(1)
	}
}

// measureScale runs clusters clusters of nodeCount members over nodeCount nodes.
// scaleTimings are the election timings every member of a scale run uses, in ms.
type scaleTimings struct{ eMin, eMax, hb int }

func measureScale(ctx context.Context, clusters, nodeCount int, window time.Duration, timings scaleTimings, prog *progress) (scaleRow, error) {
	row := scaleRow{Clusters: clusters, Actors: clusters * nodeCount, Window: window,
		ElectionMinMS: timings.eMin, ElectionMaxMS: timings.eMax, HeartbeatMS: timings.hb}
	cluster, err := loopback.Start(loopback.Names("s", nodeCount), loopback.Options{})
	if err != nil {
		return row, err
	}
	defer cluster.Close()
	ns := cluster.Nodes()
	heapBefore := heapInUse()

	counters := &scaleCounters{}
	recs := make([]*recorder, clusters)
	t0 := time.Now()
	for k := 0; k < clusters; k++ {
		if err := ctx.Err(); err != nil {
			return row, err // stopped while spawning: thousands of actors take a while
		}
		recs[k] = newRecorder(counters.observe)
		name := gen.Atom(fmt.Sprintf("c%d", k))
		for i, n := range ns {
			o := leader.Options{ClusterID: fmt.Sprintf("scale-%d", k), OnTransition: recs[k].record,
				ElectionTimeoutMin: timings.eMin, ElectionTimeoutMax: timings.eMax, HeartbeatInterval: timings.hb}
			for j, other := range ns {
				if j != i {
					o.Bootstrap = append(o.Bootstrap, gen.ProcessID{Name: name, Node: other.Name()})
				}
			}
			if _, err := spawnMember(ctx, n, name, o); err != nil {
				return row, err
			}
		}
	}
	row.Spawn = time.Since(t0)
	// A cluster has a leader once a majority of its members recognise one.
	// Clusters that have none by the deadline are counted, not fatal: that
	// is a finding of the benchmark.
	wctx, cancel := context.WithTimeout(ctx, settleTimeout+time.Duration(clusters)*20*time.Millisecond)
	defer cancel()
	for _, rec := range recs {
		if _, err := rec.waitAgreed(wctx, 0, gen.PID{}, nodeCount/2+1); err != nil {
			if ctx.Err() != nil {
				return row, ctx.Err()
			}
			row.Leaderless++
			continue
		}
		prog.step(fmt.Sprintf("%d clusters electing", clusters))
	}
	if row.Leaderless == 0 {
		row.AllLeaders = time.Since(t0)
	}
	row.HeapPerActor = float64(int64(heapInUse())-int64(heapBefore)) / float64(row.Actors)
	row.Goroutines = runtime.NumGoroutine()

	counters.counting.Store(true)
	cpu0, err := cpuTime()
	if err != nil {
		return row, err
	}
	frames0 := framesOut(ns)
	w0 := time.Now()
	select {
	case <-ctx.Done():
		return row, ctx.Err()
	case <-time.After(window):
	}
	wall := time.Since(w0)
	cpu1, err := cpuTime()
	if err != nil {
		return row, err
	}
	counters.counting.Store(false)
	row.Window = wall
	row.CPUShare = float64(cpu1-cpu0) / float64(wall)
	row.FramesPerSec = float64(framesOut(ns)-frames0) / wall.Seconds()
	row.Campaigns = counters.campaigns.Load()
	row.LeaderChanges = counters.leaders.Load()
	return row, nil
}

// heapInUse collects garbage and returns the heap in use, in bytes.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// framesOut sums the frames every node sent.
func framesOut(ns []gen.Node) uint64 {
	var sum uint64
	for _, n := range ns {
		sum += n.Network().Stats().FramesOut
	}
	return sum
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
