package election

import (
	"testing"
	"time"
)

// BenchmarkFollowerHeartbeat is the steady-state cost of one heartbeat on a
// follower of an agreed view of five: Step, then taking its Ready (the ack).
// Compare it with BenchmarkBaselineMapUpdate, run alongside, for a ratio.
func BenchmarkFollowerHeartbeat(b *testing.B) {
	cfg := testConfig(nodeName(1), 1)
	c, err := New(cfg, peerPID(1), HardState{Term: 1, View: agreedView(5, 1, 1)}, epoch)
	if err != nil {
		b.Fatal(err)
	}
	c.Ready()
	v, _ := c.View()
	hb := MessageHeartbeat{Header: hdr(2, 1, v.Stamp)}
	now, from := epoch, peerPID(2)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		c.Step(now, from, hb)
		c.Ready()
	}
}

// BenchmarkLeaderTick is a leader's heartbeat tick over a view of five:
// evidence, membership, heartbeats out, then four acknowledgements in.
func BenchmarkLeaderTick(b *testing.B) {
	nw, l := settledLeader(b, 5, 1, nil)
	var a armed
	b.ReportAllocs()
	for b.Loop() {
		a = l.timers[TimerHeartbeat]
		nw.fire(l, a)
		nw.flush()
	}
}

// BenchmarkBaselineMapUpdate is the floor a heartbeat is compared with: one
// map lookup and time store per message.
func BenchmarkBaselineMapUpdate(b *testing.B) {
	seen := map[string]time.Time{"n2@host": epoch}
	now := epoch
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		seen["n2@host"] = now
	}
}

// BenchmarkElectionOfFive runs a whole cold start of five members on the
// virtual network, from New to one leader every member follows: formation,
// agreement and publication.
func BenchmarkElectionOfFive(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		nw := newNetwork(b, 5, uint64(i), nil)
		nw.settle(5 * time.Second)
	}
}

// BenchmarkLeadsAt is what leader.Actor.IsLeader costs a leader of five
// (the quorum check at an instant), beside BenchmarkIsLeader, the visible
// role alone that it used to read.
func BenchmarkLeadsAt(b *testing.B) {
	nw, l := settledLeader(b, 5, 1, nil)
	now := nw.now
	b.ReportAllocs()
	for b.Loop() {
		if !l.core.LeadsAt(now) {
			b.Fatal("the settled leader does not lead")
		}
	}
}

func BenchmarkIsLeader(b *testing.B) {
	_, l := settledLeader(b, 5, 1, nil)
	b.ReportAllocs()
	for b.Loop() {
		if !l.core.IsLeader() {
			b.Fatal("the settled leader does not lead")
		}
	}
}
