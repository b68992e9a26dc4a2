package node

import (
	"fmt"
	"time"

	"github.com/regent-go/regent/gen"
)

// deliver pushes a copy of m into q, telling a full mailbox from a gone
// process.
func (p *process) deliver(q *queue, m *gen.MailboxMessage) error {
	if p.push(q, m) {
		return nil
	}
	return p.refusal()
}

// refusal says why a push was refused: the process is gone, or its
// mailbox is full.
func (p *process) refusal() error {
	if p.State() == gen.ProcessStateTerminated {
		return fmt.Errorf("deliver to %s: %w", p.pid, gen.ErrProcessUnknown)
	}
	return fmt.Errorf("deliver to %s: %w", p.pid, gen.ErrProcessMailboxFull)
}

// send implements Send for processes and the node.
func (n *node) send(from gen.PID, to any, message any) error {
	if pid, isPID := to.(gen.PID); isPID && pid.Node != "" {
		return n.sendPID(from, pid, message)
	}
	t, err := n.parseTarget(to, false)
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return n.sendTo(from, t, message)
}

// sendPID sends message to the process pid, which names a node: the
// common case, which skips parseTarget, and for a local process building a
// target too.
func (n *node) sendPID(from gen.PID, pid gen.PID, message any) error {
	if pid.Node != n.name {
		return n.sendTo(from, pidTarget(pid), message)
	}
	if p := n.lookup(pid); p != nil {
		return p.sendMessage(from, message)
	}
	return fmt.Errorf("send to %v: %w", pid, gen.ErrProcessUnknown)
}

// sendTo sends message to t, a process here or on another node.
func (n *node) sendTo(from gen.PID, t target, message any) error {
	if n.isRemote(t) {
		return n.sendRemote(t.node, &envelope{kind: kindMessage, from: from, target: t, payload: message})
	}
	p := n.find(t)
	if p == nil {
		return fmt.Errorf("send to %v: %w", t, gen.ErrProcessUnknown)
	}
	return p.sendMessage(from, message)
}

// sendMessage delivers a regular message from `from` to p.
func (p *process) sendMessage(from gen.PID, message any) error {
	m := gen.MailboxMessage{From: from, Type: gen.MailboxMessageTypeRegular, Message: message}
	return p.deliver(&p.main, &m)
}

// sendExit delivers an exit signal from `from` to pid.
func (n *node) sendExit(from gen.PID, to gen.PID, reason error) error {
	if reason == nil {
		return fmt.Errorf("send exit to %s: nil reason: %w", to, gen.ErrIncorrect)
	}
	if to.Node != n.name {
		return n.sendRemote(to.Node, &envelope{kind: kindExit, from: from, target: pidTarget(to), payload: reason})
	}
	return n.exitLocal(from, to, reason)
}

func (n *node) exitLocal(from gen.PID, to gen.PID, reason error) error {
	p := n.lookup(to)
	if p == nil {
		return fmt.Errorf("send exit to %s: %w", to, gen.ErrProcessUnknown)
	}
	m := &gen.MailboxMessage{From: from, Type: gen.MailboxMessageTypeExit, Message: gen.MessageExitPID{PID: from, Reason: reason}}
	return p.deliver(p.urgent.made(), m)
}

// enqueueRequest queues a Call (kindRequest) or an inspection (kindInspect)
// from `from` in the mailbox of the local process t names, watching that
// process meanwhile so that its end answers the caller. It returns the
// watched PID; the watch ends with the response (see respond) or the
// process's end.
func (n *node) enqueueRequest(t target, from gen.PID, ref gen.Ref, kind frameKind, payload any) (gen.PID, error) {
	p := n.find(t)
	w := watcher{pid: from, ref: ref, kind: relCall}
	if p == nil || !n.rel.addIfLive(pidTarget(p.pid), w) {
		return gen.PID{}, gen.ErrProcessUnknown // the caller names the target
	}
	m := &gen.MailboxMessage{From: from, Ref: ref, Type: gen.MailboxMessageTypeRequest, Message: payload}
	q := &p.main
	if kind == kindInspect {
		items, isItems := payload.([]string)
		if !isItems {
			items = []string{}
		}
		m.Type, m.Message, q = gen.MailboxMessageTypeInspect, items, p.system.made()
	}
	if err := p.deliver(q, m); err != nil {
		n.rel.remove(pidTarget(p.pid), w)
		return gen.PID{}, err
	}
	return p.pid, nil
}

// sendAfter arms a timer that sends message when it fires.
func (n *node) sendAfter(from gen.PID, to any, message any, after time.Duration) (gen.CancelFunc, error) {
	t, err := n.parseTarget(to, false)
	if err != nil {
		return nil, fmt.Errorf("send after: %w", err)
	}
	cancel, err := n.timers.arm(after, func() {
		if err := n.sendTo(from, t, message); err != nil {
			n.log.Debug("timed send from %s to %v: %v", from, t, err)
		}
	})
	if err != nil {
		return nil, n.errNodeStopping("send after")
	}
	return cancel, nil
}
