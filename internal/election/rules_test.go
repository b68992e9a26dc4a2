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

// Each test names the sentence of the leader document it checks. Where
// agreed membership changes what a sentence means, the comment says how.

func TestConfigValidate(t *testing.T) {
	base := testConfig("n1@host", 1)
	require.NoError(t, base.Validate())
	cases := map[string]func(*Config){
		"a missing ClusterID is refused":                func(c *Config) { c.ClusterID = "" },
		"a Self without a node is refused":              func(c *Config) { c.Self.Node = "" },
		"a negative MinClusterSize is refused":          func(c *Config) { c.MinClusterSize = -1 },
		"a max timeout not above the min is refused":    func(c *Config) { c.ElectionTimeoutMax = c.ElectionTimeoutMin },
		"a negative min timeout is refused":             func(c *Config) { c.ElectionTimeoutMin = -time.Millisecond },
		"a negative heartbeat interval is refused":      func(c *Config) { c.HeartbeatInterval = -time.Millisecond },
		"a negative PreferStableFor is refused":         func(c *Config) { c.PreferStableFor = -time.Second },
		"an unknown Prefer kind is refused":             func(c *Config) { c.Prefer.Kind = 9 },
		"PreferFunc without a Less function is refused": func(c *Config) { c.Prefer.Kind = PreferFunc },
		"PreferOldest without a start time is refused":  func(c *Config) { c.Prefer.Kind = PreferOldest },
		"a negative GhostTTL is refused":                func(c *Config) { c.GhostTTL = -time.Second },
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

// "Set only one and the other is derived - min alone doubles to a max, max
// alone halves to a min"; every zero field takes the document's default.
func TestConfigDefaults(t *testing.T) {
	d := Config{}.WithDefaults()
	assert.Equal(t, DefaultMinClusterSize, d.MinClusterSize)
	assert.Equal(t, DefaultElectionTimeoutMin, d.ElectionTimeoutMin)
	assert.Equal(t, DefaultElectionTimeoutMax, d.ElectionTimeoutMax)
	assert.Equal(t, DefaultHeartbeatInterval, d.HeartbeatInterval)
	assert.Equal(t, DefaultGhostTTL, d.GhostTTL)
	assert.Equal(t, 2*DefaultElectionTimeoutMax, d.PreferStableFor)
	assert.True(t, d.preVote() && d.fastFailover() && d.Evidence == EvidenceReplies, "PreVote, fast failover and reply evidence are on by default")
	assert.Equal(t, 400*time.Millisecond, Config{ElectionTimeoutMin: 200 * time.Millisecond}.WithDefaults().ElectionTimeoutMax)
	assert.Equal(t, 200*time.Millisecond, Config{ElectionTimeoutMax: 400 * time.Millisecond}.WithDefaults().ElectionTimeoutMin)
	assert.Len(t, Config{MinClusterSize: 1}.Warnings(), 1, "MinClusterSize 1 is warned about")
	assert.Len(t, Config{MinClusterSize: 2}.Warnings(), 1, "MinClusterSize 2 is warned about")
	assert.Len(t, Config{HeartbeatInterval: 100 * time.Millisecond}.Warnings(), 1, "a heartbeat not comfortably below the timeout is warned about")
	assert.Empty(t, Config{}.Warnings())
}

// "Every actor is in one of four states."
func TestRolesHaveTheDocumentsNames(t *testing.T) {
	names := map[Role]string{RoleUnclustered: "unclustered", RoleFollower: "follower", RoleCandidate: "candidate", RoleLeader: "leader"}
	for r, want := range names {
		assert.Equal(t, want, r.String())
	}
}

// "A peer counts from the moment it is declared, before it has answered
// anything" — before a view exists, declared peers make the formation's
// view; once one exists, the agreed view alone counts.
func TestDeclaredPeerCountsBeforeAnswering(t *testing.T) {
	h := newHarness(t, 2, nil)
	assert.Equal(t, 3, h.c.ViewSize())
	assert.Equal(t, RoleFollower, h.c.Role(), "two declared peers and self reach MinClusterSize 3")
	assert.Empty(t, h.c.Peers(), "no PID is known before an answer")

	t.Run("a join counts at once too", func(t *testing.T) {
		h := newHarness(t, 1, nil)
		require.Equal(t, RoleUnclustered, h.c.Role())
		assert.NotContains(t, h.timers, TimerElection, "an unclustered member does not wait to campaign")
		require.NoError(t, h.c.Join(h.now, procID(nodeName(3))))
		h.collect()
		assert.Equal(t, RoleFollower, h.c.Role())
		assert.Contains(t, h.timers, TimerElection, "a clustered follower waits to campaign")
	})
}

// "a higher term always wins: any node seeing one adopts it and steps back to follower"
func TestHigherTermIsAdoptedAndSendsNodeToFollower(t *testing.T) {
	for _, role := range []string{"leader", "candidate"} {
		t.Run("a "+role+" seeing a higher term follows", func(t *testing.T) {
			h := newAgreed(t, 2, nil)
			if role == "leader" {
				h.lead(2)
			} else {
				h.campaign()
			}
			h.take()
			s := h.stamp()
			s.Key.Term = 9
			h.heartbeat(3, 9, s, nil)
			rd := h.take()
			assert.Equal(t, uint64(9), h.c.Term())
			assert.Equal(t, RoleFollower, h.c.Role())
			assert.Equal(t, peerPID(3), h.c.Leader())
			assert.Contains(t, rd.Effects, Effect{Kind: EffectBecomeFollower, PID: peerPID(3)})
			require.NotNil(t, rd.HardState)
			assert.Equal(t, uint64(9), rd.HardState.Term)
			assert.Zero(t, rd.HardState.VotedFor, "the vote is cleared with the term")
		})
	}
}

// "a voter grants one vote per term"
func TestOneVotePerTerm(t *testing.T) {
	h := newAgreed(t, 3, nil)
	h.take()
	h.requestVote(2, 5, h.stamp())
	rd := h.take()
	assert.True(t, lastVote(t, rd).Granted)
	require.NotNil(t, rd.HardState, "the vote is persisted before the reply is sent")
	assert.Equal(t, procID(nodeName(2)), rd.HardState.VotedFor)

	h.requestVote(3, 5, h.stamp())
	assert.False(t, lastVote(t, h.take()).Granted, "a second candidate in the same term is refused")
	h.requestVote(2, 5, h.stamp())
	assert.True(t, lastVote(t, h.take()).Granted, "the same candidate asking again gets the same answer")

	h.requestVote(3, 6, h.stamp())
	assert.True(t, lastVote(t, h.take()).Granted, "the vote is cleared when the term changes")
}

// The vote survives a restart when the shell persists HardState.
func TestPersistedVoteIsNotCastTwice(t *testing.T) {
	h := newHarnessWith(t, 2, HardState{Term: 5, VotedFor: procID(nodeName(2)), View: agreedView(3, 1, 1)}, nil)
	h.take()
	h.requestVote(3, 5, h.stamp())
	assert.False(t, lastVote(t, h.take()).Granted)
	assert.Equal(t, uint64(5), h.c.Term())
}

// "To win, a candidate needs a majority of its view, counting itself. Three
// nodes need two votes, four need three, five need three."
func TestQuorumIsMajorityOfViewCountingSelf(t *testing.T) {
	for size, need := range map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 7: 4} {
		assert.Equal(t, need, quorum.Majority(size), "view of %d", size)
	}
	h := newAgreed(t, 4, nil)
	term := h.campaign()
	h.grant(2, term)
	assert.False(t, h.c.IsProtocolLeader(), "two of five is not a majority")
	h.grant(3, term)
	assert.True(t, h.c.IsProtocolLeader(), "three of five is")
	assert.Equal(t, 3, h.c.VotesGranted())
}

// "Returning false, or an error, withholds it: HandleBecomeLeader does not
// run and the node re-campaigns after a backoff that grows with
// consecutive denials. An error counts as a denial, not as consent."
func TestConfirmLeaderGatesLeadership(t *testing.T) {
	for name, answer := range map[string]error{"false": nil, "an error": errors.New("lease store timed out")} {
		t.Run("a confirmation answering "+name+" withholds leadership", func(t *testing.T) {
			h := newAgreed(t, 2, nil)
			h.confirm = func(uint64) (bool, error) { return false, answer }
			var waits []time.Duration
			for range 3 {
				term := h.campaign()
				h.grant(2, term)
				h.ack(2, term)
				h.ack(3, term)
				rd := h.take()
				require.Len(t, effectsIn(rd, EffectConfirm), 1, "asked once the re-stamped view committed")
				assert.Empty(t, effectsIn(rd, EffectBecomeLeader))
				assert.Equal(t, RoleFollower, h.c.Role())
				waits = append(waits, h.due[TimerElection].Sub(h.now))
			}
			assert.Greater(t, waits[2], waits[0], "the backoff grows with consecutive denials")
			st := h.c.Status(h.now)
			assert.Equal(t, uint64(3), st.ConfirmDenied)
			assert.Equal(t, answer, st.LastDenyError)
		})
	}
}

// "HandleConfirmLeader runs after this node won an election and before its
// leadership is published": a confirmation that came after the evidence of
// a majority lapsed (a slow callback: no heartbeat went out meanwhile, and
// the others may have elected someone else) publishes only once a majority
// answers the heartbeats the member sends then; without such answers
// within the evidence window it steps down as a tick would. Either way,
// HandleBecomeLeader never starts leader work on lapsed evidence.
func TestAConfirmationThatOutlastsTheEvidencePublishesOnlyOnFreshAnswers(t *testing.T) {
	lateWin := func(t *testing.T, late time.Duration) (*harness, uint64, Ready) {
		return winConfirmedAfter(t, nil, late)
	}
	window := newAgreed(t, 2, nil).c.cfg.evidenceWindow()

	t.Run("a confirmation within the window publishes at once", func(t *testing.T) {
		h, _, rd := lateWin(t, window-time.Millisecond)
		assert.Len(t, effectsIn(rd, EffectBecomeLeader), 1)
		assert.Equal(t, RoleLeader, h.c.Role())
	})

	t.Run("a late one publishes on the first fresh answers of a majority", func(t *testing.T) {
		h, term, rd := lateWin(t, window)
		assert.Empty(t, effectsIn(rd, EffectBecomeLeader), "published a leadership whose evidence had lapsed")
		assert.False(t, h.c.IsLeader())
		assert.True(t, h.c.IsProtocolLeader())
		assert.Len(t, messagesOf[MessageHeartbeat](rd), 6, "the win's heartbeats, those sent with the question, and at once again after the late answer")
		h.fire(TimerHeartbeat) // a tick before any answer: within the window, no step-down
		assert.True(t, h.c.IsProtocolLeader())
		assert.Empty(t, effectsIn(h.take(), EffectBecomeLeader))
		h.ack(2, term)
		assert.Len(t, effectsIn(h.take(), EffectBecomeLeader), 1, "a majority answered: publish")
		assert.True(t, h.c.LeadsAt(h.now))
		assert.Zero(t, h.c.Status(h.now).ConfirmDenied, "a late confirmation is no denial")
	})

	t.Run("a late one that no majority answers within the window steps down", func(t *testing.T) {
		h, _, _ := lateWin(t, window)
		confirmed := h.now
		for h.c.IsProtocolLeader() {
			h.fire(TimerHeartbeat)
			assert.Empty(t, effectsIn(h.take(), EffectBecomeLeader))
		}
		assert.LessOrEqual(t, h.now.Sub(confirmed), window+h.c.cfg.HeartbeatInterval)
		assert.Equal(t, uint64(1), h.c.Status(h.now).QuorumLostStepDowns)
	})
}

// Under EvidenceContact an accepted send counts as reaching a member, and a
// late confirmation sends heartbeats at once: counting those would publish
// at once, on no answer at all, the leadership of a member the others may
// have replaced meanwhile. It publishes on answers, as under the default
// rule, and steps down when none come within the window.
func TestALateConfirmationUnderContactEvidencePublishesOnAnswersNotOnItsOwnSends(t *testing.T) {
	window := newAgreed(t, 2, nil).c.cfg.evidenceWindow()
	lateWin := func(t *testing.T) (*harness, uint64) {
		h, term, rd := winConfirmedAfter(t, func(c *Config) { c.Evidence = EvidenceContact }, window)
		require.NotEmpty(t, messagesOf[MessageHeartbeat](rd))
		assert.Empty(t, effectsIn(rd, EffectBecomeLeader), "published on the heartbeats it sent itself")
		assert.False(t, h.c.LeadsAt(h.now))
		return h, term
	}

	t.Run("answers publish it", func(t *testing.T) {
		h, term := lateWin(t)
		h.fire(TimerHeartbeat)
		assert.Empty(t, effectsIn(h.take(), EffectBecomeLeader), "a tick's sends are no answer either")
		require.True(t, h.c.IsProtocolLeader())
		h.ack(2, term)
		assert.Len(t, effectsIn(h.take(), EffectBecomeLeader), 1)
		assert.True(t, h.c.LeadsAt(h.now))
	})

	t.Run("no answer within the window steps it down", func(t *testing.T) {
		h, _ := lateWin(t)
		confirmed := h.now
		for h.c.IsProtocolLeader() {
			h.fire(TimerHeartbeat)
			assert.Empty(t, effectsIn(h.take(), EffectBecomeLeader))
			require.LessOrEqual(t, h.now.Sub(confirmed), h.c.cfg.evidenceWindow()+h.c.cfg.HeartbeatInterval, "still leading on its own sends")
		}
	})
}

// A confirmation that came late and is still waiting for answers when the
// view falls below MinClusterSize is void, as a published leadership is
// withdrawn there: once the view grows back, HandleConfirmLeader is asked
// again before HandleBecomeLeader runs, as it is for a leader confirmed in
// time, instead of publishing on an answer given before the dip.
func TestALateConfirmationDoesNotOutliveADipBelowTheFloor(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprintf("late=%t", late), func(t *testing.T) {
			h := newAgreed(t, 2, nil)
			confirms := 0
			h.confirm = func(uint64) (bool, error) {
				confirms++
				if late && confirms == 1 {
					h.advance(h.c.cfg.evidenceWindow())
				}
				return true, nil
			}
			term := h.campaign()
			h.grant(2, term)
			h.ack(2, term)
			require.Equal(t, 1, confirms)
			require.NoError(t, h.c.Leave(h.now, nodeName(3)))
			h.ack(2, term)
			require.Equal(t, RoleUnclustered, h.c.Role(), "the view is below the floor")
			h.advance(h.c.cfg.ElectionTimeoutMax) // the withdrawal's sticky period
			h.step(3, MessageMembership{Header: hdr(3, term, ViewStamp{}), Add: []gen.ProcessID{procID(nodeName(3))}})
			for i := 0; i < 5 && h.c.ViewSize() < 3; i++ {
				h.ack(2, term)
				h.ack(3, term)
				h.fire(TimerHeartbeat)
			}
			h.ack(2, term)
			h.ack(3, term)
			h.take()
			require.Equal(t, RoleLeader, h.c.Role(), "re-admitted: leadership visible again")
			assert.Equal(t, 2, confirms, "HandleConfirmLeader asked again after the dip")
		})
	}
}

// winConfirmedAfter makes n1 of three (tuned by tune) win an election whose
// HandleConfirmLeader runs for late, and returns it with the term and what
// it asked for.
func winConfirmedAfter(t *testing.T, tune func(*Config), late time.Duration) (*harness, uint64, Ready) {
	h := newAgreed(t, 2, tune)
	h.confirm = func(uint64) (bool, error) {
		h.advance(late) // the callback ran that long
		return true, nil
	}
	term := h.campaign()
	h.grant(2, term)
	h.ack(2, term)
	rd := h.take()
	require.Len(t, effectsIn(rd, EffectConfirm), 1)
	return h, term, rd
}

// "Returning an error rolls the transition back: the actor steps down again."
func TestBecomeLeaderErrorRollsBack(t *testing.T) {
	h := newAgreed(t, 2, nil)
	h.lead(2)
	h.take()
	h.c.BecomeLeaderFailed(h.now, errors.New("cannot honour it"))
	rd := h.take()
	assert.Equal(t, RoleFollower, h.c.Role())
	assert.Contains(t, rd.Effects, Effect{Kind: EffectBecomeFollower})
	assert.EqualError(t, h.c.Status(h.now).LastBecomeLeaderError, "cannot honour it")
}

// "HandleBecomeFollower ... fires on every transition into follower - not
// only when a leader is demoted ... with an empty PID when no leader is known."
func TestBecomeFollowerOnEveryTransition(t *testing.T) {
	h := newAgreed(t, 2, nil)
	term := h.campaign()
	h.take()
	h.refuse(2, term)
	h.refuse(3, term)
	assert.Contains(t, h.take().Effects, Effect{Kind: EffectBecomeFollower}, "a candidate that lost follows nobody")
	h.heartbeat(2, term, h.stamp(), nil)
	assert.Contains(t, h.take().Effects, Effect{Kind: EffectBecomeFollower, PID: peerPID(2)}, "a follower told of its leader")
	s := h.stamp()
	h.heartbeat(3, term+1, s, nil)
	assert.Contains(t, h.take().Effects, Effect{Kind: EffectBecomeFollower, PID: peerPID(3)}, "a follower whose leader changed")
}

// "HandlePeerJoined / HandlePeerLeft report membership changes ...
// membership is already applied by the time they run."
func TestPeerCallbacksAfterMembershipApplied(t *testing.T) {
	h := newAgreed(t, 2, nil)
	h.take()
	h.heartbeat(2, 1, h.stamp(), nil)
	rd := h.take()
	assert.Contains(t, rd.Effects, Effect{Kind: EffectPeerJoined, PID: peerPID(2)})
	assert.Contains(t, rd.Effects, Effect{Kind: EffectMonitor, PID: peerPID(2)})
	assert.True(t, h.c.HasPeer(peerPID(2)), "applied before the callback runs")
	h.c.PeerDown(h.now, peerPID(2), gen.ErrNoConnection)
	assert.Contains(t, h.take().Effects, Effect{Kind: EffectPeerLeft, PID: peerPID(2)})
	assert.False(t, h.c.HasPeer(peerPID(2)))
}

// "Messages carrying a different one are dropped and counted";
// "ergo:dropped_by_reason (per-reason counters for every message the actor discarded)".
func TestDroppedMessagesAreCountedByReason(t *testing.T) {
	h := newAgreed(t, 2, nil)
	h.c.Step(h.now, peerPID(2), MessageHeartbeat{Header: Header{ClusterID: "other", Term: 1, From: procID(nodeName(2))}})
	h.c.Step(h.now, peerPID(2), "not an election message")
	h.c.Step(h.now, peerPID(2), MessageHeartbeat{Header: hdr(3, 1, h.stamp())})
	h.c.Step(h.now, peerPID(1), MessageHeartbeat{Header: hdr(1, 1, h.stamp())})
	h.c.Step(h.now, peerPID(2), MessageHeartbeat{Header: hdr(2, 1, ViewStamp{Lineage: Lineage{Term: 1}, Key: ViewKey{Epoch: 1}})})
	d := h.c.Status(h.now).Dropped
	assert.Equal(t, map[string]uint64{dropClusterID: 1, dropUnknownMessage: 1, dropMalformed: 1, dropSelf: 1, dropMalformedView: 1}, d)
}

// "A leader that loses contact steps down by itself ... within one election
// timeout", counting only the members of its view.
func TestLeaderWithoutQuorumEvidenceStepsDown(t *testing.T) {
	h := newAgreed(t, 4, nil)
	term := h.lead(2, 3)
	for range 10 {
		h.fire(TimerHeartbeat)
		h.ack(2, term)
		h.ack(3, term)
	}
	require.Equal(t, RoleLeader, h.c.Role(), "two acknowledging peers and itself are three of five")
	start := h.now
	for h.c.Role() == RoleLeader {
		h.fire(TimerHeartbeat)
		h.ack(2, term)
	}
	assert.LessOrEqual(t, h.now.Sub(start), h.c.cfg.evidenceWindow()+h.c.cfg.HeartbeatInterval)
	assert.Equal(t, uint64(1), h.c.Status(h.now).QuorumLostStepDowns)
}

// "A leader holds leadership only with a majority behind it" at every
// instant, not only at its ticks: LeadsAt turns false the moment the
// evidence lapses, while the core, its tick not yet stepped (its process
// busy, say), still leads. What a user asks before acting (Actor.IsLeader)
// is LeadsAt.
func TestLeadsAtEndsTheMomentTheEvidenceLapsesNotAtTheTick(t *testing.T) {
	h := newAgreed(t, 2, nil)
	term := h.lead(2)
	h.fire(TimerHeartbeat)
	h.ack(2, term)
	reached := h.now // the send time of the heartbeat the majority answered
	window := h.c.cfg.evidenceWindow()
	require.True(t, h.c.LeadsAt(reached))
	require.True(t, h.c.LeadsAt(reached.Add(window-time.Nanosecond)))
	require.False(t, h.c.LeadsAt(reached.Add(window)), "leadership outlived the evidence of a majority")
	require.True(t, h.c.IsLeader(), "the core steps down at its tick, not before")

	h.fire(TimerHeartbeat) // a tick within the window renews nothing without answers
	require.False(t, h.c.LeadsAt(reached.Add(window)))
	h.ack(2, term)
	require.True(t, h.c.LeadsAt(reached.Add(window)), "a newer answer renews it")

	follower := newAgreed(t, 2, nil)
	require.False(t, follower.c.LeadsAt(follower.now), "a member that does not lead never does")
}

// "Vote requests do go to everyone declared" — in a regular election, to
// every member of the view; before any view, to every declared peer.
func TestVoteRequestsGoToTheWholeView(t *testing.T) {
	h := newAgreed(t, 3, nil)
	h.take()
	h.campaign()
	to := map[gen.Atom]bool{}
	for _, o := range messagesOf[MessageRequestVote](h.take()) {
		to[o.ToName.Node] = true
	}
	assert.Equal(t, map[gen.Atom]bool{nodeName(2): true, nodeName(3): true, nodeName(4): true}, to)
}

// Terms only grow, so "each new leader's token is higher".
func TestFencingTokensIncreaseAcrossLeaders(t *testing.T) {
	nw := newNetwork(t, 3, 5, nil)
	var last uint64
	for i := range 4 {
		l := nw.settle(10 * time.Second)
		tok := l.core.FencingToken()
		require.Greater(t, tok, last, "leadership %d", i)
		last = tok
		for _, f := range nw.names {
			if f != l.name {
				assert.Zero(t, nw.nodes[f].core.FencingToken(), "a follower has no token")
			}
		}
		nw.input(l, func(c *Core, now time.Time) { require.NoError(t, c.StepDown(now)) })
	}
}

// "A healed partition converges": the majority keeps its leader, the
// minority elects none, and after the heal everyone follows one leader.
func TestPartitionAndHeal(t *testing.T) {
	nw, l := settledLeader(t, 5, 21, nil)
	var others []int
	for i := 1; i <= 5; i++ {
		if nw.node(i) != l {
			others = append(others, i)
		}
	}
	nw.partition(append([]int{nodeIndex(l.name)}, others[:2]...), others[2:])
	nw.run(3 * time.Second)
	assert.True(t, l.core.IsLeader(), "the majority keeps its leader")
	for _, i := range others[2:] {
		assert.False(t, nw.node(i).core.IsLeader(), "n%d in the minority", i)
	}
	nw.heal()
	final := nw.settle(5 * time.Second)
	assert.Equal(t, 5, final.core.ViewSize())
}

// "Join ... Idempotent per node"; a join of self or of a nameless peer is an
// error wrapping gen.ErrIncorrect, as is a Leave of self.
func TestJoinAndLeaveRefuseBadInput(t *testing.T) {
	h := newAgreed(t, 2, nil)
	for _, p := range []gen.ProcessID{{Node: nodeName(9)}, {Name: "regent"}, procID(nodeName(1))} {
		require.ErrorIs(t, h.c.Join(h.now, p), gen.ErrIncorrect, "%v", p)
	}
	require.ErrorIs(t, h.c.Leave(h.now, ""), gen.ErrIncorrect)
	require.ErrorIs(t, h.c.Leave(h.now, nodeName(1)), gen.ErrIncorrect)
	require.NoError(t, h.c.Join(h.now, procID(nodeName(2))))
	require.NoError(t, h.c.Join(h.now, procID(nodeName(2))), "joining a member again is fine")
	assert.Equal(t, 3, h.c.ViewSize())
}

// "A withdrawal is sticky for one election timeout, so traffic already in
// flight cannot re-admit what you just removed."
func TestLeaveIsStickyForAnElectionTimeout(t *testing.T) {
	h := newAgreed(t, 3, nil)
	h.lead(2, 3)
	h.take()
	require.NoError(t, h.c.Leave(h.now, nodeName(4)))
	rd := h.take()
	require.False(t, h.c.view.has(nodeName(4)), "the leader removed it")
	require.NotEmpty(t, effectsIn(rd, EffectViewChanged))
	h.step(4, MessageMembership{Header: hdr(4, h.c.Term(), ViewStamp{}), Add: []gen.ProcessID{procID(nodeName(4))}})
	assert.Equal(t, uint64(1), h.c.Status(h.now).Dropped[dropWithdrawn], "its request to come back is dropped")
	h.advance(h.c.cfg.ElectionTimeoutMax)
	h.step(4, MessageMembership{Header: hdr(4, h.c.Term(), ViewStamp{}), Add: []gen.ProcessID{procID(nodeName(4))}})
	assert.Equal(t, uint64(1), h.c.Status(h.now).Dropped[dropWithdrawn], "after the sticky period it is heard again")
}

// Enum names read well in logs and inspection.
func TestEnumNames(t *testing.T) {
	for k, want := range map[fmt.Stringer]string{
		TimerElection: "election", TimerHeartbeat: "heartbeat", TimerProbe: "probe", TimerStorage: "storage",
		EvidenceReplies: "replies", EvidenceContact: "contact", PreferNone: "none", PreferOldest: "oldest",
		PreferHighestID: "highest-id", PreferFunc: "func", Lineage{}: "none", Lineage{Term: 3, Node: "a@h"}: "3@a@h",
		ViewKey{Term: 4, Epoch: 2}: "epoch 2/term 4",
	} {
		assert.Equal(t, want, k.String())
	}
}

// Quorum evidence: an acknowledgement is evidence of the time the heartbeat
// it answers was sent (its Echo), not of its arrival. A leader whose
// acknowledgements keep arriving, ever later (the network into its node
// slows down), steps down within the evidence window plus a heartbeat of
// sending the last heartbeat a majority answered, however fresh their
// arrivals: a superseded leader cannot stay visible for as long as the
// network delays its answers.
func TestALateAcknowledgementIsEvidenceOfItsHeartbeatNotOfItsArrival(t *testing.T) {
	h := newAgreed(t, 3, nil)
	term := h.lead(2, 3)
	type beat struct{ sent, due time.Time }
	var inFlight []beat
	var delay time.Duration
	var answered time.Time // the send time of the last heartbeat both answered
	for h.c.Role() == RoleLeader && delay < 2*time.Second {
		h.fire(TimerHeartbeat)
		delay += 10 * time.Millisecond
		inFlight = append(inFlight, beat{h.now, h.now.Add(delay)})
		for len(inFlight) > 0 && !h.now.Before(inFlight[0].due) {
			echo := Stamp(h.c.cfg.Origin, inFlight[0].sent)
			h.step(2, MessageHeartbeatAck{Header: hdr(2, term, h.stamp()), Echo: echo})
			h.step(3, MessageHeartbeatAck{Header: hdr(3, term, h.stamp()), Echo: echo})
			answered = inFlight[0].sent
			inFlight = inFlight[1:]
		}
	}
	require.NotEqual(t, RoleLeader, h.c.Role(), "acknowledgements arriving ever later kept the leader visible (delay %s)", delay)
	assert.LessOrEqual(t, h.now.Sub(answered), h.c.cfg.evidenceWindow()+h.c.cfg.HeartbeatInterval,
		"it stepped down within the window and a heartbeat of the last heartbeat answered")
}

// Quorum evidence: an acknowledgement that echoes no heartbeat (Echo zero),
// or a stamp after its own arrival (not of this member's clock), is no
// evidence; one that echoes an older heartbeat than the last evidence moves
// nothing back.
func TestAnAcknowledgementWithoutAHeartbeatsStampIsNoEvidence(t *testing.T) {
	h := newAgreed(t, 3, nil)
	term := h.lead(2, 3)
	h.fire(TimerHeartbeat)
	h.ack(2, term)
	p := h.c.peers.get(nodeName(2))
	before := p.lastReply
	require.Equal(t, h.c.clock().at(h.now), before)

	h.advance(10 * time.Millisecond)
	h.c.Step(h.now, peerPID(2), MessageHeartbeatAck{Header: hdr(2, term, h.stamp())})
	assert.Equal(t, before, p.lastReply, "no echo: no evidence")
	assert.True(t, p.inboundSinceReply, "and the member's last message is no reply")

	h.c.Step(h.now, peerPID(2), MessageHeartbeatAck{Header: hdr(2, term, h.stamp()), Echo: Stamp(h.c.cfg.Origin, h.now.Add(time.Millisecond))})
	assert.Equal(t, before, p.lastReply, "an echo from the future: no evidence")

	h.c.Step(h.now, peerPID(2), MessageHeartbeatAck{Header: hdr(2, term, h.stamp()), Echo: Stamp(h.c.cfg.Origin, h.now.Add(-5*time.Millisecond))})
	assert.Equal(t, h.c.clock().at(h.now.Add(-5*time.Millisecond)), p.lastReply, "evidence of when the heartbeat was sent")
	assert.False(t, p.inboundSinceReply)
	h.c.Step(h.now, peerPID(2), MessageHeartbeatAck{Header: hdr(2, term, h.stamp()), Echo: Stamp(h.c.cfg.Origin, h.now.Add(-8*time.Millisecond))})
	assert.Equal(t, h.c.clock().at(h.now.Add(-5*time.Millisecond)), p.lastReply, "an older heartbeat's answer moves nothing back")
}

// Every heartbeat and vote request carries its send time, and every answer
// echoes the one it answers.
func TestAnswersEchoTheStampOfWhatTheyAnswer(t *testing.T) {
	nw, l := settledLeader(t, 3, 47, nil)
	f := nw.other(l)
	f.core.Step(nw.now, l.pid, MessageHeartbeat{Header: l.core.hdr(l.core.term), Committed: l.core.committed, Sent: 12345})
	acks := messagesOf[MessageHeartbeatAck](f.core.Ready())
	require.Len(t, acks, 1)
	assert.Equal(t, int64(12345), acks[0].Message.(MessageHeartbeatAck).Echo)
	f.core.Step(nw.now, l.pid, MessageRequestVote{Header: l.core.hdr(l.core.term + 1), PreVote: true, Sent: 678})
	votes := messagesOf[MessageVote](f.core.Ready())
	require.Len(t, votes, 1)
	assert.Equal(t, int64(678), votes[0].Message.(MessageVote).Echo)
}
