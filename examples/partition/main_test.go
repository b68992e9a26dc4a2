package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/regent-go/regent/leader"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPartitionWalkthrough(t *testing.T) {
	// Four times the default timings: the walkthrough's claims hold on a
	// machine busy enough to delay a heartbeat past the default 150 ms.
	slow := leader.Options{ElectionTimeoutMin: 600, ElectionTimeoutMax: 1200, HeartbeatInterval: 200}
	r, err := run(context.Background(), io.Discard, config{watch: time.Second, settle: 60 * time.Second, timings: slow})
	require.NoError(t, err)
	t.Run("a leader on the majority side keeps leading at its term", func(t *testing.T) {
		assert.True(t, r.MajorityKept)
	})
	t.Run("the minority side elects nobody", func(t *testing.T) {
		assert.False(t, r.MinorityLed)
	})
	t.Run("after healing the minority follows the same leader", func(t *testing.T) {
		assert.Equal(t, r.First, r.Healed)
	})
	t.Run("a leader cut off in the minority steps down and the majority elects at a higher term", func(t *testing.T) {
		assert.Positive(t, r.StepDown)
		assert.True(t, r.NewInMajority)
		assert.Greater(t, r.NewTerm, r.HealedTerm)
	})
	t.Run("after the second heal one leader remains, at the highest term", func(t *testing.T) {
		assert.NotEmpty(t, r.Final)
		assert.GreaterOrEqual(t, r.FinalTerm, r.NewTerm)
	})
}
