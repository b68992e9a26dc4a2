package election

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// withPreVote turns PreVote on where a harness turned it off.
func withPreVote(c *Config) { c.DisablePreVote = false }

// withoutPreVote turns it off, for the contrast that shows a PreVote test can fail.
func withoutPreVote(c *Config) { c.DisablePreVote = true }

// withStarted sets a header's start time.
func withStarted(h Header, started int64) Header {
	h.Started = started
	return h
}

// Issue 8, item 1: an isolated follower that returns does not disturb a
// healthy leader, because it must win a pre-vote before bumping its term.
func TestPreVoteKeepsLeaderAfterIsolatedFollowerHeals(t *testing.T) {
	isolateAndHeal := func(t *testing.T, tune func(*Config)) (before, after uint64, same bool) {
		nw := newNetwork(t, 5, 8, tune)
		l := nw.settle(5 * time.Second)
		f := nw.other(l)
		before = l.core.Term()
		nw.isolate(f)
		nw.run(10 * f.core.cfg.ElectionTimeoutMax)
		nw.heal()
		nw.run(2 * f.core.cfg.ElectionTimeoutMax)
		final := nw.settle(5 * time.Second)
		return before, final.core.Term(), final == l
	}
	t.Run("with PreVote the leader and the term stay as they were", func(t *testing.T) {
		before, after, same := isolateAndHeal(t, withPreVote)
		assert.True(t, same)
		assert.Equal(t, before, after)
	})
	t.Run("without PreVote the returning follower forces a new term", func(t *testing.T) {
		before, after, _ := isolateAndHeal(t, withoutPreVote)
		assert.Greater(t, after, before, "the contrast that shows the pre-vote test can fail")
	})
}

// "the pre-voter does not change its own term or vote"
func TestPreVoteChangesNoTermOrVote(t *testing.T) {
	h := newAgreed(t, 2, withPreVote)
	h.take()
	h.fire(TimerElection)
	rd := h.take()
	assert.Equal(t, uint64(1), h.c.Term(), "the pre-candidate keeps its term")
	assert.Nil(t, rd.HardState)
	reqs := messagesOf[MessageRequestVote](rd)
	require.Len(t, reqs, 2)
	for _, o := range reqs {
		m := o.Message.(MessageRequestVote)
		assert.True(t, m.PreVote)
		assert.Equal(t, uint64(2), m.Term, "it asks about term+1")
	}
	assert.True(t, h.c.Status(h.now).PreVoting)

	h.step(2, MessageVote{Header: hdr(2, 2, h.stamp()), Granted: true, PreVote: true})
	rd = h.take()
	assert.Equal(t, RoleCandidate, h.c.Role(), "a won pre-vote campaigns for real")
	assert.Equal(t, uint64(2), h.c.Term())
	for _, o := range messagesOf[MessageRequestVote](rd) {
		assert.False(t, o.Message.(MessageRequestVote).PreVote)
	}

	t.Run("a pre-voter grants without changing its own state", func(t *testing.T) {
		h := newAgreed(t, 2, withPreVote)
		h.take()
		h.step(2, MessageRequestVote{Header: hdr(2, 4, h.stamp()), PreVote: true})
		rd := h.take()
		v := lastVote(t, rd)
		assert.True(t, v.Granted)
		assert.True(t, v.PreVote)
		assert.Equal(t, uint64(1), h.c.Term())
		assert.Nil(t, rd.HardState, "nothing to persist")
	})
}

// "a peer that has heard from a live leader within ElectionTimeoutMin says no,
// to a pre-vote and to a real vote alike (except Transfer)"
func TestLeaderStickinessRefusesVotes(t *testing.T) {
	h := newAgreed(t, 2, withPreVote)
	h.heartbeat(2, 3, h.stamp(), nil)
	h.take()
	h.advance(h.c.cfg.ElectionTimeoutMin - time.Millisecond)

	h.step(3, MessageRequestVote{Header: hdr(3, 4, h.stamp()), PreVote: true})
	assert.False(t, lastVote(t, h.take()).Granted, "pre-vote refused")
	h.requestVote(3, 4, h.stamp())
	rd := h.take()
	assert.False(t, lastVote(t, rd).Granted, "real vote refused")
	assert.Equal(t, uint64(3), h.c.Term(), "and its term is not adopted")
	assert.Equal(t, peerPID(2), h.c.Leader())

	h.step(3, MessageRequestVote{Header: hdr(3, 4, h.stamp()), Transfer: true})
	assert.True(t, lastVote(t, h.take()).Granted, "a transfer is granted despite stickiness")
	assert.Equal(t, uint64(4), h.c.Term())

	t.Run("after ElectionTimeoutMin of silence the vote is free", func(t *testing.T) {
		h := newAgreed(t, 2, withPreVote)
		h.heartbeat(2, 3, h.stamp(), nil)
		h.advance(h.c.cfg.ElectionTimeoutMin)
		h.requestVote(3, 4, h.stamp())
		assert.True(t, lastVote(t, h.take()).Granted)
	})
	t.Run("without PreVote there is no stickiness", func(t *testing.T) {
		h := newAgreed(t, 2, nil)
		h.heartbeat(2, 3, h.stamp(), nil)
		h.requestVote(3, 4, h.stamp())
		assert.True(t, lastVote(t, h.take()).Granted)
	})
}

// Issue 8, item 3: fast failover.
func TestFastFailover(t *testing.T) {
	fast := withPreVote
	t.Run("a leader that died for real is replaced within a heartbeat interval", func(t *testing.T) {
		nw := newNetwork(t, 5, 9, fast)
		l := nw.settle(5 * time.Second)
		term := l.core.Term()
		start := nw.now
		nw.crash(l, errCrashed)
		nl := nw.settle(5 * time.Second)
		assert.Equal(t, term+1, nl.core.Term(), "one round")
		assert.Less(t, nw.now.Sub(start), nl.core.cfg.ElectionTimeoutMin, "faster than any election timeout")
	})
	t.Run("without it the followers wait a full election timeout", func(t *testing.T) {
		nw := newNetwork(t, 5, 9, func(c *Config) { c.DisableFastFailover = true })
		l := nw.settle(5 * time.Second)
		start := nw.now
		nw.crash(l, errCrashed)
		nl := nw.settle(5 * time.Second)
		assert.GreaterOrEqual(t, nw.now.Sub(start), nl.core.cfg.ElectionTimeoutMin-nl.core.cfg.HeartbeatInterval)
	})
	t.Run("a lost connection to a live leader heard by a majority changes nothing", func(t *testing.T) {
		nw := newNetwork(t, 5, 10, fast)
		l := nw.settle(5 * time.Second)
		term := l.core.Term()
		f := nw.other(l)
		nw.input(f, func(c *Core, now time.Time) { c.PeerDown(now, l.pid, gen.ErrNoConnection) })
		assert.Equal(t, gen.PID{}, f.core.Leader())
		nw.run(f.core.cfg.HeartbeatInterval)
		assert.NotEmpty(t, sentOf[MessageRequestVote](f), "it asked for a pre-vote at once")
		nw.run(time.Second)
		assert.Same(t, l, nw.settle(time.Second))
		assert.Equal(t, term, l.core.Term())
		assert.Equal(t, l.pid, f.core.Leader(), "the follower follows again")
	})
}

// Fast failover without a race (issue 14): followers told of the leader's
// death at the same instant compute the same campaign order from the agreed
// view, and each waits its rank in steps of a fifth of HeartbeatInterval, so
// the first campaigns alone and its request arrives before the others' turn.
func TestFailoverCampaignsInRankOrder(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		nw := newNetwork(t, 5, seed, nil)
		l := nw.settle(5 * time.Second)
		nw.run(time.Second)
		nw.crash(l, errCrashed)
		var waits []time.Duration
		var orders [][]gen.Atom
		for _, name := range nw.names {
			sn := nw.nodes[name]
			if !sn.up {
				continue
			}
			waits = append(waits, sn.timers[TimerElection].at.Sub(nw.now))
			orders = append(orders, sn.core.failoverOrder(l.name))
		}
		for _, o := range orders[1:] {
			require.Equal(t, orders[0], o, "seed %d: every follower computes the same order", seed)
		}
		slices.Sort(waits)
		step := l.core.cfg.HeartbeatInterval / 5
		for i := 1; i < len(waits); i++ {
			require.GreaterOrEqual(t, waits[i]-waits[i-1], step-step/4, "seed %d: turns are a step apart: %v", seed, waits)
		}
		term := l.core.Term()
		next := nw.settle(time.Second)
		assert.Equal(t, orders[0][0], next.name, "seed %d: the first in the order leads", seed)
		assert.Equal(t, term+1, next.core.Term(), "seed %d: one round", seed)
	}
}

// Fast failover when the news of the leader's end reaches the members at
// different moments: a voter still following the dead leader refuses the
// first candidate, then answers it again once it is told, and the candidate
// does not count a refusal that names the leader it knows dead. Without
// this the round is lost and the cluster waits a full election timeout.
func TestFailoverSurvivesTheNewsArrivingLate(t *testing.T) {
	t.Run("a voter answers a request it refused for a live leader once that leader is down", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			reason error
			pre    bool
		}{{"pre-vote after a lost connection", gen.ErrNoConnection, true}, {"vote after a real end", errCrashed, false}} {
			t.Run(tc.name, func(t *testing.T) {
				h := newAgreed(t, 2, withPreVote)
				h.heartbeat(2, 1, h.stamp(), nil)
				h.take()
				h.step(3, MessageRequestVote{Header: hdr(3, 2, h.stamp()), PreVote: tc.pre})
				require.False(t, lastVote(t, h.take()).Granted, "its leader is live")
				assert.Equal(t, uint64(1), h.c.Term(), "a sticky refusal moves no term")
				h.advance(time.Millisecond)
				h.c.PeerDown(h.now, peerPID(2), tc.reason)
				v := lastVote(t, h.take())
				assert.True(t, v.Granted, "answered again once told")
				assert.Equal(t, tc.pre, v.PreVote)
				if !tc.pre {
					assert.Equal(t, uint64(2), h.c.Term())
					assert.Equal(t, procID(nodeName(3)), h.c.HardState().VotedFor)
				}
			})
		}
	})
	t.Run("a refused request older than ElectionTimeoutMin is not answered again", func(t *testing.T) {
		h := newAgreed(t, 2, withPreVote)
		h.heartbeat(2, 1, h.stamp(), nil)
		h.step(3, MessageRequestVote{Header: hdr(3, 2, h.stamp()), PreVote: true})
		h.take()
		h.advance(h.c.cfg.ElectionTimeoutMin)
		h.c.PeerDown(h.now, peerPID(2), gen.ErrNoConnection)
		assert.Empty(t, messagesOf[MessageVote](h.take()))
	})
	t.Run("a candidate does not count a refusal naming the leader it knows dead", func(t *testing.T) {
		// A refused vote carries the voter's older term and is dropped as
		// stale anyway; a refused pre-vote is what would end the round.
		h := preVotingOnItsLeadersEnd(t, 2)
		term := h.c.Term()
		h.step(3, MessageVote{Header: hdr(3, term, h.stamp()), PreVote: true, Leader: procID(nodeName(2))})
		assert.True(t, h.c.Status(h.now).PreVoting, "still asking: n3's real answer is to come")
		h.step(3, MessageVote{Header: hdr(3, term+1, h.stamp()), PreVote: true, Granted: true})
		assert.Equal(t, RoleCandidate, h.c.Role(), "the pre-vote won with n3's second answer")
		assert.Equal(t, term+1, h.c.Term())
	})
	t.Run("in a cluster, members told late still elect in one round", func(t *testing.T) {
		for _, reason := range []error{errCrashed, gen.ErrNoConnection} {
			for seed := uint64(1); seed <= 20; seed++ {
				nw := newNetwork(t, 5, seed, nil)
				l := nw.settle(5 * time.Second)
				nw.run(time.Second)
				term := l.core.Term()
				l.up = false
				// Only the first in the order learns at once; the others
				// are told one heartbeat later, after its requests reached
				// them.
				first := nw.nodes[nw.node(1).core.failoverOrder(l.name)[0]]
				nw.input(first, func(c *Core, now time.Time) { c.PeerDown(now, l.pid, reason) })
				nw.run(l.core.cfg.HeartbeatInterval)
				for _, name := range nw.names {
					if o := nw.nodes[name]; o.up && o != first {
						nw.input(o, func(c *Core, now time.Time) { c.PeerDown(now, l.pid, reason) })
					}
				}
				next := nw.settle(time.Second)
				assert.Same(t, first, next, "%v, seed %d", reason, seed)
				assert.Equal(t, term+1, next.core.Term(), "%v, seed %d: one round", reason, seed)
			}
		}
	})
}

// Fast failover: a dead process leads nothing. The runtime hands a monitor's
// down over before ordinary messages, so the down of a leader that ended
// right after a heartbeat is read first; that heartbeat must not make the
// dead process the live leader again (stickiness back for
// ElectionTimeoutMin, the failover timer replaced by a full timeout, the
// first candidate refused for good). Found by the adversarial review.
func TestHeartbeatReadAfterItsLeadersEndIsDropped(t *testing.T) {
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
	assert.Equal(t, uint64(1), h.c.Status(h.now).Dropped[dropUnexpected], "counted")
	assert.Equal(t, "", string(h.c.Leader().Node), "n1 does not follow a leader whose process it knows ended")
	// n3 campaigns at once (it learnt of the end first): n1 should grant.
	h.advance(time.Millisecond)
	h.step(3, MessageRequestVote{Header: hdr(3, 2, h.stamp())})
	assert.True(t, lastVote(t, h.take()).Granted, "n1 grants n3, not refusing it for a dead leader")
}

// Fast failover, in a cluster: whether the leader's last heartbeats are read
// before or after its members learn of its end, a new leader comes within a
// few heartbeat steps, below any election timeout.
func TestFailoverWhenTheDownOvertakesTheLastHeartbeat(t *testing.T) {
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

// Fast failover under load (issue 14): a follower told of its leader's end
// that grants a pre-vote yields its ranked turn to that candidate and waits a
// full election timeout, as after granting a vote. When messages take longer
// than a rank step (a node that hosts a thousand clusters and just lost one
// of its peers), the next in the order would otherwise campaign while the
// first one's real round is under way, split its votes, and cost the
// cluster an election timeout.
func TestFailoverTurnYieldsToAGrantedPreVote(t *testing.T) {
	t.Run("a follower told of its leader's end that grants a pre-vote waits a full election timeout", func(t *testing.T) {
		h := newAgreed(t, 4, withPreVote)
		h.heartbeat(2, 1, h.stamp(), nil)
		h.take()
		h.advance(time.Millisecond)
		h.c.PeerDown(h.now, peerPID(2), gen.ErrNoConnection)
		h.take()
		require.Less(t, h.due[TimerElection].Sub(h.now), h.c.cfg.ElectionTimeoutMin, "its ranked turn is armed")
		h.step(3, MessageRequestVote{Header: hdr(3, 2, h.stamp()), PreVote: true})
		require.True(t, lastVote(t, h.take()).Granted)
		assert.GreaterOrEqual(t, h.due[TimerElection].Sub(h.now), h.c.cfg.ElectionTimeoutMin, "the turn is given up")
		h.fire(TimerElection)
		assert.True(t, h.c.Status(h.now).PreVoting, "the regular timeout still campaigns if the candidate fails")
	})
	t.Run("a pre-vote granted for a leader gone silent, not reported down, moves no timer", func(t *testing.T) {
		h := newAgreed(t, 4, withPreVote)
		h.heartbeat(2, 1, h.stamp(), nil)
		h.take()
		due := h.due[TimerElection]
		h.advance(h.c.cfg.ElectionTimeoutMin)
		h.step(3, MessageRequestVote{Header: hdr(3, 2, h.stamp()), PreVote: true})
		require.True(t, lastVote(t, h.take()).Granted)
		assert.Equal(t, due, h.due[TimerElection])
	})
	t.Run("a member already asking for pre-votes keeps asking", func(t *testing.T) {
		h := preVotingOnItsLeadersEnd(t, 4)
		due := h.due[TimerElection]
		h.step(3, MessageRequestVote{Header: hdr(3, 2, h.stamp()), PreVote: true})
		h.take()
		assert.True(t, h.c.Status(h.now).PreVoting)
		assert.Equal(t, due, h.due[TimerElection])
	})
}

// preVotingOnItsLeadersEnd is a member of an agreed cluster of peers+1
// whose leader, member 2, was reported down and which is asking for
// pre-votes.
func preVotingOnItsLeadersEnd(t *testing.T, peers int) *harness {
	t.Helper()
	h := newAgreed(t, peers, withPreVote)
	h.heartbeat(2, 1, h.stamp(), nil)
	h.take()
	h.c.PeerDown(h.now, peerPID(2), gen.ErrNoConnection)
	h.take()
	h.fire(TimerElection)
	require.True(t, h.c.Status(h.now).PreVoting)
	return h
}
