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
	target any
	w      watcher
}

// relations records monitors, links and pending Calls, keyed by what they
// watch: a gen.PID, a gen.ProcessID (Node always set), or a gen.Atom naming
// a node. Watchers may be local or remote; targets too. A remote target is
// also recorded on its own node, which reports its end with a down frame.
type relations struct {
	node *node

	mu       sync.Mutex // guards targets and watching; never held while taking node.mu's write lock
	targets  map[any]map[watcher]struct{}
	watching map[gen.PID]map[relEntry]struct{} // local watchers only: what each one watches
}

// add records w watching target. When exists is not nil it is checked under
// the lock, so the record cannot slip in after the target's end was
// announced; add then reports false and records nothing.
func (r *relations) add(target any, w watcher) {
	r.addChecked(target, w, nil)
}

func (r *relations) addChecked(target any, w watcher, exists func() bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if exists != nil && !exists() {
		return false
	}
	if r.targets == nil {
		r.targets = make(map[any]map[watcher]struct{})
		r.watching = make(map[gen.PID]map[relEntry]struct{})
	}
	set := r.targets[target]
	if set == nil {
		set = make(map[watcher]struct{})
		r.targets[target] = set
	}
	set[w] = struct{}{}
	// A pending Call removes its own record when it returns, so it needs no
	// entry for cleanup when its caller terminates.
	if w.pid.Node == r.node.name && w.kind != relCall {
		mine := r.watching[w.pid]
		if mine == nil {
			mine = make(map[relEntry]struct{})
			r.watching[w.pid] = mine
		}
		mine[relEntry{target, w}] = struct{}{}
	}
	return true
}

// remove deletes one record and reports whether it existed.
func (r *relations) remove(target any, w watcher) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removeLocked(target, w)
}

func (r *relations) removeLocked(target any, w watcher) bool {
	set, ok := r.targets[target]
	if !ok {
		return false
	}
	if _, ok := set[w]; !ok {
		return false
	}
	delete(set, w)
	if len(set) == 0 {
		delete(r.targets, target)
	}
	if mine := r.watching[w.pid]; mine != nil {
		delete(mine, relEntry{target, w})
		if len(mine) == 0 {
			delete(r.watching, w.pid)
		}
	}
	return true
}

// takeTarget removes and returns every watcher of target.
func (r *relations) takeTargetLocked(target any, out []relEntry) []relEntry {
	for w := range r.targets[target] {
		out = append(out, relEntry{target, w})
	}
	for _, e := range out {
		r.removeLocked(e.target, e.w)
	}
	return out
}

// targetGone announces the end of local process p to everyone watching it
// (by PID or by its registered name) and drops what p itself watched.
func (r *relations) targetGone(p *process, reason error) {
	r.mu.Lock()
	fired := r.takeTargetLocked(p.pid, nil)
	if p.name != "" {
		fired = r.takeTargetLocked(gen.ProcessID{Name: p.name, Node: r.node.name}, fired)
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
	for e := range r.watching[p.pid] {
		r.removeLocked(e.target, e.w)
		if e.w.kind != relCall && targetNode(e.target) != r.node.name {
			remote = append(remote, e)
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
// gen.ErrNoConnection.
func (r *relations) nodeUnreachable(name gen.Atom, reason error) {
	r.mu.Lock()
	var fired, dropped []relEntry
	for target, set := range r.targets {
		remoteTarget := targetNode(target) == name
		for w := range set {
			switch {
			case remoteTarget:
				fired = append(fired, relEntry{target, w})
			case w.pid.Node == name:
				dropped = append(dropped, relEntry{target, w})
			}
		}
	}
	for _, e := range fired {
		r.removeLocked(e.target, e.w)
	}
	for _, e := range dropped {
		r.removeLocked(e.target, e.w)
	}
	r.mu.Unlock()
	for _, e := range fired {
		r.node.notify(e.target, e.w, reason)
	}
}

// targetNode returns the node a relation target lives on.
func targetNode(target any) gen.Atom {
	switch t := target.(type) {
	case gen.PID:
		return t.Node
	case gen.ProcessID:
		return t.Node
	case gen.Atom:
		return t
	}
	return ""
}

// notify tells watcher w that target ended with reason, locally or through
// the watcher's node.
func (n *node) notify(target any, w watcher, reason error) {
	if w.pid.Node != n.name {
		n.notifyRemote(target, w, reason)
		return
	}
	if w.kind == relCall {
		err := gen.ErrProcessTerminated
		if errors.Is(reason, gen.ErrNoConnection) || errors.Is(reason, gen.ErrProcessUnknown) {
			err = reason
		}
		n.calls.resolve(w.ref, nil, fmt.Errorf("call %v: %w", target, err))
		return
	}
	p := n.lookup(w.pid)
	if p == nil {
		return
	}
	from, _ := target.(gen.PID)
	if w.kind == relLink {
		p.push(&p.urgent, &gen.MailboxMessage{From: from, Type: gen.MailboxMessageTypeExit, Target: target, Message: exitMessage(target, reason)})
		return
	}
	p.push(&p.system, &gen.MailboxMessage{From: from, Type: gen.MailboxMessageTypeRegular, Target: target, Message: downMessage(target, reason)})
}

func downMessage(target any, reason error) any {
	switch t := target.(type) {
	case gen.PID:
		return gen.MessageDownPID{PID: t, Reason: reason}
	case gen.ProcessID:
		return gen.MessageDownProcessID{ProcessID: t, Reason: reason}
	default:
		return gen.MessageDownNode{Name: targetNode(target)}
	}
}

func exitMessage(target any, reason error) any {
	switch t := target.(type) {
	case gen.PID:
		return gen.MessageExitPID{PID: t, Reason: reason}
	case gen.ProcessID:
		return gen.MessageExitProcessID{ProcessID: t, Reason: reason}
	default:
		return gen.MessageExitNode{Name: targetNode(target)}
	}
}

// watchTarget turns the argument of Link/Monitor into a relation target.
func (n *node) watchTarget(target any) (any, error) {
	switch t := target.(type) {
	case gen.PID:
		if t.Node == "" {
			return nil, fmt.Errorf("target %v has no node: %w", t, gen.ErrIncorrect)
		}
		return t, nil
	case gen.ProcessID:
		if t.Name == "" {
			return nil, fmt.Errorf("target %v has no name: %w", t, gen.ErrIncorrect)
		}
		if t.Node == "" {
			t.Node = n.name
		}
		return t, nil
	case gen.Atom:
		if t == n.name || t == "" {
			return nil, fmt.Errorf("target node %q: %w", t, gen.ErrIncorrect)
		}
		return t, nil
	}
	return nil, fmt.Errorf("target of type %T: %w", target, gen.ErrIncorrect)
}

// localExists returns the existence check of a local relation target.
func (n *node) localExists(target any) func() bool {
	return func() bool {
		switch t := target.(type) {
		case gen.PID:
			return n.lookup(t) != nil
		case gen.ProcessID:
			return n.lookupName(t.Name) != nil
		}
		return false
	}
}

// watch implements Link and Monitor.
func (n *node) watch(p *process, target any, kind relKind) error {
	t, err := n.watchTarget(target)
	if err != nil {
		return err
	}
	w := watcher{pid: p.pid, kind: kind}
	where := targetNode(t)
	if where == n.name {
		if !n.rel.addChecked(t, w, n.localExists(t)) {
			return fmt.Errorf("watch %v: %w", t, gen.ErrProcessUnknown)
		}
		return nil
	}
	n.rel.add(t, w)
	if _, isNode := t.(gen.Atom); isNode {
		err = n.connectTo(where)
	} else {
		// The watch is one-way: waiting for the target's node to record it
		// would block the watcher for a round trip. An unknown target is
		// reported by a Down (or exit) with gen.ErrProcessUnknown, and a
		// lost connection by one with gen.ErrNoConnection, as for any watch.
		err = n.sendRemote(where, &envelope{kind: kindWatch, flags: uint8(kind), from: p.pid, target: t})
	}
	if err != nil {
		n.rel.remove(t, w)
		return fmt.Errorf("watch %v: %w", t, err)
	}
	return nil
}

// unwatch implements Unlink and Demonitor.
func (n *node) unwatch(p *process, target any, kind relKind) error {
	t, err := n.watchTarget(target)
	if err != nil {
		return err
	}
	w := watcher{pid: p.pid, kind: kind}
	if !n.rel.remove(t, w) {
		return nil
	}
	if _, isNode := t.(gen.Atom); !isNode && targetNode(t) != n.name {
		n.sendUnwatch(t, w)
	}
	return nil
}

// sendUnwatch tells a remote target's node to drop a watcher, if a
// connection exists; without one the remote side has already dropped it.
func (n *node) sendUnwatch(target any, w watcher) {
	if _, isNode := target.(gen.Atom); isNode || n.net == nil {
		return
	}
	c := n.net.existing(targetNode(target))
	if c == nil {
		return
	}
	if err := c.send(&envelope{kind: kindUnwatch, flags: uint8(w.kind), from: w.pid, target: target}); err != nil {
		n.log.Debug("unwatch %v on %s: %v", target, targetNode(target), err)
	}
}
