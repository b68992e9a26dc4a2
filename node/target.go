package node

import (
	"fmt"

	"github.com/regent-go/regent/gen"
)

// target is what an operation points at: a process by PID, a registered
// name on a node, or a whole node (watches only). The `any` of ergo's
// signatures is decoded into a target once, by parseTarget, and frames carry
// one; everything inside the runtime uses this type. It is comparable, so
// relations key their tables by it.
type target struct {
	pid  gen.PID  // set for a process named by PID
	name gen.Atom // set for a registered name
	node gen.Atom // the node it lives on; the node itself for a node target
}

func pidTarget(pid gen.PID) target { return target{pid: pid, node: pid.Node} }

func (t target) isPID() bool  { return t.pid != (gen.PID{}) }
func (t target) isName() bool { return t.name != "" }
func (t target) isNode() bool { return !t.isPID() && !t.isName() }

// value is the target as gen spells it: a gen.PID, a gen.ProcessID or the
// gen.Atom of a node.
func (t target) value() any {
	switch {
	case t.isPID():
		return t.pid
	case t.isName():
		return t.processID()
	}
	return t.node
}

func (t target) processID() gen.ProcessID { return gen.ProcessID{Name: t.name, Node: t.node} }

func (t target) String() string { return fmt.Sprint(t.value()) }

// names reports whether t designates the local process p, by PID or name.
func (t target) names(p *process) bool {
	return t.pid == p.pid || (t.isName() && t.name == p.name && t.node == p.pid.Node)
}

// down is the message a monitor of t receives when t ends with reason.
func (t target) down(reason error) any {
	switch {
	case t.isPID():
		return gen.MessageDownPID{PID: t.pid, Reason: reason}
	case t.isName():
		return gen.MessageDownProcessID{ProcessID: t.processID(), Reason: reason}
	}
	return gen.MessageDownNode{Name: t.node}
}

// exit is the signal a process linked to t receives when t ends with reason.
func (t target) exit(reason error) any {
	switch {
	case t.isPID():
		return gen.MessageExitPID{PID: t.pid, Reason: reason}
	case t.isName():
		return gen.MessageExitProcessID{ProcessID: t.processID(), Reason: reason}
	}
	return gen.MessageExitNode{Name: t.node}
}

// parseTarget decodes the `to` of Send and Call or the target of Link and
// Monitor: a gen.PID, a gen.ProcessID (a missing node means this one), or a
// gen.Atom, which names a local registered process when atomIsNode is false
// and another node when it is true.
func (n *node) parseTarget(v any, atomIsNode bool) (target, error) {
	switch t := v.(type) {
	case gen.PID:
		if t.Node == "" {
			return target{}, fmt.Errorf("target %v has no node: %w", t, gen.ErrIncorrect)
		}
		return pidTarget(t), nil
	case gen.ProcessID:
		if t.Name == "" {
			return target{}, fmt.Errorf("target %v has no name: %w", t, gen.ErrIncorrect)
		}
		if t.Node == "" {
			t.Node = n.name
		}
		return target{name: t.Name, node: t.Node}, nil
	case gen.Atom:
		switch {
		case t == "":
			return target{}, fmt.Errorf("empty target name: %w", gen.ErrIncorrect)
		case !atomIsNode:
			return target{name: t, node: n.name}, nil
		case t == n.name:
			return target{}, fmt.Errorf("target node %q is this node: %w", t, gen.ErrIncorrect)
		}
		return target{node: t}, nil
	}
	return target{}, fmt.Errorf("target of type %T: %w", v, gen.ErrIncorrect)
}

// local reports whether t is a process (not a node) that lives on this node.
func (n *node) local(t target) bool { return t.node == n.name && !t.isNode() }

// isRemote reports whether t lives on another node.
func (n *node) isRemote(t target) bool { return t.node != n.name }

// find returns the local process t names, or nil.
func (n *node) find(t target) *process {
	switch {
	case t.node != n.name:
		return nil
	case t.isName():
		return n.lookupName(t.name)
	case t.isPID():
		return n.lookup(t.pid)
	}
	return nil
}
