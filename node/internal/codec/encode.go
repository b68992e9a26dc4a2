package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"sync"

	"github.com/regent-go/regent/gen"
)

// encoder is the state of one Encode call; encoders are pooled.
type encoder struct {
	t     *tables
	buf   []byte
	depth int
}

var encoders = sync.Pool{New: func() any { return new(encoder) }}

// Encode appends the encoding of v (its type and value) to dst. v must be nil,
// a builtin, a registered type, or an error. A value whose type, or the
// dynamic type of a value held in one of its interface fields, is not
// registered fails with an error wrapping gen.ErrUnregistered; on any error
// the returned slice is dst, its length unchanged.
func (r *Registry) Encode(dst []byte, v any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	e.t, e.buf, e.depth = r.cur.Load(), dst, 0
	var err error
	if v == nil {
		e.buf = append(e.buf, tagNil)
	} else {
		err = e.dynamic(reflect.ValueOf(v))
	}
	out := e.buf
	e.t, e.buf = nil, nil
	encoders.Put(e)
	if err != nil {
		return dst, err
	}
	return out, nil
}

func (e *encoder) enter() error {
	e.depth++
	if e.depth > MaxDepth {
		return fmt.Errorf("codec: value nests deeper than %d levels (a cycle?): %w", MaxDepth, gen.ErrTooLarge)
	}
	return nil
}

// dynamic writes a concrete value preceded by its type.
func (e *encoder) dynamic(v reflect.Value) error {
	if ent, ok := e.t.byType[v.Type()]; ok {
		e.buf = append(e.buf, ent.header...)
		return ent.codec.encode(e, v)
	}
	if v.Type().Implements(errorType) {
		return e.error(v)
	}
	return fmt.Errorf("codec: type %s is not registered: %w", v.Type(), gen.ErrUnregistered)
}

// error writes an error of an unregistered type: a registered sentinel by its
// text, anything else as its text plus the registered sentinels it wraps.
func (e *encoder) error(v reflect.Value) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("codec: the Error method of %s panicked: %v: %w", v.Type(), p, gen.ErrUnsupported)
		}
	}()
	value := v.Interface().(error)
	if text, ok := e.t.sentinelText(value); ok {
		e.buf = append(e.buf, tagError, errSentinel)
		e.buf = appendString(e.buf, text)
		return nil
	}
	e.buf = append(e.buf, tagError, errText)
	e.buf = appendString(e.buf, value.Error())
	wrapped := e.t.sentinelsIn(value)
	e.buf = binary.AppendUvarint(e.buf, uint64(len(wrapped)))
	for _, text := range wrapped {
		e.buf = appendString(e.buf, text)
	}
	return nil
}

// Error encodings, the byte after tagError.
const (
	errSentinel byte = 0 // then the sentinel's text
	errText     byte = 1 // then the text, a count, and that many sentinel texts
)

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func encBool(c *typeCodec, e *encoder, v reflect.Value) error {
	if v.Bool() {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
	return nil
}

func encInt(c *typeCodec, e *encoder, v reflect.Value) error {
	e.buf = binary.AppendVarint(e.buf, v.Int())
	return nil
}

func encUint(c *typeCodec, e *encoder, v reflect.Value) error {
	e.buf = binary.AppendUvarint(e.buf, v.Uint())
	return nil
}

func encFloat32(c *typeCodec, e *encoder, v reflect.Value) error {
	e.buf = binary.BigEndian.AppendUint32(e.buf, math.Float32bits(float32(v.Float())))
	return nil
}

func encFloat64(c *typeCodec, e *encoder, v reflect.Value) error {
	e.buf = binary.BigEndian.AppendUint64(e.buf, math.Float64bits(v.Float()))
	return nil
}

func encString(c *typeCodec, e *encoder, v reflect.Value) error {
	e.buf = appendString(e.buf, v.String())
	return nil
}

// Slices, maps and pointers start with a presence prefix: uvarint 0 for nil,
// otherwise 1 + the length (for pointers, just 1).

func encBytes(c *typeCodec, e *encoder, v reflect.Value) error {
	if v.IsNil() {
		e.buf = append(e.buf, 0)
		return nil
	}
	b := v.Bytes()
	e.buf = binary.AppendUvarint(e.buf, uint64(len(b))+1)
	e.buf = append(e.buf, b...)
	return nil
}

func encSlice(c *typeCodec, e *encoder, v reflect.Value) error {
	if v.IsNil() {
		e.buf = append(e.buf, 0)
		return nil
	}
	if err := e.enter(); err != nil {
		return err
	}
	n := v.Len()
	e.buf = binary.AppendUvarint(e.buf, uint64(n)+1)
	for i := range n {
		if err := c.elem.encode(e, v.Index(i)); err != nil {
			return err
		}
	}
	e.depth--
	return nil
}

func encArray(c *typeCodec, e *encoder, v reflect.Value) error {
	if err := e.enter(); err != nil {
		return err
	}
	for i := range v.Len() {
		if err := c.elem.encode(e, v.Index(i)); err != nil {
			return err
		}
	}
	e.depth--
	return nil
}

func encMap(c *typeCodec, e *encoder, v reflect.Value) error {
	if v.IsNil() {
		e.buf = append(e.buf, 0)
		return nil
	}
	if err := e.enter(); err != nil {
		return err
	}
	e.buf = binary.AppendUvarint(e.buf, uint64(v.Len())+1)
	it := v.MapRange()
	for it.Next() {
		if err := c.key.encode(e, it.Key()); err != nil {
			return err
		}
		if err := c.elem.encode(e, it.Value()); err != nil {
			return err
		}
	}
	e.depth--
	return nil
}

func encPointer(c *typeCodec, e *encoder, v reflect.Value) error {
	if v.IsNil() {
		e.buf = append(e.buf, 0)
		return nil
	}
	if err := e.enter(); err != nil {
		return err
	}
	e.buf = append(e.buf, 1)
	if err := c.elem.encode(e, v.Elem()); err != nil {
		return err
	}
	e.depth--
	return nil
}

func encInterface(c *typeCodec, e *encoder, v reflect.Value) error {
	if v.IsNil() {
		e.buf = append(e.buf, tagNil)
		return nil
	}
	if err := e.enter(); err != nil {
		return err
	}
	if err := e.dynamic(v.Elem()); err != nil {
		return err
	}
	e.depth--
	return nil
}

func encStruct(c *typeCodec, e *encoder, v reflect.Value) error {
	if err := e.enter(); err != nil {
		return err
	}
	for _, f := range c.fields {
		if err := f.codec.encode(e, v.Field(f.index)); err != nil {
			return err
		}
	}
	e.depth--
	return nil
}
