package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/internal/election"
	"github.com/regent-go/regent/testing/history"
)

// delayedReplies is a five-member cluster at production's defaults whose
// leader, once elected, gets its replies ever later: what the others send it
// is delayed by up to 1.5s (five ElectionTimeoutMax), growing over 3s, so
// acknowledgements never stop coming; then what it sends is cut, so the
// others hear nothing from it and elect another leader. Healed at 8s.
func delayedReplies(seed uint64, prevote bool) Config {
	return quiet(seed, func(c *Config) {
		c.Durable = true
		c.Election.DisablePreVote = !prevote
		c.Plan = []Fault{
			{At: time.Second, Kind: FaultDelay, Member: TheLeader, Delay: 1500 * time.Millisecond, Ramp: 3 * time.Second, CutAfter: 3100 * time.Millisecond},
			{At: 8 * time.Second, Kind: FaultHeal},
		}
	})
}

// A leader must not count a late acknowledgement as fresh: once the others
// elect a successor, the old leader must be gone within the evidence window
// and a heartbeat (docs/guarantees.md: never two leaders at once beyond the
// step-down bound, 200ms here), not after the whole delay. Until a reply
// counts from the time the message it answers was sent, this fails on every
// seed, PreVote or not: the old leader stays visible about 1.5s.
func TestDelayedAcknowledgementsCannotKeepASupersededLeader(t *testing.T) {
	for _, prevote := range []bool{true, false} {
		for _, seed := range []uint64{1, 2, 3} {
			t.Run(fmt.Sprintf("seed %d, PreVote %t", seed, prevote), func(t *testing.T) {
				s := play(t, delayedReplies(seed, prevote))
				plan := s.Schedule().Plan()
				i := slices.IndexFunc(plan, func(f Fault) bool { return f.Kind == FaultOneWay })
				require.GreaterOrEqual(t, i, 0, "the cut applied\n%s", s.Schedule())
				old := s.Name(plan[0].Member)
				require.Equal(t, plan[0].Member, plan[i].Member, "the cut struck the delayed member\n%s", s.Schedule())
				assert.True(t, othersLed(s.History(), old, plan[0].At, 8*time.Second), "a successor led before the heal\n%s", s.History())
				assert.Equal(t, 200*time.Millisecond, s.Bounds().Overlap, "W + H at the defaults")
				requireClean(t, s)
			})
		}
	}
}

// othersLed reports whether a member other than old led visibly between
// from and to.
func othersLed(h *history.History, old string, from, to time.Duration) bool {
	for _, e := range h.Events() {
		if e.At > from && e.At < to && e.Kind == history.KindState && e.Role == history.RoleLeader && e.Member != old {
			return true
		}
	}
	return false
}

func TestDelayFaults(t *testing.T) {
	t.Run("chaos draws delays, most followed by a cut of the other direction, under reply evidence only", func(t *testing.T) {
		kinds := map[election.Evidence]map[FaultKind]int{election.EvidenceReplies: {}, election.EvidenceContact: {}}
		for seed := uint64(1); seed <= 40; seed++ {
			for ev, count := range kinds {
				cfg := Config{Seed: seed, Election: election.Config{Evidence: ev}, Chaos: &Chaos{}}.withDefaults()
				for _, f := range chaosPlan(rand.New(rand.NewPCG(seed, 2)), cfg.Members, *cfg.Chaos) {
					count[f.Kind]++
					if f.CutAfter > 0 {
						count[FaultOneWay]++
					}
				}
			}
		}
		assert.Greater(t, kinds[election.EvidenceReplies][FaultDelay], 20)
		assert.Greater(t, kinds[election.EvidenceReplies][FaultOneWay], kinds[election.EvidenceReplies][FaultDelay]/2)
		assert.Zero(t, kinds[election.EvidenceContact][FaultDelay])
	})
	t.Run("a delay's cut does not outlive a heal that comes first", func(t *testing.T) {
		cfg := quiet(21, func(c *Config) {
			c.Plan = []Fault{
				{At: time.Second, Kind: FaultDelay, Member: 0, Delay: time.Second, CutAfter: time.Second},
				{At: 1500 * time.Millisecond, Kind: FaultHeal},
			}
		})
		s := play(t, cfg)
		assert.Contains(t, s.Schedule().String(), "skipped one-way cut of m1: a heal came first")
		assert.True(t, s.Settled())
		requireClean(t, s)
	})
	t.Run("the side of a one-way cut that still receives notices it only when the other side's close arrives", func(t *testing.T) {
		s, err := New(quiet(22, func(c *Config) { c.Network.DetectCut = 100 * time.Millisecond }))
		require.NoError(t, err)
		s.Run(time.Second)
		require.NoError(t, s.apply(Fault{Kind: FaultDelay, Member: 0, Delay: time.Second}))
		require.NoError(t, s.apply(Fault{Kind: FaultOneWay, Member: 0, Out: true}))
		s.Run(150 * time.Millisecond)
		assert.True(t, s.noted[1][0], "m2 hears nothing from m1 and closes")
		assert.False(t, s.noted[0][1], "m1 still receives: the close is on its way")
		s.Run(time.Second)
		assert.True(t, s.noted[0][1], "the close reached m1")
	})
}
