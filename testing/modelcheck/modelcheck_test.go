package modelcheck

import (
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// TestMain checks for leaked goroutines. Searches allocate many small,
// short-lived states, so the collector runs less often than by default.
func TestMain(m *testing.M) {
	debug.SetGCPercent(400)
	goleak.VerifyTestMain(m)
}

// Scenario prefixes: where a search starts.
var (
	// met: every member has probed every member it knows and heard back.
	met = []Action{Flush()}
	// ledByN1: n1 has formed the cluster at term 1, its view is agreed and
	// every member follows it.
	ledByN1 = []Action{Flush(), Fire(0, election.TimerElection), Flush()}
)

// then is prefix followed by more actions, in a new slice.
func then(prefix []Action, more ...Action) []Action { return slices.Concat(prefix, more) }

// withViews is the invariants of the searches with durable state: the
// defaults and the intersection of quorums that can still elect.
func withViews() []Invariant { return append(Default(), ViewsThatCanElectIntersect) }

// withBudget applies REGENT_MC_DEPTH (the depth of every search) and
// REGENT_MC_STATES (its bound on states, 0 for none; unbounded when only the
// depth is set) to cfg.
func withBudget(t *testing.T, cfg Config) Config {
	t.Helper()
	read := func(name string) (int, bool) {
		v := os.Getenv(name)
		if v == "" {
			return 0, false
		}
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "%s must be an integer", name)
		return n, true
	}
	if d, ok := read("REGENT_MC_DEPTH"); ok {
		cfg.MaxDepth, cfg.MaxStates = d, 0
	}
	if n, ok := read("REGENT_MC_STATES"); ok {
		cfg.MaxStates = n
	}
	return cfg
}

// run searches cfg within the budget and logs its figures.
func run(t *testing.T, cfg Config) Result {
	t.Helper()
	cfg = withBudget(t, cfg)
	res, err := Check(cfg)
	require.NoError(t, err)
	t.Logf("%s\n    %s", res.Config, res)
	return res
}

// keeps searches cfg and requires that it break no invariant and reach
// every goal it names.
func keeps(t *testing.T, cfg Config) Result {
	t.Helper()
	res := run(t, cfg)
	if res.Violation != nil {
		t.Fatalf("%v", res.Violation)
	}
	require.Positive(t, res.Depth)
	require.Empty(t, res.Missed(), "the search did not exercise what it is meant to")
	return res
}

// Goals, as functions of what the state key holds.

// anyCore is a goal reached when f holds for a running member's core.
func anyCore(name string, f func(i int, c *election.Core) bool) Goal {
	return Goal{Name: name, Reached: func(s *State) bool {
		for i := range s.Members() {
			if c := s.Core(i); c != nil && f(i, c) {
				return true
			}
		}
		return false
	}}
}

// anyView is a goal reached when a running member holds a view f accepts.
func anyView(name string, f func(v election.View) bool) Goal {
	return anyCore(name, func(_ int, c *election.Core) bool {
		v, ok := c.View()
		return ok && f(v)
	})
}

func has(v election.View, i int) bool {
	return slices.ContainsFunc(v.Members, func(p gen.ProcessID) bool { return p.Node == node(i) })
}

// formationWon is reached when a member leads, having won a formation
// from a start without views.
var formationWon = anyCore("a formation won", func(_ int, c *election.Core) bool { return c.IsProtocolLeader() })

// safeConfigs are the searches of issue 11's matrix that the core always
// had to pass: views that start equal, nested by one, or partial with
// three members. The depths keep the whole test within its budget with
// -race on a loaded 2-core machine.
func safeConfigs() []Config {
	return []Config{
		{Name: "three members from a cold start, PreVote off, floor 2, with a durable crash and drops",
			Members: 3, MinClusterSize: 2, Durable: true, Crashes: 1, Drops: true, MaxDepth: 3},
		{Name: "three members that have met, PreVote on, floor 2, with a durable crash and a duplicate",
			Members: 3, MinClusterSize: 2, PreVote: true, Durable: true, Crashes: 1, Duplicates: 1, Prefix: met, MaxDepth: 4},
		{Name: "three members led by n1, PreVote off, floor 3, with a durable crash",
			Members: 3, MinClusterSize: 3, Durable: true, Crashes: 1, Prefix: ledByN1, MaxDepth: 5},
		{Name: "three members led by n1, PreVote on, fast failover, floor 2, with a durable crash and a kill",
			Members: 3, MinClusterSize: 2, PreVote: true, FastFailover: true, Durable: true, Crashes: 1, Kills: 1, Prefix: ledByN1, MaxDepth: 4},
		{Name: "three members with a partial list (n1 knows only n2), PreVote off, floor 2, with a durable crash",
			Members: 3, Bootstrap: [][]int{{1}, nil, nil}, MinClusterSize: 2, Durable: true, Crashes: 1, Prefix: met, MaxDepth: 4},
		{Name: "four members from a cold start, PreVote on, floor 3 (above half), with a durable crash",
			Members: 4, MinClusterSize: 3, PreVote: true, Durable: true, Crashes: 1, MaxDepth: 3},
		{Name: "four members that have met, PreVote off, floor 3 (above half), with a durable crash",
			Members: 4, MinClusterSize: 3, Durable: true, Crashes: 1, Prefix: met, NoProbes: true, MaxDepth: 4},
		{Name: "four members led by n1, PreVote off, replies as evidence, floor 2 (half), with a durable crash",
			Members: 4, MinClusterSize: 2, Evidence: election.EvidenceReplies, Durable: true, Crashes: 1, Prefix: ledByN1, MaxDepth: 4},
	}
}

func TestExhaustiveSearchKeepsEveryInvariant(t *testing.T) {
	t.Parallel()
	for _, cfg := range safeConfigs() {
		t.Run(cfg.Name, func(t *testing.T) {
			t.Parallel()
			cfg.Invariants = withViews()
			keeps(t, cfg)
		})
	}
}

// The configurations below elected two leaders of one term before the
// view was agreed (issue 11; the checker's first version kept them as
// expected to break). Agreed membership must keep every invariant in them.

// Issue 11, scenario 1 in four members: n1 lists {n1,n2,n3} and n4 lists
// {n2,n3,n4}; each once won term 1 with two of its three, though the floor
// of 3 is above half of four. A formation now needs grants that are a
// majority of every set its voters report.
func TestOverlappingBootstrapListsFormOneCluster(t *testing.T) {
	t.Parallel()
	keeps(t, Config{
		Name:    "four members with overlapping lists (n1 knows n1 to n3, n4 knows n2 to n4), PreVote off, floor 3",
		Members: 4, Bootstrap: [][]int{{0, 1, 2}, nil, nil, {1, 2, 3}}, MinClusterSize: 3, Durable: true,
		Prefix: met, NoProbes: true, MaxDepth: 6, Invariants: withViews(), Goals: []Goal{formationWon},
	})
}

// A newcomer that declares two members with Join once counted a view of
// three that n3 never shared; now it asks the leader to admit it, and the
// leader adds it to the agreed view one member at a time.
func TestAJoiningMemberIsAdmittedThroughTheLeader(t *testing.T) {
	t.Parallel()
	keeps(t, Config{
		Name:    "four members, n1 to n3 led by n1, n4 joins n1 and n2, PreVote off, floor 3",
		Members: 4, Bootstrap: [][]int{{0, 1, 2}, {0, 1, 2}, {0, 1, 2}, {}}, MinClusterSize: 3, Durable: true,
		Script: []Input{{Member: 3, Peer: 0}, {Member: 3, Peer: 1}},
		Prefix: then(ledByN1, NextInput(), NextInput()), NoProbes: true, MaxDepth: 5, Invariants: withViews(),
		Goals: []Goal{anyView("n4 admitted", func(v election.View) bool { return has(v, 3) })},
	})
}

// Leave once shrank one member's view for good: n1 left n3 and n4 out and
// n3 left n1 out, and each side won one term with its own half. Now each
// Leave asks the leader, which removes one member at a time.
func TestLeaveGoesThroughTheLeader(t *testing.T) {
	t.Parallel()
	keeps(t, Config{
		Name:    "four members led by n1 after n1 leaves n3 and n4 out and n3 leaves n1 out, PreVote off, floor 2",
		Members: 4, MinClusterSize: 2, Durable: true,
		Script: []Input{{Member: 0, Peer: 2, Leave: true}, {Member: 0, Peer: 3, Leave: true}, {Member: 2, Peer: 0, Leave: true}},
		Prefix: then(ledByN1, NextInput(), NextInput(), NextInput()), MaxDepth: 4, Invariants: withViews(),
		Goals: []Goal{anyCore("n3 and n4 removed, as n2 sees it", func(i int, c *election.Core) bool {
			v, ok := c.View()
			return i == 1 && ok && !has(v, 2) && !has(v, 3)
		})},
	})
}

// Issue 11, scenario 2 in four members: a cut {n1,n2}|{n3,n4} longer than
// GhostTTL once let each side drop the other and elect in one term, at a
// floor of 2. Now only a leader removes a ghost, each removal commits on a
// majority of the view it makes, and the side without a majority keeps its
// view whole. GhostTTL is shorter than the evidence window here so that n1
// removes ghosts before it steps down.
func TestGhostRemovalDuringACutElectsOnce(t *testing.T) {
	t.Parallel()
	keeps(t, Config{
		Name:    "four members led by n1, cut {n1,n2}|{n3,n4}, GhostTTL 100ms, PreVote off, floor 2",
		Members: 4, MinClusterSize: 2, Durable: true, Disconnects: 4, GhostTTL: 100 * time.Millisecond,
		Prefix:   then(ledByN1, Disconnect(0, 2), Disconnect(0, 3), Disconnect(1, 2), Disconnect(1, 3)),
		NoProbes: true, MaxDepth: 4, Invariants: withViews(),
		Goals: []Goal{anyCore("n1 removed a ghost", func(i int, c *election.Core) bool {
			v, ok := c.View()
			return i == 0 && ok && len(v.Members) < 4
		})},
	})
}

// A floor of 1 lets a member lead alone; with every Bootstrap list full, a
// formation still needs a majority of what each voter declares, so lost
// connections cannot split the members into two clusters.
func TestFloorOfOneWithLostConnectionsFormsOneCluster(t *testing.T) {
	t.Parallel()
	keeps(t, Config{
		Name:    "three members that have met, PreVote off, floor 1, with two lost connections",
		Members: 3, MinClusterSize: 1, Durable: true, Disconnects: 2, Prefix: met, MaxDepth: 4,
		Invariants: withViews(), Goals: []Goal{formationWon},
	})
}

// Nested lists once diverged when a restarted member forgot the members it
// had discovered; now a formation needs a majority of every set its voters
// report, and a member restarts with the view it persisted.
func TestNestedListsWithARestartKeepOneView(t *testing.T) {
	t.Parallel()
	keeps(t, Config{
		Name:    "four members with nested lists (n1 and n2 know n1 to n3) that have met, PreVote off, floor 2 (half), with a durable crash",
		Members: 4, Bootstrap: [][]int{{0, 1, 2}, {0, 1, 2}, nil, nil}, MinClusterSize: 2, Durable: true, Crashes: 1,
		Prefix: met, NoProbes: true, MaxDepth: 5, Invariants: withViews(),
		Goals: []Goal{formationWon, {Name: "a member restarted", Reached: func(s *State) bool {
			return slices.ContainsFunc([]int{0, 1, 2, 3}, func(i int) bool { return s.Life(i) > 1 })
		}}},
	})
}

// Searches of the agreed view's own features, each with the goal that shows
// it ran.

// Formation with a different Bootstrap list on every member (a ring: each
// knows only the next): no member knows a majority at first, so a formation
// must gather the sets its voters report before it can win.
func TestFormationFromDifferentBootstrapLists(t *testing.T) {
	t.Parallel()
	keeps(t, Config{
		Name:    "three members from a cold start, each knowing only the next (n1→n2→n3→n1), PreVote off, floor 2",
		Members: 3, Bootstrap: [][]int{{1}, {2}, {0}}, MinClusterSize: 2, Durable: true, MaxDepth: 5,
		Invariants: withViews(), Goals: []Goal{formationWon},
	})
}

// Leave of the leader: a leader never removes itself; it hands leadership
// over, and its successor removes it.
func TestLeaveOfTheLeaderHandsOver(t *testing.T) {
	t.Parallel()
	keeps(t, Config{
		Name:    "three members led by n1, n2 leaves n1 out and n1 has heard, PreVote off, floor 2",
		Members: 3, MinClusterSize: 2, Durable: true, Script: []Input{{Member: 1, Peer: 0, Leave: true}},
		Prefix: then(ledByN1, NextInput(), Deliver(1, 0)), MaxDepth: 5, Invariants: withViews(),
		Goals: []Goal{anyCore("another member leads", func(i int, c *election.Core) bool { return i != 0 && c.IsProtocolLeader() })},
	})
}

// A restart with durable state in the middle of a change: the leader has
// proposed a view without n3 and may crash before, while or after its
// members acknowledge it.
func TestRestartWithDurableStateMidChange(t *testing.T) {
	t.Parallel()
	keeps(t, Config{
		Name:    "three members led by n1 proposing a view without n3, with a durable crash, PreVote off, floor 2",
		Members: 3, MinClusterSize: 2, Durable: true, Crashes: 1, Script: []Input{{Member: 1, Peer: 2, Leave: true}},
		Prefix: then(ledByN1, NextInput(), Deliver(1, 0)), MaxDepth: 4, Invariants: withViews(),
		Goals: []Goal{
			anyView("the change acknowledged", func(v election.View) bool { return !has(v, 2) }),
			{Name: "n1 restarted holding the change", Reached: func(s *State) bool {
				v, ok := LatestView(s, 0)
				return s.Life(0) > 1 && ok && !v.has(node(2))
			}},
		},
	})
}

// formedThenLeaderDied: n1 has won term 1's formation with both grants (after
// a pre-vote round when preVote), both members have acknowledged its view
// and n1 counted it agreed, and n1's node crashes before its next message
// (the one saying "agreed") leaves: n2 and n3 hold the view, not known to be
// agreed.
func formedThenLeaderDied(preVote bool) []Action {
	return then(formedAcksInFlight(preVote), Deliver(1, 0), Deliver(2, 0), Crash(0))
}

// formedAcksInFlight: n1 has won term 1's formation and both members hold
// its view; their acknowledgements are in flight.
func formedAcksInFlight(preVote bool) []Action {
	round := []Action{Deliver(0, 1), Deliver(0, 2), Deliver(1, 0), Deliver(2, 0)}
	p := then(met, Fire(0, election.TimerElection))
	if preVote {
		p = then(p, round...)
	}
	return then(p, slices.Concat(round, []Action{Deliver(0, 1), Deliver(0, 2)})...)
}

// survivorLeads is reached once a member other than n1 leads the view n1
// formed (lineage 1@n1) while n1 is down.
var survivorLeads = Goal{Name: "a survivor leads the view n1 formed while n1 is down", Reached: func(s *State) bool {
	for i := 1; i < s.Members(); i++ {
		c := s.Core(i)
		if c == nil || !c.IsProtocolLeader() {
			continue
		}
		if v, ok := c.View(); ok && !s.Up(0) && v.Stamp.Lineage == (election.Lineage{Term: 1, Node: node(0)}) {
			return true
		}
	}
	return false
}}

// The leader dies right after forming (R13, the learner rule): at a floor
// equal to the size, the survivors are too few for a formation; each counts
// itself, the other and the proposer as acceptors of the view's key, takes
// the view as agreed and elects with a majority of it. The searches also
// restart n1 with what it persisted and crash once more; the last one
// starts with the acknowledgements in flight, so the crash may come before
// n1 counts them, after, or after one survivor heard "agreed".
func TestLeaderDiesRightAfterForming(t *testing.T) {
	t.Parallel()
	prefixHolds := func(t *testing.T, cfg Config) {
		t.Helper()
		lines, err := Trace(cfg, nil)
		require.NoError(t, err)
		last := lines[len(lines)-1]
		require.Contains(t, last, "n2:follower@1 v3/t1e1?", "n2 holds the view, not known agreed")
		require.Contains(t, last, "n3:follower@1 v3/t1e1?", "n3 holds the view, not known agreed")
	}
	for _, cfg := range []Config{
		{Name: "three members, n1 formed at floor 3 and crashed before saying agreed, PreVote off, one more durable crash",
			Members: 3, MinClusterSize: 3, Durable: true, Crashes: 2, Prefix: formedThenLeaderDied(false), NoProbes: true, MaxDepth: 5},
		{Name: "three members, n1 formed at floor 3 and crashed before saying agreed, PreVote on, fast failover",
			Members: 3, MinClusterSize: 3, PreVote: true, FastFailover: true, Durable: true, Crashes: 1,
			Prefix: formedThenLeaderDied(true), NoProbes: true, MaxDepth: 7},
		{Name: "three members, n1 formed at floor 2 and crashed before saying agreed, PreVote off, one more durable crash",
			Members: 3, MinClusterSize: 2, Durable: true, Crashes: 2, Prefix: formedThenLeaderDied(false), NoProbes: true, MaxDepth: 5},
		{Name: "three members, n1 formed at floor 3 with both acknowledgements in flight, PreVote off, two durable crashes at any point",
			Members: 3, MinClusterSize: 3, Durable: true, Crashes: 2, Prefix: formedAcksInFlight(false), NoProbes: true, MaxDepth: 6},
		{Name: "three members, n1 formed at floor 3 and crashed before saying agreed, PreVote off, a disk failure",
			Members: 3, MinClusterSize: 3, Durable: true, Crashes: 1, StorageFaults: 1, Prefix: formedThenLeaderDied(false), NoProbes: true, MaxDepth: 5},
	} {
		t.Run(cfg.Name, func(t *testing.T) {
			t.Parallel()
			prefixHolds(t, cfg)
			cfg.Invariants = withViews()
			cfg.Goals = []Goal{survivorLeads}
			keeps(t, cfg)
		})
	}
}

// A disk that fails: the member votes for nobody and leads nothing until a
// write succeeds, and sends nothing a failed write would have covered.
func TestFailingStorageKeepsEveryInvariant(t *testing.T) {
	t.Parallel()
	keeps(t, Config{
		Name:    "three members led by n1, one disk failure, PreVote off, floor 2",
		Members: 3, MinClusterSize: 2, Durable: true, StorageFaults: 1, Prefix: ledByN1, MaxDepth: 5,
		Invariants: withViews(),
		Goals:      []Goal{anyCore("a member told its writes fail", func(_ int, c *election.Core) bool { return c.StorageFailing() })},
	})
	// A term raised while the disk fails is neither stored nor sent; a crash
	// then loses it, and the next life starts from the stored term, which
	// is no decrease of any term the member ever showed.
	keeps(t, Config{
		Name:    "three members led by n1, one disk failure and one durable crash, PreVote off, floor 2",
		Members: 3, MinClusterSize: 2, Durable: true, StorageFaults: 1, Crashes: 1, Prefix: ledByN1, MaxDepth: 4,
		Invariants: withViews(),
		Goals: []Goal{
			anyCore("a member told its writes fail", func(_ int, c *election.Core) bool { return c.StorageFailing() }),
			{Name: "a member restarted", Reached: func(s *State) bool {
				for i := range s.Members() {
					if s.Up(i) && s.Life(i) > 1 {
						return true
					}
				}
				return false
			}},
		},
	})
}

// Two clusters that formed apart (a floor of 2 of 4, Bootstrap lists of two
// disjoint pairs) merge once n1 joins n3: the members of the lineage that
// ranks lower ask the other cluster's leader to admit them. Two leaders of
// one term lead two lineages here by design, so the search checks election
// safety per lineage and term.
func TestClustersFormedApartMergeAfterAJoin(t *testing.T) {
	t.Parallel()
	formed := then(met, Fire(0, election.TimerElection), Flush(), Fire(2, election.TimerElection), Flush())
	cfg := Config{
		Name:    "four members in two clusters {n1,n2} and {n3,n4} led at term 1, n1 joins n3, PreVote off, floor 2",
		Members: 4, Bootstrap: [][]int{{1}, {0}, {3}, {2}}, MinClusterSize: 2, Durable: true,
		Script: []Input{{Member: 0, Peer: 2}}, Prefix: then(formed, NextInput()), MaxDepth: 5,
		Invariants: []Invariant{OneLeaderPerLineageAndTerm, TermsNeverDecrease, NoLeaderBelowMinClusterSize,
			OneKeyOneMembership, ViewsThatCanElectIntersect},
		Goals: []Goal{anyView("a view across both clusters", func(v election.View) bool { return has(v, 0) && has(v, 2) })},
	}
	keeps(t, cfg)
	t.Run("one leader per term, whatever the lineage, reports the two clusters", func(t *testing.T) {
		cfg.Invariants = Default()
		res := run(t, cfg)
		require.NotNil(t, res.Violation)
		require.Empty(t, res.Violation.Path, "the prefix already made them")
		require.Contains(t, res.Violation.Err.Error(), "n1#1 (lineage 1@n1@mc) and n3#1 (lineage 1@n3@mc) both led term 1")
	})
}

// The checker has teeth: a shell that keeps nothing across restarts (no
// durable state) lets a restarted member vote again in a term it voted in,
// and the search finds two lives of n1 leading term 1. With n1 already
// restarted from nothing, n2 restarting from nothing is enough: n2 forgets
// it granted n1's first life term 1 and the view it acknowledged, and grants
// n1's second life a fresh formation of term 1.
func TestCheckerFindsTheDoubleVoteOfARestartWithoutDurableState(t *testing.T) {
	t.Parallel()
	cfg := Config{Name: "three members led by n1, n1 restarted without durable state, one more crash", Members: 3, MinClusterSize: 2,
		Crashes: 2, Prefix: then(ledByN1, Crash(0), Restart(0)), NoProbes: true, MaxDepth: 5}
	res := run(t, cfg)
	require.NotNil(t, res.Violation, "a restart from nothing must be able to vote twice in one term")
	t.Logf("%v", res.Violation)
	require.Equal(t, OneLeaderPerTerm.Name, res.Violation.Invariant)
	require.Contains(t, res.Violation.Err.Error(), "n1#1 (lineage 1@n1@mc) and n1#2 (lineage 1@n1@mc) both led term 1")
	_, again, err := Replay(cfg, res.Violation.Path)
	require.NoError(t, err)
	require.NotNil(t, again, "the trace must replay to the violation")
	require.Equal(t, res.Violation.Err.Error(), again.Err.Error())
	t.Run("the same paths with durable state break nothing", func(t *testing.T) {
		cfg.Durable = true
		cfg.Invariants = withViews()
		res := run(t, cfg)
		require.Nil(t, res.Violation)
	})
}

// Sleep sets prune transitions, never states: with exact keys (every field,
// clocks and random sources included, so no abstraction merges states) the
// reduced search finds at every depth exactly the states the full one finds.
func TestSleepSetsPruneNoState(t *testing.T) {
	t.Parallel()
	cfgs := []Config{
		{Name: "three members with every kind of action", Members: 3, MinClusterSize: 2, PreVote: true, Durable: true, Crashes: 1, Kills: 1,
			Disconnects: 1, Duplicates: 1, StorageFaults: 1, Drops: true, Script: []Input{{Member: 0, Peer: 2, Leave: true}, {Member: 0, Peer: 2}}, MaxDepth: 2},
		{Name: "three members led by n1, with crashes, kills, disconnects, a duplicate and a script", Members: 3, MinClusterSize: 2,
			Crashes: 1, Kills: 1, Disconnects: 1, Duplicates: 1, Script: []Input{{Member: 1, Peer: 2, Leave: true}, {Member: 1, Peer: 2}},
			Prefix: ledByN1, MaxDepth: 3},
		{Name: "four members led by n1", Members: 4, MinClusterSize: 2, Durable: true, Crashes: 1, Duplicates: 1, Prefix: ledByN1, MaxDepth: 3},
	}
	for _, cfg := range cfgs {
		t.Run(cfg.Name, func(t *testing.T) {
			cfg.exactKeys = true
			reduced, err := Check(cfg)
			require.NoError(t, err)
			cfg.fullSearch = true
			full, err := Check(cfg)
			require.NoError(t, err)
			require.Equal(t, full.PerDepth, reduced.PerDepth)
			require.Less(t, reduced.Transitions, full.Transitions)
			t.Logf("full: %s\nreduced: %s", full, reduced)
		})
	}
}

// QuorumIntersection finds two disjoint majorities of two views exactly
// when there are some: never for views that differ by one member (the
// single-server change), and for views that differ by more, only when one
// side's majority can avoid the other's.
func TestDisjointMajoritiesOfTwoViewsAreFoundWhenThereAreSome(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		a, b     string
		disjoint bool
	}{
		{"equal views always meet", "1234", "1234", false},
		{"views nested by one meet", "123", "1234", false},
		{"a view of two inside a view of three meets it", "12", "123", false},
		{"views nested by two can miss each other", "123", "12345", true},
		{"views nested by two can also meet", "1234", "123456", false},
		{"overlapping views of three in four can miss each other", "123", "234", true},
		{"views with no member in common miss each other", "12", "34", true},
		{"a view of one misses a view of three without it", "1", "234", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			qa, qb, ok := disjointMajorities(atoms(c.a), atoms(c.b))
			require.Equal(t, c.disjoint, ok)
			if ok {
				require.Greater(t, 2*len(qa), len(c.a))
				require.Greater(t, 2*len(qb), len(c.b))
				for _, n := range qa {
					require.NotContains(t, qb, n)
				}
			}
		})
	}
}

// atoms turns "134" into the nodes of members n1, n3 and n4.
func atoms(s string) []gen.Atom {
	var out []gen.Atom
	for _, r := range s {
		out = append(out, node(int(r-'1')))
	}
	return out
}

// CanBothWin says which two views could elect in one term: agreed views of
// one lineage, each with a majority of its members holding views that
// would grant it (R2).
func TestCanBothWinReadsTheVotersViews(t *testing.T) {
	t.Parallel()
	lineage := election.Lineage{Term: 1, Node: node(0)}
	view := func(members string, term, epoch uint64, agreed bool) *View {
		return &View{Members: atoms(members), Lineage: lineage, Key: election.ViewKey{Term: term, Epoch: epoch}, Agreed: agreed}
	}
	other := &View{Members: atoms("1234"), Lineage: election.Lineage{Term: 2, Node: node(3)}, Key: election.ViewKey{Term: 2, Epoch: 1}, Agreed: true}
	v1, v2, v3 := view("1234", 2, 1, true), view("123", 2, 2, true), view("12", 2, 3, true)
	cases := []struct {
		name  string
		a, b  *View
		held  []*View // by member, n1 first
		could bool
	}{
		{"a leader's uncommitted change and its parent can both win",
			v1, v2, []*View{v2, v1, v1, v1}, true},
		{"a parent whose majority took the change cannot win",
			v1, v2, []*View{v2, v2, v1, v1}, false},
		{"two changes apart, the older cannot win once the first committed",
			v1, v3, []*View{v3, v2, v2, v1}, false},
		{"members without a view grant anyone",
			v1, v3, []*View{v3, nil, nil, v1}, true},
		{"a member of another agreed lineage grants neither",
			v1, v2, []*View{v2, other, other, v1}, false},
		{"views of another lineage are another cluster",
			v1, other, []*View{v1, v1, other, other}, false},
		{"a view not agreed elects only in a formation",
			v1, view("123", 2, 2, false), []*View{nil, nil, nil, nil}, false},
		{"one view is not two",
			v1, v1, []*View{v1, v1, v1, v1}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.could, CanBothWin(*c.a, *c.b, c.held))
		})
	}
}

func TestTraceReadsOneActionPerLine(t *testing.T) {
	t.Parallel()
	cfg := Config{Name: "trace", Members: 3, MinClusterSize: 2, Prefix: met}
	lines, err := Trace(cfg, []Action{Fire(0, election.TimerElection), Deliver(0, 1), Deliver(1, 0)})
	require.NoError(t, err)
	require.Len(t, lines, 5)
	require.Contains(t, lines[1], "p1. deliver everything in flight")
	require.Contains(t, lines[2], "1. fire n1's election timer")
	require.Contains(t, lines[3], "2. deliver n1#1→n2 RequestVote{Term:1 Declared:{n1,n2,n3}}")
	require.Contains(t, lines[4], "3. deliver n2#1→n1 Vote{Term:1 Granted Declared:{n2,n1,n3}}")
	require.True(t, strings.HasSuffix(lines[4], "n1:hidden-leader@1 v3/t1e1? n2:follower@1 v- n3:follower@0 v-"), lines[4])
}

func TestConfigsThatCannotRunAreRefused(t *testing.T) {
	t.Parallel()
	bad := map[string]Config{
		"one member is no cluster":              {Members: 1, MaxDepth: 1},
		"a Bootstrap list per member":           {Members: 3, Bootstrap: [][]int{nil}, MaxDepth: 1},
		"a Bootstrap naming a stranger":         {Members: 3, Bootstrap: [][]int{{5}, nil, nil}, MaxDepth: 1},
		"a script input naming one member":      {Members: 3, Script: []Input{{Member: 1, Peer: 1}}, MaxDepth: 1},
		"a negative budget":                     {Members: 3, Crashes: -1, MaxDepth: 1},
		"a negative GhostTTL":                   {Members: 3, GhostTTL: -time.Second, MaxDepth: 1},
		"storage faults without a state file":   {Members: 3, StorageFaults: 1, MaxDepth: 1},
		"a prefix action that is not there":     {Members: 3, Prefix: []Action{Restart(0)}, MaxDepth: 1},
		"a prefix healing a disk that is sound": {Members: 3, Durable: true, Prefix: []Action{DiskHeal(0)}, MaxDepth: 1},
	}
	for name, cfg := range bad {
		t.Run(name+" is refused", func(t *testing.T) {
			_, err := Check(cfg)
			require.ErrorIs(t, err, gen.ErrIncorrect)
		})
	}
}

// fourFormed: four members at a floor of 3; n1 has won term 1's formation
// with the grants of n2 and n3 (n4's is in flight) and its heartbeats
// carrying the fresh view {n1..n4} are in flight.
func fourFormed() []Action {
	return then(met, Fire(0, election.TimerElection),
		Deliver(0, 1), Deliver(0, 2), Deliver(0, 3), Deliver(1, 0), Deliver(2, 0))
}

// R13 in four members at a floor of 3 (above half): n1's first view reached
// two members, three acceptors with n1, and n1 died; a survivor counts
// itself, the other holder and n1, and leads the view. Or it reached one
// only: two acceptors are not enough, and the survivors form again, which
// re-proposes it. The searches crash once more at any point (a durable
// restart of n1 included), or fail a disk.
func TestLeaderDiesRightAfterFormingFourMembers(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Name: "four members, n1 formed at floor 3, two heard the view, n1 crashed, one more durable crash",
			Members: 4, MinClusterSize: 3, Durable: true, Crashes: 2, Prefix: then(fourFormed(), Deliver(0, 1), Deliver(0, 2), Crash(0)), NoProbes: true, MaxDepth: 5},
		{Name: "four members, n1 formed at floor 3, two heard the view, n1 crashed, a disk failure",
			Members: 4, MinClusterSize: 3, Durable: true, Crashes: 1, StorageFaults: 1, Prefix: then(fourFormed(), Deliver(0, 1), Deliver(0, 2), Crash(0)), NoProbes: true, MaxDepth: 5},
		{Name: "four members, n1 formed at floor 3, one heard the view, n1 crashed, one more durable crash",
			Members: 4, MinClusterSize: 3, Durable: true, Crashes: 2, Prefix: then(fourFormed(), Deliver(0, 1), Crash(0)), NoProbes: true, MaxDepth: 5},
	} {
		t.Run(cfg.Name, func(t *testing.T) {
			t.Parallel()
			cfg.Invariants = withViews()
			cfg.Goals = []Goal{survivorLeads}
			keeps(t, cfg)
		})
	}
}
