package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
	"github.com/regent-go/regent/testing/history"
)

func TestProductionDefaults(t *testing.T) {
	t.Run("a zero template runs production's election defaults", func(t *testing.T) {
		s, err := New(Config{Seed: 1, Members: 3})
		require.NoError(t, err)
		st, ok := s.Status(0)
		require.True(t, ok)
		want := election.Config{}.WithDefaults()
		assert.Equal(t, want.MinClusterSize, st.MinClusterSize)
		assert.Equal(t, want.ElectionTimeoutMin, st.ElectionTimeoutMin)
		assert.Equal(t, want.ElectionTimeoutMax, st.ElectionTimeoutMax)
		assert.Equal(t, want.HeartbeatInterval, st.HeartbeatInterval)
		assert.Equal(t, want.GhostTTL, st.GhostTTL)
		e := s.Config().Election
		assert.False(t, e.DisablePreVote || e.DisableFastFailover, "PreVote and fast failover are on")
		assert.Equal(t, election.EvidenceReplies, e.Evidence)
	})
	t.Run("a test that wants PreVote off says so, and an isolated member's term then climbs", func(t *testing.T) {
		terms := map[bool]uint64{}
		for _, off := range []bool{false, true} {
			s, l := start(t, quiet(13, func(c *Config) { c.Election.DisablePreVote = off }))
			other := (l + 1) % 5
			require.NoError(t, s.Isolate(other))
			s.Run(3 * time.Second)
			terms[off] = s.Term(other) - s.Term(l)
			requireClean(t, s)
		}
		assert.Zero(t, terms[false], "with PreVote the isolated member's term stays put")
		assert.Greater(t, terms[true], uint64(3), "without it the isolated member campaigns at ever higher terms")
	})
	t.Run("RandomConfig keeps production's defaults half the time and varies them otherwise", func(t *testing.T) {
		defaults, varied := map[string]int{}, map[string]int{}
		count := func(name string, isDefault bool) {
			if isDefault {
				defaults[name]++
			} else {
				varied[name]++
			}
		}
		for seed := uint64(1); seed <= 200; seed++ {
			e := RandomConfig(seed, chaosSpan).Election
			count("MinClusterSize", e.MinClusterSize == 0)
			count("timeouts", e.ElectionTimeoutMin == 0 && e.HeartbeatInterval == 0)
			count("GhostTTL", e.GhostTTL == 0)
			count("PreVote", !e.DisablePreVote)
			count("Evidence", e.Evidence == election.EvidenceReplies)
		}
		for _, name := range []string{"MinClusterSize", "timeouts", "GhostTTL", "PreVote", "Evidence"} {
			assert.Greater(t, defaults[name], 40, "%s kept at its default", name)
			assert.Greater(t, varied[name], 40, "%s varied", name)
		}
	})
}

func TestBootstrapKinds(t *testing.T) {
	lists := func(k BootstrapKind, n int) [][]int {
		return Config{Seed: 1, Members: n, Bootstrap: k}.withDefaults().Lists
	}
	t.Run("each kind shapes the declared lists as documented", func(t *testing.T) {
		assert.Equal(t, [][]int{{1, 2, 3, 4}, {0, 2, 3, 4}, {0, 1, 3, 4}, {0, 1, 2, 4}, {0, 1, 2, 3}}, lists(BootstrapAll, 5))
		assert.Equal(t, [][]int{{1, 2}, {0, 2}, {0, 1, 3, 4}, {0, 1, 2, 4}, {0, 1, 2, 3}}, lists(BootstrapNested, 5), "issue 11's first scenario")
		assert.Equal(t, [][]int{{1}, {0}, {3, 4}, {2, 4}, {2, 3}}, lists(BootstrapHalves, 5))
		assert.Equal(t, [][]int{{1}, {2}, {3}, {4}, {0}}, lists(BootstrapRing, 5))
		for i, l := range lists(BootstrapOverlapping, 7) {
			for k := 1; k <= 3; k++ {
				assert.Contains(t, l, (i+k)%7, "member %d declares the window after it", i)
			}
		}
	})
	for _, k := range []BootstrapKind{BootstrapAll, BootstrapNested, BootstrapOverlapping, BootstrapHalves, BootstrapRing} {
		t.Run(fmt.Sprintf("members declared as %s form one cluster of all", k), func(t *testing.T) {
			cfg := Config{Seed: 2, Members: 5, Bootstrap: k}
			if k == BootstrapHalves {
				cfg.Plan = []Fault{{At: time.Second, Kind: FaultJoin, Member: 0, Peer: 4}}
			}
			s, err := New(cfg)
			require.NoError(t, err)
			require.True(t, s.RunUntil(func() bool { return s.Now() > time.Second && s.Settled() }, 20*time.Second), "%s", s.History())
			requireClean(t, s)
		})
	}
}

// cutPairs reports whether the history recorded a non-transitive cut.
func cutPairs(h *history.History) bool {
	for _, e := range h.Events() {
		if e.Kind == history.KindPartition && len(e.Cuts) > 0 && e.Groups == nil {
			return true
		}
	}
	return false
}

func TestBridgeAndLongCuts(t *testing.T) {
	t.Run("a bridge cut held for ten GhostTTLs keeps one leader, recorded as cut pairs", func(t *testing.T) {
		// Issue 11's third scenario: the leader's side and the far side
		// cannot reach each other; one member reaches both.
		s, l := start(t, quiet(14, func(c *Config) { c.Election.GhostTTL = 500 * time.Millisecond }))
		require.NoError(t, s.Bridge([]int{l, (l + 1) % 5}, []int{(l + 3) % 5, (l + 4) % 5}))
		s.Run(5 * time.Second)
		assert.Len(t, s.Leaders(), 1)
		assert.True(t, cutPairs(s.History()), "%s", s.History())
		require.NoError(t, s.Heal())
		require.True(t, s.RunUntil(s.Settled, s.Bounds().Converge))
		requireClean(t, s)
	})
	t.Run("a minority cut off for twenty GhostTTLs keeps its view and elects nobody", func(t *testing.T) {
		s, l := start(t, Config{Seed: 15, Members: 7, Election: election.Config{MinClusterSize: 4, GhostTTL: 500 * time.Millisecond}})
		minority := []int{(l + 1) % 7, (l + 2) % 7, (l + 3) % 7}
		require.NoError(t, s.Partition(minority, others(7, minority)))
		s.Run(10 * time.Second)
		for _, i := range minority {
			st, _ := s.Status(i)
			assert.Equal(t, 7, st.ViewSize, "m%d never shrinks its view without a leader", i+1)
			assert.NotContains(t, s.Leaders(), i)
		}
		st, _ := s.Status(s.Leaders()[0])
		assert.Equal(t, 4, st.ViewSize, "the majority's leader removed the silent minority")
		require.NoError(t, s.Heal())
		require.True(t, s.RunUntil(s.Settled, s.Bounds().Converge), "the minority is admitted again")
		requireClean(t, s)
	})
}

func TestJoinAndLeave(t *testing.T) {
	t.Run("members withdrawn by Leave are removed, and declared again they are admitted again", func(t *testing.T) {
		s, l := start(t, quiet(16, nil))
		a, b := (l+1)%5, (l+2)%5
		require.NoError(t, s.Leave(l, a))
		require.NoError(t, s.Leave((l+3)%5, b))
		require.True(t, s.RunUntil(func() bool { st, _ := s.Status(l); return st.ViewSize == 3 }, 5*time.Second))
		require.NoError(t, s.Join(l, a))
		require.NoError(t, s.Join((l+3)%5, b))
		require.True(t, s.RunUntil(s.Settled, s.Bounds().Converge))
		kinds := map[history.Kind]int{}
		for _, e := range s.History().Events() {
			kinds[e.Kind]++
		}
		assert.Equal(t, 2, kinds[history.KindLeave])
		assert.Equal(t, 2, kinds[history.KindJoin])
		requireClean(t, s)
	})
	t.Run("a member cannot leave or join itself", func(t *testing.T) {
		s, err := New(quiet(16, nil))
		require.NoError(t, err)
		require.ErrorIs(t, s.Leave(1, 1), gen.ErrIncorrect)
	})
}

func TestFaultsDuringViewChanges(t *testing.T) {
	t.Run("a restart awaiting a view change lands while the stopped member's removal is in flight", func(t *testing.T) {
		cfg := quiet(17, nil)
		cfg.Plan = []Fault{
			{At: time.Second, Kind: FaultStop, Member: 2},
			{At: time.Second + time.Millisecond, Kind: FaultRestart, Member: 2, AwaitChange: time.Second},
		}
		s, err := New(cfg)
		require.NoError(t, err)
		require.True(t, s.RunUntil(func() bool { return s.Now() > 2*time.Second && s.Settled() }, 10*time.Second))
		assert.Contains(t, s.Schedule().String(), "restart m3 (on a view change)")
		requireClean(t, s)
	})
	t.Run("TheSubject is the member the last proposed change added or removed", func(t *testing.T) {
		s, l := start(t, quiet(18, nil))
		s.Run(time.Second)
		a := (l + 1) % 5
		require.NoError(t, s.Leave(l, a))
		require.NoError(t, s.Crash(TheSubject))
		plan := s.Schedule().Plan()
		assert.Equal(t, a, plan[len(plan)-1].Member, "the member the leader's removal names")
	})
}

func TestRogues(t *testing.T) {
	t.Run("a second actor is refused until every live member's view names the real one", func(t *testing.T) {
		s, err := New(quiet(19, nil))
		require.NoError(t, err)
		require.ErrorIs(t, s.Rogue(1), gen.ErrNotAllowed)
		assert.Contains(t, s.Schedule().String(), "does not name m2 yet")
	})
	t.Run("started once every view names the real member, it is dropped as duplicate_member and never leads", func(t *testing.T) {
		s, _ := start(t, quiet(20, nil))
		s.Run(time.Second)
		for i := range 5 {
			require.NoError(t, s.Rogue(i), "%s", s.Schedule())
		}
		s.Run(5 * time.Second)
		for i := range 5 {
			st, ok := s.RogueStatus(i)
			require.True(t, ok)
			assert.False(t, st.ProtocolLeader, "the second actor on m%d's node", i+1)
			assert.Nil(t, st.View, "nobody answers it, so it never holds a view")
		}
		dropped := uint64(0)
		for i := range 5 {
			st, _ := s.Status(i)
			dropped += st.Dropped["duplicate_member"]
		}
		assert.NotZero(t, dropped)
		require.NoError(t, s.EndRogues())
		require.True(t, s.RunUntil(s.Settled, s.Bounds().Converge))
		requireClean(t, s)
	})
}

// coverage counts, over a schedule, the faults applied and skipped by
// kind, and those that landed on a view change.
func coverage(sched Schedule, applied, skipped map[string]int) {
	for _, e := range sched.Entries {
		kind := e.Fault.Kind.String()
		switch {
		case !e.Applied:
			skipped[kind]++
		case strings.HasSuffix(e.What, "(on a view change)"):
			applied[kind+" on a view change"]++
			applied[kind]++
		default:
			applied[kind]++
		}
	}
}
