package codec

import (
	"github.com/regent-go/regent/gen"
)

// small is the benchmark message: an Atom, a uint64 and a PID.
type small struct {
	Name gen.Atom
	Term uint64
	From gen.PID
}

// kinds holds one field of every supported kind.
type kinds struct {
	B      bool
	I      int
	I8     int8
	I16    int16
	I32    int32
	I64    int64
	U      uint
	U8     uint8
	U16    uint16
	U32    uint32
	U64    uint64
	F32    float32
	F64    float64
	S      string
	Atom   gen.Atom
	Term   term
	Bytes  []byte
	Ints   []int
	Arr    [3]uint16
	Map    map[string]int
	KeyArr map[[2]int8]bool
	Set    map[string]struct{}
	Ptr    *int
	Inner  inner
	PInner *inner
	Inners []inner
	Any    any
	Err    error
	Nested [][]string
}

// inner is a named struct used only inside kinds, so it is registered with it.
type inner struct {
	A gen.Atom
	N int32
}

// term is a named basic type.
type term uint64

// tree is recursive through a slice of pointers.
type tree struct {
	Val  int
	Kids []*tree
}

// list is recursive through a pointer.
type list struct {
	Val  int
	Next *list
}

// holder carries any value in an interface field.
type holder struct {
	V any
}

// stringer is an interface field type other than any and error.
type stringer interface{ String() string }

type withStringer struct {
	S stringer
}

// codeError is a registered error type: it travels as itself.
type codeError struct {
	Code int
}

func (e codeError) Error() string { return "code error" }

type unregistered struct{ A int }

type withUnexported struct {
	A int
	b int
}

type withChan struct {
	C chan int
}

type withPointerKey struct {
	M map[*int]int
}

type withZeroSizeSlice struct {
	S []struct{}
}

// halfBad has a valid named struct field and an invalid one: registering it
// must register neither.
type halfBad struct {
	Good goodPart
	Bad  func()
}

type goodPart struct{ X int }
