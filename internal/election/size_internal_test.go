package election

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// TestCoreFitsItsAllocation checks that a Core, which every member holds,
// stays within an 896-byte allocation: the allocator adds an 8-byte header
// to an object of that size with pointers, and one byte more costs 128
// (the next size class, 1,024). Find padding or a rarely used field to
// move behind a pointer (coreRare) before raising it.
func TestCoreFitsItsAllocation(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(Core{}), uintptr(896-8))
	// Each member holds one peer per other member, those it starts with in
	// one allocation: a cluster of five's four in one of 768 (with the
	// allocator's header).
	assert.LessOrEqual(t, 4*unsafe.Sizeof(peer{})+8, uintptr(768))
	// And one store, with room for the members of a cluster of five, in an
	// allocation of 448 (480 is the class of a formation's garbage).
	assert.LessOrEqual(t, unsafe.Sizeof(memberStore{}), uintptr(448))
}

// A member of a cluster of up to storeRoom members keeps the member list of
// its first view in its store's own room, not in an allocation of its own:
// that would be the one object of its size class the member keeps from its
// election's burst, and pin a page of the burst's garbage.
func TestFirstViewMembersShareTheStore(t *testing.T) {
	for _, size := range []int{3, storeRoom} {
		nw := newNetwork(t, size, 1, nil)
		nw.makeLeader(1)
		for i := 1; i <= size; i++ {
			c := nw.node(i).core
			v := nw.viewOf(i)
			if !assert.NotNil(t, v, "member %d of %d holds a view", i, size) || !assert.Len(t, v.Members, size) {
				continue
			}
			assert.Same(t, &c.store.room[0], &c.store.views[0].Members[0], "member %d of %d: first view's members in the store's room", i, size)
		}
	}
}

// The PID a member reported to HandlePeerJoined lives in the peer as a
// flag while it is the peer's PID, the steady case: a settled cluster's
// peers hold it in no rare fields (which the simulator's early failed
// sends may have made).
func TestReportedPeersNeedNoRareFields(t *testing.T) {
	nw := newNetwork(t, 5, 1, nil)
	nw.makeLeader(1)
	for i := 1; i <= 5; i++ {
		for _, p := range nw.node(i).core.peers.list {
			if p.rare != nil {
				assert.Zero(t, p.rare.reported, "member %d's peer %s", i, p.id.Node)
			}
			assert.True(t, p.reportedIsPID, "member %d's peer %s", i, p.id.Node)
			assert.Equal(t, p.pid, p.reportedPID(), "member %d's peer %s", i, p.id.Node)
		}
	}
}

// A formation's electorate and its voters' reports, which the campaign
// reads at every answer of an election's burst, are made in one allocation
// each.
func TestElectorateIsOneAllocation(t *testing.T) {
	nw := newNetwork(t, 5, 1, nil)
	c := nw.node(1).core
	c.open(time.Unix(100, 0), c.term+1, true, false)
	require.True(t, c.camp.formation)
	assert.Equal(t, []gen.Atom{nodeName(2), nodeName(3), nodeName(4), nodeName(5)}, c.electorate())
	assert.LessOrEqual(t, testing.AllocsPerRun(50, func() { _ = c.electorate() }), 1.0)
	assert.LessOrEqual(t, testing.AllocsPerRun(50, func() { _ = c.camp.reports() }), 1.0)
}

// The peers a member starts with, its Bootstrap's and its stored view's,
// are made in one allocation with its Core, sorted by node, the first name
// of a node winning; a peer added later is made apart.
func TestStartingPeersShareOneAllocation(t *testing.T) {
	id := func(name, node string) gen.ProcessID {
		return gen.ProcessID{Name: gen.Atom(name), Node: gen.Atom(node)}
	}
	tab := newPeerTable("a@h", []gen.ProcessID{id("x", "d@h"), id("x", "a@h"), id("x", "b@h"), id("y", "d@h")},
		[]gen.ProcessID{id("z", "c@h"), id("z", "b@h")})
	require.Equal(t, []gen.Atom{"b@h", "c@h", "d@h"}, tab.sorted)
	assert.Equal(t, []gen.ProcessID{id("x", "b@h"), id("z", "c@h"), id("x", "d@h")},
		[]gen.ProcessID{tab.list[0].id, tab.list[1].id, tab.list[2].id})
	for i := 1; i < len(tab.list); i++ {
		assert.Same(t, tab.list[i], &unsafe.Slice(tab.list[0], len(tab.list))[i], "peer %d in the first one's block", i)
	}
	later := tab.ensure(id("x", "e@h"))
	assert.Same(t, later, tab.get("e@h"))
	assert.Equal(t, 4, len(tab.list))
	assert.Empty(t, newPeerTable("a@h", nil).list)
}

// An effect costs no allocation of its own: a member's election makes a
// dozen (a Monitor and a PeerJoined per peer, a BecomeFollower, ...), and
// each boxed in an interface would be garbage among the long-lived objects
// of its size class, which the member's heap then holds in part-empty
// spans. Here a peer's process changes PID back and forth, each time
// giving a Demonitor, a Monitor, a PeerLeft and a PeerJoined.
func TestEffectsAreNotAllocated(t *testing.T) {
	nw := newNetwork(t, 3, 1, nil)
	nw.makeLeader(1)
	c := nw.node(2).core
	h := Header{ClusterID: c.cfg.ClusterID, Term: c.term, From: procID(nodeName(3))}
	pids := [2]gen.PID{peerPID(3), {Node: nodeName(3), ID: 2000, Creation: 1}}
	c.ready = Ready{Effects: make([]Effect, 0, 8)}
	now := time.Unix(200, 0)
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		i++
		c.ready.Effects = c.ready.Effects[:0]
		c.observe(now, pids[i%2], h, 0)
	})
	require.Len(t, c.ready.Effects, 4, "a changed PID gives four effects")
	assert.Zero(t, allocs)
}

// The members of a settled cluster keep no rare fields (a coreRare), the
// one that handed leadership over included once the handover is judged
// done: the Core moved them behind a pointer to fit a smaller allocation, a
// saving that a member making them on the common path, or keeping them,
// would undo.
func TestASettledClusterMakesNoRareFields(t *testing.T) {
	nw := newNetwork(t, 5, 1, nil)
	nw.makeLeader(1)
	nw.run(time.Second)
	for i := 1; i <= 5; i++ {
		assert.Nil(t, nw.node(i).core.rare, "member %d", i)
	}
}
