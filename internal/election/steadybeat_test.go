package election

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/regent-go/regent/gen"
)

// The steady beat must be what a leader really sends on its tick, and each
// member's expected acknowledgement what that member's steady answer
// sends: otherwise a shell could take nothing ahead, and every tick and
// acknowledgement would wake the leader.
func TestSteadyBeatIsTheLeadersTickAndItsMembersAnswers(t *testing.T) {
	for _, n := range []int{3, 5} {
		nw, l := settledLeader(t, n, uint64(n)+40, nil)
		sb, ok := l.core.SteadyBeat(nw.now, nil)
		require.True(t, ok, "a settled leader of %d members has a steady beat", n)
		require.Len(t, sb.Members, n-1)
		for _, m := range sb.Members {
			f := nw.nodes[m.PID.Node]
			sa, ok := f.core.SteadyAnswer(nw.now)
			require.True(t, ok, "%s has a steady answer", f.name)
			require.True(t, sa.Answers(l.pid, &sb.Heartbeat), "%s answers the steady beat's heartbeat", f.name)
			require.Equal(t, sa.Ack, m.Ack, "%s's steady answer is the acknowledgement the beat expects", f.name)
		}
		a := l.timers[TimerHeartbeat]
		sent := len(l.sent)
		nw.fire(l, a)
		want := sb.Heartbeat
		want.Sent = Stamp(sb.Origin, nw.now)
		beats := 0
		for _, out := range l.sent[sent:] {
			if hb, ok := out.Message.(MessageHeartbeat); ok {
				require.Equal(t, want, hb, "the tick sends the steady beat's heartbeat, stamped with the tick's time")
				beats++
			}
		}
		require.Equal(t, n-1, beats)
	}
}

// A shell asks for the steady beat after every wake-up and holds the list
// it published, which its coalescer reads: a beat that did not change hands
// that list back instead of a new one, and a changed beat makes a new list,
// never writing the one held.
func TestSteadyBeatHandsBackTheListHeldWhenUnchanged(t *testing.T) {
	nw, l := settledLeader(t, 3, 41, nil)
	held, ok := l.core.SteadyBeat(nw.now, nil)
	require.True(t, ok)
	was := slices.Clone(held.Members)

	again, ok := l.core.SteadyBeat(nw.now, held.Members)
	require.True(t, ok)
	assert.Same(t, &held.Members[0], &again.Members[0], "an unchanged beat hands back the list held")

	shorter, ok := l.core.SteadyBeat(nw.now, held.Members[:1])
	require.True(t, ok)
	assert.Len(t, shorter.Members, 2, "a list of other members is not handed back")

	c := l.core.Clone(nil)
	c.peers.byPID(held.Members[1].PID).declines = true
	changed, ok := c.SteadyBeat(nw.now, held.Members)
	require.True(t, ok)
	assert.NotSame(t, &held.Members[0], &changed.Members[0], "a changed beat makes a new list")
	assert.True(t, changed.Members[1].Ack.Declines)
	assert.Equal(t, was, held.Members, "the list held is never written")
}

// A leader with anything pending on its tick has no steady beat: a view
// change to propose, a member preferred over it, a member ended.
func TestSteadyBeatIsWithheldWhileTheTickHasWorkToDo(t *testing.T) {
	nw, l := settledLeader(t, 3, 44, nil)
	_, ok := l.core.SteadyBeat(nw.now, nil)
	require.True(t, ok)
	f := nw.other(l)
	_, ok = f.core.SteadyBeat(nw.now, nil)
	require.False(t, ok, "a follower has no steady beat")

	c := l.core.Clone(nil)
	c.lead.remove(f.name, "left")
	_, ok = c.SteadyBeat(nw.now, nil)
	require.False(t, ok, "a removal to propose")

	c = l.core.Clone(nil)
	c.PeerDown(nw.now, f.pid, errCrashed)
	_, ok = c.SteadyBeat(nw.now, nil)
	require.False(t, ok, "a member whose process ended")

	c = l.core.Clone(nil)
	c.cfg.Prefer = Preference{Kind: PreferFunc, Less: func(a, b Candidate) bool { return a.Node == f.name && b.Node != f.name }}
	if c.cfg.Prefer.Prefers(c.peers.get(f.name).candidate(), c.selfCandidate()) {
		_, ok = c.SteadyBeat(nw.now, nil)
		require.False(t, ok, "a member preferred over the leader")
	}
}

// Catching up on ticks sent ahead and acknowledgements taken under a steady
// beat, with the beat's two rules kept, leaves the leader exactly where
// stepping each at its time leaves it, and each of those steps sends the
// beat's heartbeat to every member and nothing else: what lets a shell send
// a leader's steady ticks and take its members' answers without waking it.
// Checked in every state the hostile network reaches (varied Bootstrap
// lists, losses, cuts, restarts, Leave, downs, storage failures), with
// ticks and acknowledgements at random times.
func TestPropertyCatchingUpIsSteppingEveryBeat(t *testing.T) {
	total := 0
	rapid.Check(t, func(rt *rapid.T) {
		contact := rapid.Bool().Draw(rt, "contact evidence")
		nw, n, seed := hostileNetwork(rt, func(c *Config) {
			if contact {
				c.Evidence = EvidenceContact
			}
		})
		steps := rapid.IntRange(50, 300).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			hostileStep(rt, nw, n, seed, i)
			for _, name := range nw.names {
				sn := nw.nodes[name]
				if !sn.up || sn.core.HasReady() {
					continue
				}
				if sb, ok := sn.core.SteadyBeat(nw.now, nil); ok {
					if a, armed := sn.timers[TimerHeartbeat]; armed {
						checkCatchUp(rt, sn, sb, a.t, nw.now)
						total++
					}
				}
			}
		}
	})
	require.Greater(t, total, 500, "steady beats checked")
}

// hostileNetwork starts 3 to 5 members with drawn options (pre-vote,
// MinClusterSize, partial Bootstrap lists) for the property tests; tune
// edits each config too.
func hostileNetwork(rt *rapid.T, tune func(*Config)) (*network, int, uint64) {
	n := rapid.IntRange(3, 5).Draw(rt, "members")
	seed := rapid.Uint64().Draw(rt, "seed")
	preVote := rapid.Bool().Draw(rt, "prevote")
	minSize := rapid.IntRange(1, n).Draw(rt, "min")
	index := 0
	nw := newNetwork(rt, n, seed, func(c *Config) {
		c.DisablePreVote, c.MinClusterSize = !preVote, minSize
		if rapid.Bool().Draw(rt, "partial bootstrap") && index > 0 {
			c.Bootstrap = c.Bootstrap[:index+1]
		}
		index++
		if tune != nil {
			tune(c)
		}
	})
	return nw, n, seed
}

// hostileStep takes one random step of the hostile network the property
// tests share: a delivery, a loss, a timer, a flush, a restart or an input.
func hostileStep(rt *rapid.T, nw *network, n int, seed uint64, i int) {
	switch a := rapid.IntRange(0, 39).Draw(rt, "action"); {
	case a < 20:
		if len(nw.queue) > 0 {
			nw.deliver(rapid.IntRange(0, len(nw.queue)-1).Draw(rt, "msg"))
		}
	case a < 22:
		if len(nw.queue) > 0 {
			j := rapid.IntRange(0, len(nw.queue)-1).Draw(rt, "lost")
			nw.queue = append(nw.queue[:j], nw.queue[j+1:]...)
		}
	case a < 30:
		if sn, a, ok := nw.nextTimer(); ok {
			nw.fire(sn, a)
		}
	case a < 38:
		nw.flush()
	case a == 38:
		sn := nw.nodes[nw.names[rapid.IntRange(0, n-1).Draw(rt, "restart")]]
		cfg := sn.core.cfg
		cfg.Rand = testConfig(sn.name, seed+uint64(i)).Rand
		cfg.Started = nw.now
		nw.add(cfg, sn.hs)
	default:
		a, b := nw.nodes[nw.names[rapid.IntRange(0, n-1).Draw(rt, "member")]], nw.nodes[nw.names[rapid.IntRange(0, n-1).Draw(rt, "other")]]
		if !a.up {
			break
		}
		switch rapid.IntRange(0, 4).Draw(rt, "input") {
		case 0:
			if a != b {
				nw.input(a, func(c *Core, now time.Time) { c.PeerDown(now, b.pid, gen.ErrNoConnection) })
			}
		case 1:
			if a != b {
				nw.input(a, func(c *Core, now time.Time) { c.PeerDown(now, b.pid, errCrashed) })
			}
		case 2:
			if a != b {
				nw.input(a, func(c *Core, now time.Time) { _ = c.Leave(now, b.name) })
			}
		case 3:
			hold := rapid.Bool().Draw(rt, "hold")
			nw.input(a, func(c *Core, now time.Time) { c.SetCampaign(now, !hold) })
		case 4:
			nw.input(a, toggleStorage)
		}
	}
}

// checkCatchUp draws ticks and acknowledgements after from that keep sb's
// rules, steps them one by one on one clone of sn's core and catches up on
// them on another, and fails unless both clones end alike.
func checkCatchUp(rt *rapid.T, sn *simNode, sb SteadyBeat, tick Timer, from time.Time) {
	stepped, caught := sn.core.Clone(nil), sn.core.Clone(nil)
	last := make([]time.Time, len(sb.Members))
	for i, m := range sb.Members {
		last[i] = sn.core.LastReply(m.PID)
	}
	done := BeatenAhead{Acks: make([]TakenAcks, len(sb.Members))}
	at := from
	for range rapid.IntRange(1, 30).Draw(rt, "events") {
		at = at.Add(time.Duration(rapid.IntRange(0, int(2*sb.Window/time.Millisecond)).Draw(rt, "later ms")) * time.Millisecond)
		if i := rapid.IntRange(-1, len(sb.Members)-1).Draw(rt, "event"); i >= 0 {
			// It answers a heartbeat sent up to a window before it arrives
			// (not before the beat was given): its evidence.
			lag := time.Duration(rapid.IntRange(0, int(sb.Window/time.Millisecond)).Draw(rt, "lag ms")) * time.Millisecond
			sent := at.Add(-lag)
			if sent.Before(from) {
				sent = from
			}
			if sent.Sub(last[i]) >= sb.Window {
				break // the shell steps this one: it may break the run of replies
			}
			m := sb.Members[i]
			ack := m.Ack
			ack.Echo = Stamp(sb.Origin, sent)
			stepped.Step(at, m.PID, ack)
			if rd := stepped.Ready(); len(rd.Messages)+len(rd.Effects)+len(rd.Timers) > 0 || rd.HardState != nil {
				rt.Fatalf("%s: the acknowledgement of %s at +%s did more than record the contact: %+v", sn.name, m.PID, at.Sub(from), rd)
			}
			if sent.After(last[i]) {
				last[i] = sent
			}
			done.Acks[i].Count++
			done.Acks[i].Last = last[i]
			done.Acks[i].Arrived = at
			continue
		}
		fresh := !at.After(sb.Until)
		for i := range last {
			fresh = fresh && at.Sub(last[i]) < sb.Window
		}
		if !fresh {
			break // the shell hands this tick to the core
		}
		stepped.Tick(at, tick)
		rd := stepped.Ready()
		if len(rd.Effects) > 0 || rd.HardState != nil || len(rd.Timers) != 1 || rd.Timers[0].Timer.Kind != TimerHeartbeat ||
			rd.Timers[0].Cancel || rd.Timers[0].After != stepped.cfg.HeartbeatInterval || len(rd.Messages) != len(sb.Members) {
			rt.Fatalf("%s: the tick at +%s did more than send the steady beat: %+v", sn.name, at.Sub(from), rd)
		}
		want := sb.Heartbeat
		want.Sent = Stamp(sb.Origin, at)
		for i, out := range rd.Messages {
			if out.To != sb.Members[i].PID || out.Message != any(want) {
				rt.Fatalf("%s: the tick at +%s sent %+v to %s, the steady beat stamped then %+v to %s", sn.name, at.Sub(from), out.Message, out.To, want, sb.Members[i].PID)
			}
		}
		tick = rd.Timers[0].Timer
		done.Beats++
		done.LastBeat = at
	}
	if err := caught.CatchUp(&sb, done); err != nil {
		rt.Fatalf("%s: %v", sn.name, err)
	}
	if rd := caught.Ready(); len(rd.Messages)+len(rd.Effects)+len(rd.Timers) > 0 || rd.HardState != nil {
		rt.Fatalf("%s: catching up made a Ready: %+v", sn.name, rd)
	}
	if !sameState(stepped, caught) {
		rt.Fatalf("%s: after %d ticks and %+v acknowledgements, catching up left\n%+v\nwhere stepping each left\n%+v", sn.name, done.Beats, done.Acks, caught.Status(at), stepped.Status(at))
	}
	again, ok := caught.SteadyBeat(at, nil)
	if at.After(sb.Until) {
		return
	}
	again.Heartbeat.Sent = sb.Heartbeat.Sent // stamped when given
	if !ok || again.Heartbeat != sb.Heartbeat || len(again.Members) != len(sb.Members) {
		rt.Fatalf("%s: the steady beat did not stand after catching up: %+v (%v)", sn.name, again, ok)
	}
	for i, m := range again.Members {
		if m.PID != sb.Members[i].PID || m.Ack != sb.Members[i].Ack || !caught.LastReply(m.PID).Equal(last[i]) {
			rt.Fatalf("%s: member %d of the steady beat moved from %+v to %+v", sn.name, i, sb.Members[i], m)
		}
	}
}

// sameState reports whether two clones of one core hold the same state, but
// for their timers' arming generations (a tick re-arms, catching up keeps
// the arming the shell still holds), their Config, which clones share, and
// their view stores, which clones leave out.
func sameState(a, b *Core) bool {
	x, y := *a, *b
	x.cfg, y.cfg = Config{}, Config{}
	x.store, y.store = nil, nil
	for k := range x.timers {
		x.timers[k], y.timers[k] = 0, 0
	}
	return reflect.DeepEqual(x, y)
}

// CatchUp refuses a report that does not fit the beat, and changes nothing.
func TestCatchUpRefusesWhatDoesNotFitTheBeat(t *testing.T) {
	nw, l := settledLeader(t, 3, 45, nil)
	sb, ok := l.core.SteadyBeat(nw.now, nil)
	require.True(t, ok)
	before := l.core.Clone(nil)
	err := l.core.CatchUp(&sb, BeatenAhead{Beats: 1, LastBeat: nw.now})
	require.ErrorIs(t, err, gen.ErrIncorrect, "one count per member is required")
	late := BeatenAhead{Beats: 1, LastBeat: sb.Until.Add(time.Millisecond), Acks: make([]TakenAcks, len(sb.Members))}
	require.ErrorIs(t, l.core.CatchUp(&sb, late), gen.ErrIncorrect, "no tick is sent ahead after Until")
	stale := sb
	stale.Term++
	require.ErrorIs(t, l.core.CatchUp(&stale, BeatenAhead{Acks: make([]TakenAcks, len(sb.Members))}), gen.ErrIncorrect)
	require.True(t, sameState(before, l.core), "a refused catch-up changes nothing")
}

// A member cut off (its connection dropped) is left out of the steady beat
// while the others make a quorum: the leader's ticks send it nothing, and
// the beat ends before it would be silent for GhostTTL, when a tick would
// remove it. Cut off from a majority, the leader has no steady beat (its
// tick steps down).
func TestSteadyBeatLeavesOutAMemberCutOff(t *testing.T) {
	nw, l := settledLeader(t, 5, 45, nil)
	var fs []*simNode
	for _, name := range nw.names {
		if sn := nw.nodes[name]; sn != l {
			fs = append(fs, sn)
		}
	}
	lost := func(error) error { return fmt.Errorf("lost: %w", gen.ErrNoConnection) }
	c := l.core.Clone(nil)
	c.PeerDown(nw.now, fs[0].pid, lost(nil))
	sb, ok := c.SteadyBeat(nw.now, nil)
	require.True(t, ok, "four of five reachable")
	require.Len(t, sb.Members, 3)
	for _, m := range sb.Members {
		require.NotEqual(t, fs[0].pid, m.PID)
	}
	ghost := nw.now.Add(c.cfg.GhostTTL - c.peers.get(fs[0].name).silentFor(c.clock(), nw.now))
	require.True(t, sb.Until.Before(ghost), "the beat ends at %s, before the member is a ghost at %s", sb.Until, ghost)
	require.False(t, sb.Until.Before(ghost.Add(-time.Millisecond)), "and not long before")

	c.PeerDown(nw.now, fs[1].pid, lost(nil))
	sb, ok = c.SteadyBeat(nw.now, nil)
	require.True(t, ok, "three of five reachable: a quorum still")
	require.Len(t, sb.Members, 2)
	c.PeerDown(nw.now, fs[2].pid, lost(nil))
	_, ok = c.SteadyBeat(nw.now, nil)
	require.False(t, ok, "two of five: no quorum")
}

// The catch-up property where a cut-off member's bound matters: a steady
// beat taken while the member has been silent for nearly GhostTTL, so the
// drawn ticks reach the beat's Until and, just after it, the tick that
// would remove the member.
func TestPropertyCatchingUpNearACutOffMembersGhostTTL(t *testing.T) {
	near := 0
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(3, 5).Draw(rt, "members")
		nw, l := settledLeader(rt, n, rapid.Uint64().Draw(rt, "seed"), nil)
		f := nw.other(l)
		nw.isolate(f)
		nw.input(l, func(c *Core, now time.Time) { c.PeerDown(now, f.pid, gen.ErrNoConnection) })
		ttl := l.core.cfg.GhostTTL
		before := time.Duration(rapid.IntRange(0, int(3*l.core.cfg.evidenceWindow()/time.Millisecond)).Draw(rt, "ms before it is a ghost")) * time.Millisecond
		for {
			p := l.core.peers.get(f.name)
			if p == nil || !l.core.view.has(f.name) || p.silentFor(l.core.clock(), nw.now) >= ttl-before {
				break
			}
			nw.run(time.Millisecond)
		}
		if !l.core.IsProtocolLeader() || l.core.HasReady() {
			return
		}
		sb, ok := l.core.SteadyBeat(nw.now, nil)
		a, armed := l.timers[TimerHeartbeat]
		if !ok || !armed {
			return
		}
		if sb.Until.Sub(nw.now) < 2*sb.Window {
			near++
		}
		checkCatchUp(rt, l, sb, a.t, nw.now)
	})
	require.Greater(t, near, 20, "beats whose end the ticks reach")
}
