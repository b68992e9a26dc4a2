package node

import (
	"runtime/debug"
	"time"

	"github.com/regent-go/regent/gen"
)

// Scheduling. A process is asleep (no goroutine) until something is pushed
// into its mailbox or it is asked to terminate; the pusher then moves it from
// Sleep to Running with a compare-and-swap, and only the winner starts the
// runner goroutine. The runner calls ProcessRun until the mailbox is empty,
// stores Sleep, and re-checks the mailbox: a push that raced with the store
// either saw Sleep (and started a new runner) or is seen by the re-check.
// Runners are goroutines of the node's worker pool (see schedule).

// wake starts the runner if the process is asleep.
func (p *process) wake() {
	if p.state.CompareAndSwap(int32(gen.ProcessStateSleep), int32(gen.ProcessStateRunning)) {
		p.node.schedule(p)
	}
}

// workerIdle is how long a runner goroutine that finished a process waits
// for another one before it ends. Reusing a warm goroutine saves starting
// one and growing its stack again; the bound keeps idle nodes goroutine-free.
const workerIdle = 100 * time.Millisecond

// schedule runs p on an idle worker goroutine, or on a new one.
func (n *node) schedule(p *process) {
	select {
	case n.ready <- p:
	default:
		go n.worker(p)
	}
}

// worker runs p, then the processes handed to it, until it has been idle
// for a whole workerIdle period or the node has stopped. Its idle timer is
// re-armed once per period, not after every process it runs: a busy worker
// pays for no timer operation per wake-up.
func (n *node) worker(p *process) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	worked := false // ran a process since idle was last armed
	for {
		if p != nil {
			p.run()
			p, worked = nil, true
		}
		select {
		case p = <-n.ready:
		case <-idle.C:
			if !worked {
				return
			}
			worked = false
			idle.Reset(workerIdle)
		case <-n.done:
			return
		}
	}
}

// pending reports whether the runner has work.
func (p *process) pending() bool {
	return p.urgent.Len() > 0 || p.system.Len() > 0 || p.main.Len() > 0 || p.kill.Load() != nil
}

// push queues a message and wakes the process. It returns false when the
// target queue is full or the process has terminated.
func (p *process) push(q *queue, m *gen.MailboxMessage) bool {
	if p.State() == gen.ProcessStateTerminated {
		return false
	}
	if m.From == p.pid {
		// Its own messages (its timers, above all) are not refused by its
		// bound, which guards it against others: a lost timer would never
		// be armed again. They are as many as it arms.
		q.PushPastLimit(m)
	} else if !q.Push(m) {
		return false
	}
	p.in.Add(1)
	p.wake()
	return true
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
