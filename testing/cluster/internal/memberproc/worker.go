package memberproc

import (
	"fmt"
	"os"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
)

// Worker makes a member run the user's side of leadership: a stream of work
// it does only while IsLeader says so, recorded for an outside checker.
type Worker struct {
	// Record is the file every act appends one line to, as
	//
	//	ACT <term> <fencing token> <unix ns before IsLeader> <unix ns after>
	//
	// written with one unbuffered write, so a SIGKILL loses none.
	Record string
	// Every is the period of the work messages the member sends itself.
	Every time.Duration
	// Block is how long the handler of the next work message blocks after
	// the process gets SIGUSR1: user code that runs long.
	Block time.Duration
	// ConfirmDelay is how long every HandleConfirmLeader takes before it
	// says yes.
	ConfirmDelay time.Duration
}

// work is one unit of the user's work; blockNext makes the next one block.
type (
	work      struct{}
	blockNext struct{}
)

type worker struct {
	leader.Actor
	opts    leader.Options
	spec    Worker
	out     *os.File
	blocked bool
}

func (w *worker) Init(args ...any) (leader.Options, error) { return w.opts, nil }

// HandleMessage acts on each work message while this member leads: the
// instant right after IsLeader returned true is when the user acts on it.
func (w *worker) HandleMessage(from gen.PID, message any) error {
	switch message.(type) {
	case blockNext:
		w.blocked = true
	case work:
		if w.blocked {
			w.blocked = false
			time.Sleep(w.spec.Block)
		}
		before := time.Now().UnixNano()
		if !w.IsLeader() {
			return nil
		}
		after := time.Now().UnixNano()
		line := fmt.Sprintf("ACT %d %d %d %d\n", w.Term(), w.FencingToken(), before, after)
		if _, err := w.out.WriteString(line); err != nil {
			return fmt.Errorf("memberproc: recording an act: %w", err)
		}
	}
	return nil
}

func (w *worker) HandleConfirmLeader() (bool, error) {
	time.Sleep(w.spec.ConfirmDelay)
	return true, nil
}

func (w *worker) Terminate(reason error) { w.out.Close() }

// feed sends the worker a work message every period until stop closes.
func feed(n gen.Node, pid gen.PID, every time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if n.Send(pid, work{}) != nil {
				return
			}
		}
	}
}
