// Package intern keeps one copy of each name (gen.Atom) a connection
// decodes, so that a node or process name seen before costs a lookup
// instead of a fresh string on every frame.
//
// A Table is a cache: a hashed array of slots, in sets of four, in which a
// name new to its set replaces the one of the four used least recently. It is
// bounded in slots, in the bytes of the names it keeps and in the length of
// one name, so a peer that sends endless distinct names makes the node hold
// at most the bound; the names a peer repeats (its nodes, the processes and
// clusters it talks to) stay, while names seen once give way. The array
// starts small and doubles, up to its bound, while names it has no room
// for keep coming, so a connection that carries few names costs little.
//
// Callers must know:
//  1. One goroutine owns a Table (a connection's reader): it has no lock.
//  2. A nil *Table interns nothing; Atom then always makes a fresh string.
//  3. Strings are immutable: a Table may hand the same string to any
//     caller, as a gen.Atom or as a plain string of the same bytes.
package intern

import (
	"hash/maphash"

	"github.com/regent-go/regent/gen"
)

// MaxName is the longest name a Table keeps, in bytes, as long as the
// longest node name; longer ones are returned as fresh strings.
const MaxName = 255

// firstSlots is the size of a Table's array of slots when it is made, and
// ways the size of a set.
const (
	firstSlots = 64
	ways       = 4
)

// Table is a bounded cache of interned names, owned by one goroutine.
type Table struct {
	// slots holds the kept names: a set is ways slots from a multiple of
	// ways, used last first; an empty string is an empty slot, and a set's
	// empty slots are its last. Its length is a power of two, at
	// least ways and at most maxSlots.
	slots    []gen.Atom
	maxSlots int
	bytes    int // sum of the lengths of the names in slots
	maxBytes int
	kept     int // non-empty slots
	evicted  int // names replaced since slots last grew
	seed     maphash.Seed
	// tags holds, for each slot, a byte of its name's hash, never 0 but for
	// an empty slot: a lookup reads the slots of a set, and compares their
	// names, only where the tag matches.
	tags []uint8
	// pinned holds names the owner gave with Pin, checked first and never
	// replaced: the owner compares what it decodes with them.
	pinned [maxPinned]gen.Atom
}

// maxPinned is the size of Table.pinned.
const maxPinned = 2

// New returns a Table that keeps at most maxEntries names (rounded down to
// a power of two, at least four) of at most maxBytes bytes in all.
func New(maxEntries, maxBytes int) *Table {
	limit := ways
	for limit*2 <= maxEntries {
		limit *= 2
	}
	return &Table{
		slots:    make([]gen.Atom, min(firstSlots, limit)),
		tags:     make([]uint8, min(firstSlots, limit)),
		maxSlots: limit,
		maxBytes: maxBytes,
		seed:     maphash.MakeSeed(),
	}
}

// Atom returns b as a gen.Atom: the kept copy when the table has one,
// otherwise a fresh string, which the table keeps when it has room. b is
// not retained.
func (t *Table) Atom(b []byte) gen.Atom {
	if t == nil {
		return gen.Atom(b)
	}
	if len(b) == 0 {
		return "" // the empty name, common in unset fields, needs no copy
	}
	for _, a := range t.pinned {
		if string(a) == string(b) { // comparing does not allocate
			return a
		}
	}
	return t.lookup(b)
}

// Pin makes Atom return these very strings for their bytes, for the
// table's life: a reader that compares what it decodes with names it holds
// (its own node's, its peer's) then compares equal pointers, which costs
// nothing. Names beyond the first two are ignored.
func (t *Table) Pin(names ...gen.Atom) {
	copy(t.pinned[:], names)
}

// lookup finds b in its set, moving it to the set's first slot, or makes a
// fresh string and keeps it there when the bounds allow.
func (t *Table) lookup(b []byte) gen.Atom {
	if len(b) > MaxName {
		return gen.Atom(b)
	}
	h := maphash.Bytes(t.seed, b)
	i, tag := t.set(h), uint8(h>>56)|1 // never 0, the tag of an empty slot
	set, tags := (*[ways]gen.Atom)(t.slots[i:]), (*[ways]uint8)(t.tags[i:])
	// The tags first: they are a small array, likely in the cache, where
	// the slots and the names' bytes are not, so a name not kept costs
	// one look at memory, not one per slot of its set.
	for j, tg := range tags {
		if tg == 0 {
			break // the set's empty slots are its last
		}
		if tg == tag {
			if a := set[j]; string(a) == string(b) {
				copy(set[1:j+1], set[:j])
				copy(tags[1:j+1], tags[:j])
				set[0], tags[0] = a, tag
				return a
			}
		}
	}
	a := gen.Atom(b)
	last := set[ways-1]
	bytes := t.bytes - len(last) + len(a)
	if bytes > t.maxBytes {
		return a // no room: a fresh string, not remembered anywhere
	}
	if last != "" {
		t.evicted++
	} else {
		t.kept++
	}
	copy(set[1:], set[:ways-1])
	copy(tags[1:], tags[:ways-1])
	set[0], tags[0] = a, tag
	t.bytes = bytes
	if t.evicted > len(t.slots)/8 && len(t.slots) < t.maxSlots {
		t.grow()
	}
	return a
}

// set returns the index of the first slot of the set of the name whose
// hash is h.
func (t *Table) set(h uint64) int {
	return int(h) & (len(t.slots) - ways)
}

// grow doubles the array of slots, keeping every name it holds in the order
// of use within its set: the names of one set go to two sets of the new
// array, so none is lost.
func (t *Table) grow() {
	old, oldTags := t.slots, t.tags
	t.slots, t.tags = make([]gen.Atom, 2*len(old)), make([]uint8, 2*len(old))
	t.evicted = 0
	for i := 0; i < len(old); i += ways {
		var fill [2]int // how many names each of the two new sets got
		for k, a := range old[i : i+ways] {
			if a == "" {
				break
			}
			j, half := t.set(maphash.String(t.seed, string(a))), 0
			if j != i {
				half = 1
			}
			t.slots[j+fill[half]], t.tags[j+fill[half]] = a, oldTags[i+k]
			fill[half]++
		}
	}
}

// Len returns how many names the table keeps.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return t.kept
}

// Bytes returns the total length of the names the table keeps.
func (t *Table) Bytes() int {
	if t == nil {
		return 0
	}
	return t.bytes
}
