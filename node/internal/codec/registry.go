package codec

import (
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/regent-go/regent/gen"
)

// MaxDepth is how deeply values may nest (pointers, slices, arrays, maps,
// structs and interface values each add a level). Decode refuses deeper input
// as malformed; Encode refuses deeper values (a cyclic pointer structure, for
// one) with an error wrapping gen.ErrTooLarge.
const MaxDepth = 32

// MaxTypeNameLength caps a wire type name, in bytes. Registering a type with a
// longer name fails; a longer name on the wire is malformed.
const MaxTypeNameLength = 1024

// ErrUnknownType means a value on the wire names a type this registry does not
// know. The value cannot be skipped, so the caller drops the whole frame, but
// the stream itself is intact. It wraps gen.ErrUnregistered and never
// gen.ErrMalformed.
var ErrUnknownType = fmt.Errorf("codec: unknown type name: %w", gen.ErrUnregistered)

// Wire tags: the first byte of every dynamically typed value.
const (
	tagNil byte = iota
	tagBool
	tagInt
	tagInt8
	tagInt16
	tagInt32
	tagInt64
	tagUint
	tagUint8
	tagUint16
	tagUint32
	tagUint64
	tagFloat32
	tagFloat64
	tagString
	tagBytes
	tagStrings
	tagStringMap
	tagAnySlice
	tagError
	tagAtom
	tagPID
	tagProcessID
	tagRef
	tagDownPID
	tagDownProcessID
	tagDownNode
	tagExitPID
	tagExitProcessID
	tagExitNode
	// tagNamed is followed by a uvarint name length and the name.
	tagNamed byte = 0xFF
)

// builtins are the types every registry knows without registration, each with
// its one-byte tag.
var builtins = []struct {
	tag   byte
	value any
}{
	{tagBool, false},
	{tagInt, int(0)},
	{tagInt8, int8(0)},
	{tagInt16, int16(0)},
	{tagInt32, int32(0)},
	{tagInt64, int64(0)},
	{tagUint, uint(0)},
	{tagUint8, uint8(0)},
	{tagUint16, uint16(0)},
	{tagUint32, uint32(0)},
	{tagUint64, uint64(0)},
	{tagFloat32, float32(0)},
	{tagFloat64, float64(0)},
	{tagString, ""},
	{tagBytes, []byte(nil)},
	{tagStrings, []string(nil)},
	{tagStringMap, map[string]string(nil)},
	{tagAnySlice, []any(nil)},
	{tagAtom, gen.Atom("")},
	{tagPID, gen.PID{}},
	{tagProcessID, gen.ProcessID{}},
	{tagRef, gen.Ref{}},
	{tagDownPID, gen.MessageDownPID{}},
	{tagDownProcessID, gen.MessageDownProcessID{}},
	{tagDownNode, gen.MessageDownNode{}},
	{tagExitPID, gen.MessageExitPID{}},
	{tagExitProcessID, gen.MessageExitProcessID{}},
	{tagExitNode, gen.MessageExitNode{}},
}

// genErrors are the sentinels every registry knows by identity.
var genErrors = []error{
	gen.ErrNoConnection, gen.ErrProcessUnknown, gen.ErrProcessTerminated, gen.ErrProcessMailboxFull,
	gen.ErrTimeout, gen.ErrNotAllowed, gen.ErrUnregistered, gen.ErrTooLarge, gen.ErrMalformed,
	gen.ErrNoRoute, gen.ErrNameUnknown, gen.ErrTaken, gen.ErrIncorrect, gen.ErrNodeTerminated,
	gen.ErrUnauthorized, gen.ErrUnsupported, gen.ErrEmptyCookie, gen.ErrWouldBlock,
	gen.TerminateReasonNormal, gen.TerminateReasonKill, gen.TerminateReasonPanic, gen.TerminateReasonShutdown,
}

// entry is one type that can travel as a dynamically typed value.
type entry struct {
	typ    reflect.Type
	name   string // wire name; empty for builtins
	header []byte // what precedes the value on the wire: its tag, and for named types the name
	codec  *typeCodec
	// rtype is the type word of an interface holding a typ, and indirect
	// says whether its data word points to the value (see eface): together
	// they let Encode reach a value inside an interface, and Decode box a
	// value it allocated, without copying it.
	rtype    unsafe.Pointer
	indirect bool
}

// newEntry makes the entry of typ, learning how an interface holds one.
func newEntry(typ reflect.Type, name string, header []byte, c *typeCodec) *entry {
	zero := reflect.Zero(typ).Interface()
	return &entry{
		typ: typ, name: name, header: header, codec: c,
		rtype: (*eface)(unsafe.Pointer(&zero)).typ, indirect: indirectInInterface(typ),
	}
}

// pointer returns a pointer to the typ that x, an interface holding one,
// holds. For a direct type the data word is the value, so it is stored in
// *word and word is returned. The typ must only be read through it.
func (ent *entry) pointer(x *any, word *unsafe.Pointer) unsafe.Pointer {
	data := (*eface)(unsafe.Pointer(x)).data
	if ent.indirect {
		return data
	}
	*word = data
	return unsafe.Pointer(word)
}

// box returns an interface holding the typ at p, which the decoder allocated
// and no one else refers to: an indirect value keeps p as its data word, as
// reflect does for values it boxes, so nothing is copied.
func (ent *entry) box(p unsafe.Pointer) any {
	var x any
	ef := (*eface)(unsafe.Pointer(&x))
	ef.typ = ent.rtype
	if ent.indirect {
		ef.data = p
	} else {
		ef.data = *(*unsafe.Pointer)(p)
	}
	return x
}

// tables is one immutable snapshot of a registry. Registration builds a new
// snapshot from a copy and publishes it; readers use whichever snapshot they
// loaded.
type tables struct {
	byType map[reflect.Type]*entry
	// byWord holds the entries of byType by their rtype, the type word of
	// an interface holding one: Encode finds a value's entry with a
	// pointer-keyed lookup, cheaper than hashing a reflect.Type.
	byWord map[unsafe.Pointer]*entry
	byName map[string]*entry
	byTag  [256]*entry
	// codecs holds every built codec, including types used only as fields.
	codecs map[reflect.Type]*typeCodec
	// errByText maps a registered sentinel's text to the sentinel.
	errByText map[string]error
	// errByValue maps a registered sentinel to its text; keys all have
	// comparable values.
	errByValue map[error]string
}

func (t *tables) clone() *tables {
	n := &tables{
		byType:     make(map[reflect.Type]*entry, len(t.byType)+1),
		byWord:     make(map[unsafe.Pointer]*entry, len(t.byWord)+1),
		byName:     make(map[string]*entry, len(t.byName)+1),
		byTag:      t.byTag,
		codecs:     make(map[reflect.Type]*typeCodec, len(t.codecs)+1),
		errByText:  make(map[string]error, len(t.errByText)+1),
		errByValue: make(map[error]string, len(t.errByValue)+1),
	}
	copyMap(n.byType, t.byType)
	copyMap(n.byWord, t.byWord)
	copyMap(n.byName, t.byName)
	copyMap(n.codecs, t.codecs)
	copyMap(n.errByText, t.errByText)
	copyMap(n.errByValue, t.errByValue)
	return n
}

func copyMap[K comparable, V any](dst, src map[K]V) {
	for k, v := range src {
		dst[k] = v
	}
}

// baseTables is the snapshot every new registry starts from: the builtins and
// gen's sentinels. Building it cannot fail for valid builtins; a failure is a
// bug in this package, caught by its tests.
var baseTables = sync.OnceValue(func() *tables {
	t := &tables{
		byType:     map[reflect.Type]*entry{},
		byWord:     map[unsafe.Pointer]*entry{},
		byName:     map[string]*entry{},
		codecs:     map[reflect.Type]*typeCodec{},
		errByText:  map[string]error{},
		errByValue: map[error]string{},
	}
	b := newBuilder(t)
	for _, bi := range builtins {
		typ := reflect.TypeOf(bi.value)
		c, err := b.codecFor(typ)
		if err != nil {
			panic(fmt.Sprintf("codec: builtin %s: %v", typ, err))
		}
		e := newEntry(typ, "", []byte{bi.tag}, c)
		t.add(e)
		t.byTag[bi.tag] = e
	}
	if err := b.validate(); err != nil {
		panic(fmt.Sprintf("codec: builtins: %v", err))
	}
	copyMap(t.codecs, b.staged)
	for _, err := range genErrors {
		t.errByText[err.Error()] = err
		t.errByValue[err] = err.Error()
	}
	return t
})

// Registry maps registered types to wire names and back, and registered
// sentinel errors to their text and back. It is safe for concurrent use:
// Encode and Decode read an immutable snapshot loaded atomically and never
// block; registrations are serialized by a mutex and publish a new snapshot.
type Registry struct {
	// mu serializes writers (RegisterType, RegisterError): each copies the
	// current snapshot, extends the copy and stores it in cur. Readers never
	// take mu.
	mu  sync.Mutex
	cur atomic.Pointer[tables]
}

// NewRegistry returns a registry that knows the builtin types and gen's
// sentinel errors.
func NewRegistry() *Registry {
	r := &Registry{}
	r.cur.Store(baseTables())
	return r
}

// RegisterType registers the dynamic type of v (pass a value such as MyMsg{},
// or &MyMsg{} for the pointer type) under the wire name package path + "." +
// type name. Named struct types it contains are registered with it. Types
// with unexported fields, channels, functions, complex numbers or unsafe
// pointers fail with an error wrapping gen.ErrUnsupported, and nothing is
// registered. Registering a type again is not an error; a different type
// under an already used wire name fails with gen.ErrTaken.
func (r *Registry) RegisterType(v any) error {
	if v == nil {
		return fmt.Errorf("codec: cannot register the nil interface: %w", gen.ErrIncorrect)
	}
	t := reflect.TypeOf(v)
	if _, ok := r.cur.Load().byType[t]; ok {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.cur.Load()
	if _, ok := cur.byType[t]; ok {
		return nil
	}
	name, err := wireName(t)
	if err != nil {
		return err
	}
	b := newBuilder(cur)
	if _, err := b.codecFor(t); err != nil {
		return err
	}
	if err := b.validate(); err != nil {
		return err
	}
	next := cur.clone()
	copyMap(next.codecs, b.staged)
	if err := next.addNamed(t, name); err != nil {
		return err
	}
	for _, nt := range b.named {
		if _, ok := next.byType[nt]; ok {
			continue
		}
		nn, err := wireName(nt)
		if err != nil {
			return err
		}
		if err := next.addNamed(nt, nn); err != nil {
			return err
		}
	}
	r.cur.Store(next)
	return nil
}

func (t *tables) addNamed(typ reflect.Type, name string) error {
	if len(name) > MaxTypeNameLength {
		return fmt.Errorf("codec: wire name of %s is %d bytes, over %d: %w", typ, len(name), MaxTypeNameLength, gen.ErrUnsupported)
	}
	if other, ok := t.byName[name]; ok && other.typ != typ {
		return fmt.Errorf("codec: wire name %q of %s is already used by %s: %w", name, typ, other.typ, gen.ErrTaken)
	}
	header := appendString([]byte{tagNamed}, name)
	e := newEntry(typ, name, header, t.codecs[typ])
	t.add(e)
	t.byName[name] = e
	return nil
}

// add makes e the entry of its type.
func (t *tables) add(e *entry) {
	t.byType[e.typ] = e
	t.byWord[e.rtype] = e
}

// RegisterError makes err travel by identity: the receiver gets back the same
// error value, so errors.Is works across nodes, also for errors that wrap it.
// The wire identity is err's text, so it must be the same on every node and
// unique among registered errors (another error with the same text fails with
// gen.ErrTaken). err's dynamic type must be comparable. Unregistered errors
// travel as their text.
func (r *Registry) RegisterError(err error) error {
	if err == nil {
		return fmt.Errorf("codec: cannot register a nil error: %w", gen.ErrIncorrect)
	}
	if !reflect.ValueOf(err).Comparable() {
		return fmt.Errorf("codec: error %q of type %T cannot be compared by identity: %w", err, err, gen.ErrUnsupported)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.cur.Load()
	text := err.Error()
	if known, ok := cur.errByText[text]; ok {
		if known == err {
			return nil
		}
		return fmt.Errorf("codec: another error with the text %q is already registered: %w", text, gen.ErrTaken)
	}
	next := cur.clone()
	next.errByText[text] = err
	next.errByValue[err] = text
	r.cur.Store(next)
	return nil
}

// wireName is the name a type travels under: package path + "." + name for
// named types, the Go spelling built from those for unnamed composites.
func wireName(t reflect.Type) (string, error) {
	if t.Name() != "" {
		if t.PkgPath() == "" {
			return t.Name(), nil
		}
		return t.PkgPath() + "." + t.Name(), nil
	}
	var elem string
	var err error
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		elem, err = wireName(t.Elem())
	case reflect.Map:
		var key string
		if key, err = wireName(t.Key()); err == nil {
			elem, err = wireName(t.Elem())
			elem = "map[" + key + "]" + elem
		}
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return "any", nil
		}
		err = fmt.Errorf("codec: unnamed interface type %s has no wire name: %w", t, gen.ErrUnsupported)
	default:
		err = fmt.Errorf("codec: unnamed %s type %s has no wire name: %w", t.Kind(), t, gen.ErrUnsupported)
	}
	if err != nil {
		return "", err
	}
	switch t.Kind() {
	case reflect.Pointer:
		return "*" + elem, nil
	case reflect.Slice:
		return "[]" + elem, nil
	case reflect.Array:
		return "[" + strconv.Itoa(t.Len()) + "]" + elem, nil
	}
	return elem, nil
}

// sentinelsIn lists the registered sentinels in err's tree (err itself
// excluded), at most maxSentinels of them, without repeats.
func (t *tables) sentinelsIn(err error) []string {
	var found []string
	stack := []error{err}
	for visited := 0; len(stack) > 0 && visited < maxErrorTreeNodes; visited++ {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if e == nil {
			continue
		}
		if visited > 0 {
			if text, ok := t.sentinelText(e); ok && !contains(found, text) {
				found = append(found, text)
				if len(found) == maxSentinels {
					break
				}
			}
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			stack = append(stack, u.Unwrap())
		case interface{ Unwrap() []error }:
			stack = append(stack, u.Unwrap()...)
		}
	}
	return found
}

// maxErrorTreeNodes bounds the walk of an error's wrapped tree when encoding;
// maxSentinels bounds how many registered sentinels one error carries.
const (
	maxErrorTreeNodes = 64
	maxSentinels      = 8
)

func (t *tables) sentinelText(err error) (string, bool) {
	if !reflect.ValueOf(err).Comparable() {
		return "", false
	}
	text, ok := t.errByValue[err]
	return text, ok
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// remoteError is an error decoded from its text that wrapped registered
// sentinels on the sending node: Error gives the sender's text and errors.Is
// finds the sentinels.
type remoteError struct {
	text      string
	sentinels []error
}

func (e *remoteError) Error() string   { return e.text }
func (e *remoteError) Unwrap() []error { return e.sentinels }
