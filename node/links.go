package node

import (
	"errors"
	"fmt"
	"sync"

	"github.com/regent-go/regent/gen"
)

// relKind says what a watcher asked for.
type relKind uint8

const (
	relMonitor relKind = iota + 1 // a Down message when the target ends
	relLink                       // an exit signal when the target ends
	relCall                       // an error response to a pending Call
)

// watcher is one party interested in a target. Ref identifies a pending
// Call for relCall and is zero otherwise.
type watcher struct {
	pid  gen.PID
	ref  gen.Ref
	kind relKind
}

type relEntry struct {
	target target
	w      watcher
}

// plainWatcher is a watcher other than a pending Call's, as relations keeps
// it: without the Ref that only a Call carries. Every member keeps one per
// peer it monitors and its peers one each for it, so the Ref's unused bytes
// would be most of what the record costs.
type plainWatcher struct {
	pid  gen.PID
	kind relKind
}

func (w plainWatcher) watcher() watcher { return watcher{pid: w.pid, kind: w.kind} }

// watchEntry is one record a local watcher holds, in its set of
// relations.watching: the watcher's PID is the set's key, and the Ref is
// zero, as pending Calls are not kept there. Every member holds one per
// peer, so the entry carries no more than that.
type watchEntry struct {
	target target
	kind   relKind
}

// relations records monitors, links and pending Calls, keyed by what they
// watch. Watchers may be local or remote; targets too. A remote target is
// also recorded on its own node, which reports its end with a down frame.
type relations struct {
	node *node

	mu sync.Mutex // guards the maps below. Lock order: mu, then node.mu (read, in addIfLive); never taken with node.mu held
	// byPID holds the monitors and links of each target named by its PID
	// alone (pidTarget), most of them, under a key half the size of a
	// target; targets holds those of every other target, calls the pending
	// Calls on any: a Call's watcher carries its Ref.
	// The sets are kept by value (see smallSet): a set of one costs its
	// map entry only.
	// A monitor or link that a local process holds on a process of another
	// node named by its PID is kept in watching alone (see watchedOnly):
	// every member holds one per peer, and a second record of each, in
	// byPID, would be most of what the relations cost.
	byPID    map[gen.PID]smallSet[plainWatcher]
	targets  map[target]smallSet[plainWatcher]
	calls    map[target]smallSet[watcher]
	watching map[gen.PID]smallSet[watchEntry] // local watchers only: what each one watches
}

// add records w watching t.
func (r *relations) add(t target, w watcher) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addLocked(t, w)
}

// addIfLive records w watching t, a local process, and reports true, only
// if t is alive: the check and the record happen under one lock, so the
// record cannot slip in after t's end was announced.
func (r *relations) addIfLive(t target, w watcher) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.node.find(t) == nil {
		return false
	}
	r.addLocked(t, w)
	return true
}

func (r *relations) addLocked(t target, w watcher) {
	if w.kind == relCall {
		// A pending Call removes its own record when it returns, so it
		// needs no entry in watching for cleanup when its caller terminates.
		if r.calls == nil {
			r.calls = make(map[target]smallSet[watcher])
		}
		set := r.calls[t]
		set.add(w)
		r.calls[t] = set
		return
	}
	if r.watching == nil {
		r.byPID = make(map[gen.PID]smallSet[plainWatcher])
		r.targets = make(map[target]smallSet[plainWatcher])
		r.watching = make(map[gen.PID]smallSet[watchEntry])
	}
	if !r.watchedOnly(t, w.pid) {
		set := r.plain(t)
		set.add(plainWatcher{w.pid, w.kind})
		r.setPlain(t, set)
	}
	if w.pid.Node == r.node.name {
		mine := r.watching[w.pid]
		mine.add(watchEntry{t, w.kind})
		r.watching[w.pid] = mine
	}
}

// watchedOnly reports whether the monitors and links of watcher on t are
// kept in watching alone: t is a process of another node named by its PID,
// and watcher is local. What such a record is needed for finds it there:
// the target's end comes in a down frame that names its watcher, a lost
// connection scans every record anyway, and the watcher's own end reads
// watching.
func (r *relations) watchedOnly(t target, watcher gen.PID) bool {
	return watcher.Node == r.node.name && t.node != r.node.name && byPID(t)
}

// byPID reports whether t's monitors and links are kept in relations.byPID:
// t names a process by its PID alone.
func byPID(t target) bool { return t.isPID() && t == pidTarget(t.pid) }

// plain returns the monitors and links of t, empty when it has none.
func (r *relations) plain(t target) smallSet[plainWatcher] {
	if byPID(t) {
		return r.byPID[t.pid]
	}
	return r.targets[t]
}

// setPlain stores set as the monitors and links of t, or forgets t when
// set is empty.
func (r *relations) setPlain(t target, set smallSet[plainWatcher]) {
	switch {
	case byPID(t) && set.len() == 0:
		delete(r.byPID, t.pid)
	case byPID(t):
		r.byPID[t.pid] = set
	case set.len() == 0:
		delete(r.targets, t)
	default:
		r.targets[t] = set
	}
}

// remove deletes one record and reports whether it existed.
func (r *relations) remove(t target, w watcher) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removeLocked(t, w)
}

func (r *relations) removeLocked(t target, w watcher) bool {
	if w.kind == relCall {
		set := r.calls[t]
		if !set.remove(w) {
			return false
		}
		if set.len() == 0 {
			delete(r.calls, t)
		} else {
			r.calls[t] = set
		}
		return true
	}
	if !r.watchedOnly(t, w.pid) {
		set := r.plain(t)
		if !set.remove(plainWatcher{w.pid, w.kind}) {
			return false
		}
		r.setPlain(t, set)
	}
	mine, ok := r.watching[w.pid]
	if !ok || !mine.remove(watchEntry{t, w.kind}) {
		// Kept in watching alone, it was not there; kept in both, it
		// was in the set of t only if a remote watcher's.
		return !r.watchedOnly(t, w.pid)
	}
	if mine.len() == 0 {
		delete(r.watching, w.pid)
	} else {
		r.watching[w.pid] = mine
	}
	return true
}

// eachPlain calls f for every monitor and link recorded, those kept in
// watching alone included; f must not change the relations.
func (r *relations) eachPlain(f func(t target, w plainWatcher)) {
	var ws []plainWatcher
	for pid, set := range r.byPID {
		ws = set.appendTo(ws[:0])
		for _, w := range ws {
			f(pidTarget(pid), w)
		}
	}
	for t, set := range r.targets {
		ws = set.appendTo(ws[:0])
		for _, w := range ws {
			f(t, w)
		}
	}
	var es []watchEntry
	for pid, set := range r.watching {
		es = set.appendTo(es[:0])
		for _, e := range es {
			if r.watchedOnly(e.target, pid) {
				f(e.target, plainWatcher{pid, e.kind})
			}
		}
	}
}

// takeTargetLocked removes every watcher of t and appends them to out.
// Called with r.mu held.
func (r *relations) takeTargetLocked(t target, out []relEntry) []relEntry {
	start := len(out)
	if set := r.plain(t); set.len() > 0 {
		for _, w := range set.appendTo(nil) {
			out = append(out, relEntry{t, w.watcher()})
		}
	}
	if t.node != r.node.name && byPID(t) {
		// Its local watchers' records are in watching alone: a process of
		// another node ends through a down frame, not here, so this scan
		// serves completeness, not the hot path.
		r.eachPlain(func(u target, w plainWatcher) {
			if u == t && r.watchedOnly(u, w.pid) {
				out = append(out, relEntry{t, w.watcher()})
			}
		})
	}
	if set, ok := r.calls[t]; ok {
		for _, w := range set.appendTo(nil) {
			out = append(out, relEntry{t, w})
		}
	}
	for _, e := range out[start:] {
		r.removeLocked(e.target, e.w)
	}
	return out
}

// targetGone announces the end of local process p to everyone watching it
// (by PID or by its registered name) and drops what p itself watched.
func (r *relations) targetGone(p *process, reason error) {
	r.mu.Lock()
	fired := r.takeTargetLocked(pidTarget(p.pid), nil)
	if p.name != "" {
		fired = r.takeTargetLocked(target{name: p.name, node: r.node.name}, fired)
	}
	r.mu.Unlock()
	r.forget(p)
	for _, e := range fired {
		r.node.notify(e.target, e.w, reason)
	}
}

// forget drops everything p watches; remote targets' nodes are told so they
// stop tracking p.
func (r *relations) forget(p *process) {
	r.mu.Lock()
	var remote []relEntry
	var mine []watchEntry
	if set, ok := r.watching[p.pid]; ok {
		mine = set.appendTo(nil) // removeLocked edits the set
	}
	for _, e := range mine {
		w := watcher{pid: p.pid, kind: e.kind}
		r.removeLocked(e.target, w)
		if r.node.isRemote(e.target) {
			remote = append(remote, relEntry{e.target, w})
		}
	}
	r.mu.Unlock()
	for _, e := range remote {
		r.node.sendUnwatch(e.target, e.w)
	}
}

// nodeDown handles a lost connection to name: every watcher of a target on
// that node learns ErrNoConnection, and watchers living on that node are
// forgotten.
func (r *relations) nodeDown(name gen.Atom) {
	r.nodeUnreachable(name, gen.ErrNoConnection)
}

// nodeUnreachable is nodeDown with the reason watchers learn; it must wrap
// gen.ErrNoConnection. A node that is stopping tells its own processes
// nothing (a Call waiting on the peer still fails at once): they are ending,
// and a force stop, which cuts every connection before it ends them, would
// otherwise have each one run a callback per peer it watched first, work a
// crashed node never does and its peers' failover waits behind when they
// share the CPU.
func (r *relations) nodeUnreachable(name gen.Atom, reason error) {
	// A stopping node leaves its monitors and links as they are: scanning
	// them costs milliseconds per lost peer, when its peers need the CPU.
	ending := !r.node.IsAlive()
	r.mu.Lock()
	var fired, dropped []relEntry
	classify := func(t target, w watcher) {
		switch {
		case t.node == name:
			fired = append(fired, relEntry{t, w})
		case w.pid.Node == name:
			dropped = append(dropped, relEntry{t, w})
		}
	}
	if !ending {
		r.eachPlain(func(t target, w plainWatcher) { classify(t, w.watcher()) })
	}
	var cs []watcher
	for t, set := range r.calls {
		cs = set.appendTo(cs[:0])
		for _, w := range cs {
			classify(t, w)
		}
	}
	for _, e := range fired {
		r.removeLocked(e.target, e.w)
	}
	for _, e := range dropped {
		r.removeLocked(e.target, e.w)
	}
	r.mu.Unlock()
	r.node.notifyLost(name, fired, reason)
}

// notify tells watcher w that t ended with reason, locally or through the
// watcher's node.
func (n *node) notify(t target, w watcher, reason error) {
	if w.pid.Node != n.name {
		n.notifyRemote(t, w, reason)
		return
	}
	if w.kind == relCall {
		err := gen.ErrProcessTerminated
		if errors.Is(reason, gen.ErrNoConnection) || errors.Is(reason, gen.ErrProcessUnknown) {
			err = reason
		}
		n.calls.resolve(w.ref, nil, fmt.Errorf("call %v: %w", t, err))
		return
	}
	p := n.lookup(w.pid)
	if p == nil {
		return
	}
	if w.kind == relLink {
		p.push(p.urgent.made(), &gen.MailboxMessage{From: t.pid, Type: gen.MailboxMessageTypeExit, Target: t.value(), Message: t.exit(reason)})
		return
	}
	p.push(p.system.made(), &gen.MailboxMessage{From: t.pid, Type: gen.MailboxMessageTypeRegular, Target: t.value(), Message: t.down(reason)})
}

// watch implements Link and Monitor.
func (n *node) watch(p *process, to any, kind relKind) error {
	t, err := n.parseTarget(to, true)
	if err != nil {
		return err
	}
	return n.watchTarget(p, t, kind)
}

// watchTarget is watch of a parsed target.
func (n *node) watchTarget(p *process, t target, kind relKind) (err error) {
	w := watcher{pid: p.pid, kind: kind}
	if !n.isRemote(t) {
		if !n.rel.addIfLive(t, w) {
			return fmt.Errorf("watch %v: %w", t, gen.ErrProcessUnknown)
		}
		return nil
	}
	n.rel.add(t, w)
	if t.isNode() {
		err = n.connectTo(t.node)
	} else {
		// The watch is one-way: waiting for the target's node to record it
		// would block the watcher for a round trip. An unknown target is
		// reported by a Down (or exit) with gen.ErrProcessUnknown, and a
		// lost connection by one with gen.ErrNoConnection, as for any watch.
		err = n.sendRemote(t.node, &envelope{kind: kindWatch, flags: uint8(kind), from: p.pid, target: t})
	}
	if err != nil {
		n.rel.remove(t, w)
		return fmt.Errorf("watch %v: %w", t, err)
	}
	return nil
}

// unwatch implements Unlink and Demonitor.
func (n *node) unwatch(p *process, to any, kind relKind) error {
	t, err := n.parseTarget(to, true)
	if err != nil {
		return err
	}
	w := watcher{pid: p.pid, kind: kind}
	if n.rel.remove(t, w) && n.isRemote(t) {
		n.sendUnwatch(t, w)
	}
	return nil
}
