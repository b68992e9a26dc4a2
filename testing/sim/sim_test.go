package sim

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
	"github.com/regent-go/regent/testing/history"
)

var seedFlag = flag.Uint64("seed", 0, "the seed TestSeed runs (also REGENT_SIM_SEED); default 1")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Chaos runs: episodes start within chaosSpan.
const (
	chaosSpan    = 10 * time.Second
	defaultSeeds = 120
	// maxAvoidance is, in election timeouts, the longest a leader avoids a
	// member whose handover failed (internal/election's handover.go), with
	// a margin.
	maxAvoidance = 700
)

// play runs cfg past its last fault until the cluster settles, or its
// convergence bound and a second have passed (the convergence rule then
// judges it), and then for a tail of four election timeouts, in which a
// settled cluster must stay settled. Under a preferred-leader rule it first
// runs until the preferred member leads, for up to PreferStableFor and
// maxAvoidance: the member must answer steadily for PreferStableFor, and a
// leader avoids a member whose handover failed (a lost or late
// MessageTimeoutNow is enough) for ten election timeouts, doubled with each
// further failure up to 640.
func play(t *testing.T, cfg Config) *Simulator {
	t.Helper()
	s, err := New(cfg)
	require.NoError(t, err)
	s.RunUntil(func() bool { return s.Now() >= s.LastFault() && s.Settled() }, s.LastFault()+s.Bounds().Converge+time.Second)
	e := s.Config().Election
	if e.Prefer.Kind != election.PreferNone {
		s.RunUntil(func() bool { return slices.Equal(s.Leaders(), []int{s.Preferred()}) }, e.PreferStableFor+maxAvoidance*e.ElectionTimeoutMax)
	}
	s.Run(4 * e.ElectionTimeoutMax)
	return s
}

// runSeed runs the chaos configuration of seed.
func runSeed(t *testing.T, seed uint64) *Simulator {
	t.Helper()
	return play(t, RandomConfig(seed, chaosSpan))
}

// failure formats a run's violations with its reproduction and schedule.
func failure(s *Simulator, vs []history.Violation) string {
	return fmt.Sprintf("seed %d broke %d invariant(s)\nreproduce: go test ./testing/sim -run 'TestSeed$' -seed=%d -v\nschedule:\n%s\n%s",
		s.Config().Seed, len(vs), s.Config().Seed, s.Schedule(), history.Report(vs))
}

// envUint reads a positive integer from the environment, or def.
func envUint(t *testing.T, name string, def uint64) uint64 {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	require.NoError(t, err, "%s must be a positive integer", name)
	return n
}

// percentile is the p-th percentile (0..100) of sorted ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, len(ds)*p/100)]
}

// preferredLeads reports an error when a run that settled under a
// preferred-leader rule ended with another leader than the preferred one,
// unless that leadership is too young to have handed over yet (a lost
// heartbeat can start an election in a quiet cluster).
func preferredLeads(s *Simulator) error {
	want := s.Preferred()
	if _, settled := history.SettleTime(s.History()); !settled || want < 0 {
		return nil
	}
	got := s.Leaders()
	if len(got) == 1 && got[0] == want {
		return nil
	}
	cfg := s.Config().Election
	stable := cfg.PreferStableFor
	if len(got) == 1 && s.Now()-leadingSince(s.History(), s.Name(got[0])) < stable+2*cfg.ElectionTimeoutMax {
		return nil
	}
	if len(got) == 0 && (lastLeader(s.History()) == s.Name(want) || s.Now()-leadershipEnded(s.History()) < stable+2*cfg.ElectionTimeoutMax) {
		// The run ended mid-election: the preferred member lost its
		// leadership to a lost heartbeat, or a handover to it was lost and
		// the cluster is electing as usual. A liveness blip, not a
		// preference that failed to settle.
		return nil
	}
	return fmt.Errorf("under prefer=%s leadership ended on %v, not on the preferred %s", cfg.Prefer.Kind, got, s.Name(want))
}

// leadershipEnded is when the last leadership in the history ended.
func leadershipEnded(h *history.History) time.Duration {
	var ended time.Duration
	leading := map[string]bool{}
	for _, e := range h.Events() {
		if e.Kind != history.KindState {
			continue
		}
		if leading[e.Member] && e.Role != history.RoleLeader {
			ended = e.At
		}
		leading[e.Member] = e.Role == history.RoleLeader
	}
	return ended
}

// lastLeader is the member of the last leader state in the history.
func lastLeader(h *history.History) string {
	last := ""
	for _, e := range h.Events() {
		if e.Kind == history.KindState && e.Role == history.RoleLeader {
			last = e.Member
		}
	}
	return last
}

// leadingSince is when member last became leader in h.
func leadingSince(h *history.History, member string) time.Duration {
	var since time.Duration
	prev := ""
	for _, e := range h.Events() {
		if e.Kind != history.KindState || e.Member != member {
			continue
		}
		if e.Role == history.RoleLeader && prev != history.RoleLeader {
			since = e.At
		}
		prev = e.Role
	}
	return since
}

func TestInvariantsHoldUnderChaos(t *testing.T) {
	seeds := envUint(t, "REGENT_SIM_SOAK", defaultSeeds)
	first := envUint(t, "REGENT_SIM_FIRST", 1)
	var (
		steps   uint64
		virtual time.Duration
		settles []time.Duration
		failed  []uint64
		byRule  = map[string][]uint64{}
		applied = map[string]int{}
		skipped = map[string]int{}
		shapes  = map[string]int{}
		leases  = map[string][]time.Duration{}
		worst   = map[string]uint64{} // the run whose overlap was the largest share of its bound
		shares  = map[string]float64{}
	)
	start := time.Now()
	for seed := first; seed < first+seeds; seed++ {
		t.Run(fmt.Sprintf("seed %d keeps every invariant", seed), func(t *testing.T) {
			s := runSeed(t, seed)
			steps += s.Steps()
			virtual += s.Now()
			coverage(s.Schedule(), applied, skipped)
			shapes["bootstrap "+s.Config().Bootstrap.String()]++
			if e := s.Config().Election; 2*e.MinClusterSize > s.Config().Members {
				shapes["2 x MinClusterSize > members"]++
			}
			if d, ok := history.SettleTime(s.History()); ok {
				settles = append(settles, d)
			}
			if s.Bounds().Lease > 0 {
				class, d := leaseClass(s), history.MaxLeaseOverlap(s.History())
				if share := float64(d) / float64(s.Bounds().Lease); d > 0 && share >= shares[class] {
					worst[class], shares[class] = seed, share
				}
				leases[class] = append(leases[class], d)
			}
			vs := history.CheckAll(s.History(), s.Bounds())
			for _, rule := range rules(vs) {
				byRule[rule] = append(byRule[rule], seed)
			}
			if len(vs) > 0 {
				failed = append(failed, seed)
				t.Error(failure(s, vs))
			} else if err := preferredLeads(s); err != nil {
				byRule["preferred leader"] = append(byRule["preferred leader"], seed)
				failed = append(failed, seed)
				t.Errorf("%v\n%s", err, failure(s, nil))
			}
		})
	}
	wall := time.Since(start)
	slices.Sort(settles)
	t.Logf("%d seeds, %s virtual, %d steps in %s: %.0f seeds/s, %.0f steps/s; %d seeds broke invariants %v; "+
		"last fault to one followed leader (virtual): p50 %s, p99 %s, max %s over %d settled runs",
		seeds, virtual, steps, wall.Round(time.Millisecond), float64(seeds)/wall.Seconds(), float64(steps)/wall.Seconds(),
		len(failed), failed, percentile(settles, 50), percentile(settles, 99), percentile(settles, 100), len(settles))
	t.Logf("runs by shape: %v", shapes)
	t.Logf("faults applied: %v", applied)
	t.Logf("faults skipped: %v", skipped)
	for _, rule := range slices.Sorted(maps.Keys(byRule)) {
		t.Logf("%d seeds broke %q: %v", len(byRule[rule]), rule, byRule[rule])
	}
	for _, class := range slices.Sorted(maps.Keys(leases)) {
		ds := leases[class]
		slices.Sort(ds)
		positive := 0
		for _, d := range ds {
			if d > 0 {
				positive++
			}
		}
		t.Logf("longest lease overlap per run, %s: %d runs, %d above zero, p50 %s, p90 %s, p99 %s, max %s; at most %.0f%% of the bound W (seed %d)",
			class, len(ds), positive, percentile(ds, 50), percentile(ds, 90), percentile(ds, 99), percentile(ds, 100), 100*shares[class], worst[class])
	}
}

// leaseClass names what a run did that bears on how long two leases
// overlap: PreVote, restarts (durable or not) and handovers.
func leaseClass(s *Simulator) string {
	restarts := "none"
	for _, e := range s.History().Events() {
		if e.Kind == history.KindRestart {
			restarts = fmt.Sprintf("durable=%t", e.Durable)
			break
		}
	}
	return fmt.Sprintf("prevote=%t restarts=%s handover=%t", !s.Config().Election.DisablePreVote, restarts, s.handovers > 0)
}

func TestSeed(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = envUint(t, "REGENT_SIM_SEED", 1)
	}
	t.Run(fmt.Sprintf("seed %d keeps every invariant", seed), func(t *testing.T) {
		s := runSeed(t, seed)
		if vs := history.CheckAll(s.History(), s.Bounds()); len(vs) > 0 {
			t.Fatalf("%s\nfull history:\n%s", failure(s, vs), s.History())
		}
		require.NoError(t, preferredLeads(s), "%s\nfull history:\n%s", failure(s, nil), s.History())
		t.Logf("schedule:\n%s", s.Schedule())
	})
}

func TestDeterminism(t *testing.T) {
	t.Run("the same seed gives the same schedule, history and steps", func(t *testing.T) {
		for _, seed := range []uint64{3, 41, 977} {
			a, b := runSeed(t, seed), runSeed(t, seed)
			require.Equal(t, a.Schedule().String(), b.Schedule().String())
			require.Equal(t, a.History().String(), b.History().String())
			require.Equal(t, a.Steps(), b.Steps())
			require.Equal(t, a.Fingerprint(), b.Fingerprint())
		}
	})
	t.Run("a run with a second actor on a node from the start is reproducible too", func(t *testing.T) {
		cfg := Config{Seed: 6, Members: 5, Rogues: []int{1}, Network: Network{Jitter: 20 * time.Millisecond},
			Plan: []Fault{{At: 0, Kind: FaultBridge, Groups: [][]int{{0, 2}, {3, 4}}}, {At: 3 * time.Second, Kind: FaultHeal}}}
		a, b := play(t, cfg), play(t, cfg)
		require.Equal(t, a.Fingerprint(), b.Fingerprint())
		require.Equal(t, a.History().String(), b.History().String())
	})
	t.Run("another seed gives another run", func(t *testing.T) {
		a, b := runSeed(t, 3), runSeed(t, 4)
		assert.NotEqual(t, a.Fingerprint(), b.Fingerprint())
		assert.NotEqual(t, a.History().String(), b.History().String())
	})
	t.Run("running in slices gives the same run as running at once", func(t *testing.T) {
		a := runSeed(t, 8)
		b, err := New(RandomConfig(8, chaosSpan))
		require.NoError(t, err)
		for end := a.Now(); b.Now() < end; {
			b.Run(min(37*time.Millisecond, end-b.Now()))
		}
		require.Equal(t, a.Fingerprint(), b.Fingerprint())
		require.Equal(t, a.History().String(), b.History().String())
	})
}

// quiet is a reliable, fault-free five-member cluster.
func quiet(seed uint64, tune func(*Config)) Config {
	cfg := Config{Seed: seed, Members: 5}
	if tune != nil {
		tune(&cfg)
	}
	return cfg
}

// start builds cfg and runs until it has exactly one leader, returning it.
func start(t *testing.T, cfg Config) (*Simulator, int) {
	t.Helper()
	s, err := New(cfg)
	require.NoError(t, err)
	require.True(t, s.RunUntil(func() bool { return len(s.Leaders()) == 1 }, 10*time.Second), "no leader within 10s")
	return s, s.Leaders()[0]
}

// others lists the members of n not in group.
func others(n int, group []int) []int {
	var out []int
	for i := range n {
		if !slices.Contains(group, i) {
			out = append(out, i)
		}
	}
	return out
}

// requireClean checks every invariant of s's history.
func requireClean(t *testing.T, s *Simulator) {
	t.Helper()
	vs := history.CheckAll(s.History(), s.Bounds())
	require.Empty(t, vs, failure(s, vs))
}

func TestElection(t *testing.T) {
	t.Run("a quiet cluster elects one leader that every member follows", func(t *testing.T) {
		s, l := start(t, quiet(1, nil))
		s.Run(3 * time.Second)
		require.Equal(t, []int{l}, s.Leaders())
		for i := range 5 {
			st, ok := s.Status(i)
			require.True(t, ok)
			assert.Equal(t, gen.Atom(fmt.Sprintf("m%d@sim", l+1)), st.LeaderNode, "member %d", i)
		}
		requireClean(t, s)
	})
	t.Run("members declared with Join elect a leader over the whole view", func(t *testing.T) {
		s, l := start(t, quiet(2, func(c *Config) { c.Join = true }))
		st, _ := s.Status(l)
		assert.Equal(t, 5, st.ViewSize)
		requireClean(t, s)
	})
}

func TestIsolatedLeaderStepsDown(t *testing.T) {
	for _, ev := range []election.Evidence{election.EvidenceContact, election.EvidenceReplies} {
		t.Run(fmt.Sprintf("with %s evidence the leader steps down within the bound and the rest elect another", ev), func(t *testing.T) {
			cfg := quiet(3, func(c *Config) { c.Election.Evidence = ev })
			s, l := start(t, cfg)
			require.NoError(t, s.Isolate(l))
			bound := cfg.Bounds().StepDown
			require.True(t, s.RunUntil(func() bool { return !slices.Contains(s.Leaders(), l) }, bound),
				"leader %s still leads %s after isolation", s.Name(l), bound)
			require.True(t, s.RunUntil(func() bool { return len(s.Leaders()) == 1 }, 10*time.Second))
			assert.NotEqual(t, l, s.Leaders()[0])
			s.Run(time.Second)
			requireClean(t, s)
		})
	}
	t.Run("with cuts never detected under contact evidence, the step-down rule is not bounded", func(t *testing.T) {
		cfg := quiet(3, func(c *Config) { c.Network.DetectCut = -1; c.Election.Evidence = election.EvidenceContact })
		assert.Zero(t, cfg.Bounds().StepDown)
	})
}

func TestPartitions(t *testing.T) {
	t.Run("a minority side elects nobody while the majority side elects one", func(t *testing.T) {
		s, l := start(t, quiet(4, nil))
		minority := []int{l, (l + 1) % 5}
		majority := others(5, minority)
		require.NoError(t, s.Partition(minority, majority))
		s.Run(5 * time.Second)
		leaders := s.Leaders()
		require.Len(t, leaders, 1)
		assert.Contains(t, majority, leaders[0])
		requireClean(t, s)
	})
	t.Run("after a heal exactly one leader remains and everyone follows it", func(t *testing.T) {
		s, l := start(t, quiet(5, nil))
		require.NoError(t, s.Isolate(l))
		s.Run(3 * time.Second)
		require.NoError(t, s.Heal())
		s.Run(6 * time.Second)
		require.Len(t, s.Leaders(), 1)
		d, ok := history.SettleTime(s.History())
		require.True(t, ok)
		assert.LessOrEqual(t, d, s.Bounds().Converge)
		requireClean(t, s)
	})
}

func TestCrashAndStop(t *testing.T) {
	t.Run("peers keep a crashed member in their view as unreachable", func(t *testing.T) {
		s, l := start(t, quiet(6, nil))
		victim := (l + 1) % 5
		require.NoError(t, s.Crash(victim))
		s.Run(time.Second)
		st, _ := s.Status(l)
		assert.Equal(t, 5, st.ViewSize)
		i := slices.IndexFunc(st.Members, func(m election.MemberStatus) bool { return m.Node == s.members[victim].id.Node })
		require.GreaterOrEqual(t, i, 0)
		assert.False(t, st.Members[i].UnreachableSince.IsZero(), "a crash reads as a lost connection")
	})
	t.Run("peers drop a gracefully stopped member from their view", func(t *testing.T) {
		s, l := start(t, quiet(7, nil))
		require.NoError(t, s.Stop((l+1)%5))
		s.Run(time.Second)
		st, _ := s.Status(l)
		assert.Equal(t, 4, st.ViewSize, "a stop reads as a real reason")
	})
	t.Run("a crashed leader is replaced and rejoins as a follower after restart", func(t *testing.T) {
		s, l := start(t, quiet(8, func(c *Config) { c.Durable = true }))
		require.NoError(t, s.Crash(l))
		require.True(t, s.RunUntil(func() bool { return len(s.Leaders()) == 1 }, 10*time.Second))
		next := s.Leaders()[0]
		require.NotEqual(t, l, next)
		require.NoError(t, s.Restart(l))
		s.Run(3 * time.Second)
		assert.Equal(t, []int{next}, s.Leaders())
		st, ok := s.Status(l)
		require.True(t, ok)
		assert.Equal(t, election.RoleFollower, st.Role)
		requireClean(t, s)
	})
	t.Run("a view shrunk below MinClusterSize has no leader", func(t *testing.T) {
		s, l := start(t, quiet(9, func(c *Config) { c.Election.MinClusterSize = 5 }))
		require.NoError(t, s.Stop((l+1)%5))
		s.Run(3 * time.Second)
		assert.Empty(t, s.Leaders())
		st, _ := s.Status(l)
		assert.Equal(t, election.RoleUnclustered, st.Role)
		requireClean(t, s)
	})
}

func TestPreferredLeader(t *testing.T) {
	t.Run("under highest-ID preference leadership settles on the highest member", func(t *testing.T) {
		s, _ := start(t, quiet(10, func(c *Config) { c.Election.Prefer.Kind = election.PreferHighestID }))
		s.Run(5 * time.Second)
		assert.Equal(t, 4, s.Preferred())
		assert.Equal(t, []int{4}, s.Leaders())
		requireClean(t, s)
	})
	t.Run("under oldest preference a restarted leader yields to the oldest live member", func(t *testing.T) {
		s, _ := start(t, quiet(11, func(c *Config) { c.Election.Prefer.Kind = election.PreferOldest }))
		s.Run(5 * time.Second)
		require.Equal(t, []int{0}, s.Leaders(), "equal start times go to the lowest name")
		require.NoError(t, s.Crash(0))
		s.Run(time.Second)
		require.NoError(t, s.Restart(0))
		s.Run(5 * time.Second)
		assert.Equal(t, 1, s.Preferred())
		assert.Equal(t, []int{1}, s.Leaders())
		requireClean(t, s)
	})
	t.Run("without a preference there is no preferred member", func(t *testing.T) {
		s, err := New(quiet(12, nil))
		require.NoError(t, err)
		assert.Equal(t, -1, s.Preferred())
	})
}

func TestSimulatorErrors(t *testing.T) {
	t.Run("a config it cannot run is refused as incorrect", func(t *testing.T) {
		for _, cfg := range []Config{
			{Members: -1},
			{Network: Network{Loss: 1}},
			{Plan: []Fault{{Kind: FaultCrash, Member: 9}}},
			{Plan: []Fault{{Kind: FaultJoin, Member: 1, Peer: 1}}},
			{Plan: []Fault{{Kind: FaultBridge, Groups: [][]int{{0}}}}},
			{Plan: []Fault{{Kind: FaultCut, Pairs: [][2]int{{0, 9}}}}},
			{Chaos: &Chaos{Faults: []FaultKind{FaultHeal}}},
			{Members: 3, Lists: [][]int{{1}, {9}, {0}}},
			{Members: 3, Lists: [][]int{{1}}},
			{Bootstrap: BootstrapKind(99)},
			{Rogues: []int{1, 1}},
			{Election: election.Config{ElectionTimeoutMin: time.Second, ElectionTimeoutMax: time.Millisecond}},
		} {
			_, err := New(cfg)
			require.ErrorIs(t, err, gen.ErrIncorrect, "%+v", cfg)
		}
	})
	t.Run("crashing a member that is down or restarting one that is up is not allowed", func(t *testing.T) {
		s, err := New(quiet(1, nil))
		require.NoError(t, err)
		require.NoError(t, s.Crash(2))
		require.ErrorIs(t, s.Crash(2), gen.ErrNotAllowed)
		require.ErrorIs(t, s.Stop(2), gen.ErrNotAllowed)
		require.ErrorIs(t, s.Restart(3), gen.ErrNotAllowed)
		require.ErrorIs(t, s.Partition([]int{7}), gen.ErrIncorrect)
		sched := s.Schedule().String()
		assert.Contains(t, sched, "skipped crash")
		assert.Len(t, s.Schedule().Plan(), 1, "only the applied crash replays")
	})
}

// durabilityDemo is the configuration of the double-vote demonstrations:
// three members of which two may form a cluster (2 x 2 > 3, so one cluster
// at most), ghosts that never expire, production's PreVote.
func durabilityDemo(seed uint64) Config {
	return Config{Seed: seed, Members: 3, Election: election.Config{MinClusterSize: 2, GhostTTL: time.Hour}}
}

// safetyViolations keeps the violations of the rules durable state protects.
func safetyViolations(h *history.History) []history.Violation {
	var out []history.Violation
	for _, v := range history.CheckAll(h, history.Bounds{}) {
		switch v.Rule {
		case history.RuleSingleVote, history.RuleElectionSafety, history.RuleTermMonotonic, history.RuleSingleLineage:
			out = append(out, v)
		}
	}
	return out
}

func rules(vs []history.Violation) []string {
	var out []string
	for _, v := range vs {
		if !slices.Contains(out, v.Rule) {
			out = append(out, v.Rule)
		}
	}
	return out
}

// restartDemo is the schedule of the durability demonstrations: m3 is cut
// off from the start while m1 and m2 elect; at restart the follower F
// crashes, is cut off from the leader L together with m3, and restarts at
// once.
type restartDemo struct {
	config  func(seed uint64) Config
	restart time.Duration
	length  time.Duration
}

func (d restartDemo) plan(l, f int) []Fault {
	return []Fault{
		{At: 0, Kind: FaultPartition, Groups: [][]int{{0, 1}, {2}}},
		{At: d.restart, Kind: FaultCrash, Member: f},
		{At: d.restart, Kind: FaultPartition, Groups: [][]int{{l}, {f, 2}}},
		{At: d.restart, Kind: FaultRestart, Member: f},
	}
}

// run plays the schedule of seed with L = l and F = f.
func (d restartDemo) run(t *testing.T, seed uint64, durable bool, l, f int) *Simulator {
	t.Helper()
	cfg := d.config(seed)
	cfg.Durable, cfg.Plan = durable, d.plan(l, f)
	s, err := New(cfg)
	require.NoError(t, err)
	s.Run(d.length)
	return s
}

// find searches the seeds up to 50 for one where the schedule bites: the
// first election leaves one leader, and the run without durable state breaks
// the rules bites looks for. It returns the seed, L and F.
func (d restartDemo) find(t *testing.T, bites func(broken []string) bool) (seed uint64, l, f int) {
	t.Helper()
	for candidate := uint64(1); candidate <= 50; candidate++ {
		cfg := d.config(candidate)
		cfg.Plan = d.plan(0, 1)[:1]
		s, err := New(cfg)
		require.NoError(t, err)
		s.Run(d.restart)
		if leaders := s.Leaders(); len(leaders) == 1 && bites(rules(safetyViolations(d.run(t, candidate, false, leaders[0], 1-leaders[0]).History()))) {
			return candidate, leaders[0], 1 - leaders[0]
		}
	}
	t.Fatalf("no seed among 50 makes the schedule bite")
	return 0, 0, 0
}

func TestDurableTermAndVote(t *testing.T) {
	// With PreVote, m3 stays at term 0 while cut off; m1 and m2 elect at
	// term 1, F voting for L. After F's restart, F and m3 elect among
	// themselves at term 1 again.
	demo := restartDemo{config: durabilityDemo, restart: time.Second, length: 4 * time.Second}
	seed, l, f := demo.find(t, func(broken []string) bool {
		return slices.Contains(broken, history.RuleSingleVote) && slices.Contains(broken, history.RuleElectionSafety)
	})
	run := func(seed uint64, durable bool, l, f int) *Simulator { return demo.run(t, seed, durable, l, f) }

	t.Run("without durable state the restarted member votes twice in one term and two members lead it", func(t *testing.T) {
		s := run(seed, false, l, f)
		vs := safetyViolations(s.History())
		require.Subset(t, rules(vs), []string{history.RuleSingleVote, history.RuleElectionSafety}, "%s\n%s", s.Schedule(), s.History())
		t.Logf("seed %d:\n%s\n%s", seed, s.Schedule(), history.Report(vs))
	})
	t.Run("with durable state the same schedule keeps one vote and one leader per term", func(t *testing.T) {
		s := run(seed, true, l, f)
		vs := safetyViolations(s.History())
		require.Empty(t, vs, failure(s, vs))
		require.Len(t, s.Leaders(), 1, "the cluster still elects")
	})

	t.Run("a scan of random crash schedules finds a double vote without durable state, and replayed with it none", func(t *testing.T) {
		const scan = 1000
		for seed := uint64(1); seed <= scan; seed++ {
			cfg := RandomConfig(seed, chaosSpan)
			cfg.Durable, cfg.Election.GhostTTL = false, time.Hour
			cfg.Chaos.MaxGap, cfg.Chaos.MaxHold = 300*time.Millisecond, 50*time.Millisecond
			cfg.Chaos.Faults = []FaultKind{FaultCrash, FaultPartition, FaultIsolate}
			s := play(t, cfg)
			found := rules(safetyViolations(s.History()))
			if !slices.Contains(found, history.RuleSingleVote) {
				continue
			}
			cfg.Durable, cfg.Chaos, cfg.Plan = true, nil, s.Schedule().Plan()
			replay := play(t, cfg)
			vs := safetyViolations(replay.History())
			require.Empty(t, vs, failure(replay, vs))
			t.Logf("seed %d: without durable state %s; with it, the same %d faults break none",
				seed, strings.Join(found, "; "), len(cfg.Plan))
			return
		}
		t.Fatalf("no seed among %d broke single vote without durable state", scan)
	})
}

// The view is durable state too. Without PreVote, m3, cut off from the
// start, campaigns alone for a formation at ever higher terms while m1 and
// m2 form the first view (MinClusterSize 2 of 3), which names m3, at a low
// term; F then restarts cut off from L together with m3.
func TestDurableView(t *testing.T) {
	demo := restartDemo{restart: 2 * time.Second, length: 5 * time.Second, config: func(seed uint64) Config {
		cfg := durabilityDemo(seed)
		cfg.Election.DisablePreVote = true
		return cfg
	}}
	seed, l, f := demo.find(t, func(broken []string) bool {
		return slices.Contains(broken, history.RuleSingleLineage) && !slices.Contains(broken, history.RuleSingleVote)
	})
	run := func(seed uint64, durable bool, l, f int) *Simulator { return demo.run(t, seed, durable, l, f) }

	t.Run("without durable state the restarted member forgets the first view it acknowledged and forms a second cluster with m3", func(t *testing.T) {
		s := run(seed, false, l, f)
		vs := safetyViolations(s.History())
		found := rules(vs)
		require.Contains(t, found, history.RuleSingleLineage, "%s\n%s", s.Schedule(), s.History())
		require.NotContains(t, found, history.RuleSingleVote, "no vote was cast twice: the view alone was lost")
		t.Logf("seed %d (leader %s, restarted follower %s):\n%s\n%s", seed, s.Name(l), s.Name(f), s.Schedule(), history.Report(vs))
	})
	t.Run("with durable state it refuses the formation and m3 joins the first view", func(t *testing.T) {
		s := run(seed, true, l, f)
		vs := safetyViolations(s.History())
		require.Empty(t, vs, failure(s, vs))
		first, _ := s.Status(l)
		joined, _ := s.Status(2)
		require.NotNil(t, joined.View)
		assert.Equal(t, first.View.Stamp.Lineage, joined.View.Stamp.Lineage)
		assert.Len(t, s.Leaders(), 1, "m3 and the restarted member lead the first view's lineage")
	})
}

// Why FaultRogue waits for the views, and why leader refuses a second
// actor of a cluster on one node at start: before any view names a node's
// member, each side of a split may meet a different actor of that node
// first and count its vote as the node's. A bridge cut {m1,m3} | {m4,m5},
// with m2's node reaching both, and a second actor on m2's node from the
// start.
func TestSecondActorBeforeTheFirstView(t *testing.T) {
	cfg := func(seed uint64, rogue bool) Config {
		c := Config{
			Seed: seed, Members: 5, Durable: true, Network: Network{Jitter: 20 * time.Millisecond},
			Plan: []Fault{{At: 0, Kind: FaultBridge, Groups: [][]int{{0, 2}, {3, 4}}}, {At: 3 * time.Second, Kind: FaultHeal}},
		}
		if rogue {
			c.Rogues = []int{1}
		}
		return c
	}
	run := func(seed uint64, rogue bool) *Simulator {
		s, err := New(cfg(seed, rogue))
		require.NoError(t, err)
		s.Run(6 * time.Second)
		return s
	}
	var seed uint64
	for candidate := uint64(1); candidate <= 50 && seed == 0; candidate++ {
		if slices.Contains(rules(history.CheckAll(run(candidate, true).History(), history.Bounds{})), history.RuleSingleLineage) {
			seed = candidate
		}
	}
	require.NotZero(t, seed, "no seed among 50 splits the node's vote")

	t.Run("a second actor on the bridging node splits its vote: two clusters form", func(t *testing.T) {
		s := run(seed, true)
		vs := history.CheckAll(s.History(), s.Bounds())
		found := rules(vs)
		require.Contains(t, found, history.RuleSingleLineage)
		require.Contains(t, found, history.RuleOneLeaderAtOnce, "and two visible leaders coexist")
		t.Logf("seed %d:\n%s\n%s", seed, s.Schedule(), history.Report(vs))
	})
	t.Run("without it the same schedule forms one cluster", func(t *testing.T) {
		s := run(seed, false)
		require.True(t, s.RunUntil(s.Settled, s.Bounds().Converge))
		requireClean(t, s)
	})
}
