package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"

	"github.com/regent-go/regent/gen"
)

// This file keeps the reflective encoder the codec had before it compiled
// types into unsafe field operations: every value is walked through
// reflect.Value. Tests compare the two encoders' bytes, which proves the wire
// format unchanged.

// referenceEncode appends v's encoding as the reflective encoder made it.
func (r *Registry) referenceEncode(dst []byte, v any) ([]byte, error) {
	e := &refEncoder{t: r.cur.Load(), buf: dst}
	if v == nil {
		return append(dst, tagNil), nil
	}
	if err := e.dynamic(reflect.ValueOf(v)); err != nil {
		return dst, err
	}
	return e.buf, nil
}

type refEncoder struct {
	t     *tables
	buf   []byte
	depth int
}

func (e *refEncoder) enter() error {
	e.depth++
	if e.depth > MaxDepth {
		return fmt.Errorf("reference: too deep: %w", gen.ErrTooLarge)
	}
	return nil
}

func (e *refEncoder) dynamic(v reflect.Value) error {
	if ent, ok := e.t.byType[v.Type()]; ok {
		e.buf = append(e.buf, ent.header...)
		return e.value(v)
	}
	if err, ok := v.Interface().(error); ok {
		// Errors of unregistered types had, and have, one encoding:
		// the encoder's.
		enc := &encoder{t: e.t, buf: e.buf}
		if err := enc.error(err); err != nil {
			return err
		}
		e.buf = enc.buf
		return nil
	}
	return fmt.Errorf("reference: %s: %w", v.Type(), gen.ErrUnregistered)
}

// value writes v by its kind, as the reflective encoder's per-kind functions
// did.
func (e *refEncoder) value(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Bool:
		b := byte(0)
		if v.Bool() {
			b = 1
		}
		e.buf = append(e.buf, b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.buf = binary.AppendVarint(e.buf, v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		e.buf = binary.AppendUvarint(e.buf, v.Uint())
	case reflect.Float32:
		e.buf = binary.BigEndian.AppendUint32(e.buf, math.Float32bits(float32(v.Float())))
	case reflect.Float64:
		e.buf = binary.BigEndian.AppendUint64(e.buf, math.Float64bits(v.Float()))
	case reflect.String:
		e.buf = appendString(e.buf, v.String())
	case reflect.Slice:
		if v.IsNil() {
			e.buf = append(e.buf, 0)
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			e.buf = binary.AppendUvarint(e.buf, uint64(v.Len())+1)
			e.buf = append(e.buf, v.Bytes()...)
			return nil
		}
		e.buf = binary.AppendUvarint(e.buf, uint64(v.Len())+1)
		return e.elems(v)
	case reflect.Array:
		return e.elems(v)
	case reflect.Map:
		if v.IsNil() {
			e.buf = append(e.buf, 0)
			return nil
		}
		if err := e.enter(); err != nil {
			return err
		}
		e.buf = binary.AppendUvarint(e.buf, uint64(v.Len())+1)
		for it := v.MapRange(); it.Next(); {
			if err := e.value(it.Key()); err != nil {
				return err
			}
			if err := e.value(it.Value()); err != nil {
				return err
			}
		}
		e.depth--
	case reflect.Pointer:
		if v.IsNil() {
			e.buf = append(e.buf, 0)
			return nil
		}
		if err := e.enter(); err != nil {
			return err
		}
		e.buf = append(e.buf, 1)
		if err := e.value(v.Elem()); err != nil {
			return err
		}
		e.depth--
	case reflect.Interface:
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
	case reflect.Struct:
		if err := e.enter(); err != nil {
			return err
		}
		for i := range v.NumField() {
			if err := e.value(v.Field(i)); err != nil {
				return err
			}
		}
		e.depth--
	default:
		return fmt.Errorf("reference: %s: %w", v.Kind(), gen.ErrUnsupported)
	}
	return nil
}

// elems writes the elements of a slice or array, one level deeper.
func (e *refEncoder) elems(v reflect.Value) error {
	if err := e.enter(); err != nil {
		return err
	}
	for i := range v.Len() {
		if err := e.value(v.Index(i)); err != nil {
			return err
		}
	}
	e.depth--
	return nil
}
