package intern

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sameString(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestTable(t *testing.T) {
	t.Run("a name seen before comes back as the same string, without allocating", func(t *testing.T) {
		tab := New(8, 1024)
		first := tab.Atom([]byte("node@host"))
		again := tab.Atom([]byte("node@host"))
		assert.Equal(t, first, again)
		assert.True(t, sameString(string(first), string(again)))
		b := []byte("node@host")
		assert.Zero(t, testing.AllocsPerRun(100, func() { tab.Atom(b) }))
	})

	t.Run("the returned name does not alias the input bytes", func(t *testing.T) {
		tab := New(8, 1024)
		b := []byte("node@host")
		a := tab.Atom(b)
		copy(b, "XXXX")
		assert.Equal(t, "node@host", string(a))
		assert.Equal(t, "node@host", string(tab.Atom([]byte("node@host"))))
	})

	t.Run("a peer sending endless distinct names fills the table only to its bound", func(t *testing.T) {
		tab := New(16, 100)
		for i := 0; i < 10_000; i++ {
			name := fmt.Sprintf("n%d@h", i)
			require.Equal(t, name, string(tab.Atom([]byte(name))), "every name still decodes")
		}
		assert.LessOrEqual(t, tab.Bytes(), 100)
		assert.LessOrEqual(t, tab.Len(), 16)
		assert.Positive(t, tab.Len())
		kept := tab.Atom([]byte("n0@h"))
		assert.True(t, sameString(string(kept), string(tab.Atom([]byte("n0@h")))), "names learnt before the table filled stay interned")
	})

	t.Run("the entry bound holds for short names", func(t *testing.T) {
		tab := New(16, 1<<20)
		for i := 0; i < 1000; i++ {
			tab.Atom([]byte(fmt.Sprint(i)))
		}
		assert.Equal(t, 16, tab.Len())
	})

	t.Run("a name longer than MaxName is never kept", func(t *testing.T) {
		tab := New(16, 1<<20)
		long := strings.Repeat("x", MaxName+1)
		assert.Equal(t, long, string(tab.Atom([]byte(long))))
		assert.Zero(t, tab.Len())
	})

	t.Run("a nil table makes fresh strings", func(t *testing.T) {
		var tab *Table
		assert.Equal(t, "a@b", string(tab.Atom([]byte("a@b"))))
		assert.Zero(t, tab.Len())
	})
}
