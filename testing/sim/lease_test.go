package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/testing/history"
)

func TestLease(t *testing.T) {
	t.Run("an isolated leader's lease ends with its evidence, before the tick that steps it down", func(t *testing.T) {
		// Cuts are never noticed, so only the evidence ends leadership; W
		// (150ms) is no multiple of H, so no tick falls where the lease ends.
		cfg := quiet(3, func(c *Config) {
			c.Network.DetectCut = -1
			c.Election.HeartbeatInterval = 40 * time.Millisecond
		})
		s, l := start(t, cfg)
		s.Run(time.Second)
		isolated := s.Now()
		require.NoError(t, s.Isolate(l))
		require.True(t, s.RunUntil(func() bool { return !slices.Contains(s.Leaders(), l) }, cfg.Bounds().StepDown))
		steppedDown := s.Now()
		var last history.Lease
		for _, ls := range s.History().Leases() {
			if ls.Member == s.Name(l) {
				last = ls
			}
		}
		w := s.Bounds().Lease
		assert.LessOrEqual(t, last.Until, isolated+w, "no reply sent after the isolation counts, so the lease ends within W of it")
		assert.Less(t, last.Until, steppedDown, "the lease ends before the heartbeat tick that steps the leader down")
		assert.Equal(t, s.Config().Election.ElectionTimeoutMin, w, "W is the election's evidence window")
		requireClean(t, s)
	})
}

// TestLeaseOfASupersededLeader cuts a leader off from two of five members,
// which elect a successor without PreVote with the votes of the other two,
// and cuts it off from those two as soon as one of them takes the new term:
// the old leader then hears of no higher term, and its last evidence can
// come just before the successor wins. Its lease must end within W of the
// successor's win; its visible role ends only at the first tick at W or
// later (H is 45ms and W 150ms: 30ms later), which the lease rule would
// catch.
func TestLeaseOfASupersededLeader(t *testing.T) {
	var longest, bound time.Duration
	for seed := uint64(1); seed <= 12; seed++ {
		cfg := quiet(seed, func(c *Config) {
			c.Durable = true
			c.Election.DisablePreVote = true
			c.Election.HeartbeatInterval = 45 * time.Millisecond
			c.Network.DetectCut = -1
		})
		s, l := start(t, cfg)
		s.Run(time.Second)
		rest := others(5, []int{l})
		require.NoError(t, s.Cut([2]int{l, rest[2]}, [2]int{l, rest[3]}))
		term := s.Term(l)
		require.True(t, s.RunUntil(func() bool { return s.Term(rest[0]) > term || s.Term(rest[1]) > term }, 2*time.Second))
		require.NoError(t, s.Isolate(l))
		s.Run(time.Second)
		bound = s.Bounds().Lease
		require.NoError(t, history.CheckLeaseOverlap(s.History(), bound), "seed %d", seed)
		longest = max(longest, history.MaxLeaseOverlap(s.History()))
	}
	assert.Greater(t, longest, bound/2, "the successors won while the old leader's lease held, near the bound")
}
