package codec

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/regent-go/regent/gen"
)

// typeCodec encodes and decodes values of one static type. It is built once
// per type and never changes afterwards, so snapshots share it freely.
//
// Its functions work on an unsafe.Pointer to a value of typ, not on a
// reflect.Value: each kind has its own function that loads or stores the
// value directly, and a struct is compiled into a flat list of field
// operations at precomputed offsets (see fieldOp).
//
// This is sound because a codec's Go type is fixed when it is built, so p
// always points to a typ (a field at reflect.StructField.Offset within its
// struct, an element at i*size within its array, or memory the decoder
// allocated itself as a typ). Reflection remains only where the layout is
// the runtime's business: maps, non-empty interfaces and slice allocation.
type typeCodec struct {
	typ reflect.Type
	// size is typ.Size(): the stride of typ's elements in arrays and slices.
	size uintptr
	// minSize is the fewest bytes any value of typ encodes to; decoding
	// checks a length prefix against it before allocating.
	minSize int
	// enc appends the value at p, which points to a typ.
	enc func(c *typeCodec, e *encoder, p unsafe.Pointer) error
	// dec overwrites all of the typ at p, which the decoder allocated.
	dec func(c *typeCodec, d *decoder, p unsafe.Pointer) error
	// elem is the element codec of slices, arrays, pointers and map values;
	// key that of map keys.
	elem, key *typeCodec
	// op is how a struct's field of this type is encoded and decoded:
	// inline for the commonest scalars, through enc and dec otherwise.
	op opKind
	// ops are a struct's fields, in order, with the fields of the structs
	// it contains by value spliced in.
	ops []fieldOp
}

// builder makes the codecs of a type and the types it contains, staging them
// so that a failure registers nothing.
type builder struct {
	base   *tables
	staged map[reflect.Type]*typeCodec
	// named lists named struct types met inside the type being registered.
	named []reflect.Type
	// repeated lists the slice and map codecs whose element sizes must be
	// checked once every codec is complete.
	repeated []*typeCodec
}

func newBuilder(base *tables) *builder {
	return &builder{base: base, staged: map[reflect.Type]*typeCodec{}}
}

func (b *builder) codecFor(t reflect.Type) (*typeCodec, error) {
	if c, ok := b.base.codecs[t]; ok {
		return c, nil
	}
	if c, ok := b.staged[t]; ok {
		return c, nil // complete, or in progress on a recursive type
	}
	c := &typeCodec{typ: t, size: t.Size(), minSize: 1}
	b.staged[t] = c
	var err error
	switch t.Kind() {
	case reflect.Bool:
		c.enc, c.dec, c.op = encBool, decBool, opBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		c.enc = bySize(c.size, encInt[int8], encInt[int16], encInt[int32], encInt[int64])
		c.dec = bySize(c.size, decInt[int8], decInt[int16], decInt[int32], decInt[int64])
		if c.size == 8 {
			c.op = opInt64
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		c.enc = bySize(c.size, encUint[uint8], encUint[uint16], encUint[uint32], encUint[uint64])
		c.dec = bySize(c.size, decUint[uint8], decUint[uint16], decUint[uint32], decUint[uint64])
		if c.size == 8 {
			c.op = opUint64
		}
	case reflect.Float32:
		c.enc, c.dec, c.minSize = encFloat32, decFloat32, 4
	case reflect.Float64:
		c.enc, c.dec, c.minSize = encFloat64, decFloat64, 8
	case reflect.String:
		c.enc, c.dec, c.op = encString, decString, opString
		if t == atomType {
			c.dec, c.op = decAtom, opAtom // names repeat: intern them
		}
	case reflect.Interface:
		c.enc, c.dec = encInterface, decInterface
		if t.NumMethod() == 0 {
			c.enc, c.dec = encAny, decAny
		}
	case reflect.Pointer:
		c.elem, err = b.codecFor(t.Elem())
		c.enc, c.dec = encPointer, decPointer
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			c.enc, c.dec = encBytes, decBytes
			break
		}
		c.elem, err = b.codecFor(t.Elem())
		c.enc, c.dec = encSlice, decSlice
		b.repeated = append(b.repeated, c)
	case reflect.Array:
		c.elem, err = b.codecFor(t.Elem())
		if err == nil {
			c.minSize = t.Len() * c.elem.minSize
		}
		c.enc, c.dec = encArray, decArray
	case reflect.Map:
		if !keyKind(t.Key()) {
			err = fmt.Errorf("codec: map key type %s must be built of bools, numbers, strings, arrays and structs: %w",
				t.Key(), gen.ErrUnsupported)
			break
		}
		if c.key, err = b.codecFor(t.Key()); err == nil {
			c.elem, err = b.codecFor(t.Elem())
		}
		c.enc, c.dec = encMap, decMap
		b.repeated = append(b.repeated, c)
	case reflect.Struct:
		err = b.buildStruct(c)
	default:
		err = fmt.Errorf("codec: %s values cannot be encoded: %w", t.Kind(), gen.ErrUnsupported)
	}
	if err != nil {
		return nil, fmt.Errorf("in %s: %w", t, err)
	}
	return c, nil
}

// atomType is gen.Atom, whose values are decoded through the decoder's
// intern table.
var atomType = reflect.TypeFor[gen.Atom]()

// fieldOp is one step of encoding or decoding a struct: a field of kind op
// at offset bytes into the struct (which codec handles when op is opCodec),
// or the start or end of a struct held in a field by value.
type fieldOp struct {
	offset uintptr
	op     opKind
	codec  *typeCodec
}

// opKind says what a fieldOp does.
type opKind uint8

const (
	opCodec opKind = iota // call the field's codec
	opEnter               // a nested struct starts: one level deeper
	opLeave               // a nested struct ends
	opBool
	opInt64 // any signed integer kind of 8 bytes
	opUint64
	opString // a string kind other than gen.Atom
	opAtom
)

// buildStruct compiles a struct into its ops. The fields of a struct held by
// value are spliced in between opEnter and opLeave, which count its level of
// nesting exactly as its own codec would; its codec is complete already, as
// a struct cannot contain itself by value.
func (b *builder) buildStruct(c *typeCodec) error {
	t := c.typ
	ops := make([]fieldOp, 0, t.NumField())
	c.minSize = 0
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			return fmt.Errorf("codec: struct %s has unexported field %s: %w", t, f.Name, gen.ErrUnsupported)
		}
		fc, err := b.codecFor(f.Type)
		if err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		c.minSize += fc.minSize
		if f.Type.Kind() != reflect.Struct {
			ops = append(ops, fieldOp{offset: f.Offset, op: fc.op, codec: fc})
			continue
		}
		ops = append(ops, fieldOp{op: opEnter})
		for _, op := range fc.ops {
			op.offset += f.Offset
			ops = append(ops, op)
		}
		ops = append(ops, fieldOp{op: opLeave})
	}
	if t.Name() != "" {
		b.named = append(b.named, t)
	}
	c.ops = ops
	c.enc, c.dec = encStruct, decStruct
	return nil
}

// validate refuses slices and maps whose elements can encode to zero bytes:
// a decoder could not bound their length by the input's size.
func (b *builder) validate() error {
	for _, c := range b.repeated {
		size := c.elem.minSize
		if c.key != nil {
			size += c.key.minSize
		}
		if size == 0 {
			return fmt.Errorf("codec: %s holds elements that encode to no bytes: %w", c.typ, gen.ErrUnsupported)
		}
	}
	return nil
}

// keyKind reports whether t can be a map key that decodes back to an equal
// key: built only of bools, numbers, strings, arrays and structs.
func keyKind(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	case reflect.Array:
		return keyKind(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !keyKind(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

// bySize picks, by an integer's size in bytes, the one of four functions
// that loads or stores integers of that size.
func bySize[F any](size uintptr, f1, f2, f4, f8 F) F {
	switch size {
	case 1:
		return f1
	case 2:
		return f2
	case 4:
		return f4
	}
	return f8
}

// eface is the layout of an empty interface value: its dynamic type and its
// data word. The data word is the value itself for pointer-shaped types
// (direct) and a pointer to the value otherwise.
type eface struct {
	typ, data unsafe.Pointer
}

// probe is an address that indirectInInterface plants in a value.
var probe byte

// indirectInInterface reports whether an interface holding a t keeps a
// pointer to the value rather than the value itself. Which types are kept
// directly is the compiler's rule; rather than restate it, this observes it:
// it plants a known address in the one word of a pointer-sized t, boxes the
// t, and looks whether the data word is that address. Only the word's bits
// are looked at; the planted value is never used as a t.
func indirectInInterface(t reflect.Type) bool {
	if t.Size() != unsafe.Sizeof(uintptr(0)) {
		return true // direct values are exactly one pointer word
	}
	v := reflect.New(t)
	*(*unsafe.Pointer)(v.UnsafePointer()) = unsafe.Pointer(&probe)
	boxed := v.Elem().Interface()
	return (*eface)(unsafe.Pointer(&boxed)).data != unsafe.Pointer(&probe)
}
