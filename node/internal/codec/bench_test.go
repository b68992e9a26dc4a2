package codec

import (
	"bytes"
	"encoding/gob"
	"testing"

	"github.com/regent-go/regent/gen"
)

var benchMsg = small{Name: "leader", Term: 1 << 40, From: gen.PID{Node: "node1@localhost", ID: 1234, Creation: 1717171717}}

// BenchmarkEncodeSmall encodes the small message into a reused buffer.
func BenchmarkEncodeSmall(b *testing.B) {
	r := newTestRegistry(b)
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = r.Encode(buf[:0], benchMsg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(buf)), "wire-bytes")
}

// BenchmarkDecodeSmall decodes the small message.
func BenchmarkDecodeSmall(b *testing.B) {
	r := newTestRegistry(b)
	data, err := r.Encode(nil, benchMsg)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGobEncodeSmallBaseline encodes the same message with a long-lived
// gob encoder (type information sent once), the standard library's baseline.
func BenchmarkGobEncodeSmallBaseline(b *testing.B) {
	var buf bytes.Buffer
	enc := gob.NewEncoder(&buf)
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := enc.Encode(benchMsg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "wire-bytes")
}

// BenchmarkGobDecodeSmallBaseline decodes the same message with a long-lived
// gob decoder.
func BenchmarkGobDecodeSmallBaseline(b *testing.B) {
	var stream bytes.Buffer
	enc := gob.NewEncoder(&stream)
	const batch = 4096
	for range batch {
		if err := enc.Encode(benchMsg); err != nil {
			b.Fatal(err)
		}
	}
	data := stream.Bytes()
	dec := gob.NewDecoder(bytes.NewReader(data))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n == batch {
			b.StopTimer()
			dec, n = gob.NewDecoder(bytes.NewReader(data)), 0
			b.StartTimer()
		}
		var m small
		if err := dec.Decode(&m); err != nil {
			b.Fatal(err)
		}
		n++
	}
}
