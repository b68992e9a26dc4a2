//go:build unix

package mmfcell

import (
	"sync/atomic"
	"testing"
	"time"
)

// Reserved header words the benchmarks use as their raw baseline, so the
// baseline touches the same mapped page as the cell's own operations.
const (
	offScratchA = 48
	offScratchB = 56
)

// sink keeps results alive so the compiler cannot drop the loops.
var sink atomic.Uint64

// pair is one cell operation and its raw-atomic baseline on the same mapping.
type pair struct {
	name      string
	cell, raw func(c *Cell, a, b *atomic.Uint64) uint64
}

func benchPairs() []pair {
	return []pair{
		{
			name: "TryClaim idempotent vs raw CAS loop",
			cell: func(c *Cell, _, _ *atomic.Uint64) uint64 { return boolWord(c.TryClaim(c.self, DefaultGraceEpochs)) },
			raw: func(_ *Cell, a, _ *atomic.Uint64) uint64 {
				for {
					old := a.Load()
					if a.CompareAndSwap(old, old) {
						return old
					}
				}
			},
		},
		{
			name: "Beat vs raw store",
			cell: func(c *Cell, _, _ *atomic.Uint64) uint64 { return boolWord(c.Beat(c.self)) },
			raw: func(_ *Cell, a, _ *atomic.Uint64) uint64 {
				a.Store(1)
				return 1
			},
		},
		{
			name: "TickEpoch then Beat vs raw add then raw store",
			cell: func(c *Cell, _, _ *atomic.Uint64) uint64 { return c.TickEpoch() + boolWord(c.Beat(c.self)) },
			raw: func(_ *Cell, a, b *atomic.Uint64) uint64 {
				n := a.Add(1)
				b.Store(n)
				return n
			},
		},
		{
			name: "TickEpoch vs raw add",
			cell: func(c *Cell, _, _ *atomic.Uint64) uint64 { return c.TickEpoch() },
			raw:  func(_ *Cell, a, _ *atomic.Uint64) uint64 { return a.Add(1) },
		},
	}
}

func boolWord(ok bool) uint64 {
	if ok {
		return 1
	}
	return 0
}

// leaderCell is a cell this process already leads, so every operation takes
// the leader's path.
func leaderCell(b *testing.B) (*Cell, *atomic.Uint64, *atomic.Uint64) {
	c := newCell(b)
	if !c.TryClaim(c.self, DefaultGraceEpochs) {
		b.Fatal("could not claim a fresh cell")
	}
	return c, word(c.mem, offScratchA), word(c.mem, offScratchB)
}

// BenchmarkCell measures each operation and its raw baseline as neighbouring
// sub-benchmarks (compare their ns/op), and then both in one loop, chunk by
// chunk alternating, reporting the ratio cell/raw as x_raw: the figure the
// design targets at 1.2 or below.
func BenchmarkCell(b *testing.B) {
	for _, p := range benchPairs() {
		for side, op := range map[string]func(c *Cell, a, b *atomic.Uint64) uint64{"cell": p.cell, "raw": p.raw} {
			b.Run(p.name+"/"+side, func(b *testing.B) {
				c, x, y := leaderCell(b)
				var acc uint64
				for b.Loop() {
					acc += op(c, x, y)
				}
				sink.Add(acc)
			})
		}
		b.Run(p.name+"/ratio", func(b *testing.B) {
			c, x, y := leaderCell(b)
			const chunk = 1024
			var cellTime, rawTime time.Duration
			var acc uint64
			for done := 0; done < b.N; done += chunk {
				n := min(chunk, b.N-done)
				start := time.Now()
				for range n {
					acc += p.cell(c, x, y)
				}
				mid := time.Now()
				for range n {
					acc += p.raw(c, x, y)
				}
				cellTime += mid.Sub(start)
				rawTime += time.Since(mid)
			}
			sink.Add(acc)
			b.ReportMetric(float64(cellTime.Nanoseconds())/float64(b.N), "cell-ns/op")
			b.ReportMetric(float64(rawTime.Nanoseconds())/float64(b.N), "raw-ns/op")
			b.ReportMetric(float64(cellTime)/float64(rawTime), "x_raw")
		})
	}
}
