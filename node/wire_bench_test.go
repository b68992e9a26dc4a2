package node

import (
	"testing"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node/internal/codec"
)

// benchPing is the shape of the benchmarks' message in node_test.
type benchPing struct {
	Seq  int
	Text string
}

func benchEnvelope(b *testing.B) (*network, *envelope) {
	nw := &network{registry: registry{reg: codec.NewRegistry()}, opts: gen.NetworkOptions{MaxFrameSize: defaultMaxFrameSize}}
	if err := nw.reg.RegisterType(benchPing{}); err != nil {
		b.Fatal(err)
	}
	env := &envelope{kind: kindMessage, from: gen.PID{Node: "bench-a@127.0.0.1", ID: 1, Creation: 1764563000000000000},
		target:  pidTarget(gen.PID{Node: "bench-b@127.0.0.1", ID: 1001, Creation: 1764563000000000001}),
		payload: benchPing{Seq: 1, Text: "hello"}}
	return nw, env
}

// BenchmarkWireEncode encodes one message frame into a reused buffer, as a
// remote Send does before it takes the connection's lock.
func BenchmarkWireEncode(b *testing.B) {
	nw, env := benchEnvelope(b)
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = nw.appendFrame(buf[:0], env); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(buf)), "frame-bytes")
}

// BenchmarkWireDecode decodes one message frame as a connection's reader
// does, names interned.
func BenchmarkWireDecode(b *testing.B) {
	nw, env := benchEnvelope(b)
	frame, err := nw.appendFrame(nil, env)
	if err != nil {
		b.Fatal(err)
	}
	fd := newFrameDecoder(nw.reg, env.target.node, env.from.Node)
	var got envelope
	b.ReportAllocs()
	for b.Loop() {
		if err := fd.decode(frame[4:], &got); err != nil {
			b.Fatal(err)
		}
	}
}
