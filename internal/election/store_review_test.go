package election

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// storeSlots remembers, for every core seen, what each view slot of its
// store held when first seen taken.
type storeSlots map[*View]string

// note records the taken slots of every core in nw, and fails when one it
// recorded before holds something else now.
func (s storeSlots) note(t *testing.T, nw *network, step int) {
	t.Helper()
	for _, name := range nw.names {
		c := nw.nodes[name].core
		if c.store == nil {
			continue
		}
		for i := range int(c.store.used) {
			v := &c.store.views[i]
			now := describe(t, v)
			if was, ok := s[v]; ok {
				require.Equal(t, was, now, "step %d: %s's store slot %d was rewritten", step, name, i)
				continue
			}
			s[v] = now
		}
		if c.lead != nil && c.store != nil {
			require.Same(t, &c.store.lead, c.lead, "step %d: %s leads from its store", step, name)
		}
	}
}

// Review: a member's store hands out its three view slots once each: a slot
// once taken is a View like any other, shared by the core, its HardState,
// its messages and its clones, so it is never written again, through
// formations, re-stamps by new leaders, agreements, joins, leaves, restarts
// from the stored view, and a clone of the whole network run on after the
// original, which runs on after it.
func TestReviewStoreSlotsAreNeverRewritten(t *testing.T) {
	taken := 0
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			slots := storeSlots{}
			step := 0
			drive := func(nw *network, r *rand.Rand, rounds int) {
				nw.onReady = func(*simNode, Ready) { step++; slots.note(t, nw, step) }
				l := nw.settle(10 * time.Second)
				wait := 3 * l.core.cfg.ElectionTimeoutMax
				for range rounds {
					if op := r.IntN(5); op < 4 {
						l = nw.changeView(l, r, op, wait)
						continue
					}
					// A member restarts from what it stored.
					sn := nw.nodes[nw.names[r.IntN(len(nw.names))]]
					nw.add(sn.core.cfg, sn.hs)
					nw.run(wait)
					l = nw.settle(10 * time.Second)
				}
			}
			srcs := map[gen.Atom]*rand.PCG{}
			nw := newNetwork(t, 5, seed, func(c *Config) {
				src := rand.NewPCG(seed, uint64(len(srcs)))
				srcs[c.Self.Node] = src
				c.Rand = rand.New(src)
			})
			r := rand.New(rand.NewPCG(seed, 9))
			drive(nw, r, 10)
			copyNet, _ := twin(nw, srcs)
			drive(copyNet, rand.New(rand.NewPCG(seed, 10)), 10)
			slots.note(t, nw, step) // the clones' run changed no slot of the originals
			drive(nw, r, 10)
			taken += len(slots)
		})
	}
	require.Greater(t, taken, 40, "too few store slots were taken to test anything")
}

// Review: the steady beat hands back the list the shell holds while its
// members and their acknowledgements stand, whatever their contact times
// did: the shell reads those from LastReply at each publication, so a list
// handed back after a catch-up moved them still times each member's first
// acknowledgement from its latest reply.
func TestReviewSteadyBeatHandedBackWhileContactTimesMove(t *testing.T) {
	nw, l := settledLeader(t, 3, 47, nil)
	sb, ok := l.core.SteadyBeat(nw.now, nil)
	require.True(t, ok)
	before := make([]time.Time, len(sb.Members))
	for i, m := range sb.Members {
		before[i] = l.core.LastReply(m.PID)
		require.False(t, before[i].IsZero())
	}
	at := nw.now.Add(sb.Interval / 2)
	acks := make([]TakenAcks, len(sb.Members))
	for i := range acks {
		acks[i] = TakenAcks{Count: 1, Last: at.Add(time.Duration(i) * time.Microsecond)}
	}
	require.NoError(t, l.core.CatchUp(&sb, BeatenAhead{Acks: acks}))

	again, ok := l.core.SteadyBeat(at, sb.Members)
	require.True(t, ok, "the beat stands after a catch-up")
	assert.Same(t, &sb.Members[0], &again.Members[0], "contact times are not part of the list")
	for i, m := range again.Members {
		assert.Equal(t, acks[i].Last, l.core.LastReply(m.PID), "member %d's last reply moved with the catch-up", i)
		assert.True(t, l.core.LastReply(m.PID).After(before[i]))
	}
}

// Review: TestCloneReplaysWhatTheOriginalDid drives its networks from the
// start with churn, which in its 20 seeds never elects a leader nor forms
// a view, so the views and leadership a clone shares with, or copies
// from, its original were never replayed. Here the network first settles
// on a leader with an agreed view, from its store, then churns; a clone
// taken then replays what the original did.
func TestReviewCloneReplaysALeadingCluster(t *testing.T) {
	leading := 0
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			nw, srcs := replayNetwork(t, seed)
			l := nw.settle(10 * time.Second)
			require.NotNil(t, l.core.view)
			if seed%2 == 0 {
				churn(t, nw, srcs, seed, 20, nil)
			}
			if l.core.IsProtocolLeader() && l.core.store != nil && l.core.lead == &l.core.store.lead {
				leading++
			}
			for _, sn := range nw.nodes {
				sn.effects, sn.sent = nil, nil // the twin starts without them
			}
			copyNet, copySrcs := twin(nw, srcs)
			want := churn(t, nw, srcs, seed+1000, 150, nil)
			got := churn(t, copyNet, copySrcs, seed+1000, 150, nil)
			for i := range want {
				require.Equal(t, want[i], got[i], "step %d", i/len(nw.names))
			}
		})
	}
	require.Greater(t, leading, 10, "too few clones of a leader from its store")
}
