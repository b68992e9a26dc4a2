package observer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inspection is a follower's inspection as leader.Actor renders it.
func inspection() map[string]string {
	return map[string]string{
		"ergo:state":                 "follower",
		"ergo:term":                  "7",
		"ergo:leader_node":           "a@h",
		"ergo:leader_pid":            "<0A1B2C3D.0.1004>",
		"ergo:view_size":             "3",
		"ergo:quorum":                "2",
		"ergo:min_cluster_size":      "3",
		"ergo:peers":                 "2",
		"ergo:unreachable":           "",
		"ergo:dropped_by_reason":     "",
		"ergo:confirm_denied":        "0",
		"ergo:elections_started":     "1",
		"ergo:elections_won":         "0",
		"ergo:leadership_changes":    "1",
		"ergo:rounds":                "0",
		"ergo:election_timer_armed":  "true",
		"ergo:heartbeat_timer_armed": "false",
		"ergo:heartbeat_in_last":     "2026-11-30T05:00:00Z (12ms ago)",
		"ergo:heartbeat_out_last":    "never",
		"ergo:election_timeout_min":  "150ms",
	}
}

func withValues(m map[string]string, kv ...string) map[string]string {
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestParseMember(t *testing.T) {
	t.Run("every key the page and metrics use is parsed", func(t *testing.T) {
		var m MemberReport
		parseMember(&m, withValues(inspection(),
			"ergo:unreachable", "c@h (1.5s ago), d@h (20ms ago)",
			"ergo:dropped_by_reason", "stale_term=4, wrong_cluster=1",
			"ergo:slow_callbacks", "HandleCall=1, HandleMessage=3",
			"ergo:confirm_denied", "2"))
		assert.Equal(t, RoleFollower, m.State)
		assert.Equal(t, uint64(7), m.Term)
		assert.Equal(t, "a@h", m.LeaderNode)
		assert.Equal(t, 3, m.ViewSize)
		assert.Equal(t, 2, m.Quorum)
		assert.Equal(t, 3, m.MinClusterSize)
		assert.Equal(t, []string{"c@h (1.5s ago)", "d@h (20ms ago)"}, m.Unreachable)
		assert.Equal(t, map[string]uint64{"stale_term": 4, "wrong_cluster": 1}, m.Dropped)
		assert.Equal(t, map[string]uint64{"HandleCall": 1, "HandleMessage": 3}, m.SlowCallbacks)
		assert.Equal(t, uint64(2), m.ConfirmDenied)
		assert.Equal(t, uint64(1), m.ElectionsStarted)
		assert.Equal(t, uint64(1), m.LeadershipChanges)
		assert.True(t, m.Timers.ElectionArmed)
		assert.False(t, m.Timers.HeartbeatArmed)
		assert.Equal(t, "12ms", m.Timers.HeartbeatInAgo)
		assert.True(t, m.Timers.HeartbeatOutLast.IsZero(), "never is no time")
		assert.Empty(t, m.Timers.HeartbeatOutAgo)
		assert.Equal(t, 150*time.Millisecond, m.Timers.ElectionTimeoutMin)
		assert.Empty(t, m.ParseErrors)
	})

	t.Run("a value that does not parse is reported and leaves its field zero", func(t *testing.T) {
		var m MemberReport
		parseMember(&m, withValues(inspection(), "ergo:term", "seven", "ergo:dropped_by_reason", "garbled"))
		assert.Zero(t, m.Term)
		assert.Equal(t, 3, m.ViewSize, "other keys still parse")
		require.Len(t, m.ParseErrors, 2)
		assert.Contains(t, m.ParseErrors[0], "garbled", "errors come in key order")
		assert.Contains(t, m.ParseErrors[1], "ergo:term")
	})
}

// cluster builds a cluster of members a@h, b@h, c@h from their inspections;
// a nil inspection is a member that could not be read.
func cluster(inspections ...map[string]string) ClusterReport {
	c := ClusterReport{ID: "x"}
	for i, in := range inspections {
		m := MemberReport{Node: string(rune('a'+i)) + "@h"}
		if in == nil {
			m.Error = "no connection"
		} else {
			parseMember(&m, in)
		}
		c.Members = append(c.Members, m)
	}
	c.analyze()
	return c
}

func kinds(c ClusterReport) []string {
	out := []string{}
	for _, p := range c.Problems {
		out = append(out, p.Kind)
	}
	return out
}

func TestAnalyze(t *testing.T) {
	leaderA := func() map[string]string { return withValues(inspection(), "ergo:state", "leader") }
	follower := func() map[string]string { return inspection() }

	t.Run("a cluster where everyone follows one leader at one term is healthy", func(t *testing.T) {
		c := cluster(leaderA(), follower(), follower())
		assert.Empty(t, c.Problems)
		assert.Equal(t, "a@h", c.Leader)
		assert.Equal(t, []string{"a@h"}, c.Leaders)
		assert.Equal(t, uint64(7), c.Term)
	})

	t.Run("two members claiming leadership are flagged and no leader is agreed", func(t *testing.T) {
		c := cluster(leaderA(), withValues(follower(), "ergo:state", "leader", "ergo:leader_node", "b@h", "ergo:term", "8"), follower())
		assert.Equal(t, []string{ProblemSeveralLeaders, ProblemLeaderDisagreement, ProblemTermDisagreement}, kinds(c))
		assert.Empty(t, c.Leader)
		assert.Equal(t, uint64(8), c.Term, "the cluster's term is the highest seen")
	})

	t.Run("a member believing in another leader is a disagreement", func(t *testing.T) {
		c := cluster(leaderA(), follower(), withValues(follower(), "ergo:leader_node", ""))
		assert.Equal(t, []string{ProblemLeaderDisagreement}, kinds(c))
		assert.Contains(t, c.Problems[0].Message, "no leader (by c@h)")
		assert.Empty(t, c.Leader)
	})

	t.Run("a candidate that keeps campaigning is stuck", func(t *testing.T) {
		c := cluster(withValues(follower(), "ergo:state", "candidate", "ergo:leader_node", "", "ergo:rounds", "3"),
			withValues(follower(), "ergo:leader_node", ""), withValues(follower(), "ergo:leader_node", ""))
		assert.Equal(t, []string{ProblemNoLeader, ProblemStuckCandidate}, kinds(c))
		assert.Equal(t, []string{"a@h"}, c.Problems[1].Members)
	})

	t.Run("an unclustered member and an unreadable one are both reported", func(t *testing.T) {
		c := cluster(leaderA(), follower(), nil, withValues(follower(), "ergo:state", "unclustered", "ergo:view_size", "1"))
		assert.Equal(t, []string{ProblemUnclustered, ProblemUnreachable}, kinds(c))
		assert.Equal(t, []string{"d@h"}, c.Problems[0].Members)
		assert.Equal(t, []string{"c@h"}, c.Problems[1].Members)
		assert.Equal(t, "a@h", c.Leader, "an unreadable member does not spoil agreement among the others")
	})

	t.Run("a cluster whose view cannot be read reports only that", func(t *testing.T) {
		c := ClusterReport{ID: "x", Error: "not a leader actor"}
		c.analyze()
		assert.Empty(t, c.Problems)
		assert.Empty(t, c.Leaders)
	})
}

func TestFailoverTrack(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	t.Run("the first election is not a failover", func(t *testing.T) {
		var tr failoverTrack
		for _, ms := range []int{0, 250, 500} {
			_, ended := tr.observe(at(ms), "")
			assert.False(t, ended)
		}
		_, ended := tr.observe(at(750), "a@h@1")
		assert.False(t, ended)
	})

	t.Run("a failover lasts from the first sample without a leader to the first with one", func(t *testing.T) {
		var tr failoverTrack
		tr.observe(at(0), "a@h@1")
		tr.observe(at(250), "a@h@1")
		_, ended := tr.observe(at(500), "")
		assert.False(t, ended)
		_, ended = tr.observe(at(750), "")
		assert.False(t, ended)
		d, ended := tr.observe(at(1000), "b@h@2")
		require.True(t, ended)
		assert.Equal(t, 500*time.Millisecond, d)
		_, ended = tr.observe(at(1250), "b@h@2")
		assert.False(t, ended, "one outage is measured once")
	})

	t.Run("a new leader between two samples counts as a failover of at most one interval", func(t *testing.T) {
		var tr failoverTrack
		tr.observe(at(0), "a@h@1")
		d, ended := tr.observe(at(250), "b@h@2")
		require.True(t, ended)
		assert.Equal(t, 250*time.Millisecond, d)
	})

	t.Run("the same leader at a new term is a failover too", func(t *testing.T) {
		var tr failoverTrack
		tr.observe(at(0), "a@h@1")
		_, ended := tr.observe(at(250), "a@h@2")
		assert.True(t, ended)
	})
}

func TestLeadership(t *testing.T) {
	t.Run("names each answering leader with its term", func(t *testing.T) {
		c := ClusterReport{Members: []MemberReport{
			{Node: "a@h", State: RoleLeader, Term: 4},
			{Node: "b@h", State: RoleFollower, Term: 4},
			{Node: "c@h", State: RoleLeader, Term: 3},
			{Node: "d@h", Error: "no connection"},
		}}
		assert.Equal(t, "a@h@4,c@h@3", leadership(c))
	})
}

// The observer shows the agreed view: its version on every member, a member
// whose view lags, and a pending change.
func TestAgreedViewIsReported(t *testing.T) {
	view := func(epoch string) map[string]string {
		return withValues(inspection(),
			"ergo:view_epoch", epoch, "ergo:view_term", "7", "ergo:view_lineage", "1@a@h", "ergo:view_agreed", "true",
			"ergo:view_committed", "true", "ergo:view_members", "<leader@a@h>, <leader@b@h>, <leader@c@h>")
	}
	var m MemberReport
	parseMember(&m, withValues(view("4"), "ergo:state", "leader", "ergo:pending_change", "added d@h", "ergo:lagging", "c@h"))
	assert.Equal(t, View{Epoch: 4, Term: 7, Lineage: "1@a@h", Agreed: true, Committed: true, Members: []string{"a@h", "b@h", "c@h"}}, m.View)
	assert.Equal(t, "added d@h", m.PendingChange)
	assert.Equal(t, []string{"c@h"}, m.Lagging)

	c := ClusterReport{Members: []MemberReport{{Node: "a@h"}, {Node: "b@h"}, {Node: "c@h"}}}
	parseMember(&c.Members[0], withValues(view("4"), "ergo:state", "leader", "ergo:leader_node", "a@h", "ergo:pending_change", "added d@h", "ergo:lagging", "c@h"))
	parseMember(&c.Members[1], view("4"))
	parseMember(&c.Members[2], view("3"))
	c.analyze()
	kinds := map[string][]string{}
	for _, p := range c.Problems {
		kinds[p.Kind] = append(kinds[p.Kind], p.Message)
	}
	require.Contains(t, kinds, ProblemPendingChange)
	require.Contains(t, kinds, ProblemViewLag)
	assert.Len(t, kinds[ProblemViewLag], 2, "the leader's report of a lagging member, and two views held at once")
}
