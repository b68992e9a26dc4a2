package codec

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with this encoder's output")

// namedValue is a value with a name to tell it apart in a golden file.
type namedValue struct {
	name  string
	value any
}

// checkGolden compares r's encoding of each value with testdata/file, which
// the reflective encoder wrote before the codec compiled types into unsafe
// field operations (go test -update rewrites it). Values must encode
// deterministically: their maps have at most one entry.
func checkGolden(t *testing.T, file string, r *Registry, values []namedValue) {
	t.Helper()
	var got strings.Builder
	for _, v := range values {
		b, err := r.Encode(nil, v.value)
		require.NoError(t, err, v.name)
		fmt.Fprintf(&got, "%s %x\n", v.name, b)
	}
	path := filepath.Join("testdata", file)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got.String()), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), got.String())
}

// goldenValues are values of every kind the test registry knows, with maps
// of at most one entry.
func goldenValues() []namedValue {
	full := fullKinds()
	full.Map = map[string]int{"a": 1}
	seven := -7
	return []namedValue{
		{"nil", nil}, {"bool", true}, {"int", -123456789}, {"int8", int8(-128)}, {"int16", int16(-32768)},
		{"int32", int32(math.MaxInt32)}, {"int64", int64(math.MinInt64)}, {"uint", uint(math.MaxUint)},
		{"uint8", uint8(255)}, {"uint16", uint16(65535)}, {"uint32", uint32(math.MaxUint32)},
		{"uint64", uint64(math.MaxUint64)}, {"float32", float32(3.25)}, {"float64", -0.1},
		{"string", "ünïcode"}, {"empty-string", ""}, {"bytes", []byte("raw")}, {"nil-bytes", []byte(nil)},
		{"empty-bytes", []byte{}}, {"strings", []string{"a", "", "c"}}, {"nil-strings", []string(nil)},
		{"string-map", map[string]string{"k": "v"}}, {"nil-string-map", map[string]string(nil)},
		{"any-slice", []any{1, "two", nil, 3.0, gen.Atom("a"), []any{true}, small{Name: "s"}}},
		{"atom", gen.Atom("node@host")},
		{"pid", gen.PID{Node: "n@h", ID: 1 << 40, Creation: -5}},
		{"process-id", gen.ProcessID{Name: "p", Node: "n@h"}},
		{"ref", gen.Ref{Node: "n@h", Creation: 3, ID: [3]uint64{1, 1 << 63, 0}}},
		{"down-pid", gen.MessageDownPID{PID: gen.PID{Node: "a"}, Reason: fmt.Errorf("lost: %w", gen.ErrNoConnection)}},
		{"down-process-id", gen.MessageDownProcessID{Reason: gen.ErrProcessTerminated}},
		{"down-node", gen.MessageDownNode{Name: "a@b"}},
		{"exit-pid", gen.MessageExitPID{Reason: errors.New("plain")}},
		{"exit-process-id", gen.MessageExitProcessID{Reason: errors.Join(gen.ErrTimeout, gen.ErrTaken)}},
		{"exit-node", gen.MessageExitNode{Name: "x"}},
		{"sentinel", gen.ErrTimeout}, {"plain-error", errors.New("boom")},
		{"small", benchMsg}, {"small-pointer", &small{Name: "p", Term: 9}}, {"nil-small-pointer", (*small)(nil)},
		{"kinds-zero", kinds{}}, {"kinds-full", full},
		{"kinds-any-error", kinds{Any: gen.ErrNoRoute, Err: gen.ErrTaken, Ptr: &seven, Nested: [][]string{}}},
		{"term", term(77)},
		{"tree", tree{Val: 1, Kids: []*tree{{Val: 2}, nil, {Val: -3, Kids: []*tree{}}}}},
		{"list", list{Val: 1, Next: &list{Val: 2, Next: &list{}}}},
		{"holder-nil", holder{}}, {"holder-small", holder{V: small{Name: "h"}}},
		{"holder-holder", holder{V: holder{V: &small{Term: 1}}}},
		{"holder-strings", holder{V: []string{"x"}}}, {"holder-string-map", holder{V: map[string]string{"a": "b"}}},
		{"with-stringer", withStringer{S: gen.Atom("a")}}, {"with-stringer-pid", withStringer{S: gen.PID{ID: 4}}},
		{"code-error", codeError{Code: -2}},
		{"pids", []gen.PID{{Node: "a", ID: 1}, {}}}, {"atom-pid-map", map[gen.Atom]gen.PID{"a": {ID: 3}}},
	}
}

func TestEncodingMatchesTheGoldenFile(t *testing.T) {
	checkGolden(t, "values.golden", newTestRegistry(t), goldenValues())
}
