package leader

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// Configuration section of the leader document: defaults and the rules for
// partial or bad settings.
func TestOptions(t *testing.T) {
	self := gen.ProcessID{Name: "coordinator", Node: "n1@localhost"}
	source := rand.New(rand.NewPCG(1, 2))
	convert := func(o Options) (election.Config, error) { return o.config(self, time.Now(), source) }
	t.Run("ClusterID is required", func(t *testing.T) {
		_, err := convert(Options{})
		require.ErrorIs(t, err, gen.ErrIncorrect)
		assert.Contains(t, err.Error(), "ClusterID")
	})
	t.Run("zero values take the document's defaults: 3, 150/300, 50, 5000 ms", func(t *testing.T) {
		cfg, err := convert(Options{ClusterID: "c"})
		require.NoError(t, err)
		assert.Equal(t, 3, cfg.MinClusterSize)
		assert.Equal(t, 150*time.Millisecond, cfg.ElectionTimeoutMin)
		assert.Equal(t, 300*time.Millisecond, cfg.ElectionTimeoutMax)
		assert.Equal(t, 50*time.Millisecond, cfg.HeartbeatInterval)
		assert.Equal(t, 5*time.Second, cfg.GhostTTL)
		assert.Equal(t, EvidenceReplies, cfg.Evidence)
		assert.False(t, cfg.DisablePreVote || cfg.DisableFastFailover)
		assert.Empty(t, cfg.Warnings())
	})
	t.Run("the fields are milliseconds", func(t *testing.T) {
		cfg, err := convert(Options{ClusterID: "c", ElectionTimeoutMin: 1000, ElectionTimeoutMax: 2000, HeartbeatInterval: 300, GhostTTL: 7000, PreferStableFor: 900})
		require.NoError(t, err)
		assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 300 * time.Millisecond, 7 * time.Second, 900 * time.Millisecond},
			[]time.Duration{cfg.ElectionTimeoutMin, cfg.ElectionTimeoutMax, cfg.HeartbeatInterval, cfg.GhostTTL, cfg.PreferStableFor})
	})
	for _, size := range []int{1, 2} {
		t.Run(fmt.Sprintf("MinClusterSize %d is allowed with a warning", size), func(t *testing.T) {
			cfg, err := convert(Options{ClusterID: "c", MinClusterSize: size})
			require.NoError(t, err)
			assert.Equal(t, size, cfg.MinClusterSize)
			require.Len(t, cfg.Warnings(), 1)
			assert.Contains(t, cfg.Warnings()[0], "MinClusterSize")
		})
	}
	t.Run("min alone doubles to a max", func(t *testing.T) {
		cfg, err := convert(Options{ClusterID: "c", ElectionTimeoutMin: 400})
		require.NoError(t, err)
		assert.Equal(t, 800*time.Millisecond, cfg.ElectionTimeoutMax)
	})
	t.Run("max alone halves to a min", func(t *testing.T) {
		cfg, err := convert(Options{ClusterID: "c", ElectionTimeoutMax: 1000})
		require.NoError(t, err)
		assert.Equal(t, 500*time.Millisecond, cfg.ElectionTimeoutMin)
	})
	t.Run("max not above min is rejected", func(t *testing.T) {
		for _, o := range []Options{
			{ClusterID: "c", ElectionTimeoutMin: 300, ElectionTimeoutMax: 300},
			{ClusterID: "c", ElectionTimeoutMin: 300, ElectionTimeoutMax: 200},
		} {
			_, err := convert(o)
			require.ErrorIs(t, err, gen.ErrIncorrect, "%+v", o)
			assert.Contains(t, err.Error(), "ElectionTimeoutMax")
		}
	})
	t.Run("negative values are rejected, naming the field", func(t *testing.T) {
		for field, o := range map[string]Options{
			"MinClusterSize":     {ClusterID: "c", MinClusterSize: -1},
			"ElectionTimeoutMin": {ClusterID: "c", ElectionTimeoutMin: -1},
			"HeartbeatInterval":  {ClusterID: "c", HeartbeatInterval: -5},
			"GhostTTL":           {ClusterID: "c", GhostTTL: -1},
			"ConfirmInterval":    {ClusterID: "c", ConfirmInterval: -1},
			"PreferStableFor":    {ClusterID: "c", PreferStableFor: -1},
		} {
			_, err := convert(o)
			require.ErrorIs(t, err, gen.ErrIncorrect, "%+v", o)
			assert.Contains(t, err.Error(), field)
		}
	})
	t.Run("a heartbeat not comfortably below the minimum timeout warns", func(t *testing.T) {
		cfg, err := convert(Options{ClusterID: "c", HeartbeatInterval: 100})
		require.NoError(t, err)
		require.Len(t, cfg.Warnings(), 1)
		assert.Contains(t, cfg.Warnings()[0], "HeartbeatInterval")
	})
	t.Run("an unknown Evidence is rejected", func(t *testing.T) {
		_, err := convert(Options{ClusterID: "c", Evidence: Evidence(7)})
		require.ErrorIs(t, err, gen.ErrIncorrect)
	})
}
