package sim

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/testing/history"
)

// TestHunt2SameHostCellAnyAnswer runs the chaos seeds with every member's
// election gated by an adversarial same-host cell: on each tick the cell
// answers each live member at random (no holder, one holder, several, a
// stale holder that flips late), as a cell that disagrees with the
// election could. The guarantees say the cell only decides who starts an
// election, so every safety rule must hold whatever it answers; liveness
// (convergence) is not judged, since a cell holding everyone back stops
// elections by design. REGENT_HUNT2_SOAK is the number of seeds,
// REGENT_HUNT2_FIRST the first; REGENT_HUNT2_MEMBERSHIP draws only
// membership and cut faults with short gaps over every Bootstrap shape;
// REGENT_HUNT2_NOCELL leaves the cell out and judges convergence too.
func TestHunt2SameHostCellAnyAnswer(t *testing.T) {
	if os.Getenv("REGENT_HUNT2_SOAK") == "" {
		t.Skip("set REGENT_HUNT2_SOAK=<seeds> to run")
	}
	seeds := envUint(t, "REGENT_HUNT2_SOAK", 100)
	first := envUint(t, "REGENT_HUNT2_FIRST", 1)
	var failed []uint64
	for seed := first; seed < first+seeds; seed++ {
		cfg := RandomConfig(seed, chaosSpan)
		if os.Getenv("REGENT_HUNT2_MEMBERSHIP") != "" {
			// Membership storms: joins and leaves during cuts, short gaps.
			cr := rand.New(rand.NewPCG(seed, 0x3e3b))
			cfg.Chaos.Faults = []FaultKind{FaultJoin, FaultLeave, FaultJoin, FaultLeave, FaultPartition, FaultBridge, FaultIsolate, FaultCrash, FaultStop}
			cfg.Chaos.MaxGap = time.Duration(50+cr.IntN(400)) * time.Millisecond
			if cfg.Bootstrap != BootstrapHalves {
				// Halves need RandomConfig's planned Join across them.
				cfg.Bootstrap = BootstrapKind(cr.IntN(int(BootstrapHalves)))
			}
			if cfg.Bootstrap == BootstrapRing && cfg.Election.MinClusterSize > 3 {
				cfg.Election.MinClusterSize = 3
			}
		}
		cell := os.Getenv("REGENT_HUNT2_NOCELL") == ""
		s, err := New(cfg)
		require.NoError(t, err)
		r := rand.New(rand.NewPCG(seed, 0x5a5e))
		e := s.Config().Election
		period := e.HeartbeatInterval
		end := s.LastFault() + s.Bounds().Converge + 4*e.ElectionTimeoutMax
		for next := time.Duration(0); cell && s.Now() < end; next += period + time.Duration(r.Int64N(int64(period))) {
			s.Run(next - s.Now())
			mode := r.IntN(4)
			holder := r.IntN(len(s.members))
			for _, m := range s.members {
				if !m.live {
					continue
				}
				var allowed bool
				switch mode {
				case 0: // one holder
					allowed = m.index == holder
				case 1: // anyone may
					allowed = true
				case 2: // a stale holder (down or elsewhere): nobody may
					allowed = false
				default: // disagreement: each at random
					allowed = r.IntN(2) == 0
				}
				m.core.SetCampaign(s.clock(), allowed)
				s.drain(m)
			}
		}
		if !cell {
			s.Run(end)
		}
		s.hist.Finish(s.now)
		if seed == first {
			t.Logf("seed %d: %s virtual, %d steps, leaders %v, schedule:\n%s", seed, s.Now(), s.Steps(), s.Leaders(), s.Schedule())
		}
		var vs []history.Violation
		for _, v := range history.CheckAll(s.History(), s.Bounds()) {
			if v.Rule != history.RuleConvergence || !cell {
				vs = append(vs, v)
			}
		}
		if len(vs) > 0 {
			failed = append(failed, seed)
			t.Error(failure(s, vs))
		}
	}
	t.Logf("%d seeds from %d, failed %v", seeds, first, failed)
}
