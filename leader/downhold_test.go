package leader_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
)

// heldDowns sums NetworkStats.DownsDeferred over the members' nodes.
func (c *testCluster) heldDowns(members []int) uint64 {
	var sum uint64
	for _, i := range members {
		sum += c.nodes[i].Network().Stats().DownsDeferred
	}
	return sum
}

// Rule "A peer going down is handled by reason", with the runtime holding
// back what can wait: only a follower lets the downs of a lost node wait,
// and only when its leader is elsewhere. A follower learns at once that its
// leader's node is gone, and a while later that another follower's is; a
// leader learns everything at once.
func TestDownDelayOnLossHoldsOnlyWhatCanWait(t *testing.T) {
	members := make([]*member, 3)
	c := newCluster(t, 3, defaults, func(i int, m *member) { members[i] = m })
	leaderIdx, _ := c.waitOneLeader(all(3))
	most := time.Duration(leader.DefaultElectionTimeoutMax) * time.Millisecond
	held := func(d time.Duration) bool { return d >= most && d < 2*most }

	assert.Zero(t, (&member{}).DownDelayOnLoss(c.nodes[0].Name()), "a member that has reported nothing holds nothing back")
	for i, m := range members {
		for j, n := range c.nodes {
			if j == i {
				continue
			}
			d := m.DownDelayOnLoss(n.Name())
			switch {
			case i == leaderIdx:
				assert.Zero(t, d, "member %d leads: it holds nothing back", i)
			case j == leaderIdx:
				assert.Zero(t, d, "member %d follows the leader on node %d", i, j)
			default:
				assert.True(t, held(d), "member %d, node %d: %v not in [%v, %v)", i, j, d, most, 2*most)
			}
		}
	}
}

// Rule "A peer going down is handled by reason": a node's loss holds back
// what changes nothing urgent. When a follower's node is lost, the other
// followers learn of it later (each down counted in DownsDeferred), the
// leader at once, and the leader keeps leading at its term.
func TestLosingAFollowersNodeHoldsBackItsDowns(t *testing.T) {
	c := newCluster(t, 5, defaults)
	leaderIdx, term := c.waitOneLeader(all(5))
	lost := (leaderIdx + 1) % 5
	c.nodes[lost].StopForce()
	survivors := without(all(5), lost)
	followers := without(survivors, leaderIdx)
	require.Eventually(t, func() bool { return c.heldDowns(followers) == uint64(len(followers)) }, settle, poll,
		"every surviving follower monitored the lost member; each down is held")
	assert.Zero(t, c.heldDowns([]int{leaderIdx}), "the leader holds nothing back")
	for _, i := range survivors {
		require.Eventually(t, func() bool {
			return strings.Contains(c.inspect(i, "ergo:unreachable")["ergo:unreachable"], string(c.nodes[lost].Name()))
		}, settle, poll, "member %d learns of the loss once its hold ends", i)
	}
	again, termAgain := c.waitOneLeader(survivors)
	assert.Equal(t, leaderIdx, again)
	assert.Equal(t, term, termAgain)
}

// Rule "A peer going down is handled by reason": a follower that stops
// following a leader elsewhere gets the downs held for it at once, as
// leader must see a lost peer as lost (a hand-over of its own must not pick
// it), and a member between leaders decides with its view of who is alive.
// Each member here holds what it may for an hour. The timings are slow, so
// that no election but the test's comes on a loaded machine.
func TestAFollowerThatStopsFollowingGetsItsHeldDownsAtOnce(t *testing.T) {
	slow := func(int) leader.Options {
		return leader.Options{ClusterID: "test", ElectionTimeoutMin: 1000, ElectionTimeoutMax: 2000, HeartbeatInterval: 100}
	}
	for _, how := range []string{"it takes over by a hand-over", "its leader's node is lost too"} {
		t.Run(how, func(t *testing.T) {
			c := newCluster(t, 5, slow, func(_ int, m *member) { m.holdLong = time.Hour })
			leaderIdx, _ := c.waitOneLeader(all(5))
			lost := (leaderIdx + 1) % 5
			heir := (leaderIdx + 2) % 5
			c.nodes[lost].StopForce()
			require.Eventually(t, func() bool { return c.heldDowns([]int{heir}) == 1 }, settle, poll,
				"the follower holds the lost member's down")
			lostHere := func(i int) bool {
				return strings.Contains(c.inspect(i, "ergo:unreachable")["ergo:unreachable"], string(c.nodes[lost].Name()))
			}
			assert.False(t, lostHere(heir), "held for an hour")
			survivors := without(all(5), lost)
			if how == "it takes over by a hand-over" {
				require.NoError(t, leader.TransferLeadershipTo(c.nodes[leaderIdx], c.pids[leaderIdx], c.nodes[heir].Name()))
				got, _ := c.waitOneLeader(survivors)
				require.Equal(t, heir, got)
			} else {
				c.nodes[leaderIdx].StopForce()
				survivors = without(survivors, leaderIdx)
				c.waitOneLeader(survivors)
			}
			require.Eventually(t, func() bool { return lostHere(heir) }, settle, poll, "it knows the peer is lost")
		})
	}
}

// Rule "A leader that loses contact steps down by itself": a leader cut off
// from every peer holds none of their downs back, so under EvidenceContact,
// where a send counts as contact until the peer's down, nothing keeps its
// evidence alive, and it steps down while the others elect.
func TestALeaderCutOffHoldsNoDownBack(t *testing.T) {
	c := newCluster(t, 3, func(int) leader.Options { return leader.Options{ClusterID: "test", Evidence: leader.EvidenceContact} })
	leaderIdx, _ := c.waitOneLeader(all(3))
	others := without(all(3), leaderIdx)
	for _, o := range others {
		// No route back: the leader's sends to them find no connection.
		require.NoError(t, c.nodes[leaderIdx].Network().RemoveRoute(c.nodes[o].Name()))
		require.NoError(t, c.nodes[o].Network().RemoveRoute(c.nodes[leaderIdx].Name()))
	}
	for _, o := range others {
		require.NoError(t, c.nodes[leaderIdx].Network().Disconnect(c.nodes[o].Name()))
	}
	require.Eventually(t, func() bool { return len(c.leaders([]int{leaderIdx})) == 0 }, settle, poll, "the cut-off leader steps down")
	c.waitOneLeader(others)
	assert.Zero(t, c.heldDowns([]int{leaderIdx}), "a leader holds nothing back")
}

// API Methods (TransferLeadership): a leader refuses to hand over to a
// member whose node it has lost, as soon as it has learnt of the loss: it
// holds no down back.
func TestTransferToALostNodeIsRefused(t *testing.T) {
	c := newCluster(t, 3, func(int) leader.Options {
		return leader.Options{ClusterID: "test", ElectionTimeoutMin: 1000, ElectionTimeoutMax: 2000, HeartbeatInterval: 100}
	})
	leaderIdx, _ := c.waitOneLeader(all(3))
	lost := (leaderIdx + 1) % 3
	c.nodes[lost].StopForce()
	require.Eventually(t, func() bool {
		return strings.Contains(c.inspect(leaderIdx, "ergo:unreachable")["ergo:unreachable"], string(c.nodes[lost].Name()))
	}, settle, poll, "the leader learns of the loss")
	err := leader.TransferLeadershipTo(c.nodes[leaderIdx], c.pids[leaderIdx], c.nodes[lost].Name())
	require.ErrorIs(t, err, gen.ErrNotAllowed)
	assert.Zero(t, c.heldDowns([]int{leaderIdx}), "the leader learnt of the loss at once")
}

// Under EvidenceContact nothing is held back, not even by a follower: it
// may become leader while the downs wait, and would count sends to the lost
// peers as contact until they came.
func TestNoDownIsHeldUnderEvidenceContact(t *testing.T) {
	members := make([]*member, 3)
	c := newCluster(t, 3, func(int) leader.Options { return leader.Options{ClusterID: "test", Evidence: leader.EvidenceContact} },
		func(i int, m *member) { members[i] = m })
	leaderIdx, _ := c.waitOneLeader(all(3))
	follower := (leaderIdx + 1) % 3
	other := (leaderIdx + 2) % 3
	assert.Zero(t, members[follower].DownDelayOnLoss(c.nodes[other].Name()))
}
