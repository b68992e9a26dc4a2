package node

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/regent-go/regent/gen"
)

// Scheduling. A process is asleep (no goroutine) until something is pushed
// into its mailbox or it is asked to terminate; the pusher then moves it from
// Sleep to Running with a compare-and-swap, and only the winner schedules it
// on a worker goroutine of the node's pool. The worker (its runner) calls
// ProcessRun until the mailbox is empty, stores Sleep, and re-checks the
// mailbox: a push that raced with the store either saw Sleep (and scheduled
// the process again) or is seen by the re-check. A sender never runs the
// receiver's behavior on its own goroutine.

// wake schedules the process if it is asleep. The plain load spares a push
// to a running process (the common case under load) the compare-and-swap's
// locked instruction; it is safe because atomics are sequentially
// consistent: a load that misses the runner's store of Sleep comes before
// it, so the runner's re-check after the store sees the push.
func (p *process) wake() {
	if p.state.Load() == int32(gen.ProcessStateSleep) &&
		p.state.CompareAndSwap(int32(gen.ProcessStateSleep), int32(gen.ProcessStateRunning)) {
		p.node.schedule(p)
	}
}

// workerIdle is how long a worker goroutine may stay parked before it
// ends: one that has been parked for a whole period when pool.retire runs
// (so between one and two periods) ends. Reusing a warm goroutine saves
// starting one and growing its stack again; the bound keeps idle nodes
// goroutine-free.
const workerIdle = 100 * time.Millisecond

// pool runs a node's woken processes on its worker goroutines. schedule
// queues a woken process in runq; a worker takes the oldest, and one that
// finishes a process takes the next without parking, so a burst of
// wake-ups costs a few goroutine hand-offs, not one each.
//
// Slots: at most bound workers run processes at once, bound being
// GOMAXPROCS when the node starts. A burst of thousands of wake-ups (every
// member watching the processes of a lost node) then waits in runq (the
// last woken in next, see take), instead of in the Go scheduler as as many
// runnable goroutines: the
// node's own goroutines (connection readers and writers, timers) wait
// behind at most bound processes, not behind the burst, so a heartbeat's
// path keeps its pace while the burst is worked off. With a goroutine per
// woken process, losing one node of five in `regent bench scale` (1,000
// clusters) left those goroutines unscheduled for over 100 ms and cost
// hundreds of clusters untouched by the loss their leaders.
//
// Promptness: a queued process never waits for long behind a behavior that
// blocks. A behavior waiting in a Call gives its slot back while it waits
// (block); whenever runq holds a process, a worker has been called
// (coming > 0) or every slot is taken, and then the stall watch runs: when
// no worker took a process from runq for stallAfter, a behavior blocks
// elsewhere (a channel, a sleep, a send waiting for room) or runs long, and
// the watch adds a slot and calls a worker. The slots added are given back
// once runq is empty.
//
// Urgent processes (ProcessOptions.Urgent: the leader package's heartbeat
// coalescer, whose delay costs every cluster's quorum evidence) wait in
// urgentq, which workers take first and whatever the slots taken.
//
// The idle workers form a stack, not a queue: a busy node wakes the same
// few workers, whose stacks stay grown and in cache, and the rest stay
// parked until retire ends them. A worker parks on its own channel with a
// plain receive, neither a select nor a timer per wake-up; one node-wide
// timer retires the workers left idle.
type pool struct {
	mu      sync.Mutex // guards every field below
	runq    ring       // woken processes not yet taken by a worker, oldest first
	urgentq ring       // woken urgent processes (ProcessOptions.Urgent), taken before runq and whatever the places taken
	// next is the process woken last, taken before runq's oldest unless
	// nextStreak processes were taken so in a row: a reply, woken by the
	// request it answers, does not wait behind a burst's backlog, and the
	// backlog still moves. The process it displaces joins runq's tail.
	next       *process
	nextStreak int
	coming     int         // workers called (woken or started) that have not yet looked at runq
	idle       []*worker   // parked workers, the most recently parked last
	period     uint64      // retire rounds run so far
	retirer    *time.Timer // calls retire every workerIdle while a worker is parked; nil until first needed
	armed      bool        // retirer is set to fire
	stopped    bool        // the node has stopped: workers end instead of parking
	// running counts the workers running a process and not waiting in a
	// Call; bound is how many may (base, GOMAXPROCS, plus the slots the
	// stall watch added); taken counts the processes taken from runq.
	running, bound, base int
	taken                uint64
	// watch fires stallAfter after it is armed (watching) while processes
	// wait for a slot; watchFrom is taken then. stalls counts the slots
	// it added.
	watch     *time.Timer
	watching  bool
	watchFrom uint64
	stalls    uint64
}

// stallAfter is how long processes may wait in runq, every slot taken,
// without any taken from it, before the stall watch adds a slot: far above
// what a behavior's callback takes (microseconds), far below a heartbeat
// interval. A variable for tests only.
var stallAfter = 10 * time.Millisecond

// worker is one worker goroutine's parking place.
type worker struct {
	// wake tells the parked worker to look at runq (true) or to end
	// (false). Capacity 1, and only whoever takes the worker off the idle
	// stack sends, once, so a send never blocks.
	wake   chan bool
	parked uint64 // pool.period when it last parked; guarded by pool.mu
}

// schedule queues p, woken, to run on a worker.
func (n *node) schedule(p *process) {
	s := &n.pool
	s.mu.Lock()
	if s.base == 0 {
		s.base = runtime.GOMAXPROCS(0)
		s.bound = s.base
	}
	if p.runsUrgent {
		s.urgentq.push(p)
		if s.coming > 0 {
			s.mu.Unlock()
			return
		}
		s.call(n) // unlocks
		return
	}
	if s.next != nil {
		s.runq.push(s.next)
	}
	s.next = p
	if s.coming > 0 || s.running >= s.bound {
		s.watchLocked(n)
		s.mu.Unlock()
		return
	}
	s.call(n) // unlocks
}

// nextLimit bounds the processes taken in a row as next, before runq's
// oldest.
const nextLimit = 8

// waiting counts the woken processes waiting for a place. s.mu is held.
func (s *pool) waiting() int {
	if s.next != nil {
		return int(s.runq.n) + 1
	}
	return int(s.runq.n)
}

// take takes the process to run next: next, unless nextLimit were taken so
// in a row ahead of runq's oldest, else that oldest. s.mu is held.
func (s *pool) take() *process {
	s.taken++
	switch {
	case s.next != nil && s.runq.n == 0:
		s.nextStreak = 0 // it passes nobody
	case s.next != nil && s.nextStreak < nextLimit:
		s.nextStreak++
	default:
		s.nextStreak = 0
		return s.runq.pop().(*process)
	}
	p := s.next
	s.next = nil
	return p
}

// watchLocked arms the stall watch when processes wait for a slot and it
// is not armed yet. s.mu is held.
func (s *pool) watchLocked(n *node) {
	if s.watching || s.stopped || s.waiting() == 0 || s.running < s.bound {
		return
	}
	s.watching, s.watchFrom = true, s.taken
	if s.watch == nil {
		s.watch = time.AfterFunc(stallAfter, func() { s.stalled(n) })
		return
	}
	s.watch.Reset(stallAfter)
}

// stalled is the stall watch firing: when no process was taken from runq
// since it was armed, every slot is held by a behavior that blocks or runs
// long, and one more slot lets the oldest queued process run.
func (s *pool) stalled(n *node) {
	s.mu.Lock()
	s.watching = false
	if s.stopped || s.waiting() == 0 {
		s.mu.Unlock()
		return
	}
	if s.taken != s.watchFrom || s.running < s.bound {
		s.watchLocked(n) // progress: watch on while processes wait
		s.mu.Unlock()
		return
	}
	s.bound = s.running + 1
	s.stalls++
	places := s.bound
	s.watchLocked(n)
	if s.coming == 0 {
		s.call(n) // unlocks
	} else {
		s.mu.Unlock()
	}
	n.log.Debug("no woken process started for %v, every place held by a behavior that blocks or runs long: %d places now", stallAfter, places)
}

// block gives the slot of the worker running p back while p's behavior
// waits in a Call, calling a worker for runq if need be; unblock takes it
// again when the wait ends, even over bound (the worker only finishes its
// process before it looks at runq again). Only p's worker calls them.
func (s *pool) block(n *node) {
	s.mu.Lock()
	s.running--
	if s.waiting() > 0 && s.coming == 0 && s.running < s.bound {
		s.call(n) // unlocks
		return
	}
	s.mu.Unlock()
}

func (s *pool) unblock(n *node) {
	s.mu.Lock()
	s.running++
	s.watchLocked(n) // the worker called for runq meanwhile may find no place
	s.mu.Unlock()
}

// call wakes the worker that parked last, or starts one when none is
// parked, to come to runq. s.mu is held; call releases it.
func (s *pool) call(n *node) {
	s.coming++
	if top := len(s.idle) - 1; top >= 0 {
		w := s.idle[top]
		s.idle[top] = nil
		s.idle = s.idle[:top]
		s.mu.Unlock()
		w.wake <- true
		return
	}
	s.mu.Unlock()
	go n.work()
}

// work is a worker goroutine, called by pool.call: it runs the queued
// processes, parks when there are none, and ends when it is retired, or
// when none is queued once the node has stopped.
func (n *node) work() {
	s := &n.pool
	var w *worker // made when it first parks
	for {
		s.mu.Lock()
		s.coming--
		for s.urgentq.n > 0 || (s.waiting() > 0 && s.running < s.bound) {
			var p *process
			if s.urgentq.n > 0 {
				p = s.urgentq.pop().(*process)
			} else {
				p = s.take()
			}
			s.running++
			if s.coming == 0 && (s.urgentq.n > 0 || (s.waiting() > 0 && s.running < s.bound)) {
				s.call(n) // unlocks
			} else {
				s.watchLocked(n)
				s.mu.Unlock()
			}
			p.run()
			s.mu.Lock()
			s.running--
		}
		if s.waiting() == 0 {
			s.bound = s.base // the slots the stall watch added are given back
		} else {
			s.watchLocked(n) // every place taken: it parks, and the watch sees to runq
		}
		s.runq.trim()
		s.urgentq.trim()
		if s.stopped {
			s.mu.Unlock()
			return
		}
		if w == nil {
			w = &worker{wake: make(chan bool, 1)}
		}
		w.parked = s.period
		s.idle = append(s.idle, w)
		if !s.armed {
			s.arm()
		}
		s.mu.Unlock()
		if !<-w.wake {
			return
		}
	}
}

// arm sets the retirer to fire in workerIdle; s.mu is held.
func (s *pool) arm() {
	s.armed = true
	if s.retirer == nil {
		s.retirer = time.AfterFunc(workerIdle, s.retire)
		return
	}
	s.retirer.Reset(workerIdle)
}

// retire ends the workers parked since before the previous round, at least
// a whole workerIdle ago, and re-arms itself while workers stay parked. The
// stack holds workers in the order they parked, so those are its bottom.
func (s *pool) retire() {
	s.mu.Lock()
	s.armed = false
	s.period++
	old := 0
	for old < len(s.idle) && s.idle[old].parked+2 <= s.period {
		s.idle[old].wake <- false // never blocks: see worker.wake
		old++
	}
	kept := copy(s.idle, s.idle[old:])
	clear(s.idle[kept:])
	s.idle = s.idle[:kept]
	if kept > 0 && !s.stopped {
		s.arm()
	}
	s.mu.Unlock()
}

// stop ends the parked workers, and makes the others end once runq is
// empty; the node calls it once it has stopped. A process woken later
// (after StopForce) still runs: a worker called for it, none being parked
// any more, is a new goroutine that ends once runq is empty.
func (s *pool) stop() {
	s.mu.Lock()
	s.stopped = true
	for _, w := range s.idle {
		w.wake <- false // never blocks: see worker.wake
	}
	s.idle = nil
	if s.retirer != nil {
		s.retirer.Stop()
	}
	if s.watch != nil {
		s.watch.Stop()
	}
	s.armed, s.watching = false, false
	s.mu.Unlock()
}

// pending reports whether the runner has work.
func (p *process) pending() bool {
	return p.urgent.Len() > 0 || p.system.Len() > 0 || p.main.Len() > 0 || p.kill.Load() != nil
}

// push queues a copy of m and wakes the process. It returns false when the
// target queue is full or the process has terminated.
func (p *process) push(q *queue, m *gen.MailboxMessage) bool {
	if p.State() == gen.ProcessStateTerminated {
		return false
	}
	// Its own messages (its timers, above all) are not refused by its
	// bound, which guards it against others: a lost timer would never be
	// armed again. They are as many as it arms.
	if !q.pushMessage(m, m.From != p.pid) {
		return false
	}
	p.wake()
	return true
}

// pushAll queues copies of the first of ms that fit, none from p itself,
// and wakes the process; it returns how many it queued, none when p has
// terminated.
func (p *process) pushAll(q *queue, ms []gen.MailboxMessage) int {
	if p.State() == gen.ProcessStateTerminated {
		return 0
	}
	n := q.pushMessages(ms)
	if n > 0 {
		p.wake()
	}
	return n
}

// requestTerminate asks the process to end with reason before its next
// ProcessRun; the first request wins.
func (p *process) requestTerminate(reason error) {
	p.kill.CompareAndSwap(nil, &reason)
	if abort := p.abort.Swap(nil); abort != nil {
		close(*abort) // a Call in progress returns now instead of at its timeout
	}
	p.wake()
}

// run runs the process on a pool worker until its mailbox is empty.
func (p *process) run() {
	p.onWorker = true
	for {
		if reason := p.kill.Load(); reason != nil {
			p.terminate(*reason)
			return
		}
		if reason := p.runBehavior(); reason != nil {
			p.terminate(reason)
			return
		}
		// Cleared before the process may be woken onto another worker.
		p.onWorker = false
		p.state.Store(int32(gen.ProcessStateSleep))
		if !p.pending() || !p.state.CompareAndSwap(int32(gen.ProcessStateSleep), int32(gen.ProcessStateRunning)) {
			return
		}
		p.onWorker = true
	}
}

// runBehavior calls ProcessRun, turning a panic into TerminateReasonPanic.
func (p *process) runBehavior() (reason error) {
	defer func() {
		if r := recover(); r != nil {
			p.logPanic("callback", r)
			reason = gen.TerminateReasonPanic
		}
	}()
	return p.behavior.ProcessRun()
}

func (p *process) logPanic(where string, r any) {
	p.Log().Error("panic in %s: %v\n%s", where, r, debug.Stack())
}

// terminate ends the process on its runner goroutine: it leaves the node's
// tables, runs ProcessTerminate, then tells its watchers.
func (p *process) terminate(reason error) {
	p.state.Store(int32(gen.ProcessStateTerminated))
	n := p.node
	n.unregister(p)
	func() {
		defer func() {
			if r := recover(); r != nil {
				p.logPanic("terminate", r)
			}
		}()
		p.behavior.ProcessTerminate(reason)
	}()
	if !gen.IsTerminateReason(reason) {
		p.Log().Error("terminated abnormally: %v", reason)
	} else {
		p.Log().Debug("terminated: %v", reason)
	}
	n.rel.targetGone(p, reason)
	p.urgent.reset()
	p.system.reset()
	p.main.reset()
	n.live.Done()
}
