package node

import (
	"fmt"
	"sync"
	"time"

	"github.com/regent-go/regent/gen"
)

// callResult is the answer to a pending Call.
type callResult struct {
	value any
	err   error
}

// callTable holds the channels of Calls waiting for their response, keyed by
// the request's Ref. The first answer wins; later ones find no entry and are
// dropped.
type callTable struct {
	mu      sync.Mutex // guards waiting
	waiting map[gen.Ref]chan callResult
}

func (t *callTable) init() { t.waiting = make(map[gen.Ref]chan callResult) }

func (t *callTable) add(ref gen.Ref) chan callResult {
	ch := make(chan callResult, 1)
	t.mu.Lock()
	t.waiting[ref] = ch
	t.mu.Unlock()
	return ch
}

func (t *callTable) remove(ref gen.Ref) {
	t.mu.Lock()
	delete(t.waiting, ref)
	t.mu.Unlock()
}

// resolve answers the Call ref and reports whether one was waiting.
func (t *callTable) resolve(ref gen.Ref, value any, err error) bool {
	t.mu.Lock()
	ch, ok := t.waiting[ref]
	delete(t.waiting, ref)
	t.mu.Unlock()
	if ok {
		ch <- callResult{value, err}
	}
	return ok
}

// call sends a request (kindRequest or kindInspect) and waits for its answer.
// self is the calling process, nil for the node itself. The target is
// watched while waiting so that its end or its node's loss answers at once.
func (n *node) call(self *process, from gen.PID, to any, kind frameKind, payload any, timeout int) (any, error) {
	addr, err := n.resolve(to)
	if err != nil {
		return nil, fmt.Errorf("call: %w", err)
	}
	if addr.node != n.name {
		env := &envelope{kind: kind, from: from, target: addr.target(), ref: n.makeRef(), payload: payload}
		v, err := n.remoteRequest(self, env, timeout)
		if err != nil {
			return nil, fmt.Errorf("call %v: %w", to, err)
		}
		return v, nil
	}
	if self != nil && (addr.pid == self.pid || (addr.name != "" && addr.name == self.name)) {
		return nil, fmt.Errorf("call %v: a process cannot call itself: %w", to, gen.ErrNotAllowed)
	}
	ref := n.makeRef()
	ch := n.calls.add(ref)
	defer n.calls.remove(ref)
	w := watcher{pid: from, ref: ref, kind: relCall}
	target := n.lookupAddr(addr)
	if target == nil || !n.rel.addChecked(target.pid, w, n.localExists(target.pid)) {
		return nil, fmt.Errorf("call %v: %w", to, gen.ErrProcessUnknown)
	}
	defer n.rel.remove(target.pid, w)
	m := &gen.MailboxMessage{From: from, Ref: ref, Type: gen.MailboxMessageTypeRequest, Message: payload}
	q := &target.main
	if kind == kindInspect {
		m.Type, q = gen.MailboxMessageTypeInspect, &target.system
	}
	if err := target.deliver(q, m); err != nil {
		return nil, fmt.Errorf("call %v: %w", to, err)
	}
	v, err := n.await(self, ch, timeout)
	if err != nil {
		return nil, fmt.Errorf("call %v: %w", to, err)
	}
	return v, nil
}

// remoteRequest sends env, whose ref is set, to the target's node and waits
// for the answer. The target is watched meanwhile, so losing its node
// answers ErrNoConnection at once.
func (n *node) remoteRequest(self *process, env *envelope, timeout int) (any, error) {
	ch := n.calls.add(env.ref)
	defer n.calls.remove(env.ref)
	w := watcher{pid: env.from, ref: env.ref, kind: relCall}
	n.rel.add(env.target, w)
	defer n.rel.remove(env.target, w)
	if err := n.sendRemote(targetNode(env.target), env); err != nil {
		return nil, err
	}
	return n.await(self, ch, timeout)
}

// await waits for a pending Call's answer, the timeout (in seconds) or the
// node's stop. The calling process shows WaitResponse meanwhile.
func (n *node) await(self *process, ch chan callResult, timeout int) (any, error) {
	var abort chan struct{} // closed when the calling process is asked to terminate
	if self != nil {
		before := self.state.Swap(int32(gen.ProcessStateWaitResponse))
		defer self.state.Store(before)
		self.out.Add(1)
		abort = make(chan struct{})
		self.abort.Store(&abort)
		defer self.abort.Store(nil)
		if reason := self.kill.Load(); reason != nil {
			return nil, fmt.Errorf("caller is terminating (%w): %w", *reason, gen.ErrProcessTerminated)
		}
	}
	timer := time.NewTimer(time.Duration(timeout) * time.Second)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r.value, r.err
	case <-timer.C:
		return nil, fmt.Errorf("no response in %ds: %w", timeout, gen.ErrTimeout)
	case <-abort:
		return nil, fmt.Errorf("caller is terminating (%w): %w", *self.kill.Load(), gen.ErrProcessTerminated)
	case <-n.quit:
		return nil, n.errNodeStopping("wait for a response")
	}
}

// inspect asks target for its inspection map.
func (n *node) inspect(self *process, from gen.PID, target gen.PID, items []string) (map[string]string, error) {
	if items == nil {
		items = []string{}
	}
	v, err := n.call(self, from, target, kindInspect, items, gen.DefaultRequestTimeout)
	if err != nil {
		return nil, err
	}
	switch m := v.(type) {
	case map[string]string:
		return m, nil
	case nil:
		return map[string]string{}, nil
	}
	return nil, fmt.Errorf("inspect %s: answer of type %T: %w", target, v, gen.ErrMalformed)
}

// respond answers the Call ref made by to. A response nobody waits for any
// more is dropped without error.
func (n *node) respond(from, to gen.PID, ref gen.Ref, value any, err error) error {
	n.rel.remove(from, watcher{pid: to, ref: ref, kind: relCall})
	if to.Node == n.name {
		n.calls.resolve(ref, value, err)
		return nil
	}
	env := &envelope{kind: kindResponse, from: from, target: to, ref: ref, payload: value}
	if err != nil {
		env.flags, env.payload = flagError, err
	}
	return n.sendRemote(to.Node, env)
}
