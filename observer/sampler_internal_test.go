package observer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A reading that has taken a tenth of the interval pauses after each
// further cluster nine times as long as reading it took, so the sampler
// reads a tenth of the time; a small reading is not paused, and a late
// answer (waiting, not CPU) pauses an interval at most.
func TestTheSamplerPausesToReadATenthOfTheTime(t *testing.T) {
	interval := 250 * time.Millisecond
	assert.Zero(t, pauseAfter(interval, 20*time.Millisecond, time.Millisecond), "under a tenth of the interval: no pause")
	assert.Zero(t, pauseAfter(interval, 25*time.Millisecond, time.Millisecond), "a tenth exactly")
	assert.Equal(t, 9*time.Millisecond, pauseAfter(interval, 26*time.Millisecond, time.Millisecond))
	assert.Equal(t, interval, pauseAfter(interval, 2*time.Second, 2*time.Second), "a member that answered late: an interval at most")
	var busy, elapsed time.Duration
	for range 1000 {
		read := time.Millisecond
		busy += read
		elapsed += read + pauseAfter(interval, busy, read)
	}
	assert.InDelta(t, samplerShare, float64(busy)/float64(elapsed), 0.01, "a thousand clusters of a millisecond each: read %s over %s", busy, elapsed)
}
