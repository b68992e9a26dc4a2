package history

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

const ms = time.Millisecond

// state is a KindState event of life 1 in a five-member view with quorum 3.
func state(at time.Duration, member, role string, term uint64, leader string) Event {
	return Event{At: at, Kind: KindState, Member: member, Life: 1, Role: role, Term: term, Leader: leader,
		ViewSize: 5, Quorum: 3, MinClusterSize: 3, VotesGranted: 3}
}

// leading is a's KindState as leader at term 1 with votes granted in a view
// of size view with quorum.
func leading(at time.Duration, votes, view, quorum int) Event {
	e := state(at, "a", RoleLeader, 1, "a")
	e.VotesGranted, e.ViewSize, e.Quorum = votes, view, quorum
	return e
}

func build(events ...Event) *History {
	h := New()
	for _, e := range events {
		h.Append(e)
	}
	return h
}

// requireViolation asserts err is a Violation of rule whose context marks
// the offending event.
func requireViolation(t *testing.T, err error, rule string) *Violation {
	t.Helper()
	var v *Violation
	require.True(t, errors.As(err, &v), "want a violation of %q, got %v", rule, err)
	assert.Equal(t, rule, v.Rule)
	assert.Contains(t, v.Context, "> #", "the context marks the offending event")
	assert.Contains(t, err.Error(), v.Context, "the error prints the history around the violation")
	return v
}

// cluster of five members a..e, all following a at term 1.
func settled(at time.Duration) []Event {
	return []Event{
		state(at, "a", RoleLeader, 1, "a"),
		state(at, "b", RoleFollower, 1, "a"),
		state(at, "c", RoleFollower, 1, "a"),
		state(at, "d", RoleFollower, 1, "a"),
		state(at, "e", RoleFollower, 1, "a"),
	}
}

func TestElectionSafety(t *testing.T) {
	t.Run("two members leading at one term is a violation", func(t *testing.T) {
		h := build(state(10*ms, "a", RoleLeader, 3, "a"), state(20*ms, "a", RoleFollower, 3, ""),
			state(30*ms, "b", RoleLeader, 3, "b"))
		v := requireViolation(t, CheckElectionSafety(h), RuleElectionSafety)
		assert.Equal(t, 2, v.Index)
		assert.Contains(t, v.Detail, "b#1 leads at term 3, which a#1 already led")
	})
	t.Run("two lives of one member leading at one term is a violation", func(t *testing.T) {
		second := state(90*ms, "a", RoleLeader, 1, "a")
		second.Life = 2
		h := build(state(10*ms, "a", RoleLeader, 1, "a"), Event{At: 50 * ms, Kind: KindCrash, Member: "a", Life: 1},
			Event{At: 60 * ms, Kind: KindRestart, Member: "a", Life: 2}, second)
		requireViolation(t, CheckElectionSafety(h), RuleElectionSafety)
	})
	t.Run("successive leaders at growing terms pass", func(t *testing.T) {
		h := build(state(10*ms, "a", RoleLeader, 1, "a"), state(11*ms, "a", RoleLeader, 1, "a"),
			state(20*ms, "b", RoleLeader, 2, "b"), state(30*ms, "a", RoleLeader, 3, "a"))
		require.NoError(t, CheckElectionSafety(h))
	})
}

func TestLeaderMajority(t *testing.T) {
	t.Run("a leader with two votes in a view of five is a violation", func(t *testing.T) {
		h := build(state(0, "a", RoleCandidate, 1, ""), leading(10*ms, 2, 5, 3))
		v := requireViolation(t, CheckLeaderMajority(h), RuleLeaderMajority)
		assert.Equal(t, 1, v.Index)
	})
	t.Run("a quorum below a strict majority does not excuse a leader", func(t *testing.T) {
		requireViolation(t, CheckLeaderMajority(build(leading(10*ms, 2, 4, 2))), RuleLeaderMajority)
	})
	t.Run("a view that grows while leading is not a violation", func(t *testing.T) {
		require.NoError(t, CheckLeaderMajority(build(leading(10*ms, 2, 3, 2), leading(20*ms, 2, 5, 3))))
	})
}

func TestMinClusterSize(t *testing.T) {
	t.Run("a leader in a view below MinClusterSize is a violation", func(t *testing.T) {
		requireViolation(t, CheckMinClusterSize(build(leading(10*ms, 2, 2, 2))), RuleMinClusterSize)
	})
	t.Run("an unclustered member in a small view passes", func(t *testing.T) {
		e := state(10*ms, "a", RoleUnclustered, 1, "")
		e.ViewSize = 1
		require.NoError(t, CheckMinClusterSize(build(e)))
	})
}

func TestTermMonotonic(t *testing.T) {
	t.Run("a term going down within a life is a violation", func(t *testing.T) {
		h := build(state(10*ms, "a", RoleFollower, 4, ""), state(20*ms, "a", RoleFollower, 3, ""))
		v := requireViolation(t, CheckTermMonotonic(h), RuleTermMonotonic)
		assert.Contains(t, v.Detail, "term 3 after term 4")
	})
	t.Run("a term going down across a durable restart is a violation", func(t *testing.T) {
		later := state(40*ms, "a", RoleFollower, 1, "")
		later.Life = 2
		h := build(state(10*ms, "a", RoleFollower, 4, ""), Event{At: 20 * ms, Kind: KindCrash, Member: "a", Life: 1},
			Event{At: 30 * ms, Kind: KindRestart, Member: "a", Life: 2, Durable: true}, later)
		requireViolation(t, CheckTermMonotonic(h), RuleTermMonotonic)
	})
	t.Run("a fresh restart may start from term zero", func(t *testing.T) {
		later := state(40*ms, "a", RoleFollower, 0, "")
		later.Life = 2
		h := build(state(10*ms, "a", RoleFollower, 4, ""), Event{At: 20 * ms, Kind: KindCrash, Member: "a", Life: 1},
			Event{At: 30 * ms, Kind: KindRestart, Member: "a", Life: 2}, later)
		require.NoError(t, CheckTermMonotonic(h))
	})
}

func TestSingleVote(t *testing.T) {
	vote := func(at time.Duration, life int, term uint64, for_ string) Event {
		return Event{At: at, Kind: KindVote, Member: "b", Life: life, Term: term, VotedFor: for_}
	}
	t.Run("a restarted member voting again at the same term is a violation", func(t *testing.T) {
		h := build(vote(10*ms, 1, 1, "a"), Event{At: 20 * ms, Kind: KindCrash, Member: "b", Life: 1},
			Event{At: 30 * ms, Kind: KindRestart, Member: "b", Life: 2}, vote(40*ms, 2, 1, "c"))
		v := requireViolation(t, CheckSingleVote(h), RuleSingleVote)
		assert.Contains(t, v.Detail, "b#2 votes for c at term 1 after b#1 voted for a")
	})
	t.Run("repeating the same vote and voting at later terms pass", func(t *testing.T) {
		h := build(vote(10*ms, 1, 1, "a"), vote(20*ms, 1, 1, "a"), vote(30*ms, 1, 2, "c"))
		require.NoError(t, CheckSingleVote(h))
	})
}

func TestConvergence(t *testing.T) {
	heal := Event{At: 100 * ms, Kind: KindHeal}
	t.Run("a single followed leader within the bound passes", func(t *testing.T) {
		h := build(append([]Event{heal}, settled(400*ms)...)...)
		h.Finish(2 * time.Second)
		require.NoError(t, CheckConvergence(h, 500*ms))
		d, ok := SettleTime(h)
		require.True(t, ok)
		assert.Equal(t, 300*ms, d)
	})
	t.Run("converging later than the bound is a violation", func(t *testing.T) {
		h := build(append([]Event{heal}, settled(900*ms)...)...)
		v := requireViolation(t, CheckConvergence(h, 500*ms), RuleConvergence)
		assert.Equal(t, 900*ms, v.At)
	})
	t.Run("two leaders until the end of observation is a violation", func(t *testing.T) {
		events := append([]Event{heal}, settled(200*ms)...)
		events = append(events, state(200*ms, "e", RoleLeader, 2, "e"))
		h := build(events...)
		h.Finish(2 * time.Second)
		v := requireViolation(t, CheckConvergence(h, 500*ms), RuleConvergence)
		assert.Contains(t, v.Detail, "no single leader")
		_, ok := SettleTime(h)
		assert.False(t, ok)
	})
	t.Run("a member that follows nobody keeps the cluster unconverged", func(t *testing.T) {
		events := append([]Event{heal}, settled(200*ms)...)
		events = append(events, state(200*ms, "e", RoleFollower, 1, ""))
		h := build(events...)
		h.Finish(2 * time.Second)
		requireViolation(t, CheckConvergence(h, 500*ms), RuleConvergence)
	})
	t.Run("a history that ends partitioned is not judged", func(t *testing.T) {
		h := build(Event{At: 100 * ms, Kind: KindPartition, Groups: [][]string{{"a", "b", "c"}, {"d", "e"}}})
		h.Finish(10 * time.Second)
		require.NoError(t, CheckConvergence(h, 500*ms))
	})
	t.Run("a history that ends before the bound is not judged", func(t *testing.T) {
		h := build(heal, state(100*ms, "a", RoleCandidate, 2, ""))
		h.Finish(300 * ms)
		require.NoError(t, CheckConvergence(h, 500*ms))
	})
}

func TestIsolatedStepDown(t *testing.T) {
	cut := Event{At: 1000 * ms, Kind: KindPartition, Groups: [][]string{{"a", "b"}, {"c", "d", "e"}}}
	t.Run("a minority leader still leading after the bound is a violation", func(t *testing.T) {
		h := build(append(settled(0), cut)...)
		h.Finish(2 * time.Second)
		v := requireViolation(t, CheckIsolatedStepDown(h, 300*ms), RuleIsolatedStepDown)
		assert.Equal(t, 1300*ms, v.At)
		assert.Contains(t, v.Detail, "a still leads")
	})
	t.Run("a minority leader stepping down within the bound passes", func(t *testing.T) {
		h := build(append(settled(0), cut, state(1250*ms, "a", RoleFollower, 1, ""))...)
		h.Finish(2 * time.Second)
		require.NoError(t, CheckIsolatedStepDown(h, 300*ms))
	})
	t.Run("crashed peers count as unreachable", func(t *testing.T) {
		events := settled(0)
		for _, m := range []string{"c", "d", "e"} {
			events = append(events, Event{At: 1000 * ms, Kind: KindCrash, Member: m, Life: 1})
		}
		events = append(events, state(1500*ms, "a", RoleFollower, 1, ""))
		requireViolation(t, CheckIsolatedStepDown(build(events...), 300*ms), RuleIsolatedStepDown)
	})
	t.Run("a majority leader may keep leading", func(t *testing.T) {
		events := append(settled(0), Event{At: 1000 * ms, Kind: KindPartition, Groups: [][]string{{"a", "b", "c"}, {"d", "e"}}})
		h := build(events...)
		h.Finish(5 * time.Second)
		require.NoError(t, CheckIsolatedStepDown(h, 300*ms))
	})
	t.Run("a member left out of every group is cut off", func(t *testing.T) {
		events := append(settled(0), Event{At: 1000 * ms, Kind: KindPartition, Groups: [][]string{{"b", "c", "d", "e"}}})
		h := build(events...)
		h.Finish(5 * time.Second)
		requireViolation(t, CheckIsolatedStepDown(h, 300*ms), RuleIsolatedStepDown)
	})
	t.Run("a heal before the bound ends the isolation", func(t *testing.T) {
		h := build(append(settled(0), cut, Event{At: 1200 * ms, Kind: KindHeal})...)
		h.Finish(5 * time.Second)
		require.NoError(t, CheckIsolatedStepDown(h, 300*ms))
	})
}

func TestCheckAll(t *testing.T) {
	t.Run("a clean history has no violations", func(t *testing.T) {
		h := build(settled(300 * ms)...)
		h.Finish(time.Second)
		assert.Empty(t, CheckAll(h, Bounds{Converge: time.Second, StepDown: 300 * ms}))
	})
	t.Run("every broken rule is reported", func(t *testing.T) {
		minority := leading(10*ms, 1, 2, 2)
		minority.Member, minority.Leader = "b", "b"
		h := build(state(5*ms, "a", RoleLeader, 1, "a"), minority, state(20*ms, "a", RoleFollower, 0, ""))
		h.Finish(time.Second)
		vs := CheckAll(h, Bounds{Converge: 100 * ms})
		var rules []string
		for _, v := range vs {
			rules = append(rules, v.Rule)
		}
		assert.Equal(t, []string{RuleElectionSafety, RuleLeaderMajority, RuleMinClusterSize, RuleTermMonotonic, RuleConvergence}, rules)
		assert.Contains(t, Report(vs), RuleMinClusterSize)
	})
}

func TestHistoryConcurrentAppend(t *testing.T) {
	t.Run("observers of several members may append to one history at once", func(t *testing.T) {
		defer goleak.VerifyNone(t)
		h := New()
		var wg sync.WaitGroup
		for m := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 100 {
					h.Append(state(time.Duration(i)*ms, fmt.Sprintf("m%d", m), RoleFollower, uint64(i), ""))
				}
			}()
		}
		wg.Wait()
		require.Equal(t, 400, h.Len())
		events := h.Events()
		for i := 1; i < len(events); i++ {
			require.LessOrEqual(t, events[i-1].At, events[i].At, "events come back in time order")
		}
		require.NoError(t, CheckTermMonotonic(h))
	})
}

func TestHistoryTable(t *testing.T) {
	t.Run("the table lists events in time order with their fields", func(t *testing.T) {
		h := build(state(20*ms, "b", RoleFollower, 2, "a"),
			Event{At: 10 * ms, Kind: KindPartition, Groups: [][]string{{"a"}, {"b", "c"}}})
		s := h.String()
		assert.Regexp(t, `(?s)#0 .*partition \{a\} \| \{b,c\}.*#1 .*b#1 follower .*term=2 leader="a"`, s)
		assert.Equal(t, 2, h.Len())
		assert.Equal(t, 20*ms, h.End())
	})
}

// viewed is s with the view fields a recorder that knows views fills in:
// lineage, key, agreed with its size and quorum, and the members.
func viewed(e Event, lineage string, agreed bool, members ...string) Event {
	e.Lineage, e.ViewTerm, e.ViewEpoch, e.Agreed, e.View = lineage, e.Term, 1, agreed, members
	e.ViewSize, e.Quorum = len(members), len(members)/2+1
	if agreed {
		e.AgreedSize, e.AgreedQuorum = e.ViewSize, e.Quorum
	}
	e.ProtocolLeader = e.Role == RoleLeader || e.ProtocolLeader
	return e
}

var five = []string{"a", "b", "c", "d", "e"}

func TestElectionSafetyPerLineage(t *testing.T) {
	hidden := func(at time.Duration, member string, term uint64, lineage string) Event {
		e := viewed(state(at, member, RoleUnclustered, term, member), lineage, true, five...)
		e.ProtocolLeader = true
		return e
	}
	t.Run("two protocol leaders of one lineage and term are a violation, visible or not", func(t *testing.T) {
		h := build(hidden(10*ms, "a", 2, "1@a"), hidden(20*ms, "b", 2, "1@a"))
		requireViolation(t, CheckElectionSafety(h), RuleElectionSafety)
	})
	t.Run("leaders of two lineages at one term pass when two clusters may exist", func(t *testing.T) {
		a, b := hidden(10*ms, "a", 2, "1@a"), hidden(20*ms, "b", 2, "1@b")
		a.MinClusterSize, b.MinClusterSize = 2, 2
		require.NoError(t, CheckElectionSafety(build(a, b)))
	})
	t.Run("leaders of two lineages at one term are a violation when twice MinClusterSize exceeds the members", func(t *testing.T) {
		v := requireViolation(t, CheckElectionSafety(build(hidden(10*ms, "a", 2, "1@a"), hidden(20*ms, "b", 2, "1@b"))), RuleElectionSafety)
		assert.Contains(t, v.Detail, "any lineage")
	})
}

func TestSingleLineage(t *testing.T) {
	agreed := func(at time.Duration, member, lineage string, min int) Event {
		e := viewed(state(at, member, RoleFollower, 1, ""), lineage, true, five...)
		e.MinClusterSize = min
		return e
	}
	t.Run("a second agreed lineage with MinClusterSize above half the members is a violation", func(t *testing.T) {
		v := requireViolation(t, CheckSingleLineage(build(agreed(10*ms, "a", "1@a", 3), agreed(20*ms, "d", "1@d", 3))), RuleSingleLineage)
		assert.Contains(t, v.Detail, "2 x MinClusterSize 3 > 5 members")
	})
	t.Run("two agreed lineages pass when MinClusterSize allows two clusters", func(t *testing.T) {
		require.NoError(t, CheckSingleLineage(build(agreed(10*ms, "a", "1@a", 2), agreed(20*ms, "d", "1@d", 2),
			state(30*ms, "b", RoleFollower, 1, ""), state(30*ms, "c", RoleFollower, 1, ""), state(30*ms, "e", RoleFollower, 1, ""))))
	})
	t.Run("a proposed lineage that never became agreed does not count", func(t *testing.T) {
		proposed := viewed(state(20*ms, "d", RoleFollower, 1, ""), "1@d", false, five...)
		require.NoError(t, CheckSingleLineage(build(agreed(10*ms, "a", "1@a", 3), proposed)))
	})
	t.Run("a second actor on a member's node does not count as a member", func(t *testing.T) {
		// Three members and a rogue with MinClusterSize 2: 2 x 2 > 3.
		three := func(at time.Duration, member, lineage string, members ...string) Event {
			e := viewed(state(at, member, RoleFollower, 1, ""), lineage, true, members...)
			e.MinClusterSize = 2
			return e
		}
		rogue := three(20*ms, "ar", "1@ar", "ar", "b", "c")
		rogue.Node = "a"
		h := build(three(10*ms, "a", "1@a", "a", "b", "c"), rogue)
		v := requireViolation(t, CheckSingleLineage(h), RuleSingleLineage)
		assert.Contains(t, v.Detail, "> 3 members")
	})
}

func TestOneLeaderAtOnce(t *testing.T) {
	lead := func(at time.Duration, member string, term uint64, lineage string, min int) Event {
		e := viewed(state(at, member, RoleLeader, term, member), lineage, true, five...)
		e.MinClusterSize = min
		return e
	}
	t.Run("two visible leaders of one lineage at different terms beyond the bound are a violation", func(t *testing.T) {
		h := build(lead(0, "a", 1, "1@a", 3), lead(100*ms, "c", 2, "1@a", 3))
		h.Finish(time.Second)
		v := requireViolation(t, CheckOneLeaderAtOnce(h, 300*ms), RuleOneLeaderAtOnce)
		assert.Equal(t, 400*ms, v.At)
		assert.Contains(t, v.Detail, "a (term 1, lineage 1@a), c (term 2, lineage 1@a)")
	})
	t.Run("an old leader stepping down within the bound passes", func(t *testing.T) {
		h := build(lead(0, "a", 1, "1@a", 3), lead(100*ms, "c", 2, "1@a", 3), state(350*ms, "a", RoleFollower, 2, "c"))
		h.Finish(time.Second)
		require.NoError(t, CheckOneLeaderAtOnce(h, 300*ms))
	})
	t.Run("leaders of two lineages at once pass only when two clusters may exist", func(t *testing.T) {
		h := build(lead(0, "a", 1, "1@a", 2), lead(0, "d", 1, "1@d", 2))
		h.Finish(time.Second)
		require.NoError(t, CheckOneLeaderAtOnce(h, 300*ms))
		h = build(lead(0, "a", 1, "1@a", 3), lead(0, "d", 1, "1@d", 3))
		h.Finish(time.Second)
		requireViolation(t, CheckOneLeaderAtOnce(h, 300*ms), RuleOneLeaderAtOnce)
	})
	t.Run("a crashed leader no longer leads", func(t *testing.T) {
		h := build(lead(0, "a", 1, "1@a", 3), Event{At: 50 * ms, Kind: KindCrash, Member: "a", Life: 1}, lead(100*ms, "c", 2, "1@a", 3))
		h.Finish(time.Second)
		require.NoError(t, CheckOneLeaderAtOnce(h, 300*ms))
	})
}

func TestMinClusterSizeOfTheAgreedView(t *testing.T) {
	t.Run("a visible leader whose view is not agreed is a violation", func(t *testing.T) {
		e := viewed(state(10*ms, "a", RoleLeader, 1, "a"), "1@a", false, five...)
		requireViolation(t, CheckMinClusterSize(build(e)), RuleMinClusterSize)
	})
	t.Run("a visible leader of an agreed view below MinClusterSize is a violation", func(t *testing.T) {
		e := viewed(state(10*ms, "a", RoleLeader, 1, "a"), "1@a", true, "a", "b")
		requireViolation(t, CheckMinClusterSize(build(e)), RuleMinClusterSize)
	})
	t.Run("a hidden protocol leader below MinClusterSize passes", func(t *testing.T) {
		e := viewed(state(10*ms, "a", RoleUnclustered, 1, "a"), "1@a", true, "a", "b")
		e.ProtocolLeader = true
		require.NoError(t, CheckMinClusterSize(build(e)))
	})
}

func TestLeaderMajorityIsJudgedWhenTheElectionIsWon(t *testing.T) {
	t.Run("a protocol leader that grows its view before it becomes visible passes", func(t *testing.T) {
		won := viewed(state(10*ms, "a", RoleCandidate, 1, "a"), "1@a", true, "a", "b", "c")
		won.ProtocolLeader, won.VotesGranted = true, 2
		visible := viewed(state(20*ms, "a", RoleLeader, 1, "a"), "1@a", true, five...)
		visible.VotesGranted = 2
		require.NoError(t, CheckLeaderMajority(build(won, visible)))
	})
	t.Run("a protocol leader without a majority of its view is a violation", func(t *testing.T) {
		won := viewed(state(10*ms, "a", RoleCandidate, 1, "a"), "1@a", true, five...)
		won.ProtocolLeader, won.VotesGranted = true, 2
		requireViolation(t, CheckLeaderMajority(build(won)), RuleLeaderMajority)
	})
}

func TestConvergenceNeedsEveryLiveMemberInTheView(t *testing.T) {
	heal := Event{At: 100 * ms, Kind: KindHeal}
	followers := func(at time.Duration, leaderView ...string) []Event {
		out := []Event{heal, viewed(state(at, "a", RoleLeader, 1, "a"), "1@a", true, leaderView...)}
		for _, m := range five[1:] {
			out = append(out, viewed(state(at, m, RoleFollower, 1, "a"), "1@a", true, leaderView...))
		}
		return out
	}
	t.Run("a leader whose view lacks a live member has not converged", func(t *testing.T) {
		h := build(followers(200*ms, "a", "b", "c", "d")...)
		h.Finish(2 * time.Second)
		requireViolation(t, CheckConvergence(h, 500*ms), RuleConvergence)
	})
	t.Run("a leader whose view holds every live member has", func(t *testing.T) {
		h := build(followers(200*ms, five...)...)
		h.Finish(2 * time.Second)
		require.NoError(t, CheckConvergence(h, 500*ms))
	})
	t.Run("a history that ends with a second actor running is not judged", func(t *testing.T) {
		events := append(followers(200*ms, "a", "b"), Event{At: 300 * ms, Kind: KindStart, Member: "ar", Life: 1, Node: "a"})
		h := build(events...)
		h.Finish(5 * time.Second)
		require.NoError(t, CheckConvergence(h, 500*ms))
	})
	t.Run("a join or leave is a fault the bound counts from", func(t *testing.T) {
		events := append(followers(200*ms, five...), Event{At: 1000 * ms, Kind: KindLeave, Member: "b", Life: 1, Peer: "e"})
		h := build(events...)
		h.Finish(5 * time.Second)
		require.NoError(t, CheckConvergence(h, 500*ms), "already converged when the leave was made")
		d, ok := SettleTime(h)
		require.True(t, ok)
		assert.Zero(t, d)
	})
}

func TestIsolatedStepDownOverCutPairs(t *testing.T) {
	leader := viewed(state(0, "a", RoleLeader, 1, "a"), "1@a", true, five...)
	t.Run("a leader that reaches a majority of its view through non-transitive cuts passes", func(t *testing.T) {
		// a reaches b and c; b and c cannot reach d and e.
		cut := Event{At: 100 * ms, Kind: KindPartition, Cuts: [][2]string{{"a", "d"}, {"a", "e"}, {"b", "d"}, {"c", "e"}}}
		h := build(leader, cut)
		h.Finish(5 * time.Second)
		require.NoError(t, CheckIsolatedStepDown(h, 300*ms))
	})
	t.Run("a leader cut from a majority of its view by pairs is a violation", func(t *testing.T) {
		cut := Event{At: 100 * ms, Kind: KindPartition, Cuts: [][2]string{{"a", "c"}, {"a", "d"}, {"a", "e"}}}
		h := build(leader, cut)
		h.Finish(5 * time.Second)
		v := requireViolation(t, CheckIsolatedStepDown(h, 300*ms), RuleIsolatedStepDown)
		assert.Contains(t, v.Detail, "reaching 2 of its view, below its quorum 3")
	})
	t.Run("a hidden protocol leader must step down too", func(t *testing.T) {
		hidden := viewed(state(0, "a", RoleUnclustered, 1, "a"), "1@a", true, "a", "b")
		hidden.ProtocolLeader = true
		h := build(hidden, Event{At: 100 * ms, Kind: KindPartition, Groups: [][]string{{"a"}, {"b", "c", "d", "e"}}})
		h.Finish(5 * time.Second)
		requireViolation(t, CheckIsolatedStepDown(h, 300*ms), RuleIsolatedStepDown)
	})
	t.Run("members outside the view do not count toward its quorum", func(t *testing.T) {
		small := viewed(state(0, "a", RoleLeader, 1, "a"), "1@a", true, "a", "b", "c")
		h := build(small, Event{At: 100 * ms, Kind: KindPartition, Groups: [][]string{{"a", "d", "e"}, {"b", "c"}}})
		h.Finish(5 * time.Second)
		requireViolation(t, CheckIsolatedStepDown(h, 300*ms), RuleIsolatedStepDown)
	})
	t.Run("a second actor shares its host's links and is not running before it starts", func(t *testing.T) {
		rogueView := viewed(state(0, "a", RoleLeader, 1, "a"), "1@a", true, "a", "br", "c")
		h := build(rogueView, Event{At: 50 * ms, Kind: KindPartition, Groups: [][]string{{"a", "b"}, {"c", "d", "e"}}},
			Event{At: 200 * ms, Kind: KindStart, Member: "br", Life: 1, Node: "b"})
		h.Finish(5 * time.Second)
		v := requireViolation(t, CheckIsolatedStepDown(h, 100*ms), RuleIsolatedStepDown)
		assert.Equal(t, 150*ms, v.At, "isolated from the cut at 50ms")
		require.NoError(t, CheckIsolatedStepDown(h, 200*ms), "no longer once br started on b's side at 200ms")
	})
}

func TestLeaseOverlap(t *testing.T) {
	// record builds a history from lease records and ends it at end.
	record := func(end time.Duration, ls ...Lease) *History {
		h := New()
		for _, l := range ls {
			h.RecordLease(l)
		}
		h.Finish(end)
		return h
	}
	lease := func(member string, term uint64, from, until time.Duration) Lease {
		return Lease{Member: member, Life: 1, Term: term, Lineage: "1@a", From: from, Until: until}
	}
	t.Run("two leases of one lineage at different terms held at once beyond the bound are a violation", func(t *testing.T) {
		h := record(time.Second, lease("a", 1, 0, 100*ms), lease("a", 1, 80*ms, 180*ms), lease("c", 2, 120*ms, Forever))
		v := requireViolation(t, CheckLeaseOverlap(h, 50*ms), RuleLeaseOverlap)
		assert.Equal(t, 170*ms, v.At)
		assert.Contains(t, v.Detail, "a#1 (term 1, lineage 1@a) from 0s until 180ms and c#1 (term 2, lineage 1@a) from 120ms until 1s held at once for 60ms")
		assert.Equal(t, 60*ms, MaxLeaseOverlap(h), "a renewal before the lease lapsed extends it")
		require.NoError(t, CheckLeaseOverlap(h, 60*ms))
	})
	t.Run("a lease renewed after it lapsed is a new one: the gap is not held", func(t *testing.T) {
		h := record(time.Second, lease("a", 1, 0, 100*ms), lease("a", 1, 150*ms, 250*ms), lease("c", 2, 120*ms, 200*ms))
		assert.Equal(t, 50*ms, MaxLeaseOverlap(h))
	})
	t.Run("a record of no lease ends the lease there", func(t *testing.T) {
		h := record(time.Second, lease("a", 1, 0, 300*ms), lease("a", 1, 100*ms, 100*ms), lease("c", 2, 100*ms, 400*ms))
		assert.Zero(t, MaxLeaseOverlap(h))
	})
	t.Run("leases at one term or of two lineages are not compared", func(t *testing.T) {
		other := lease("d", 2, 0, time.Second)
		other.Lineage = "1@d"
		h := record(time.Second, lease("a", 1, 0, time.Second), lease("c", 1, 0, time.Second), other)
		assert.Zero(t, MaxLeaseOverlap(h))
	})
	t.Run("a life leading again at a higher term ends its first lease there", func(t *testing.T) {
		h := record(time.Second, lease("a", 1, 0, time.Second), lease("a", 3, 500*ms, time.Second))
		assert.Zero(t, MaxLeaseOverlap(h))
		assert.Equal(t, []Lease{lease("a", 1, 0, 500*ms), lease("a", 3, 500*ms, time.Second)}, h.Leases())
	})
	t.Run("leases of two lineages are compared when two clusters cannot exist", func(t *testing.T) {
		h := record(time.Second, lease("a", 1, 0, time.Second))
		h.Append(viewed(state(0, "a", RoleLeader, 1, "a"), "1@a", true, five...))
		other := lease("d", 2, 500*ms, time.Second)
		other.Lineage = "1@d"
		h.RecordLease(other)
		assert.Equal(t, 500*ms, MaxLeaseOverlap(h))
	})
	t.Run("a lease only a step can end is held until the end of observation", func(t *testing.T) {
		h := record(700*ms, lease("a", 1, 0, Forever), lease("c", 2, 600*ms, Forever))
		assert.Equal(t, 100*ms, MaxLeaseOverlap(h))
	})
}
