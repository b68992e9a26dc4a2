package election

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// "Timer firings carry a generation so a stale one is ignored."
func TestStaleTimerIsIgnored(t *testing.T) {
	h := newAgreed(t, 2, nil)
	stale := h.timers[TimerElection]
	h.campaign() // re-arms the election timer
	term := h.c.Term()
	require.NotEqual(t, stale, h.timers[TimerElection])
	h.c.Tick(h.now, stale)
	h.collect()
	assert.Equal(t, term, h.c.Term(), "the stale timeout did not start another election")
	assert.Equal(t, uint64(1), h.c.Status(h.now).StaleTimers)
	h.fire(TimerElection)
	assert.Equal(t, term+1, h.c.Term(), "the current one does")
}

// A follower's heartbeats restart its election timeout without re-arming the
// timer; a firing before the restarted deadline only re-arms for the rest.
func TestHeartbeatsRestartTimeoutWithoutTimerChurn(t *testing.T) {
	h := newAgreed(t, 2, nil)
	h.heartbeat(2, 1, h.stamp(), nil)
	h.take()
	armedAt := h.due[TimerElection]
	for h.now.Before(armedAt) {
		h.advance(h.c.cfg.HeartbeatInterval)
		h.heartbeat(2, 1, h.stamp(), nil)
	}
	assert.Empty(t, h.take().Timers, "no timer operations while heartbeats arrive")
	h.fire(TimerElection)
	rd := h.take()
	assert.Equal(t, RoleFollower, h.c.Role(), "the leader is alive: no election")
	require.Len(t, rd.Timers, 1)
	assert.Positive(t, rd.Timers[0].After)
	assert.LessOrEqual(t, rd.Timers[0].After, h.c.cfg.ElectionTimeoutMax)
	h.fire(TimerElection)
	assert.Equal(t, RoleCandidate, h.c.Role(), "silence for a whole timeout starts one")
}

// "ergo:send_failing_peers" and the evidence it withdraws.
func TestSendFailedMarksPeer(t *testing.T) {
	h := newAgreed(t, 2, nil)
	h.lead(2, 3)
	h.take()
	failure := errors.New("connection refused")
	h.c.SendFailed(h.now, nodeName(3), failure)
	st := h.c.Status(h.now)
	assert.Equal(t, []gen.Atom{nodeName(3)}, st.SendFailingPeers)
	require.Len(t, st.Members, 2)
	assert.Equal(t, failure, st.Members[1].SendError)

	h.advance(h.c.cfg.HeartbeatInterval)
	h.fire(TimerHeartbeat)
	assert.Empty(t, h.c.Status(h.now).SendFailingPeers, "a new send is presumed accepted until reported")
}

func TestStatusReportsTheElection(t *testing.T) {
	h := newAgreed(t, 2, nil)
	h.advance(time.Second)
	term := h.campaign()
	h.grant(2, term)
	h.ack(2, term)
	st := h.c.Status(h.now)
	assert.Equal(t, RoleLeader, st.Role)
	assert.True(t, st.ProtocolLeader)
	assert.Equal(t, term, st.Term)
	assert.Equal(t, procID(nodeName(1)), st.VotedFor)
	assert.Equal(t, h.now, st.TermChangedAt)
	assert.Equal(t, peerPID(1), st.Leader)
	assert.Equal(t, nodeName(1), st.LeaderNode)
	assert.Equal(t, testCluster, st.ClusterID)
	assert.Equal(t, 3, st.ViewSize)
	assert.Equal(t, 2, st.Quorum)
	assert.Equal(t, 3, st.MinClusterSize)
	require.NotNil(t, st.View)
	assert.Equal(t, ViewKey{Term: term, Epoch: 1}, st.View.Stamp.Key)
	assert.Equal(t, st.View.Stamp.Key, st.Committed)
	assert.Empty(t, st.PendingChange)
	assert.Empty(t, st.Below)
	assert.Equal(t, []gen.Atom{nodeName(1), nodeName(2)}, st.VotesGranted)
	assert.Equal(t, 2, st.VotesCount)
	assert.False(t, st.ElectionTimerArmed)
	assert.True(t, st.HeartbeatTimerArmed)
	assert.Equal(t, h.now, st.HeartbeatOutLast)
	assert.Equal(t, uint64(1), st.ElectionsStarted)
	assert.Equal(t, uint64(1), st.ElectionsWon)
	assert.Equal(t, uint64(1), st.LeadershipChanges)
	assert.Equal(t, []gen.ProcessID{procID(nodeName(2)), procID(nodeName(3))}, st.Bootstrap)
	require.Len(t, st.Members, 2)
	assert.Equal(t, MemberStatus{Node: nodeName(2), ProcessID: procID(nodeName(2)), PID: peerPID(2), InView: true, Declared: true,
		Acked: h.stamp()}, st.Members[0])
	assert.Equal(t, MemberStatus{Node: nodeName(3), ProcessID: procID(nodeName(3)), InView: true, Declared: true, Lags: true}, st.Members[1],
		"n3 never acknowledged the re-stamped view: it lags")
	hs := h.c.HardState()
	assert.Equal(t, term, hs.Term)
	assert.Equal(t, st.View, hs.View)
}

func TestNetworkTypesListsEveryMessage(t *testing.T) {
	assert.ElementsMatch(t, []any{
		MessageRequestVote{}, MessageVote{}, MessageHeartbeat{}, MessageHeartbeatAck{}, MessageTimeoutNow{}, MessageMembership{},
	}, NetworkTypes())
}
