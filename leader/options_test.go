package leader

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// Configuration section of the leader document: defaults and the rules for
// partial or bad settings.
func TestOptions(t *testing.T) {
	t.Run("ClusterID is required", func(t *testing.T) {
		_, _, _, err := Options{}.resolve()
		require.ErrorIs(t, err, gen.ErrIncorrect)
		assert.Contains(t, err.Error(), "ClusterID")
	})
	t.Run("zero values take the document's defaults: 3, 150/300, 50, 5000 ms", func(t *testing.T) {
		timings, minSize, warnings, err := Options{ClusterID: "c"}.resolve()
		require.NoError(t, err)
		assert.Equal(t, 3, minSize)
		assert.Equal(t, electionTimings{min: 150 * time.Millisecond, max: 300 * time.Millisecond, heartbeat: 50 * time.Millisecond, ghostTTL: 5 * time.Second}, timings)
		assert.Empty(t, warnings)
	})
	t.Run("MinClusterSize below 1 is rejected", func(t *testing.T) {
		_, _, _, err := Options{ClusterID: "c", MinClusterSize: -1}.resolve()
		require.ErrorIs(t, err, gen.ErrIncorrect)
		assert.Contains(t, err.Error(), "MinClusterSize")
	})
	for _, size := range []int{1, 2} {
		t.Run(fmt.Sprintf("MinClusterSize %d is allowed with a warning", size), func(t *testing.T) {
			_, minSize, warnings, err := Options{ClusterID: "c", MinClusterSize: size}.resolve()
			require.NoError(t, err)
			assert.Equal(t, size, minSize)
			require.Len(t, warnings, 1)
			assert.Contains(t, warnings[0], "MinClusterSize")
		})
	}
	t.Run("min alone doubles to a max", func(t *testing.T) {
		timings, _, _, err := Options{ClusterID: "c", ElectionTimeoutMin: 400}.resolve()
		require.NoError(t, err)
		assert.Equal(t, 400*time.Millisecond, timings.min)
		assert.Equal(t, 800*time.Millisecond, timings.max)
	})
	t.Run("max alone halves to a min", func(t *testing.T) {
		timings, _, _, err := Options{ClusterID: "c", ElectionTimeoutMax: 1000}.resolve()
		require.NoError(t, err)
		assert.Equal(t, 500*time.Millisecond, timings.min)
		assert.Equal(t, 1000*time.Millisecond, timings.max)
	})
	t.Run("max not above min is rejected", func(t *testing.T) {
		for _, o := range []Options{
			{ClusterID: "c", ElectionTimeoutMin: 300, ElectionTimeoutMax: 300},
			{ClusterID: "c", ElectionTimeoutMin: 300, ElectionTimeoutMax: 200},
			{ClusterID: "c", ElectionTimeoutMax: 1},
		} {
			_, _, _, err := o.resolve()
			require.ErrorIs(t, err, gen.ErrIncorrect, "%+v", o)
		}
	})
	t.Run("negative durations are rejected", func(t *testing.T) {
		for _, o := range []Options{
			{ClusterID: "c", ElectionTimeoutMin: -1},
			{ClusterID: "c", HeartbeatInterval: -5},
			{ClusterID: "c", GhostTTL: -1},
		} {
			_, _, _, err := o.resolve()
			require.ErrorIs(t, err, gen.ErrIncorrect, "%+v", o)
		}
	})
	t.Run("a heartbeat not comfortably below the minimum timeout warns", func(t *testing.T) {
		_, _, warnings, err := Options{ClusterID: "c", HeartbeatInterval: 100}.resolve()
		require.NoError(t, err)
		require.Len(t, warnings, 1)
		assert.Contains(t, warnings[0], "HeartbeatInterval")
	})
	t.Run("an unknown Evidence is rejected", func(t *testing.T) {
		_, _, _, err := Options{ClusterID: "c", Evidence: Evidence(7)}.resolve()
		require.ErrorIs(t, err, gen.ErrIncorrect)
	})
}
