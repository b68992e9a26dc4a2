package leader

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// A member lends its core a pooled room while it handles a message: what
// the core collects for the next Ready is in that room, and the room comes
// back cleared once the core holds none of it, but not while a Ready in it
// is pending.
func TestReadyRoomIsLentAndTakenBack(t *testing.T) {
	self := gen.ProcessID{Name: "m", Node: "a@h"}
	cfg := election.Config{ClusterID: "c", Self: self, Rand: rand.New(rand.NewPCG(1, 2)),
		Bootstrap: []gen.ProcessID{{Name: "m", Node: "b@h"}, {Name: "m", Node: "c@h"}}}.WithDefaults()
	now := time.Now()
	core, err := election.New(cfg, gen.PID{Node: self.Node, ID: 1, Creation: 1}, election.HardState{}, now)
	require.NoError(t, err)
	_ = core.Ready()
	a := &Actor{core: core}

	r := a.lendRoom()
	require.NoError(t, core.Join(now, gen.ProcessID{Name: "m", Node: "d@h"}))
	rd := core.Ready()
	require.NotEmpty(t, rd.Messages, "a join asks the new member")
	assert.Same(t, &r.messages[0], &rd.Messages[0], "the Ready is in the room")
	a.reclaimRoom(r)
	assert.Zero(t, r.messages[0], "the room comes back cleared")

	r = a.lendRoom()
	require.NoError(t, core.Join(now, gen.ProcessID{Name: "m", Node: "e@h"}))
	a.reclaimRoom(r)
	assert.NotZero(t, r.messages[0], "a room holding a pending Ready stays the core's")
}
