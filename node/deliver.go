package node

import (
	"fmt"
	"time"

	"github.com/regent-go/regent/gen"
)

// address is a resolved destination: a PID, or a registered name on a node.
type address struct {
	pid  gen.PID
	name gen.Atom
	node gen.Atom
}

// target returns the relation target for the address.
func (a address) target() any {
	if a.name != "" {
		return gen.ProcessID{Name: a.name, Node: a.node}
	}
	return a.pid
}

// resolve turns the `to` of Send and Call (a gen.PID, a gen.ProcessID, or a
// gen.Atom naming a local process) into an address.
func (n *node) resolve(to any) (address, error) {
	switch t := to.(type) {
	case gen.PID:
		if t.Node == "" {
			return address{}, fmt.Errorf("destination %v has no node: %w", t, gen.ErrIncorrect)
		}
		return address{pid: t, node: t.Node}, nil
	case gen.ProcessID:
		if t.Name == "" {
			return address{}, fmt.Errorf("destination %v has no name: %w", t, gen.ErrIncorrect)
		}
		if t.Node == "" {
			t.Node = n.name
		}
		return address{name: t.Name, node: t.Node}, nil
	case gen.Atom:
		if t == "" {
			return address{}, fmt.Errorf("empty destination name: %w", gen.ErrIncorrect)
		}
		return address{name: t, node: n.name}, nil
	}
	return address{}, fmt.Errorf("destination of type %T: %w", to, gen.ErrIncorrect)
}

// lookupAddr returns the local process at addr, or nil.
func (n *node) lookupAddr(a address) *process {
	if a.name != "" {
		return n.lookupName(a.name)
	}
	return n.lookup(a.pid)
}

// deliver pushes m into q, telling a full mailbox from a gone process.
func (p *process) deliver(q *queue, m *gen.MailboxMessage) error {
	if p.push(q, m) {
		return nil
	}
	if p.State() == gen.ProcessStateTerminated {
		return fmt.Errorf("deliver to %s: %w", p.pid, gen.ErrProcessUnknown)
	}
	return fmt.Errorf("deliver to %s: %w", p.pid, gen.ErrProcessMailboxFull)
}

// send implements Send for processes and the node.
func (n *node) send(from gen.PID, to any, message any) error {
	addr, err := n.resolve(to)
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	if addr.node != n.name {
		return n.sendRemote(addr.node, &envelope{kind: kindMessage, from: from, target: addr.target(), payload: message})
	}
	return n.sendLocal(from, addr, message)
}

func (n *node) sendLocal(from gen.PID, addr address, message any) error {
	p := n.lookupAddr(addr)
	if p == nil {
		return fmt.Errorf("send to %v: %w", addr.target(), gen.ErrProcessUnknown)
	}
	return p.deliver(&p.main, &gen.MailboxMessage{From: from, Type: gen.MailboxMessageTypeRegular, Message: message})
}

// sendExit delivers an exit signal from `from` to pid.
func (n *node) sendExit(from gen.PID, to gen.PID, reason error) error {
	if reason == nil {
		return fmt.Errorf("send exit to %s: nil reason: %w", to, gen.ErrIncorrect)
	}
	if to.Node != n.name {
		return n.sendRemote(to.Node, &envelope{kind: kindExit, from: from, target: to, payload: reason})
	}
	return n.exitLocal(from, to, reason)
}

func (n *node) exitLocal(from gen.PID, to gen.PID, reason error) error {
	p := n.lookup(to)
	if p == nil {
		return fmt.Errorf("send exit to %s: %w", to, gen.ErrProcessUnknown)
	}
	m := &gen.MailboxMessage{From: from, Type: gen.MailboxMessageTypeExit, Message: gen.MessageExitPID{PID: from, Reason: reason}}
	return p.deliver(&p.urgent, m)
}

// sendAfter arms a timer that sends message when it fires.
func (n *node) sendAfter(from gen.PID, to any, message any, after time.Duration) (gen.CancelFunc, error) {
	if _, err := n.resolve(to); err != nil {
		return nil, fmt.Errorf("send after: %w", err)
	}
	cancel, err := n.timers.arm(after, func() {
		if err := n.send(from, to, message); err != nil {
			n.log.Debug("timed send from %s to %v: %v", from, to, err)
		}
	})
	if err != nil {
		return nil, n.errNodeStopping("send after")
	}
	return cancel, nil
}
