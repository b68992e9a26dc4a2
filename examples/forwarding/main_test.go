package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/regent-go/regent/gen"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestForwarding(t *testing.T) {
	results, err := run(context.Background(), io.Discard, 60*time.Second)
	require.NoError(t, err)

	t.Run("without a leader a request is rejected with ErrNotAllowed", func(t *testing.T) {
		require.Len(t, results["no leader"], 1)
		assert.ErrorIs(t, results["no leader"][0].Err, gen.ErrNotAllowed)
	})
	for _, phase := range []string{"leader", "new leader"} {
		t.Run("with a "+phase+" every member's request is handled by that one leader", func(t *testing.T) {
			outcomes := results[phase]
			require.NotEmpty(t, outcomes)
			for _, o := range outcomes {
				require.NoError(t, o.Err, "via %s", o.Via)
				assert.Equal(t, outcomes[0].HandledBy, o.HandledBy, "via %s", o.Via)
			}
		})
	}
	t.Run("after the leader's node died the new leader is another node", func(t *testing.T) {
		assert.NotEqual(t, results["leader"][0].HandledBy, results["new leader"][0].HandledBy)
	})
}
