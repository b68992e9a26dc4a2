package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

func TestAppendAndReadBack(t *testing.T) {
	payloads := [][]byte{[]byte("hello"), {}, bytes.Repeat([]byte{0xAB}, 70000), []byte("x")}
	var stream []byte
	for _, p := range payloads {
		stream = Append(stream, p)
	}

	t.Run("the header is the big-endian payload length", func(t *testing.T) {
		assert.Equal(t, []byte{0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o'}, Append(nil, []byte("hello")))
	})

	t.Run("every frame comes back in order then a clean EOF", func(t *testing.T) {
		r := NewReader(bytes.NewReader(stream), 1<<20)
		for i, want := range payloads {
			got, err := r.Next()
			require.NoError(t, err, "frame %d", i)
			assert.Equal(t, want, got, "frame %d", i)
		}
		_, err := r.Next()
		assert.Equal(t, io.EOF, err)
	})

	t.Run("frames arriving one byte at a time are reassembled", func(t *testing.T) {
		r := NewReader(&oneByteReader{data: stream}, 1<<20)
		for i, want := range payloads {
			got, err := r.Next()
			require.NoError(t, err, "frame %d", i)
			assert.Equal(t, want, got, "frame %d", i)
		}
		_, err := r.Next()
		assert.ErrorIs(t, err, io.EOF)
	})

	t.Run("Append keeps what dst already held", func(t *testing.T) {
		out := Append([]byte("prefix"), []byte("ab"))
		assert.Equal(t, "prefix\x00\x00\x00\x02ab", string(out))
	})
}

func TestReaderRefusesOversizedFrames(t *testing.T) {
	t.Run("a frame one byte over the cap is too large", func(t *testing.T) {
		r := NewReader(bytes.NewReader(Append(nil, make([]byte, 11))), 10)
		_, err := r.Next()
		require.ErrorIs(t, err, gen.ErrTooLarge)
		assert.NotErrorIs(t, err, gen.ErrMalformed)
	})

	t.Run("a frame exactly at the cap is accepted", func(t *testing.T) {
		r := NewReader(bytes.NewReader(Append(nil, make([]byte, 10))), 10)
		got, err := r.Next()
		require.NoError(t, err)
		assert.Len(t, got, 10)
	})

	t.Run("a 4 GiB announcement neither reads nor allocates the payload", func(t *testing.T) {
		header := []byte{0xFF, 0xFF, 0xFF, 0xFF}
		src := &countingReader{r: bytes.NewReader(header)}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := 0; i < 20; i++ {
			src.r = bytes.NewReader(header)
			r := NewReader(src, 1024)
			_, err := r.Next()
			require.ErrorIs(t, err, gen.ErrTooLarge)
		}
		runtime.ReadMemStats(&after)
		assert.Less(t, (after.TotalAlloc-before.TotalAlloc)/20, uint64(64<<10), "bytes allocated per refused frame: the payload is never allocated")
		assert.Equal(t, 20*len(header), src.n, "only headers are read")
	})
}

func TestReaderAllocatesWhatArrivesNotWhatIsAnnounced(t *testing.T) {
	const announced, sent, readers = 4 << 20, 100, 20
	stream := append(binary.BigEndian.AppendUint32(nil, announced), make([]byte, sent)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range readers {
		_, err := NewReader(bytes.NewReader(stream), announced).Next()
		require.ErrorIs(t, err, gen.ErrMalformed, "the stream ends inside the payload")
	}
	runtime.ReadMemStats(&after)
	perReader := (after.TotalAlloc - before.TotalAlloc) / readers
	assert.Less(t, perReader, uint64(2*growStep), "bytes allocated per reader for a 4 MiB announcement followed by %d bytes", sent)

	t.Run("a frame that does arrive whole is read whole", func(t *testing.T) {
		payload := bytes.Repeat([]byte{3}, 3*growStep+5)
		got, err := NewReader(&oneByteReader{data: Append(nil, payload)}, len(payload)).Next()
		require.NoError(t, err)
		assert.Equal(t, payload, got)
	})
}

func TestReaderTruncatedStreams(t *testing.T) {
	full := Append(nil, []byte("payload"))
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"a stream ending inside the header is malformed", full[:2]},
		{"a stream ending inside the payload is malformed", full[:HeaderSize+3]},
		{"a stream ending right after the header is malformed", full[:HeaderSize]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(tc.data), 100).Next()
			require.ErrorIs(t, err, gen.ErrMalformed)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
			assert.NotErrorIs(t, err, io.EOF, "a truncated frame is not a clean end")
		})
	}

	t.Run("an empty stream is a clean EOF", func(t *testing.T) {
		_, err := NewReader(bytes.NewReader(nil), 100).Next()
		assert.Equal(t, io.EOF, err)
	})
}

func TestReaderPassesOnTransportErrors(t *testing.T) {
	boom := errors.New("connection reset")
	_, err := NewReader(io.MultiReader(bytes.NewReader([]byte{0, 0}), errReader{boom}), 100).Next()
	require.ErrorIs(t, err, boom)
	assert.NotErrorIs(t, err, gen.ErrMalformed)
}

func TestReaderReusesItsBuffer(t *testing.T) {
	var stream []byte
	for range 100 {
		stream = Append(stream, bytes.Repeat([]byte{1}, 512))
	}
	r := NewReader(bytes.NewReader(stream), 4096)
	_, err := r.Next()
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(50, func() {
		_, err := r.Next()
		require.NoError(t, err)
	})
	assert.Zero(t, allocs, "steady-state reads allocate nothing")
}

type oneByteReader struct{ data []byte }

func (o *oneByteReader) Read(p []byte) (int, error) {
	if len(o.data) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0] = o.data[0]
	o.data = o.data[1:]
	return 1, nil
}

type countingReader struct {
	r *bytes.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
