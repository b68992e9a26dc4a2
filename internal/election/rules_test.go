package election

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/quorum"
)

// Each test names the sentence of the leader document it checks.

func TestConfigValidate(t *testing.T) {
	base := testConfig("n1@host", 1)
	require.NoError(t, base.Validate())
	cases := map[string]func(*Config){
		"a missing ClusterID is refused":                func(c *Config) { c.ClusterID = "" },
		"a Self without a node is refused":              func(c *Config) { c.Self.Node = "" },
		"a MinClusterSize of zero is refused":           func(c *Config) { c.MinClusterSize = 0 },
		"a max timeout below the min is refused":        func(c *Config) { c.ElectionTimeoutMax = c.ElectionTimeoutMin - 1 },
		"a zero heartbeat interval is refused":          func(c *Config) { c.HeartbeatInterval = 0 },
		"a negative PreferStableFor is refused":         func(c *Config) { c.PreferStableFor = -time.Second },
		"an unknown Prefer kind is refused":             func(c *Config) { c.Prefer.Kind = 9 },
		"PreferFunc without a Less function is refused": func(c *Config) { c.Prefer.Kind = PreferFunc },
		"PreferOldest without a start time is refused":  func(c *Config) { c.Prefer.Kind = PreferOldest },
		"a zero GhostTTL is refused":                    func(c *Config) { c.GhostTTL = 0 },
		"a missing Rand is refused":                     func(c *Config) { c.Rand = nil },
		"an unknown Evidence is refused":                func(c *Config) { c.Evidence = 9 },
		"a Bootstrap entry without a name is refused":   func(c *Config) { c.Bootstrap = []gen.ProcessID{{Node: "x@h"}} },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := base
			mutate(&cfg)
			err := cfg.Validate()
			require.ErrorIs(t, err, gen.ErrIncorrect)
			_, err = New(cfg, peerPID(1), HardState{}, epoch)
			require.ErrorIs(t, err, gen.ErrIncorrect)
		})
	}
	t.Run("a self PID on another node is refused", func(t *testing.T) {
		_, err := New(base, peerPID(2), HardState{}, epoch)
		require.ErrorIs(t, err, gen.ErrIncorrect)
	})
}

// "Every actor is in one of four states."
func TestRolesHaveTheDocumentsNames(t *testing.T) {
	names := map[Role]string{RoleUnclustered: "unclustered", RoleFollower: "follower", RoleCandidate: "candidate", RoleLeader: "leader"}
	for r, want := range names {
		assert.Equal(t, want, r.String())
	}
}

// "A peer counts from the moment it is declared, before it has answered anything."
func TestDeclaredPeerCountsBeforeAnswering(t *testing.T) {
	h := newHarness(t, 2, nil)
	assert.Equal(t, 3, h.c.ViewSize())
	assert.Equal(t, RoleFollower, h.c.Role(), "two declared peers and self reach MinClusterSize 3")
	assert.Empty(t, h.c.Peers(), "no PID is known before an answer")

	t.Run("a join counts at once too", func(t *testing.T) {
		h := newHarness(t, 1, nil)
		require.Equal(t, RoleUnclustered, h.c.Role())
		require.NoError(t, h.c.Join(h.now, procID(nodeName(3))))
		h.collect()
		assert.Equal(t, RoleFollower, h.c.Role())
		assert.Contains(t, h.timers, TimerElection, "a clustered follower waits to campaign")
	})
}

// "a node that sends a valid message is a member"
func TestSenderOfValidMessageBecomesMember(t *testing.T) {
	h := newHarness(t, 2, nil)
	h.take()
	h.heartbeat(7, 1)
	rd := h.take()
	assert.Equal(t, 4, h.c.ViewSize())
	assert.True(t, h.c.HasPeer(peerPID(7)))
	assert.Contains(t, rd.Effects, Effect(PeerJoined{PID: peerPID(7)}))
	assert.Contains(t, rd.Effects, Effect(Monitor{PID: peerPID(7)}))
}

// "a higher term always wins: any node seeing one adopts it and steps back to follower"
func TestHigherTermIsAdoptedAndSendsNodeToFollower(t *testing.T) {
	for _, role := range []string{"leader", "candidate"} {
		t.Run("a "+role+" seeing a higher term follows", func(t *testing.T) {
			h := newHarness(t, 2, nil)
			if role == "leader" {
				h.lead(2)
			} else {
				h.campaign()
			}
			h.take()
			h.heartbeat(3, 9)
			rd := h.take()
			assert.Equal(t, uint64(9), h.c.Term())
			assert.Equal(t, RoleFollower, h.c.Role())
			assert.Equal(t, peerPID(3), h.c.Leader())
			assert.Contains(t, rd.Effects, Effect(BecomeFollower{Leader: peerPID(3)}))
			require.NotNil(t, rd.HardState)
			assert.Equal(t, HardState{Term: 9}, *rd.HardState, "the vote is cleared with the term")
		})
	}
}

// "a voter grants one vote per term"
func TestOneVotePerTerm(t *testing.T) {
	h := newHarness(t, 3, nil)
	h.take()
	h.requestVote(2, 5)
	rd := h.take()
	assert.True(t, lastVote(t, rd).Granted)
	require.NotNil(t, rd.HardState, "the vote is persisted before the reply is sent")
	assert.Equal(t, HardState{Term: 5, VotedFor: procID(nodeName(2))}, *rd.HardState)

	h.requestVote(3, 5)
	assert.False(t, lastVote(t, h.take()).Granted, "a second candidate in the same term is refused")
	h.requestVote(2, 5)
	assert.True(t, lastVote(t, h.take()).Granted, "the same candidate asking again gets the same answer")

	h.requestVote(3, 6)
	assert.True(t, lastVote(t, h.take()).Granted, "the vote is cleared when the term changes")
}

// The vote survives a restart when the shell persists HardState (issue 8, item 5).
func TestPersistedVoteIsNotCastTwice(t *testing.T) {
	cfg := testConfig(nodeName(1), 1)
	cfg.Bootstrap = []gen.ProcessID{procID(nodeName(2)), procID(nodeName(3))}
	c, err := New(cfg, peerPID(1), HardState{Term: 5, VotedFor: procID(nodeName(2))}, epoch)
	require.NoError(t, err)
	c.Ready()
	c.Step(epoch, peerPID(3), MessageRequestVote{ClusterID: testCluster, Term: 5, Candidate: procID(nodeName(3))})
	assert.False(t, lastVote(t, c.Ready()).Granted)
	assert.Equal(t, uint64(5), c.Term())
}

// "To win, a candidate needs a majority of its view, counting itself. Three
// nodes need two votes, four need three, five need three."
func TestQuorumIsMajorityOfViewCountingSelf(t *testing.T) {
	for size := 1; size <= 9; size++ {
		t.Run(fmt.Sprintf("a view of %d needs %d votes", size, quorum.Majority(size)), func(t *testing.T) {
			h := newHarness(t, size-1, func(c *Config) { c.MinClusterSize = 1 })
			require.Equal(t, size, h.c.ViewSize())
			require.Equal(t, quorum.Majority(size), h.c.Quorum())
			term := h.campaign()
			for v := 2; v < quorum.Majority(size)+1; v++ {
				require.Empty(t, effectsIn[Confirm](h.out), "won with %d of %d", v-1, size)
				h.grant(v, term)
			}
			require.Len(t, effectsIn[Confirm](h.out), 1, "a majority of %d wins", quorum.Majority(size))
		})
	}
}

// "a vote reply never grows the quorum of the election it answers"
func TestVoteReplyNeverGrowsQuorum(t *testing.T) {
	h := newHarness(t, 2, nil)
	term := h.campaign()
	h.step(8, MessageVote{ClusterID: testCluster, Term: term, Granted: true, Voter: procID(nodeName(8))})
	assert.Equal(t, 4, h.c.ViewSize(), "the voter becomes a member for later elections")
	st := h.c.Status(h.now)
	assert.Equal(t, 1, st.VotesCount, "its grant does not count in this one")
	assert.Equal(t, uint64(1), st.Dropped[dropNotVoter])
	h.grant(2, term)
	assert.Len(t, effectsIn[Confirm](h.out), 1, "the election is still decided over its own three voters")
}

// "Leave(node) withdraws a peer from the view and from every quorum computed
// afterwards ... A withdrawal is sticky for one election timeout"
func TestLeaveWithdrawsAndIsSticky(t *testing.T) {
	h := newHarness(t, 3, nil)
	h.heartbeat(4, 1)
	h.take()
	require.Equal(t, 4, h.c.ViewSize())
	require.NoError(t, h.c.Leave(h.now, nodeName(4)))
	rd := h.take()
	assert.Equal(t, 3, h.c.ViewSize())
	assert.Equal(t, 2, h.c.Quorum())
	assert.Contains(t, rd.Effects, Effect(PeerLeft{PID: peerPID(4)}))
	assert.Contains(t, rd.Effects, Effect(Demonitor{PID: peerPID(4)}))
	assert.Equal(t, gen.PID{}, h.c.Leader(), "a withdrawn leader is no longer followed")

	h.advance(h.c.cfg.ElectionTimeoutMax - time.Millisecond)
	h.heartbeat(4, 1)
	assert.Equal(t, 3, h.c.ViewSize(), "traffic in flight cannot re-admit it")
	assert.Equal(t, uint64(1), h.c.Status(h.now).Dropped[dropWithdrawn])

	h.advance(time.Millisecond)
	h.heartbeat(4, 1)
	assert.Equal(t, 4, h.c.ViewSize(), "after one election timeout it may return")

	t.Run("leaving does not shrink a running election, only those computed afterwards", func(t *testing.T) {
		h := newHarness(t, 3, nil) // view 4, quorum 3
		term := h.campaign()
		h.grant(2, term)
		require.Empty(t, effectsIn[Confirm](h.out))
		require.NoError(t, h.c.Leave(h.now, nodeName(4)))
		assert.Empty(t, effectsIn[Confirm](h.take()), "2 of the 4 the election started with is no majority")
		h.fire(TimerElection)
		next := h.c.Term()
		require.Greater(t, next, term)
		h.grant(2, next)
		assert.Len(t, effectsIn[Confirm](h.take()), 1, "the next election counts the view of 3: 2 of 3 wins")
	})
	t.Run("a member declared during an election votes in it and raises its quorum", func(t *testing.T) {
		h := newHarness(t, 2, nil) // view 3, quorum 2
		term := h.campaign()
		require.NoError(t, h.c.Join(h.now, procID(nodeName(4))))
		require.NoError(t, h.c.Join(h.now, procID(nodeName(5))))
		h.grant(2, term)
		assert.Empty(t, effectsIn[Confirm](h.take()), "2 of 5 is no majority")
		h.grant(4, term)
		assert.Len(t, effectsIn[Confirm](h.take()), 1, "3 of 5 is")
	})
	t.Run("self and empty names are refused", func(t *testing.T) {
		require.ErrorIs(t, h.c.Leave(h.now, nodeName(1)), gen.ErrIncorrect)
		require.ErrorIs(t, h.c.Leave(h.now, ""), gen.ErrIncorrect)
	})
}

// "A death reported with an actual reason - the remote process terminated -
// removes the member immediately."
func TestPeerDownWithRealReasonRemovesAtOnce(t *testing.T) {
	h := newHarness(t, 2, func(c *Config) { c.MinClusterSize = 2 })
	h.heartbeat(2, 1)
	h.take()
	h.c.PeerDown(h.now, peerPID(2), fmt.Errorf("exit: %w", gen.TerminateReasonPanic))
	rd := h.take()
	assert.Equal(t, 2, h.c.ViewSize())
	assert.False(t, h.c.HasPeer(peerPID(2)))
	assert.Contains(t, rd.Effects, Effect(PeerLeft{PID: peerPID(2)}))
	assert.Contains(t, rd.Effects, Effect(BecomeFollower{}), "its leadership is no longer recognised")
}

// "A drop reported as gen.ErrNoConnection does not: the member stays in the
// view, with only the knowledge of how to reach it forgotten, and is dropped
// after GhostTTL if it has not come back."
func TestPeerDownWithNoConnectionKeepsGhostUntilTTL(t *testing.T) {
	h := newHarness(t, 2, nil)
	h.heartbeat(2, 1)
	h.step(3, MessageHeartbeatAck{ClusterID: testCluster, Term: 1, Follower: procID(nodeName(3))})
	h.take()
	h.c.PeerDown(h.now, peerPID(3), fmt.Errorf("link: %w", gen.ErrNoConnection))
	rd := h.take()
	assert.Equal(t, 3, h.c.ViewSize(), "the denominator does not shrink")
	assert.False(t, h.c.HasPeer(peerPID(3)), "its PID is forgotten")
	assert.Contains(t, rd.Effects, Effect(PeerLeft{PID: peerPID(3)}))
	st := h.c.Status(h.now)
	require.Len(t, st.Members, 2)
	assert.Equal(t, h.now, st.Members[1].UnreachableSince)

	t.Run("it is dropped after GhostTTL", func(t *testing.T) {
		h.advance(h.c.cfg.GhostTTL)
		h.fire(TimerGhost)
		assert.Equal(t, 2, h.c.ViewSize())
		assert.Equal(t, RoleUnclustered, h.c.Role(), "the view fell below MinClusterSize")
	})
	t.Run("it stays when it comes back in time", func(t *testing.T) {
		h := newHarness(t, 2, nil)
		h.heartbeat(3, 1)
		h.c.PeerDown(h.now, peerPID(3), gen.ErrNoConnection)
		h.advance(time.Second)
		back := gen.PID{Node: nodeName(3), ID: 5, Creation: 2}
		h.c.Step(h.now, back, MessageHeartbeat{ClusterID: testCluster, Term: 1, Leader: procID(nodeName(3))})
		h.collect()
		assert.True(t, h.c.HasPeer(back))
		assert.NotContains(t, h.timers, TimerGhost, "no ghost left to expire")
		assert.Equal(t, 3, h.c.ViewSize())
	})
}

// "Heartbeats go only to peers that have answered ... Vote requests do go to
// everyone declared"
func TestHeartbeatsOnlyToAnsweredVotesToAllDeclared(t *testing.T) {
	h := newHarness(t, 4, nil)
	h.take()
	term := h.campaign()
	rd := h.take()
	assert.Len(t, messagesOf[MessageRequestVote](rd), 4, "every declared peer is asked")
	for _, o := range messagesOf[MessageRequestVote](rd) {
		assert.Equal(t, gen.PID{}, o.To, "unanswered peers are addressed by name")
	}
	h.grant(2, term)
	h.grant(3, term)
	h.c.ConfirmResult(h.now, term, true, nil)
	rd = h.take()
	hbs := messagesOf[MessageHeartbeat](rd)
	require.Len(t, hbs, 2)
	assert.ElementsMatch(t, []gen.PID{peerPID(2), peerPID(3)}, []gen.PID{hbs[0].To, hbs[1].To})
}

// "A rejected vote carries the voter's term and cluster so the candidate learns it."
func TestRejectedVoteCarriesVotersTerm(t *testing.T) {
	h := newHarness(t, 2, nil)
	h.heartbeat(2, 7)
	h.take()
	h.requestVote(3, 4)
	v := lastVote(t, h.take())
	assert.False(t, v.Granted)
	assert.Equal(t, uint64(7), v.Term)
	assert.Equal(t, testCluster, v.ClusterID)
	assert.Equal(t, uint64(1), h.c.Status(h.now).Dropped[dropStaleTerm])

	t.Run("and the candidate adopts it", func(t *testing.T) {
		h := newHarness(t, 2, nil)
		h.campaign()
		h.step(2, MessageVote{ClusterID: testCluster, Term: 7, Voter: procID(nodeName(2))})
		assert.Equal(t, uint64(7), h.c.Term())
		assert.Equal(t, RoleFollower, h.c.Role())
	})
}

// "a candidate whose election neither wins nor loses re-arms its timer and
// campaigns again" (a cluster never stops electing)
func TestUndecidedElectionCampaignsAgain(t *testing.T) {
	h := newHarness(t, 4, nil)
	first := h.campaign()
	h.grant(2, first)
	h.step(3, MessageVote{ClusterID: testCluster, Term: first, Voter: procID(nodeName(3))})
	require.Equal(t, RoleCandidate, h.c.Role(), "2 grants and 1 refusal of 5 decide nothing")
	require.Contains(t, h.timers, TimerElection)
	second := h.campaign()
	assert.Equal(t, first+1, second)
	assert.Equal(t, uint64(2), h.c.Status(h.now).Rounds)

	t.Run("a lost election follows and still retries", func(t *testing.T) {
		h := newHarness(t, 2, nil)
		term := h.campaign()
		h.step(2, MessageVote{ClusterID: testCluster, Term: term, Voter: procID(nodeName(2))})
		h.step(3, MessageVote{ClusterID: testCluster, Term: term, Voter: procID(nodeName(3))})
		assert.Equal(t, RoleFollower, h.c.Role())
		assert.Contains(t, effectsIn[BecomeFollower](h.take()), BecomeFollower{}, "a candidate that stood down arrives in HandleBecomeFollower")
		assert.Contains(t, h.timers, TimerElection)
	})
}

// "Join(peer) declares a peer and opens negotiation" (without spending anyone's vote)
func TestJoinNegotiatesWithoutSpendingVotes(t *testing.T) {
	nw := newNetwork(t, 3, 1, nil)
	l := nw.settle(5 * time.Second)
	term := l.core.Term()

	cfg := testConfig(nodeName(4), 44)
	joiner := nw.add(cfg, HardState{})
	require.NoError(t, joiner.core.Join(nw.now, procID(l.name)))
	nw.process(joiner)
	nw.run(2 * l.core.cfg.HeartbeatInterval)
	for _, name := range nw.names[:3] {
		sn := nw.nodes[name]
		assert.Equal(t, term, sn.core.Term(), "nobody's term moved")
		assert.NotEqual(t, cfg.Self, sn.hs.VotedFor, "nobody voted for the joiner")
	}
	assert.Equal(t, 4, l.core.ViewSize(), "the leader learned the joiner")
	assert.Equal(t, l.pid, joiner.core.Leader(), "the joiner follows after the leader's heartbeat")

	t.Run("joining self or an empty name is refused", func(t *testing.T) {
		require.ErrorIs(t, joiner.core.Join(nw.now, procID(nodeName(4))), gen.ErrIncorrect)
		require.ErrorIs(t, joiner.core.Join(nw.now, gen.ProcessID{Node: "x@h"}), gen.ErrIncorrect)
	})
	t.Run("joining twice is idempotent", func(t *testing.T) {
		before := len(joiner.sent)
		require.NoError(t, joiner.core.Join(nw.now, procID(l.name)))
		nw.process(joiner)
		assert.Len(t, joiner.sent, before)
	})
}

// "On each heartbeat tick it requires evidence of reaching a quorum - an
// accepted send or any inbound protocol message within one election timeout."
func TestLeaderWithoutQuorumEvidenceStepsDown(t *testing.T) {
	t.Run("with the document's contact rule, failed sends are no evidence", func(t *testing.T) {
		nw := newNetwork(t, 3, 2, nil)
		l := nw.settle(5 * time.Second)
		for _, name := range nw.names {
			if name != l.name {
				nw.nodes[name].up = false // sends to them now fail
			}
		}
		start := nw.now
		for l.core.IsLeader() && nw.now.Sub(start) < time.Second {
			nw.run(10 * time.Millisecond)
		}
		assert.False(t, l.core.IsLeader())
		assert.LessOrEqual(t, nw.now.Sub(start), l.core.cfg.ElectionTimeoutMin+2*l.core.cfg.HeartbeatInterval)
		assert.Contains(t, effectsOf[BecomeFollower](l), BecomeFollower{})
	})
	t.Run("with the contact rule, accepted sends keep an isolated leader", func(t *testing.T) {
		nw := newNetwork(t, 3, 2, nil)
		l := nw.settle(5 * time.Second)
		nw.isolate(l)
		nw.run(time.Second)
		assert.True(t, l.core.IsLeader(), "the document's rule trusts sends the runtime accepted")
	})
	t.Run("with EvidenceReplies, silence is no evidence", func(t *testing.T) {
		nw := newNetwork(t, 3, 2, func(c *Config) { c.Evidence = EvidenceReplies })
		l := nw.settle(5 * time.Second)
		nw.isolate(l)
		start := nw.now
		for l.core.IsLeader() && nw.now.Sub(start) < time.Second {
			nw.run(10 * time.Millisecond)
		}
		assert.False(t, l.core.IsLeader())
		assert.LessOrEqual(t, nw.now.Sub(start), l.core.cfg.ElectionTimeoutMin+2*l.core.cfg.HeartbeatInterval)
		assert.Equal(t, uint64(1), l.core.Status(nw.now).QuorumLostStepDowns)
	})
}

// "HandleConfirmLeader is consulted after this node has won the election and
// before leadership is published. Returning false, or an error, withholds it:
// HandleBecomeLeader does not run and the node re-campaigns after a backoff
// that grows with consecutive denials."
func TestConfirmLeaderGatesLeadership(t *testing.T) {
	h := newHarness(t, 2, nil)
	term := h.campaign()
	h.grant(2, term)
	rd := h.take()
	assert.Equal(t, []Confirm{{Term: term}}, effectsIn[Confirm](rd))
	assert.Empty(t, effectsIn[BecomeLeader](rd), "not published before confirmation")
	assert.False(t, h.c.IsLeader())
	assert.Equal(t, uint64(0), h.c.FencingToken())

	var backoffs []time.Duration
	deny := func(err error) {
		h.c.ConfirmResult(h.now, h.c.Term(), false, err)
		rd := h.take()
		assert.Empty(t, effectsIn[BecomeLeader](rd))
		assert.Equal(t, RoleFollower, h.c.Role())
		var after time.Duration
		for _, op := range rd.Timers {
			if op.Timer.Kind == TimerElection && !op.Cancel {
				after = op.After
			}
		}
		backoffs = append(backoffs, after)
	}
	deny(nil)
	for i := 0; i < 3; i++ {
		term = h.campaign()
		h.grant(2, term)
		if i == 0 {
			deny(errors.New("lease: timeout")) // an error counts as a denial, not consent
			assert.EqualError(t, h.c.Status(h.now).LastDenyError, "lease: timeout")
			continue
		}
		deny(nil)
	}
	require.Len(t, backoffs, 4)
	st := h.c.Status(h.now)
	assert.Equal(t, uint64(4), st.ConfirmDenied)
	assert.Equal(t, h.now, st.LastDeniedAt)
	minT := h.c.cfg.ElectionTimeoutMin
	for i, b := range backoffs {
		assert.GreaterOrEqual(t, b, minT<<i+minT, "denial %d", i+1)
	}
	assert.Greater(t, backoffs[3], backoffs[0]+h.c.cfg.ElectionTimeoutMax, "the backoff grows")

	t.Run("a confirmed win publishes and resets the backoff", func(t *testing.T) {
		term := h.campaign()
		h.grant(2, term)
		h.c.ConfirmResult(h.now, term, true, nil)
		rd := h.take()
		assert.Equal(t, []BecomeLeader{{Term: term}}, effectsIn[BecomeLeader](rd))
		assert.Equal(t, term, h.c.FencingToken())
		h.heartbeat(3, term+1)
		term = h.campaign()
		h.grant(2, term)
		deny(nil)
		assert.Less(t, backoffs[4], minT+h.c.cfg.ElectionTimeoutMax+time.Millisecond, "first denial again")
	})
	t.Run("an answer for an old election is ignored", func(t *testing.T) {
		h.c.ConfirmResult(h.now, 1, true, nil)
		h.collect()
		assert.False(t, h.c.IsLeader())
		assert.Positive(t, h.c.Status(h.now).Dropped[dropStaleConfirm])
	})
}

// "HandleBecomeLeader ... Returning an error rolls the transition back: the
// actor steps down again"
func TestBecomeLeaderErrorRollsBack(t *testing.T) {
	h := newHarness(t, 2, nil)
	h.lead(2)
	h.take()
	h.c.BecomeLeaderFailed(h.now, errors.New("cannot honour"))
	rd := h.take()
	assert.False(t, h.c.IsLeader())
	assert.Equal(t, RoleFollower, h.c.Role())
	assert.Equal(t, uint64(0), h.c.FencingToken())
	assert.Contains(t, rd.Effects, Effect(RoleChanged{From: RoleLeader, To: RoleFollower, Term: h.c.Term()}))
	assert.Contains(t, h.timers, TimerElection)
	assert.NotContains(t, h.timers, TimerHeartbeat)
	assert.EqualError(t, h.c.Status(h.now).LastBecomeLeaderError, "cannot honour")
}

// "HandleBecomeFollower ... fires on every transition into follower - not only
// when a leader is demoted. A follower whose leader disappeared and a candidate
// that stood down both arrive here, with an empty PID when no leader is known."
func TestBecomeFollowerOnEveryTransition(t *testing.T) {
	h := newHarness(t, 2, nil)
	h.heartbeat(2, 1)
	assert.Equal(t, []BecomeFollower{{Leader: peerPID(2)}}, effectsIn[BecomeFollower](h.take()), "a follower learning its leader")
	h.advance(time.Second)
	h.fire(TimerElection)
	assert.Equal(t, []BecomeFollower{{}}, effectsIn[BecomeFollower](h.take()), "a follower whose leader disappeared")
	h.heartbeat(3, h.c.Term())
	assert.Equal(t, []BecomeFollower{{Leader: peerPID(3)}}, effectsIn[BecomeFollower](h.take()), "a candidate that met the leader")
	h.lead(2)
	h.take()
	h.heartbeat(3, h.c.Term()+1)
	assert.Equal(t, []BecomeFollower{{Leader: peerPID(3)}}, effectsIn[BecomeFollower](h.take()), "a demoted leader")
}

// "They are informational; membership is already applied by the time they run."
func TestPeerCallbacksAfterMembershipApplied(t *testing.T) {
	h := newHarness(t, 2, nil)
	h.take()
	h.heartbeat(2, 1)
	rd := h.take()
	joined := effectsIn[PeerJoined](rd)
	require.Len(t, joined, 1)
	assert.True(t, h.c.HasPeer(joined[0].PID))
	assert.Contains(t, h.c.Peers(), joined[0].PID)
	require.NoError(t, h.c.Leave(h.now, nodeName(2)))
	left := effectsIn[PeerLeft](h.take())
	require.Len(t, left, 1)
	assert.False(t, h.c.HasPeer(left[0].PID))
	assert.Equal(t, 0, h.c.PeerCount())
}

// "Messages carrying a different one are dropped and counted" and the other
// reasons a message is discarded.
func TestDroppedMessagesAreCountedByReason(t *testing.T) {
	h := newHarness(t, 2, nil)
	h.heartbeat(2, 5)
	h.step(3, MessageHeartbeat{ClusterID: "other", Term: 9, Leader: procID(nodeName(3))})
	h.step(3, "not a protocol message")
	h.heartbeat(3, 2)
	h.step(3, MessageHeartbeat{ClusterID: testCluster, Term: 9, Leader: procID(nodeName(4))})
	h.c.Step(h.now, peerPID(1), MessageHeartbeat{ClusterID: testCluster, Term: 9, Leader: procID(nodeName(1))})
	st := h.c.Status(h.now)
	assert.Equal(t, map[string]uint64{
		dropClusterID: 1, dropUnknownMessage: 1, dropStaleTerm: 1, dropMalformed: 1, dropSelf: 1,
	}, st.Dropped)
	assert.Equal(t, uint64(5), h.c.Term(), "none of them changed the term")
	assert.Equal(t, peerPID(2), h.c.Leader())
}

// "No leader below the floor. A group smaller than MinClusterSize reports
// unclustered and elects nobody."
func TestBelowMinClusterSizeIsUnclustered(t *testing.T) {
	h := newHarness(t, 1, nil)
	assert.Equal(t, RoleUnclustered, h.c.Role())
	assert.NotContains(t, h.timers, TimerElection, "an unclustered node does not wait to campaign")
	assert.False(t, h.c.Status(h.now).ElectionTimerArmed)

	t.Run("a leader whose view shrinks below it steps down", func(t *testing.T) {
		h := newHarness(t, 2, nil)
		h.lead(2)
		h.take()
		require.NoError(t, h.c.Leave(h.now, nodeName(3)))
		rd := h.take()
		assert.Equal(t, RoleUnclustered, h.c.Role())
		assert.Equal(t, uint64(0), h.c.FencingToken())
		assert.Contains(t, rd.Effects, Effect(BecomeFollower{}), "leadership ends in HandleBecomeFollower")
		assert.NotContains(t, h.timers, TimerHeartbeat)
	})
	t.Run("a lone node elects itself only with MinClusterSize 1", func(t *testing.T) {
		h := newHarness(t, 0, func(c *Config) { c.MinClusterSize = 1 })
		h.campaign()
		require.Len(t, effectsIn[Confirm](h.out), 1)
	})
}

// Even-sized views elect exactly one leader, and an even split elects none.
func TestEvenSizedViews(t *testing.T) {
	for _, n := range []int{2, 4, 6} {
		t.Run(fmt.Sprintf("a view of %d elects one leader", n), func(t *testing.T) {
			nw := newNetwork(t, n, uint64(n), func(c *Config) { c.MinClusterSize = 2 })
			l := nw.settle(5 * time.Second)
			assert.Len(t, nw.leaders(), 1)
			assert.Equal(t, n, l.core.ViewSize())
		})
		t.Run(fmt.Sprintf("a view of %d split in halves elects nobody", n), func(t *testing.T) {
			nw := newNetwork(t, n, uint64(n)+10, func(c *Config) { c.MinClusterSize = 2; c.Evidence = EvidenceReplies })
			nw.settle(5 * time.Second)
			var half []*simNode
			for i := 1; i <= n/2; i++ {
				half = append(half, nw.node(i))
			}
			nw.isolate(half...)
			nw.run(3 * time.Second)
			assert.Empty(t, nw.leaders(), "neither half is a majority of %d", n)
		})
	}
}

// After the leader goes down, the followers that voted for it at term T still
// elect a new one: the new election is at a later term, where their vote is free.
func TestVoteAfterLeaderDownInSameTerm(t *testing.T) {
	for _, reason := range []error{gen.ErrNoConnection, errCrashed} {
		t.Run(fmt.Sprintf("a leader down with %q is replaced at a later term", reason), func(t *testing.T) {
			voteAfterLeaderDown(t, reason)
		})
	}
}

func voteAfterLeaderDown(t *testing.T, reason error) {
	// MinClusterSize 2: a real death shrinks the view of three to two.
	nw := newNetwork(t, 3, 3, func(c *Config) { c.MinClusterSize = 2 })
	l := nw.settle(5 * time.Second)
	term := l.core.Term()
	for _, name := range nw.names {
		if sn := nw.nodes[name]; sn != l {
			assert.Equal(t, term, sn.hs.Term)
		}
	}
	nw.crash(l, reason)
	// A stale request of the old term is refused by the remaining voters.
	other := nw.other(l)
	voted := other.hs.VotedFor
	other.core.Step(nw.now, gen.PID{Node: "n9@host", ID: 1, Creation: 1},
		MessageRequestVote{ClusterID: testCluster, Term: term, Candidate: procID("n9@host")})
	if voted != (gen.ProcessID{}) {
		assert.False(t, lastVote(t, other.core.Ready()).Granted, "one vote per term even after the leader died")
	}
	nl := nw.settle(5 * time.Second)
	assert.NotEqual(t, l.name, nl.name)
	assert.Greater(t, nl.core.Term(), term)
}

// "Take a five-node cluster ... The network splits into {A,B,C} and {D,E}."
func TestPartitionAndHeal(t *testing.T) {
	nw := newNetwork(t, 5, 5, func(c *Config) { c.Evidence = EvidenceReplies })
	l := nw.settle(5 * time.Second)
	var minority, majority []*simNode
	for _, name := range nw.names {
		if sn := nw.nodes[name]; sn != l && len(minority) < 2 {
			minority = append(minority, sn)
		} else {
			majority = append(majority, sn)
		}
	}
	nw.isolate(minority...)
	term := l.core.Term()
	nw.run(3 * time.Second)
	assert.True(t, l.core.IsLeader(), "the majority side keeps its leader")
	assert.Equal(t, term, l.core.Term())
	for _, sn := range majority {
		assert.Equal(t, l.pid, sn.core.Leader(), "%s keeps following the leader", sn.name)
	}
	for _, sn := range minority {
		assert.False(t, sn.core.IsLeader(), "the minority side elects none")
		assert.Equal(t, 5, sn.core.ViewSize(), "a lost connection does not shrink the view")
	}
	nw.heal()
	final := nw.settle(5 * time.Second)
	for _, name := range nw.names {
		assert.Equal(t, final.pid, nw.nodes[name].core.Leader())
	}
}

// FencingToken is the leadership term: strictly increasing across leaders.
func TestFencingTokensIncreaseAcrossLeaders(t *testing.T) {
	nw := newNetwork(t, 5, 6, nil)
	var last uint64
	for i := 0; i < 4; i++ {
		l := nw.settle(10 * time.Second)
		tok := l.core.FencingToken()
		assert.Greater(t, tok, last)
		last = tok
		nw.crash(l, errCrashed)
		if i == 1 {
			// Bring back a fresh life of the first crashed node, keeping the view large.
			cfg := testConfig(l.name, 77)
			for _, n := range nw.names {
				cfg.Bootstrap = append(cfg.Bootstrap, procID(n))
			}
			cfg.MinClusterSize = 1
			nw.add(cfg, l.hs)
		}
	}
}

// "... and is dropped after GhostTTL if it has not come back." A member can
// only come back if someone reaches out: unreachable members are probed by
// name every ElectionTimeoutMax, so a healed link re-admits a member that
// would never have spoken first (followers do not talk to each other).
func TestUnreachableMembersAreProbedUntilTheyComeBack(t *testing.T) {
	h := newHarness(t, 2, nil)
	h.heartbeat(2, 1)
	h.step(3, MessageHeartbeatAck{ClusterID: testCluster, Term: 1, Follower: procID(nodeName(3))})
	h.take()
	h.c.PeerDown(h.now, peerPID(3), gen.ErrNoConnection)
	h.take()

	h.fire(TimerProbe)
	probes := messagesOf[MessageRequestVote](h.take())
	require.Len(t, probes, 1)
	assert.Equal(t, procID(nodeName(3)), probes[0].ToName, "the probe goes by name: its PID is forgotten")
	assert.True(t, probes[0].Message.(MessageRequestVote).PreVote, "a probe spends nobody's vote")

	h.fire(TimerProbe) // still unreachable: probed again
	require.Len(t, messagesOf[MessageRequestVote](h.take()), 1)

	h.step(3, MessageVote{ClusterID: testCluster, Term: 1, PreVote: true, Voter: procID(nodeName(3))})
	st := h.c.Status(h.now)
	for _, m := range st.Members {
		assert.True(t, m.UnreachableSince.IsZero(), "%s came back", m.Node)
	}
	assert.False(t, st.ProbeTimerArmed, "nothing left to probe")
	h.advance(h.c.cfg.GhostTTL + time.Second)
	assert.Equal(t, 3, h.c.ViewSize(), "a member that came back is not dropped")
}

// A discovery loop re-running Join reaches out to a member it already
// declared if that member is unreachable.
func TestJoiningAnUnreachableMemberAgainProbesIt(t *testing.T) {
	h := newHarness(t, 2, nil)
	h.step(3, MessageHeartbeatAck{ClusterID: testCluster, Term: 0, Follower: procID(nodeName(3))})
	h.c.PeerDown(h.now, peerPID(3), gen.ErrNoConnection)
	h.take()
	require.NoError(t, h.c.Join(h.now, procID(nodeName(3))))
	probes := messagesOf[MessageRequestVote](h.take())
	require.Len(t, probes, 1)
	assert.Equal(t, procID(nodeName(3)), probes[0].ToName)
}

// A member that lost track of the cluster while cut off (its view shrank
// after GhostTTL, and the leader's did too) is pointed at the leader by the
// refusal it gets, reaches out to it, and is admitted again.
func TestRefusedVoteNamesTheLeaderSoALostMemberCanRejoin(t *testing.T) {
	t.Run("a refusal names the leader the voter follows", func(t *testing.T) {
		h := newHarness(t, 2, func(c *Config) { c.PreVote = true })
		h.heartbeat(2, 1)
		h.take()
		h.step(4, MessageRequestVote{ClusterID: testCluster, Term: 2, PreVote: true, Candidate: procID(nodeName(4))})
		v := lastVote(t, h.take())
		assert.False(t, v.Granted, "a live leader is heard")
		assert.Equal(t, procID(nodeName(2)), v.Leader)
	})
	t.Run("a grant names nobody", func(t *testing.T) {
		h := newHarness(t, 2, nil)
		h.requestVote(2, 1)
		v := lastVote(t, h.take())
		require.True(t, v.Granted)
		assert.Equal(t, gen.ProcessID{}, v.Leader)
	})
	t.Run("a member told of a leader outside its view reaches out to it by name", func(t *testing.T) {
		h := newHarness(t, 2, nil)
		h.take()
		h.step(2, MessageVote{ClusterID: testCluster, Term: 1, PreVote: true, Voter: procID(nodeName(2)), Leader: procID(nodeName(7))})
		probes := messagesOf[MessageRequestVote](h.take())
		require.Len(t, probes, 1)
		assert.Equal(t, procID(nodeName(7)), probes[0].ToName)
		assert.True(t, probes[0].Message.(MessageRequestVote).PreVote, "the probe spends nobody's vote")
		assert.Equal(t, 3, h.c.ViewSize(), "the leader joins the view only once it answers")
	})
}

// The same-host shortcut: a member that does not hold the host's cell votes
// and follows but never starts an election; allowed again, it campaigns soon.
func TestSetCampaignGatesElectionsOnly(t *testing.T) {
	h := newHarness(t, 2, nil)
	h.take()
	h.c.SetCampaign(h.now, false)
	h.fire(TimerElection)
	assert.Equal(t, RoleFollower, h.c.Role(), "no election while another member holds the cell")
	assert.Empty(t, messagesOf[MessageRequestVote](h.take()))
	assert.True(t, h.c.Status(h.now).ElectionTimerArmed, "it keeps waiting, so it can take over later")
	assert.True(t, h.c.Status(h.now).CampaignHeld)

	h.requestVote(2, 1)
	assert.True(t, lastVote(t, h.take()).Granted, "it still votes")

	h.advance(time.Second)
	h.c.SetCampaign(h.now, true)
	h.collect()
	assert.Less(t, h.due[TimerElection].Sub(h.now), h.c.cfg.HeartbeatInterval, "it campaigns within a heartbeat interval, not a fresh election timeout")
	h.fire(TimerElection)
	assert.Equal(t, RoleCandidate, h.c.Role(), "allowed again, it campaigns")
}

// Issue 8: a leader that re-consults HandleConfirmLeader mid-term and is
// denied (its external lease lost) stops leading and backs off.
func TestReconfirmDenialEndsLeadership(t *testing.T) {
	h := newHarness(t, 2, nil)
	term := h.lead(2)
	h.take()
	h.c.Reconfirm(h.now, true, nil)
	assert.True(t, h.c.IsLeader(), "a confirmed leader stays")
	h.c.Reconfirm(h.now, false, errors.New("lease lost"))
	rd := h.take()
	assert.False(t, h.c.IsLeader())
	assert.Equal(t, term, h.c.Term(), "stepping down does not move the term")
	assert.Contains(t, rd.Effects, Effect(BecomeFollower{}))
	st := h.c.Status(h.now)
	assert.Equal(t, uint64(1), st.ConfirmDenied)
	assert.EqualError(t, st.LastDenyError, "lease lost")
	assert.GreaterOrEqual(t, h.due[TimerElection].Sub(h.now), h.c.cfg.ElectionTimeoutMax, "it backs off before campaigning again")
	h.c.Reconfirm(h.now, false, nil)
	assert.Equal(t, uint64(1), h.c.Status(h.now).ConfirmDenied, "a stale answer is ignored")
}

// A member declared during an election is asked the election's own question,
// so its answer counts in the tally it was added to.
func TestJoinDuringAnElectionAsksTheElectionsQuestion(t *testing.T) {
	t.Run("during a real election", func(t *testing.T) {
		h := newHarness(t, 2, nil)
		term := h.campaign()
		h.take()
		require.NoError(t, h.c.Join(h.now, procID(nodeName(4))))
		reqs := messagesOf[MessageRequestVote](h.take())
		require.Len(t, reqs, 1)
		req := reqs[0].Message.(MessageRequestVote)
		assert.Equal(t, term, req.Term)
		assert.False(t, req.PreVote)
	})
	t.Run("during a pre-vote round", func(t *testing.T) {
		h := newHarness(t, 2, func(c *Config) { c.PreVote = true })
		h.fire(TimerElection)
		require.True(t, h.c.Status(h.now).PreVoting)
		h.take()
		require.NoError(t, h.c.Join(h.now, procID(nodeName(4))))
		reqs := messagesOf[MessageRequestVote](h.take())
		require.Len(t, reqs, 1)
		req := reqs[0].Message.(MessageRequestVote)
		assert.Equal(t, h.c.Term()+1, req.Term)
		assert.True(t, req.PreVote)
	})
}

// "Heartbeats go only to peers that have answered": a member whose
// connection dropped gets none until it answers again.
func TestGhostsGetNoHeartbeats(t *testing.T) {
	h := newHarness(t, 2, nil)
	term := h.lead(2, 3)
	h.c.PeerDown(h.now, peerPID(3), gen.ErrNoConnection)
	h.take()
	h.fire(TimerHeartbeat)
	for _, out := range messagesOf[MessageHeartbeat](h.take()) {
		assert.NotEqual(t, nodeName(3), out.ToName.Node, "no heartbeat by name to the ghost")
		assert.NotEqual(t, nodeName(3), out.To.Node)
	}
	assert.Equal(t, term, h.c.Term())
}

// A leader opens negotiation with a declared peer by a probe, not a heartbeat,
// and a probe's answer from a member behind its term still admits it.
func TestLeaderNegotiatesWithAProbeAndAdmitsAnAnswerFromBehind(t *testing.T) {
	h := newHarness(t, 2, nil)
	term := h.lead(2, 3)
	h.take()
	require.NoError(t, h.c.Join(h.now, procID(nodeName(4))))
	rd := h.take()
	assert.Empty(t, messagesOf[MessageHeartbeat](rd))
	require.Len(t, messagesOf[MessageRequestVote](rd), 1)
	h.step(4, MessageVote{ClusterID: testCluster, Term: 0, PreVote: true, Voter: procID(nodeName(4))})
	h.fire(TimerHeartbeat)
	var to []gen.PID
	for _, out := range messagesOf[MessageHeartbeat](h.take()) {
		to = append(to, out.To)
	}
	assert.Contains(t, to, peerPID(4), "it answered, so it gets heartbeats at term %d", term)
}

// Bootstrap is the static list of the cluster: a Bootstrap peer dropped after
// GhostTTL is still probed, so both sides of a partition longer than GhostTTL
// find each other again without a discovery loop. A peer withdrawn by Leave is not.
func TestDroppedBootstrapPeersAreProbedAgain(t *testing.T) {
	h := newHarness(t, 3, nil)
	h.step(3, MessageHeartbeatAck{ClusterID: testCluster, Term: 0, Follower: procID(nodeName(3))})
	h.c.PeerDown(h.now, peerPID(3), gen.ErrNoConnection)
	h.collect()
	h.advance(h.c.cfg.GhostTTL)
	h.fire(TimerGhost)
	require.Equal(t, 3, h.c.ViewSize(), "the ghost is dropped after GhostTTL")
	require.NoError(t, h.c.Leave(h.now, nodeName(4)))
	h.take()
	h.fire(TimerProbe)
	var probed []gen.Atom
	for _, out := range messagesOf[MessageRequestVote](h.take()) {
		probed = append(probed, out.ToName.Node)
	}
	assert.Contains(t, probed, nodeName(3), "the dropped Bootstrap peer is probed by name")
	assert.NotContains(t, probed, nodeName(4), "a withdrawn one is not")
	h.step(3, MessageVote{ClusterID: testCluster, Term: 0, PreVote: true, Voter: procID(nodeName(3))})
	assert.Equal(t, 3, h.c.ViewSize(), "its answer admits it again (self, n2, n3)")
}
