package election

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// "HeartbeatInterval ... must be comfortably smaller than ElectionTimeoutMin
// ...; the actor warns at startup if it is not": a warning, not a refusal.
func TestSlowHeartbeatIsTheUsersChoice(t *testing.T) {
	slow := func(c *Config) { c.HeartbeatInterval = 2 * c.ElectionTimeoutMin }

	t.Run("a heartbeat not below the election timeout is accepted", func(t *testing.T) {
		cfg := testConfig(nodeName(1), 1)
		slow(&cfg)
		require.NoError(t, cfg.Validate())
		_, err := New(cfg, peerPID(1), HardState{}, epoch)
		require.NoError(t, err)
	})

	t.Run("a leader answered on every heartbeat keeps its quorum at a slow pace", func(t *testing.T) {
		h := newAgreed(t, 2, slow)
		term := h.lead(2, 3)
		for range 5 {
			h.fire(TimerHeartbeat)
			require.Equal(t, RoleLeader, h.c.Role(), "its own pace cost it the quorum")
			for _, p := range []int{2, 3} {
				h.step(p, MessageHeartbeatAck{Header: hdr(p, term, h.stamp())})
			}
		}
		assert.Zero(t, h.c.Status(h.now).QuorumLostStepDowns)
	})

	t.Run("a cluster still elects, one leader per term, despite spurious elections", func(t *testing.T) {
		nw := newNetwork(t, 5, 21, slow)
		nw.run(20 * time.Second) // the network fails the test on two leaders in a term
		var won uint64
		for _, name := range nw.names {
			won += nw.nodes[name].core.Status(nw.now).ElectionsWon
		}
		assert.Positive(t, won)
		assert.NotEmpty(t, nw.leads)
	})
}

var (
	preferOldest    = Preference{Kind: PreferOldest}
	preferHighestID = Preference{Kind: PreferHighestID}
	// preferLowestName ranks by the reverse of PreferHighestID, so a test can
	// tell the user's function from the built-in rule.
	preferLowestName = Preference{Kind: PreferFunc, Less: func(a, b Candidate) bool { return a.Node < b.Node }}
)

// startOrder gives members start times that follow neither name order:
// n3 is the oldest, then n1, n5, n2, n4.
var startOrder = map[gen.Atom]time.Duration{
	nodeName(3): 0, nodeName(1): 1, nodeName(5): 2, nodeName(2): 3, nodeName(4): 4,
}

// preferring applies p and the start times of startOrder.
func preferring(p Preference, more ...func(*Config)) func(*Config) {
	return func(c *Config) {
		c.Prefer = p
		c.Started = epoch.Add(-time.Hour + startOrder[c.Self.Node]*time.Second)
		for _, f := range more {
			f(c)
		}
	}
}

// candidateOf is sn as its peers rank it.
func candidateOf(sn *simNode) Candidate {
	return Candidate{Node: sn.name, ProcessID: sn.core.cfg.Self, Started: startedTime(startedNanos(sn.core.cfg.Started))}
}

// mostPreferred is the live member p ranks first, leaving out members cut
// off from every other.
func (nw *network) mostPreferred(p Preference) *simNode {
	var best *simNode
	for _, name := range nw.names {
		sn := nw.nodes[name]
		if sn.up && !nw.cutOff(sn) && (best == nil || p.Prefers(candidateOf(sn), candidateOf(best))) {
			best = sn
		}
	}
	return best
}

// cutOff reports whether sn can reach no other live member.
func (nw *network) cutOff(sn *simNode) bool {
	for _, name := range nw.names {
		if o := nw.nodes[name]; o != sn && o.up && !nw.cut[[2]gen.Atom{sn.name, name}] {
			return false
		}
	}
	return true
}

// settleOnPreferred runs until the most preferred live member leads and every
// live member follows it, then keeps running for twice the steadiness window
// and checks that leadership stays put.
func (nw *network) settleOnPreferred(t *testing.T, p Preference, limit time.Duration) *simNode {
	t.Helper()
	want := nw.mostPreferred(p)
	end := nw.now.Add(limit)
	for {
		nw.run(10 * time.Millisecond)
		if l := nw.leaders(); len(l) == 1 && l[0] == want && nw.agree(want) {
			break
		}
		require.True(t, nw.now.Before(end), "leadership did not settle on %s within %s: %v", want.name, limit, nw.roles())
	}
	term := want.core.Term()
	nw.run(2 * want.core.cfg.PreferStableFor)
	require.Equal(t, []*simNode{want}, nw.leaders(), "leadership moved on from the most preferred member")
	require.Equal(t, term, want.core.Term())
	return want
}

// handovers counts the preferred handovers made by every core that ever ran,
// including those since replaced by a restart.
type handovers struct {
	nw      *network
	retired uint64
}

func (h *handovers) total() uint64 {
	n := h.retired
	for _, name := range h.nw.names {
		n += h.nw.nodes[name].core.Status(h.nw.now).PreferredTransfers
	}
	return n
}

// restart replaces sn with a fresh core on the same node, started now, with
// its persisted state.
func (h *handovers) restart(sn *simNode, seed uint64) *simNode {
	h.retired += sn.core.Status(h.nw.now).PreferredTransfers
	cfg := sn.core.cfg
	cfg.Started = h.nw.now
	cfg.Rand = testConfig(sn.name, seed).Rand
	return h.nw.add(cfg, sn.hs)
}

var preferences = []struct {
	name string
	p    Preference
}{
	{"oldest", preferOldest},
	{"highest id", preferHighestID},
	{"a user function", preferLowestName},
}

// "A leader that sees a reachable, more-preferred member that has been stable
// for a window hands leadership to it."
func TestLeadershipSettlesOnMostPreferredMember(t *testing.T) {
	for i, tc := range preferences {
		t.Run("preferring "+tc.name+" the cluster settles on the first in that order", func(t *testing.T) {
			nw := newNetwork(t, 5, uint64(30+i), preferring(tc.p))
			count := &handovers{nw: nw}
			l := nw.settleOnPreferred(t, tc.p, 20*time.Second)
			assert.LessOrEqual(t, count.total(), uint64(1), "one handover at most, not a chain")
			s := l.core.Status(nw.now)
			assert.Equal(t, tc.p.Kind, s.Prefer)
			assert.Equal(t, 2*l.core.cfg.ElectionTimeoutMax, s.PreferStableFor, "the default window")
		})
	}
}

// "Test: 5 members restarted one by one in a loop: leadership settles on the
// most preferred live member, with at most one handover per membership change."
func TestRollingRestartsHandOverAtMostOncePerChange(t *testing.T) {
	for i, tc := range preferences {
		t.Run("preferring "+tc.name+" each stop and each start moves leadership at most once", func(t *testing.T) {
			seed := uint64(40 + i)
			nw := newNetwork(t, 5, seed, preferring(tc.p))
			count := &handovers{nw: nw}
			nw.settleOnPreferred(t, tc.p, 20*time.Second)
			for round := range 2 {
				for j := 1; j <= 5; j++ {
					sn := nw.node(j)
					before := count.total()
					nw.crash(sn, gen.ErrNoConnection)
					nw.settleOnPreferred(t, tc.p, 20*time.Second)
					assert.LessOrEqual(t, count.total()-before, uint64(1), "round %d: handovers after %s stopped", round, sn.name)

					before = count.total()
					count.restart(sn, seed*1000+uint64(round*10+j))
					nw.settleOnPreferred(t, tc.p, 20*time.Second)
					assert.LessOrEqual(t, count.total()-before, uint64(1), "round %d: handovers after %s started", round, sn.name)
				}
			}
			assert.Positive(t, count.total(), "the restarts moved the preferred member at least once")
		})
	}
}

// A more preferred member whose replies keep breaking off is not stable: it
// gets leadership only once it has answered steadily for PreferStableFor.
func TestFlappingPreferredMemberWaitsUntilStable(t *testing.T) {
	nw := newNetwork(t, 5, 50, preferring(preferHighestID, withPreVote))
	count := &handovers{nw: nw}
	n4, n5 := nw.node(4), nw.node(5)
	nw.isolate(n5)
	require.Same(t, n4, nw.settleOnPreferred(t, preferHighestID, 20*time.Second), "n5 is cut off, so n4 is the most preferred reachable")
	before := count.total()

	stable := n4.core.cfg.PreferStableFor
	window := n4.core.cfg.evidenceWindow()
	for range 8 {
		nw.heal()
		nw.run(stable / 3)
		nw.isolate(n5)
		nw.run(2 * window)
		require.Equal(t, []*simNode{n4}, nw.leaders(), "leadership moved to a member that is not stable")
	}
	assert.Equal(t, before, count.total())

	nw.heal()
	nw.run(stable + 2*n4.core.cfg.HeartbeatInterval)
	assert.Equal(t, []*simNode{n5}, nw.leaders(), "once steady, the preferred member leads")
	assert.Equal(t, before+1, count.total())
	assert.Equal(t, uint64(1), n4.core.Status(nw.now).PreferredTransfers)
}

func TestNoPreferenceNeverHandsOver(t *testing.T) {
	nw, l := settledLeader(t, 5, 60, func(c *Config) { c.Started = epoch.Add(-startOrder[c.Self.Node] * time.Second) })
	count := &handovers{nw: nw}
	term := l.core.Term()
	count.restart(nw.other(l), 61)
	nw.run(10 * time.Second)
	assert.Equal(t, []*simNode{l}, nw.leaders())
	assert.Equal(t, term, l.core.Term())
	assert.Zero(t, count.total())
	assert.Equal(t, PreferNone, l.core.Status(nw.now).Prefer)
}

// The rule itself, tick by tick, on one leader whose peers the test plays.
func TestPreferredHandoverRule(t *testing.T) {
	// tickUntilHandover fires heartbeat ticks, with acks from peers after each
	// (telling start time started), until the leader hands over or limit
	// passes; it returns the MessageTimeoutNow sent.
	tickUntilHandover := func(h *harness, term uint64, started int64, limit time.Duration, peers ...int) []Outbound {
		end := h.now.Add(limit)
		for h.now.Before(end) && h.c.IsLeader() {
			h.fire(TimerHeartbeat)
			for _, p := range peers {
				h.step(p, MessageHeartbeatAck{Header: withStarted(hdr(p, term, h.stamp()), started)})
			}
		}
		return messagesOf[MessageTimeoutNow](h.take())
	}

	t.Run("the most preferred steady member gets MessageTimeoutNow, after the window", func(t *testing.T) {
		h := newAgreed(t, 2, func(c *Config) { c.Prefer = preferHighestID })
		term := h.lead(2, 3)
		start := h.now
		sent := tickUntilHandover(h, term, 1, 10*time.Second, 2, 3)
		require.Len(t, sent, 1)
		assert.Equal(t, peerPID(3), sent[0].To, "n3 ranks above n2")
		assert.Equal(t, term, sent[0].Message.(MessageTimeoutNow).Term)
		assert.GreaterOrEqual(t, h.now.Sub(start), h.c.cfg.PreferStableFor)
		assert.Equal(t, RoleFollower, h.c.Role())
		assert.Equal(t, uint64(1), h.c.Status(h.now).PreferredTransfers)
	})

	t.Run("a leader that ranks first keeps leading", func(t *testing.T) {
		h := newAgreed(t, 2, func(c *Config) { c.Prefer = preferLowestName })
		term := h.lead(2, 3)
		assert.Empty(t, tickUntilHandover(h, term, 1, 10*time.Second, 2, 3))
		assert.True(t, h.c.IsLeader())
	})

	t.Run("while a more preferred member is reachable but not steady, a lesser one is not chosen", func(t *testing.T) {
		h := newAgreed(t, 3, func(c *Config) { c.Prefer = preferHighestID })
		term := h.lead(2, 3)
		stable := h.c.cfg.PreferStableFor
		// n4 answers only from half-way through n2's and n3's steady run.
		assert.Empty(t, tickUntilHandover(h, term, 1, stable/2, 2, 3))
		sent := tickUntilHandover(h, term, 1, 10*time.Second, 2, 3, 4)
		require.Len(t, sent, 1)
		assert.Equal(t, peerPID(4), sent[0].To)
	})

	t.Run("a member whose start time is unknown is not ranked by age", func(t *testing.T) {
		h := newAgreed(t, 2, preferring(preferOldest))
		term := h.lead(2, 3)
		assert.Empty(t, tickUntilHandover(h, term, 0, 10*time.Second, 2, 3))
		assert.True(t, h.c.IsLeader())

		// Once n3 tells its start time, the oldest, it is steady afresh and then preferred.
		n3Started := epoch.Add(-time.Hour + startOrder[nodeName(3)]*time.Second).UnixNano()
		sent := tickUntilHandover(h, term, n3Started, 10*time.Second, 3)
		require.Len(t, sent, 1)
		assert.Equal(t, peerPID(3), sent[0].To)
	})
}

func TestPreferenceOrder(t *testing.T) {
	a := Candidate{Node: "a@h", Started: epoch}
	b := Candidate{Node: "b@h", Started: epoch}
	older := Candidate{Node: "z@h", Started: epoch.Add(-time.Second)}
	t.Run("oldest prefers the earlier start and breaks ties by the lower name", func(t *testing.T) {
		assert.True(t, preferOldest.Prefers(older, a))
		assert.True(t, preferOldest.Prefers(a, b))
		assert.False(t, preferOldest.Prefers(b, a))
		assert.False(t, preferOldest.Prefers(a, a))
	})
	t.Run("highest id prefers the higher name", func(t *testing.T) {
		assert.True(t, preferHighestID.Prefers(b, a))
		assert.False(t, preferHighestID.Prefers(a, b))
	})
	t.Run("none prefers nobody", func(t *testing.T) {
		assert.False(t, Preference{}.Prefers(a, b))
		assert.False(t, Preference{}.Prefers(b, a))
	})
	t.Run("kinds have readable names", func(t *testing.T) {
		assert.Equal(t, "highest-id", PreferHighestID.String())
		assert.Equal(t, "none", PreferNone.String())
	})
}

// Every message a member sends tells its start time.
func TestMessagesCarryStartTime(t *testing.T) {
	started := epoch.Add(-time.Minute)
	h := newAgreed(t, 2, func(c *Config) { c.Started = started })
	term := h.lead(2, 3)
	h.requestVote(2, term+1, h.stamp())
	h.heartbeat(3, term+1, h.stamp(), nil)
	rd := h.take()
	h.step(2, MessageHeartbeatAck{Header: withStarted(hdr(2, term+1, h.stamp()), started.Add(time.Second).UnixNano())})
	var kinds []string
	for _, o := range rd.Messages {
		var got int64
		switch m := o.Message.(type) {
		case MessageRequestVote:
			got = m.Started
		case MessageVote:
			got = m.Started
		case MessageHeartbeat:
			got = m.Started
		case MessageHeartbeatAck:
			got = m.Started
		default:
			continue
		}
		kinds = append(kinds, typeName(o.Message))
		assert.Equal(t, started.UnixNano(), got, "%T", o.Message)
	}
	assert.Subset(t, kinds, []string{"vote request", "vote", "heartbeat", "ack"})
	for _, m := range h.c.Members() {
		if m.Node == nodeName(2) {
			assert.True(t, started.Add(time.Second).Equal(m.Started), "a peer's start time is learned from its messages")
		}
	}
}

func typeName(msg any) string {
	switch msg.(type) {
	case MessageRequestVote:
		return "vote request"
	case MessageVote:
		return "vote"
	case MessageHeartbeat:
		return "heartbeat"
	case MessageHeartbeatAck:
		return "ack"
	}
	return "other"
}
