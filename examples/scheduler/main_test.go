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

func TestSchedulerWorkFollowsLeadership(t *testing.T) {
	entries, err := run(context.Background(), io.Discard, config{every: 20 * time.Millisecond, phase: 300 * time.Millisecond, settle: 60 * time.Second})
	require.NoError(t, err)

	running := map[gen.Atom]uint64{} // node → term of its current run
	workers := map[gen.Atom]bool{}
	for _, e := range entries {
		switch e.Kind {
		case "start":
			assert.Empty(t, running, "%s started work while %v still ran it", e.Node, running)
			running[e.Node] = e.Term
		case "stop", "killed":
			delete(running, e.Node)
		case "tick":
			term, ok := running[e.Node]
			require.True(t, ok, "%s worked without leading", e.Node)
			assert.Equal(t, term, e.Term, "work runs at the term it started in")
			workers[e.Node] = true
		}
	}
	t.Run("the handover moved the work to another node", func(t *testing.T) {
		assert.GreaterOrEqual(t, len(workers), 2)
	})
	t.Run("a survivor resumed the work after the leader's node was killed", func(t *testing.T) {
		var killed gen.Atom
		resumed := false
		for _, e := range entries {
			if e.Kind == "killed" {
				killed = e.Node
			}
			if killed != "" && e.Kind == "tick" && e.Node != killed {
				resumed = true
			}
		}
		assert.True(t, resumed)
	})
	t.Run("the handed-over leader stopped its work before the next one started", func(t *testing.T) {
		stops := 0
		for _, e := range entries {
			if e.Kind == "stop" {
				stops++
			}
		}
		assert.GreaterOrEqual(t, stops, 1)
	})
}
