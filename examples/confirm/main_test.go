package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConfirmGatesLeadershipOnTheLease(t *testing.T) {
	list, err := run(context.Background(), io.Discard, t.TempDir(), config{denials: 2, settle: 60 * time.Second})
	require.NoError(t, err)

	released := -1
	for i, e := range list {
		if e.What == "outsider-released" {
			released = i
		}
	}
	require.GreaterOrEqual(t, released, 0)
	t.Run("while the outsider holds the lease, won elections are denied and nobody leads", func(t *testing.T) {
		assert.GreaterOrEqual(t, denied(list[:released]), 2)
		for _, e := range list[:released] {
			assert.NotEqual(t, "leader", e.What, "%s led while the outsider held the lease", e.Who)
		}
	})
	t.Run("every leader holds the lease, and only one member holds it at a time", func(t *testing.T) {
		holder := ""
		leaders := 0
		for _, e := range list[released:] {
			switch e.What {
			case "confirmed":
				assert.Empty(t, holder, "%s took the lease while %s held it", e.Who, holder)
				holder = string(e.Who)
			case "released":
				assert.Equal(t, holder, string(e.Who))
				holder = ""
			case "leader":
				assert.True(t, e.Held)
				assert.Equal(t, holder, string(e.Who))
				leaders++
			}
		}
		assert.GreaterOrEqual(t, leaders, 2, "the handover moved leadership, and the lease with it")
	})
}
