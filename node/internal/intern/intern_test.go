package intern

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
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
			require.LessOrEqual(t, tab.Bytes(), 100)
			require.LessOrEqual(t, tab.Len(), 16)
		}
		assert.Positive(t, tab.Len())
	})

	t.Run("a name used again and again stays interned while others come and go", func(t *testing.T) {
		tab := New(16, 1<<20)
		hot := tab.Atom([]byte("hot@host"))
		for i := 0; i < 10_000; i++ {
			tab.Atom([]byte(fmt.Sprintf("n%d@h", i)))
			require.True(t, sameString(string(hot), string(tab.Atom([]byte("hot@host")))), "after %d other names", i+1)
		}
	})

	t.Run("the entry bound holds for short names", func(t *testing.T) {
		tab := New(16, 1<<20)
		for i := 0; i < 1000; i++ {
			tab.Atom([]byte(fmt.Sprint(i)))
		}
		assert.LessOrEqual(t, tab.Len(), 16)
		assert.Greater(t, tab.Len(), 8, "the sets fill up")
	})

	t.Run("a working set that fits is kept, however many names came before", func(t *testing.T) {
		tab := New(8192, 1<<20)
		for i := 0; i < 20_000; i++ {
			tab.Atom([]byte(fmt.Sprintf("old-%d", i)))
		}
		names := make([][]byte, 1000)
		for i := range names {
			names[i] = []byte(fmt.Sprintf("scale-%d", i))
		}
		for range 40 { // the table grows, and the sets settle
			for _, b := range names {
				tab.Atom(b)
			}
		}
		missed := testing.AllocsPerRun(3, func() {
			for _, b := range names {
				tab.Atom(b)
			}
		})
		assert.Less(t, missed, float64(len(names))/50, "at most 2%% of the names miss: those whose set drew more than four of them")
	})

	t.Run("a name longer than MaxName is never kept", func(t *testing.T) {
		tab := New(16, 1<<20)
		long := strings.Repeat("x", MaxName+1)
		assert.Equal(t, long, string(tab.Atom([]byte(long))))
		assert.Zero(t, tab.Len())
	})

	t.Run("a pinned name comes back as the very string pinned, whatever came between", func(t *testing.T) {
		tab := New(4, 1<<20)
		own := gen.Atom(strings.Clone("me@host"))
		tab.Pin(own)
		for i := 0; i < 100; i++ {
			tab.Atom([]byte(fmt.Sprintf("n%d@h", i)))
		}
		assert.True(t, sameString(string(own), string(tab.Atom([]byte("me@host")))))
	})

	t.Run("a nil table makes fresh strings", func(t *testing.T) {
		var tab *Table
		assert.Equal(t, "a@b", string(tab.Atom([]byte("a@b"))))
		assert.Zero(t, tab.Len())
	})
}
