package node

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
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
// Only monitors of processes wait (MonitorPID, MonitorProcessID): links,
// pending Calls and monitors of the node itself learn of the loss at once,
// as do monitors of a process that ends on a node still connected. Held
// downs are delivered at once, before anything the new connection carries,
// when a connection to that node is made again, and a process whose downs
// may no longer wait has its own delivered at once with
// ReleaseHeldDowns. A down that waits may arrive after the watcher
// demonitored its target, as one already in its mailbox may.
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

// heldBatch is the downs one lost connection let wait, in order of their
// delays; release delivers the due ones, and a new connection to the same
// node all of them first (releaseHeld).
type heldBatch struct {
	lost   gen.Atom
	reason error
	start  time.Time
	mu     sync.Mutex // guards downs and watchers
	downs  []heldDown // not yet delivered
	// watchers are the watchers of downs that ReleaseHeldDowns has not
	// taken yet, made by its first call: most batches never see one.
	watchers map[gen.PID]struct{}
}

// heldDowns are a node's batches by lost node.
type heldDowns struct {
	mu      sync.Mutex // guards batches; taken after the network's mu and before a batch's mu, never the other way
	batches map[gen.Atom][]*heldBatch
	// releases counts the calls of ReleaseHeldDowns, each counted before
	// it looks for batches: a loss whose watchers were asked while one ran
	// asks them again once its batch is listed (notifyLost).
	releases atomic.Uint64
}

// notifyLost tells the watchers in fired that their targets' node lost is
// unreachable, for reason: at once, except the monitors whose process lets
// its downs wait (DownDeferrer), which are told in order of their delays,
// or all at once when a connection to lost is made again, before anything
// it carries is delivered: a down never arrives after a message from the
// connection that followed the one it reports lost.
func (n *node) notifyLost(lost gen.Atom, fired []relEntry, reason error) {
	releases := n.held.releases.Load()
	var downs []heldDown
	for _, e := range fired {
		if d := n.lossDelay(lost, e.target, e.w); d > 0 {
			downs = append(downs, heldDown{e, d})
			continue
		}
		n.notify(e.target, e.w, reason)
	}
	if len(downs) == 0 {
		return
	}
	slices.SortStableFunc(downs, func(a, b heldDown) int { return cmp.Compare(a.after, b.after) })
	b := &heldBatch{lost: lost, reason: reason, start: time.Now(), downs: downs}
	// Under the network's lock, which a new connection's registration
	// holds from publishing it to starting its reader (releaseHeld): a
	// connection made since the loss finds the batch, or the batch finds
	// it and is not held at all.
	n.net.mu.Lock()
	back := n.net.existing(lost) != nil
	if !back {
		n.held.mu.Lock()
		if n.held.batches == nil {
			n.held.batches = make(map[gen.Atom][]*heldBatch)
		}
		n.held.batches[lost] = append(n.held.batches[lost], b)
		n.held.mu.Unlock()
	}
	n.net.mu.Unlock()
	if back {
		n.deliverHeld(downs, reason)
		return
	}
	n.net.downsDeferred.Add(uint64(len(downs)))
	if n.held.releases.Load() != releases {
		n.askAgain(b)
	}
	n.release(b)
}

// askAgain delivers at once the downs of b whose watchers no longer let
// them wait. A watcher that asked for its held downs (ReleaseHeldDowns)
// after it was asked for this loss's delay, and before b was listed, found
// nothing to release: without this, its down would wait the delay it
// gave before it changed its mind.
func (n *node) askAgain(b *heldBatch) {
	b.mu.Lock()
	pending := slices.Clone(b.downs)
	b.mu.Unlock()
	urgent := make(map[gen.PID]bool)
	for _, d := range pending {
		if _, asked := urgent[d.w.pid]; !asked {
			urgent[d.w.pid] = n.lossDelay(b.lost, d.target, d.w) <= 0
		}
	}
	b.mu.Lock()
	n.deliverHeld(b.take(func(w gen.PID) bool { return urgent[w] }), b.reason)
	b.mu.Unlock()
}

// release delivers b's due downs and arms a timer for the next; a batch
// with none left leaves the node's list. It delivers them under b.mu, so a
// releaseHeld that takes the rest waits for them to be in their mailboxes.
func (n *node) release(b *heldBatch) {
	b.mu.Lock()
	i := 0
	for i < len(b.downs) && time.Since(b.start) >= b.downs[i].after {
		i++
	}
	n.deliverHeld(b.downs[:i], b.reason)
	b.downs = b.downs[i:]
	left := len(b.downs) > 0
	var next time.Duration
	if left {
		next = b.downs[0].after - time.Since(b.start)
	}
	b.mu.Unlock()
	if !left {
		n.dropBatch(b)
		return
	}
	if _, err := n.timers.arm(next, func() { n.release(b) }); err != nil {
		// The node is stopping (errTimersStopped): its processes end, and a
		// down would reach none of them.
		n.dropBatch(b)
	}
}

// releaseHeld delivers, at once, every down still held for name: a
// connection to it is being made, and what it carries must come after them.
func (n *node) releaseHeld(name gen.Atom) {
	n.held.mu.Lock()
	batches := n.held.batches[name]
	delete(n.held.batches, name)
	n.held.mu.Unlock()
	for _, b := range batches {
		b.mu.Lock()
		n.deliverHeld(b.downs, b.reason)
		b.downs = nil
		b.mu.Unlock()
	}
}

// ReleaseHeldDowns delivers at once every down held back for watcher
// (DownDeferrer) and reports how many there were. A process calls it when
// its downs may no longer wait: an election member that stops following a
// leader elsewhere (it campaigns, or leads) must know which of its peers
// are lost. A loss being sorted as it runs asks its watchers again once it
// is listed (askAgain), so a watcher that changed its mind just after it
// was asked waits for nothing either. Not in ergo's Node.
func (n *node) ReleaseHeldDowns(watcher gen.PID) int {
	n.held.releases.Add(1)
	n.held.mu.Lock()
	if len(n.held.batches) == 0 {
		n.held.mu.Unlock()
		return 0
	}
	var batches []*heldBatch
	for _, list := range n.held.batches {
		batches = append(batches, list...)
	}
	n.held.mu.Unlock()
	released := 0
	for _, b := range batches {
		b.mu.Lock()
		if b.watchers == nil {
			b.watchers = make(map[gen.PID]struct{})
			for _, d := range b.downs {
				b.watchers[d.w.pid] = struct{}{}
			}
		}
		if _, ok := b.watchers[watcher]; ok {
			theirs := b.take(func(w gen.PID) bool { return w == watcher })
			n.deliverHeld(theirs, b.reason)
			released += len(theirs)
		}
		b.mu.Unlock()
	}
	return released
}

// take removes from b the downs held for the watchers that of says are
// theirs, and returns them. b.mu is held.
func (b *heldBatch) take(of func(watcher gen.PID) bool) []heldDown {
	var theirs []heldDown
	kept := b.downs[:0]
	for _, d := range b.downs {
		if of(d.w.pid) {
			delete(b.watchers, d.w.pid)
			theirs = append(theirs, d)
		} else {
			kept = append(kept, d)
		}
	}
	clear(b.downs[len(kept):])
	b.downs = kept
	return theirs
}

// deliverHeld tells each watcher of downs that its target is unreachable.
func (n *node) deliverHeld(downs []heldDown, reason error) {
	for _, d := range downs {
		n.notify(d.target, d.w, reason)
	}
}

// dropBatch removes b from the node's list, if it is still there.
func (n *node) dropBatch(b *heldBatch) {
	n.held.mu.Lock()
	defer n.held.mu.Unlock()
	list := n.held.batches[b.lost]
	if i := slices.Index(list, b); i >= 0 {
		list = slices.Delete(list, i, i+1)
	}
	if len(list) == 0 {
		delete(n.held.batches, b.lost)
	} else {
		n.held.batches[b.lost] = list
	}
}

// lossDelay is how long the down for t may wait, for w, when its node lost
// is unreachable: 0 unless w is a monitor of a process (not of a node) by a
// local process, past its ProcessInit, whose behavior lets it wait.
func (n *node) lossDelay(lost gen.Atom, t target, w watcher) time.Duration {
	if w.kind != relMonitor || t.isNode() {
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
