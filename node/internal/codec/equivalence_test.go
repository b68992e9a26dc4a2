package codec

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/regent-go/regent/gen"
)

// Types an interface holds by its data word itself (pointer-shaped), and
// named kinds that share a builtin's layout.
type (
	onePointer struct{ P *int }
	namedMap   map[string]int
	bytesLike  []byte
	oneArray   [1]*small
	narrow     struct {
		I8  int8
		U16 uint16
		I32 int32
		U   uint8
		F   float32
		B   bytesLike
	}
)

// equivalenceRegistry is the test registry with the types above.
func equivalenceRegistry(t testing.TB) *Registry {
	r := newTestRegistry(t)
	for _, v := range []any{onePointer{}, namedMap{}, bytesLike{}, oneArray{}, narrow{}} {
		require.NoError(t, r.RegisterType(v), "%T", v)
	}
	return r
}

// requireSameEncoding checks that the encoder writes the reference encoder's
// bytes for v, and that they decode to a value equal to v.
func requireSameEncoding(t require.TestingT, r *Registry, v any) {
	want, werr := r.referenceEncode([]byte{0xAA}, v)
	got, gerr := r.Encode([]byte{0xAA}, v)
	require.Equal(t, werr != nil, gerr != nil, "reference error %v, encoder error %v", werr, gerr)
	require.Equal(t, want, got, "encoding of %#v", v)
	if gerr != nil {
		return
	}
	back, err := r.Decode(got[1:])
	require.NoError(t, err)
	require.True(t, equalValues(r, v, back), "want %#v\n got %#v", v, back)
}

// equalValues reports whether got, decoded from want's encoding, equals
// want: by reflect.DeepEqual, or else by encoding to the same bytes. An
// unregistered error arrives as a new value with the same text and
// sentinels, which the wire cannot tell from the original; but the sentinels
// of one that wraps several come back in reverse order (sentinelsIn walks
// its tree with a stack), so a second round trip restores their order.
func equalValues(r *Registry, want, got any) bool {
	if reflect.DeepEqual(want, got) {
		return true
	}
	a, err := r.Encode(nil, want)
	if err != nil {
		return false
	}
	for range 2 {
		b, err := r.Encode(nil, got)
		if err != nil {
			return false
		}
		if bytes.Equal(a, b) {
			return true
		}
		if got, err = r.Decode(b); err != nil {
			return false
		}
	}
	return false
}

func TestEncodingMatchesTheReflectiveEncoder(t *testing.T) {
	r := equivalenceRegistry(t)
	seven := 7
	values := []any{
		onePointer{}, onePointer{P: &seven}, namedMap(nil), namedMap{}, namedMap{"a": -1},
		bytesLike(nil), bytesLike{}, bytesLike("xyz"), oneArray{}, oneArray{&small{Name: "a"}},
		narrow{I8: -128, U16: 65535, I32: -1 << 31, U: 255, F: -0.5, B: bytesLike{1}},
		holder{V: onePointer{P: &seven}}, holder{V: holder{V: namedMap{"b": 2}}},
		holder{V: []any{onePointer{}, oneArray{}, &small{}, namedMap{}}},
		kinds{Any: holder{V: onePointer{P: &seven}}},
	}
	for _, v := range goldenValues() {
		values = append(values, v.value)
	}
	for _, v := range values {
		requireSameEncoding(t, r, v)
	}
	// Deeper than MaxDepth: both refuse, on the same value.
	deep := &list{}
	for range MaxDepth {
		deep = &list{Next: deep}
	}
	requireSameEncoding(t, r, deep)
	var l list
	l.Next = &l
	requireSameEncoding(t, r, l)
	requireSameEncoding(t, r, holder{V: unregistered{}})
}

// TestPropertyEncodingMatchesTheReflectiveEncoder draws values of a struct
// of every kind and checks the encoder against the reference. Maps keep at
// most one entry, since their order on the wire is Go's iteration order.
func TestPropertyEncodingMatchesTheReflectiveEncoder(t *testing.T) {
	r := equivalenceRegistry(t)
	rapid.Check(t, func(rt *rapid.T) {
		v := kindsGen.Draw(rt, "value")
		v.Map = atMostOne(v.Map)
		v.KeyArr = atMostOne(v.KeyArr)
		v.Set = atMostOne(v.Set)
		requireSameEncoding(rt, r, v)
		requireSameEncoding(rt, r, holder{V: v})
		requireSameEncoding(rt, r, []any{v, v.Any, v.Inners})
	})
}

func atMostOne[K comparable, V any](m map[K]V) map[K]V {
	for k := range m {
		if len(m) > 1 {
			delete(m, k)
		}
	}
	return m
}

// TestMapsOfManyEntriesRoundTrip covers what the byte comparison cannot:
// maps of many entries, whose order on the wire is Go's.
func TestMapsOfManyEntriesRoundTrip(t *testing.T) {
	r := equivalenceRegistry(t)
	v := fullKinds()
	v.Map = map[string]int{"a": 1, "b": 2, "": -1, "long key": 1 << 40}
	v.KeyArr = map[[2]int8]bool{{1, 2}: true, {-1, 0}: false}
	for _, x := range []any{v, map[string]string{"a": "b", "c": "d", "": ""}, namedMap{"x": 1, "y": 2},
		map[gen.Atom]gen.PID{"a": {ID: 1}, "b": {Node: "n"}}} {
		want, err := r.referenceEncode(nil, x)
		require.NoError(t, err)
		got, err := r.Encode(nil, x)
		require.NoError(t, err)
		require.Len(t, got, len(want))
		back, err := r.Decode(got)
		require.NoError(t, err)
		require.Equal(t, x, back)
		back, err = r.Decode(want)
		require.NoError(t, err)
		require.Equal(t, x, back)
	}
}

// nest3 holds a value three structs deep, which the codec splices into one
// list of field operations.
type nest3 struct {
	In struct {
		In struct {
			V any
		}
	}
}

// TestSplicedStructsCountTheirNesting checks that the structs spliced into
// their parent still count a level each, as their own codecs did: the
// encoder refuses the same values as the reference, and the decoder accepts
// exactly what the encoder writes and refuses one level more.
func TestSplicedStructsCountTheirNesting(t *testing.T) {
	r := newTestRegistry(t)
	require.NoError(t, r.RegisterType(nest3{}))
	header := r.cur.Load().byType[reflect.TypeFor[nest3]()].header
	var v any = true
	var last []byte
	for n := 1; ; n++ {
		var next nest3
		next.In.In.V = v
		v = next
		want, werr := r.referenceEncode(nil, v)
		got, err := r.Encode(nil, v)
		require.Equal(t, want, got, "%d levels", n)
		if err != nil {
			require.ErrorIs(t, err, gen.ErrTooLarge)
			require.ErrorIs(t, werr, gen.ErrTooLarge)
			require.NotNil(t, last, "one level always encodes")
			_, err := r.Decode(append(append([]byte{}, header...), last...))
			require.ErrorIs(t, err, gen.ErrMalformed, "%d levels", n)
			return
		}
		require.NoError(t, werr)
		back, err := r.Decode(got)
		require.NoError(t, err, "%d levels", n)
		require.Equal(t, v, back)
		last = got
	}
}
