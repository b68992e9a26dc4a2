package node

import (
	"cmp"
	"slices"
	"time"

	"github.com/regent-go/regent/gen"
)

// DownDeferrer is implemented by a process behavior whose monitors' downs
// may wait when the connection to the monitored process's node is lost.
//
// A lost connection ends every process of that node at once for every
// local watcher: one down per monitor, all woken together. When many
// election members share the node pair (thousands of clusters over the same
// nodes), most of those downs change nothing urgent (a follower whose leader
// lives elsewhere), and the few that do (a follower whose leader was there)
// wait for the CPU behind the rest. A behavior that says its down may wait
// gets it later, once that burst has passed.
//
// Only monitors wait (MonitorPID, MonitorProcessID): links and pending
// Calls learn of the loss at once, as do monitors of a process that ends
// on a node still connected. A down that waits may arrive after the
// watcher demonitored its target, as one already in its mailbox may.
type DownDeferrer interface {
	// DownDelayOnLoss is how long the downs of this process's monitors of
	// processes on node lost may wait, 0 or less for not at all. The node
	// calls it from the goroutine that handles the lost connection, while
	// the process runs: it must be safe for concurrent use, and quick.
	DownDelayOnLoss(lost gen.Atom) time.Duration
}

// heldDown is a down a watcher let wait: due after its delay.
type heldDown struct {
	relEntry
	after time.Duration
}

// notifyLost tells the watchers in fired that their targets' node lost is
// unreachable, for reason: at once, except the monitors whose process lets
// its downs wait (DownDeferrer), which are told in order of their delays.
func (n *node) notifyLost(lost gen.Atom, fired []relEntry, reason error) {
	var held []heldDown
	for _, e := range fired {
		if d := n.lossDelay(lost, e.w); d > 0 {
			held = append(held, heldDown{e, d})
			continue
		}
		n.notify(e.target, e.w, reason)
	}
	if len(held) == 0 {
		return
	}
	n.net.downsDeferred.Add(uint64(len(held)))
	slices.SortStableFunc(held, func(a, b heldDown) int { return cmp.Compare(a.after, b.after) })
	start := time.Now()
	var release func()
	release = func() {
		for len(held) > 0 && time.Since(start) >= held[0].after {
			n.notify(held[0].target, held[0].w, reason)
			held = held[1:]
		}
		if len(held) == 0 {
			return
		}
		if _, err := n.timers.arm(held[0].after-time.Since(start), release); err != nil {
			// The node is stopping (errTimersStopped): its processes end,
			// and a down would reach none of them.
			return
		}
	}
	release()
}

// lossDelay is how long the down for w may wait when its target's node lost
// is unreachable: 0 unless w is a monitor of a local process, past its
// ProcessInit, whose behavior lets it wait.
func (n *node) lossDelay(lost gen.Atom, w watcher) time.Duration {
	if w.kind != relMonitor {
		return 0
	}
	p := n.lookup(w.pid)
	if p == nil || gen.ProcessState(p.state.Load()) == gen.ProcessStateInit {
		// A process still in ProcessInit is asked nothing: its behavior's
		// fields are being written, and what they would say not yet known.
		return 0
	}
	d, ok := p.behavior.(DownDeferrer)
	if !ok {
		return 0
	}
	return max(d.DownDelayOnLoss(lost), 0)
}
