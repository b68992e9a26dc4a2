package modelcheck

import (
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// drain plays the leader shell (leader/shell.go) for member i until its
// core asks for nothing more: persist HardState (reporting a failing disk
// with StorageFailed, and a disk that works again with StorageRecovered),
// apply the timers, run the effects in order (answering Confirm with a
// grant, monitoring and demonitoring, ending the life on Fatal) and, when
// the state they rest on is durable, send the messages, reporting the sends
// the network refuses.
func (s *State) drain(i int) {
	m := s.own(i)
	for m.core.HasReady() {
		rd := m.core.Ready()
		durable := s.persist(m, rd.HardState)
		for _, op := range rd.Timers {
			if op.Timer.Kind < 0 || int(op.Timer.Kind) >= maxTimers {
				panic(fmt.Sprintf("modelcheck: timer kind %d is beyond maxTimers", op.Timer.Kind))
			}
			if op.Cancel {
				m.timers[op.Timer.Kind] = armed{}
				continue
			}
			m.timers[op.Timer.Kind] = armed{timer: op.Timer, at: m.now.Add(op.After), ok: true}
		}
		for _, e := range rd.Effects {
			switch e.Kind {
			case election.EffectConfirm:
				m.core.ConfirmResult(m.now, e.Term, true, nil)
			case election.EffectMonitor:
				s.monitor(i, e.PID)
			case election.EffectDemonitor:
				m.unmonitor(e.PID)
			case election.EffectFatal:
				// The shell ends the actor with the error: nothing more of
				// this Ready is done, and its monitors fire with that reason.
				s.stop(i, true, e.Err)
				s.members[i].fatal = e.Err.Error()
				return
			}
		}
		if !durable {
			continue // nothing may leave before the state it rests on is on disk
		}
		for _, out := range rd.Messages {
			s.send(i, out)
		}
	}
	s.note(i)
}

// persist keeps hs as member m's stored state and reports whether the
// Ready's messages may be sent. A failing disk keeps nothing, and the core
// is told, as leader/shell.go's persist does; so is a write that works
// again. Without Durable there is no state file: nothing fails.
func (s *State) persist(m *member, hs *election.HardState) bool {
	if hs == nil {
		return true
	}
	if m.diskFailing && s.cfg.Durable {
		m.core.StorageFailed(m.now, errDiskFailing)
		return false
	}
	m.stored = *hs
	if m.core.StorageFailing() {
		m.core.StorageRecovered(m.now)
	}
	return true
}

// errDiskFailing is what a failing disk answers a write with.
var errDiskFailing = fmt.Errorf("modelcheck: writing the election state: %w", gen.ErrNotAllowed)

// monitor starts member i monitoring pid. As the runtime's Monitor does, it
// fails at once for a process that is gone, and the shell passes that on as
// a down: gen.ErrNoConnection while its node is down, gen.ErrProcessUnknown
// when its node runs without it.
func (s *State) monitor(i int, pid gen.PID) {
	m := s.members[i] // drain made it the state's own
	at, ok := slices.BinarySearchFunc(m.monitors, pid, comparePID)
	if ok {
		return
	}
	j := s.index(pid.Node)
	switch {
	case j < 0:
		m.core.PeerDown(m.now, pid, fmt.Errorf("modelcheck: monitor %s: %w", pid, gen.ErrNoRoute))
	case !s.members[j].up && !s.members[j].killed:
		m.core.PeerDown(m.now, pid, gen.ErrNoConnection)
	case s.members[j].pid != pid || !s.members[j].up:
		m.core.PeerDown(m.now, pid, gen.ErrProcessUnknown)
	default:
		m.monitors = slices.Insert(slices.Clip(m.monitors), at, pid) // a new array: states share the old one
	}
}

// unmonitor forgets a monitor of pid, reporting whether there was one.
func (m *member) unmonitor(pid gen.PID) bool {
	at, ok := slices.BinarySearchFunc(m.monitors, pid, comparePID)
	if ok {
		m.monitors = slices.Concat(m.monitors[:at], m.monitors[at+1:]) // a new array: states share the old one
		m.hashed = false
	}
	return ok
}

// send puts one of member i's messages in flight, or reports it failed when
// its receiver is down. A message addressed to the PID of an ended life can
// only vanish, so it is never put in flight.
func (s *State) send(i int, out election.Outbound) {
	target := out.To.Node
	if out.To == (gen.PID{}) {
		target = out.ToName.Node
	}
	m := s.members[i] // drain made it the state's own
	j := s.index(target)
	switch {
	case j < 0:
		m.core.SendFailed(m.now, target, fmt.Errorf("modelcheck: send to %s: %w", target, gen.ErrNoRoute))
		return
	case !s.members[j].up && s.members[j].killed:
		m.core.SendFailed(m.now, target, fmt.Errorf("modelcheck: send to %s: %w", target, gen.ErrProcessUnknown))
		return
	case !s.members[j].up:
		m.core.SendFailed(m.now, target, fmt.Errorf("modelcheck: send to %s: %w", target, gen.ErrNoConnection))
		return
	case out.To != (gen.PID{}) && out.To != s.members[j].pid:
		return
	}
	e := &envelope{from: i, fromPID: m.pid, to: j, out: out}
	e.key = string(e.appendKey(make([]byte, 0, 128)))
	e.hash = maphash.String(hashSeed, e.key)
	s.net = append(slices.Clip(s.net), e)
}

// index is the member on node, -1 for none.
func (s *State) index(n gen.Atom) int {
	for i := range s.members {
		if node(i) == n {
			return i
		}
	}
	return -1
}

// fireDowns fires, with reason, every monitor of member j's current PID that
// a live member for which only reports true (every one, when only is nil)
// holds: the down is queued for delivery and the monitor is gone.
func (s *State) fireDowns(j int, reason error, only func(observer int) bool) {
	pid := s.members[j].pid
	for i, m := range s.members {
		if i == j || !m.up || (only != nil && !only(i)) || !slices.Contains(m.monitors, pid) {
			continue
		}
		if m = s.mut(i); m.unmonitor(pid) {
			s.downs = append(slices.Clip(s.downs), newDown(i, m.life, pid, reason))
		}
	}
}
