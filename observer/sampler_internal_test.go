package observer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The sampler spends at most samplerShare of the time collecting: a quick
// collection keeps the interval asked for, a slow one waits nine times as
// long as it took.
func TestThePaceKeepsCollectingToATenthOfTheTime(t *testing.T) {
	assert.Equal(t, 250*time.Millisecond, pace(250*time.Millisecond, 10*time.Millisecond))
	assert.Equal(t, 250*time.Millisecond, pace(250*time.Millisecond, 25*time.Millisecond), "a tenth of the interval exactly")
	assert.Equal(t, 9*time.Second, pace(250*time.Millisecond, time.Second))
	for _, took := range []time.Duration{time.Millisecond, 30 * time.Millisecond, 700 * time.Millisecond, 4 * time.Second} {
		next := pace(250*time.Millisecond, took)
		assert.LessOrEqual(t, float64(took)/float64(took+next), samplerShare+1e-9, "took %s, waits %s", took, next)
	}
}
