package codec

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node/internal/fuzzdrive"
	"github.com/regent-go/regent/node/internal/intern"
)

// decodeSeeds are encodings of one value of every kind the test registry
// knows, and a few hostile prefixes.
func decodeSeeds(tb testing.TB, r *Registry) [][]byte {
	values := []any{
		nil, true, -1, uint64(1 << 63), 2.5, float32(1), "s", []byte{1}, []string{"a"},
		map[string]string{"k": "v"}, []any{1, nil, "x"}, gen.Atom("a@b"),
		gen.PID{Node: "n", ID: 1, Creation: 2}, gen.Ref{ID: [3]uint64{1, 2, 3}},
		gen.MessageDownPID{Reason: fmt.Errorf("x: %w", gen.ErrNoConnection)},
		gen.MessageExitNode{Name: "n"}, errors.New("plain"), gen.ErrTimeout,
		small{Name: "a", Term: 3}, fullKinds(), tree{Kids: []*tree{{Val: 1}}},
		list{Next: &list{}}, holder{V: small{}}, withStringer{S: gen.Atom("a")},
		codeError{Code: 1}, map[gen.Atom]gen.PID{"a": {}}, &small{},
	}
	var seeds [][]byte
	for _, v := range values {
		b, err := r.Encode(nil, v)
		if err != nil {
			tb.Fatalf("seed %T: %v", v, err)
		}
		seeds = append(seeds, b)
	}
	return append(seeds,
		[]byte{},
		[]byte{tagNamed, 3, 'a', 'b', 'c'},
		[]byte{tagBytes, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F},
		[]byte{tagAnySlice, 2, tagAnySlice, 2, tagAnySlice, 2, tagNil},
	)
}

// decodesAsDocumented is FuzzDecode's property: Decode never panics, fails
// only with ErrMalformed or ErrUnknownType (never both), and whatever it
// accepts encodes again and decodes again. A Decoder used for every input
// (so its intern table fills up to its bound, and its last type changes),
// accepts and refuses the same inputs for the same reasons.
func decodesAsDocumented(r *Registry) fuzzdrive.Property {
	atoms := intern.New(64, 1024)
	dec := r.NewDecoder(atoms)
	return func(data []byte) error {
		v, err := r.Decode(data)
		if err := decodedAsDocumented(r, v, err); err != nil {
			return err
		}
		vi, erri := dec.Decode(data)
		if (err == nil) != (erri == nil) || errors.Is(err, ErrUnknownType) != errors.Is(erri, ErrUnknownType) {
			return fmt.Errorf("Registry.Decode says %v, Decoder.Decode says %v", err, erri)
		}
		if atoms.Len() > 64 || atoms.Bytes() > 1024 {
			return fmt.Errorf("the intern table grew past its bound: %d names, %d bytes", atoms.Len(), atoms.Bytes())
		}
		return decodedAsDocumented(r, vi, erri)
	}
}

// decodedAsDocumented checks what Decode returned: a documented error, or
// a value that encodes and decodes again.
func decodedAsDocumented(r *Registry, v any, err error) error {
	if err != nil {
		return documentedDecodeError(err)
	}
	again, err := r.Encode(nil, v)
	if err != nil {
		return fmt.Errorf("decoded %#v does not encode again: %w", v, err)
	}
	if _, err := r.Decode(again); err != nil {
		return fmt.Errorf("re-encoding of %#v does not decode: %w", v, err)
	}
	return nil
}

func documentedDecodeError(err error) error {
	malformed, unknown := errors.Is(err, gen.ErrMalformed), errors.Is(err, ErrUnknownType)
	switch {
	case malformed && unknown:
		return fmt.Errorf("error is both malformed and unknown: %w", err)
	case !malformed && !unknown:
		return fmt.Errorf("undocumented error: %w", err)
	}
	return nil
}

// Decode's allocation bound, as doc.go states it: a small constant
// multiple of the input, whatever lengths the input announces.
const (
	allocPerInputByte = 24
	allocFixed        = 8 << 10
)

// decodesWithinBound is FuzzDecodeAllocation's property: decoding data
// allocates at most allocPerInputByte bytes per input byte plus allocFixed,
// and otherwise behaves as decodesAsDocumented says.
func decodesWithinBound(r *Registry) fuzzdrive.Property {
	return func(data []byte) error {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		v, err := r.Decode(data)
		runtime.ReadMemStats(&after)
		if limit := uint64(allocPerInputByte*len(data) + allocFixed); after.TotalAlloc-before.TotalAlloc > limit {
			return fmt.Errorf("decoding %d bytes allocated %d bytes, more than %d", len(data), after.TotalAlloc-before.TotalAlloc, limit)
		}
		return decodedAsDocumented(r, v, err)
	}
}

// FuzzDecode feeds arbitrary bytes to Decode; see decodesAsDocumented.
func FuzzDecode(f *testing.F) {
	r := newTestRegistry(f)
	fuzzdrive.Fuzz(f, decodeSeeds(f, r), decodesAsDocumented(r))
}

// FuzzDecodeAllocation feeds arbitrary bytes to Decode and bounds what it
// allocates; see decodesWithinBound.
func FuzzDecodeAllocation(f *testing.F) {
	r := newTestRegistry(f)
	fuzzdrive.Fuzz(f, decodeSeeds(f, r), decodesWithinBound(r))
}

func TestRandomizedInputsDecodeWithinTheAllocationBound(t *testing.T) {
	r := newTestRegistry(t)
	fuzzdrive.Run(t, decodeSeeds(t, r), decodesWithinBound(r))
}
