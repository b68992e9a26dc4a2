package cluster

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/faultproxy"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/history"
)

// rampDelay raises the delay of every direction into member to from 0 to d
// in steps short enough that no gap of silence reaches an evidence window.
func rampDelay(c *Cluster, to int, d time.Duration) {
	dst := c.cfg.nodeName(to)
	const step = 50 * time.Millisecond
	for cur := step; cur <= d; cur += step {
		c.mesh.Update(func(_, dd gen.Atom, f *faultproxy.Fault) {
			if dd == dst {
				f.Delay = cur
			}
		})
		time.Sleep(4 * step)
	}
}

// startSlowAckCluster starts three members with a long keepalive, so a
// silent cut is not noticed by the runtime during the test; coalescing is
// on unless REGENT_HUNT_NOCOAL is set. Skipped unless REGENT_HUNT_SOAK is.
func startSlowAckCluster(t *testing.T) *Cluster {
	t.Helper()
	if os.Getenv("REGENT_HUNT_SOAK") == "" {
		t.Skip("REGENT_HUNT_SOAK not set")
	}
	c, err := Start(t, Config{Size: 3, Options: func(int) leader.Options {
		return leader.Options{ClusterID: DefaultClusterID, DisableHeartbeatCoalescing: os.Getenv("REGENT_HUNT_NOCOAL") != ""}
	}, KeepAlivePeriod: time.Second, KeepAliveTimeout: 10 * time.Second})
	require.NoError(t, err)
	return c
}

// Quorum evidence over real TCP: a leader whose acknowledgements arrive
// ever later (a one-way delay into its node) and whose heartbeats then stop
// reaching its followers. The followers elect another leader after an
// election timeout; the old one must not count the acknowledgements still
// in flight as fresh evidence (it did, before replies were credited at
// their heartbeat's send time: two visible leaders for the whole delay).
// The deterministic simulator checks the same (testing/sim, delay_test.go);
// this one runs under REGENT_HUNT_SOAK, as real timing on a loaded machine
// is no test of a bound.
func TestDelayedAcknowledgementsCannotKeepASupersededLeaderOverTCP(t *testing.T) {
	c := startSlowAckCluster(t)
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("REGENT_HUNT_VERBOSE") != "" {
			t.Logf("history:\n%s", c.History())
		}
	})
	l, err := c.WaitLeader(30 * time.Second)
	require.NoError(t, err)
	delay := 1500 * time.Millisecond
	if v := os.Getenv("REGENT_HUNT_DELAY"); v != "" {
		delay, err = time.ParseDuration(v)
		require.NoError(t, err)
	}
	rampDelay(c, l, delay)
	time.Sleep(2 * time.Second)
	// No inspection of the leader here: one wakes it (and unpairs it).
	c.note("cutting the leader's sends")
	for j := 0; j < c.Size(); j++ {
		if j != l {
			if os.Getenv("REGENT_HUNT_LOSS") != "" {
				f := c.mesh.Fault(c.cfg.nodeName(l), c.cfg.nodeName(j))
				f.Loss = 1
				c.mesh.Set(c.cfg.nodeName(l), c.cfg.nodeName(j), f)
			} else {
				c.mesh.Cut(c.cfg.nodeName(l), c.cfg.nodeName(j))
			}
		}
	}
	time.Sleep(2 * time.Second)
	c.hist.Finish(c.now())
	vs := history.CheckAll(c.hist, history.Bounds{StepDown: c.cfg.Bounds.StepDown})
	require.Empty(t, vs, "%s", history.Report(vs))
}

// extraClusters runs k more clusters on the nodes of c, each actor of
// cluster x registered as leader<x> on every node, each cluster with its own
// history; spawn (re)starts them on member i's current node.
type extraClusters struct {
	c     *Cluster
	k     int
	hists []*history.History
	over  [][]*atomic.Bool // [cluster][member]
}

func newExtraClusters(c *Cluster, k int) *extraClusters {
	e := &extraClusters{c: c, k: k}
	for x := 0; x < k; x++ {
		e.hists = append(e.hists, history.New())
		e.over = append(e.over, make([]*atomic.Bool, c.Size()))
	}
	return e
}

func (e *extraClusters) name(x int) gen.Atom { return gen.Atom(fmt.Sprintf("leader%d", x+1)) }

func (e *extraClusters) spawn(t *testing.T, i int, opts func(x, i int) leader.Options) {
	c := e.c
	n, life := c.Node(i), c.Life(i)
	for x := 0; x < e.k; x++ {
		o := opts(x, i)
		if o.Bootstrap == nil {
			for j := 0; j < c.Size(); j++ {
				if j != i {
					o.Bootstrap = append(o.Bootstrap, gen.ProcessID{Name: e.name(x), Node: c.cfg.nodeName(j)})
				}
			}
		}
		over := new(atomic.Bool)
		e.over[x][i] = over
		h, label := e.hists[x], c.cfg.label(i)
		o.OnTransition = func(tr leader.Transition) {
			if over.Load() {
				return
			}
			var members []string
			for _, m := range tr.View.Members {
				members = append(members, c.labelOf(m.Node))
			}
			h.Append(c.event(tr.At.Sub(c.start), label, observed{
				life: life, role: string(tr.Role), term: tr.Term, leader: c.labelOf(tr.Leader.Node),
				view: tr.ViewSize, quorum: tr.Quorum, min: tr.MinClusterSize, votes: tr.VotesGranted,
				protocol: tr.ProtocolLeader, agreed: tr.View.Stamp.Agreed, lineage: lineageOf(tr.View),
				members: strings.Join(members, ","), viewTerm: tr.View.Stamp.Key.Term, viewEpoch: tr.View.Stamp.Key.Epoch,
			}))
		}
		_, err := n.SpawnRegister(e.name(x), func() gen.ProcessBehavior { return PlainMember(Member{Options: o}) }, gen.ProcessOptions{})
		require.NoError(t, err)
	}
}

// down marks member i's extra actors as ended (before a kill or stop).
func (e *extraClusters) down(i int) {
	for x := 0; x < e.k; x++ {
		if o := e.over[x][i]; o != nil {
			o.Store(true)
		}
	}
}

// check copies c's fault events into every extra history and checks it.
func (e *extraClusters) check(t *testing.T, b history.Bounds) {
	e.c.hist.Finish(e.c.now())
	for x, h := range e.hists {
		for _, ev := range e.c.hist.Events() {
			if ev.Kind != history.KindState && ev.Kind != history.KindVote {
				h.Append(ev)
			}
		}
		h.Finish(e.c.now())
		vs := history.CheckAll(h, b)
		if len(vs) > 0 {
			t.Errorf("cluster %d: %s", x+1, history.Report(vs))
		}
	}
}

// Many clusters share three to five nodes, so pair beats carry many slots,
// while the network suffers one-way cuts, asymmetric delays, loss, kills
// and restarts; every cluster's history is checked for the safety rules
// and the step-down bound (faults here keep one-way delay below 60 ms, far
// under the evidence window).
func TestHuntManyClustersUnderFaults(t *testing.T) {
	if os.Getenv("REGENT_HUNT_SOAK") == "" {
		t.Skip("REGENT_HUNT_SOAK not set")
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("REGENT_HUNT_SEED"); v != "" {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		require.NoError(t, err)
	}
	cycles := 12
	if v := os.Getenv("REGENT_HUNT_CYCLES"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		cycles = n
	}
	t.Logf("REGENT_HUNT_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	size := 3 + rng.IntN(3)
	minSize := 0
	if rng.IntN(2) == 0 {
		minSize = size/2 + 1
	}
	opts := func(x, i int) leader.Options {
		return leader.Options{ClusterID: fmt.Sprintf("c%d", x), MinClusterSize: minSize}
	}
	c, err := Start(t, Config{Size: size, Seed: seed, Options: func(i int) leader.Options { return opts(99, i) }})
	require.NoError(t, err)
	e := newExtraClusters(c, 6)
	for i := 0; i < size; i++ {
		e.spawn(t, i, opts)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("history:\n%s", c.History())
			for x, h := range e.hists {
				t.Logf("cluster %d history:\n%s", x+1, h)
			}
		}
	})
	time.Sleep(2 * time.Second)
	nodes := func(i int) gen.Atom { return c.cfg.nodeName(i) }
	for cycle := 0; cycle < cycles; cycle++ {
		a, b := rng.IntN(size), rng.IntN(size)
		for b == a {
			b = rng.IntN(size)
		}
		var what string
		switch rng.IntN(6) {
		case 0:
			what = fmt.Sprintf("one-way cut %d->%d", a, b)
			require.NoError(t, c.CutOneWay(a, b))
		case 1:
			d := time.Duration(20+rng.IntN(40)) * time.Millisecond
			what = fmt.Sprintf("delay %v on %d->%d", d, a, b)
			c.mesh.Set(nodes(a), nodes(b), faultproxy.Fault{Delay: d, Jitter: 10 * time.Millisecond})
		case 2:
			what = fmt.Sprintf("loss 30%% on %d->%d", a, b)
			c.mesh.Set(nodes(a), nodes(b), faultproxy.Fault{Loss: 0.3})
		case 3:
			what = fmt.Sprintf("kill %d", a)
			e.down(a)
			require.NoError(t, c.Kill(a))
		case 4:
			what = fmt.Sprintf("isolate %d", a)
			require.NoError(t, c.Isolate(a))
		default:
			what = fmt.Sprintf("one-way cuts %d->%d and %d->all", a, b, b)
			require.NoError(t, c.CutOneWay(a, b))
			for j := 0; j < size; j++ {
				if j != b {
					require.NoError(t, c.CutOneWay(b, j))
				}
			}
		}
		t.Logf("cycle %d: %s", cycle, what)
		time.Sleep(time.Duration(300+rng.IntN(2500)) * time.Millisecond)
		require.NoError(t, c.Heal())
		c.mesh.Update(func(_, _ gen.Atom, f *faultproxy.Fault) { *f = faultproxy.Fault{} })
		for i := 0; i < size; i++ {
			if !c.Alive(i) {
				require.NoError(t, c.Restart(i))
				e.spawn(t, i, opts)
			}
		}
		time.Sleep(time.Duration(500+rng.IntN(1500)) * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	require.NoError(t, c.Check())
	e.check(t, history.Bounds{StepDown: c.cfg.Bounds.StepDown})
}

// Quorum evidence's cost, the same with coalescing on or off
// (REGENT_HUNT_NOCOAL): a leader whose acknowledgements come a second late
// cannot show an answered round trip within the evidence window, so it
// steps down, and the cluster settles on a member whose round trips fit,
// inspections (which wake the leader) or not.
func TestALeaderWhoseAcknowledgementsComeLateStepsDownAndAnotherLeads(t *testing.T) {
	c := startSlowAckCluster(t)
	l, err := c.WaitLeader(30 * time.Second)
	require.NoError(t, err)
	rampDelay(c, l, time.Second)
	var now []int
	require.Eventually(t, func() bool {
		now = c.Leaders() // inspects every member
		return len(now) == 1 && now[0] != l
	}, 30*time.Second, 100*time.Millisecond, "leaders %v, the slow one %d", now, l)
	for k := 0; k < 5; k++ {
		time.Sleep(time.Second)
		require.Equal(t, now, c.Leaders(), "the new leader stays, inspection %d", k)
	}
}
