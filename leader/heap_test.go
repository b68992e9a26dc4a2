package leader_test

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/loopback"
)

var (
	heapClusters = flag.Int("heap.clusters", 200, "BenchmarkHeapPerMember: clusters to start")
	heapNodes    = flag.Int("heap.nodes", 5, "BenchmarkHeapPerMember: nodes, and members per cluster")
	heapTimings  = flag.String("heap.timings", "2000,4000,500", "BenchmarkHeapPerMember: ElectionTimeoutMin, ElectionTimeoutMax and HeartbeatInterval in ms; slower than the defaults, so that a loaded machine elects without churn and the figures are the members' own")
	heapSettle   = flag.Duration("heap.settle", 2*time.Second, "BenchmarkHeapPerMember: how long the clusters run once all have a leader, before the heap is read")
	heapProfile  = flag.String("heap.profile", "", "BenchmarkHeapPerMember: write the heap profile, to this file once every cluster has a leader (with -memprofilerate=1 every allocation is sampled)")
)

// quietMember is a member with nothing to do but take part: its callbacks
// do not log, so the measured heap is the election's own.
type quietMember struct {
	leader.Actor
	opts leader.Options
}

func (m *quietMember) Init(args ...any) (leader.Options, error) { return m.opts, nil }
func (m *quietMember) HandleBecomeLeader() error                { return nil }
func (m *quietMember) HandleBecomeFollower(gen.PID) error       { return nil }

// heapLeaders records each member's latest reported leader and term, to
// tell when every cluster has one a majority follows. The lock guards seen;
// members report from their own goroutines. It keeps the two fields it
// reads, not the Transition: its View's members would be counted as the
// member's heap.
type heapLeaders struct {
	mu   sync.Mutex
	seen [][]heapBelief // by cluster, then member
}

// heapBelief is a member's latest reported leader and term.
type heapBelief struct {
	Leader gen.PID
	Term   uint64
}

func (h *heapLeaders) record(k, i int) func(leader.Transition) {
	return func(t leader.Transition) {
		h.mu.Lock()
		h.seen[k][i] = heapBelief{Leader: t.Leader, Term: t.Term}
		h.mu.Unlock()
	}
}

// led counts the clusters where a majority reports one leader in one term.
func (h *heapLeaders) led() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, members := range h.seen {
		for _, a := range members {
			if a.Leader == (gen.PID{}) {
				continue
			}
			agree := 0
			for _, b := range members {
				if b.Leader == a.Leader && b.Term == a.Term {
					agree++
				}
			}
			if agree > len(members)/2 {
				n++
				break
			}
		}
	}
	return n
}

// heapInuse is the heap in use after two collections.
func heapInuse() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// BenchmarkHeapPerMember measures the heap an election member holds. It
// starts -heap.clusters clusters of -heap.nodes members over as many
// in-process nodes (one member of every cluster on every node, heartbeat
// coalescing on, as `regent bench scale` does, with the timings of
// -heap.timings), waits until every cluster has a leader a majority follows
// and -heap.settle more, and reports the heap in use and allocated, and the
// live objects, per member, over those of the connected nodes alone. With
// -heap.profile it writes the heap profile of that moment (pprof
// -sample_index=inuse_space), and the same name with ".before" that of the
// connected nodes alone (for pprof -diff_base); -memprofilerate=1 samples
// every allocation. Each run, once its nodes stop, waits until every member
// it started is collected (and fails if one outlives its node by 30s), so
// that with -count N every run reads its heap from the same start. Run it
// with -benchtime=1x:
//
//	go test ./leader -run '^$' -bench HeapPerMember -benchtime=1x -memprofilerate=1 -heap.profile=/tmp/heap.pprof
func BenchmarkHeapPerMember(b *testing.B) {
	for b.Loop() {
		clusters, size := *heapClusters, *heapNodes
		var eMin, eMax, hb int
		if _, err := fmt.Sscanf(*heapTimings, "%d,%d,%d", &eMin, &eMax, &hb); err != nil {
			b.Fatalf("-heap.timings %q: %v", *heapTimings, err)
		}
		nodes, err := loopback.Start(loopback.Names("heap", size), loopback.Options{})
		if err != nil {
			b.Fatal(err)
		}
		// Connect every pair first, so the connections' buffers are not
		// counted as the members'.
		for _, x := range nodes.Nodes() {
			for _, y := range nodes.Nodes() {
				if x != y {
					_ = x.Send(gen.ProcessID{Name: "heap.connect", Node: y.Name()}, "")
				}
			}
		}
		for _, x := range nodes.Nodes() {
			for deadline := time.Now().Add(5 * time.Second); len(x.Network().Nodes()) < size-1 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
		}
		// Who the run started, to tell when they are gone: made before the
		// heap is first read, so it counts on both sides.
		spawned := make([]*quietMember, clusters*size)
		before := heapInuse()
		if *heapProfile != "" {
			if err := writeProfile(*heapProfile + ".before"); err != nil {
				nodes.Close()
				b.Fatal(err)
			}
		}

		h := &heapLeaders{seen: make([][]heapBelief, clusters)}
		for k := range clusters {
			h.seen[k] = make([]heapBelief, size)
			name := gen.Atom(fmt.Sprintf("c%d", k))
			for i := range size {
				o := leader.Options{ClusterID: fmt.Sprintf("heap-%d", k), OnTransition: h.record(k, i),
					ElectionTimeoutMin: eMin, ElectionTimeoutMax: eMax, HeartbeatInterval: hb}
				for j := range size {
					if j != i {
						o.Bootstrap = append(o.Bootstrap, gen.ProcessID{Name: name, Node: nodes.Name(j)})
					}
				}
				slot := &spawned[k*size+i]
				factory := func() gen.ProcessBehavior {
					*slot = &quietMember{opts: o}
					return *slot
				}
				if _, err := nodes.Node(i).SpawnRegister(name, factory, gen.ProcessOptions{}); err != nil {
					nodes.Close()
					b.Fatal(err)
				}
			}
		}
		deadline := time.Now().Add(30*time.Second + time.Duration(clusters)*20*time.Millisecond)
		for h.led() < clusters {
			if time.Now().After(deadline) {
				nodes.Close()
				b.Fatalf("%d of %d clusters have a leader after the deadline", h.led(), clusters)
			}
			time.Sleep(50 * time.Millisecond)
		}
		// The election's burst is over: queues drain and buffers shrink.
		time.Sleep(*heapSettle)
		after := heapInuse()
		n := float64(clusters * size)
		b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/n, "inuse-B/member")
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "alloc-B/member")
		b.ReportMetric(float64(int64(after.HeapObjects)-int64(before.HeapObjects))/n, "objects/member")
		if *heapProfile != "" {
			if err := writeProfile(*heapProfile); err != nil {
				nodes.Close()
				b.Fatal(err)
			}
		}
		members := make([]weak.Pointer[quietMember], len(spawned))
		for j, m := range spawned {
			members[j] = weak.Make(m)
		}
		clear(spawned)
		nodes.Close()
		if live := awaitCollected(members, 30*time.Second); live > 0 {
			b.Fatalf("%d of %d members are still live 30s after their nodes stopped: the next run would count them as its own", live, len(members))
		}
	}
}

// awaitCollected collects garbage until every member is gone, for at most
// bound, and returns how many are still live. The next run (-count) reads
// its heap before its clusters start: what this run left live would be in
// that reading and, once freed, come off its figures.
func awaitCollected(members []weak.Pointer[quietMember], bound time.Duration) int {
	deadline := time.Now().Add(bound)
	for {
		runtime.GC()
		live := 0
		for _, m := range members {
			if m.Value() != nil {
				live++
			}
		}
		if live == 0 || time.Now().After(deadline) {
			return live
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func writeProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// The members of a settled cluster keep no rare fields (an actorRare): the
// Actor moved them behind a pointer to fit a smaller allocation, a saving
// that a member making them on the common path would undo.
func TestASettledMemberKeepsNoRareFields(t *testing.T) {
	c := newCluster(t, 3, defaults)
	alive := []int{0, 1, 2}
	c.waitOneLeader(alive)
	for _, i := range alive {
		rare, err := c.nodes[i].Call(c.pids[i], "rare?")
		require.NoError(t, err)
		assert.Equal(t, false, rare, "member %d made its rare fields", i)
	}
}
