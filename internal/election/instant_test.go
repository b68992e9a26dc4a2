package election

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A peer's clock readings are kept as instants: every rule that compares or
// subtracts them must see the times it was given, the origin itself and
// times before it included, and a zero time must stay "none".
func TestInstantsKeepTheTimesTheyStandFor(t *testing.T) {
	for _, origin := range []time.Time{time.Now(), time.Unix(1_700_000_000, 0)} {
		k := clock{origin: origin}
		require.True(t, k.at(time.Time{}).IsZero(), "a zero time is no instant")
		require.True(t, k.time(0).IsZero(), "no instant is a zero time")
		offsets := []time.Duration{-time.Hour, -time.Nanosecond, 0, time.Nanosecond, 3 * time.Second, 100 * 24 * time.Hour}
		for i, d := range offsets {
			ti := origin.Add(d)
			a := k.at(ti)
			require.False(t, a.IsZero(), "the time %v after the origin is an instant", d)
			assert.True(t, k.time(a).Equal(ti), "the time %v after the origin comes back", d)
			assert.Zero(t, k.time(a).Sub(ti), "and subtracts to nothing from itself")
			for j, e := range offsets {
				tj, b := origin.Add(e), k.at(origin.Add(e))
				assert.Equal(t, ti.Sub(tj), a.Sub(b), "instants %v and %v subtract as their times", d, e)
				assert.Equal(t, i < j, a < b, "instants %v and %v order as their times", d, e)
			}
		}
	}
}
