package leader

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Forgetting a pair (coalescer_tidy.go) "changes nothing a member sees":
// a pair that learnt its joins do not fit above a size (pair beats rule
// 7) and then went unused for a whole tidy period keeps what it learnt, so
// the next burst of the same joins costs no more resets, each of which
// unpairs every leader of the pair, than it would had the pair been kept.
func TestForgettingAPairKeepsWhatItsJoinCapLearnt(t *testing.T) {
	const leaders, limit = 60, 20
	// resetsAfterPause runs a burst of joins until the cap settles, a pause
	// in which the slots leave and nothing joins (for two tidies, when tidy
	// says so), and the same burst again; it returns the pair's resets
	// during the second burst.
	resetsAfterPause := func(tidy bool) uint64 {
		j := newJoinBurst(t, leaders, limit)
		for range 10 {
			j.tick()
		}
		learnt, _ := j.joinCap()
		require.Less(t, learnt, limit, "the cap settled below what fits")
		j.pb.fire(j.now) // the leaves go out
		j.c.flush("a@h")
		if tidy {
			later := j.now + 3*time.Hour // past every acknowledgement owed (an hour's window)
			t.Logf("pairs forgotten: %d", j.pb.tidy(later)+j.pb.tidy(later))
		}
		fails := j.c.stats.pairFailed.Load()
		for range 5 {
			j.tick()
		}
		return j.c.stats.pairFailed.Load() - fails
	}
	kept := resetsAfterPause(false)
	assert.Equal(t, kept, resetsAfterPause(true), "resets of the burst after a pause: with the pair kept %d", kept)
}
