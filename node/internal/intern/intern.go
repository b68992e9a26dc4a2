// Package intern keeps one copy of each name (gen.Atom) a connection
// decodes, so that a node or process name seen before costs a map lookup
// instead of a fresh string on every frame.
//
// A Table is bounded in names, in bytes and in the length of one name:
// once full it stops learning and returns new names as fresh strings, so a
// peer that sends endless distinct names makes the node hold at most the
// bound. Names learnt early stay for the table's life; a legitimate peer
// names the same few nodes and processes again and again.
//
// Callers must know:
//  1. One goroutine owns a Table (a connection's reader): it has no lock.
//  2. A nil *Table interns nothing; Atom then always makes a fresh string.
package intern

import "github.com/regent-go/regent/gen"

// MaxName is the longest name a Table keeps, in bytes, as long as the
// longest node name; longer ones are returned as fresh strings.
const MaxName = 255

// Table is a bounded set of interned names, owned by one goroutine.
type Table struct {
	atoms      map[string]gen.Atom
	bytes      int // sum of the lengths of the names in atoms
	maxEntries int
	maxBytes   int
	// recent holds the last few names returned, checked before the map: a
	// frame header names the same two nodes again and again, and comparing
	// a few short strings costs less than hashing one.
	recent [recentNames]gen.Atom
	next   int // the slot of recent the next name replaces
}

// recentNames is the size of Table.recent.
const recentNames = 4

// New returns a Table that keeps at most maxEntries names of at most
// maxBytes bytes in all.
func New(maxEntries, maxBytes int) *Table {
	return &Table{atoms: make(map[string]gen.Atom), maxEntries: maxEntries, maxBytes: maxBytes}
}

// Atom returns b as a gen.Atom: the kept copy when the table has one,
// otherwise a fresh string, which the table keeps while it has room. b is
// not retained.
func (t *Table) Atom(b []byte) gen.Atom {
	if t == nil {
		return gen.Atom(b)
	}
	if len(b) == 0 {
		return "" // the empty name, common in unset fields, needs no copy
	}
	for _, a := range t.recent {
		if string(a) == string(b) { // comparing does not allocate
			return a
		}
	}
	a, ok := t.atoms[string(b)] // nor does the conversion in a map index
	if !ok {
		a = gen.Atom(b)
		if len(b) > MaxName || len(t.atoms) >= t.maxEntries || t.bytes+len(b) > t.maxBytes {
			return a // full: a fresh string, not remembered anywhere
		}
		t.atoms[string(a)] = a
		t.bytes += len(b)
	}
	t.recent[t.next] = a
	t.next = (t.next + 1) % recentNames
	return a
}

// Len returns how many names the table keeps.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.atoms)
}

// Bytes returns the total length of the names the table keeps.
func (t *Table) Bytes() int {
	if t == nil {
		return 0
	}
	return t.bytes
}
