package codec_test

import (
	"fmt"
	"testing"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/node/internal/codec"
	"github.com/regent-go/regent/node/internal/intern"
)

// batchRegistry registers the election messages and the heartbeat batch, as
// a node running leader does.
func batchRegistry(tb testing.TB) *codec.Registry {
	tb.Helper()
	r := codec.NewRegistry()
	for _, v := range append(election.NetworkTypes(), leader.MessageHeartbeatBatch{}) {
		if err := r.RegisterType(v); err != nil {
			tb.Fatal(err)
		}
	}
	return r
}

// testHeader is an election header as a member of a three-node cluster sends it.
func testHeader(i int) election.Header {
	return election.Header{
		ClusterID: "cluster-a",
		Term:      uint64(100 + i),
		From:      gen.ProcessID{Name: "member", Node: gen.Atom(fmt.Sprintf("node%d@host", i%3))},
		Started:   1_717_171_717_000_000_000 + int64(i),
		View: election.ViewStamp{
			Lineage: election.Lineage{Term: 7, Node: "node0@host"},
			Key:     election.ViewKey{Term: 99, Epoch: uint64(i)},
			Agreed:  i%2 == 0,
		},
	}
}

// testBatch is a heartbeat batch of n heartbeats and n acks, shaped as the
// coalescer sends them: one in five heartbeats carries the whole view.
func testBatch(n int) leader.MessageHeartbeatBatch {
	var b leader.MessageHeartbeatBatch
	for i := range n {
		route := leader.CoalescedRoute{FromID: uint64(1000 + i), FromCreation: 1_717_171_717, ToID: uint64(2000 + i), ToCreation: 1_717_171_718}
		if i%4 == 0 {
			route.ToID, route.ToName = 0, "member"
		}
		hb := election.MessageHeartbeat{Header: testHeader(i), Committed: election.ViewKey{Term: 99, Epoch: uint64(i)}}
		if i%5 == 0 {
			hb.View = &election.View{Stamp: hb.Header.View, Members: []gen.ProcessID{
				{Name: "member", Node: "node0@host"}, {Name: "member", Node: "node1@host"}, {Name: "member", Node: "node2@host"},
			}}
		}
		b.Heartbeats = append(b.Heartbeats, leader.CoalescedHeartbeat{CoalescedRoute: route, Message: hb})
		ack := election.MessageHeartbeatAck{Header: testHeader(i), Declines: i%3 == 0}
		if i%7 == 0 {
			ack.Follows = gen.PID{Node: "node2@host", ID: uint64(i), Creation: 5}
		}
		b.Acks = append(b.Acks, leader.CoalescedAck{CoalescedRoute: route, Message: ack})
	}
	return b
}

// BenchmarkEncodeHeartbeatBatch encodes a batch of 20 heartbeats and 20 acks
// into a reused buffer.
func BenchmarkEncodeHeartbeatBatch(b *testing.B) {
	r := batchRegistry(b)
	msg := testBatch(20)
	buf := make([]byte, 0, 8<<10)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = r.Encode(buf[:0], msg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(buf)), "wire-bytes")
}

// BenchmarkDecodeHeartbeatBatch decodes that batch with a connection's
// Decoder, whose intern table holds the node and process names.
func BenchmarkDecodeHeartbeatBatch(b *testing.B) {
	r := batchRegistry(b)
	data, err := r.Encode(nil, testBatch(20))
	if err != nil {
		b.Fatal(err)
	}
	dec := r.NewDecoder(intern.New(1024, 64<<10))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := dec.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// manyClusterBatches are the batches one node sends another per heartbeat
// tick when clusters clusters each have a member on both: entries name a
// cluster and a member of their own, as in `regent bench scale`.
func manyClusterBatches(tb testing.TB, r *codec.Registry, clusters, perBatch int) [][]byte {
	tb.Helper()
	var frames [][]byte
	for first := 0; first < clusters; first += perBatch {
		var b leader.MessageHeartbeatBatch
		for k := first; k < min(first+perBatch, clusters); k++ {
			h := testHeader(k)
			h.ClusterID = fmt.Sprintf("scale-%d", k)
			h.From = gen.ProcessID{Name: gen.Atom(fmt.Sprintf("c%d", k))}
			route := leader.CoalescedRoute{FromID: uint64(1000 + k), FromCreation: 1_717_171_717, ToName: h.From.Name}
			b.Heartbeats = append(b.Heartbeats, leader.CoalescedHeartbeat{CoalescedRoute: route,
				Message: election.MessageHeartbeat{Header: h, Committed: election.ViewKey{Term: 99, Epoch: 1}}})
			b.Acks = append(b.Acks, leader.CoalescedAck{CoalescedRoute: route, Message: election.MessageHeartbeatAck{Header: h}})
		}
		data, err := r.Encode(nil, b)
		if err != nil {
			tb.Fatal(err)
		}
		frames = append(frames, data)
	}
	return frames
}

// BenchmarkDecodeManyClusters decodes, with one connection's Decoder, the
// batches of a tick of 1,000 clusters, again and again: allocs/entry is
// what decoding costs per heartbeat or acknowledgement once the names of
// the clusters and members are known.
func BenchmarkDecodeManyClusters(b *testing.B) {
	const clusters = 1000
	r := batchRegistry(b)
	frames := manyClusterBatches(b, r, clusters, 256)
	dec := r.NewDecoder(intern.New(8192, 64<<10))
	tick := func() {
		for _, f := range frames {
			if _, err := dec.Decode(f); err != nil {
				b.Fatal(err)
			}
		}
	}
	for range 20 {
		tick()
	}
	b.ReportAllocs()
	for b.Loop() {
		tick()
	}
	b.ReportMetric(testing.AllocsPerRun(5, tick)/(2*clusters), "allocs/entry")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(2*clusters), "ns/entry")
}
