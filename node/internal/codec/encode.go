package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"sync"
	"unsafe"

	"github.com/regent-go/regent/gen"
)

// encoder is the state of one Encode call; encoders are pooled.
type encoder struct {
	t     *tables
	buf   []byte
	depth int
	// words holds, for each depth, the data word of a direct value being
	// encoded from an interface (see entry.pointer): the value's codec
	// reads it through a pointer, and a word of the heap-allocated encoder
	// costs no allocation. Each depth has its own, as an interface can
	// hold a value that holds an interface. Cleared after use, so a pooled
	// encoder retains nothing.
	words [MaxDepth + 1]unsafe.Pointer
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
		err = e.dynamic(v)
	}
	out := e.buf
	e.t, e.buf = nil, nil
	encoders.Put(e)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// enter goes one level deeper; it is small enough to be inlined.
func (e *encoder) enter() error {
	e.depth++
	if e.depth > MaxDepth {
		return errTooDeep()
	}
	return nil
}

func errTooDeep() error {
	return fmt.Errorf("codec: value nests deeper than %d levels (a cycle?): %w", MaxDepth, gen.ErrTooLarge)
}

// dynamic writes x, which is not nil, preceded by its type.
func (e *encoder) dynamic(x any) error {
	if ent, ok := e.t.byWord[(*eface)(unsafe.Pointer(&x)).typ]; ok {
		e.buf = append(e.buf, ent.header...)
		word := &e.words[e.depth]
		err := ent.codec.enc(ent.codec, e, ent.pointer(&x, word))
		*word = nil
		return err
	}
	if err, ok := x.(error); ok {
		return e.error(err)
	}
	return fmt.Errorf("codec: type %s is not registered: %w", reflect.TypeOf(x), gen.ErrUnregistered)
}

// error writes an error of an unregistered type: a registered sentinel by its
// text, anything else as its text plus the registered sentinels it wraps.
func (e *encoder) error(value error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("codec: the Error method of %T panicked: %v: %w", value, p, gen.ErrUnsupported)
		}
	}()
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

func encBool(_ *typeCodec, e *encoder, p unsafe.Pointer) error {
	if *(*bool)(p) {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
	return nil
}

// encInt encodes a signed integer of T's size (an int is an int32 or int64).
func encInt[T int8 | int16 | int32 | int64](_ *typeCodec, e *encoder, p unsafe.Pointer) error {
	e.buf = binary.AppendVarint(e.buf, int64(*(*T)(p)))
	return nil
}

// encUint encodes an unsigned integer of T's size.
func encUint[T uint8 | uint16 | uint32 | uint64](_ *typeCodec, e *encoder, p unsafe.Pointer) error {
	e.buf = binary.AppendUvarint(e.buf, uint64(*(*T)(p)))
	return nil
}

func encFloat32(_ *typeCodec, e *encoder, p unsafe.Pointer) error {
	e.buf = binary.BigEndian.AppendUint32(e.buf, math.Float32bits(*(*float32)(p)))
	return nil
}

func encFloat64(_ *typeCodec, e *encoder, p unsafe.Pointer) error {
	e.buf = binary.BigEndian.AppendUint64(e.buf, math.Float64bits(*(*float64)(p)))
	return nil
}

func encString(_ *typeCodec, e *encoder, p unsafe.Pointer) error {
	e.buf = appendString(e.buf, *(*string)(p))
	return nil
}

// Slices, maps and pointers start with a presence prefix: uvarint 0 for nil,
// otherwise 1 + the length (for pointers, just 1).

// sliceHeader is the layout of every slice value; data is nil only for a
// nil slice.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// encBytes encodes any slice of a byte kind, which all share []byte's layout.
func encBytes(_ *typeCodec, e *encoder, p unsafe.Pointer) error {
	b := *(*[]byte)(p)
	if b == nil {
		e.buf = append(e.buf, 0)
		return nil
	}
	e.buf = binary.AppendUvarint(e.buf, uint64(len(b))+1)
	e.buf = append(e.buf, b...)
	return nil
}

func encSlice(c *typeCodec, e *encoder, p unsafe.Pointer) error {
	s := *(*sliceHeader)(p)
	if s.data == nil {
		e.buf = append(e.buf, 0)
		return nil
	}
	if err := e.enter(); err != nil {
		return err
	}
	e.buf = binary.AppendUvarint(e.buf, uint64(s.len)+1)
	if err := encElems(c.elem, e, s.data, s.len); err != nil {
		return err
	}
	e.depth--
	return nil
}

// encElems encodes the n elements of codec c that start at p.
func encElems(c *typeCodec, e *encoder, p unsafe.Pointer, n int) error {
	for i := range n {
		if err := c.enc(c, e, unsafe.Add(p, uintptr(i)*c.size)); err != nil {
			return err
		}
	}
	return nil
}

func encArray(c *typeCodec, e *encoder, p unsafe.Pointer) error {
	if err := e.enter(); err != nil {
		return err
	}
	if err := encElems(c.elem, e, p, c.typ.Len()); err != nil {
		return err
	}
	e.depth--
	return nil
}

// encMap goes through reflect, the only way to iterate a map of any type:
// each key and value is copied into a reused variable and encoded from there.
func encMap(c *typeCodec, e *encoder, p unsafe.Pointer) error {
	m := reflect.NewAt(c.typ, p).Elem()
	if m.IsNil() {
		e.buf = append(e.buf, 0)
		return nil
	}
	if err := e.enter(); err != nil {
		return err
	}
	e.buf = binary.AppendUvarint(e.buf, uint64(m.Len())+1)
	if m.Len() > 0 {
		key, val := reflect.New(c.key.typ), reflect.New(c.elem.typ)
		kp, vp := key.UnsafePointer(), val.UnsafePointer()
		for it := m.MapRange(); it.Next(); {
			key.Elem().SetIterKey(it)
			val.Elem().SetIterValue(it)
			if err := c.key.enc(c.key, e, kp); err != nil {
				return err
			}
			if err := c.elem.enc(c.elem, e, vp); err != nil {
				return err
			}
		}
	}
	e.depth--
	return nil
}

func encPointer(c *typeCodec, e *encoder, p unsafe.Pointer) error {
	target := *(*unsafe.Pointer)(p)
	if target == nil {
		e.buf = append(e.buf, 0)
		return nil
	}
	if err := e.enter(); err != nil {
		return err
	}
	e.buf = append(e.buf, 1)
	if err := c.elem.enc(c.elem, e, target); err != nil {
		return err
	}
	e.depth--
	return nil
}

// encAny encodes a field of an empty interface type.
func encAny(_ *typeCodec, e *encoder, p unsafe.Pointer) error {
	return e.held(*(*any)(p))
}

// encInterface encodes a field of an interface type with methods, whose
// layout is the runtime's: reflect converts it to an empty interface.
func encInterface(c *typeCodec, e *encoder, p unsafe.Pointer) error {
	return e.held(reflect.NewAt(c.typ, p).Elem().Interface())
}

// held encodes the value of an interface field.
func (e *encoder) held(x any) error {
	if x == nil {
		e.buf = append(e.buf, tagNil)
		return nil
	}
	if err := e.enter(); err != nil {
		return err
	}
	if err := e.dynamic(x); err != nil {
		return err
	}
	e.depth--
	return nil
}

func encStruct(c *typeCodec, e *encoder, p unsafe.Pointer) error {
	if err := e.enter(); err != nil {
		return err
	}
	if err := e.fields(c.ops, p); err != nil {
		return err
	}
	e.depth--
	return nil
}

// fields runs a struct's ops on the struct at p. The buffer stays in a local
// variable between fields that need no call.
func (e *encoder) fields(ops []fieldOp, p unsafe.Pointer) error {
	buf := e.buf
	for i := range ops {
		op := &ops[i]
		fp := unsafe.Add(p, op.offset)
		switch op.op {
		case opEnter:
			if err := e.enter(); err != nil {
				return err
			}
		case opLeave:
			e.depth--
		case opBool:
			b := byte(0)
			if *(*bool)(fp) {
				b = 1
			}
			buf = append(buf, b)
		case opInt64:
			buf = binary.AppendVarint(buf, *(*int64)(fp))
		case opUint64:
			buf = binary.AppendUvarint(buf, *(*uint64)(fp))
		case opString, opAtom:
			buf = appendString(buf, *(*string)(fp))
		default:
			e.buf = buf
			if err := op.codec.enc(op.codec, e, fp); err != nil {
				return err
			}
			buf = e.buf
		}
	}
	e.buf = buf
	return nil
}
