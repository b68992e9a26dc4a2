package election

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestCoreFitsItsAllocation checks that a Core, which every member holds,
// stays within a 1,024-byte allocation: the allocator adds an 8-byte header
// to an object of that size with pointers, and one byte more costs 128
// (the next size class, 1,152). Find padding or a rarely used field to
// move behind a pointer before raising it.
func TestCoreFitsItsAllocation(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(Core{}), uintptr(1024-8))
	// Each member holds one peer per other member, in allocations of 192.
	assert.LessOrEqual(t, unsafe.Sizeof(peer{}), uintptr(192))
	// And one store, with room for the members of a cluster of five, in an
	// allocation of 480.
	assert.LessOrEqual(t, unsafe.Sizeof(memberStore{}), uintptr(480))
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
	// A larger cluster's list is made apart, once, at the size it needs.
	assert.Equal(t, storeRoom+2, cap(newMemberStore(storeRoom+2).members))
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
