package election

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// "Diverged views do [elect separately] ... When the two sides can talk again,
// the higher term wins and the other side steps down; the view grows back and
// quorum is recomputed over it." Two groups that elected in the same term have
// no higher term to settle it: the leaders meet and one cluster remains.
func TestDivergedViewsElectingInTheSameTermMergeIntoOneLeader(t *testing.T) {
	for _, preVote := range []bool{true, false} {
		name := "with PreVote"
		if !preVote {
			name = "without PreVote"
		}
		t.Run(name, func(t *testing.T) {
			nw := newNetwork(t, 6, 31, func(c *Config) {
				c.PreVote = preVote
				c.Evidence = EvidenceReplies
				c.Bootstrap = nil
			})
			group := func(i int) []int {
				if i <= 3 {
					return []int{1, 2, 3}
				}
				return []int{4, 5, 6}
			}
			for i := 1; i <= 6; i++ {
				for _, j := range group(i) {
					if j != i {
						nw.input(nw.node(i), func(c *Core, now time.Time) { require.NoError(t, c.Join(now, procID(nodeName(j)))) })
					}
				}
			}
			// Each group elects its own leader, as the document says diverged views do.
			nw.diverged = true
			nw.run(3 * time.Second)
			require.Len(t, nw.leaders(), 2, "%v", nw.roles())
			require.Equal(t, nw.leaders()[0].core.Term(), nw.leaders()[1].core.Term(), "the scenario needs both groups at one term: %v", nw.roles())

			// Discovery now resolves everyone everywhere.
			for i := 1; i <= 6; i++ {
				for j := 1; j <= 6; j++ {
					if j != i {
						nw.input(nw.node(i), func(c *Core, now time.Time) { require.NoError(t, c.Join(now, procID(nodeName(j)))) })
					}
				}
			}
			l := nw.settle(10 * time.Second)
			conflicts := uint64(0)
			for i := 1; i <= 6; i++ {
				conflicts += nw.node(i).core.Status(nw.now).LeaderConflicts
			}
			assert.NotZero(t, conflicts, "a leader stood down on meeting the other")
			nw.run(3 * time.Second)
			require.Len(t, nw.leaders(), 1, "%v", nw.roles())
			assert.Equal(t, l, nw.leaders()[0], "the merged cluster keeps one stable leader")
			for i := 1; i <= 6; i++ {
				assert.Equal(t, 6, nw.node(i).core.ViewSize())
				assert.Equal(t, 4, nw.node(i).core.Quorum())
			}
		})
	}
}

// A follower that already follows a live leader in a term does not switch to a
// second leader of the same term; it tells the second one, which stands down.
func TestFollowerReportsASecondLeaderInItsTerm(t *testing.T) {
	h := newHarness(t, 3, nil)
	h.heartbeat(2, 1)
	h.take()
	h.heartbeat(3, 1)
	rd := h.take()
	acks := messagesOf[MessageHeartbeatAck](rd)
	require.Len(t, acks, 1)
	ack := acks[0].Message.(MessageHeartbeatAck)
	assert.Equal(t, peerPID(2), ack.Follows, "the ack names the leader it follows")
	assert.Equal(t, peerPID(3), acks[0].To, "the second leader is told")
	assert.Equal(t, peerPID(2), h.c.Leader(), "it keeps following the first leader")
	assert.Equal(t, uint64(1), h.c.Status(h.now).Dropped[dropTwoLeaders])
}

// A leader told by an ack that a member follows another leader in its term
// stands down and, soon after, campaigns past stickiness at the next term.
func TestLeaderStandsDownOnMeetingASecondLeader(t *testing.T) {
	h := newHarness(t, 4, nil)
	term := h.lead(2, 3)
	h.step(4, MessageHeartbeatAck{ClusterID: testCluster, Term: term, Follower: procID(nodeName(4)), Follows: peerPID(5)})
	assert.False(t, h.c.IsLeader())
	assert.Equal(t, uint64(1), h.c.Status(h.now).LeaderConflicts)
	h.take()
	h.advance(150 * time.Millisecond)
	h.fire(TimerElection)
	rd := h.take()
	reqs := messagesOf[MessageRequestVote](rd)
	require.NotEmpty(t, reqs)
	req := reqs[0].Message.(MessageRequestVote)
	assert.Equal(t, term+1, req.Term)
	assert.True(t, req.Transfer, "the merge campaign passes leader stickiness")
	assert.False(t, req.PreVote)
}
