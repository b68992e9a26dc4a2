package node

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The relations' sets behave as sets whatever their size: below and beyond
// the slice's capacity, through growth and shrinking.
func TestSmallSetIsASet(t *testing.T) {
	for _, n := range []int{1, smallSetMax, smallSetMax + 1, 5 * smallSetMax} {
		var s smallSet[int]
		for i := range n {
			require.True(t, s.add(i), "add %d of %d", i, n)
			require.False(t, s.add(i), "%d again", i)
		}
		require.Equal(t, n, s.len())
		got := s.appendTo(nil)
		slices.Sort(got)
		want := make([]int, n)
		for i := range want {
			want[i] = i
		}
		assert.Equal(t, want, got)
		for i := 0; i < n; i += 2 {
			require.True(t, s.remove(i))
			require.False(t, s.remove(i), "%d twice", i)
			require.False(t, s.has(i))
		}
		for i := 1; i < n; i += 2 {
			require.True(t, s.has(i), "%d kept", i)
		}
		assert.Equal(t, n/2, s.len())
		assert.False(t, s.remove(-1))
	}
}
