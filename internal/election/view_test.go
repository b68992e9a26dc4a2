package election

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// The rules of agreed membership (docs/membership.md). Each test names the
// rule it checks.

// formationGrant answers n1's formation request as peer i: viewless,
// reporting declared, or holding v.
func (h *harness) formationGrant(i int, term uint64, declared []gen.ProcessID, v *View) {
	s := ViewStamp{}
	if v != nil {
		s = v.Stamp
	}
	h.step(i, MessageVote{Header: hdr(i, term, s), Granted: true, Declared: declared, View: v})
}

// Formation: a first view needs grants that number at least MinClusterSize
// and are a majority of every set a voter reported, its own included.
func TestFormationNeedsMinClusterSizeGrantsAndAMajorityOfEveryReport(t *testing.T) {
	t.Run("grants below MinClusterSize do not form", func(t *testing.T) {
		h := newHarness(t, 4, nil)
		term := h.campaign()
		h.formationGrant(2, term, members(5), nil)
		assert.False(t, h.c.IsProtocolLeader(), "2 grants, MinClusterSize 3")
		h.formationGrant(3, term, members(5), nil)
		assert.True(t, h.c.IsProtocolLeader(), "3 grants, a majority of every report")
	})
	t.Run("grants short of a majority of a report do not form", func(t *testing.T) {
		h := newHarness(t, 2, func(c *Config) { c.MinClusterSize = 2 })
		term := h.campaign()
		wide := []gen.ProcessID{procID(nodeName(2)), procID(nodeName(6)), procID(nodeName(7)), procID(nodeName(8))}
		h.formationGrant(2, term, wide, nil)
		assert.False(t, h.c.IsProtocolLeader(), "n2 reported four members and only one of them granted")
		h.formationGrant(3, term, members(3), nil)
		assert.False(t, h.c.IsProtocolLeader(), "still not a majority of n2's report")
	})
	t.Run("a member holding an agreed view refuses a formation and tells its view", func(t *testing.T) {
		h := newAgreed(t, 2, nil)
		h.take()
		h.step(7, MessageRequestVote{Header: hdr(7, 5, ViewStamp{}), Declared: members(3)})
		v := lastVote(t, h.take())
		assert.False(t, v.Granted)
		require.NotNil(t, v.View)
		assert.Equal(t, h.stamp(), v.View.Stamp)
		assert.Equal(t, uint64(1), h.c.Term(), "an outsider's term does not move an agreed member")
	})
}

// Formation: a formation re-proposes the newest view a granting voter holds
// instead of a fresh one — formation is Paxos on the first view, and a view
// some member acknowledged may already be chosen.
func TestFormationReproposesTheNewestReportedView(t *testing.T) {
	h := newHarness(t, 4, nil)
	term := h.campaign()
	older := newView(ViewStamp{Lineage: Lineage{Term: 1, Node: nodeName(4)}, Key: ViewKey{Term: 1, Epoch: 1}}, members(4))
	held := newView(ViewStamp{Lineage: Lineage{Term: 2, Node: nodeName(9)}, Key: ViewKey{Term: 2, Epoch: 1}}, members(3))
	h.formationGrant(2, term, nil, older)
	h.formationGrant(3, term, nil, held)
	require.True(t, h.c.IsProtocolLeader())
	v, _ := h.c.View()
	assert.Equal(t, held.Members, v.Members, "the newest reported view, not a fresh one of all five")
	assert.Equal(t, held.Stamp.Lineage, v.Stamp.Lineage)
	assert.Equal(t, ViewKey{Term: term, Epoch: 1}, v.Stamp.Key, "re-stamped with the winner's term")
	assert.False(t, v.Stamp.Agreed, "not agreed until MinClusterSize members acknowledge it")
}

// Formation: a member that acknowledged a view never proposes a fresh one:
// its own view counts as reported.
func TestMemberHoldingAViewNeverProposesAFreshOne(t *testing.T) {
	proposed := newView(ViewStamp{Lineage: Lineage{Term: 1, Node: nodeName(3)}, Key: ViewKey{Term: 1, Epoch: 1}}, members(3))
	h := newHarnessWith(t, 4, HardState{Term: 1, View: proposed}, nil)
	term := h.campaign()
	h.formationGrant(2, term, members(5), nil)
	h.formationGrant(3, term, members(5), nil)
	require.True(t, h.c.IsProtocolLeader())
	v, _ := h.c.View()
	assert.Equal(t, proposed.Members, v.Members)
	assert.Equal(t, proposed.Stamp.Lineage, v.Stamp.Lineage)
}

// Agreement: a first view counts as agreed, and leadership is visible, only
// once at least MinClusterSize members, a majority of it, acknowledged it.
func TestFirstViewIsAgreedOnMinClusterSizeAcknowledgements(t *testing.T) {
	h := newHarness(t, 2, func(c *Config) { c.MinClusterSize = 3 })
	term := h.campaign()
	h.formationGrant(2, term, members(3), nil)
	h.formationGrant(3, term, members(3), nil)
	require.True(t, h.c.IsProtocolLeader())
	assert.Equal(t, RoleCandidate, h.c.Role(), "won, not yet published")
	h.ack(2, term)
	assert.False(t, h.stamp().Agreed, "two acknowledgements are a majority of three but below MinClusterSize 3")
	assert.Empty(t, effectsIn(h.take(), EffectConfirm))
	h.ack(3, term)
	assert.True(t, h.stamp().Agreed)
	assert.Equal(t, RoleLeader, h.c.Role())
}

// Up-to-date rule: a voter holding a view refuses a candidate whose view is
// older, committed or not — voting uses the latest view it accepted.
func TestVoterRefusesACandidateWithAnOlderView(t *testing.T) {
	h := newAgreed(t, 3, nil)
	h.take()
	newer := agreedView(4, 3, 2)
	h.heartbeat(2, 3, newer.Stamp, newer)
	require.Equal(t, newer.Stamp, h.stamp(), "accepted from the leader, not yet known committed")
	require.NotEqual(t, newer.Stamp.Key, h.c.committed)
	for _, c := range []struct {
		name  string
		key   ViewKey
		grant bool
	}{
		{"an older epoch is refused", ViewKey{Term: 3, Epoch: 1}, false},
		{"an older term is refused whatever its epoch", ViewKey{Term: 2, Epoch: 9}, false},
		{"the same view is granted", ViewKey{Term: 3, Epoch: 2}, true},
		{"a newer view is granted", ViewKey{Term: 4, Epoch: 2}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			term := h.c.Term() + 1
			s := newer.Stamp
			s.Key = c.key
			h.requestVote(3, term, s)
			assert.Equal(t, c.grant, lastVote(t, h.take()).Granted)
		})
	}
}

// Re-stamp: a new leader stamps its view with its own term, so its view
// outranks every view proposed in an earlier term; the comparison key is
// (term, epoch), term first.
func TestNewLeaderRestampsItsView(t *testing.T) {
	h := newHarnessWith(t, 2, HardState{Term: 4, View: agreedView(3, 2, 7)}, nil)
	term := h.campaign()
	h.grant(2, term)
	require.True(t, h.c.IsProtocolLeader())
	assert.Equal(t, ViewKey{Term: term, Epoch: 7}, h.stamp().Key)
	rd := h.take()
	require.NotNil(t, rd.HardState)
	assert.Equal(t, ViewKey{Term: term, Epoch: 7}, rd.HardState.View.Stamp.Key, "persisted before the heartbeats carry it")
	assert.Less(t, ViewKey{Term: 4, Epoch: 99}.Compare(h.stamp().Key), 0)
}

// Persistence: every view a member acknowledges is in the HardState of the
// same Ready as its acknowledgement, which the shell persists before sending.
func TestAcknowledgedViewIsPersistedBeforeTheAck(t *testing.T) {
	h := newAgreed(t, 3, nil)
	h.take()
	v := agreedView(4, 2, 2)
	h.heartbeat(2, 2, v.Stamp, v)
	rd := h.take()
	require.NotNil(t, rd.HardState)
	require.NotNil(t, rd.HardState.View)
	assert.Equal(t, v.Stamp, rd.HardState.View.Stamp)
	acks := messagesOf[MessageHeartbeatAck](rd)
	require.Len(t, acks, 1)
	assert.Equal(t, v.Stamp, acks[0].Message.(MessageHeartbeatAck).View)
}

// Visibility: a new leader is visible to the user only after its re-stamped
// view committed in its term.
func TestNewLeaderIsVisibleOnlyAfterItsRestampedViewCommits(t *testing.T) {
	h := newAgreed(t, 4, nil)
	term := h.campaign()
	h.grant(2, term)
	h.grant(3, term)
	require.True(t, h.c.IsProtocolLeader())
	assert.Equal(t, RoleCandidate, h.c.Role())
	h.ack(2, term)
	assert.Equal(t, RoleCandidate, h.c.Role(), "two of five acknowledged the re-stamp")
	old := h.stamp()
	old.Key.Term = 1
	h.step(3, MessageHeartbeatAck{Header: hdr(3, term, old)})
	assert.Equal(t, RoleCandidate, h.c.Role(), "an acknowledgement of the old stamp does not count")
	h.ack(3, term)
	assert.Equal(t, RoleLeader, h.c.Role())
	assert.Equal(t, FencingToken(h), term)
}

// FencingToken reads the token through the API, for the test above.
func FencingToken(h *harness) uint64 { return h.c.FencingToken() }

// The floor: a leader of a view below MinClusterSize is an ordinary leader
// of that view (it coordinates membership) whose leadership the floor hides.
func TestLeaderBelowTheFloorIsHidden(t *testing.T) {
	h := newHarnessWith(t, 1, HardState{Term: 1, View: agreedView(2, 1, 1)}, nil)
	term := h.campaign()
	h.grant(2, term)
	h.ack(2, term)
	rd := h.take()
	assert.True(t, h.c.IsProtocolLeader())
	assert.Equal(t, RoleUnclustered, h.c.Role())
	assert.Empty(t, effectsIn(rd, EffectConfirm), "HandleConfirmLeader is not asked below the floor")
	assert.Contains(t, h.c.Status(h.now).Below, "below MinClusterSize 3")
}

// Changes: the leader changes the view one member at a time, only once its
// current view committed in its term, and a change commits by a majority of
// the new view.
func TestViewChangesOneAtATimeAfterCommit(t *testing.T) {
	h := newAgreed(t, 2, nil)
	term := h.lead(2, 3)
	for _, i := range []int{4, 5} {
		h.step(i, MessageMembership{Header: hdr(i, term, ViewStamp{}), Add: []gen.ProcessID{procID(nodeName(i))}})
	}
	v, _ := h.c.View()
	require.Equal(t, 4, len(v.Members), "one admission proposed")
	require.Equal(t, uint64(2), v.Stamp.Key.Epoch)
	h.ack(2, term)
	v, _ = h.c.View()
	assert.Equal(t, 4, len(v.Members), "two of four (n1, n2) is not a majority of the new view")
	assert.NotEmpty(t, h.c.Status(h.now).PendingChange)
	h.ack(4, term)
	v, _ = h.c.View()
	assert.Equal(t, 5, len(v.Members), "committed by three of four: the next admission follows")
	assert.Equal(t, uint64(3), v.Stamp.Key.Epoch)
}

// Changes: a leader asked to remove itself never counts itself out: it hands
// over, and asks its successor to remove it.
func TestLeaderAskedToRemoveItselfHandsOverFirst(t *testing.T) {
	h := newAgreed(t, 2, nil)
	term := h.lead(2, 3)
	h.take()
	h.step(2, MessageMembership{Header: hdr(2, term, h.stamp()), Remove: []gen.Atom{nodeName(1)}})
	h.ack(2, term)
	h.ack(3, term)
	h.fire(TimerHeartbeat)
	rd := h.take()
	require.Len(t, messagesOf[MessageTimeoutNow](rd), 1, "handed over")
	assert.Equal(t, RoleFollower, h.c.Role())
	assert.True(t, h.c.view.has(nodeName(1)), "still a member until the successor removes it")
	h.heartbeat(2, term+1, ViewStamp{Lineage: h.stamp().Lineage, Key: ViewKey{Term: term + 1, Epoch: 1}, Agreed: true}, nil)
	h.fire(TimerProbe)
	forwarded := messagesOf[MessageMembership](h.take())
	require.NotEmpty(t, forwarded)
	assert.Equal(t, []gen.Atom{nodeName(1)}, forwarded[len(forwarded)-1].Message.(MessageMembership).Remove)
}

// Fatal: two views with one key and different members cannot both exist; a
// member that meets them stops and says so.
func TestTwoViewsWithOneKeyAreFatal(t *testing.T) {
	h := newAgreed(t, 2, nil)
	h.take()
	other := newView(h.stamp(), members(4)[1:])
	h.c.Step(h.now, peerPID(2), MessageHeartbeat{Header: hdr(2, 1, h.stamp()), View: other})
	rd := h.take()
	require.Len(t, effectsIn(rd, EffectFatal), 1)
	assert.ErrorIs(t, effectsIn(rd, EffectFatal)[0].Err, gen.ErrMalformed)
	assert.Equal(t, RoleUnclustered, h.c.Role())
	h.heartbeat(2, 1, h.stamp(), nil)
	assert.Equal(t, uint64(1), h.c.Status(h.now).Dropped[dropFatal], "a stopped member ignores every input")
}

// Once a view is agreed only its members vote and count: a grant from a
// non-member is not counted, and an outsider's term does not move a member.
func TestOnlyMembersVoteOnceAViewIsAgreed(t *testing.T) {
	h := newAgreed(t, 2, nil)
	term := h.campaign()
	h.grant(7, term)
	assert.False(t, h.c.IsProtocolLeader())
	assert.Equal(t, uint64(1), h.c.Status(h.now).Dropped[dropNotVoter])
	h.step(8, MessageRequestVote{Header: hdr(8, 50, ViewStamp{})})
	assert.Equal(t, term, h.c.Term(), "a viewless outsider's term is not taken")
}

// One member per node per cluster: a second actor of this cluster on a node
// whose member is another process is dropped as misconfigured.
func TestSecondActorOnOneNodeIsDropped(t *testing.T) {
	h := newAgreed(t, 2, nil)
	h.take()
	second := Header{ClusterID: testCluster, Term: 1, From: gen.ProcessID{Name: "other", Node: nodeName(2)}, View: h.stamp()}
	h.c.Step(h.now, gen.PID{Node: nodeName(2), ID: 2000, Creation: 1}, MessageRequestVote{Header: second})
	assert.Equal(t, uint64(1), h.c.Status(h.now).Dropped[dropDuplicate])
	assert.Empty(t, messagesOf[MessageVote](h.take()), "no answer")
}

// Join and Leave go through the leader: a follower forwards them.
func TestFollowerForwardsJoinAndLeaveToTheLeader(t *testing.T) {
	h := newAgreed(t, 2, nil)
	h.heartbeat(2, 1, h.stamp(), nil)
	h.take()
	require.NoError(t, h.c.Join(h.now, procID(nodeName(9))))
	rd := h.take()
	assert.Empty(t, messagesOf[MessageMembership](rd), "not before n9 answered")
	require.Len(t, messagesOf[MessageRequestVote](rd), 1, "n9 is probed")
	h.step(9, MessageVote{Header: hdr(9, 0, ViewStamp{}), PreVote: true})
	h.fire(TimerProbe)
	rd = h.take()
	fw := messagesOf[MessageMembership](rd)
	require.NotEmpty(t, fw)
	assert.Equal(t, peerPID(2), fw[0].To)
	assert.Equal(t, []gen.ProcessID{procID(nodeName(9))}, fw[0].Message.(MessageMembership).Add)

	require.NoError(t, h.c.Leave(h.now, nodeName(3)))
	fw = messagesOf[MessageMembership](h.take())
	require.Len(t, fw, 1)
	assert.Equal(t, []gen.Atom{nodeName(3)}, fw[0].Message.(MessageMembership).Remove)
}

// GhostTTL: only a leader removes a member silent for GhostTTL, so a side
// without a leader never shrinks its view, however long it is cut off.
func TestOnlyALeaderRemovesGhosts(t *testing.T) {
	h := newAgreed(t, 2, nil)
	h.take()
	for range 40 {
		h.advance(time.Second)
		if _, ok := h.timers[TimerElection]; ok {
			h.fire(TimerElection)
		}
	}
	assert.Equal(t, 3, h.c.ViewSize(), "a follower cut off for 40 s keeps its view")

	term := h.lead(2, 3)
	h.advance(h.c.cfg.GhostTTL)
	for range 3 {
		h.ack(2, term)
		h.fire(TimerHeartbeat)
	}
	v, _ := h.c.View()
	assert.Equal(t, []gen.ProcessID{procID(nodeName(1)), procID(nodeName(2))}, v.Members, "the leader removed silent n3")
}

// Durable state: a failed write leaves a member that votes for nobody and
// leads nothing until a write succeeds.
func TestUnwritableStateVotesForNobodyAndRecovers(t *testing.T) {
	h := newAgreed(t, 2, nil)
	h.lead(2, 3)
	h.take()
	h.c.StorageFailed(h.now, errors.New("disk full"))
	rd := h.take()
	assert.Contains(t, rd.Effects, Effect{Kind: EffectBecomeFollower})
	assert.Equal(t, RoleUnclustered, h.c.Role())
	assert.Contains(t, h.c.Status(h.now).Below, "disk full")
	h.requestVote(2, 9, h.stamp())
	assert.Empty(t, messagesOf[MessageVote](h.take()), "no vote while the state cannot be written")
	assert.Equal(t, uint64(1), h.c.Status(h.now).Dropped[dropStorage])
	h.fire(TimerStorage)
	require.NotNil(t, h.take().HardState, "asks for its state to be written again")
	h.c.StorageRecovered(h.now)
	h.collect()
	assert.Equal(t, RoleFollower, h.c.Role())
	h.requestVote(2, 9, h.stamp())
	assert.True(t, lastVote(t, h.take()).Granted)
}

// Terms: a term that cannot be incremented is refused, from durable state
// and from the wire, so the cluster can always elect again.
func TestTermsThatCannotBeIncrementedAreRefused(t *testing.T) {
	_, err := New(testConfig(nodeName(1), 1), peerPID(1), HardState{Term: math.MaxUint64}, epoch)
	require.ErrorIs(t, err, gen.ErrIncorrect)
	h := newAgreed(t, 2, nil)
	h.requestVote(2, math.MaxUint64, h.stamp())
	assert.Equal(t, uint64(1), h.c.Term())
	assert.Equal(t, uint64(1), h.c.Status(h.now).Dropped[dropTermExhausted])
}

// The operator's way out: re-forming the view from the live members, when a
// majority is gone for good.
func TestReformFromTheLiveMembers(t *testing.T) {
	nw := newNetwork(t, 5, 23, func(c *Config) { c.MinClusterSize = 2 })
	l := nw.settle(5 * time.Second)
	var lost []*simNode
	for _, name := range nw.names {
		if sn := nw.nodes[name]; sn != l && len(lost) < 3 {
			lost = append(lost, sn)
		}
	}
	for _, sn := range lost {
		nw.crash(sn, gen.ErrNoConnection)
	}
	nw.run(2 * time.Second)
	require.Empty(t, nw.leaders(), "a majority is gone: no leader")
	var survivor *simNode
	for _, name := range nw.names {
		if sn := nw.nodes[name]; sn.up && sn != l {
			survivor = sn
		}
	}
	var got View
	nw.input(survivor, func(c *Core, now time.Time) {
		var err error
		got, err = c.Reform(now)
		require.NoError(t, err)
	})
	assert.ElementsMatch(t, []gen.ProcessID{procID(l.name), procID(survivor.name)}, got.Members)
	nw.runUntil("the re-formed view leads", 5*time.Second, func() bool { return len(nw.leaders()) == 1 })
	assert.Equal(t, 2, nw.leaders()[0].core.ViewSize())
}

// Merge: two agreed clusters that formed apart (possible only with
// MinClusterSize at or below half the members) become one once they learn
// of each other: members of the lower-ranked lineage ask the other's leader
// to admit them.
func TestTwoAgreedClustersMerge(t *testing.T) {
	nw := newNetwork(t, 4, 29, func(c *Config) {
		c.MinClusterSize = 2
		bootstrapOf([]int{1, 2}, []int{1, 2}, []int{3, 4}, []int{3, 4})(c)
	})
	nw.run(3 * time.Second)
	require.Len(t, nw.leaders(), 2, "two clusters formed apart: %v", nw.roles())
	nw.heal()
	nw.input(nw.node(1), func(c *Core, now time.Time) { require.NoError(t, c.Join(now, procID(nodeName(3)))) })
	nw.input(nw.node(3), func(c *Core, now time.Time) { require.NoError(t, c.Join(now, procID(nodeName(1)))) })
	nw.runUntil("one cluster of four", 30*time.Second, func() bool {
		l := nw.leaders()
		return len(l) == 1 && l[0].core.ViewSize() == 4 && nw.agree(l[0])
	})
}

// Views: a follower whose connection to another follower dropped reaches out
// to it again by name, so it does not report a live member unreachable until
// the next election; once the peer answers, the probing stops.
func TestFollowerReconnectsToAFollowerItLost(t *testing.T) {
	h := newAgreed(t, 2, nil)
	h.heartbeat(2, 1, h.stamp(), nil)
	h.step(3, MessageVote{Header: hdr(3, 1, h.stamp()), PreVote: true})
	h.take()
	require.True(t, h.c.HasPeer(peerPID(3)))

	h.c.PeerDown(h.now, peerPID(3), fmt.Errorf("lost: %w", gen.ErrNoConnection))
	h.take()
	require.False(t, h.c.HasPeer(peerPID(3)))
	h.fire(TimerProbe)
	probes := messagesOf[MessageRequestVote](h.take())
	require.Len(t, probes, 1, "only the lost follower is probed")
	assert.Equal(t, procID(nodeName(3)), probes[0].ToName, "by name: its PID is forgotten")
	assert.True(t, probes[0].Message.(MessageRequestVote).PreVote, "a probe spends no vote")

	h.step(3, MessageVote{Header: hdr(3, 1, h.stamp()), PreVote: true})
	assert.True(t, h.c.HasPeer(peerPID(3)), "reachable again")
	h.fire(TimerProbe)
	assert.Empty(t, messagesOf[MessageRequestVote](h.take()))
	assert.NotContains(t, h.timers, TimerProbe, "nothing left to probe")
}

// A member restarted from durable state whose view no longer names it (it
// was removed and acknowledged that) asks the view's members to be
// admitted: no member need declare it, so nobody else may reach out to it
// (found by the simulator: a leader stopped, removed by its successor, then
// restarted after a Leave storm had withdrawn it from its only declarer).
func TestRestartedOutsideItsViewAsksToBeAdmitted(t *testing.T) {
	view := newView(agreedView(4, 3, 5).Stamp, members(4)[1:])
	h := newHarnessWith(t, 3, HardState{Term: 3, View: view}, func(c *Config) { c.Bootstrap = nil })
	assert.Equal(t, view.Stamp.Lineage, h.c.Status(h.now).Joining, "outside the agreed view it holds")
	assert.Equal(t, RoleUnclustered, h.c.Role())
	h.take()
	h.fire(TimerProbe)
	probes := messagesOf[MessageRequestVote](h.take())
	require.Len(t, probes, 3, "every member of the view is asked")
	h.step(2, MessageVote{Header: hdr(2, 3, view.Stamp), PreVote: true, Leader: procID(nodeName(3))})
	asks := messagesOf[MessageMembership](h.take())
	require.Len(t, asks, 1)
	assert.Equal(t, procID(nodeName(3)), asks[0].ToName, "the leader a refusal named")
	assert.Equal(t, []gen.ProcessID{procID(nodeName(1))}, asks[0].Message.(MessageMembership).Add)
}

// A formation reads its voters' reports in node order, so a node reported
// under two registered names (a second actor of the cluster on one node)
// gets the same name in the proposal on every run: the core's only source
// of randomness is Config.Rand (found by the simulator, whose runs with a
// second actor differed between two runs of one seed).
func TestFormationReadsReportsInNodeOrder(t *testing.T) {
	other := gen.ProcessID{Name: "other", Node: nodeName(4)}
	for range 30 {
		h := newHarness(t, 3, nil)
		term := h.campaign()
		h.formationGrant(3, term, []gen.ProcessID{procID(nodeName(1)), procID(nodeName(3)), other}, nil)
		h.formationGrant(2, term, members(4), nil)
		require.True(t, h.c.IsProtocolLeader())
		v, _ := h.c.View()
		m, ok := v.member(nodeName(4))
		require.True(t, ok)
		require.Equal(t, procID(nodeName(4)), m, "the name n1's own report, first in node order, gives n4")
	}
}

// Merging two agreed clusters: a follower whose leader is alive still
// switches to a cluster of an outranking lineage whose leader heartbeats it
// with a view that includes it, as a leader in its place does. Were it to
// stay and tell that leader to stand down, the other cluster, whose view
// now counts it, could need its vote for every election while it votes
// only in its own lineage (found by the simulator: with MinClusterSize 2 of
// four, a cluster reduced to its leader admitted a member of the other and
// then never elected again).
func TestFollowerSwitchesToAnOutrankingClusterThatAdmitsIt(t *testing.T) {
	h := newAgreed(t, 2, func(c *Config) { c.MinClusterSize = 2 }) // the other cluster, of two, is at the floor
	h.heartbeat(2, 1, h.stamp(), nil)
	require.Equal(t, peerPID(2), h.c.Leader())
	h.take()
	other := newView(ViewStamp{Lineage: Lineage{Term: 1, Node: nodeName(9)}, Key: ViewKey{Term: 1, Epoch: 3}, Agreed: true},
		[]gen.ProcessID{procID(nodeName(1)), procID(nodeName(5))})
	require.True(t, other.Stamp.Lineage.outranks(h.stamp().Lineage))
	h.heartbeat(5, 1, other.Stamp, other)
	acks := messagesOf[MessageHeartbeatAck](h.take())
	require.Len(t, acks, 1)
	assert.Zero(t, acks[0].Message.(MessageHeartbeatAck).Follows, "no second-leader conflict reported")
	assert.Equal(t, other.Stamp, acks[0].Message.(MessageHeartbeatAck).View, "it acknowledges the view it switched to")
	assert.Equal(t, peerPID(5), h.c.Leader())

	t.Run("a second leader of its own lineage is still told to stand down", func(t *testing.T) {
		h := newAgreed(t, 2, nil)
		h.heartbeat(2, 1, h.stamp(), nil)
		h.take()
		h.heartbeat(3, 1, h.stamp(), nil)
		acks := messagesOf[MessageHeartbeatAck](h.take())
		require.Len(t, acks, 1)
		assert.Equal(t, peerPID(2), acks[0].Message.(MessageHeartbeatAck).Follows)
		assert.Equal(t, peerPID(2), h.c.Leader())
	})
}

// Reform and the same-host shortcut: an operator's re-form of a member whose
// host's cell another process holds campaigns at once, like a handover: the
// re-formed view is stamped with the term it campaigns at.
func TestReformCampaignsOnAMemberHeldByItsHostCell(t *testing.T) {
	h := newAgreed(t, 4, withPreVote)
	h.step(2, MessageHeartbeatAck{Header: hdr(2, 1, h.stamp())})
	h.take()
	h.c.SetCampaign(h.now, false)
	h.take()
	term := h.c.Term()
	v, err := h.c.Reform(h.now)
	require.NoError(t, err)
	rd := h.take()
	assert.Equal(t, term+1, h.c.Term(), "campaigned")
	assert.Equal(t, h.c.Term(), v.Stamp.Key.Term)
	require.Len(t, messagesOf[MessageRequestVote](rd), 1, "asked n2, the one member heard lately")
	assert.Equal(t, peerPID(2), messagesOf[MessageRequestVote](rd)[0].To)
}

// Views: a leader sends no heartbeat to a member whose connection dropped
// (its PID is forgotten, and the leader document's heartbeats go only to
// peers that answered): it probes it by name each ElectionTimeoutMax, as
// followers probe each other, and heartbeats it again once it answers.
func TestLeaderProbesAMemberItLostInsteadOfHeartbeatingIt(t *testing.T) {
	nw, l := settledLeader(t, 3, 46, nil)
	f := nw.other(l)
	nw.input(l, func(c *Core, now time.Time) { c.PeerDown(now, f.pid, fmt.Errorf("lost: %w", gen.ErrNoConnection)) })
	require.Contains(t, l.timers, TimerProbe, "the lost member is to be probed")
	heartbeatsTo := func(from int) (to []gen.Atom) {
		for _, out := range l.sent[from:] {
			if _, ok := out.Message.(MessageHeartbeat); ok {
				to = append(to, cmpOr(out.To.Node, out.ToName.Node))
			}
		}
		return to
	}

	sent := len(l.sent)
	nw.fire(l, l.timers[TimerHeartbeat])
	assert.NotContains(t, heartbeatsTo(sent), f.name, "no heartbeat to the lost member")
	assert.NotEmpty(t, heartbeatsTo(sent), "the others are heartbeaten")

	sent = len(l.sent)
	nw.fire(l, l.timers[TimerProbe])
	var probes []Outbound
	for _, out := range l.sent[sent:] {
		if m, ok := out.Message.(MessageRequestVote); ok && m.PreVote && out.ToName.Node == f.name {
			probes = append(probes, out)
		}
	}
	require.Len(t, probes, 1, "a probe by name instead")
	assert.Equal(t, l.core.Term(), probes[0].Message.(MessageRequestVote).Term, "at its own term: it spends no vote")

	nw.flush()
	require.True(t, l.core.HasPeer(f.pid), "its answer makes it reachable again")
	sent = len(l.sent)
	nw.fire(l, l.timers[TimerHeartbeat])
	assert.Contains(t, heartbeatsTo(sent), f.name, "and heartbeaten again")
}

func cmpOr(a, b gen.Atom) gen.Atom {
	if a != "" {
		return a
	}
	return b
}

// Probes that only reach out to peers that stay silent back off: each such
// tick doubles the wait for the next, up to 8 ElectionTimeoutMax. A new
// loss starts again at ElectionTimeoutMax, and so does the next loss once
// every peer answered.
func TestProbesToSilentPeersBackOff(t *testing.T) {
	h := newAgreed(t, 2, nil)
	h.heartbeat(2, 1, h.stamp(), nil)
	h.step(3, MessageVote{Header: hdr(3, 1, h.stamp()), PreVote: true})
	h.take()
	probeWait := func() time.Duration {
		t.Helper()
		var after time.Duration
		for _, op := range h.take().Timers {
			if op.Timer.Kind == TimerProbe && !op.Cancel {
				after = op.After
			}
		}
		require.NotZero(t, after, "the probe timer is armed")
		return after
	}
	emax := h.c.cfg.ElectionTimeoutMax

	h.c.PeerDown(h.now, peerPID(3), fmt.Errorf("lost: %w", gen.ErrNoConnection))
	require.Equal(t, emax, probeWait(), "the first probe at ElectionTimeoutMax")
	for _, want := range []time.Duration{2 * emax, 4 * emax, 8 * emax, 8 * emax} {
		h.fire(TimerProbe)
		require.Equal(t, want, probeWait(), "then doubling while it stays silent")
	}

	h.c.PeerDown(h.now, peerPID(2), fmt.Errorf("lost: %w", gen.ErrNoConnection))
	require.Equal(t, emax, probeWait(), "a new loss starts again")
	h.fire(TimerProbe)
	require.Equal(t, 2*emax, probeWait())

	h.step(3, MessageVote{Header: hdr(3, 1, h.stamp()), PreVote: true})
	h.step(2, MessageVote{Header: hdr(2, 1, h.stamp()), PreVote: true})
	h.fire(TimerProbe)
	h.take()
	assert.NotContains(t, h.timers, TimerProbe, "both answered: nothing left to probe")
	h.c.PeerDown(h.now, peerPID(3), fmt.Errorf("lost: %w", gen.ErrNoConnection))
	require.Equal(t, emax, probeWait(), "and the next loss is probed at the base interval")
}
