package sim

import (
	"fmt"
	"strings"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/testing/history"
)

// Partition splits the members into groups of indexes, now; a member in no
// group is cut off alone. Errors wrap gen.ErrIncorrect.
func (s *Simulator) Partition(groups ...[]int) error {
	return s.apply(Fault{At: s.now, Kind: FaultPartition, Groups: groups})
}

// Isolate cuts member i (or TheLeader) off from everyone, now.
func (s *Simulator) Isolate(i int) error {
	return s.apply(Fault{At: s.now, Kind: FaultIsolate, Member: i})
}

// Heal reconnects every member, now.
func (s *Simulator) Heal() error { return s.apply(Fault{At: s.now, Kind: FaultHeal}) }

// Crash kills member i (or TheLeader) now; its peers see gen.ErrNoConnection.
// Errors wrap gen.ErrNotAllowed when it is already down.
func (s *Simulator) Crash(i int) error { return s.apply(Fault{At: s.now, Kind: FaultCrash, Member: i}) }

// Stop stops member i (or TheLeader) gracefully now; its peers see
// gen.TerminateReasonShutdown. Errors wrap gen.ErrNotAllowed when it is
// already down.
func (s *Simulator) Stop(i int) error { return s.apply(Fault{At: s.now, Kind: FaultStop, Member: i}) }

// Restart starts member i again now, with its term and vote when
// Config.Durable. Errors wrap gen.ErrNotAllowed when it is up.
func (s *Simulator) Restart(i int) error {
	return s.apply(Fault{At: s.now, Kind: FaultRestart, Member: i})
}

// apply carries out one fault and writes it to the schedule; a fault that
// cannot apply (a crash of a member already down) is written as skipped,
// with the reason, and returned as an error.
func (s *Simulator) apply(f Fault) error {
	if err := f.validate(len(s.members)); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	if f.Member == TheLeader {
		f.Member = s.leaderOrFirst()
	}
	what, err := s.applyResolved(f)
	if err != nil {
		what = fmt.Sprintf("skipped %s: %v", f.Kind, err)
	}
	f.At = s.now
	s.sched.Entries = append(s.sched.Entries, Entry{At: s.now, What: what, Fault: f, Applied: err == nil})
	s.mix(uint64(f.Kind), uint64(len(s.sched.Entries)))
	return err
}

func (s *Simulator) applyResolved(f Fault) (string, error) {
	i := f.Member
	switch f.Kind {
	case FaultPartition:
		side := make([]int, len(s.members))
		for k := range side {
			side[k] = -1 - k
		}
		for g, members := range f.Groups {
			for _, k := range members {
				side[k] = g + 1
			}
		}
		return s.partition(side), nil
	case FaultHeal:
		return s.partition(make([]int, len(s.members))), nil
	case FaultRestartAll:
		var started []string
		for _, m := range s.members {
			if !m.live {
				if err := s.start(m); err != nil {
					return "", err
				}
				started = append(started, m.name)
			}
		}
		if len(started) == 0 {
			return "restart: every member is up", nil
		}
		return "restart " + strings.Join(started, ","), nil
	}
	if i < 0 {
		return "", fmt.Errorf("no member is up: %w", gen.ErrNotAllowed)
	}
	m := s.members[i]
	if f.Kind == FaultIsolate {
		side := make([]int, len(s.members))
		side[i] = 1
		return s.partition(side), nil
	}
	if f.Kind == FaultRestart {
		if m.live {
			return "", fmt.Errorf("%s is up: %w", m.name, gen.ErrNotAllowed)
		}
		return "restart " + m.name, s.start(m)
	}
	if !m.live {
		return "", fmt.Errorf("%s is already down: %w", m.name, gen.ErrNotAllowed)
	}
	s.down(m, f.Kind == FaultStop)
	return fmt.Sprintf("%s %s (leader: %t)", f.Kind, m.name, m.core.IsLeader()), nil
}

// leaderOrFirst is the live leader at the highest term, else the first live
// member, else -1.
func (s *Simulator) leaderOrFirst() int {
	best := -1
	for _, i := range s.Leaders() {
		if best < 0 || s.members[i].core.Term() > s.members[best].core.Term() {
			best = i
		}
	}
	if best >= 0 {
		return best
	}
	for _, m := range s.members {
		if m.live {
			return m.index
		}
	}
	return -1
}

// partition moves every member to its side (equal sides can talk), records
// the change, and schedules the notice of every newly cut pair.
func (s *Simulator) partition(side []int) string {
	detect := s.cfg.Network.DetectCut
	changed := false
	for a := range s.members {
		for b := a + 1; b < len(s.members); b++ {
			was, is := s.group[a] != s.group[b], side[a] != side[b]
			if was == is {
				continue
			}
			changed = true
			s.cutGen[a][b]++
			s.cutGen[b][a] = s.cutGen[a][b]
			s.noted[a][b], s.noted[b][a] = false, false
			if is && detect >= 0 {
				s.push(&item{at: s.now + detect, kind: itemDetect, to: a, peer: b, cutGen: s.cutGen[a][b]})
			}
		}
	}
	copy(s.group, side)
	groups := s.groups()
	if !changed {
		return "no change to the network"
	}
	if len(groups) == 1 {
		s.hist.Append(history.Event{At: s.now, Kind: history.KindHeal})
		return "heal"
	}
	s.hist.Append(history.Event{At: s.now, Kind: history.KindPartition, Groups: groups})
	parts := make([]string, len(groups))
	for k, g := range groups {
		parts[k] = "{" + strings.Join(g, ",") + "}"
	}
	return "partition " + strings.Join(parts, " | ")
}

// groups lists the members of each side by name, sides in order of their
// first member.
func (s *Simulator) groups() [][]string {
	var out [][]string
	index := map[int]int{}
	for _, m := range s.members {
		g, ok := index[s.group[m.index]]
		if !ok {
			g = len(out)
			index[s.group[m.index]] = g
			out = append(out, nil)
		}
		out[g] = append(out[g], m.name)
	}
	return out
}

// down takes m down, by crash or graceful stop, and schedules what its
// monitoring peers will see.
func (s *Simulator) down(m *member, graceful bool) {
	n := s.cfg.Network
	m.live, m.stopped, m.downAt = false, graceful, s.now
	m.downNotice = n.DetectCrash
	kind, reason := history.KindCrash, error(gen.ErrNoConnection)
	if graceful {
		m.downNotice = 0
		kind, reason = history.KindStop, gen.TerminateReasonShutdown
	}
	s.hist.Append(history.Event{At: s.now, Kind: kind, Member: m.name, Life: m.life})
	for _, p := range s.members {
		if !p.live {
			continue
		}
		at, why := s.now+m.downNotice+n.Latency, reason
		if s.group[p.index] != s.group[m.index] {
			if n.DetectCut < 0 {
				continue
			}
			at, why = s.now+n.DetectCut, gen.ErrNoConnection
		}
		for _, pid := range p.monitors {
			if pid == m.pid {
				s.push(&item{at: at, kind: itemPeerDown, to: p.index, life: p.life, pid: pid, reason: why})
			}
		}
	}
}
