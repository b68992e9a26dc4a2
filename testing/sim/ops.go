package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/testing/history"
)

// Partition splits the members into groups of indexes, now; a member in no
// group is cut off alone. Errors wrap gen.ErrIncorrect.
func (s *Simulator) Partition(groups ...[]int) error {
	return s.apply(Fault{Kind: FaultPartition, Groups: groups})
}

// Isolate cuts member i (or TheLeader) off from everyone, now.
func (s *Simulator) Isolate(i int) error {
	return s.apply(Fault{Kind: FaultIsolate, Member: i})
}

// Bridge cuts every member of a from every member of b, now; the members in
// neither reach both sides.
func (s *Simulator) Bridge(a, b []int) error {
	return s.apply(Fault{Kind: FaultBridge, Groups: [][]int{a, b}})
}

// Cut cuts exactly the given pairs of members from each other, now.
func (s *Simulator) Cut(pairs ...[2]int) error {
	return s.apply(Fault{Kind: FaultCut, Pairs: pairs})
}

// Heal reconnects every member, now.
func (s *Simulator) Heal() error { return s.apply(Fault{Kind: FaultHeal}) }

// Crash kills member i (or TheLeader) now; its peers see gen.ErrNoConnection.
// Errors wrap gen.ErrNotAllowed when it is already down.
func (s *Simulator) Crash(i int) error { return s.apply(Fault{Kind: FaultCrash, Member: i}) }

// Stop stops member i (or TheLeader) gracefully now; its peers see
// gen.TerminateReasonShutdown. Errors wrap gen.ErrNotAllowed when it is
// already down.
func (s *Simulator) Stop(i int) error { return s.apply(Fault{Kind: FaultStop, Member: i}) }

// Restart starts member i again now, with its term, vote and view when
// Config.Durable. Errors wrap gen.ErrNotAllowed when it is up.
func (s *Simulator) Restart(i int) error {
	return s.apply(Fault{Kind: FaultRestart, Member: i})
}

// Rogue starts a second actor of the cluster on member i's node now (see
// FaultRogue). Errors wrap gen.ErrNotAllowed when one runs there already or
// a live member's view does not name member i.
func (s *Simulator) Rogue(i int) error { return s.apply(Fault{Kind: FaultRogue, Member: i}) }

// EndRogues stops every second actor gracefully now.
func (s *Simulator) EndRogues() error { return s.apply(Fault{Kind: FaultEndRogues}) }

// Join calls Core.Join on member i (or TheLeader), declaring member peer.
// Errors wrap gen.ErrNotAllowed when member i is down, and whatever Join
// returns.
func (s *Simulator) Join(i, peer int) error {
	return s.apply(Fault{Kind: FaultJoin, Member: i, Peer: peer})
}

// Leave calls Core.Leave on member i (or TheLeader), withdrawing member
// peer. Errors as Join.
func (s *Simulator) Leave(i, peer int) error {
	return s.apply(Fault{Kind: FaultLeave, Member: i, Peer: peer})
}

// apply carries out one fault now and writes it to the schedule.
func (s *Simulator) apply(f Fault) error {
	f.At = s.now
	return s.applyNoting(f, "")
}

// applyNoting carries out one fault and writes it to the schedule with
// note; a fault that cannot apply (a crash of a member already down) is
// written as skipped, with the reason, and returned as an error.
func (s *Simulator) applyNoting(f Fault, note string) error {
	if err := f.validate(len(s.members)); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	switch f.Member {
	case TheLeader:
		f.Member = s.leaderOrFirst()
	case TheSubject:
		f.Member = s.subject
		if f.Member < 0 || !s.members[f.Member].live {
			f.Member = s.leaderOrFirst()
		}
	}
	what, err := s.applyResolved(f)
	if err != nil {
		what = fmt.Sprintf("skipped %s: %v", f.Kind, err)
	}
	if note != "" {
		what += " (" + note + ")"
	}
	f.At, f.AwaitChange = s.now, 0
	s.sched.Entries = append(s.sched.Entries, Entry{At: s.now, What: what, Fault: f, Applied: err == nil})
	s.mix(uint64(f.Kind), uint64(len(s.sched.Entries)))
	return err
}

func (s *Simulator) applyResolved(f Fault) (string, error) {
	n := len(s.members)
	switch f.Kind {
	case FaultPartition:
		side := make([]int, n)
		for k := range side {
			side[k] = -1 - k
		}
		for g, members := range f.Groups {
			for _, k := range members {
				side[k] = g + 1
			}
		}
		return s.network(func(a, b int) bool { return side[a] != side[b] }, nil), nil
	case FaultBridge:
		return s.network(func(a, b int) bool {
			return slices.Contains(f.Groups[0], a) && slices.Contains(f.Groups[1], b) ||
				slices.Contains(f.Groups[1], a) && slices.Contains(f.Groups[0], b)
		}, nil), nil
	case FaultCut:
		return s.network(func(a, b int) bool {
			return slices.Contains(f.Pairs, [2]int{a, b}) || slices.Contains(f.Pairs, [2]int{b, a})
		}, nil), nil
	case FaultHeal:
		s.heals++
		s.slow = square[slowdown](n)
		never := func(int, int) bool { return false }
		return s.network(never, never), nil
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
	case FaultEndRogues:
		var ended []string
		for _, r := range s.actors[n:] {
			if r.live {
				s.down(r, true)
				ended = append(ended, r.name)
			}
		}
		if len(ended) == 0 {
			return "end rogues: none runs", nil
		}
		return "end rogues " + strings.Join(ended, ","), nil
	}
	i := f.Member
	if i < 0 {
		return "", fmt.Errorf("no member is up: %w", gen.ErrNotAllowed)
	}
	m := s.members[i]
	switch f.Kind {
	case FaultIsolate:
		return s.network(func(a, b int) bool { return a == i || b == i }, nil), nil
	case FaultDelay:
		return s.delay(f), nil
	case FaultOneWay:
		return s.cutOneWay(i, f.Out), nil
	case FaultRestart:
		if m.live {
			return "", fmt.Errorf("%s is up: %w", m.name, gen.ErrNotAllowed)
		}
		return "restart " + m.name, s.start(m)
	case FaultRogue:
		return s.rogue(m)
	case FaultJoin, FaultLeave:
		return s.declare(f.Kind, m, s.members[f.Peer])
	}
	if !m.live {
		return "", fmt.Errorf("%s is already down: %w", m.name, gen.ErrNotAllowed)
	}
	leader := m.core.IsLeader()
	if f.Kind == FaultStop && leader {
		// As the leader shell does when the actor stops on purpose: hand
		// over first, saying this member ends.
		if err := m.core.StepDownToEnd(s.clock()); err == nil {
			s.drain(m)
		}
	}
	s.down(m, f.Kind == FaultStop)
	return fmt.Sprintf("%s %s (leader: %t)", f.Kind, m.name, leader), nil
}

// rogue starts a second actor of the cluster on host's node, once every
// live member's view names host.
func (s *Simulator) rogue(host *member) (string, error) {
	r := s.rogueOn[host.index]
	if r != nil && r.live {
		return "", fmt.Errorf("%s already runs on %s's node: %w", r.name, host.name, gen.ErrNotAllowed)
	}
	for _, p := range s.members {
		if !p.live {
			continue
		}
		if v, ok := p.core.View(); !ok || !slices.Contains(v.Members, host.id) {
			return "", fmt.Errorf("%s's view does not name %s yet: %w", p.name, host.name, gen.ErrNotAllowed)
		}
	}
	return s.startRogue(host)
}

// startRogue starts (a new life of) the second actor on host's node.
func (s *Simulator) startRogue(host *member) (string, error) {
	r := s.rogueOn[host.index]
	if r == nil {
		r = &member{index: len(s.actors), node: host.index, name: host.name + "r", host: host.name,
			id: gen.ProcessID{Name: rogueName, Node: host.id.Node}}
		s.actors = append(s.actors, r)
		s.rogueOn[host.index] = r
	}
	if err := s.start(r); err != nil {
		return "", err
	}
	return fmt.Sprintf("rogue %s on %s's node", r.name, host.name), nil
}

// declare calls Join or Leave on m for peer and records it.
func (s *Simulator) declare(kind FaultKind, m, peer *member) (string, error) {
	if m == peer {
		return "", fmt.Errorf("%s of itself: %w", kind, gen.ErrIncorrect)
	}
	if !m.live {
		return "", fmt.Errorf("%s is down: %w", m.name, gen.ErrNotAllowed)
	}
	var err error
	hk := history.KindJoin
	if kind == FaultJoin {
		err = m.core.Join(s.clock(), peer.id)
	} else {
		hk = history.KindLeave
		err = m.core.Leave(s.clock(), peer.id.Node)
	}
	s.drain(m)
	if err != nil {
		return "", err
	}
	s.hist.Append(history.Event{At: s.now, Kind: hk, Member: m.name, Life: m.life, Peer: peer.name})
	return fmt.Sprintf("%s on %s: %s", kind, m.name, peer.name), nil
}

// leaderOrFirst is the live visible leader at the highest term, else the
// first live member, else -1.
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

// network makes cut(a, b) the two-way cuts of the link model, and
// oneway(from, to), unless nil, its one-way cuts: every pair cut reports
// true for cannot reach each other, and what from sends to is lost when
// oneway reports true. It records the change and restarts the failure
// detection of every pair whose cuts changed, and describes the result.
func (s *Simulator) network(cut, oneway func(a, b int) bool) string {
	changed := false
	for a := range s.members {
		for b := a + 1; b < len(s.members); b++ {
			is, ab, ba := cut(a, b), s.oneway[a][b], s.oneway[b][a]
			if oneway != nil {
				ab, ba = oneway(a, b), oneway(b, a)
			}
			if s.cut[a][b] == is && s.oneway[a][b] == ab && s.oneway[b][a] == ba {
				continue
			}
			changed = true
			s.cut[a][b], s.cut[b][a] = is, is
			s.oneway[a][b], s.oneway[b][a] = ab, ba
			s.relink(a, b)
		}
	}
	if !changed {
		return "no change to the network"
	}
	groups, pairs := s.shape()
	switch {
	case len(pairs) == 0:
		s.hist.Append(history.Event{At: s.now, Kind: history.KindHeal})
		return "heal"
	case groups != nil:
		s.hist.Append(history.Event{At: s.now, Kind: history.KindPartition, Groups: groups})
		parts := make([]string, len(groups))
		for k, g := range groups {
			parts[k] = "{" + strings.Join(g, ",") + "}"
		}
		return "partition " + strings.Join(parts, " | ")
	}
	s.hist.Append(history.Event{At: s.now, Kind: history.KindPartition, Cuts: pairs})
	parts := make([]string, len(pairs))
	for k, p := range pairs {
		parts[k] = p[0] + "-" + p[1]
	}
	return "cut " + strings.Join(parts, " ")
}

// relink restarts the failure detection of the link between a and b after
// its cuts changed: nothing is noticed dead any more, and each cut that
// stands now will be, after Network.DetectCut (see detect).
func (s *Simulator) relink(a, b int) {
	s.cutGen[a][b]++
	s.cutGen[b][a] = s.cutGen[a][b]
	s.noted[a][b], s.noted[b][a] = false, false
	detect := s.cfg.Network.DetectCut
	switch {
	case detect < 0:
	case s.cut[a][b]:
		s.push(&item{at: s.now + detect, kind: itemDetect, to: a, peer: b, cutGen: s.cutGen[a][b]})
	default:
		for _, d := range [][2]int{{a, b}, {b, a}} {
			if from, to := d[0], d[1]; s.oneway[from][to] {
				s.push(&item{at: s.now + detect, kind: itemDetect, to: to, peer: from, oneWay: true, cutGen: s.cutGen[a][b]})
			}
		}
	}
}

// severed reports whether a and b cannot make a round trip: cut, or cut
// one way. The history records such a pair as cut.
func (s *Simulator) severed(a, b int) bool { return s.cut[a][b] || s.oneway[a][b] || s.oneway[b][a] }

// whole reports whether no cut, one-way cut or delay stands.
func (s *Simulator) whole() bool {
	for a := range s.members {
		for b := range s.members {
			if s.severed(a, b) || s.slow[a][b] != (slowdown{}) {
				return false
			}
		}
	}
	return true
}

// slowdown is the extra delay of one direction of a link: growing from
// zero at since to top over ramp, then staying there.
type slowdown struct{ since, ramp, top time.Duration }

// at is the extra delay of a message sent at now.
func (d slowdown) at(now time.Duration) time.Duration {
	if grown := now - d.since; grown < d.ramp {
		// In microseconds, so the product stays far from overflowing.
		return d.top / time.Microsecond * grown / d.ramp * time.Microsecond
	}
	return d.top
}

// links lists the directed links of member i, into it or, when out, out
// of it, as (from, to).
func (s *Simulator) links(i int, out bool) [][2]int {
	var ls [][2]int
	for j := range s.members {
		switch {
		case j == i:
		case out:
			ls = append(ls, [2]int{i, j})
		default:
			ls = append(ls, [2]int{j, i})
		}
	}
	return ls
}

// direction names one direction of member m's links.
func direction(m string, out bool) string {
	if out {
		return "what " + m + " sends"
	}
	return "what " + m + " receives"
}

// delay applies a FaultDelay resolved to a member, and plans its cut.
func (s *Simulator) delay(f Fault) string {
	m := s.members[f.Member]
	for _, l := range s.links(f.Member, f.Out) {
		s.slow[l[0]][l[1]] = slowdown{since: s.now, ramp: f.Ramp, top: f.Delay}
	}
	what := fmt.Sprintf("delay %s by up to %s, growing over %s", direction(m.name, f.Out), f.Delay, f.Ramp)
	if f.CutAfter > 0 {
		cut := Fault{At: s.now + f.CutAfter, Kind: FaultOneWay, Member: f.Member, Out: !f.Out}
		s.push(&item{at: cut.At, kind: itemFault, fault: cut, unlessHealed: true, heals: s.heals})
		what += fmt.Sprintf(", then cut %s at %s", direction(m.name, !f.Out), cut.At)
	}
	return what
}

// cutOneWay applies a FaultOneWay resolved to member i.
func (s *Simulator) cutOneWay(i int, out bool) string {
	lost := map[[2]int]bool{}
	for _, l := range s.links(i, out) {
		lost[l] = true
	}
	what := s.network(func(a, b int) bool { return s.cut[a][b] }, func(from, to int) bool {
		return s.oneway[from][to] || lost[[2]int{from, to}]
	})
	return fmt.Sprintf("one-way cut of %s: %s", direction(s.members[i].name, out), what)
}

// shape describes the link model: every cut pair by name, and the groups
// of members that reach each other when the cuts are a partition (members
// that can talk form groups whose members all reach each other); groups is
// nil for a non-transitive cut.
func (s *Simulator) shape() (groups [][]string, pairs [][2]string) {
	n := len(s.members)
	group := make([]int, n)
	for i := range group {
		group[i] = -1
	}
	var first []int
	transitive := true
	for a := range n {
		for b := a + 1; b < n; b++ {
			if s.severed(a, b) {
				pairs = append(pairs, [2]string{s.members[a].name, s.members[b].name})
			}
		}
		if group[a] >= 0 {
			continue
		}
		group[a] = len(first)
		first = append(first, a)
		for b := a + 1; b < n; b++ {
			if !s.severed(a, b) {
				transitive = transitive && group[b] < 0
				group[b] = group[a]
			}
		}
	}
	for a := range n {
		for b := a + 1; b < n; b++ {
			transitive = transitive && (group[a] == group[b]) != s.severed(a, b)
		}
	}
	if !transitive {
		return nil, pairs
	}
	groups = make([][]string, len(first))
	for i, m := range s.members {
		groups[group[i]] = append(groups[group[i]], m.name)
	}
	return groups, pairs
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
	s.hist.Append(history.Event{At: s.now, Kind: kind, Member: m.name, Life: m.life, Node: m.host})
	s.recordLease(m)
	for _, p := range s.actors {
		if !p.live {
			continue
		}
		at, why := s.now+m.downNotice+n.Latency, reason
		if s.severed(p.node, m.node) {
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
