package node

import (
	"errors"
	"sync"
	"time"

	"github.com/regent-go/regent/gen"
)

var errTimersStopped = errors.New("timers stopped")

// timerSet tracks armed SendAfter timers so that Stop can disarm them. An
// armed timer holds no goroutine; its function runs on one when it fires.
type timerSet struct {
	mu     sync.Mutex // guards armed and closed
	armed  map[*time.Timer]struct{}
	closed bool
}

// arm runs fn after d unless cancelled; the CancelFunc reports whether it
// stopped fn from running.
func (s *timerSet) arm(d time.Duration, fn func()) (gen.CancelFunc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errTimersStopped
	}
	if s.armed == nil {
		s.armed = make(map[*time.Timer]struct{})
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		s.mu.Lock()
		_, live := s.armed[t]
		delete(s.armed, t)
		s.mu.Unlock()
		if live {
			fn()
		}
	})
	s.armed[t] = struct{}{}
	return func() bool {
		s.mu.Lock()
		_, live := s.armed[t]
		delete(s.armed, t)
		s.mu.Unlock()
		if live {
			t.Stop() // if it already fired, its function finds itself disarmed
		}
		return live
	}, nil
}

// stopAll disarms every timer and refuses new ones.
func (s *timerSet) stopAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for t := range s.armed {
		t.Stop()
	}
	s.armed = nil
}
