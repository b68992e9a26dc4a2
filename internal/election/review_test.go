package election

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Review finding: the runtime queues a monitor's down message in the System
// queue, which the shell drains before the Main queue that holds election
// messages (act.Next), so the down of a leader whose process ended overtakes
// the last heartbeat it sent (core.go's observe says as much). observe keeps
// the process ended, but step goes on and onHeartbeat recognises the dead
// process as the live leader: stickiness comes back for ElectionTimeoutMin,
// the fast-failover timer is replaced by a full election timeout, and since
// no second down will ever come, the candidate's request is refused and never
// answered again.
func TestReviewDeadLeadersLastHeartbeatAfterItsDown(t *testing.T) {
	h := newAgreed(t, 2, withPreVote)
	h.heartbeat(2, 1, h.stamp(), nil)
	h.take()
	// n2's process ends; its down reaches n1 before the heartbeat n2 sent
	// just before, still queued in n1's Main queue.
	h.advance(time.Millisecond)
	h.c.PeerDown(h.now, peerPID(2), errCrashed)
	h.take()
	require.True(t, h.c.Leader().Node == "", "the down makes n1 forget its leader")
	h.heartbeat(2, 1, h.stamp(), nil) // the heartbeat sent before the end
	h.take()
	assert.Equal(t, "", string(h.c.Leader().Node), "n1 follows a leader whose process it knows ended")
	// n3 campaigns at once (it learnt of the end first): n1 should grant.
	h.advance(time.Millisecond)
	h.step(3, MessageRequestVote{Header: hdr(3, 2, h.stamp())})
	assert.True(t, lastVote(t, h.take()).Granted, "n1 refuses n3 for the sake of a dead leader")
}

// The same in a cluster: the leader's last heartbeats are still queued when
// its members learn of its end. Fast failover should elect the first in the
// failover order within a few heartbeat steps; instead the members follow
// the dead leader again and the cluster waits out election timeouts.
func TestReviewFailoverWhenTheDownOvertakesTheLastHeartbeat(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		for _, overtake := range []bool{false, true} {
			nw, l := settledLeader(t, 5, seed, withPreVote)
			nw.run(time.Second)
			// Fire the leader's heartbeat tick; its heartbeats are queued, not delivered.
			a, ok := l.timers[TimerHeartbeat]
			require.True(t, ok)
			nw.fire(l, a)
			require.NotEmpty(t, nw.queue)
			if !overtake {
				nw.flush() // the heartbeats first, as FIFO would have it
			}
			start := nw.now
			nw.crash(l, errCrashed) // every member is told now
			var took time.Duration
			nw.runUntil("a leader", 5*time.Second, func() bool {
				for _, name := range nw.names {
					if sn := nw.nodes[name]; sn.up && sn.core.IsProtocolLeader() {
						took = nw.now.Sub(start)
						return true
					}
				}
				return false
			})
			t.Logf("seed %d overtake=%v: protocol leader after %s", seed, overtake, took)
			assert.Less(t, took, l.core.cfg.ElectionTimeoutMin, "seed %d overtake=%v: a new leader only after %s", seed, overtake, took)
		}
	}
}

// Review finding: with the same-host shortcut, a member whose host's cell is
// held by another process drops MessageTimeoutNow (onTimeoutNow checks
// mayCampaign, which is false while campaignHeld), but nothing tells its
// leader: TransferLeadership and StepDown pick it like any other member and
// succeed, the leader steps down, and the cluster is leaderless for an
// election timeout. A preferred member in that position is handed leadership
// over and over, each time costing an election timeout.
func TestReviewHandoverToAMemberHeldByItsHostCell(t *testing.T) {
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

// The preferred-leader variant: the most preferred member is held by its host
// cell, so every preferred handover to it fails and leaves the cluster without
// a leader for an election timeout, again once the avoidance lapses.
func TestReviewPreferredMemberHeldByItsHostCell(t *testing.T) {
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
	t.Logf("leaderless for %s of a minute; roles %v", leaderless, nw.roles())
	assert.Zero(t, leaderless, "a healthy cluster went leaderless because of preferred handovers to a held member")
	assert.False(t, best.core.IsLeader())
}

// Review finding: Reform on a member whose host cell is held elsewhere
// installs the re-formed view, stamped with term+1, and returns it with no
// error, but campaign() returns at once (mayCampaign is false while
// campaignHeld): no campaign, the term does not move, and the member now
// holds a view stamped with a term no leader holds. Reform's checks cover the
// other reasons mayCampaign can be false, not this one.
func TestReviewReformOnAMemberHeldByItsHostCell(t *testing.T) {
	h := newAgreed(t, 4, withPreVote)
	h.take()
	h.c.SetCampaign(h.now, false)
	h.take()
	term := h.c.Term()
	v, err := h.c.Reform(h.now)
	rd := h.take()
	if err == nil {
		assert.Equal(t, term+1, h.c.Term(), "Reform succeeded (view %s) but did not campaign", &v)
		assert.NotEmpty(t, messagesOf[MessageRequestVote](rd), "no vote request went out")
		assert.Equal(t, h.c.Term(), v.Stamp.Key.Term, "the re-formed view is stamped with a term this member never reached")
	}
}

// The precondition of leader's TestReviewDownOfARemonitoredPIDIsSwallowed,
// from the core as it is: a peer outside the view (a newcomer not admitted
// yet, a member removed while one-way cut off from the leader) that falls
// silent for GhostTTL is forgotten with Demonitor, and when it talks again
// the same PID is monitored again. The shell then swallows its real down.
// This passes: it documents that the sequence happens.
func TestReviewCoreMonitorsAgainAPIDItDemonitored(t *testing.T) {
	h := newAgreed(t, 2, withPreVote)
	h.take()
	stranger := peerPID(4)
	h.step(4, MessageRequestVote{Header: hdr(4, 1, ViewStamp{}), PreVote: true})
	require.Contains(t, effectsIn[Monitor](h.take()), Monitor{PID: stranger})
	h.advance(h.c.cfg.GhostTTL + time.Millisecond)
	h.fire(TimerElection)
	require.Contains(t, effectsIn[Demonitor](h.take()), Demonitor{PID: stranger})
	h.step(4, MessageRequestVote{Header: hdr(4, 1, ViewStamp{}), PreVote: true})
	require.Contains(t, effectsIn[Monitor](h.take()), Monitor{PID: stranger})
}
