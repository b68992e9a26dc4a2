package leader

import (
	"sync"
	"time"
)

// timerLoopIdle is how long a timerLoop's goroutine stays parked with
// nothing due before it ends; a node whose leaders beat every few tens of
// milliseconds keeps it.
const timerLoopIdle = 100 * time.Millisecond

// timerLoop runs fn on one long-lived goroutine each time its timer fires.
// time.AfterFunc starts a goroutine per firing, whose stack then grows
// through the whole send path (encoder, connection) every time: on an idle
// node that beats every tick, a tenth of the CPU went to growing stacks.
// The goroutine and its grown stack stay while firings keep coming; it ends
// once nothing was due for timerLoopIdle, or at once when closed.
type timerLoop struct {
	fn func()

	// mu guards the fields below. It may be taken with the owner's lock
	// held (reset, stop, close); fn runs without it.
	mu      sync.Mutex
	rt      *time.Timer // the goroutine waits on it; nil until first reset
	due     bool        // fn runs at dueAt; a firing with nothing due ends the goroutine
	dueAt   time.Time   // when fn runs: an idle firing that races a reset waits for it
	running bool        // the goroutine runs
	closed  bool        // nothing runs fn again
}

// reset runs fn once, after d, unless reset again first; it starts the
// goroutine when none runs.
func (l *timerLoop) reset(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.due, l.dueAt = true, time.Now().Add(d)
	if l.rt == nil {
		l.rt = time.NewTimer(d)
	} else {
		l.rt.Reset(d)
	}
	if !l.running {
		l.running = true
		go l.run()
	}
}

// stop cancels the pending run of fn; the goroutine ends after
// timerLoopIdle unless reset meanwhile.
func (l *timerLoop) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.due {
		return
	}
	l.due = false
	l.rt.Reset(timerLoopIdle)
}

// close ends the goroutine at once, for good.
func (l *timerLoop) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed, l.due = true, false
	if l.running {
		l.rt.Reset(0)
	}
}

func (l *timerLoop) run() {
	for {
		<-l.rt.C
		l.mu.Lock()
		if !l.due {
			l.running = false
			l.mu.Unlock()
			return
		}
		if wait := time.Until(l.dueAt); wait > 0 {
			l.rt.Reset(wait) // the idle firing came as a reset made it due later
			l.mu.Unlock()
			continue
		}
		l.due = false
		l.mu.Unlock()
		l.fn()
		l.mu.Lock()
		if !l.due && !l.closed {
			l.rt.Reset(timerLoopIdle)
		}
		l.mu.Unlock()
	}
}
