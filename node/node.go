package node

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/regent-go/regent/gen"
)

// Node lifecycle states.
const (
	nodeRunning int32 = iota
	nodeStopping
	nodeStopped
)

// coreID is the process ID of the node itself: the From of messages sent with
// Node.Send and the caller of Node.Call. Processes start above it.
const (
	coreID       = 1
	firstPID     = 1000
	maxNameBytes = 255
)

// node implements gen.Node.
type node struct {
	name     gen.Atom
	creation int64
	started  time.Time
	log      *logger
	core     gen.PID
	refSalt  uint64

	nextPID atomic.Uint64
	nextRef atomic.Uint64
	state   atomic.Int32

	// held are the downs watchers let wait after a lost connection
	// (lossdefer.go).
	held heldDowns

	mu    sync.RWMutex // guards procs and names, serializes table's writers, and orders state changes against spawns
	procs map[uint64]*process
	names map[gen.Atom]*process
	table procTable // procs again, for lookups by ID without mu

	live sync.WaitGroup // one count per process not yet terminated

	rel    relations
	calls  callTable
	timers timerSet
	net    *network // also for a node without network (NetworkModeDisabled): it then reaches no one

	pool     pool          // the worker goroutines that run woken processes
	quit     chan struct{} // closed when Stop or StopForce begins
	done     chan struct{} // closed when the node has stopped
	stopOnce sync.Once
}

// Start starts a node named name (name@host, or name@host:port to listen on
// that port) and returns it running.
func Start(name gen.Atom, options gen.NodeOptions) (gen.Node, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	n := &node{
		name:     name,
		creation: time.Now().UnixNano(),
		started:  time.Now(),
		procs:    make(map[uint64]*process),
		names:    make(map[gen.Atom]*process),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	var salt [8]byte
	if _, err := rand.Read(salt[:]); err != nil {
		return nil, fmt.Errorf("start node %s: random salt: %w", name, err)
	}
	n.refSalt = binary.LittleEndian.Uint64(salt[:])
	n.core = gen.PID{Node: name, ID: coreID, Creation: n.creation}
	n.nextPID.Store(firstPID)
	n.log = newNodeLogger(name, options.Log)
	n.rel.node = n
	n.calls.init()
	nw, err := newNetwork(n, options.Network)
	if err != nil {
		return nil, fmt.Errorf("start node %s: %w", name, err)
	}
	n.net = nw
	return n, nil
}

func validName(name gen.Atom) error {
	s := string(name)
	at := strings.IndexByte(s, '@')
	if at <= 0 || at == len(s)-1 || len(s) > maxNameBytes {
		return fmt.Errorf("node name %q must be name@host: %w", s, gen.ErrIncorrect)
	}
	return nil
}

func (n *node) Name() gen.Atom        { return n.name }
func (n *node) Creation() int64       { return n.creation }
func (n *node) IsAlive() bool         { return n.state.Load() == nodeRunning }
func (n *node) Uptime() time.Duration { return time.Since(n.started) }
func (n *node) Log() gen.Log          { return n.log }
func (n *node) Network() gen.Network  { return n.net }

// makeRef returns a reference unique to this life of the node.
func (n *node) makeRef() gen.Ref {
	return gen.Ref{Node: n.name, Creation: n.creation, ID: [3]uint64{n.nextRef.Add(1), n.refSalt, 0}}
}

// lookup returns the local process with pid, or nil.
func (n *node) lookup(pid gen.PID) *process {
	if pid.Node != n.name || pid.Creation != n.creation {
		return nil
	}
	return n.table.load(pid.ID)
}

// lookupName returns the local process registered as name, or nil.
func (n *node) lookupName(name gen.Atom) *process {
	n.mu.RLock()
	p := n.names[name]
	n.mu.RUnlock()
	return p
}

func (n *node) Spawn(factory gen.ProcessFactory, options gen.ProcessOptions, args ...any) (gen.PID, error) {
	return n.spawn(nil, "", factory, options, args)
}

func (n *node) SpawnRegister(register gen.Atom, factory gen.ProcessFactory, options gen.ProcessOptions, args ...any) (gen.PID, error) {
	if register == "" {
		return gen.PID{}, fmt.Errorf("spawn register: empty name: %w", gen.ErrIncorrect)
	}
	return n.spawn(nil, register, factory, options, args)
}

func (n *node) Send(to any, message any) error {
	return n.send(n.core, to, message)
}

// TrySend is Send that never waits: where Send would wait for room in the
// connection's send queue (gen.NetworkOptions.SendQueueBytes), it fails at
// once with an error wrapping gen.ErrWouldBlock and sends nothing; a local
// send never waits anyway. Not in ergo's Node: Regent's heartbeat
// coalescer sends with it from the goroutines that beat for every leader of
// the node, which must not wait on one slow peer.
func (n *node) TrySend(to any, message any) error {
	t, err := n.parseTarget(to, false)
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	if n.isRemote(t) {
		return n.sendRemoteMode(t.node, &envelope{kind: kindMessage, from: n.core, target: t, payload: message}, sendTry)
	}
	return n.sendTo(n.core, t, message)
}

func (n *node) Call(to any, request any) (any, error) {
	return n.call(nil, n.core, to, kindRequest, request, gen.DefaultRequestTimeout)
}

func (n *node) Inspect(pid gen.PID, items ...string) (map[string]string, error) {
	return n.inspect(nil, n.core, pid, items)
}

func (n *node) Kill(pid gen.PID) error {
	p := n.lookup(pid)
	if p == nil {
		return fmt.Errorf("kill %s: %w", pid, gen.ErrProcessUnknown)
	}
	p.requestTerminate(gen.TerminateReasonKill)
	return nil
}

func (n *node) SendExit(pid gen.PID, reason error) error {
	return n.sendExit(n.core, pid, reason)
}

func (n *node) ProcessList() ([]gen.PID, error) {
	if n.state.Load() == nodeStopped {
		return nil, gen.ErrNodeTerminated
	}
	n.mu.RLock()
	out := make([]gen.PID, 0, len(n.procs))
	for _, p := range n.procs {
		out = append(out, p.pid)
	}
	n.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (n *node) ProcessInfo(pid gen.PID) (gen.ProcessInfo, error) {
	p := n.lookup(pid)
	if p == nil {
		return gen.ProcessInfo{}, fmt.Errorf("process info %s: %w", pid, gen.ErrProcessUnknown)
	}
	return p.info(), nil
}

// Stop terminates every process with TerminateReasonShutdown, waits for them,
// then closes the network (flushing the down messages they produced).
func (n *node) Stop() {
	n.stopOnce.Do(func() {
		n.beginStop()
		n.terminateAll(gen.TerminateReasonShutdown)
		n.live.Wait()
		n.net.close(true)
		n.finishStop()
	})
	<-n.done
}

// StopForce closes the network first and asks every process to terminate
// without waiting for callbacks that are still running.
func (n *node) StopForce() {
	n.stopOnce.Do(func() {
		n.beginStop()
		n.net.close(false)
		n.terminateAll(gen.TerminateReasonShutdown)
		n.finishStop()
	})
	<-n.done
}

func (n *node) beginStop() {
	n.mu.Lock()
	n.state.Store(nodeStopping)
	n.mu.Unlock()
	close(n.quit)
	n.timers.stopAll()
	n.log.Debug("node stopping")
}

func (n *node) finishStop() {
	n.state.Store(nodeStopped)
	n.pool.stop()
	close(n.done)
	n.log.Debug("node stopped")
}

func (n *node) terminateAll(reason error) {
	n.mu.RLock()
	procs := make([]*process, 0, len(n.procs))
	for _, p := range n.procs {
		procs = append(procs, p)
	}
	n.mu.RUnlock()
	for _, p := range procs {
		p.requestTerminate(reason)
	}
}

func (n *node) Wait() { <-n.done }

func (n *node) WaitWithTimeout(timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-n.done:
		return nil
	case <-t.C:
		return fmt.Errorf("wait for node %s: %w", n.name, gen.ErrTimeout)
	}
}

// errNodeStopping reports an operation refused because the node is stopping.
func (n *node) errNodeStopping(op string) error {
	return fmt.Errorf("%s on %s: %w", op, n.name, gen.ErrNodeTerminated)
}
