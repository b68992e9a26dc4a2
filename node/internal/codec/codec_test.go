package codec

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node/internal/intern"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newTestRegistry registers the test types that are meant to work.
func newTestRegistry(t testing.TB) *Registry {
	t.Helper()
	r := NewRegistry()
	for _, v := range []any{small{}, kinds{}, term(0), tree{}, list{}, holder{}, &small{},
		[]gen.PID{}, map[gen.Atom]gen.PID{}, withStringer{}, codeError{}} {
		require.NoError(t, r.RegisterType(v), "%T", v)
	}
	return r
}

func roundTrip(t *testing.T, r *Registry, v any) any {
	t.Helper()
	b, err := r.Encode(nil, v)
	require.NoError(t, err)
	got, err := r.Decode(b)
	require.NoError(t, err)
	return got
}

func fullKinds() kinds {
	seven := 7
	return kinds{
		B: true, I: -1 << 40, I8: math.MinInt8, I16: math.MaxInt16, I32: math.MinInt32, I64: math.MinInt64,
		U: math.MaxUint, U8: math.MaxUint8, U16: 65535, U32: math.MaxUint32, U64: math.MaxUint64,
		F32: -1.5, F64: math.Inf(1), S: "héllo\x00world", Atom: "node@host:7", Term: 42,
		Bytes: []byte{0, 1, 2}, Ints: []int{3, -3}, Arr: [3]uint16{1, 2, 3},
		Map: map[string]int{"a": 1, "": -1}, KeyArr: map[[2]int8]bool{{1, -1}: true},
		Set: map[string]struct{}{"x": {}}, Ptr: &seven,
		Inner: inner{A: "in", N: -2}, PInner: &inner{A: "p"}, Inners: []inner{{A: "a"}, {}},
		Any: gen.PID{Node: "n@h", ID: 1, Creation: 2}, Err: gen.ErrTimeout,
		Nested: [][]string{{"a"}, nil, {}},
	}
}

func TestRoundTripOfEveryKind(t *testing.T) {
	r := newTestRegistry(t)
	cases := []struct {
		name  string
		value any
	}{
		{"nil", nil},
		{"a bool", true},
		{"an int", -123456789},
		{"an int8", int8(-128)},
		{"an int16", int16(-32768)},
		{"an int32", int32(math.MaxInt32)},
		{"an int64", int64(math.MinInt64)},
		{"a uint", uint(math.MaxUint)},
		{"a uint8", uint8(255)},
		{"a uint16", uint16(65535)},
		{"a uint32", uint32(math.MaxUint32)},
		{"a uint64", uint64(math.MaxUint64)},
		{"a float32", float32(3.25)},
		{"a float64", -0.1},
		{"a string", "ünïcode"},
		{"an empty string", ""},
		{"a byte slice", []byte("raw")},
		{"a string slice", []string{"a", "", "c"}},
		{"a string map", map[string]string{"k": "v", "": ""}},
		{"an any slice of builtins", []any{1, "two", nil, 3.0, gen.Atom("a"), []any{true}}},
		{"an Atom", gen.Atom("name@host")},
		{"a PID", gen.PID{Node: "n@h", ID: 77, Creation: -5}},
		{"a ProcessID", gen.ProcessID{Name: "p", Node: "n@h"}},
		{"a Ref", gen.Ref{Node: "n@h", Creation: 3, ID: [3]uint64{1, 2, math.MaxUint64}}},
		{"a MessageDownPID", gen.MessageDownPID{PID: gen.PID{Node: "n@h", ID: 1}, Reason: gen.ErrNoConnection}},
		{"a MessageDownProcessID", gen.MessageDownProcessID{ProcessID: gen.ProcessID{Name: "p"}, Reason: gen.TerminateReasonNormal}},
		{"a MessageDownNode", gen.MessageDownNode{Name: "n@h"}},
		{"a MessageExitPID", gen.MessageExitPID{PID: gen.PID{ID: 9}, Reason: gen.TerminateReasonKill}},
		{"a MessageExitProcessID", gen.MessageExitProcessID{ProcessID: gen.ProcessID{Node: "x"}}},
		{"a MessageExitNode", gen.MessageExitNode{Name: "n@h"}},
		{"a registered struct", small{Name: "a", Term: 1, From: gen.PID{Node: "n", ID: 2, Creation: 3}}},
		{"a struct of every kind", fullKinds()},
		{"a zero struct of every kind", kinds{}},
		{"a registered named basic type", term(99)},
		{"a recursive tree", tree{Val: 1, Kids: []*tree{{Val: 2}, nil, {Val: 3, Kids: []*tree{{Val: 4}}}}}},
		{"a linked list", list{Val: 1, Next: &list{Val: 2, Next: &list{Val: 3}}}},
		{"a registered pointer type", &small{Name: "ptr"}},
		{"a nil registered pointer", (*small)(nil)},
		{"a registered unnamed slice", []gen.PID{{ID: 1}, {ID: 2}}},
		{"a registered unnamed map", map[gen.Atom]gen.PID{"a": {ID: 1}}},
		{"a registered struct inside an interface field", holder{V: small{Name: "inner"}}},
		{"a registered error type", codeError{Code: 7}},
		{"a registered error type inside an interface field", holder{V: codeError{Code: 8}}},
		{"an interface field of a non-empty interface", withStringer{S: gen.Atom("atoms are Stringers")}},
	}
	for _, tc := range cases {
		t.Run(tc.name+" comes back equal", func(t *testing.T) {
			got := roundTrip(t, r, tc.value)
			assert.True(t, reflect.DeepEqual(tc.value, got), "want %#v\n got %#v", tc.value, got)
		})
	}

	t.Run("nil and empty slices and maps stay distinct", func(t *testing.T) {
		got := roundTrip(t, r, holder{V: []any{[]byte(nil), []byte{}, []string(nil), []string{},
			map[string]string(nil), map[string]string{}}}).(holder).V.([]any)
		assert.Nil(t, got[0].([]byte))
		assert.NotNil(t, got[1].([]byte))
		assert.Nil(t, got[2].([]string))
		assert.NotNil(t, got[3].([]string))
		assert.Nil(t, got[4].(map[string]string))
		assert.NotNil(t, got[5].(map[string]string))
	})

	t.Run("NaN keeps its bits", func(t *testing.T) {
		got := roundTrip(t, r, math.NaN()).(float64)
		assert.Equal(t, math.Float64bits(math.NaN()), math.Float64bits(got))
	})

	t.Run("named struct types inside a registered type are registered with it", func(t *testing.T) {
		got := roundTrip(t, r, inner{A: "alone", N: 1})
		assert.Equal(t, inner{A: "alone", N: 1}, got)
	})

	t.Run("a registered type travels under its package path and name", func(t *testing.T) {
		b, err := r.Encode(nil, small{})
		require.NoError(t, err)
		assert.Contains(t, string(b), "github.com/regent-go/regent/node/internal/codec.small")
	})

	t.Run("Encode appends to what dst already holds", func(t *testing.T) {
		b, err := r.Encode([]byte("prefix"), "x")
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(b), "prefix"))
		got, err := r.Decode(b[len("prefix"):])
		require.NoError(t, err)
		assert.Equal(t, "x", got)
	})

	t.Run("DecodePrefix reads values packed one after another", func(t *testing.T) {
		b, err := r.Encode(nil, gen.Atom("first"))
		require.NoError(t, err)
		b, err = r.Encode(b, small{Term: 2})
		require.NoError(t, err)
		first, n, err := r.DecodePrefix(b)
		require.NoError(t, err)
		assert.Equal(t, gen.Atom("first"), first)
		second, m, err := r.DecodePrefix(b[n:])
		require.NoError(t, err)
		assert.Equal(t, small{Term: 2}, second)
		assert.Equal(t, len(b), n+m)
	})
}

func TestRegisterType(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value any
		want  error
	}{
		{"a struct with an unexported field is unsupported", withUnexported{}, gen.ErrUnsupported},
		{"a struct with a channel is unsupported", withChan{}, gen.ErrUnsupported},
		{"a map keyed by pointers is unsupported", withPointerKey{}, gen.ErrUnsupported},
		{"a slice of zero-size elements is unsupported", withZeroSizeSlice{}, gen.ErrUnsupported},
		{"a complex number is unsupported", complex(1, 2), gen.ErrUnsupported},
		{"an unnamed struct is unsupported", struct{ A int }{}, gen.ErrUnsupported},
		{"the nil interface is incorrect", nil, gen.ErrIncorrect},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.ErrorIs(t, NewRegistry().RegisterType(tc.value), tc.want)
		})
	}

	t.Run("a failed registration registers none of the types it met", func(t *testing.T) {
		r := NewRegistry()
		require.ErrorIs(t, r.RegisterType(halfBad{}), gen.ErrUnsupported)
		_, err := r.Encode(nil, goodPart{})
		assert.ErrorIs(t, err, gen.ErrUnregistered)
	})

	t.Run("registering a type twice is not an error", func(t *testing.T) {
		r := NewRegistry()
		require.NoError(t, r.RegisterType(small{}))
		require.NoError(t, r.RegisterType(small{}))
		require.NoError(t, r.RegisterType(gen.PID{}), "builtins may be registered too")
	})

	t.Run("two different types under one wire name are refused", func(t *testing.T) {
		r := NewRegistry()
		require.NoError(t, r.RegisterType(localTypeA()))
		assert.ErrorIs(t, r.RegisterType(localTypeB()), gen.ErrTaken)
	})
}

// localTypeA and localTypeB return values of two distinct function-local
// types that share the name "clash" and so the wire name.
func localTypeA() any {
	type clash struct{ A int }
	return clash{}
}

func localTypeB() any {
	type clash struct{ B string }
	return clash{}
}

func TestUnregisteredTypesFailAtTheSender(t *testing.T) {
	r := newTestRegistry(t)
	dst := make([]byte, 3, 64)
	for _, tc := range []struct {
		name  string
		value any
	}{
		{"an unregistered struct", unregistered{A: 1}},
		{"an unregistered type inside an interface field", holder{V: unregistered{}}},
		{"an unregistered type deep inside an any slice", []any{1, []any{"x", unregistered{}}}},
		{"an unregistered pointer to a builtin", &gen.PID{}},
		{"an unregistered type inside a map value", holder{V: map[string]any{}}},
	} {
		t.Run(tc.name+" fails with ErrUnregistered and leaves dst as it was", func(t *testing.T) {
			out, err := r.Encode(dst, tc.value)
			require.ErrorIs(t, err, gen.ErrUnregistered)
			assert.Len(t, out, 3)
		})
	}
}

func TestUnknownTypeIsNotMalformed(t *testing.T) {
	sender := newTestRegistry(t)
	receiver := NewRegistry()
	for _, tc := range []struct {
		name  string
		value any
	}{
		{"a type the receiver never registered", small{Term: 1}},
		{"such a type inside a builtin any slice", []any{1, small{}}},
		{"such a type inside a builtin message's error field", gen.MessageDownPID{Reason: codeError{Code: 1}}},
	} {
		t.Run(tc.name+" gives ErrUnknownType", func(t *testing.T) {
			b, err := sender.Encode(nil, tc.value)
			require.NoError(t, err)
			_, err = receiver.Decode(b)
			require.ErrorIs(t, err, ErrUnknownType)
			assert.ErrorIs(t, err, gen.ErrUnregistered)
			assert.NotErrorIs(t, err, gen.ErrMalformed)
		})
	}
}

func TestErrorsCrossTheWire(t *testing.T) {
	r := newTestRegistry(t)
	custom := errors.New("app: custom sentinel")
	require.NoError(t, r.RegisterError(custom))

	t.Run("gen's sentinels come back as the same value", func(t *testing.T) {
		for _, err := range genErrors {
			got := roundTrip(t, r, err)
			assert.True(t, got == err, "%v", err)
		}
	})

	t.Run("a registered sentinel comes back as the same value", func(t *testing.T) {
		assert.True(t, roundTrip(t, r, custom) == custom)
	})

	t.Run("a sentinel in a message field keeps its identity", func(t *testing.T) {
		got := roundTrip(t, r, gen.MessageDownPID{Reason: gen.ErrNoConnection}).(gen.MessageDownPID)
		assert.True(t, got.Reason == gen.ErrNoConnection)
	})

	t.Run("a wrapped sentinel keeps its text and errors.Is finds it", func(t *testing.T) {
		sent := fmt.Errorf("dial n@h: %w", gen.ErrNoConnection)
		got := roundTrip(t, r, sent).(error)
		assert.Equal(t, sent.Error(), got.Error())
		assert.ErrorIs(t, got, gen.ErrNoConnection)
		assert.NotErrorIs(t, got, gen.ErrTimeout)
	})

	t.Run("every sentinel joined into one error is found", func(t *testing.T) {
		got := roundTrip(t, r, errors.Join(custom, fmt.Errorf("x: %w", gen.TerminateReasonPanic))).(error)
		assert.ErrorIs(t, got, custom)
		assert.ErrorIs(t, got, gen.TerminateReasonPanic)
		assert.True(t, gen.IsTerminateReason(got))
	})

	t.Run("an unregistered error comes back as its text", func(t *testing.T) {
		sent := errors.New("something broke")
		got := roundTrip(t, r, sent).(error)
		assert.Equal(t, "something broke", got.Error())
		assert.False(t, got == sent)
	})

	t.Run("a sentinel the receiver lacks comes back as its text", func(t *testing.T) {
		b, err := r.Encode(nil, custom)
		require.NoError(t, err)
		got, err := NewRegistry().Decode(b)
		require.NoError(t, err)
		assert.Equal(t, custom.Error(), got.(error).Error())
		assert.NotErrorIs(t, got.(error), custom)
	})

	t.Run("an error holding an uncomparable value travels as its text", func(t *testing.T) {
		got := roundTrip(t, r, ifaceError{V: []int{1}}).(error)
		assert.Equal(t, "iface error", got.Error())
		assert.ErrorIs(t, r.RegisterError(ifaceError{V: []int{1}}), gen.ErrUnsupported)
	})

	t.Run("an error whose Error method panics fails to encode", func(t *testing.T) {
		out, err := r.Encode(nil, holder{V: panicError{}})
		require.ErrorIs(t, err, gen.ErrUnsupported)
		assert.Empty(t, out)
	})

	t.Run("registering the same sentinel twice is not an error", func(t *testing.T) {
		assert.NoError(t, r.RegisterError(custom))
		assert.NoError(t, r.RegisterError(gen.ErrTimeout))
	})

	t.Run("another error with a registered text is refused", func(t *testing.T) {
		assert.ErrorIs(t, r.RegisterError(errors.New("app: custom sentinel")), gen.ErrTaken)
	})

	t.Run("registering nil is incorrect", func(t *testing.T) {
		assert.ErrorIs(t, r.RegisterError(nil), gen.ErrIncorrect)
	})

	t.Run("an error of an uncomparable type cannot be a sentinel", func(t *testing.T) {
		assert.ErrorIs(t, r.RegisterError(sliceError{"a"}), gen.ErrUnsupported)
	})
}

// ifaceError is comparable as a type, but == panics when V holds a slice.
type ifaceError struct{ V any }

func (e ifaceError) Error() string { return "iface error" }

// panicError's Error method panics.
type panicError struct{}

func (panicError) Error() string { panic("no text") }

// sliceError is an error type that cannot be compared with ==.
type sliceError []string

func (e sliceError) Error() string { return strings.Join(e, ",") }

func TestMalformedInput(t *testing.T) {
	r := newTestRegistry(t)
	valid, err := r.Encode(nil, fullKinds())
	require.NoError(t, err)

	t.Run("every truncation of a valid encoding is malformed", func(t *testing.T) {
		for n := range len(valid) {
			_, err := r.Decode(valid[:n])
			require.ErrorIs(t, err, gen.ErrMalformed, "truncated to %d of %d bytes", n, len(valid))
		}
	})

	t.Run("trailing bytes are malformed", func(t *testing.T) {
		_, err := r.Decode(append(append([]byte{}, valid...), 0))
		require.ErrorIs(t, err, gen.ErrMalformed)
	})

	for _, tc := range []struct {
		name  string
		input []byte
	}{
		{"an unknown tag", []byte{0xEE}},
		{"a bool byte other than 0 and 1", []byte{tagBool, 2}},
		{"an int8 out of range", []byte{tagInt8, 0x80, 0x04}},
		{"a uint8 out of range", []byte{tagUint8, 0x80, 0x02}},
		{"a varint longer than ten bytes", []byte{tagUint64, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}},
		{"a type name over the cap", append([]byte{tagNamed, 0x81, 0x08}, make([]byte, 1025)...)},
		{"a pointer presence byte of 2", append(append([]byte{tagNamed}, appendString(nil, wire[list]())...), 0, 2)},
		{"an unknown error encoding", []byte{tagError, 7, 0}},
		{"an error wrapping too many sentinels", []byte{tagError, errText, 0, 9}},
		{"a string where a Stringer field is declared", append(append([]byte{tagNamed}, appendString(nil, wire[withStringer]())...), tagInt, 2)},
	} {
		t.Run(tc.name+" is malformed", func(t *testing.T) {
			_, err := r.Decode(tc.input)
			require.ErrorIs(t, err, gen.ErrMalformed)
		})
	}

	t.Run("an int where an error field is declared is malformed", func(t *testing.T) {
		// MessageDownPID: PID{Node "", ID 0, Creation 0}, then Reason.
		_, err := r.Decode([]byte{tagDownPID, 0, 0, 0, tagInt, 2})
		require.ErrorIs(t, err, gen.ErrMalformed)
	})
}

// wire returns the wire name of T, which must have one.
func wire[T any]() string {
	name, err := wireName(reflect.TypeFor[T]())
	if err != nil {
		panic(err)
	}
	return name
}

func TestNestingDepthIsBounded(t *testing.T) {
	r := newTestRegistry(t)
	var deep any = "leaf"
	for range MaxDepth {
		deep = []any{deep}
	}

	t.Run("encoding a value nested past MaxDepth fails", func(t *testing.T) {
		_, err := r.Encode(nil, deep)
		require.ErrorIs(t, err, gen.ErrTooLarge)
	})

	t.Run("a cyclic structure fails to encode instead of looping", func(t *testing.T) {
		l := &list{Val: 1}
		l.Next = l
		_, err := r.Encode(nil, l)
		require.ErrorIs(t, err, gen.ErrUnregistered, "*list is not registered")
		_, err = r.Encode(nil, *l)
		require.ErrorIs(t, err, gen.ErrTooLarge)
	})

	t.Run("decoding input nested past MaxDepth is malformed", func(t *testing.T) {
		var b []byte
		for range 10000 {
			b = append(b, tagAnySlice, 2)
		}
		b = append(b, tagNil)
		_, err := r.Decode(b)
		require.ErrorIs(t, err, gen.ErrMalformed)
	})

	t.Run("a value at a legal depth round-trips", func(t *testing.T) {
		var ok any = "leaf"
		for range MaxDepth/2 - 1 {
			ok = []any{ok}
		}
		assert.Equal(t, ok, roundTrip(t, r, ok))
	})
}

func TestHugeLengthPrefixesDoNotAllocate(t *testing.T) {
	r := newTestRegistry(t)
	huge := []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x3F} // 2^62-1
	withHuge := func(prefix ...byte) []byte { return append(append(prefix, huge...), 1, 2, 3) }
	for _, tc := range []struct {
		name  string
		input []byte
	}{
		{"a byte slice", withHuge(tagBytes)},
		{"a string", withHuge(tagString)},
		{"a string slice", withHuge(tagStrings)},
		{"a string map", withHuge(tagStringMap)},
		{"an any slice", withHuge(tagAnySlice)},
		{"a type name", withHuge(tagNamed)},
		{"an error text", withHuge(tagError, errText)},
		{"a slice of structs", withHuge(append([]byte{tagNamed}, appendString(nil, wire[[]gen.PID]())...)...)},
		{"a count just above what is left", []byte{tagStrings, 5, 0, 0, 0}},
	} {
		t.Run("a huge length in "+tc.name+" is malformed and allocates almost nothing", func(t *testing.T) {
			_, err := r.Decode(tc.input)
			require.ErrorIs(t, err, gen.ErrMalformed)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			allocs := testing.AllocsPerRun(100, func() {
				_, _ = r.Decode(tc.input)
			})
			runtime.ReadMemStats(&after)
			assert.LessOrEqual(t, allocs, 10.0)
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated by 101 decodes")
		})
	}
}

func TestConcurrentRegistrationAndUse(t *testing.T) {
	r := NewRegistry()
	require.NoError(t, r.RegisterType(small{}))
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				b, err := r.Encode(nil, small{Term: uint64(i)})
				if err == nil {
					var got any
					got, err = r.Decode(b)
					if err == nil && got != (small{Term: uint64(i)}) {
						err = fmt.Errorf("worker %d got %v", w, got)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for _, v := range []any{kinds{}, tree{}, list{}, holder{}, term(0)} {
		require.NoError(t, r.RegisterType(v))
		require.NoError(t, r.RegisterError(fmt.Errorf("sentinel %T", v)))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Equal(t, tree{Val: 5}, roundTrip(t, r, tree{Val: 5}))
}

func TestADecoderInternsNames(t *testing.T) {
	r := newTestRegistry(t)
	msg := small{Name: "leader", Term: 1, From: gen.PID{Node: "node1@localhost", ID: 7, Creation: 3}}
	b, err := r.Encode(nil, msg)
	require.NoError(t, err)
	atoms := intern.New(8, 1024)
	dec := r.NewDecoder(atoms)

	t.Run("a name decoded twice is one string, and the value is unchanged", func(t *testing.T) {
		first, err := dec.Decode(b)
		require.NoError(t, err)
		second, err := dec.Decode(b)
		require.NoError(t, err)
		assert.Equal(t, msg, first)
		assert.Equal(t, msg, second)
		n1, n2 := string(first.(small).From.Node), string(second.(small).From.Node)
		assert.True(t, unsafe.StringData(n1) == unsafe.StringData(n2))
		assert.Equal(t, 2, atoms.Len(), "the two gen.Atom values (Name, From.Node)")
	})

	t.Run("Registry.Decode makes its own strings every time", func(t *testing.T) {
		first, err := r.Decode(b)
		require.NoError(t, err)
		second, err := r.Decode(b)
		require.NoError(t, err)
		n1, n2 := string(first.(small).From.Node), string(second.(small).From.Node)
		assert.False(t, unsafe.StringData(n1) == unsafe.StringData(n2))
	})
}

func TestADecoderKeepsUpWithTheRegistry(t *testing.T) {
	r := NewRegistry()
	require.NoError(t, r.RegisterType(small{}))
	dec := r.NewDecoder(nil)
	encode := func(v any) []byte {
		b, err := r.Encode(nil, v)
		require.NoError(t, err)
		return b
	}
	t.Run("values of one type, then another, decode as they were", func(t *testing.T) {
		for _, v := range []any{small{Name: "a"}, small{Name: "b"}, gen.PID{ID: 1}, small{Name: "c"}} {
			got, err := dec.Decode(encode(v))
			require.NoError(t, err)
			assert.Equal(t, v, got)
		}
	})
	t.Run("a type registered after the Decoder was made decodes", func(t *testing.T) {
		require.NoError(t, r.RegisterType(term(0)))
		got, err := dec.Decode(encode(term(7)))
		require.NoError(t, err)
		assert.Equal(t, term(7), got)
		got, err = dec.Decode(encode(small{Name: "d"}))
		require.NoError(t, err)
		assert.Equal(t, small{Name: "d"}, got)
	})
	t.Run("an unknown type right after a known one is still unknown", func(t *testing.T) {
		other := newTestRegistry(t)
		b, err := other.Encode(nil, tree{Val: 1})
		require.NoError(t, err)
		_, err = dec.Decode(encode(small{}))
		require.NoError(t, err)
		_, err = dec.Decode(b)
		require.ErrorIs(t, err, ErrUnknownType)
	})
}

func TestADecoderReusesRecentStrings(t *testing.T) {
	r := newTestRegistry(t)
	long := strings.Repeat("x", maxRecentString+1)
	msg := []string{"cluster-a", "cluster-a", "", "other", "cluster-a", long, long}
	b, err := r.Encode(nil, msg)
	require.NoError(t, err)
	dec := r.NewDecoder(nil)

	t.Run("a repeated short string is one string, and the value is unchanged", func(t *testing.T) {
		got, err := dec.Decode(b)
		require.NoError(t, err)
		require.Equal(t, msg, got)
		s := got.([]string)
		assert.True(t, unsafe.StringData(s[0]) == unsafe.StringData(s[1]))
		assert.True(t, unsafe.StringData(s[0]) == unsafe.StringData(s[4]))
		assert.False(t, unsafe.StringData(s[5]) == unsafe.StringData(s[6]), "a long string is not kept")
	})

	t.Run("from frame to frame, short strings cost no allocation", func(t *testing.T) {
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := dec.Decode(b); err != nil {
				t.Fatal(err)
			}
		})
		assert.Equal(t, 4.0, allocs, "the slice, its box and the two long strings")
	})

	t.Run("Registry.Decode shares strings within a value only", func(t *testing.T) {
		first, err := r.Decode(b)
		require.NoError(t, err)
		second, err := r.Decode(b)
		require.NoError(t, err)
		s1, s2 := first.([]string), second.([]string)
		assert.True(t, unsafe.StringData(s1[0]) == unsafe.StringData(s1[1]))
		assert.False(t, unsafe.StringData(s1[0]) == unsafe.StringData(s2[0]))
	})
}

func TestADecoderWithATableInternsShortStrings(t *testing.T) {
	r := newTestRegistry(t)
	msg := make([]string, 300) // the cluster names of a batch: more than the recent strings hold
	for i := range msg {
		msg[i] = fmt.Sprintf("scale-%d", i)
	}
	b, err := r.Encode(nil, msg)
	require.NoError(t, err)
	dec := r.NewDecoder(intern.New(8192, 64<<10))
	var first any
	for range 10 { // the table grows to hold them
		first, err = dec.Decode(b)
		require.NoError(t, err)
		require.Equal(t, msg, first)
	}

	t.Run("a string seen in an earlier frame is the same string", func(t *testing.T) {
		second, err := dec.Decode(b)
		require.NoError(t, err)
		require.Equal(t, msg, second)
		shared := 0
		for i, s := range second.([]string) {
			if unsafe.StringData(s) == unsafe.StringData(first.([]string)[i]) {
				shared++
			}
		}
		assert.Greater(t, shared, len(msg)*9/10, "all but the few whose set of the table overflowed")
	})

	t.Run("from frame to frame, they cost no allocation", func(t *testing.T) {
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := dec.Decode(b); err != nil {
				t.Fatal(err)
			}
		})
		assert.Less(t, allocs, 2+float64(len(msg))/10, "the slice, its box, and few strings")
	})
}
