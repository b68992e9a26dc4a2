package leader_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
)

func TestParseInspection(t *testing.T) {
	t.Run("every kind of value is read into its typed field", func(t *testing.T) {
		in, err := leader.ParseInspection(map[string]string{
			"ergo:cluster":              "orders",
			"ergo:state":                "follower",
			"ergo:term":                 "7",
			"ergo:leader_node":          "a@h:1",
			"ergo:view_size":            "3",
			"ergo:election_timer_armed": "true",
			"ergo:heartbeat_in_last":    "2026-11-30T05:00:00.5Z (12ms ago)",
			"ergo:heartbeat_out_last":   "never",
			"ergo:ghost_ttl":            "5s",
			"ergo:declared":             "<election@b@h:2>, <election@c@h:3>",
			"ergo:unreachable":          "c@h:3 (1.5s ago)",
			"ergo:dropped_by_reason":    "stale_term=4, wrong_cluster=1",
			"ergo:votes_granted":        "a@h:1, b@h:2",
			"ergo:same_host":            "path=/tmp/a cell self=41 holder=40 holds=false term=3 epoch=9 stale=false",
			"user:role":                 "kept in Raw",
		})
		require.NoError(t, err)
		assert.Equal(t, "orders", in.Cluster)
		assert.Equal(t, leader.RoleFollower, in.Role)
		assert.Equal(t, uint64(7), in.Term)
		assert.Equal(t, gen.Atom("a@h:1"), in.LeaderNode)
		assert.Equal(t, 3, in.ViewSize)
		assert.True(t, in.ElectionTimerArmed)
		assert.Equal(t, leader.Moment{At: time.Date(2026, 11, 30, 5, 0, 0, 5e8, time.UTC), Ago: 12 * time.Millisecond}, in.HeartbeatInLast)
		assert.True(t, in.HeartbeatOutLast.IsZero(), "never is the zero moment")
		assert.Equal(t, 5*time.Second, in.GhostTTL)
		assert.Equal(t, []gen.ProcessID{{Name: "election", Node: "b@h:2"}, {Name: "election", Node: "c@h:3"}}, in.Declared)
		assert.Equal(t, []leader.Unreachable{{Node: "c@h:3", For: 1500 * time.Millisecond}}, in.Unreachable)
		assert.Equal(t, map[string]uint64{"stale_term": 4, "wrong_cluster": 1}, in.Dropped)
		assert.Equal(t, []gen.Atom{"a@h:1", "b@h:2"}, in.VotesGranted)
		assert.Equal(t, leader.SameHostCell{Enabled: true, Path: "/tmp/a cell", Self: 41, Holder: 40, Term: 3, Epoch: 9}, in.SameHost,
			"a path with a space survives")
		assert.Equal(t, "kept in Raw", in.Raw["user:role"])
	})
	t.Run("unknown keys, missing keys and unknown items are tolerated", func(t *testing.T) {
		in, err := leader.ParseInspection(map[string]string{"ergo:view_epoch": "12", "ergo:term": "<unknown item>", "ergo:same_host": "off"})
		require.NoError(t, err)
		assert.Zero(t, in.Term)
		assert.False(t, in.SameHost.Enabled)
		assert.Equal(t, "12", in.Raw["ergo:view_epoch"], "a key of a newer version stays readable")
	})
	t.Run("a value that does not parse is an error naming its key, and the rest is still read", func(t *testing.T) {
		in, err := leader.ParseInspection(map[string]string{"ergo:term": "seven", "ergo:dropped_by_reason": "garbled", "ergo:view_size": "3"})
		require.ErrorIs(t, err, gen.ErrMalformed)
		assert.Contains(t, err.Error(), "ergo:term")
		assert.Contains(t, err.Error(), "garbled")
		assert.Equal(t, 3, in.ViewSize)
	})
	t.Run("what an actor renders parses back without error", func(t *testing.T) {
		c := newCluster(t, 3, defaults)
		leaderIdx, term := c.waitOneLeader(all(3))
		in, err := leader.ReadInspection(c.nodes[leaderIdx], c.pids[leaderIdx])
		require.NoError(t, err)
		assert.Equal(t, leader.RoleLeader, in.Role)
		assert.Equal(t, term, itoa(in.Term))
		assert.Equal(t, c.nodes[leaderIdx].Name(), in.LeaderNode)
		assert.Len(t, in.Declared, 2)
		assert.False(t, in.StartedAt.IsZero())
	})
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// "Which leader do enough members agree on" has one answer.
func TestAgree(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := func(member string, term uint64, lead string, after time.Duration) leader.Belief {
		return leader.Belief{Member: gen.Atom(member), Term: term, Leader: gen.Atom(lead), Since: t0.Add(after)}
	}
	t.Run("the leader a majority recognises at one term is agreed, dated by the member that completed the majority", func(t *testing.T) {
		a, ok := leader.Agree([]leader.Belief{b("x", 2, "a", 30), b("y", 2, "a", 10), b("z", 1, "c", 0)}, 2)
		require.True(t, ok)
		assert.Equal(t, gen.Atom("a"), a.Leader)
		assert.Equal(t, uint64(2), a.Term)
		assert.Equal(t, []gen.Atom{"y", "x"}, a.Members, "earliest believer first")
		assert.Equal(t, t0.Add(30), a.At)
	})
	t.Run("the same leader at two terms is two beliefs, not one", func(t *testing.T) {
		a, ok := leader.Agree([]leader.Belief{b("x", 2, "a", 0), b("y", 3, "a", 0)}, 2)
		assert.False(t, ok)
		assert.Equal(t, uint64(3), a.Term, "the closest group comes back, the higher term on a tie")
	})
	t.Run("members that know no leader agree on nothing", func(t *testing.T) {
		_, ok := leader.Agree([]leader.Belief{b("x", 2, "", 0), b("y", 2, "", 0)}, 1)
		assert.False(t, ok)
	})
	t.Run("a belief without a time leaves the agreement undated", func(t *testing.T) {
		a, ok := leader.Agree([]leader.Belief{{Member: "x", Term: 1, Leader: "a"}}, 1)
		require.True(t, ok)
		assert.True(t, a.At.IsZero())
	})
}

// A read-only members request answers from any node: the view and the
// inspection in one round trip, by PID or by name.
func TestReadMemberFromAnotherNode(t *testing.T) {
	c := newCluster(t, 3, defaults)
	c.waitOneLeader(all(3))
	for _, target := range []any{c.pids[1], gen.ProcessID{Name: memberName, Node: c.nodes[1].Name()}} {
		r, err := leader.ReadMember(c.nodes[0], target)
		require.NoError(t, err, "read %v", target)
		assert.Equal(t, c.pids[1], r.PID)
		require.Len(t, r.Members, 3)
		for i, m := range r.Members {
			assert.Equal(t, c.nodes[i].Name(), m.Node)
			assert.Equal(t, i == 1, m.Self)
			assert.Equal(t, c.pids[i], m.PID)
		}
		assert.Equal(t, "test", r.Inspection["ergo:cluster"])
		assert.Equal(t, "recorded", r.Inspection["user:callbacks"], "the user's keys come along")
	}
	t.Run("Members works on a remote actor too", func(t *testing.T) {
		members, err := leader.Members(c.nodes[0], c.pids[2])
		require.NoError(t, err)
		assert.Len(t, members, 3)
	})
	t.Run("asking a process that is not a leader actor is an error", func(t *testing.T) {
		_, err := leader.ReadMember(c.nodes[0], gen.ProcessID{Name: "nobody", Node: c.nodes[1].Name()})
		require.Error(t, err)
	})
}
