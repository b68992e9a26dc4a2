package leader

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/mmfcell"
)

// SameHost is "one path per cluster per host": a cell is bound to the
// cluster that opened it first, and another cluster's member is refused
// with an error that says so. Sharing a path made one process's holder hold
// both clusters' cells, and the other cluster's members on the host never
// started an election (found by an adversarial hunt: a cluster of three
// stayed leaderless at term 0).
func TestASameHostCellServesOneCluster(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cell")
	a, err := openSameHost(path, "scheduler", 50*time.Millisecond)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.release()) })
	again, err := openSameHost(path, "scheduler", 50*time.Millisecond)
	require.NoError(t, err, "another member of the same cluster on the host shares the cell")
	require.NoError(t, again.release())

	_, err = openSameHost(path, "reconciler", 50*time.Millisecond)
	require.ErrorIs(t, err, mmfcell.ErrOtherOwner)
	require.ErrorIs(t, err, gen.ErrIncorrect)
	assert.Contains(t, err.Error(), `serves another cluster than "reconciler"`)
	assert.NotEqual(t, sameHostOwner("scheduler"), sameHostOwner("reconciler"))
}
