package node

import (
	"errors"
	"fmt"

	"github.com/regent-go/regent/gen"
)

// The remote half of the node: what its operations send to other nodes, and
// what it does with the frames they send. The network (network.go,
// acceptor.go, connection.go) only carries the frames.

// sendRemote encodes env once, outside any lock, and queues it on the
// connection to node as a process's own send (sendWait). Without a
// connection the frame is queued while the connection is dialled in the
// background; see network.queue. An unencodable env fails here.
func (n *node) sendRemote(to gen.Atom, env *envelope) error {
	return n.sendRemoteMode(to, env, sendWait)
}

// sendRemoteMode is sendRemote with the queueing of mode: sendWait, or
// sendTry. A frame queued while the connection is dialled never waits.
func (n *node) sendRemoteMode(to gen.Atom, env *envelope, mode sendMode) error {
	if err := n.net.refuseDisabled("send to", to); err != nil {
		return err
	}
	s := getScratch()
	defer putScratch(s)
	frame, err := n.net.appendFrame(s.b[:0], env)
	s.b = frame
	if err != nil {
		return fmt.Errorf("send to %s: %w", to, err)
	}
	for {
		if c := n.net.existing(to); c != nil {
			// A connection retired after a simultaneous dial refuses the
			// send; its replacement is already in the table.
			if err := c.enqueue(frame, 1, mode); !errors.Is(err, errRetired) {
				return err
			}
			continue
		}
		if queued, err := n.net.queue(to, frame, 1); queued || err != nil {
			return err
		}
		// A connection was registered meanwhile: send on it.
	}
}

// connectTo makes sure a connection to the node exists or is being dialled.
func (n *node) connectTo(to gen.Atom) error {
	_, err := n.net.queue(to, nil, 0)
	return err
}

// notifyRemote tells a watcher on another node that t ended. Without a
// connection there is nothing to do: that node reports the loss itself.
func (n *node) notifyRemote(t target, w watcher, reason error) {
	c := n.net.existing(w.pid.Node)
	if c == nil {
		return
	}
	env := &envelope{kind: kindDown, flags: uint8(w.kind), to: w.pid, target: t, payload: reason}
	if w.kind == relCall {
		env = &envelope{kind: kindResponse, flags: flagError, target: pidTarget(w.pid), ref: w.ref, payload: gen.ErrProcessTerminated}
	}
	if err := c.sendControl(env); err != nil {
		n.net.logs.Warning("notify", "telling %s that %v ended: %v", w.pid, t, err)
	}
}

// sendUnwatch tells a remote process target's node to drop a watcher, if a
// connection exists; without one the remote side has already dropped it.
func (n *node) sendUnwatch(t target, w watcher) {
	if t.isNode() {
		return
	}
	c := n.net.existing(t.node)
	if c == nil {
		return
	}
	if err := c.sendControl(&envelope{kind: kindUnwatch, flags: uint8(w.kind), from: w.pid, target: t}); err != nil {
		n.log.Debug("unwatch %v on %s: %v", t, t.node, err)
	}
}

// receive carries out one frame from the peer on c.
func (n *node) receive(c *connection, env *envelope) {
	if env.kind.namesSender() && env.from.Node != c.peer.Name {
		// The handshake authenticated the peer, not whom its frames claim to
		// come from: a node speaks only for its own processes.
		c.nw.drop(dropForeignSender)
		n.log.Debug("frame from %s claiming sender %s dropped", c.peer.Name, env.from)
		return
	}
	if env.kind != kindMessage {
		c.deliverStaged() // what a frame does comes after the messages before it
	}
	switch env.kind {
	case kindMessage:
		if !n.local(env.target) {
			c.nw.drop(dropUnexpectedFrame)
			return
		}
		if err := c.stage(env); err != nil {
			c.nw.drop(dropUnknownProcess)
			n.log.Debug("message from %s dropped: %v", env.from, err)
		}
	case kindRequest, kindInspect:
		if !n.local(env.target) {
			c.nw.drop(dropUnexpectedFrame)
			return
		}
		if _, err := n.enqueueRequest(env.target, env.from, env.ref, env.kind, env.payload); err != nil {
			n.reply(c, &envelope{kind: kindResponse, flags: flagError, target: pidTarget(env.from), ref: env.ref, payload: err})
		}
	case kindResponse:
		if !env.target.isPID() || !n.local(env.target) {
			c.nw.drop(dropUnexpectedFrame)
			return
		}
		if env.flags&flagError != 0 {
			n.calls.resolve(env.ref, nil, payloadError(env.payload))
			return
		}
		n.calls.resolve(env.ref, env.payload, nil)
	case kindExit:
		if err := n.exitLocal(env.from, env.target.pid, payloadError(env.payload)); err != nil {
			c.nw.drop(dropUnknownProcess)
		}
	case kindWatch:
		kind := relKind(env.flags)
		if !n.local(env.target) || (kind != relMonitor && kind != relLink) {
			c.nw.drop(dropUnexpectedFrame)
			return
		}
		w := watcher{pid: env.from, kind: kind}
		if !n.rel.addIfLive(env.target, w) {
			n.notifyRemote(env.target, w, gen.ErrProcessUnknown)
		}
	case kindUnwatch:
		n.rel.remove(env.target, watcher{pid: env.from, kind: relKind(env.flags)})
	case kindDown:
		w := watcher{pid: env.to, kind: relKind(env.flags)}
		if env.target.node != c.peer.Name {
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

// maxStaged bounds the messages a reader stages for one process.
const maxStaged = 64

// stage queues the message env carries for the local process it names,
// found through the reader's cache (see recipient), or fails when there is
// none. The messages of consecutive frames to one process are delivered
// together, under one lock of its mailbox (see deliverStaged); the reader
// delivers them before it acts on any other frame and before it waits for
// more bytes, so none waits on the stream and every frame's effects keep
// their order.
func (c *connection) stage(env *envelope) error {
	p := c.recipient(env.target)
	if p == nil {
		return fmt.Errorf("send to %v: %w", env.target, gen.ErrProcessUnknown)
	}
	if p != c.stagedTo {
		c.deliverStaged()
		c.stagedTo = p
	}
	c.staged = append(c.staged, gen.MailboxMessage{From: env.from, Type: gen.MailboxMessageTypeRegular, Message: env.payload})
	if len(c.staged) == maxStaged {
		c.deliverStaged()
	}
	return nil
}

// deliverStaged pushes the staged messages into their process's mailbox;
// those it refuses (it ended, or its mailbox is full) are dropped and
// counted, as a refused message from the network always is.
func (c *connection) deliverStaged() {
	p := c.stagedTo
	if p == nil {
		return
	}
	if taken := p.pushAll(&p.main, c.staged); taken < len(c.staged) {
		err := p.refusal()
		reason := dropUnknownProcess
		if errors.Is(err, gen.ErrProcessMailboxFull) {
			reason = dropMailboxFull
		} else {
			c.lastProc = nil // gone: let it be collected
		}
		for _, m := range c.staged[taken:] {
			c.nw.drop(reason)
			c.nw.node.log.Debug("message from %s dropped: %v", m.From, err)
		}
	}
	clear(c.staged) // the payloads are the process's now, or garbage
	c.staged, c.stagedTo = c.staged[:0], nil
}

// recipient returns the local process t names, or nil. A stream of frames
// names the same process again and again, so the reader remembers the last
// one found by PID: a PID is never reused (a process that ends keeps its
// PID, and refuses what is pushed to it), so the remembered process stays
// the right one for as long as it is remembered. A name may move to
// another process at any time, so a name is looked up every time.
func (c *connection) recipient(t target) *process {
	if !t.isPID() {
		return c.nw.node.find(t)
	}
	if c.lastProc != nil && c.lastProc.pid == t.pid {
		return c.lastProc
	}
	p := c.nw.node.find(t)
	if p != nil {
		c.lastProc = p
	}
	return p
}

// namesSender reports whether frames of kind act for the process in their
// from field, which must then live on the peer that sent them.
func (k frameKind) namesSender() bool {
	switch k {
	case kindMessage, kindRequest, kindInspect, kindExit, kindWatch, kindUnwatch:
		return true
	}
	return false
}

// refuseUnknown answers a request whose payload type this node does not
// know, so the caller learns gen.ErrUnregistered instead of timing out.
func (n *node) refuseUnknown(c *connection, env *envelope, err error) {
	if env == nil || (env.kind != kindRequest && env.kind != kindInspect) {
		return
	}
	n.reply(c, &envelope{kind: kindResponse, flags: flagError, target: pidTarget(env.from), ref: env.ref, payload: err})
}

// reply sends a runtime-made answer back on c.
func (n *node) reply(c *connection, env *envelope) {
	if err := c.sendControl(env); err != nil {
		n.log.Debug("reply to %s: %v", c.peer.Name, err)
	}
}

// payloadError returns the error a frame carries.
func payloadError(v any) error {
	if err, ok := v.(error); ok && err != nil {
		return err
	}
	return fmt.Errorf("frame carried %T instead of an error: %w", v, gen.ErrMalformed)
}
