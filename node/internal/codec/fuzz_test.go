package codec

import (
	"errors"
	"fmt"
	"testing"

	"github.com/regent-go/regent/gen"
)

// FuzzDecode feeds arbitrary bytes to Decode: it must never panic, must fail
// only with ErrMalformed or ErrUnknownType, and whatever it accepts must
// encode again and decode to an equal encoding. The default test run executes
// the seeds only.
func FuzzDecode(f *testing.F) {
	r := newTestRegistry(f)
	seeds := []any{
		nil, true, -1, uint64(1 << 63), 2.5, float32(1), "s", []byte{1}, []string{"a"},
		map[string]string{"k": "v"}, []any{1, nil, "x"}, gen.Atom("a@b"),
		gen.PID{Node: "n", ID: 1, Creation: 2}, gen.Ref{ID: [3]uint64{1, 2, 3}},
		gen.MessageDownPID{Reason: fmt.Errorf("x: %w", gen.ErrNoConnection)},
		gen.MessageExitNode{Name: "n"}, errors.New("plain"), gen.ErrTimeout,
		small{Name: "a", Term: 3}, fullKinds(), tree{Kids: []*tree{{Val: 1}}},
		list{Next: &list{}}, holder{V: small{}}, withStringer{S: gen.Atom("a")},
		codeError{Code: 1}, map[gen.Atom]gen.PID{"a": {}}, &small{},
	}
	for _, s := range seeds {
		b, err := r.Encode(nil, s)
		if err != nil {
			f.Fatalf("seed %T: %v", s, err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{tagNamed, 3, 'a', 'b', 'c'})
	f.Add([]byte{tagBytes, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F})
	f.Add([]byte{tagAnySlice, 2, tagAnySlice, 2, tagAnySlice, 2, tagNil})
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := r.Decode(data)
		if err != nil {
			if !errors.Is(err, gen.ErrMalformed) && !errors.Is(err, ErrUnknownType) {
				t.Fatalf("undocumented error: %v", err)
			}
			if errors.Is(err, gen.ErrMalformed) && errors.Is(err, ErrUnknownType) {
				t.Fatalf("error is both malformed and unknown: %v", err)
			}
			return
		}
		again, err := r.Encode(nil, v)
		if err != nil {
			t.Fatalf("decoded %#v does not encode again: %v", v, err)
		}
		if _, err := r.Decode(again); err != nil {
			t.Fatalf("re-encoding of %#v does not decode: %v", v, err)
		}
	})
}
