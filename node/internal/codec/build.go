package codec

import (
	"fmt"
	"reflect"

	"github.com/regent-go/regent/gen"
)

// typeCodec encodes and decodes values of one static type. It is built once
// per type and never changes afterwards, so snapshots share it freely.
type typeCodec struct {
	typ reflect.Type
	// minSize is the fewest bytes any value of typ encodes to; decoding
	// checks a length prefix against it before allocating.
	minSize int
	enc     func(c *typeCodec, e *encoder, v reflect.Value) error
	// dec overwrites all of v, which is settable.
	dec func(c *typeCodec, d *decoder, v reflect.Value) error
	// elem is the element codec of slices, arrays, pointers and map values;
	// key that of map keys.
	elem, key *typeCodec
	// fields are a struct's fields, in order.
	fields []field
}

func (c *typeCodec) encode(e *encoder, v reflect.Value) error { return c.enc(c, e, v) }

func (c *typeCodec) decode(d *decoder, v reflect.Value) error { return c.dec(c, d, v) }

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
	c := &typeCodec{typ: t, minSize: 1}
	b.staged[t] = c
	var err error
	switch t.Kind() {
	case reflect.Bool:
		c.enc, c.dec = encBool, decBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		c.enc, c.dec = encInt, decInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		c.enc, c.dec = encUint, decUint
	case reflect.Float32:
		c.enc, c.dec, c.minSize = encFloat32, decFloat32, 4
	case reflect.Float64:
		c.enc, c.dec, c.minSize = encFloat64, decFloat64, 8
	case reflect.String:
		c.enc, c.dec = encString, decString
		if t == atomType {
			c.dec = decAtom // names repeat: intern them
		}
	case reflect.Interface:
		c.enc, c.dec = encInterface, decInterface
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

// field is one struct field's position and codec.
type field struct {
	index int
	codec *typeCodec
}

func (b *builder) buildStruct(c *typeCodec) error {
	t := c.typ
	fields := make([]field, 0, t.NumField())
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
		fields = append(fields, field{index: i, codec: fc})
		c.minSize += fc.minSize
	}
	if t.Name() != "" {
		b.named = append(b.named, t)
	}
	c.fields = fields
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
