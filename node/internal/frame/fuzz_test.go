package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node/internal/fuzzdrive"
)

// fuzzCap is the Reader's cap in the fuzz property: large, so that headers
// can announce far more than the input holds.
const fuzzCap = 1 << 24

// readsStreamFaithfully is the frame reader's fuzz property. It reads data
// as a stream arriving in uneven pieces and checks that the Reader never
// panics, returns each payload within the cap, gives back exactly the bytes
// of the stream (the frames it returns re-encode to the prefix it
// consumed), fails only as documented, and never holds a buffer of more
// than about twice the bytes that arrived: a header's announcement alone
// allocates nothing large.
func readsStreamFaithfully(data []byte) error {
	src := &pieces{data: data}
	r := NewReader(src, fuzzCap)
	var again []byte
	for {
		payload, err := r.Next()
		if limit := max(growStep, 2*len(data)); cap(r.buf) > limit {
			return fmt.Errorf("buffer of %d bytes after %d bytes arrived (limit %d)", cap(r.buf), len(data), limit)
		}
		if err != nil {
			switch {
			case err == io.EOF:
				if !bytes.Equal(again, data) {
					return fmt.Errorf("frames re-encode to %x, the stream was %x", again, data)
				}
				return nil
			case errors.Is(err, gen.ErrTooLarge) || errors.Is(err, gen.ErrMalformed):
				if !bytes.HasPrefix(data, again) {
					return fmt.Errorf("frames re-encode to %x, not a prefix of %x", again, data)
				}
				return nil
			}
			return fmt.Errorf("undocumented error: %w", err)
		}
		if len(payload) > fuzzCap {
			return fmt.Errorf("payload of %d bytes over the cap", len(payload))
		}
		again = Append(again, payload)
	}
}

// pieces is a stream that delivers its data in pieces of 1 to 7 bytes.
type pieces struct {
	data []byte
	n    int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	p.n++
	k := min(len(b), len(p.data), 1+p.n%7)
	copy(b, p.data[:k])
	p.data = p.data[k:]
	return k, nil
}

func frameSeeds() [][]byte {
	announce := func(n uint32, tail int) []byte {
		return append(binary.BigEndian.AppendUint32(nil, n), make([]byte, tail)...)
	}
	two := Append(Append(nil, []byte("hello")), bytes.Repeat([]byte{7}, 300))
	return [][]byte{
		nil,
		Append(nil, nil),
		two,
		two[:len(two)-1],
		announce(fuzzCap, 10),
		announce(fuzzCap+1, 0),
		announce(1<<32-1, 3),
		announce(3<<20, 70000),
		{0, 0},
	}
}

func FuzzReader(f *testing.F) {
	fuzzdrive.Fuzz(f, frameSeeds(), readsStreamFaithfully)
}

func TestRandomizedStreamsAreReadFaithfully(t *testing.T) {
	fuzzdrive.Run(t, frameSeeds(), readsStreamFaithfully)
}
