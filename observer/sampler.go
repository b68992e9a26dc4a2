package observer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/regent-go/regent/gen"
)

// sample is one published collection: the report, or why it failed, and
// the clusters' timelines up to it; took is how long it took to collect
// (its pauses included), and next how long the sampler waits before the
// following one.
type sample struct {
	seq        uint64
	report     Report
	err        error
	timelines  []Timeline
	took, next time.Duration
}

// samplerShare bounds the share of the time the sampler spends reading. A
// reading inspects every member of every cluster the node takes part in,
// remote ones over the network, and wakes each of them: on a node of a
// thousand clusters a reading takes the better part of a second of CPU,
// and read back to back it held a core and starved the heartbeats of the
// elections it watches (in `regent bench scale --observer`, 1,000 clusters
// at 150/300/50 ms: 1.2 cores, and up to 23,000 elections a minute). So
// once a reading has taken a tenth of the interval, the sampler pauses
// after each further cluster nine times as long as reading it took
// (pauseAfter), which spreads a large reading over time instead of reading
// in one burst; a small node is read in one go, every interval.
const samplerShare = 0.1

// pauseAfter is how long the sampler pauses after reading a cluster that
// took read, when the reading so far (busy, this cluster included) has
// taken more than samplerShare of interval: samplerShare of the time
// reading from then on. It is at most interval, so that a member that
// answers late (waiting costs the node no CPU) delays the reading by its
// own wait, not nine times as long.
func pauseAfter(interval, busy, read time.Duration) time.Duration {
	if float64(busy) <= float64(interval)*samplerShare {
		return 0
	}
	return min(time.Duration(float64(read)*(1-samplerShare)/samplerShare), interval)
}

// sampler collects the node's clusters every interval (a large node's
// reading spread over longer, pauseAfter) on its own goroutine,
// publishes the latest report and the clusters' timelines for the live page
// and the API, and feeds failover durations to the metrics.
type sampler struct {
	node     gen.Node
	interval time.Duration
	metrics  *metrics

	// histories is owned by the run goroutine: each cluster's timeline and
	// failover state.
	histories map[string]*history

	// mu guards latest and changed: run writes them, event streams read them.
	mu     sync.Mutex
	latest sample
	// changed is closed and replaced each time latest is replaced, waking
	// every event stream waiting on it.
	changed chan struct{}

	quit    chan struct{} // closed by close to stop run and every event stream
	stopped chan struct{} // closed when run has returned
	once    sync.Once
}

func newSampler(node gen.Node, interval time.Duration, m *metrics) *sampler {
	s := &sampler{
		node:      node,
		interval:  interval,
		metrics:   m,
		histories: make(map[string]*history),
		changed:   make(chan struct{}),
		quit:      make(chan struct{}),
		stopped:   make(chan struct{}),
	}
	go s.run()
	return s
}

func (s *sampler) run() {
	defer close(s.stopped)
	wait := time.NewTimer(0)
	defer wait.Stop()
	for {
		select {
		case <-wait.C:
		case <-s.quit:
			return
		}
		next, open := s.sampleOnce()
		if !open {
			return
		}
		wait.Reset(next)
	}
}

// pacer spreads one reading over time: after each cluster it pauses as
// pauseAfter says, and it stops the reading once done is closed.
type pacer struct {
	interval time.Duration
	done     <-chan struct{}
	// timer times the pauses; made on the first, reused after.
	timer   *time.Timer
	busy    time.Duration
	stopped bool
}

// pause is collect's pause: it takes a cluster that took read to read.
func (p *pacer) pause(read time.Duration) bool {
	p.busy += read
	d := pauseAfter(p.interval, p.busy, read)
	if d == 0 {
		return true
	}
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d)
	}
	select {
	case <-p.timer.C:
		return true
	case <-p.done:
		p.stopped = true
		return false
	}
}

// paced runs read with a pacer for interval that ctx stops; a reading cut
// short by ctx fails with its error, naming what was read.
func paced[T any](ctx context.Context, interval time.Duration, what string, read func(pause func(time.Duration) bool) (T, error)) (T, error) {
	p := &pacer{interval: interval, done: ctx.Done()}
	defer p.stop()
	v, err := read(p.pause)
	if err == nil && p.stopped {
		err = fmt.Errorf("observer: reading %s: %w", what, ctx.Err())
	}
	return v, err
}

// stop releases the pacer's timer.
func (p *pacer) stop() {
	if p.timer != nil {
		p.timer.Stop()
	}
}

// sampleOnce collects, pausing after each cluster as pauseAfter says,
// publishes the sample and returns how long to wait before the next: the
// rest of the interval, if any. It reports false when the sampler was
// closed meanwhile.
func (s *sampler) sampleOnce() (time.Duration, bool) {
	start := time.Now()
	p := &pacer{interval: s.interval, done: s.quit}
	defer p.stop()
	report, err := collect(s.node, p.pause)
	if p.stopped {
		return 0, false
	}
	if err == nil {
		s.track(report)
	}
	timelines := make([]Timeline, 0, len(s.histories))
	for _, h := range s.histories {
		timelines = append(timelines, h.timeline())
	}
	slices.SortFunc(timelines, func(a, b Timeline) int { return strings.Compare(a.Cluster, b.Cluster) })
	took := time.Since(start)
	next := max(s.interval-took, 0)
	s.mu.Lock()
	s.latest = sample{seq: s.latest.seq + 1, report: report, err: err, timelines: timelines, took: took, next: next}
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	return next, true
}

// current returns the latest sample and a channel closed when a newer one is
// published.
func (s *sampler) current() (sample, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.latest, s.changed
}

// isClosed reports whether close was called.
func (s *sampler) isClosed() bool {
	select {
	case <-s.quit:
		return true
	default:
		return false
	}
}

// close stops sampling and every event stream, and waits for run to return.
func (s *sampler) close() {
	s.once.Do(func() { close(s.quit) })
	<-s.stopped
}

// track feeds one report to each cluster's history, and the failovers it
// ends to the metrics.
func (s *sampler) track(report Report) {
	present := make(map[string]bool, len(report.Clusters))
	for _, c := range report.Clusters {
		present[c.ID] = true
		if c.Error != "" {
			continue // no evidence either way
		}
		h, ok := s.histories[c.ID]
		if !ok {
			h = newHistory(c.ID, c.readAt(report))
			s.histories[c.ID] = h
		}
		if d, ended := h.observe(c.readAt(report), c); ended {
			s.metrics.observeFailover(c.ID, d)
		}
	}
	for id := range s.histories {
		if !present[id] {
			delete(s.histories, id) // the local actor left the cluster
		}
	}
}

// leadership names who leads a cluster and at which term ("node@term",
// comma-joined when several claim it), empty when no answering member leads.
func leadership(c ClusterReport) string {
	var out []string
	for _, m := range c.Members {
		if m.Answered() && m.State == RoleLeader {
			out = append(out, fmt.Sprintf("%s@%d", m.Node, m.Term))
		}
	}
	return strings.Join(out, ",")
}

// failoverTrack follows one cluster's leadership from sample to sample.
type failoverTrack struct {
	// leader is the leadership of the last sample that had one (see
	// leadership); empty until a leader is first seen, so the first election
	// is not counted as a failover.
	leader string
	// lostAt is the time of the first sample without a leader after one was
	// known; zero while a leader is known.
	lostAt time.Time
	// lastAt is the time of the previous sample.
	lastAt time.Time
}

// observe records one sample taken at now with its leadership; it returns the
// failover duration when this sample ends one. A failover that starts and
// ends between two samples (a different leader or term, no leaderless sample
// in between) is recorded as the time between those samples, an upper bound.
func (t *failoverTrack) observe(now time.Time, leader string) (d time.Duration, ended bool) {
	switch {
	case leader != "" && !t.lostAt.IsZero():
		d, ended = now.Sub(t.lostAt), true
		t.lostAt = time.Time{}
	case leader != "" && t.leader != "" && leader != t.leader:
		d, ended = now.Sub(t.lastAt), true
	case leader == "" && t.leader != "" && t.lostAt.IsZero():
		t.lostAt = now
	}
	if leader != "" {
		t.leader = leader
	}
	t.lastAt = now
	return d, ended
}

// readAt is when c was read, or when report began when c does not say.
func (c ClusterReport) readAt(report Report) time.Time {
	if c.ReadAt.IsZero() {
		return report.CollectedAt
	}
	return c.ReadAt
}
