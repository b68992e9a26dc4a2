package election

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// R13, the learner rule (docs/membership.md): a formation candidate that
// counts at least MinClusterSize members of its own view, a majority of it,
// known to have accepted that view at its key (itself, the voters whose
// answers report the same view at the same key, and the proposer of a fresh
// first view) knows the view is chosen: it takes it as agreed and goes on
// as a regular election.

// firstView is a view of members n1..nk that node proposer formed at term
// (a fresh formation: lineage term@proposer, key (term, 1)), not agreed.
func firstView(k int, proposer int, term uint64) *View {
	return newView(ViewStamp{Lineage: Lineage{Term: term, Node: nodeName(proposer)}, Key: ViewKey{Term: term, Epoch: 1}}, members(k))
}

// The stall this rule ends: three members at the default floor of three, the
// leader of the first view counts both acknowledgements and dies before its
// next message says the view is agreed. The two survivors hold the view,
// not known agreed; a formation needs three grants and only two members are
// alive, so without the rule nobody ever leads until the dead one returns.
// With it, a survivor counts itself, the other and the proposer, takes the
// view as agreed and wins with a majority of it.
func TestLearnerRuleElectsTheSurvivorsOfAFirstLeaderThatDiedBeforeSayingAgreed(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			nw := newNetwork(t, 3, seed, nil) // MinClusterSize 3, pre-vote and fast failover on
			// Nothing that says "agreed" gets through until the leader dies:
			// its heartbeat telling the view is agreed never arrives.
			nw.lose = func(_, _ gen.Atom, msg any) bool {
				h, _ := header(msg)
				return h.View.Agreed
			}
			var first *simNode
			nw.runUntil("the first view agreed at its leader", 5*time.Second, func() bool {
				for _, name := range nw.names {
					if sn := nw.nodes[name]; sn.core.IsProtocolLeader() && sn.core.view.Stamp.Agreed {
						first = sn
						return true
					}
				}
				return false
			})
			v := first.core.view.detached()
			require.Equal(t, Lineage{Term: v.Stamp.Key.Term, Node: first.name}, v.Stamp.Lineage, "a fresh first view")
			var survivors []*simNode
			for _, name := range nw.names {
				if sn := nw.nodes[name]; sn != first {
					survivors = append(survivors, sn)
					held := sn.core.view
					require.NotNil(t, held, "%s acknowledged the view", name)
					require.Equal(t, v.Stamp.Key, held.Stamp.Key)
					require.Equal(t, v.Members, held.Members)
					require.False(t, held.Stamp.Agreed, "%s must not know the view is agreed", name)
				}
			}
			nw.crash(first, gen.ErrNoConnection)
			nw.lose = nil
			nw.runUntil("a survivor leading", 5*time.Second, func() bool {
				return len(nw.leaders()) == 1 && nw.agree(nw.leaders()[0])
			})
			l := nw.leaders()[0]
			got := l.core.view
			assert.Equal(t, v.Stamp.Lineage, got.Stamp.Lineage, "the view the first leader formed, not another")
			assert.Equal(t, v.Members, got.Members)
			assert.True(t, got.Stamp.Agreed)
			for _, sn := range survivors {
				assert.True(t, sn.core.view.Stamp.Agreed, "%s knows the view is agreed", sn.name)
			}
			assert.Len(t, nw.agreed, 1, "one lineage agreed")
		})
	}
}

// R13 counted in the core: who counts, and who does not.
func TestLearnerRuleCountsAcceptorsOfTheSameKey(t *testing.T) {
	min3 := func(c *Config) { c.MinClusterSize = 3 }
	t.Run("a grant reporting the same view, the candidate and the proposer make three", func(t *testing.T) {
		v := firstView(3, 3, 2) // n3 formed {n1,n2,n3} at term 2
		h := newHarnessWith(t, 2, HardState{Term: 2, View: v}, min3)
		term := h.campaign()
		require.False(t, h.stamp().Agreed, "n1 and n3 are two")
		h.formationGrant(2, term, nil, v)
		require.True(t, h.stamp().Agreed, "n1, n2 and n3 accepted it at %s", v.Stamp.Key)
		require.True(t, h.c.IsProtocolLeader(), "two grants are a majority of the agreed view")
		assert.Equal(t, v.Stamp.Lineage, h.stamp().Lineage)
		assert.Equal(t, ViewKey{Term: term, Epoch: 1}, h.stamp().Key, "re-stamped")
		changed := effectsIn(h.take(), EffectViewChanged)
		require.NotEmpty(t, changed)
		assert.Contains(t, changed[0].Why, "chosen: 3 members accepted it")
	})
	t.Run("a refusal reporting the same view counts too", func(t *testing.T) {
		v := firstView(3, 3, 2)
		h := newHarnessWith(t, 2, HardState{Term: 2, View: v}, min3)
		term := h.campaign()
		h.step(2, MessageVote{Header: hdr(2, term, v.Stamp), View: v})
		assert.True(t, h.stamp().Agreed)
		assert.False(t, h.c.IsProtocolLeader(), "a refusal is no vote")
	})
	t.Run("a report of a newer key does not count", func(t *testing.T) {
		v := firstView(3, 3, 2)
		h := newHarnessWith(t, 2, HardState{Term: 2, View: v}, min3)
		term := h.campaign()
		moved := v.detached()
		moved.Stamp.Key = ViewKey{Term: 5, Epoch: 1} // n2 accepted a later proposal since
		h.step(2, MessageVote{Header: hdr(2, term, moved.Stamp), View: moved})
		assert.False(t, h.stamp().Agreed, "n2 reports what it holds now, another key")
	})
	t.Run("a re-proposed view names no proposer", func(t *testing.T) {
		v := firstView(3, 3, 2)
		v.Stamp.Key = ViewKey{Term: 4, Epoch: 1} // someone re-proposed it at term 4
		h := newHarnessWith(t, 2, HardState{Term: 4, View: v}, min3)
		term := h.campaign()
		h.formationGrant(2, term, nil, v)
		assert.False(t, h.stamp().Agreed, "n1 and n2 are two; the leader of term 4 is unknown")
		assert.False(t, h.c.IsProtocolLeader(), "a formation needs three grants")
	})
	t.Run("the candidate that proposed the view counts once", func(t *testing.T) {
		v := firstView(3, 1, 2) // n1 itself formed it, and restarted
		h := newHarnessWith(t, 2, HardState{Term: 2, View: v}, min3)
		term := h.campaign()
		h.formationGrant(2, term, nil, v)
		assert.False(t, h.stamp().Agreed, "n1 and n2 are two")
		h.formationGrant(3, term, nil, v)
		assert.True(t, h.c.IsProtocolLeader(), "three grants form")
	})
	t.Run("a report from outside the view does not count", func(t *testing.T) {
		v := firstView(5, 3, 2) // {n1..n5}, proposed by n3
		h := newHarnessWith(t, 5, HardState{Term: 2, View: v}, min3)
		term := h.campaign()
		h.formationGrant(6, term, nil, v)
		assert.False(t, h.stamp().Agreed, "n6 is no member of the view")
		h.formationGrant(2, term, nil, v)
		assert.True(t, h.stamp().Agreed, "n1, n2 and n3: three, a majority of five")
	})
	t.Run("a majority of the view is needed above the floor", func(t *testing.T) {
		v := firstView(5, 3, 2)
		h := newHarnessWith(t, 4, HardState{Term: 2, View: v}, func(c *Config) { c.MinClusterSize = 1 })
		term := h.campaign()
		assert.False(t, h.stamp().Agreed, "n1 and n3 are not a majority of five")
		h.formationGrant(2, term, nil, v)
		assert.True(t, h.stamp().Agreed)
	})
	t.Run("at a floor of two the candidate and the proposer are enough", func(t *testing.T) {
		v := firstView(3, 3, 2)
		h := newHarnessWith(t, 2, HardState{Term: 2, View: v}, func(c *Config) { c.MinClusterSize = 2 })
		h.take()
		term := h.campaign()
		require.True(t, h.stamp().Agreed, "n1 and n3 accepted it: two, a majority of three")
		asks := messagesOf[MessageRequestVote](h.take())
		require.Len(t, asks, 2)
		for _, o := range asks {
			req := o.Message.(MessageRequestVote)
			assert.True(t, req.View.Agreed, "asked as a member of an agreed view")
			assert.Empty(t, req.Declared)
		}
		h.grant(2, term)
		assert.True(t, h.c.IsProtocolLeader())
	})
}
