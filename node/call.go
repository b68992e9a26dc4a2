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
	t, err := n.parseTarget(to, false)
	if err != nil {
		return nil, fmt.Errorf("call: %w", err)
	}
	ref := n.makeRef()
	ch := n.calls.add(ref)
	defer n.calls.remove(ref)
	w := watcher{pid: from, ref: ref, kind: relCall}
	switch {
	case n.isRemote(t):
		// Watching the remote target makes the loss of its node answer at once.
		n.rel.add(t, w)
		defer n.rel.remove(t, w)
		err = n.sendRemote(t.node, &envelope{kind: kind, from: from, target: t, ref: ref, payload: payload})
	case self != nil && t.names(self):
		err = fmt.Errorf("a process cannot call itself: %w", gen.ErrNotAllowed)
	default:
		var pid gen.PID
		if pid, err = n.enqueueRequest(t, from, ref, kind, payload); err == nil {
			defer n.rel.remove(pidTarget(pid), w)
		}
	}
	var v any
	if err == nil {
		v, err = n.await(self, ch, timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("call %v: %w", t, err)
	}
	return v, nil
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

// inspect asks the process pid for its inspection map.
func (n *node) inspect(self *process, from gen.PID, pid gen.PID, items []string) (map[string]string, error) {
	if items == nil {
		items = []string{}
	}
	v, err := n.call(self, from, pid, kindInspect, items, gen.DefaultRequestTimeout)
	if err != nil {
		return nil, err
	}
	switch m := v.(type) {
	case map[string]string:
		return m, nil
	case nil:
		return map[string]string{}, nil
	}
	return nil, fmt.Errorf("inspect %s: answer of type %T: %w", pid, v, gen.ErrMalformed)
}

// respond answers the Call ref made by to. A response nobody waits for any
// more is dropped without error.
func (n *node) respond(from, to gen.PID, ref gen.Ref, value any, err error) error {
	n.rel.remove(pidTarget(from), watcher{pid: to, ref: ref, kind: relCall})
	if to.Node == n.name {
		n.calls.resolve(ref, value, err)
		return nil
	}
	env := &envelope{kind: kindResponse, from: from, target: pidTarget(to), ref: ref, payload: value}
	if err != nil {
		env.flags, env.payload = flagError, err
	}
	return n.sendRemote(to.Node, env)
}
