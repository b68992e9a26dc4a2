package codec

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/regent-go/regent/gen"
)

// anyGen draws values for interface fields: nil, builtins, gen values,
// registered types and errors.
var anyGen = rapid.OneOf(
	rapid.Just[any](nil),
	rapid.Int64().AsAny(),
	rapid.String().AsAny(),
	rapid.Float64().AsAny(),
	rapid.SliceOf(rapid.String()).AsAny(),
	rapid.Make[gen.PID]().AsAny(),
	rapid.Make[gen.Ref]().AsAny(),
	rapid.Make[small]().AsAny(),
	rapid.Make[inner]().AsAny(),
	rapid.Make[term]().AsAny(),
	rapid.SampledFrom(genErrorsAsAny()),
)

func genErrorsAsAny() []any {
	out := make([]any, len(genErrors))
	for i, e := range genErrors {
		out[i] = e
	}
	return out
}

var errorGen = rapid.OneOf(
	rapid.Just[any](nil),
	rapid.SampledFrom(genErrorsAsAny()),
)

var kindsGen = rapid.MakeCustom[kinds](rapid.MakeConfig{
	Types: map[reflect.Type]*rapid.Generator[any]{
		reflect.TypeFor[any]():   anyGen,
		reflect.TypeFor[error](): errorGen,
	},
})

// TestPropertyRoundTrip checks, for many generated values of a struct of
// every kind, that decoding an encoding gives back an equal value.
func TestPropertyRoundTrip(t *testing.T) {
	r := newTestRegistry(t)
	rapid.Check(t, func(rt *rapid.T) {
		v := kindsGen.Draw(rt, "value")
		dst := rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(rt, "prefix")
		b, err := r.Encode(dst, v)
		require.NoError(rt, err)
		got, n, err := r.DecodePrefix(b[len(dst):])
		require.NoError(rt, err)
		require.Equal(rt, len(b)-len(dst), n, "the whole encoding is consumed")
		requireSame(rt, v, got.(kinds))
	})
}

// requireSame compares with reflect.DeepEqual, except that error fields must
// hold the very same sentinel.
func requireSame(t require.TestingT, want, got kinds) {
	if want.Err != nil || got.Err != nil {
		require.True(t, want.Err == got.Err, "error %v came back as %v", want.Err, got.Err)
	}
	if we, ok := want.Any.(error); ok {
		ge, _ := got.Any.(error)
		require.True(t, ge == we, "error %v came back as %v", we, got.Any)
	}
	require.True(t, reflect.DeepEqual(want, got), "want %#v\n got %#v", want, got)
}
