package node

import (
	"fmt"

	"github.com/regent-go/regent/gen"
)

// receive carries out one frame from the peer on c.
func (n *node) receive(c *connection, env *envelope) {
	switch env.kind {
	case kindMessage:
		addr, ok := n.localAddress(env.target)
		if !ok {
			c.nw.drop(dropUnexpectedFrame)
			return
		}
		if err := n.sendLocal(env.from, addr, env.payload); err != nil {
			c.nw.drop(dropUnknownProcess)
			n.log.Debug("message from %s dropped: %v", env.from, err)
		}
	case kindRequest, kindInspect:
		n.receiveRequest(c, env)
	case kindResponse:
		pid, _ := env.target.(gen.PID)
		if pid.Node != n.name {
			c.nw.drop(dropUnexpectedFrame)
			return
		}
		if env.flags&flagError != 0 {
			n.calls.resolve(env.ref, nil, payloadError(env.payload))
			return
		}
		n.calls.resolve(env.ref, env.payload, nil)
	case kindExit:
		pid, _ := env.target.(gen.PID)
		if err := n.exitLocal(env.from, pid, payloadError(env.payload)); err != nil {
			c.nw.drop(dropUnknownProcess)
		}
	case kindWatch:
		kind := relKind(env.flags)
		if _, ok := n.localAddress(env.target); !ok || (kind != relMonitor && kind != relLink) {
			c.nw.drop(dropUnexpectedFrame)
			return
		}
		w := watcher{pid: env.from, kind: kind}
		if !n.rel.addChecked(env.target, w, n.localExists(env.target)) {
			n.notifyRemote(env.target, w, gen.ErrProcessUnknown)
		}
	case kindUnwatch:
		n.rel.remove(env.target, watcher{pid: env.from, kind: relKind(env.flags)})
	case kindDown:
		w := watcher{pid: env.to, kind: relKind(env.flags)}
		if targetNode(env.target) != c.peer.Name {
			c.nw.drop(dropUnexpectedFrame)
			return
		}
		if n.rel.remove(env.target, w) {
			n.notify(env.target, w, payloadError(env.payload))
		}
	default:
		c.nw.drop(dropUnexpectedFrame)
	}
}

// receiveRequest queues a remote Call or inspection, answering at once
// when the target is unknown or its mailbox is full.
func (n *node) receiveRequest(c *connection, env *envelope) {
	addr, ok := n.localAddress(env.target)
	if !ok {
		c.nw.drop(dropUnexpectedFrame)
		return
	}
	fail := func(err error) {
		n.reply(c, &envelope{kind: kindResponse, flags: flagError, target: env.from, ref: env.ref, payload: err})
	}
	p := n.lookupAddr(addr)
	w := watcher{pid: env.from, ref: env.ref, kind: relCall}
	if p == nil || !n.rel.addChecked(p.pid, w, n.localExists(p.pid)) {
		fail(gen.ErrProcessUnknown)
		return
	}
	m := &gen.MailboxMessage{From: env.from, Ref: env.ref, Type: gen.MailboxMessageTypeRequest, Message: env.payload}
	q := &p.main
	if env.kind == kindInspect {
		items, isItems := env.payload.([]string)
		if !isItems {
			items = []string{}
		}
		m.Type, m.Message, q = gen.MailboxMessageTypeInspect, items, &p.system
	}
	if err := p.deliver(q, m); err != nil {
		n.rel.remove(p.pid, w)
		fail(err)
	}
}

// refuseUnknown answers a request whose payload type this node does not
// know, so the caller learns gen.ErrUnregistered instead of timing out.
func (n *node) refuseUnknown(c *connection, env *envelope, err error) {
	if env == nil || (env.kind != kindRequest && env.kind != kindInspect) {
		return
	}
	n.reply(c, &envelope{kind: kindResponse, flags: flagError, target: env.from, ref: env.ref, payload: err})
}

// reply sends a runtime-made answer back on c.
func (n *node) reply(c *connection, env *envelope) {
	if err := c.send(env); err != nil {
		n.log.Debug("reply to %s: %v", c.peer.Name, err)
	}
}

// localAddress checks that a frame's target lives on this node.
func (n *node) localAddress(target any) (address, bool) {
	switch t := target.(type) {
	case gen.PID:
		return address{pid: t, node: t.Node}, t.Node == n.name
	case gen.ProcessID:
		return address{name: t.Name, node: t.Node}, t.Node == n.name && t.Name != ""
	}
	return address{}, false
}

// payloadError returns the error a frame carries.
func payloadError(v any) error {
	if err, ok := v.(error); ok && err != nil {
		return err
	}
	return fmt.Errorf("frame carried %T instead of an error: %w", v, gen.ErrMalformed)
}
