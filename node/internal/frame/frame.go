package frame

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/regent-go/regent/gen"
)

// HeaderSize is the length of a frame header: a big-endian uint32 payload length.
const HeaderSize = 4

// growStep is the least a Reader's buffer grows by while a frame's bytes
// arrive: a frame up to this size is read in one step.
const growStep = 64 << 10

// Append appends one frame (header and payload) to dst and returns the
// extended slice.
func Append(dst []byte, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	return append(dst, payload...)
}

// Reader reads frames from a stream. It owns a reusable payload buffer that
// grows with the bytes that actually arrive, up to its cap, so a header
// announcing a large frame costs nothing until its payload comes; one
// goroutine owns a Reader and its buffer.
type Reader struct {
	br  *bufio.Reader
	max int
	buf []byte // where a frame larger than br's buffer is assembled
}

// NewReader returns a Reader over r that refuses frames whose payload is
// longer than max bytes. A max below zero is treated as zero.
func NewReader(r io.Reader, max int) *Reader {
	if max < 0 {
		max = 0
	}
	return &Reader{br: bufio.NewReader(r), max: max}
}

// Buffered returns how many bytes already read from the stream wait in the
// Reader's buffer: when it is zero, the next call to Next reads the stream.
func (r *Reader) Buffered() int { return r.br.Buffered() }

// Max returns the largest payload the Reader accepts.
func (r *Reader) Max() int { return r.max }

// Ready reports whether the next frame is wholly buffered, so that Next
// returns it without reading the stream. A frame larger than the buffer
// never is.
func (r *Reader) Ready() bool {
	if r.br.Buffered() < HeaderSize {
		return false
	}
	hdr, err := r.br.Peek(HeaderSize)
	return err == nil && uint64(r.br.Buffered()) >= HeaderSize+uint64(binary.BigEndian.Uint32(hdr))
}

// Next returns the next payload; the slice is valid until the next call. It
// returns io.EOF when the stream ends cleanly between frames, an error
// wrapping gen.ErrMalformed and io.ErrUnexpectedEOF when it ends inside a
// frame, and an error wrapping gen.ErrTooLarge, without reading the payload,
// when the announced length exceeds the cap. Other read errors are returned
// wrapped.
//
// A frame that fits in the stream's buffer is returned where it lies there,
// without a copy; a larger one is assembled in the Reader's own buffer.
func (r *Reader) Next() ([]byte, error) {
	hdr, err := r.br.Peek(HeaderSize)
	if err != nil {
		if len(hdr) == 0 && errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, readError("header", err)
	}
	size := binary.BigEndian.Uint32(hdr)
	if uint64(size) > uint64(r.max) {
		return nil, fmt.Errorf("frame: payload of %d bytes exceeds the cap of %d: %w", size, r.max, gen.ErrTooLarge)
	}
	if whole := HeaderSize + int(size); whole <= r.br.Size() {
		f, err := r.br.Peek(whole)
		if err != nil {
			return nil, readError("payload", err)
		}
		r.br.Discard(whole) // cannot fail: Peek returned as many
		return f[HeaderSize:], nil
	}
	r.br.Discard(HeaderSize) // cannot fail: Peek returned as many
	buf := r.buf[:0]
	for len(buf) < int(size) {
		if len(buf) == cap(buf) {
			// Double what arrived so far, at least by growStep: the
			// allocations stay within about twice the bytes received.
			grown := make([]byte, len(buf), min(int(size), max(2*cap(buf), growStep)))
			copy(grown, buf)
			buf = grown
		}
		n, err := io.ReadFull(r.br, buf[len(buf):min(cap(buf), int(size))])
		buf = buf[:len(buf)+n]
		if err != nil {
			r.buf = buf[:0]
			return nil, readError("payload", err)
		}
	}
	r.buf = buf
	return r.buf, nil
}

// readError turns a short read into a malformed-frame error and wraps any
// other read error with what was being read.
func readError(part string, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("frame: stream ended inside a frame %s: %w: %w", part, gen.ErrMalformed, io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("frame: reading %s: %w", part, err)
}
