package sim

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/testing/history"
)

// TestInvariantsHoldWithSlowConfirmations runs the chaos configurations
// with a HandleConfirmLeader that keeps its member busy for half an
// evidence window W up to five quarters: many elections then end in a
// confirmation that comes as the evidence lapses or after, which publishes
// only once a majority answers again (or steps down), and the lease and
// overlap bounds, convergence and the rest must hold as they do with
// confirmations that take no time (the isolated step-down's bound widened,
// slowBounds). REGENT_SIM_SOAK sets the seeds.
func TestInvariantsHoldWithSlowConfirmations(t *testing.T) {
	seeds := envUint(t, "REGENT_SIM_SOAK", 40)
	first := envUint(t, "REGENT_SIM_FIRST", 1)
	late, runs := 0, 0
	var longest time.Duration
	for seed := first; seed < first+seeds; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			cfg := RandomConfig(seed, chaosSpan)
			w := evidenceWindow(cfg.withDefaults().Election)
			cfg.ConfirmTakes = []time.Duration{w / 2, 3 * w / 4, w, 5 * w / 4}[seed%4]
			s := play(t, cfg)
			b := slowBounds(s)
			late += s.LateConfirmations()
			assert.Zero(t, s.UnbackedPublications(), "leadership published on lapsed evidence")
			runs++
			if b.Lease > 0 {
				longest = max(longest, history.MaxLeaseOverlap(s.History()))
			}
			if vs := history.CheckAll(s.History(), b); len(vs) > 0 {
				t.Errorf("confirmations taking %s:\n%s", cfg.ConfirmTakes, failure(s, vs))
			}
		})
	}
	t.Logf("%d runs, %d late confirmations, longest lease overlap %s", runs, late, longest)
	assert.Positive(t, late, "no confirmation came after its evidence lapsed: the slow confirmations tested nothing")
}

// slowBounds are s's bounds with two widened. The isolated step-down's, by
// what a slow confirmation adds to a protocol leader's life without a
// quorum: the confirmation itself, during which it steps nothing, and the
// evidence window and heartbeat after it, in which it waits for answers
// unpublished. Convergence, by a confirmation for each of the election
// timeouts it allows. Visible leaders keep their bounds: neither adds to
// them.
func slowBounds(s *Simulator) history.Bounds {
	b, e := s.Bounds(), s.Config().Election
	b.Converge += 23 * s.Config().ConfirmTakes
	if b.StepDown > 0 {
		b.Overlap = cmp.Or(b.Overlap, b.StepDown)
		b.StepDown += s.Config().ConfirmTakes + evidenceWindow(e) + e.HeartbeatInterval
	}
	return b
}

// TestSlowConfirmationsSweep measures what a slow HandleConfirmLeader costs
// a quiet five-member cluster: for confirmations taking multiples of the
// evidence window W, the virtual time to the first published leader over
// 30 seeds, and how many seeds had none within 20 s. Virtual time, so the
// figures are the same on any machine; REGENT_SIM_CONFIRM_SWEEP=1 runs it.
func TestSlowConfirmationsSweep(t *testing.T) {
	if envUint(t, "REGENT_SIM_CONFIRM_SWEEP", 0) == 0 {
		t.Skip("set REGENT_SIM_CONFIRM_SWEEP=1 to run")
	}
	const seeds, limit = 30, 20 * time.Second
	for _, k := range []float64{0.75, 1, 1.25, 1.5, 1.75, 2} {
		var took []time.Duration
		none := 0
		for seed := uint64(1); seed <= seeds; seed++ {
			cfg := quiet(seed, nil)
			w := evidenceWindow(cfg.withDefaults().Election)
			cfg.ConfirmTakes = time.Duration(k * float64(w))
			s, err := New(cfg)
			require.NoError(t, err)
			start := s.Now()
			if !s.RunUntil(func() bool { return len(s.Leaders()) == 1 }, limit) {
				none++
				continue
			}
			took = append(took, s.Now()-start)
		}
		slices.Sort(took)
		if len(took) == 0 {
			t.Logf("confirmation %.2fW: no leader within %v in any of %d seeds", k, limit, seeds)
			continue
		}
		t.Logf("confirmation %.2fW: first leader p50 %v, max %v; none within %v in %d of %d seeds",
			k, percentile(took, 50).Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), limit, none, seeds)
	}
}
