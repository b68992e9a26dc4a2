package election

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// Issue 8, item 4: graceful handover.
func TestStepDownHandsOverToReachablePeer(t *testing.T) {
	nw, l := settledLeader(t, 5, 11, withPreVote)
	term := l.core.Term()

	effectsBefore, sentBefore := len(l.effects), len(l.sent)
	start := nw.now
	nw.input(l, func(c *Core, now time.Time) { require.NoError(t, c.StepDown(now)) })
	assert.False(t, l.core.IsLeader())

	// The leader stops acting as leader before it hands over.
	var first Effect
	for _, e := range l.effects[effectsBefore:] {
		if e.Kind == EffectBecomeFollower {
			first = e
			break
		}
	}
	assert.Equal(t, Effect{Kind: EffectBecomeFollower}, first)
	var to gen.PID
	for _, o := range l.sent[sentBefore:] {
		if m, ok := o.Message.(MessageTimeoutNow); ok {
			to = o.To
			assert.Equal(t, term, m.Term)
		}
	}
	require.NotEqual(t, gen.PID{}, to, "a reachable peer got MessageTimeoutNow")

	nw.flush()
	nl := nw.leaders()
	require.Len(t, nl, 1, "the target won at once, despite stickiness")
	assert.Equal(t, to, nl[0].pid)
	assert.Equal(t, term+1, nl[0].core.Term())
	assert.Equal(t, start, nw.now, "no election timeout had to pass")
	nw.run(time.Second)
	assert.Same(t, nl[0], nw.settle(time.Second))
}

func TestTransferLeadershipToChosenNode(t *testing.T) {
	nw, l := settledLeader(t, 3, 12, withPreVote)
	target := nw.other(l)
	nw.input(l, func(c *Core, now time.Time) { require.NoError(t, c.TransferLeadership(now, target.name)) })
	nw.flush()
	assert.True(t, target.core.IsLeader())

	t.Run("only a leader can hand over", func(t *testing.T) {
		require.ErrorIs(t, l.core.StepDown(nw.now), gen.ErrNotAllowed)
		require.ErrorIs(t, l.core.TransferLeadership(nw.now, target.name), gen.ErrNotAllowed)
	})
	t.Run("a node that is not a member is refused", func(t *testing.T) {
		require.ErrorIs(t, target.core.TransferLeadership(nw.now, "n9@host"), gen.ErrIncorrect)
		assert.True(t, target.core.IsLeader())
	})
}

// "if the target does not win within an election timeout the cluster elects as usual"
func TestHandoverToDeadTargetFallsBackToElection(t *testing.T) {
	nw, l := settledLeader(t, 3, 13, withPreVote)
	target := nw.other(l)
	nw.isolate(target) // the handover message is lost
	nw.input(l, func(c *Core, now time.Time) { require.NoError(t, c.TransferLeadership(now, target.name)) })
	nw.run(10 * time.Millisecond)
	assert.Empty(t, nw.leaders())
	next := nw.settle(5 * time.Second) // among the others: the target is still cut off
	require.NotEqual(t, target, next)
	assert.Equal(t, uint64(1), l.core.Status(nw.now).FailedHandovers, "someone else led first: the handover failed")
	assert.True(t, l.core.avoided(target.name, nw.now), "and the target is avoided for a while")
	nw.heal()
	nw.settle(5 * time.Second)
}

func TestHandoverRefusalsAndStrayTimeoutNow(t *testing.T) {
	h := newAgreed(t, 2, nil)
	term := h.lead(2)
	t.Run("a peer that never answered cannot take over", func(t *testing.T) {
		require.ErrorIs(t, h.c.TransferLeadership(h.now, nodeName(3)), gen.ErrNotAllowed)
		assert.True(t, h.c.IsLeader())
	})
	t.Run("a leader ignores MessageTimeoutNow", func(t *testing.T) {
		h.step(2, MessageTimeoutNow{Header: hdr(2, term, h.stamp())})
		assert.True(t, h.c.IsLeader())
		assert.Equal(t, term, h.c.Term())
		assert.Equal(t, uint64(1), h.c.Status(h.now).Dropped[dropUnexpected])
	})
	t.Run("a lone leader has nobody to step down to", func(t *testing.T) {
		h.c.SendFailed(h.now, nodeName(2), gen.ErrNoConnection)
		require.ErrorIs(t, h.c.StepDown(h.now), gen.ErrNotAllowed)
		assert.True(t, h.c.IsLeader())
	})
}

// Handover and the same-host shortcut: a member whose host's cell another
// process holds does not start elections of its own accord, but a leader
// handing over to it (MessageTimeoutNow) is a directed campaign with one
// candidate, so it takes over; were it to drop the request, the leader would
// step down for nothing and the cluster wait an election timeout. Found by
// the adversarial review.
func TestHandoverReachesAMemberHeldByItsHostCell(t *testing.T) {
	nw, l := settledLeader(t, 5, 21, withPreVote)
	target := nw.other(l)
	nw.input(target, func(c *Core, now time.Time) { c.SetCampaign(now, false) }) // a host-mate holds the cell
	start := nw.now
	nw.input(l, func(c *Core, now time.Time) { require.NoError(t, c.TransferLeadership(now, target.name)) })
	nw.flush()
	assert.True(t, target.core.IsLeader(), "the handover target did not take over: %v", nw.roles())
	nw.runUntil("a leader", 5*time.Second, func() bool { return len(nw.leaders()) == 1 })
	assert.Less(t, nw.now.Sub(start), l.core.cfg.ElectionTimeoutMin, "leaderless for %s after a handover that reported success", nw.now.Sub(start))
}

// The preferred leader held by its host's cell: preferred handovers to it
// succeed, and it leads, with the cluster never leaderless meanwhile.
func TestPreferredMemberHeldByItsHostCellLeads(t *testing.T) {
	nw := newNetwork(t, 5, 22, func(c *Config) {
		c.DisablePreVote = false
		c.Prefer = Preference{Kind: PreferHighestID}
	})
	best := nw.node(5)
	nw.input(best, func(c *Core, now time.Time) { c.SetCampaign(now, false) })
	nw.settle(5 * time.Second)
	var leaderless time.Duration
	for range 6000 { // one minute
		nw.run(10 * time.Millisecond)
		if len(nw.leaders()) == 0 {
			leaderless += 10 * time.Millisecond
		}
	}
	assert.Zero(t, leaderless, "leaderless for a while: %v", nw.roles())
	assert.True(t, best.core.IsLeader(), "the preferred member leads: %v", nw.roles())
	assert.Zero(t, best.core.Status(nw.now).FailedHandovers)
}

// Handover on a graceful end (issue 11, "a stopped member still counts"): a
// leader whose process is ending hands over with Ending set, and its
// successor counts it as ended before any down arrives. At the floor of
// three, the successor of a three-member view removes it and stays hidden;
// it never publishes a leadership that counts a member already gone.
func TestSuccessorOfAnEndingLeaderNeverCountsIt(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		nw, l := settledLeader(t, 3, 40+seed, func(c *Config) { c.MinClusterSize = 3 })
		before := map[*simNode]int{}
		for _, name := range nw.names {
			before[nw.nodes[name]] = len(effectsOf(nw.nodes[name], EffectBecomeLeader))
		}
		nw.input(l, func(c *Core, now time.Time) { require.NoError(t, c.StepDownToEnd(now)) })
		ending := sentOf[MessageTimeoutNow](l)
		require.NotEmpty(t, ending)
		require.True(t, ending[len(ending)-1].Message.(MessageTimeoutNow).Ending)
		l.up = false // its process ends; the down is never delivered
		nw.run(time.Second)
		var successor *simNode
		for _, name := range nw.names {
			sn := nw.nodes[name]
			if sn != l && sn.core.IsProtocolLeader() {
				successor = sn
			}
		}
		require.NotNil(t, successor, "seed %d: the target took over", seed)
		assert.Equal(t, 2, successor.core.view.size(), "seed %d: the ending member is removed", seed)
		for _, name := range nw.names {
			sn := nw.nodes[name]
			assert.Equal(t, before[sn], len(effectsOf(sn, EffectBecomeLeader)), "seed %d: %s never published with the ending member counted", seed, name)
		}
	}
	t.Run("a plain StepDown does not say the member ends", func(t *testing.T) {
		nw, l := settledLeader(t, 3, 60, func(c *Config) { c.MinClusterSize = 3 })
		nw.input(l, func(c *Core, now time.Time) { require.NoError(t, c.StepDown(now)) })
		sent := sentOf[MessageTimeoutNow](l)
		require.NotEmpty(t, sent)
		assert.False(t, sent[len(sent)-1].Message.(MessageTimeoutNow).Ending)
		nw.flush()
		assert.Len(t, nw.leaders(), 1, "the successor of a member that stays publishes as usual")
	})
}

// An ending handover marks the life that sent it, and only that life: a
// replay of it changes nothing once its term has passed, and a new life of
// the member on that node (restarted quickly, before the old down) counts
// as live at once; the old life's late down does not mark it again, and the
// successor keeps it in the view.
func TestEndingHandoverMarksOnlyTheLifeThatSentIt(t *testing.T) {
	h := newAgreed(t, 2, func(c *Config) { c.MinClusterSize = 3 })
	stamp := h.stamp()
	h.heartbeat(2, 1, stamp, nil)
	require.Equal(t, peerPID(2), h.c.leader, "n2 leads term 1")
	ending := MessageTimeoutNow{Header: hdr(2, 1, stamp), Ending: true}
	h.step(2, ending)
	require.Equal(t, RoleCandidate, h.c.role, "the handover's target campaigns")
	term := h.c.Term()
	p := h.c.peers.get(nodeName(2))
	require.NotEmpty(t, p.ended(), "n2's life said it ends")

	h.step(2, ending) // replayed or duplicated: its term is over
	assert.Equal(t, term, h.c.Term(), "a replayed handover starts no second campaign")

	reborn := gen.PID{Node: nodeName(2), ID: 1000, Creation: 2}
	h.c.Step(h.now, reborn, MessageVote{Header: hdr(2, term, h.stamp()), Granted: true})
	h.collect()
	assert.Empty(t, p.ended(), "the new life is live")
	h.c.PeerDown(h.now, peerPID(2), gen.TerminateReasonNormal)
	h.collect()
	assert.Empty(t, p.ended(), "the old life's late down names a process no longer known")
	require.True(t, h.c.IsProtocolLeader(), "n1 won with n2's new life")
	h.c.Step(h.now, reborn, MessageHeartbeatAck{Header: hdr(2, term, h.stamp())})
	h.ack(3, term)
	h.take()
	assert.Equal(t, RoleLeader, h.c.Role(), "visible with all three: %+v", h.c.Status(h.now).Below)
	v, _ := h.c.View()
	assert.Len(t, v.Members, 3, "n2 was not removed")
}
