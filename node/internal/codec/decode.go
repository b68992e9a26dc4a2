package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"unsafe"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node/internal/intern"
)

// decoder is the state of one Decode call. Decode borrows one from a pool;
// a Decoder owns one for its whole life.
type decoder struct {
	t     *tables
	src   []byte
	pos   int
	depth int
	atoms *intern.Table // where gen.Atom values are interned; nil: nowhere
	// A Decoder's decoder remembers (keepLast) the named type decoded
	// last, with the snapshot it came from: a stream of frames names the
	// same type again and again, and comparing its name costs less than
	// hashing it.
	keepLast   bool
	last       *entry
	lastTables *tables
	// strs holds the last few short plain strings decoded when there is no
	// atoms table (with one, strs[0] holds the last), and nextStr the slot
	// the next one replaces:
	// messages repeat identifiers such as a cluster's name, and a string
	// decoded before costs a comparison instead of an allocation. Sharing
	// an immutable string is invisible to its users, and the few kept are
	// small, so a Decoder keeps them from frame to frame.
	strs    [recentStrings]string
	nextStr int
}

// recentStrings is the size of decoder.strs, and maxRecentString the length
// of the longest string kept there.
const (
	recentStrings   = 4
	maxRecentString = 64
)

var decoders = sync.Pool{New: func() any { return new(decoder) }}

// Decode decodes one value that fills src exactly. A type name this registry
// does not know gives an error wrapping ErrUnknownType; any other fault
// (truncation, trailing bytes, impossible lengths, nesting deeper than
// MaxDepth) gives an error wrapping gen.ErrMalformed. It never panics and
// allocates no more than a small multiple of len(src).
func (r *Registry) Decode(src []byte) (any, error) {
	d := decoders.Get().(*decoder)
	v, err := d.value(r.cur.Load(), src)
	d.reset()
	decoders.Put(d)
	return v, err
}

// DecodePrefix decodes the value at the start of src and returns it with the
// number of bytes it took, so several values can be packed one after another.
// Errors are those of Decode.
func (r *Registry) DecodePrefix(src []byte) (any, int, error) {
	d := decoders.Get().(*decoder)
	v, n, err := d.prefix(r.cur.Load(), src)
	d.reset()
	decoders.Put(d)
	return v, n, err
}

// Decoder decodes one value after another for one goroutine (a
// connection's reader), keeping what repeats between them: the names
// (gen.Atom) and short strings it has seen, in an intern table, so that a
// node or process name, or an identifier such as a cluster's name, seen
// before costs no allocation, and the last named type, so that a stream of
// messages of one type costs no lookup by name. It decodes
// exactly as Decode does, with the registry's current types.
type Decoder struct {
	reg *Registry
	d   decoder
}

// NewDecoder returns a Decoder of r's types that interns names in atoms
// (nil: it interns nothing). The Decoder and atoms belong to the calling
// goroutine.
func (r *Registry) NewDecoder(atoms *intern.Table) *Decoder {
	return &Decoder{reg: r, d: decoder{atoms: atoms, keepLast: true}}
}

// Decode is Registry.Decode, with the Decoder's names and last type.
func (dec *Decoder) Decode(src []byte) (any, error) {
	v, err := dec.d.value(dec.reg.cur.Load(), src)
	dec.d.src = nil
	return v, err
}

// value decodes the one value that fills src, using snapshot t.
func (d *decoder) value(t *tables, src []byte) (any, error) {
	v, n, err := d.prefix(t, src)
	if err != nil {
		return nil, err
	}
	if n != len(src) {
		return nil, fmt.Errorf("codec: %d bytes follow the value: %w", len(src)-n, gen.ErrMalformed)
	}
	return v, nil
}

func (d *decoder) prefix(t *tables, src []byte) (any, int, error) {
	d.t, d.src, d.pos, d.depth = t, src, 0, 0
	v, err := d.dynamic()
	if err != nil {
		return nil, 0, err
	}
	return v, d.pos, nil
}

// reset drops what a pooled decoder must not keep.
func (d *decoder) reset() {
	*d = decoder{}
}

func (d *decoder) malformed(format string, args ...any) error {
	return fmt.Errorf("codec: at byte %d: %s: %w", d.pos, fmt.Sprintf(format, args...), gen.ErrMalformed)
}

// enter goes one level deeper; it is small enough to be inlined.
func (d *decoder) enter() error {
	d.depth++
	if d.depth > MaxDepth {
		return d.tooDeep()
	}
	return nil
}

func (d *decoder) tooDeep() error {
	return d.malformed("value nests deeper than %d levels", MaxDepth)
}

func (d *decoder) byte() (byte, error) {
	if d.pos >= len(d.src) {
		return 0, d.malformed("input ends early")
	}
	b := d.src[d.pos]
	d.pos++
	return b, nil
}

func (d *decoder) next(n int) ([]byte, error) {
	if n > len(d.src)-d.pos {
		return nil, d.malformed("%d bytes announced, %d left", n, len(d.src)-d.pos)
	}
	b := d.src[d.pos : d.pos+n]
	d.pos += n
	return b, nil
}

func (d *decoder) uvarint() (uint64, error) {
	if d.pos < len(d.src) && d.src[d.pos] < 0x80 { // one byte: most lengths and small numbers
		x := uint64(d.src[d.pos])
		d.pos++
		return x, nil
	}
	x, n := binary.Uvarint(d.src[d.pos:])
	if n <= 0 {
		return 0, d.malformed("bad unsigned varint")
	}
	d.pos += n
	return x, nil
}

func (d *decoder) varint() (int64, error) {
	if d.pos < len(d.src) && d.src[d.pos] < 0x80 { // one byte, zig-zag encoded
		b := int64(d.src[d.pos])
		d.pos++
		return b>>1 ^ -(b & 1), nil
	}
	x, n := binary.Varint(d.src[d.pos:])
	if n <= 0 {
		return 0, d.malformed("bad varint")
	}
	d.pos += n
	return x, nil
}

// count reads a length of items at least minSize bytes each and refuses it,
// before anything is allocated, when the rest of the input cannot hold them.
func (d *decoder) count(x uint64, minSize int) (int, error) {
	left := uint64(len(d.src) - d.pos)
	if x > left/uint64(max(minSize, 1)) {
		return 0, d.malformed("%d items of at least %d bytes announced, %d bytes left", x, minSize, left)
	}
	return int(x), nil
}

// presence reads the nil-or-length prefix of a slice or map: ok is false for
// nil, otherwise n is the checked length.
func (d *decoder) presence(minSize int) (n int, ok bool, err error) {
	x, err := d.uvarint()
	if err != nil || x == 0 {
		return 0, false, err
	}
	n, err = d.count(x-1, minSize)
	return n, err == nil, err
}

func (d *decoder) string() (string, error) {
	b, err := d.stringBytes()
	return string(b), err
}

// plainString reads a string that is not a gen.Atom. A short one is
// interned like a name when the decoder has a table (messages repeat
// identifiers, such as a cluster's name, and sharing an immutable string
// is invisible to its users), after a look at the last one; otherwise a
// recent one with the same bytes is reused (see decoder.strs).
func (d *decoder) plainString() (string, error) {
	b, err := d.stringBytes()
	if err != nil || len(b) == 0 || len(b) > maxRecentString {
		return string(b), err
	}
	if d.atoms != nil {
		// The last one first: a stream of one message repeats its strings
		// frame after frame, and one comparison costs less than a hash.
		if last := d.strs[0]; last == string(b) {
			return last, nil
		}
		d.strs[0] = string(d.atoms.Atom(b))
		return d.strs[0], nil
	}
	for _, s := range d.strs {
		if s == string(b) { // comparing does not allocate
			return s, nil
		}
	}
	s := string(b)
	d.strs[d.nextStr] = s
	d.nextStr = (d.nextStr + 1) % recentStrings
	return s, nil
}

// stringBytes reads a length-prefixed string's bytes, which alias src.
func (d *decoder) stringBytes() ([]byte, error) {
	x, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	n, err := d.count(x, 1)
	if err != nil {
		return nil, err
	}
	return d.next(n)
}

// dynamic reads a value preceded by its type; nil stands for nil.
func (d *decoder) dynamic() (any, error) {
	tag, err := d.byte()
	if err != nil {
		return nil, err
	}
	var ent *entry
	switch tag {
	case tagNil:
		return nil, nil
	case tagError:
		return d.error()
	case tagNamed:
		x, err := d.uvarint()
		if err != nil {
			return nil, err
		}
		if x > MaxTypeNameLength {
			return nil, d.malformed("type name of %d bytes", x)
		}
		name, err := d.next(int(x))
		if err != nil {
			return nil, err
		}
		if d.last != nil && d.lastTables == d.t && d.last.name == string(name) {
			ent = d.last
		} else if ent = d.t.byName[string(name)]; ent == nil {
			return nil, fmt.Errorf("codec: %q: %w", name, ErrUnknownType)
		}
		if d.keepLast {
			d.last, d.lastTables = ent, d.t
		}
	default:
		if ent = d.t.byTag[tag]; ent == nil {
			return nil, d.malformed("unknown tag 0x%02x", tag)
		}
	}
	p := reflect.New(ent.typ).UnsafePointer()
	if err := ent.codec.dec(ent.codec, d, p); err != nil {
		return nil, err
	}
	return ent.box(p), nil
}

func (d *decoder) error() (error, error) {
	kind, err := d.byte()
	if err != nil {
		return nil, err
	}
	text, err := d.string()
	if err != nil {
		return nil, err
	}
	switch kind {
	case errSentinel:
		if known, ok := d.t.errByText[text]; ok {
			return known, nil
		}
		return errors.New(text), nil
	case errText:
		x, err := d.uvarint()
		if err != nil {
			return nil, err
		}
		if x > maxSentinels {
			return nil, d.malformed("error wraps %d sentinels, at most %d allowed", x, maxSentinels)
		}
		var wrapped []error
		for range x {
			s, err := d.string()
			if err != nil {
				return nil, err
			}
			if known, ok := d.t.errByText[s]; ok {
				wrapped = append(wrapped, known)
			}
		}
		if len(wrapped) == 0 {
			return errors.New(text), nil
		}
		return &remoteError{text: text, sentinels: wrapped}, nil
	}
	return nil, d.malformed("unknown error encoding %d", kind)
}

func decBool(_ *typeCodec, d *decoder, p unsafe.Pointer) error {
	b, err := d.byte()
	if err != nil {
		return err
	}
	if b > 1 {
		return d.malformed("bool byte %d", b)
	}
	*(*bool)(p) = b == 1
	return nil
}

// decInt decodes a signed integer of T's size, refusing values it cannot hold.
func decInt[T int8 | int16 | int32 | int64](c *typeCodec, d *decoder, p unsafe.Pointer) error {
	x, err := d.varint()
	if err != nil {
		return err
	}
	if int64(T(x)) != x {
		return d.malformed("%d overflows %s", x, c.typ)
	}
	*(*T)(p) = T(x)
	return nil
}

// decUint decodes an unsigned integer of T's size, refusing values it cannot
// hold.
func decUint[T uint8 | uint16 | uint32 | uint64](c *typeCodec, d *decoder, p unsafe.Pointer) error {
	x, err := d.uvarint()
	if err != nil {
		return err
	}
	if uint64(T(x)) != x {
		return d.malformed("%d overflows %s", x, c.typ)
	}
	*(*T)(p) = T(x)
	return nil
}

func decFloat32(_ *typeCodec, d *decoder, p unsafe.Pointer) error {
	b, err := d.next(4)
	if err != nil {
		return err
	}
	*(*float32)(p) = math.Float32frombits(binary.BigEndian.Uint32(b))
	return nil
}

func decFloat64(_ *typeCodec, d *decoder, p unsafe.Pointer) error {
	b, err := d.next(8)
	if err != nil {
		return err
	}
	*(*float64)(p) = math.Float64frombits(binary.BigEndian.Uint64(b))
	return nil
}

func decString(_ *typeCodec, d *decoder, p unsafe.Pointer) error {
	s, err := d.plainString()
	if err != nil {
		return err
	}
	*(*string)(p) = s
	return nil
}

// decAtom decodes a gen.Atom, interned in the decoder's table.
func decAtom(_ *typeCodec, d *decoder, p unsafe.Pointer) error {
	b, err := d.stringBytes()
	if err != nil {
		return err
	}
	*(*gen.Atom)(p) = d.atoms.Atom(b)
	return nil
}

// decBytes decodes any slice of a byte kind, which all share []byte's layout.
func decBytes(_ *typeCodec, d *decoder, p unsafe.Pointer) error {
	n, ok, err := d.presence(1)
	if err != nil {
		return err
	}
	if !ok {
		*(*[]byte)(p) = nil
		return nil
	}
	b, err := d.next(n)
	if err != nil {
		return err
	}
	out := make([]byte, n)
	copy(out, b)
	*(*[]byte)(p) = out
	return nil
}

// zeroBase is where the decoder's empty, non-nil slices point, as the
// runtime's do: their length and capacity are 0, so it is never accessed.
var zeroBase uintptr

func decSlice(c *typeCodec, d *decoder, p unsafe.Pointer) error {
	n, ok, err := d.presence(c.elem.minSize)
	if err != nil {
		return err
	}
	if !ok {
		*(*sliceHeader)(p) = sliceHeader{}
		return nil
	}
	if err := d.enter(); err != nil {
		return err
	}
	if n == 0 {
		*(*sliceHeader)(p) = sliceHeader{data: unsafe.Pointer(&zeroBase)}
	} else {
		// reflect allocates the elements: only it knows how to allocate
		// an array of a type known at run time. Grow on a nil slice
		// allocates zeroed room for n, and nothing else.
		*(*sliceHeader)(p) = sliceHeader{}
		s := reflect.NewAt(c.typ, p).Elem()
		s.Grow(n)
		s.SetLen(n)
		if err := decElems(c.elem, d, (*sliceHeader)(p).data, n); err != nil {
			return err
		}
	}
	d.depth--
	return nil
}

// decElems decodes n elements of codec c into the array that starts at p.
func decElems(c *typeCodec, d *decoder, p unsafe.Pointer, n int) error {
	for i := range n {
		if err := c.dec(c, d, unsafe.Add(p, uintptr(i)*c.size)); err != nil {
			return err
		}
	}
	return nil
}

func decArray(c *typeCodec, d *decoder, p unsafe.Pointer) error {
	if err := d.enter(); err != nil {
		return err
	}
	if err := decElems(c.elem, d, p, c.typ.Len()); err != nil {
		return err
	}
	d.depth--
	return nil
}

// decMap goes through reflect, the only way to build a map of any type: each
// key and value is decoded into a reused variable and copied into the map.
func decMap(c *typeCodec, d *decoder, p unsafe.Pointer) error {
	n, ok, err := d.presence(c.key.minSize + c.elem.minSize)
	if err != nil {
		return err
	}
	m := reflect.NewAt(c.typ, p).Elem()
	if !ok {
		m.SetZero()
		return nil
	}
	if err := d.enter(); err != nil {
		return err
	}
	out := reflect.MakeMapWithSize(c.typ, n)
	if n > 0 {
		key, val := reflect.New(c.key.typ), reflect.New(c.elem.typ)
		kp, vp := key.UnsafePointer(), val.UnsafePointer()
		for range n {
			if err := c.key.dec(c.key, d, kp); err != nil {
				return err
			}
			if err := c.elem.dec(c.elem, d, vp); err != nil {
				return err
			}
			out.SetMapIndex(key.Elem(), val.Elem())
		}
	}
	m.Set(out)
	d.depth--
	return nil
}

func decPointer(c *typeCodec, d *decoder, p unsafe.Pointer) error {
	b, err := d.byte()
	if err != nil {
		return err
	}
	switch b {
	case 0:
		*(*unsafe.Pointer)(p) = nil
		return nil
	case 1:
	default:
		return d.malformed("pointer presence byte %d", b)
	}
	if err := d.enter(); err != nil {
		return err
	}
	target := reflect.New(c.elem.typ).UnsafePointer()
	if err := c.elem.dec(c.elem, d, target); err != nil {
		return err
	}
	*(*unsafe.Pointer)(p) = target
	d.depth--
	return nil
}

// decAny decodes a field of an empty interface type, which holds anything.
func decAny(_ *typeCodec, d *decoder, p unsafe.Pointer) error {
	x, err := d.held()
	if err != nil {
		return err
	}
	*(*any)(p) = x
	return nil
}

// decInterface decodes a field of an interface type with methods, refusing
// values that do not implement it; reflect stores it, as its layout is the
// runtime's.
func decInterface(c *typeCodec, d *decoder, p unsafe.Pointer) error {
	x, err := d.held()
	if err != nil {
		return err
	}
	v := reflect.NewAt(c.typ, p).Elem()
	if x == nil {
		v.SetZero()
		return nil
	}
	xv := reflect.ValueOf(x)
	if !xv.Type().AssignableTo(c.typ) {
		return d.malformed("a %s cannot be held in a %s", xv.Type(), c.typ)
	}
	v.Set(xv)
	return nil
}

// held decodes the value of an interface field.
func (d *decoder) held() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	x, err := d.dynamic()
	if err != nil {
		return nil, err
	}
	d.depth--
	return x, nil
}

func decStruct(c *typeCodec, d *decoder, p unsafe.Pointer) error {
	if err := d.enter(); err != nil {
		return err
	}
	if err := d.fields(c.ops, p); err != nil {
		return err
	}
	d.depth--
	return nil
}

// fields runs a struct's ops on the struct at p.
func (d *decoder) fields(ops []fieldOp, p unsafe.Pointer) error {
	for i := range ops {
		op := &ops[i]
		fp := unsafe.Add(p, op.offset)
		var err error
		switch op.op {
		case opEnter:
			err = d.enter()
		case opLeave:
			d.depth--
		case opBool:
			err = decBool(nil, d, fp)
		case opInt64:
			*(*int64)(fp), err = d.varint()
		case opUint64:
			*(*uint64)(fp), err = d.uvarint()
		case opString:
			*(*string)(fp), err = d.plainString()
		case opAtom:
			err = decAtom(nil, d, fp)
		default:
			err = op.codec.dec(op.codec, d, fp)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
