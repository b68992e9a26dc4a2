package leader

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// Durable term and vote: what is saved is what a restart reads back.
func TestDurableState(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "election.state")

	t.Run("a missing file is a fresh start", func(t *testing.T) {
		hs, err := loadHardState(path, "c")
		require.NoError(t, err)
		assert.Equal(t, election.HardState{}, hs)
	})
	t.Run("a saved term, vote and view are read back", func(t *testing.T) {
		want := election.HardState{Term: 42, VotedFor: gen.ProcessID{Name: "election", Node: "n2@host"}, View: &election.View{
			Stamp:   election.ViewStamp{Lineage: election.Lineage{Term: 3, Node: "n1@host"}, Key: election.ViewKey{Term: 40, Epoch: 7}, Agreed: true},
			Members: []gen.ProcessID{{Name: "election", Node: "n1@host"}, {Name: "election", Node: "n2@host"}},
		}}
		require.NoError(t, saveHardState(path, "c", want))
		got, err := loadHardState(path, "c")
		require.NoError(t, err)
		assert.Equal(t, want, got)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Len(t, entries, 1, "no temporary file is left behind")
	})
	t.Run("a version 1 file (term and vote, no view) still loads", func(t *testing.T) {
		require.NoError(t, os.WriteFile(path, []byte(`{"version":1,"cluster":"c","term":5,"voted_for":{"name":"election","node":"n3@host"}}`), 0o600))
		got, err := loadHardState(path, "c")
		require.NoError(t, err)
		assert.Equal(t, election.HardState{Term: 5, VotedFor: gen.ProcessID{Name: "election", Node: "n3@host"}}, got)
	})
	t.Run("a state file of another cluster is refused", func(t *testing.T) {
		_, err := loadHardState(path, "other")
		require.ErrorIs(t, err, gen.ErrIncorrect)
	})
	t.Run("a corrupt file is an error, not a fresh start", func(t *testing.T) {
		require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o600))
		_, err := loadHardState(path, "c")
		require.ErrorIs(t, err, gen.ErrMalformed)
	})
	t.Run("a file of another version is refused", func(t *testing.T) {
		require.NoError(t, os.WriteFile(path, []byte(`{"version":9,"cluster":"c","term":3}`), 0o600))
		_, err := loadHardState(path, "c")
		require.ErrorIs(t, err, gen.ErrMalformed)
	})
	t.Run("saving into a missing directory fails with context", func(t *testing.T) {
		err := saveHardState(filepath.Join(dir, "missing", "x.state"), "c", election.HardState{Term: 1})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "election state")
	})
}
