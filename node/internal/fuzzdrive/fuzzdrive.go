package fuzzdrive

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"
)

// Property checks one input; a non-nil error is a failure.
type Property func(data []byte) error

// defaultDuration is how long Run drives a property without
// REGENT_FUZZ_SECONDS.
const defaultDuration = 2 * time.Second

// Duration is how long each driver runs: REGENT_FUZZ_SECONDS, or two seconds.
func Duration(t testing.TB) time.Duration {
	v := os.Getenv("REGENT_FUZZ_SECONDS")
	if v == "" {
		return defaultDuration
	}
	s, err := strconv.ParseFloat(v, 64)
	if err != nil || s < 0 {
		t.Fatalf("REGENT_FUZZ_SECONDS=%q is not a number of seconds", v)
	}
	return time.Duration(s * float64(time.Second))
}

// Fuzz makes f a fuzz target of property, with seeds as its corpus.
func Fuzz(f *testing.F, seeds [][]byte, property Property) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := property(data); err != nil {
			t.Fatal(err)
		}
	})
}

// Run feeds property the seeds and then inputs mutated from them until
// Duration has passed, and fails t on the first input the property refuses.
func Run(t *testing.T, seeds [][]byte, property Property) {
	t.Helper()
	d := Duration(t)
	if d == 0 {
		t.Skip("REGENT_FUZZ_SECONDS=0")
	}
	seed := time.Now().UnixNano()
	if v := os.Getenv("REGENT_FUZZ_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatalf("REGENT_FUZZ_SEED=%q is not an integer", v)
		}
	}
	rng := rand.New(rand.NewSource(seed))
	m := mutator{rng: rng, seeds: seeds}
	deadline := time.Now().Add(d)
	runs := 0
	for i := 0; i < len(seeds) || time.Now().Before(deadline); i++ {
		var input []byte
		if i < len(seeds) {
			input = seeds[i]
		} else {
			input = m.next()
		}
		if err := check(property, input); err != nil {
			t.Fatalf("REGENT_FUZZ_SEED=%d, input %d (%d bytes) %q: %v", seed, i, len(input), input, err)
		}
		runs++
	}
	t.Logf("REGENT_FUZZ_SEED=%d: %d inputs in %v", seed, runs, d)
}

// check runs property, turning a panic into an error.
func check(property Property, input []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return property(append([]byte(nil), input...))
}

// mutator makes inputs from the seeds and from its own earlier outputs.
type mutator struct {
	rng   *rand.Rand
	seeds [][]byte
	last  []byte
}

// interesting are values that often sit on a boundary of a length or a count.
var interesting = []uint32{0, 1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0xFFFF, 1 << 16, 1 << 20, 1 << 24, 1<<31 - 1, 1 << 31, 1<<32 - 1}

func (m *mutator) next() []byte {
	var in []byte
	switch r := m.rng.Intn(10); {
	case r == 0 || len(m.seeds) == 0:
		in = make([]byte, m.rng.Intn(256))
		m.rng.Read(in)
	case r < 4 && m.last != nil:
		in = append([]byte(nil), m.last...)
	default:
		in = append([]byte(nil), m.seeds[m.rng.Intn(len(m.seeds))]...)
	}
	for n := 1 + m.rng.Intn(4); n > 0; n-- {
		in = m.mutate(in)
	}
	if len(in) > 1<<16 {
		in = in[:1<<16]
	}
	m.last = in
	return in
}

func (m *mutator) mutate(in []byte) []byte {
	at := func() int { return m.rng.Intn(len(in) + 1) }
	switch m.rng.Intn(8) {
	case 0: // flip a bit
		if len(in) > 0 {
			in[m.rng.Intn(len(in))] ^= 1 << m.rng.Intn(8)
		}
	case 1: // set a byte to an interesting value
		if len(in) > 0 {
			in[m.rng.Intn(len(in))] = byte(interesting[m.rng.Intn(len(interesting))])
		}
	case 2: // overwrite four bytes with an interesting big-endian value
		if len(in) >= 4 {
			i := m.rng.Intn(len(in) - 3)
			binary.BigEndian.PutUint32(in[i:], interesting[m.rng.Intn(len(interesting))])
		}
	case 3: // insert random bytes
		i, b := at(), make([]byte, 1+m.rng.Intn(8))
		m.rng.Read(b)
		in = append(in[:i], append(b, in[i:]...)...)
	case 4: // delete a range
		if len(in) > 0 {
			i := m.rng.Intn(len(in))
			j := i + 1 + m.rng.Intn(min(len(in)-i, 16))
			in = append(in[:i], in[j:]...)
		}
	case 5: // duplicate a range
		if len(in) > 0 {
			i := m.rng.Intn(len(in))
			j := i + 1 + m.rng.Intn(min(len(in)-i, 32))
			k := at()
			in = append(in[:k], append(append([]byte(nil), in[i:j]...), in[k:]...)...)
		}
	case 6: // truncate
		in = in[:at()]
	case 7: // splice in part of another seed
		if len(m.seeds) > 0 {
			s := m.seeds[m.rng.Intn(len(m.seeds))]
			if len(s) > 0 {
				i := m.rng.Intn(len(s))
				k := at()
				in = append(in[:k], append(append([]byte(nil), s[i:]...), in[k:]...)...)
			}
		}
	}
	return in
}
