//go:build unix

package mmfcell

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/regent-go/regent/gen"
)

func TestCreate(t *testing.T) {
	t.Run("a new file holds one 64-byte header with magic and version and an empty cell", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "c")
		c := openCell(t, path)

		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Len(t, raw, HeaderSize)
		assert.Equal(t, "RGNC", string(raw[:4]))
		assert.Equal(t, uint32(Version), binary.NativeEndian.Uint32(raw[4:8]))
		assert.Equal(t, make([]byte, HeaderSize-8), raw[8:])

		_, ok := c.CurrentLeader()
		assert.False(t, ok)
		assert.Zero(t, c.Term())
		assert.Zero(t, c.GlobalEpoch())
	})

	t.Run("creating over an existing valid cell keeps its state", func(t *testing.T) {
		host := newFakeHost(40)
		path := filepath.Join(t.TempDir(), "c")
		first, err := Create(path, WithProbe(host.probe))
		require.NoError(t, err)
		require.True(t, first.TryClaim(40, DefaultGraceEpochs))
		first.TickEpoch()
		first.TickEpoch()
		require.NoError(t, first.Close())

		again := openCell(t, path, WithProbe(host.probe))
		leader, ok := again.CurrentLeader()
		assert.True(t, ok)
		assert.Equal(t, uint32(40), leader)
		assert.Equal(t, uint32(1), again.Term())
		assert.Equal(t, uint64(2), again.GlobalEpoch())
	})

	t.Run("many concurrent creators of one new file share one cell that nobody resets", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "c")
		const creators = 8
		var wg sync.WaitGroup
		errs := make(chan error, creators)
		for range creators {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := Create(path)
				if err != nil {
					errs <- err
					return
				}
				c.TickEpoch()
				errs <- c.Close()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		c, err := Open(path)
		require.NoError(t, err)
		defer func() { require.NoError(t, c.Close()) }()
		assert.Equal(t, uint64(creators), c.GlobalEpoch())
	})

	t.Run("the new file gets the requested mode, less the umask, and 0600 by default", func(t *testing.T) {
		umask := fs.FileMode(unix.Umask(0))
		unix.Umask(int(umask))
		for requested, opts := range map[fs.FileMode][]Option{0o640: {WithFileMode(0o640)}, 0o600: nil} {
			path := filepath.Join(t.TempDir(), "c")
			openCell(t, path, opts...)
			info, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, requested&^umask, info.Mode().Perm())
		}
	})
}

func TestOpen(t *testing.T) {
	t.Run("a missing file is reported as not existing", func(t *testing.T) {
		_, err := Open(filepath.Join(t.TempDir(), "missing"))
		require.ErrorIs(t, err, fs.ErrNotExist)
		assert.True(t, strings.HasPrefix(err.Error(), "mmfcell: "), err.Error())
	})

	t.Run("two mappings of one file see each other's writes", func(t *testing.T) {
		host := newFakeHost(9)
		path := filepath.Join(t.TempDir(), "c")
		a := openCell(t, path, WithProbe(host.probe))
		b, err := Open(path, WithProbe(host.probe))
		require.NoError(t, err)
		defer func() { require.NoError(t, b.Close()) }()

		require.True(t, a.TryClaim(9, 1))
		leader, ok := b.CurrentLeader()
		assert.True(t, ok)
		assert.Equal(t, uint32(9), leader)
		assert.Equal(t, uint64(1), b.TickEpoch())
		assert.Equal(t, uint64(1), a.GlobalEpoch())
	})

	t.Run("closing twice reports that the cell is closed", func(t *testing.T) {
		c, err := Create(filepath.Join(t.TempDir(), "c"))
		require.NoError(t, err)
		require.NoError(t, c.Close())
		err = c.Close()
		require.ErrorIs(t, err, ErrClosed)
		require.ErrorIs(t, err, gen.ErrNotAllowed)
	})
}

func TestBadFilesAreRefused(t *testing.T) {
	valid := freshHeader()
	wrongVersion := freshHeader()
	binary.NativeEndian.PutUint32(wrongVersion[4:], Version+1)
	garbage := bytes.Repeat([]byte{0xA5}, HeaderSize)

	cases := []struct {
		name     string
		content  []byte
		byCreate bool // whether Create refuses it too (Create initialises an empty file)
		mention  string
	}{
		{"a file of garbage", garbage, true, "magic"},
		{"a file with the wrong magic but a valid version", append([]byte("XXXX"), valid[4:]...), true, "magic"},
		{"a file of another layout version", wrongVersion, true, "version"},
		{"a file that is too short", valid[:HeaderSize/2], true, "bytes"},
		{"a file that is too long", append(append([]byte{}, valid...), valid...), true, "bytes"},
		{"an empty file, when only opening", nil, false, "bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is refused and left untouched", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c")
			require.NoError(t, os.WriteFile(path, tc.content, 0o600))

			opens := map[string]func(string, ...Option) (*Cell, error){"Open": Open}
			if tc.byCreate {
				opens["Create"] = Create
			}
			for name, open := range opens {
				c, err := open(path)
				require.Nil(t, c, name)
				require.ErrorIs(t, err, ErrBadFile, name)
				require.ErrorIs(t, err, gen.ErrMalformed, name)
				assert.True(t, strings.HasPrefix(err.Error(), "mmfcell: "), err.Error())
				assert.Contains(t, err.Error(), tc.mention, name)
				assert.Contains(t, err.Error(), path, name)
			}
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, len(tc.content), len(after))
			assert.True(t, bytes.Equal(tc.content, after))
		})
	}

	t.Run("an empty file is initialised by Create", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "c")
		require.NoError(t, os.WriteFile(path, nil, 0o600))
		c := openCell(t, path)
		assert.Zero(t, c.Term())
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, valid, raw)
	})
}

// WithOwner binds a cell to its first owner and refuses another; opening
// without an owner, or with the same one, is always allowed.
func TestWithOwnerBindsTheCellToItsFirstOwner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cell")
	first, err := Create(path, WithOwner(7))
	require.NoError(t, err)
	defer func() { require.NoError(t, first.Close()) }()
	same, err := Open(path, WithOwner(7))
	require.NoError(t, err)
	require.NoError(t, same.Close())
	plain, err := Open(path)
	require.NoError(t, err, "no owner named: nothing checked")
	require.NoError(t, plain.Close())
	_, err = Create(path, WithOwner(8))
	require.ErrorIs(t, err, ErrOtherOwner)
	require.ErrorIs(t, err, gen.ErrIncorrect)

	unbound := filepath.Join(t.TempDir(), "unbound")
	c, err := Create(unbound)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	c, err = Open(unbound, WithOwner(9))
	require.NoError(t, err, "a cell bound to none is bound to the first owner named")
	require.NoError(t, c.Close())
	_, err = Open(unbound, WithOwner(10))
	require.ErrorIs(t, err, ErrOtherOwner)
}
