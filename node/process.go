package node

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/regent-go/regent/gen"
)

// process implements gen.Process. Its behavior's callbacks run on one
// goroutine at a time (see runner.go); the fields other goroutines touch are
// atomics or the queues.
type process struct {
	node *node
	pid  gen.PID
	name gen.Atom
	// parentID is the ID of the process that spawned it, 0 for the node: a
	// parent is a process of this node life, whose PID differs from this
	// one's in ID alone (see Parent).
	parentID uint64
	behavior gen.ProcessBehavior
	born     int64 // UnixNano at spawn
	logLevel gen.LogLevel

	state atomic.Int32                  // a gen.ProcessState
	trap  atomic.Bool                   // exits arrive as messages
	kill  atomic.Pointer[error]         // termination asked from outside (Kill, Stop)
	abort atomic.Pointer[chan struct{}] // set while the process waits in a Call; closed by requestTerminate

	// The queues, main first. Every push reads the fields above (state
	// above all) and writes main's producer fields; the runner writes
	// main's runner fields and reads the other two queues at every
	// message. In this order neither side writes, message by message, a
	// cache line the other reads (see queue): the fields above are
	// written rarely, and after main come the queues only the runner reads
	// at every message.
	// urgent and system are made on their first push (see spareQueue):
	// most processes never receive an exit signal, a down message or an
	// inspection, and two queues of their own would be half a process.
	main   queue
	urgent spareQueue
	system spareQueue

	out atomic.Uint64          // messages sent (those received are the queues' pushed counts)
	log atomic.Pointer[logger] // made on first use; idle processes skip it
}

func (n *node) spawn(parent *process, register gen.Atom, factory gen.ProcessFactory, options gen.ProcessOptions, args []any) (gen.PID, error) {
	if factory == nil {
		return gen.PID{}, fmt.Errorf("spawn: nil factory: %w", gen.ErrIncorrect)
	}
	if options.MailboxSize < 0 {
		return gen.PID{}, fmt.Errorf("spawn: negative mailbox size: %w", gen.ErrIncorrect)
	}
	behavior := factory()
	if behavior == nil {
		return gen.PID{}, fmt.Errorf("spawn: factory returned nil: %w", gen.ErrIncorrect)
	}
	p := &process{
		node:     n,
		pid:      gen.PID{Node: n.name, ID: n.nextPID.Add(1), Creation: n.creation},
		name:     register,
		behavior: behavior,
		born:     time.Now().UnixNano(),
		logLevel: options.LogLevel,
	}
	p.main.limit = uint64(options.MailboxSize)
	if parent != nil {
		p.parentID = parent.pid.ID
	}
	p.state.Store(int32(gen.ProcessStateInit))

	n.mu.Lock()
	if n.state.Load() != nodeRunning {
		n.mu.Unlock()
		return gen.PID{}, n.errNodeStopping("spawn")
	}
	if register != "" {
		if _, taken := n.names[register]; taken {
			n.mu.Unlock()
			return gen.PID{}, fmt.Errorf("spawn register %q: %w", register, gen.ErrTaken)
		}
		n.names[register] = p
	}
	n.procs[p.pid.ID] = p
	n.table.store(p)
	n.live.Add(1)
	n.mu.Unlock()

	if parent != nil && options.LinkParent {
		n.rel.add(pidTarget(parent.pid), watcher{pid: p.pid, kind: relLink})
	}
	if err := p.initBehavior(args); err != nil {
		p.state.Store(int32(gen.ProcessStateTerminated))
		n.unregister(p)
		n.rel.forget(p)
		n.live.Done()
		return gen.PID{}, fmt.Errorf("spawn %s: init: %w", p.pid, err)
	}
	if parent != nil && options.LinkChild {
		n.rel.add(pidTarget(p.pid), watcher{pid: parent.pid, kind: relLink})
	}
	p.state.Store(int32(gen.ProcessStateSleep))
	if p.pending() {
		p.wake()
	}
	return p.pid, nil
}

// initBehavior runs ProcessInit, turning a panic into an error.
func (p *process) initBehavior(args []any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			p.logPanic("init", r)
			err = gen.TerminateReasonPanic
		}
	}()
	return p.behavior.ProcessInit(p, args...)
}

// unregister removes p from the node's tables.
func (n *node) unregister(p *process) {
	n.mu.Lock()
	delete(n.procs, p.pid.ID)
	n.table.remove(p, n.nextPID.Load())
	if p.name != "" && n.names[p.name] == p {
		delete(n.names, p.name)
	}
	n.mu.Unlock()
}

func (p *process) Node() gen.Node { return p.node }
func (p *process) Name() gen.Atom { return p.name }
func (p *process) PID() gen.PID   { return p.pid }
func (p *process) Parent() gen.PID {
	if p.parentID == 0 {
		return gen.PID{}
	}
	return gen.PID{Node: p.pid.Node, ID: p.parentID, Creation: p.pid.Creation}
}
func (p *process) Behavior() gen.ProcessBehavior { return p.behavior }
func (p *process) TrapExit() bool                { return p.trap.Load() }
func (p *process) State() gen.ProcessState       { return gen.ProcessState(p.state.Load()) }
func (p *process) SetTrapExit(trap bool) error   { p.trap.Store(trap); return nil }

func (p *process) Mailbox() gen.ProcessMailbox {
	return gen.ProcessMailbox{Main: &p.main, System: &p.system, Urgent: &p.urgent, Log: closedQueue{}}
}

func (p *process) Log() gen.Log {
	if l := p.log.Load(); l != nil {
		return l
	}
	l := p.node.log.child(p.logLevel, p.logAttrs)
	if !p.log.CompareAndSwap(nil, l) {
		return p.log.Load()
	}
	return l
}

// LogLevel is Log().Level() without making p's logger when it has none:
// a caller that checks the level before a line then leaves an idle
// process without one. It is not part of gen.Process; a caller finds it
// with a type assertion.
func (p *process) LogLevel() gen.LogLevel {
	if l := p.log.Load(); l != nil {
		return l.Level()
	}
	return inherit(p.logLevel, p.node.log)
}

// logAttrs are the attributes of p's log lines.
func (p *process) logAttrs() []any {
	attrs := []any{"pid", p.pid.String()}
	if p.name != "" {
		attrs = append(attrs, "name", string(p.name))
	}
	return attrs
}

func (p *process) Spawn(factory gen.ProcessFactory, options gen.ProcessOptions, args ...any) (gen.PID, error) {
	return p.node.spawn(p, "", factory, options, args)
}

func (p *process) SpawnRegister(register gen.Atom, factory gen.ProcessFactory, options gen.ProcessOptions, args ...any) (gen.PID, error) {
	if register == "" {
		return gen.PID{}, fmt.Errorf("spawn register: empty name: %w", gen.ErrIncorrect)
	}
	return p.node.spawn(p, register, factory, options, args)
}

func (p *process) Send(to any, message any) error {
	return p.sent(p.node.send(p.pid, to, message))
}

// sent counts a message sent when err, the send's outcome, is nil, and
// returns err.
func (p *process) sent(err error) error {
	if err == nil {
		p.out.Add(1)
	}
	return err
}

// SendPID is Send to a process by its PID, which the caller passes as
// such, not boxed in an any: a send of the election's messages to its
// peers, many a second, then allocates nothing for the address. It is not
// part of gen.Process; a caller finds it with a type assertion.
func (p *process) SendPID(to gen.PID, message any) error {
	if to.Node == "" {
		return p.Send(to, message)
	}
	return p.sent(p.node.sendPID(p.pid, to, message))
}

// SendProcessID is Send to a process by its registered name, which the
// caller passes as such, not boxed in an any (see SendPID).
func (p *process) SendProcessID(to gen.ProcessID, message any) error {
	if to.Name == "" {
		return p.Send(to, message)
	}
	if to.Node == "" {
		to.Node = p.node.name
	}
	return p.sent(p.node.sendTo(p.pid, target{name: to.Name, node: to.Node}, message))
}

func (p *process) SendAfter(to any, message any, after time.Duration) (gen.CancelFunc, error) {
	return p.node.sendAfter(p.pid, to, message, after)
}

func (p *process) SendExit(to gen.PID, reason error) error {
	return p.node.sendExit(p.pid, to, reason)
}

func (p *process) SendResponse(to gen.PID, ref gen.Ref, message any) error {
	return p.node.respond(p.pid, to, ref, message, nil)
}

func (p *process) SendResponseError(to gen.PID, ref gen.Ref, err error) error {
	if err == nil {
		return fmt.Errorf("send response error: nil error: %w", gen.ErrIncorrect)
	}
	return p.node.respond(p.pid, to, ref, nil, err)
}

func (p *process) Call(to any, message any) (any, error) {
	return p.node.call(p, p.pid, to, kindRequest, message, gen.DefaultRequestTimeout)
}

func (p *process) CallWithTimeout(to any, message any, timeout int) (any, error) {
	if timeout < 0 {
		return nil, fmt.Errorf("call: negative timeout %d: %w", timeout, gen.ErrIncorrect)
	}
	if timeout == 0 {
		timeout = gen.DefaultRequestTimeout
	}
	return p.node.call(p, p.pid, to, kindRequest, message, timeout)
}

func (p *process) Inspect(target gen.PID, item ...string) (map[string]string, error) {
	return p.node.inspect(p, p.pid, target, item)
}

func (p *process) Link(to any) error    { return p.node.watch(p, to, relLink) }
func (p *process) Unlink(to any) error  { return p.node.unwatch(p, to, relLink) }
func (p *process) Monitor(to any) error { return p.node.watch(p, to, relMonitor) }

// MonitorPID is Monitor of a process by its PID, which the caller passes
// as such, not boxed in an any (see SendPID).
func (p *process) MonitorPID(to gen.PID) error {
	if to.Node == "" {
		return p.Monitor(to)
	}
	return p.node.watchTarget(p, pidTarget(to), relMonitor)
}
func (p *process) Demonitor(to any) error { return p.node.unwatch(p, to, relMonitor) }

// info is the snapshot ProcessInfo returns.
func (p *process) info() gen.ProcessInfo {
	return gen.ProcessInfo{
		PID:         p.pid,
		Name:        p.name,
		Parent:      p.Parent(),
		Behavior:    fmt.Sprintf("%T", p.behavior),
		State:       p.State(),
		MailboxLen:  p.main.Len() + p.system.Len() + p.urgent.Len(),
		MessagesIn:  p.urgent.pushedCount() + p.system.pushedCount() + p.main.pushed.Load(),
		MessagesOut: p.out.Load(),
		TrapExit:    p.trap.Load(),
		Uptime:      time.Since(time.Unix(0, p.born)),
	}
}

// closedQueue is the reserved Log queue: it accepts nothing.
type closedQueue struct{}

func (closedQueue) Push(any) bool    { return false }
func (closedQueue) Pop() (any, bool) { return nil, false }
func (closedQueue) Len() int64       { return 0 }
