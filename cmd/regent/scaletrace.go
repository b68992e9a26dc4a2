package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/regent-go/regent/leader"
)

// scaleTrace prints a line per period while a row runs, from its first
// spawn to its last failover: how many clusters have a leader, what the
// process spends, and what the election and the coalescer did since the
// line before. It is how a formation that stalls, or a storm, is watched
// as it happens rather than read from the row's totals.
type scaleTrace struct {
	w     io.Writer
	every time.Duration
	run   *scaleRun
	done  sync.WaitGroup
}

// traceSample is what one line compares with the line before.
type traceSample struct {
	at        time.Time
	cpu       time.Duration
	campaigns uint64
	numGC     uint32
	gcPause   uint64
	coal      leader.CoalescerStats
	gate      leader.CampaignGateStats
	// withCoal says coal was read: not once the failovers stop nodes.
	withCoal bool
}

// startTrace starts printing s's trace to w every period; stop ends it.
func (s *scaleRun) startTrace(ctx context.Context, w io.Writer, every time.Duration) (stop func()) {
	tctx, cancel := context.WithCancel(ctx)
	t := &scaleTrace{w: w, every: every, run: s}
	t.done.Add(1)
	go t.loop(tctx)
	return func() {
		cancel()
		t.done.Wait()
	}
}

func (t *scaleTrace) loop(ctx context.Context) {
	defer t.done.Done()
	start := time.Now()
	prev := t.sample()
	tick := time.NewTicker(t.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cur := t.sample()
		fmt.Fprintln(t.w, t.line(start, prev, cur))
		prev = cur
	}
}

func (t *scaleTrace) sample() traceSample {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	cpu, _ := cpuTime() // a failed read shows as 0%: the trace is for watching, the row's figures check it
	smp := traceSample{at: time.Now(), cpu: cpu, campaigns: t.run.counters.allCampaigns.Load(),
		numGC: ms.NumGC, gcPause: ms.PauseTotalNs, gate: leader.ReadCampaignGate()}
	t.run.failingMu.Lock()
	if t.run.nodes != nil && !t.run.failing {
		_, smp.coal = t.run.traffic()
		smp.withCoal = true
	}
	t.run.failingMu.Unlock()
	return smp
}

// line is one period: elapsed time, clusters with a leader a majority
// recognises, CPU as a share of one core, campaigns, heap, GC cycles and
// their pause, then every coalescer and pair beat counter that moved
// (until the failovers start) and every gate counter that moved.
func (t *scaleTrace) line(start time.Time, a, b traceSample) string {
	wall := b.at.Sub(a.at)
	led, spawned := t.run.ledClusters()
	var sb strings.Builder
	fmt.Fprintf(&sb, "trace %6.1fs  led %d/%d  cpu %5.1f%%  campaigns %d  gate %d+%d  gc %d (%.1f ms)  goroutines %d",
		b.at.Sub(start).Seconds(), led, spawned, 100*float64(b.cpu-a.cpu)/float64(wall), b.campaigns-a.campaigns,
		b.gate.Holding, b.gate.Queued, b.numGC-a.numGC, float64(b.gcPause-a.gcPause)/1e6, runtime.NumGoroutine())
	moved := map[string]uint64{}
	if a.withCoal && b.withCoal {
		d := b.coal.Since(a.coal)
		moved = map[string]uint64{
			"entries_out": d.EntriesOut, "entries_in": d.EntriesIn, "deliveries": d.Deliveries, "held": d.Held,
			"answered": d.Answered, "failed_frames": d.FailedFrames,
		}
		for k, v := range d.PairEvents() {
			moved["pair_"+k] = v
		}
		for r, v := range d.Dropped {
			moved["dropped_"+r] = v
		}
	}
	ga, gb := a.gate.Counts(), b.gate.Counts()
	for k, v := range gb {
		moved["gate_"+k] = v - ga[k]
	}
	keys := make([]string, 0, len(moved))
	for k, v := range moved {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&sb, "  %s %d", k, moved[k])
	}
	return sb.String()
}

// ledClusters counts the clusters spawned so far and those of them with a
// leader a majority recognises.
func (s *scaleRun) ledClusters() (led, spawned int) {
	spawned = int(s.spawned.Load())
	for _, rec := range s.recs[:spawned] {
		if rec.led(s.quorum()) {
			led++
		}
	}
	return led, spawned
}

// endTrace stops the trace, if it runs.
func (s *scaleRun) endTrace() {
	if s.stopTrace != nil {
		s.stopTrace()
		s.stopTrace = nil
	}
}
