package leader_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
)

// readIn reads member i's inspection, failing the test when it cannot.
func (c *testCluster) readIn(i int) leader.Inspection {
	in, err := leader.ReadInspection(c.nodes[i], c.pids[i])
	require.NoError(c.t, err)
	return in
}

// fast are timings that tick often and never time out spuriously, so a test
// sees many heartbeats in little time.
func fast(o leader.Options) leader.Options {
	o.HeartbeatInterval, o.ElectionTimeoutMin, o.ElectionTimeoutMax = 20, 400, 800
	return o
}

// A leader that loses a follower's node reports it unreachable, with
// coalescing on or off, and keeps leading the other follower. It sends the
// lost member nothing but probes by name (a coalesced batch's failure
// reaches the members it carried as a direct send's does:
// TestAFailedBatchIsReportedToEveryMemberItCarried).
func TestALeaderReportsALostNodeUnreachableAndLeadsOn(t *testing.T) {
	withAndWithoutCoalescing(t, func(t *testing.T, c *testCluster, off bool) {
		li, _ := c.waitOneLeader(all(3))
		lost := (li + 1) % 3
		lostNode := c.nodes[lost].Name()
		c.nodes[lost].StopForce()
		require.Eventually(t, func() bool {
			in := c.readIn(li)
			return len(in.Unreachable) == 1 && in.Unreachable[0].Node == lostNode
		}, settle, poll, "the leader never reported %s unreachable", lostNode)
		li2, _ := c.waitOneLeader([]int{li, (li + 2) % 3})
		assert.Equal(t, li, li2, "it keeps leading the other follower")
	})
}

// Members with coalescing on and off share a cluster: whichever leads, it
// is elected and keeps its leadership while heartbeats flow both ways (a
// stall of the machine may cost an election, not a stream of them).
func TestMixedCoalescingClusterElectsAndKeepsOneLeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		off  []int
	}{
		{"the leader coalesces, two followers do not", []int{0, 1}},
		{"the leader does not coalesce, nor does one follower", []int{3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 5, func(i int) leader.Options {
				o := fast(leader.Options{ClusterID: "test", Prefer: leader.Preference{Kind: leader.PreferHighestID}})
				for _, j := range tc.off {
					o.DisableHeartbeatCoalescing = o.DisableHeartbeatCoalescing || i == j
				}
				return o
			})
			c.waitLed(5, 4)
			start := c.readIn(4)
			require.Eventually(t, func() bool { return c.readIn(4).RuntimeTimers >= start.RuntimeTimers+100 }, settle, poll,
				"the leader did not tick a hundred times")
			// Heartbeats that did not reach the members with the other
			// setting would make them campaign again and again. A stall
			// of the shared machine longer than an election timeout may
			// cost an election or two, after which member 4 (preferred)
			// leads again; so the term may move a little, not on and on.
			var term uint64
			require.Eventually(t, func() bool {
				term = c.readIn(4).Term
				for i := range 5 {
					if in := c.readIn(i); in.Term != term || in.LeaderNode != c.nodes[4].Name() {
						return false
					}
				}
				return true
			}, settle, poll, "the members never agreed on one leader at one term")
			assert.LessOrEqual(t, term, start.Term+3, "the cluster kept electing over a hundred heartbeats (term %d to %d)", start.Term, term)
			for i := range 5 {
				assert.Equal(t, !contains(tc.off, i), c.readIn(i).HeartbeatCoalescing, "member %d says whether it coalesces", i)
			}
		})
	}
}

// waitLed waits until member want leads and all size members follow it.
func (c *testCluster) waitLed(size, want int) {
	require.Eventually(c.t, func() bool {
		if ls := c.leaders(all(size)); len(ls) != 1 || ls[0] != want {
			return false
		}
		for i := range size {
			if c.inspect(i, "ergo:leader_node")["ergo:leader_node"] != string(c.nodes[want].Name()) {
				return false
			}
		}
		return true
	}, settle, poll, "member %d never led all %d", want, size)
}

func contains(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// coalescerPIDs lists the processes registered as the coalescer on n.
func coalescerPIDs(t *testing.T, n gen.Node) []gen.PID {
	pids, err := n.ProcessList()
	require.NoError(t, err)
	var out []gen.PID
	for _, pid := range pids {
		if info, err := n.ProcessInfo(pid); err == nil && info.Name == leader.CoalescerName {
			out = append(out, pid)
		}
	}
	return out
}

// The first leader actor on a node starts its coalescer, a coalescer killed
// from outside is replaced while members use it, and the last member to end
// leaves no coalescer behind (the package's goleak check sees the rest).
func TestCoalescerLivesWithTheNodesLeaderActors(t *testing.T) {
	n, err := startPlainNode("life@127.0.0.1")
	require.NoError(t, err)
	t.Cleanup(n.Stop)
	require.NoError(t, n.Network().RegisterTypes(leader.NetworkTypes()))
	assert.Empty(t, coalescerPIDs(t, n), "no coalescer before any member")
	assert.False(t, leader.ReadCoalescer(n).Running)

	spawn := func(name gen.Atom, cluster string, off bool) gen.PID {
		pid, err := n.SpawnRegister(name, func() gen.ProcessBehavior {
			return &member{opts: leader.Options{ClusterID: cluster, MinClusterSize: 1, DisableHeartbeatCoalescing: off}, events: &eventLog{}}
		}, gen.ProcessOptions{})
		require.NoError(t, err)
		return pid
	}
	a := spawn("a", "one", true)
	b := spawn("b", "two", false)
	first := coalescerPIDs(t, n)
	require.Len(t, first, 1, "one coalescer, whatever the members' options")
	assert.True(t, leader.ReadCoalescer(n).Running)

	require.NoError(t, n.Kill(first[0]))
	require.Eventually(t, func() bool {
		now := coalescerPIDs(t, n)
		return len(now) == 1 && now[0] != first[0]
	}, settle, poll, "a killed coalescer is replaced while members use it")

	require.NoError(t, n.Kill(a))
	require.Eventually(t, func() bool { _, err := n.ProcessInfo(a); return err != nil }, settle, poll)
	assert.Len(t, coalescerPIDs(t, n), 1, "it stays while a member remains")
	require.NoError(t, n.Kill(b))
	require.Eventually(t, func() bool { return len(coalescerPIDs(t, n)) == 0 && !leader.ReadCoalescer(n).Running }, settle, poll,
		"the last member's end ends the coalescer")

	spawn("c", "three", false)
	require.Eventually(t, func() bool { return len(coalescerPIDs(t, n)) == 1 }, settle, poll, "a new first member starts it again")
}

// A follower that hears its leader arms its runtime timer about once per
// election timeout, not once per heartbeat: the leader's ticks re-arm the
// follower's election timeout lazily.
func TestFollowerArmsFewRuntimeTimersWhileHeartbeatsArrive(t *testing.T) {
	withAndWithoutCoalescing(t, func(t *testing.T, c *testCluster, off bool) {
		li, _ := c.waitOneLeader(all(3))
		f := (li + 1) % 3
		leader0, follower0 := c.readIn(li), c.readIn(f)
		require.Eventually(t, func() bool { return c.readIn(li).RuntimeTimers >= leader0.RuntimeTimers+100 }, settle, poll)
		leader1, follower1 := c.readIn(li), c.readIn(f)
		require.Equal(t, leader0.Term, leader1.Term, "one leadership throughout")
		ticks := leader1.RuntimeTimers - leader0.RuntimeTimers
		armed := follower1.RuntimeTimers - follower0.RuntimeTimers
		// Heartbeats come every 20ms, election timeouts last 400-800ms:
		// one arming per timeout is ticks/20; per heartbeat it would be ticks.
		assert.LessOrEqual(t, armed, ticks/5, "the follower armed %d runtime timers while the leader ticked %d times", armed, ticks)
	})
}

// ergo:heartbeat_coalescing and the coalescer's counters are in every
// member's inspection and parse back.
func TestCoalescingInspection(t *testing.T) {
	c := newCluster(t, 3, func(i int) leader.Options {
		return fast(leader.Options{ClusterID: "test", DisableHeartbeatCoalescing: i == 0, Prefer: leader.Preference{Kind: leader.PreferHighestID}})
	})
	c.waitLed(3, 2)
	assert.Equal(t, "off", c.inspect(0, "ergo:heartbeat_coalescing")["ergo:heartbeat_coalescing"])
	assert.Equal(t, "on", c.inspect(1, "ergo:heartbeat_coalescing")["ergo:heartbeat_coalescing"])
	require.Eventually(t, func() bool {
		in := c.readIn(1)
		return in.Coalescer.Running && in.Coalescer.EntriesIn > 0 && in.Coalescer.EntriesOut > 0
	}, settle, poll, "a coalescing follower's node takes heartbeats and sends acknowledgements coalesced")
	require.Eventually(t, func() bool { return c.readIn(0).Coalescer.EntriesIn > 0 }, settle, poll,
		"a member without coalescing still takes coalesced heartbeats through its node's coalescer")
	r, err := leader.ReadMember(c.nodes[0], c.pids[1], "ergo:coalescer")
	require.NoError(t, err)
	assert.True(t, r.Coalescer.Running, "ReadMember carries the node's coalescer counters")
}

// withAndWithoutCoalescing runs check on a fresh cluster of three fast
// members, once with heartbeat coalescing on and once with it off.
func withAndWithoutCoalescing(t *testing.T, check func(t *testing.T, c *testCluster, off bool)) {
	for _, off := range []bool{false, true} {
		name := map[bool]string{false: "coalescing on", true: "coalescing off"}[off]
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, 3, func(int) leader.Options {
				return fast(leader.Options{ClusterID: "test", DisableHeartbeatCoalescing: off})
			})
			check(t, c, off)
		})
	}
}

// Rule 8 of the coalescer: a bound follower that wakes for something that
// leaves its steady answer as it was (here, a message of the user's) keeps
// its binding, so its leader stays paired. The binding ends only when a
// beat arrives while it steps, which a step of microseconds against beats
// 20ms apart seldom meets.
func TestABoundFollowerStaysBoundThroughAWakeUpThatChangesNothing(t *testing.T) {
	c := newCluster(t, 3, func(int) leader.Options { return fast(leader.Options{ClusterID: "test"}) })
	li, _ := c.waitOneLeader(all(3))
	f := (li + 1) % 3
	bound := func() bool {
		s := leader.ReadCoalescer(c.nodes[f])
		return s.PairBound > s.PairUnbound
	}
	const pings = 20
	for i := range pings {
		require.Eventually(t, bound, settle, poll, "the follower is bound on its leader's pair")
		s0 := leader.ReadCoalescer(c.nodes[f])
		require.NoError(t, c.nodes[f].Send(c.pids[f], fmt.Sprintf("ping %d", i)))
		require.Eventually(t, func() bool {
			s := leader.ReadCoalescer(c.nodes[f])
			return s.PairKept+s.PairUnbound > s0.PairKept+s0.PairUnbound
		}, settle, poll, "its wake-up either kept the binding or ended it")
	}
	kept := leader.ReadCoalescer(c.nodes[f]).PairKept
	assert.GreaterOrEqual(t, kept, uint64(pings/2), "of %d wake-ups that changed nothing, %d kept the binding", pings, kept)
	li2, _ := c.waitOneLeader(all(3))
	assert.Equal(t, li, li2, "one leadership throughout")
}
