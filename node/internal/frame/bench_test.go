package frame

import (
	"bytes"
	"io"
	"testing"
)

// BenchmarkReadFrames reads 128-byte frames from memory; compare with
// BenchmarkReadRawBaseline, which copies the same bytes with no framing.
func BenchmarkReadFrames(b *testing.B) {
	payload := bytes.Repeat([]byte{7}, 128)
	var stream []byte
	for range 1024 {
		stream = Append(stream, payload)
	}
	src := bytes.NewReader(stream)
	r := NewReader(src, 1<<16)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Next(); err == io.EOF {
			src.Reset(stream)
			r = NewReader(src, 1<<16)
			if _, err := r.Next(); err != nil {
				b.Fatal(err)
			}
		} else if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendFrame appends a 128-byte frame to a reused buffer.
func BenchmarkAppendFrame(b *testing.B) {
	payload := bytes.Repeat([]byte{7}, 128)
	buf := make([]byte, 0, 256)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		buf = Append(buf[:0], payload)
	}
}
