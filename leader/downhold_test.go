package leader_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// A member lets the runtime hold back the downs of a lost node only when
// that node is not its leader's and it has a leader: a follower learns at
// once that its leader's node is gone, and for a while later that another
// follower's is.
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
			if i != leaderIdx && j == leaderIdx {
				assert.Zero(t, d, "member %d follows the leader on node %d", i, j)
			} else {
				assert.True(t, held(d), "member %d, node %d: %v not in [%v, %v)", i, j, d, most, 2*most)
			}
		}
	}
}

// A node's loss holds back what changes nothing urgent: when a follower's
// node is lost, the other members learn of it later (each down counted in
// DownsDeferred), and the leader keeps leading at its term.
func TestLosingAFollowersNodeHoldsBackItsDowns(t *testing.T) {
	c := newCluster(t, 5, defaults)
	leaderIdx, term := c.waitOneLeader(all(5))
	lost := (leaderIdx + 1) % 5
	c.nodes[lost].StopForce()
	survivors := without(all(5), lost)
	require.Eventually(t, func() bool { return c.heldDowns(survivors) == uint64(len(survivors)) }, settle, poll,
		"every survivor monitored the lost member; each down is held")
	for _, i := range survivors {
		require.Eventually(t, func() bool {
			return strings.Contains(c.inspect(i, "ergo:unreachable")["ergo:unreachable"], string(c.nodes[lost].Name()))
		}, settle, poll, "member %d learns of the loss once its hold ends", i)
	}
	again, termAgain := c.waitOneLeader(survivors)
	assert.Equal(t, leaderIdx, again)
	assert.Equal(t, term, termAgain)
}

// When the leader's node is lost, nothing is held back: every follower
// needs the news at once to elect a new leader.
func TestLosingTheLeadersNodeHoldsNothingBack(t *testing.T) {
	c := newCluster(t, 5, defaults)
	leaderIdx, _ := c.waitOneLeader(all(5))
	c.nodes[leaderIdx].StopForce()
	survivors := without(all(5), leaderIdx)
	again, _ := c.waitOneLeader(survivors)
	assert.NotEqual(t, leaderIdx, again)
	assert.Zero(t, c.heldDowns(survivors))
}
