package modelcheck

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// ActionKind says what an Action does.
type ActionKind int

const (
	// ActDeliver hands an in-flight message to its receiver.
	ActDeliver ActionKind = iota + 1
	// ActDuplicate hands a copy of an in-flight message to its receiver and
	// leaves the original in flight.
	ActDuplicate
	// ActDrop loses an in-flight message.
	ActDrop
	// ActDown hands a pending monitor down to its observer.
	ActDown
	// ActFire fires an armed timer, moving its member's clock to the
	// timer's deadline when that is later.
	ActFire
	// ActCrash stops a member's node.
	ActCrash
	// ActKill ends a member's process with a real reason; its node lives on.
	ActKill
	// ActRestart starts a member that is down as a new life.
	ActRestart
	// ActDisconnect drops the connection between two live members.
	ActDisconnect
	// ActInput applies the next input of the Script.
	ActInput
	// ActFlush, for a Prefix only, delivers every message and down in
	// flight, oldest first, including those sent meanwhile.
	ActFlush
	// ActDiskFail makes every write of a member's HardState fail.
	ActDiskFail
	// ActDiskHeal makes a member's failing disk write again.
	ActDiskHeal
)

// Action is one step of a path. Searches make them; a Prefix is written
// with the constructors below.
type Action struct {
	Kind ActionKind
	// Member is the member acted on: a message's receiver, a down's
	// observer, a timer's owner, the member crashed, killed or restarted, or
	// one end of a disconnection.
	Member int
	// Peer is a message's sender, or the other end of a disconnection.
	Peer  int
	Timer election.TimerKind
	// Index is the position of the message or down among those in flight,
	// oldest first; -1 (in a Prefix) picks the oldest from Peer to Member.
	Index int
}

// Flush delivers everything in flight, oldest first, until nothing is left.
func Flush() Action { return Action{Kind: ActFlush} }

// Deliver hands the oldest message in flight from member from to member to.
func Deliver(from, to int) Action { return Action{Kind: ActDeliver, Member: to, Peer: from, Index: -1} }

// Fire fires member i's armed timer of kind k.
func Fire(i int, k election.TimerKind) Action { return Action{Kind: ActFire, Member: i, Timer: k} }

// Crash stops member i's node.
func Crash(i int) Action { return Action{Kind: ActCrash, Member: i} }

// Kill ends member i's process with gen.TerminateReasonKill.
func Kill(i int) Action { return Action{Kind: ActKill, Member: i} }

// Restart starts member i again.
func Restart(i int) Action { return Action{Kind: ActRestart, Member: i} }

// Disconnect drops the connection between members i and j.
func Disconnect(i, j int) Action { return Action{Kind: ActDisconnect, Member: i, Peer: j} }

// NextInput applies the next input of the Script.
func NextInput() Action { return Action{Kind: ActInput} }

// DiskFail makes member i's disk fail every write.
func DiskFail(i int) Action { return Action{Kind: ActDiskFail, Member: i} }

// DiskHeal makes member i's disk write again.
func DiskHeal(i int) Action { return Action{Kind: ActDiskHeal, Member: i} }

// actions lists every action enabled in s, in a fixed order. Of equal
// messages in flight only the oldest is offered: delivering either gives
// the same state.
func (s *State) actions(buf []Action) []Action {
	out := buf[:0]
	cfg := s.cfg
	for idx, e := range s.net {
		if slices.ContainsFunc(s.net[:idx], func(o *envelope) bool { return o.key == e.key }) {
			continue
		}
		out = append(out, Action{Kind: ActDeliver, Member: e.to, Peer: e.from, Index: idx})
		if s.used.duplicates < cfg.Duplicates {
			out = append(out, Action{Kind: ActDuplicate, Member: e.to, Peer: e.from, Index: idx})
		}
		if cfg.Drops {
			out = append(out, Action{Kind: ActDrop, Member: e.to, Peer: e.from, Index: idx})
		}
	}
	for idx, d := range s.downs {
		if !slices.ContainsFunc(s.downs[:idx], func(o down) bool { return o.key == d.key }) {
			out = append(out, Action{Kind: ActDown, Member: d.observer, Index: idx})
		}
	}
	for i := range s.members {
		m := s.members[i]
		if !m.up {
			continue
		}
		for k, t := range m.timers {
			if t.ok && !(cfg.NoProbes && election.TimerKind(k) == election.TimerProbe) {
				out = append(out, Action{Kind: ActFire, Member: i, Timer: election.TimerKind(k)})
			}
		}
	}
	for i, m := range s.members {
		switch {
		case !m.up:
			out = append(out, Restart(i))
		default:
			if s.used.crashes < cfg.Crashes {
				out = append(out, Crash(i))
			}
			if s.used.kills < cfg.Kills {
				out = append(out, Kill(i))
			}
		}
		switch {
		case m.diskFailing:
			out = append(out, DiskHeal(i))
		case s.used.storage < cfg.StorageFaults:
			out = append(out, DiskFail(i))
		}
	}
	if s.used.disconnects < cfg.Disconnects {
		for i := range s.members {
			for j := i + 1; j < len(s.members); j++ {
				if s.members[i].up && s.members[j].up {
					out = append(out, Disconnect(i, j))
				}
			}
		}
	}
	if s.script < len(cfg.Script) && s.members[cfg.Script[s.script].Member].up {
		out = append(out, NextInput())
	}
	return out
}

// step applies a; drain has recorded the leaders it made. The caller
// checks the invariants and then calls raiseFloors.
func (s *State) step(a Action) error { return s.apply(a) }

// apply carries a out on s, which must own nothing shared that a changes:
// s is a fork made for this step.
func (s *State) apply(a Action) error {
	cfg := s.cfg
	bad := func(format string, args ...any) error {
		return fmt.Errorf("modelcheck: %s is not enabled: %s: %w", a.Kind, fmt.Sprintf(format, args...), gen.ErrIncorrect)
	}
	switch a.Kind {
	case ActDeliver, ActDuplicate, ActDrop:
		idx, err := s.pick(a)
		if err != nil {
			return err
		}
		e := s.net[idx]
		if a.Kind == ActDuplicate {
			if s.used.duplicates >= cfg.Duplicates {
				return bad("no duplicates left")
			}
			s.used.duplicates++
		} else {
			s.net = slices.Concat(s.net[:idx], s.net[idx+1:])
		}
		if a.Kind != ActDrop {
			m := s.own(e.to)
			m.core.Step(m.now, e.fromPID, e.out.Message)
			s.drain(e.to)
		}
	case ActDown:
		if a.Index < 0 || a.Index >= len(s.downs) {
			return bad("no down #%d", a.Index)
		}
		d := s.downs[a.Index]
		s.downs = slices.Concat(s.downs[:a.Index], s.downs[a.Index+1:])
		if m := s.members[d.observer]; m.up && m.life == d.life {
			m = s.own(d.observer)
			m.core.PeerDown(m.now, d.pid, d.reason)
			s.drain(d.observer)
		}
	case ActFire:
		if !s.valid(a.Member) || !s.members[a.Member].up || int(a.Timer) >= len(s.members[a.Member].timers) || !s.members[a.Member].timers[a.Timer].ok {
			return bad("%s has no %s timer armed", name(a.Member), a.Timer)
		}
		m := s.own(a.Member)
		t := m.timers[a.Timer]
		m.timers[a.Timer] = armed{}
		if t.at.After(m.now) {
			m.now = t.at
		}
		m.core.Tick(m.now, t.timer)
		s.drain(a.Member)
	case ActCrash, ActKill:
		if !s.valid(a.Member) || !s.members[a.Member].up {
			return bad("%s is not up", name(a.Member))
		}
		reason := error(gen.ErrNoConnection)
		if a.Kind == ActKill {
			if s.used.kills >= cfg.Kills {
				return bad("no kills left")
			}
			s.used.kills++
			reason = gen.TerminateReasonKill
		} else {
			if s.used.crashes >= cfg.Crashes {
				return bad("no crashes left")
			}
			s.used.crashes++
		}
		s.stop(a.Member, a.Kind == ActKill, reason)
	case ActRestart:
		if !s.valid(a.Member) || s.members[a.Member].up {
			return bad("%s is not down", name(a.Member))
		}
		return s.start(a.Member)
	case ActDisconnect:
		i, j := a.Member, a.Peer
		if !s.valid(i) || !s.valid(j) || i == j || !s.members[i].up || !s.members[j].up || s.used.disconnects >= cfg.Disconnects {
			return bad("%s and %s cannot be disconnected", name(i), name(j))
		}
		s.used.disconnects++
		s.net = slices.DeleteFunc(slices.Clone(s.net), func(e *envelope) bool {
			return (e.from == i && e.to == j) || (e.from == j && e.to == i)
		})
		s.fireDowns(j, gen.ErrNoConnection, func(o int) bool { return o == i })
		s.fireDowns(i, gen.ErrNoConnection, func(o int) bool { return o == j })
	case ActInput:
		if s.script >= len(cfg.Script) || !s.members[cfg.Script[s.script].Member].up {
			return bad("no script input is due")
		}
		in := cfg.Script[s.script]
		s.script++
		m := s.own(in.Member)
		var err error
		if in.Leave {
			err = m.core.Leave(m.now, node(in.Peer))
		} else {
			err = m.core.Join(m.now, processID(in.Peer))
		}
		if err != nil {
			return fmt.Errorf("modelcheck: %s: %w", in, err)
		}
		s.drain(in.Member)
	case ActDiskFail, ActDiskHeal:
		fail := a.Kind == ActDiskFail
		if !s.valid(a.Member) || s.members[a.Member].diskFailing == fail || (fail && s.used.storage >= cfg.StorageFaults) {
			return bad("%s's disk cannot %s", name(a.Member), a.Kind)
		}
		if fail {
			s.used.storage++
		}
		s.mut(a.Member).diskFailing = fail
		s.members[a.Member].hashed = false
	case ActFlush:
		for n := 0; len(s.net)+len(s.downs) > 0; n++ {
			if n > 10000 {
				return fmt.Errorf("modelcheck: flush: messages never stop: %w", gen.ErrIncorrect)
			}
			next := Action{Kind: ActDown}
			if len(s.net) > 0 {
				next = Action{Kind: ActDeliver, Member: s.net[0].to, Peer: s.net[0].from}
			}
			if err := s.apply(next); err != nil {
				return err
			}
		}
	default:
		return bad("unknown action kind %d", int(a.Kind))
	}
	return nil
}

// pick resolves a message action to its position in flight.
func (s *State) pick(a Action) (int, error) {
	if a.Index < 0 {
		for idx, e := range s.net {
			if e.from == a.Peer && e.to == a.Member {
				return idx, nil
			}
		}
		return 0, fmt.Errorf("modelcheck: nothing in flight from %s to %s: %w", name(a.Peer), name(a.Member), gen.ErrIncorrect)
	}
	if a.Index >= len(s.net) || s.net[a.Index].to != a.Member || s.net[a.Index].from != a.Peer {
		return 0, fmt.Errorf("modelcheck: no message #%d from %s to %s in flight: %w", a.Index, name(a.Peer), name(a.Member), gen.ErrIncorrect)
	}
	return a.Index, nil
}

func (s *State) valid(i int) bool { return i >= 0 && i < len(s.members) }

// stop ends member i's life: what is in flight from and to it vanishes, and
// its peers' monitors of it fire with reason.
func (s *State) stop(i int, killed bool, reason error) {
	m := s.own(i)
	m.up, m.killed = false, killed
	m.core, m.src = nil, nil
	m.timers = [maxTimers]armed{}
	m.monitors = nil
	s.net = slices.DeleteFunc(slices.Clone(s.net), func(e *envelope) bool { return e.from == i || e.to == i })
	s.downs = slices.DeleteFunc(slices.Clone(s.downs), func(d down) bool { return d.observer == i })
	s.fireDowns(i, reason, nil)
}

// describe says in one line what a does in s, before it is applied.
func (s *State) describe(a Action) string {
	switch a.Kind {
	case ActDeliver, ActDuplicate, ActDrop:
		idx, err := s.pick(a)
		if err != nil {
			return err.Error()
		}
		e := s.net[idx]
		msg := fmt.Sprintf("%s→%s %s", describePID(e.fromPID), name(e.to), describeMessage(e.out.Message))
		switch a.Kind {
		case ActDuplicate:
			return "deliver a duplicate of " + msg + " (the original stays in flight)"
		case ActDrop:
			return "drop " + msg
		}
		return "deliver " + msg
	case ActDown:
		d := s.downs[a.Index]
		return fmt.Sprintf("%s gets the down of %s: %v", name(d.observer), describePID(d.pid), d.reason)
	case ActFire:
		m := s.members[a.Member]
		t := m.timers[a.Timer]
		return fmt.Sprintf("fire %s's %s timer (its clock +%s)", name(a.Member), a.Timer, max(t.at.Sub(m.now), 0))
	case ActCrash:
		return fmt.Sprintf("crash %s's node", name(a.Member))
	case ActKill:
		return fmt.Sprintf("kill %s's process (its node lives on)", name(a.Member))
	case ActRestart:
		m := s.members[a.Member]
		if !s.cfg.Durable {
			return fmt.Sprintf("restart %s as life %d, from nothing (no durable state)", name(a.Member), m.life+1)
		}
		return fmt.Sprintf("restart %s as life %d with term %d, vote %q and view %s", name(a.Member), m.life+1,
			m.stored.Term, short(m.stored.VotedFor.Node), describeView(m.stored.View))
	case ActDisconnect:
		return fmt.Sprintf("disconnect %s and %s", name(a.Member), name(a.Peer))
	case ActInput:
		return s.cfg.Script[s.script].String()
	case ActFlush:
		return "deliver everything in flight, oldest first, until nothing is left"
	case ActDiskFail:
		return fmt.Sprintf("%s's disk fails every write from now on", name(a.Member))
	case ActDiskHeal:
		return fmt.Sprintf("%s's disk writes again", name(a.Member))
	}
	return fmt.Sprintf("unknown action %d", int(a.Kind))
}

// summary is one line of every member's visible role, term and view:
// "n1:leader@2 v3/t2e1+" is n1 leading term 2 visibly with a view of three
// members at key term 2, epoch 1, agreed (+); "hidden-leader" is a leader
// the user is not shown, "v-" no view, "v3/t1e1?" a view not yet agreed.
func (s *State) summary() string {
	var parts []string
	for i := range s.members {
		m := s.members[i]
		if !m.up {
			parts = append(parts, name(i)+":down")
			continue
		}
		role := m.core.Role().String()
		if m.core.IsProtocolLeader() && !m.core.IsLeader() {
			role = "hidden-leader"
		}
		view := "v-"
		if v, ok := m.core.View(); ok {
			agreed := "?"
			if v.Stamp.Agreed {
				agreed = "+"
			}
			view = fmt.Sprintf("v%d/t%de%d%s", len(v.Members), v.Stamp.Key.Term, v.Stamp.Key.Epoch, agreed)
		}
		parts = append(parts, fmt.Sprintf("%s:%s@%d %s", name(i), role, m.core.Term(), view))
	}
	return strings.Join(parts, " ")
}

// String names the kind as traces show it.
func (k ActionKind) String() string {
	switch k {
	case ActDeliver:
		return "deliver"
	case ActDuplicate:
		return "duplicate"
	case ActDrop:
		return "drop"
	case ActDown:
		return "down"
	case ActFire:
		return "fire"
	case ActCrash:
		return "crash"
	case ActKill:
		return "kill"
	case ActRestart:
		return "restart"
	case ActDisconnect:
		return "disconnect"
	case ActInput:
		return "input"
	case ActFlush:
		return "flush"
	case ActDiskFail:
		return "fail"
	case ActDiskHeal:
		return "heal"
	}
	return "unknown"
}

// actionID names an action the same way in every state where it does the
// same thing, for sleep sets: a message by its content, a timer by its
// member and kind.
type actionID struct {
	kind ActionKind
	// member is the member whose core the action feeds, -1 for none.
	member int
	peer   int
	timer  election.TimerKind
	// what is the message's or the down's key, or the script position.
	what string
}

// id names a, an action enabled in s.
func (s *State) id(a Action) actionID {
	id := actionID{kind: a.Kind, member: a.Member, peer: a.Peer, timer: a.Timer}
	switch a.Kind {
	case ActDeliver, ActDuplicate:
		id.what = s.net[a.Index].key
	case ActDrop:
		id.member, id.what = -1, s.net[a.Index].key
	case ActDown:
		id.what = s.downs[a.Index].key
	case ActInput:
		id.member, id.what = s.cfg.Script[s.script].Member, strconv.Itoa(s.script)
	}
	return id
}

// independent reports whether a and b, enabled together, commute and leave
// each other enabled: they feed different cores (or none), take no shared
// budget and touch different messages. Faults touch the network and every
// peer's monitors, so they depend on everything.
func independent(a, b actionID) bool {
	fault := func(k ActionKind) bool {
		return k == ActCrash || k == ActKill || k == ActRestart || k == ActDisconnect || k == ActFlush ||
			k == ActDiskFail || k == ActDiskHeal
	}
	message := func(k ActionKind) bool { return k == ActDeliver || k == ActDuplicate || k == ActDrop }
	switch {
	case fault(a.kind) || fault(b.kind):
		return false
	case message(a.kind) && message(b.kind) && a.what == b.what:
		return false
	case a.kind == b.kind && (a.kind == ActDuplicate || a.kind == ActInput):
		return false
	case a.member >= 0 && a.member == b.member:
		return false
	}
	return true
}
