package node

import (
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
// Promptness: a queued process never waits for a behavior to return, so a
// behavior that blocks (in a Call, say) delays no other process. Whenever
// runq holds a process, a worker has been called (coming > 0): woken from
// idle or started, and not yet at runq, so running nothing. schedule calls
// one when none is coming; a worker that takes a process and leaves others
// queued calls another before it runs its own when none is coming.
//
// The idle workers form a stack, not a queue: a busy node wakes the same
// few workers, whose stacks stay grown and in cache, and the rest stay
// parked until retire ends them. A worker parks on its own channel with a
// plain receive, neither a select nor a timer per wake-up; one node-wide
// timer retires the workers left idle.
type pool struct {
	mu      sync.Mutex  // guards every field below
	runq    ring        // woken processes not yet taken by a worker, oldest first
	coming  int         // workers called (woken or started) that have not yet looked at runq
	idle    []*worker   // parked workers, the most recently parked last
	period  uint64      // retire rounds run so far
	retirer *time.Timer // calls retire every workerIdle while a worker is parked; nil until first needed
	armed   bool        // retirer is set to fire
	stopped bool        // the node has stopped: workers end instead of parking
}

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
	s.runq.push(p)
	if s.coming > 0 {
		s.mu.Unlock()
		return
	}
	s.call(n) // unlocks
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
		for s.runq.n > 0 {
			p := s.runq.pop().(*process)
			if s.runq.n > 0 && s.coming == 0 {
				s.call(n) // unlocks
			} else {
				s.mu.Unlock()
			}
			p.run()
			s.mu.Lock()
		}
		s.runq.trim()
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
	s.armed = false
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

func (p *process) run() {
	for {
		if reason := p.kill.Load(); reason != nil {
			p.terminate(*reason)
			return
		}
		if reason := p.runBehavior(); reason != nil {
			p.terminate(reason)
			return
		}
		p.state.Store(int32(gen.ProcessStateSleep))
		if !p.pending() || !p.state.CompareAndSwap(int32(gen.ProcessStateSleep), int32(gen.ProcessStateRunning)) {
			return
		}
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
