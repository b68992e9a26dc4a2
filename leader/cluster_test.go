package leader_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/act"
	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
)

// "There is exactly one leader per cluster."
func TestElectsOneLeader(t *testing.T) {
	for _, size := range []int{3, 5} {
		t.Run(strconv.Itoa(size)+" members elect one leader that all follow", func(t *testing.T) {
			c := newCluster(t, size, defaults)
			leaderIdx, term := c.waitOneLeader(all(size))
			assert.NotEqual(t, "0", term)
			assert.Equal(t, 1, c.events.count(string(c.nodes[leaderIdx].Name())+" leader"))
		})
	}
}

// "Note over A: crash ... B: no heartbeat within ElectionTimeout ... leader at term 2":
// when the leader's node dies, a survivor leads at a higher term. Every
// follower needed the news at once: none of it was held back
// (downhold_test.go).
func TestLeaderNodeKilledSurvivorLeadsAtHigherTerm(t *testing.T) {
	c := newCluster(t, 5, defaults)
	first, term := c.waitOneLeader(all(5))
	c.nodes[first].StopForce()
	survivors := without(all(5), first)
	next, nextTerm := c.waitOneLeader(survivors)
	assert.NotEqual(t, first, next)
	assert.Greater(t, atoi(t, nextTerm), atoi(t, term))
	assert.Zero(t, c.heldDowns(survivors))
}

// "No leader below the floor. A group smaller than MinClusterSize reports
// unclustered and elects nobody."
func TestMinClusterSizeFloor(t *testing.T) {
	c := newCluster(t, 2, defaults) // MinClusterSize defaults to 3; a view of 2 is below it
	require.Eventually(t, func() bool {
		return c.inspect(0, "ergo:view_size")["ergo:view_size"] == "2" && c.inspect(1, "ergo:view_size")["ergo:view_size"] == "2"
	}, settle, poll)
	for i := 0; i < 2; i++ {
		assert.Equal(t, "unclustered", c.inspect(i, "ergo:state")["ergo:state"])
	}
	// A third member joins; the view reaches the floor and one leader is elected.
	c.nodes = append(c.nodes, c.startNode("m2@127.0.0.1"))
	c.pids = append(c.pids, c.spawn(2, leader.Options{ClusterID: "test", Bootstrap: []gen.ProcessID{{Name: memberName, Node: c.nodes[0].Name()}}}))
	c.waitOneLeader(all(3))
}

// "HandleConfirmLeader ... Returning false, or an error, withholds it:
// HandleBecomeLeader does not run and the node re-campaigns after a backoff."
func TestConfirmLeaderDenyThenAllow(t *testing.T) {
	var denials atomic.Int32
	c := newCluster(t, 3, defaults, func(i int, m *member) {
		m.confirm = func() (bool, error) {
			if denials.Add(1) <= 3 {
				return false, nil
			}
			return true, nil
		}
	})
	leaderIdx, _ := c.waitOneLeader(all(3))
	assert.GreaterOrEqual(t, denials.Load(), int32(4))
	total := 0
	for i := 0; i < 3; i++ {
		n, err := strconv.Atoi(c.inspect(i, "ergo:confirm_denied")["ergo:confirm_denied"])
		require.NoError(t, err)
		total += n
	}
	assert.Equal(t, 3, total, "every denial is counted in ergo:confirm_denied")
	assert.Equal(t, 1, c.events.count(string(c.nodes[leaderIdx].Name())+" leader"), "HandleBecomeLeader runs only once leadership is confirmed")
}

// "HandleBecomeLeader ... Returning an error rolls the transition back: the
// actor steps down again and the error terminates it."
func TestBecomeLeaderErrorTerminatesTheActor(t *testing.T) {
	var refused atomic.Int32
	c := newCluster(t, 3, defaults, func(i int, m *member) {
		m.onLead = func() error {
			if refused.Add(1) == 1 {
				return errRefused
			}
			return nil
		}
	})
	var gone int = -1
	require.Eventually(t, func() bool {
		for i := range c.pids {
			if _, err := c.nodes[i].ProcessInfo(c.pids[i]); err != nil {
				gone = i
				return true
			}
		}
		return false
	}, settle, poll, "the member whose HandleBecomeLeader failed must terminate")
	// The refusing member ended with a real reason, so the survivors drop it
	// at once ("a death reported with an actual reason removes the member
	// immediately"): their view is 2, below the floor of 3.
	for _, i := range without(all(3), gone) {
		require.Eventually(t, func() bool {
			return c.inspect(i, "ergo:view_size")["ergo:view_size"] == "2"
		}, settle, poll)
	}
}

// Setup: "The actor checks this at Init and refuses to start if its protocol
// is not registered."
func TestInitRefusesUnregisteredProtocol(t *testing.T) {
	c := &testCluster{t: t, events: &eventLog{}}
	n, err := startPlainNode("bare@127.0.0.1")
	require.NoError(t, err)
	defer n.Stop()
	c.nodes = []gen.Node{n}
	_, err = n.SpawnRegister(memberName, func() gen.ProcessBehavior {
		return &member{opts: leader.Options{ClusterID: "test"}, events: c.events}
	}, gen.ProcessOptions{})
	require.ErrorIs(t, err, gen.ErrUnregistered)
	assert.Contains(t, err.Error(), "RegisterTypes")
}

// Init errors: bad options and an unregistered actor are clear errors from Init.
func TestInitRejectsBadOptions(t *testing.T) {
	c := newCluster(t, 1, func(int) leader.Options { return leader.Options{ClusterID: "test", MinClusterSize: 1} })
	_, err := c.nodes[0].SpawnRegister("other", func() gen.ProcessBehavior {
		return &member{opts: leader.Options{}, events: c.events}
	}, gen.ProcessOptions{})
	require.ErrorIs(t, err, gen.ErrIncorrect)
	assert.Contains(t, err.Error(), "ClusterID")

	_, err = c.nodes[0].Spawn(func() gen.ProcessBehavior {
		return &member{opts: leader.Options{ClusterID: "x"}, events: c.events}
	}, gen.ProcessOptions{})
	require.ErrorIs(t, err, gen.ErrIncorrect)
	assert.Contains(t, err.Error(), "SpawnRegister")
}

// MinClusterSize 1: "lets a lone node appoint itself."
func TestLoneNodeWithMinClusterSizeOne(t *testing.T) {
	c := newCluster(t, 1, func(int) leader.Options { return leader.Options{ClusterID: "solo", MinClusterSize: 1} })
	c.waitOneLeader([]int{0})
	assert.Equal(t, "1", c.inspect(0, "ergo:quorum")["ergo:quorum"])
}

// Observability: "Passing item names returns only those keys; pass help for
// the list, and an unknown item comes back as <unknown item>"; user keys merge on top.
func TestInspection(t *testing.T) {
	c := newCluster(t, 3, defaults)
	leaderIdx, term := c.waitOneLeader(all(3))

	full := c.inspect(leaderIdx)
	for _, key := range leader.InspectKeys() {
		assert.Contains(t, full, key)
	}
	assert.Equal(t, "recorded", full["user:callbacks"], "the user's HandleInspect keys are merged")
	assert.Equal(t, "leader", full["ergo:state"])
	assert.Equal(t, "true", full["ergo:leader"])
	assert.Equal(t, term, full["ergo:term"])
	assert.Equal(t, "test", full["ergo:cluster"])
	assert.Equal(t, "3", full["ergo:view_size"])
	assert.Equal(t, "2", full["ergo:quorum"])
	assert.Equal(t, "3", full["ergo:min_cluster_size"])
	assert.Equal(t, "2", full["ergo:peers"])
	assert.Equal(t, "true", full["ergo:heartbeat_timer_armed"])
	assert.Equal(t, term, full["ergo:fencing_token"])

	some := c.inspect(leaderIdx, "ergo:term", "nonsense", "help")
	assert.Equal(t, term, some["ergo:term"])
	assert.Equal(t, "<unknown item>", some["nonsense"])
	assert.Contains(t, some["help"], "ergo:dropped_by_reason")
	assert.NotContains(t, some, "ergo:state", "only the named items are returned")

	follower := (leaderIdx + 1) % 3
	f := c.inspect(follower)
	assert.Equal(t, "follower", f["ergo:state"])
	assert.Equal(t, "false", f["ergo:leader"])
	assert.Equal(t, string(c.nodes[leaderIdx].Name()), f["ergo:leader_node"])
	assert.Equal(t, "true", f["ergo:election_timer_armed"])
	assert.NotEqual(t, "never", f["ergo:heartbeat_in_last"])
	assert.Equal(t, "0", f["ergo:fencing_token"])
}

// Cluster-wide inspection from one node reaches every member.
func TestInspectCluster(t *testing.T) {
	c := newCluster(t, 3, defaults)
	leaderIdx, term := c.waitOneLeader(all(3))
	got, err := leader.InspectCluster(c.nodes[0], c.pids[0], "ergo:state", "ergo:term")
	require.NoError(t, err)
	require.Len(t, got, 3)
	leaders := 0
	for _, m := range got {
		require.NoError(t, m.Err, "member %s", m.Node)
		assert.Equal(t, term, m.Inspection["ergo:term"])
		if m.Inspection["ergo:state"] == "leader" {
			leaders++
			assert.Equal(t, c.nodes[leaderIdx].Name(), m.Node)
		}
	}
	assert.Equal(t, 1, leaders)
	found, err := leader.Find(c.nodes[1])
	require.NoError(t, err)
	assert.Equal(t, []gen.PID{c.pids[1]}, found)
	pid, ok := leader.FindCluster(c.nodes[1], "test")
	assert.True(t, ok)
	assert.Equal(t, c.pids[1], pid, "FindCluster names the actor of the cluster")
	_, ok = leader.FindCluster(c.nodes[1], "elsewhere")
	assert.False(t, ok, "and no actor for a cluster the node is not in")
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	v, err := strconv.Atoi(strings.TrimSpace(s))
	require.NoError(t, err)
	return v
}

// "Diverged views do [elect two leaders] ... That is the cold-start case";
// "When the two sides can talk again, the higher term wins and the other side
// steps down."
func TestDivergedColdStartConvergesToOneLeader(t *testing.T) {
	group := func(i int) leader.Options {
		o := leader.Options{ClusterID: "test"}
		base := (i / 3) * 3
		for j := base; j < base+3; j++ {
			if j != i {
				o.Bootstrap = append(o.Bootstrap, gen.ProcessID{Name: memberName, Node: gen.Atom("m" + strconv.Itoa(j) + "@127.0.0.1")})
			}
		}
		return o
	}
	c := newCluster(t, 6, group)
	a, _ := c.waitOneLeader([]int{0, 1, 2})
	b, _ := c.waitOneLeader([]int{3, 4, 5})
	assert.Len(t, c.leaders(all(6)), 2, "two groups that never knew each other each elect: %d and %d", a, b)

	// Discovery now resolves every node everywhere, as a discovery loop
	// re-running Join would: each member joins the members of the other group.
	for i := 0; i < 6; i++ {
		for j := 0; j < 6; j++ {
			if i/3 != j/3 {
				require.NoError(t, leader.JoinPeer(c.nodes[i], c.pids[i], gen.ProcessID{Name: memberName, Node: c.nodes[j].Name()}))
			}
		}
	}
	c.waitOneLeader(all(6))
	for i := 0; i < 6; i++ {
		require.Eventually(t, func() bool { return c.inspect(i, "ergo:view_size")["ergo:view_size"] == "6" }, settle, poll, "member %d", i)
	}
}

// Membership: "two rolling deploys of a five-node cluster leave a view of
// thirteen ... GhostTTL bounds it."
func TestRollingDeploysGhostTTLRestoresTheView(t *testing.T) {
	opts := func(int) leader.Options { return leader.Options{ClusterID: "test", GhostTTL: 1000} }
	c := newCluster(t, 5, opts)
	c.waitOneLeader(all(5))
	alive := all(5)
	for deploy := 0; deploy < 2; deploy++ {
		for k := 0; k < 5; k++ {
			old := alive[0]
			c.nodes[old].StopForce() // everything on a lost node reads as ErrNoConnection
			alive = alive[1:]
			idx := len(c.nodes)
			c.nodes = append(c.nodes, c.startNode(gen.Atom("m"+strconv.Itoa(idx)+"@127.0.0.1")))
			o := opts(idx)
			for _, j := range alive {
				o.Bootstrap = append(o.Bootstrap, gen.ProcessID{Name: memberName, Node: c.nodes[j].Name()})
			}
			c.pids = append(c.pids, c.spawn(idx, o))
			alive = append(alive, idx)
			// A deploy that waits for the replacement to be admitted and the
			// ghost to be dropped, as a readiness gate would: replacing a
			// majority of the view faster than GhostTTL, without Leave, would
			// leave a view whose quorum the living cannot assemble.
			leaderIdx, _ := c.waitOneLeader(alive)
			require.Eventually(t, func() bool {
				v := c.inspect(leaderIdx, "ergo:view_size", "ergo:view_members", "ergo:view_committed")
				return v["ergo:view_size"] == "5" && v["ergo:view_committed"] == "true" &&
					!strings.Contains(v["ergo:view_members"], string(c.nodes[old].Name())+">")
			}, settle, poll, "the view holds the five living members")
		}
	}
	for _, i := range alive {
		var v map[string]string
		require.Eventually(t, func() bool {
			v = c.inspect(i, "ergo:view_size", "ergo:unreachable", "ergo:peers_list", "ergo:declared")
			return v["ergo:view_size"] == "5"
		}, settle, poll, "member %d keeps ghosts past GhostTTL: %v", i, v)
	}
	c.waitOneLeader(alive)
}

// Issue 8: with ConfirmInterval, a leader whose external lease is lost
// mid-term stops leading, and another member takes over.
func TestReconfirmLosesLeadershipMidTerm(t *testing.T) {
	var revoked atomic.Value // gen.Atom of the node whose lease is gone
	revoked.Store(gen.Atom(""))
	c := newCluster(t, 3, func(int) leader.Options { return leader.Options{ClusterID: "test", ConfirmInterval: 100} },
		func(i int, m *member) {
			m.confirm = func() (bool, error) {
				if revoked.Load().(gen.Atom) == m.Node().Name() {
					return false, nil
				}
				return true, nil
			}
		})
	first, _ := c.waitOneLeader(all(3))
	revoked.Store(c.nodes[first].Name())
	require.Eventually(t, func() bool {
		ls := c.leaders(all(3))
		return len(ls) == 1 && ls[0] != first
	}, settle, poll, "another member leads once the first loses its lease")
	assert.NotEqual(t, "0", c.inspect(first, "ergo:confirm_denied")["ergo:confirm_denied"])
}

// Issue 8: a process that does not embed the actor subscribes to (leader,
// term) changes with MessageSubscribe and gets MessageLeaderChanged.
func TestSubscriberIsToldOfLeaderChanges(t *testing.T) {
	c := newCluster(t, 3, defaults)
	leaderIdx, term := c.waitOneLeader(all(3))
	watcherNode := c.startNode("watcher@127.0.0.1")
	defer watcherNode.Stop()
	changes := make(chan leader.MessageLeaderChanged, 64)
	watcher, err := watcherNode.Spawn(func() gen.ProcessBehavior { return &subscriber{changes: changes} }, gen.ProcessOptions{})
	require.NoError(t, err)
	follower := (leaderIdx + 1) % 3
	require.NoError(t, watcherNode.Send(c.pids[follower], leader.MessageSubscribe{Subscriber: watcher}))

	var got leader.MessageLeaderChanged
	require.Eventually(t, func() bool {
		select {
		case got = <-changes:
			return true
		default:
			return false
		}
	}, settle, poll, "the current state arrives when the subscription starts")
	assert.Equal(t, c.nodes[leaderIdx].Name(), got.LeaderNode)
	assert.Equal(t, term, strconv.FormatUint(got.Term, 10))
	assert.Equal(t, "test", got.ClusterID)

	c.nodes[leaderIdx].StopForce()
	require.Eventually(t, func() bool {
		select {
		case got = <-changes:
			return got.Term > uint64(atoi(t, term)) && got.LeaderNode != "" && got.LeaderNode != c.nodes[leaderIdx].Name()
		default:
			return false
		}
	}, settle, poll, "a new leader at a higher term is reported across the network")
}

// Issue 8: with StateFile, a restarted member starts at the term it had
// rather than at 0, so fencing tokens stay monotonic across restarts.
func TestStateFileKeepsTheTermAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	opts := func(i int) leader.Options {
		return leader.Options{ClusterID: "test", StateFile: fmt.Sprintf("%s/m%d.state", dir, i)}
	}
	c := newCluster(t, 3, opts)
	_, term := c.waitOneLeader(all(3))
	// Every member goes away, so nothing can tell the restarted one the term.
	for i := range c.pids {
		require.NoError(t, c.nodes[i].Kill(c.pids[i]))
		require.Eventually(t, func() bool { _, err := c.nodes[i].ProcessInfo(c.pids[i]); return err != nil }, settle, poll)
	}
	o := opts(0)
	o.Bootstrap = []gen.ProcessID{{Name: memberName, Node: c.nodes[1].Name()}, {Name: memberName, Node: c.nodes[2].Name()}}
	c.pids[0] = c.spawn(0, o)
	assert.GreaterOrEqual(t, atoi(t, c.inspect(0, "ergo:term")["ergo:term"]), atoi(t, term), "the restarted member starts at the term it had, not at 0")
}

// subscriber forwards MessageLeaderChanged to a channel the test reads.
type subscriber struct {
	act.Actor
	changes chan leader.MessageLeaderChanged
}

func (s *subscriber) HandleMessage(from gen.PID, message any) error {
	if m, ok := message.(leader.MessageLeaderChanged); ok {
		s.changes <- m
	}
	return nil
}

// Issue 8, preferred leader: with PreferHighestID leadership settles on the
// member with the highest node name, whoever won the first election.
func TestPreferredLeaderSettlesOnTheHighestID(t *testing.T) {
	c := newCluster(t, 3, func(int) leader.Options {
		return leader.Options{ClusterID: "test", Prefer: leader.Preference{Kind: leader.PreferHighestID}, PreferStableFor: 300}
	})
	require.Eventually(t, func() bool {
		ls := c.leaders(all(3))
		return len(ls) == 1 && ls[0] == 2
	}, settle, poll, "m2@127.0.0.1 has the highest name")
	c.waitOneLeader(all(3))
	assert.Equal(t, "highest-id", c.inspect(2, "ergo:prefer")["ergo:prefer"])
}

// Issue 8, graceful handover: a leader whose node stops normally tells a
// reachable peer to campaign at once. Here only member 0 has short election
// timeouts (so it wins first) and fast failover is off: without the handover
// the others would wait a minute before campaigning.
func TestNormalStopHandsLeadershipOver(t *testing.T) {
	c := newCluster(t, 5, func(i int) leader.Options {
		o := leader.Options{ClusterID: "test", DisableFastFailover: true}
		if i > 0 {
			o.ElectionTimeoutMin, o.ElectionTimeoutMax = 60000, 120000
		}
		return o
	})
	first, term := c.waitOneLeader(all(5))
	require.Equal(t, 0, first, "only member 0 campaigns within the test's bounds")
	c.nodes[first].Stop()
	next, nextTerm := c.waitOneLeader(without(all(5), first))
	assert.NotEqual(t, first, next)
	assert.Equal(t, atoi(t, term)+1, atoi(t, nextTerm), "one campaign, at the next term")
}

// API Methods: "Broadcast sends to every member of the current view,
// addressing each by PID where known and by name otherwise, and returns how
// many targets failed together with the first error. It does not stop at the
// first failure."
func TestBroadcastReachesEveryMemberAndCountsFailures(t *testing.T) {
	c := newCluster(t, 4, defaults)
	c.waitOneLeader(all(4))
	// A member of the view nobody can route to any more: its send fails.
	c.nodes[3].StopForce()
	require.NoError(t, c.nodes[0].Network().RemoveRoute(c.nodes[3].Name()))
	var res broadcastResult
	require.Eventually(t, func() bool {
		got, err := c.nodes[0].Call(c.pids[0], broadcastRequest{message: "hello"})
		require.NoError(t, err)
		res = got.(broadcastResult)
		return res.failed == 1
	}, settle, poll, "the send to the stopped member fails")
	require.ErrorIs(t, res.err, gen.ErrNoRoute)
	for _, i := range []int{1, 2} {
		entry := string(c.nodes[i].Name()) + " got hello"
		require.Eventually(t, func() bool { return c.events.count(entry) >= 1 }, settle, poll, "member %d", i)
	}
}

// API Methods: the state accessors agree with inspection.
func TestStateAccessorsAgreeWithInspection(t *testing.T) {
	c := newCluster(t, 3, defaults)
	leaderIdx, term := c.waitOneLeader(all(3))
	for i := 0; i < 3; i++ {
		got, err := c.nodes[i].Call(c.pids[i], apiRequest{})
		require.NoError(t, err)
		r := got.(apiResult)
		assert.Equal(t, c.pids[leaderIdx], r.leader)
		assert.Equal(t, term, strconv.FormatUint(r.term, 10))
		assert.Equal(t, "test", r.cluster)
		assert.Len(t, r.peers, 2)
		assert.Equal(t, 2, r.peerCount)
		assert.Len(t, r.bootstrap, 2)
		assert.True(t, r.hasFirstPeer)
		assert.False(t, r.hasSelf, "a member is not its own peer")
		if i == leaderIdx {
			assert.Equal(t, term, strconv.FormatUint(r.token, 10), "the leader's fencing token is its term")
		} else {
			assert.Zero(t, r.token, "a follower holds no fencing token")
		}
	}
}
