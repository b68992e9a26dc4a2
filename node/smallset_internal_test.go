package node

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// The relations' sets behave as sets whatever their size: below and beyond
// the slice's capacity, through growth and shrinking.
func TestSmallSetIsASet(t *testing.T) {
	for _, n := range []int{1, 2, 4, smallSetMax, smallSetMax + 1, 5 * smallSetMax} {
		var s smallSet[int] // elements from 1: the zero int is never one
		for i := 1; i <= n; i++ {
			require.True(t, s.add(i), "add %d of %d", i, n)
			require.False(t, s.add(i), "%d again", i)
		}
		require.Equal(t, n, s.len())
		got := s.appendTo(nil)
		slices.Sort(got)
		want := make([]int, n)
		for i := range want {
			want[i] = i + 1
		}
		assert.Equal(t, want, got)
		for i := 1; i <= n; i += 2 {
			require.True(t, s.remove(i))
			require.False(t, s.remove(i), "%d twice", i)
			require.False(t, s.has(i))
		}
		for i := 2; i <= n; i += 2 {
			require.True(t, s.has(i), "%d kept", i)
		}
		assert.Equal(t, n/2, s.len())
		assert.False(t, s.remove(-1))
		for i := 2; i <= n; i += 2 {
			require.True(t, s.remove(i), "%d, the rest", i)
		}
		assert.Zero(t, s.len())
		assert.Empty(t, s.appendTo(nil))
		require.True(t, s.add(7), "an emptied set takes elements again")
		assert.True(t, s.has(7))
	}
}

// Every member monitors each of its peers, and each peer it: a watcher
// alone on its target costs the relations no allocation beyond their maps'
// entries, and a member's four peers two small objects.
func TestRelationsKeepAFewWatchersWithoutAllocating(t *testing.T) {
	r := &relations{node: &node{name: "n1@h"}}
	w := watcher{pid: gen.PID{Node: "n1@h", ID: 1, Creation: 1}, kind: relMonitor}
	peer := pidTarget(gen.PID{Node: "n2@h", ID: 9, Creation: 1})
	r.add(peer, w) // makes the maps
	require.True(t, r.remove(peer, w))
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		r.add(peer, w)
		r.remove(peer, w)
	}), "one watcher of one target")

	self := pidTarget(gen.PID{Node: "n1@h", ID: 1, Creation: 1})
	peers := make([]watcher, 4)
	for i := range peers {
		peers[i] = watcher{pid: gen.PID{Node: gen.Atom(fmt.Sprintf("n%d@h", i+2)), ID: 9, Creation: 1}, kind: relMonitor}
	}
	allocs := testing.AllocsPerRun(100, func() {
		for _, p := range peers {
			r.add(self, p)
		}
		for _, p := range peers {
			r.remove(self, p)
		}
	})
	assert.LessOrEqual(t, allocs, 2.0, "four watchers of one target")
}
