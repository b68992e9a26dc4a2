package election

import (
	"github.com/regent-go/regent/gen"
	"testing"
	"time"
)

// BenchmarkFollowerHeartbeat is the steady-state cost of one heartbeat on a
// follower: Step, then taking its Ready (the ack and the re-armed timer).
// Compare it with BenchmarkBaselineMapUpdate, run alongside, for a ratio.
func BenchmarkFollowerHeartbeat(b *testing.B) {
	cfg := testConfig(nodeName(1), 1)
	cfg.Bootstrap = []gen.ProcessID{procID(nodeName(2)), procID(nodeName(3)), procID(nodeName(4)), procID(nodeName(5))}
	c, err := New(cfg, peerPID(1), HardState{}, epoch)
	if err != nil {
		b.Fatal(err)
	}
	c.Ready()
	hb := MessageHeartbeat{ClusterID: testCluster, Term: 1, Leader: procID(nodeName(2))}
	now, from := epoch, peerPID(2)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		c.Step(now, from, hb)
		c.Ready()
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

// BenchmarkElectionOfFive runs a whole cold-start election of five members
// on the virtual network, from New to one agreed leader.
func BenchmarkElectionOfFive(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		nw := newNetwork(b, 5, uint64(i), nil)
		nw.settle(5 * time.Second)
	}
}
