package quorum

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMajorityOfEveryViewSize(t *testing.T) {
	want := map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 4, 8: 5, 9: 5}
	for n := 1; n <= 9; n++ {
		t.Run(fmt.Sprintf("a view of %d needs %d", n, want[n]), func(t *testing.T) {
			assert.Equal(t, want[n], Majority(n))
			assert.True(t, Reached(want[n], n))
			assert.False(t, Reached(want[n]-1, n))
			// Two disjoint groups can never both reach a majority of the same view.
			for a := 0; a <= n; a++ {
				assert.False(t, Reached(a, n) && Reached(n-a, n), "%d and %d of %d", a, n-a, n)
			}
		})
	}
	t.Run("a view never counts fewer than its owner", func(t *testing.T) {
		assert.Equal(t, 1, Majority(0))
		assert.Equal(t, 1, Majority(-3))
	})
}

func voters(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("v%d", i)
	}
	return out
}

func TestTallyDecidesForEveryViewSize(t *testing.T) {
	for n := 1; n <= 9; n++ {
		t.Run(fmt.Sprintf("a tally of %d is won by exactly a majority of grants", n), func(t *testing.T) {
			vs := voters(n)
			tl := NewTally(vs)
			for i := 0; i < Majority(n); i++ {
				require.Equal(t, Pending, tl.Result(), "after %d grants", i)
				require.True(t, tl.Record(vs[i], true))
			}
			assert.Equal(t, Won, tl.Result())
			assert.Equal(t, vs[:Majority(n)], tl.GrantedBy())
		})
		t.Run(fmt.Sprintf("a tally of %d is lost once a majority is out of reach", n), func(t *testing.T) {
			vs := voters(n)
			tl := NewTally(vs)
			refusals := n - Majority(n) + 1
			for i := 0; i < refusals; i++ {
				require.Equal(t, Pending, tl.Result(), "after %d refusals", i)
				require.True(t, tl.Record(vs[i], false))
			}
			assert.Equal(t, Lost, tl.Result())
			assert.Equal(t, refusals, tl.Refused())
		})
	}
}

func TestTallyRefusesStrangersAndSecondAnswers(t *testing.T) {
	tl := NewTally([]string{"a", "b", "c", "a"})
	assert.Equal(t, 3, tl.Size(), "duplicates count once")
	assert.False(t, tl.Record("stranger", true), "an answer from outside never grows the electorate")
	assert.Equal(t, 3, tl.Size())
	assert.True(t, tl.Record("a", true))
	assert.False(t, tl.Record("a", false), "the first answer stands")
	assert.Equal(t, 1, tl.Granted())
	assert.Equal(t, 0, tl.Refused())
	assert.Equal(t, Pending, tl.Result())
}

// A member that joins the view during an election takes part in it: the
// quorum rises with the electorate, so a stale, smaller majority cannot win.
func TestTallyAddRaisesQuorum(t *testing.T) {
	tl := NewTally([]string{"a", "b", "c"})
	tl.Record("a", true)
	tl.Add("d")
	assert.Equal(t, 4, tl.Size())
	assert.Equal(t, 3, tl.Quorum())
	tl.Record("b", true)
	assert.Equal(t, Pending, tl.Result(), "2 of 4 is not a majority")
	assert.True(t, tl.Record("d", true), "the added voter may answer")
	assert.Equal(t, Won, tl.Result())
	tl.Add("a") // a voter already counted is ignored
	assert.Equal(t, 4, tl.Size())
	assert.Equal(t, []string{"a", "b", "d"}, tl.GrantedBy())
}

func TestResultNames(t *testing.T) {
	assert.Equal(t, "pending", Pending.String())
	assert.Equal(t, "won", Won.String())
	assert.Equal(t, "lost", Lost.String())
}
