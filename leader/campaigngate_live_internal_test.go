package leader

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/regent-go/regent/internal/election"
)

// liveMember is a gated actor with a stand-in core: campaigning says a
// round it began runs.
type liveMember struct {
	a           *Actor
	campaigning bool
}

// settle is Actor.settleCampaign with the stand-in core.
func (m *liveMember) settle() {
	o := m.a.inbox.owner
	if o.holds() && (!m.campaigning || !m.a.timers[election.TimerElection].pending) {
		o.campaigns.endRound(o)
	}
}

// fireIfScheduled runs the Go timer's callback of kind when it is
// scheduled, as time passing beyond its deadline would.
func (m *liveMember) fireIfScheduled(kind election.TimerKind) bool {
	tm := &m.a.timers[kind]
	tm.mu.Lock()
	if tm.runAt == 0 {
		tm.mu.Unlock()
		return false
	}
	now := sinceEpoch(time.Now())
	tm.runAt = now
	if tm.due != 0 {
		tm.due = now
	}
	tm.mu.Unlock()
	tm.fire(m.a.inbox.owner, kind)
	return true
}

// Liveness of the gate with actors that take their firings as
// Actor.handleMessage does: once every round ends and time passes, every
// member whose election timer is armed campaigns again, and no place stays
// held.
func TestCampaignGateLivenessWithActors(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g := newCampaignGate(rapid.IntRange(1, 2).Draw(rt, "capacity"))
		as := newGatedActors(t, g, rapid.IntRange(1, 4).Draw(rt, "members"))
		ms := make([]*liveMember, len(as))
		for i, a := range as {
			ms[i] = &liveMember{a: a}
			armTimer(a, election.TimerProbe, false)
		}
		mb := mailbox{}
		take := func(m *liveMember) bool {
			taken, round := mb.next(m.a)
			if round {
				m.campaigning = true
				armTimer(m.a, election.TimerElection, false) // the core times its round
			}
			if taken {
				m.settle()
			}
			return taken
		}
		for range rapid.IntRange(1, 60).Draw(rt, "steps") {
			m := ms[rapid.IntRange(0, len(ms)-1).Draw(rt, "member")]
			switch rapid.IntRange(0, 7).Draw(rt, "op") {
			case 0:
				m.fireIfScheduled(election.TimerElection)
			case 1:
				m.fireIfScheduled(election.TimerProbe)
			case 2:
				take(m)
			case 3: // an input re-arms the election timer (a leader heard, a new term)
				m.campaigning = false
				armTimer(m.a, election.TimerElection, false)
				m.settle()
			case 4: // a heartbeat extends the deadline lazily
				m.a.extendElectionTo(sinceEpoch(time.Now()) + time.Hour)
				m.settle()
			case 5: // the round ends without touching the timer (lost, or won and cancelled)
				m.campaigning = false
				if rapid.Bool().Draw(rt, "won") {
					armTimer(m.a, election.TimerElection, true)
				}
				m.settle()
			case 6:
				armTimer(m.a, election.TimerProbe, rapid.Bool().Draw(rt, "cancelProbe"))
				m.settle()
			case 7: // round times out by the timer
				m.fireIfScheduled(election.TimerElection)
			}
		}
		// Every round ends; time passes; mailboxes drain.
		for range 20 * len(ms) {
			for _, m := range ms {
				for take(m) {
				}
				m.campaigning = false
				m.settle()
				m.fireIfScheduled(election.TimerElection)
				for take(m) {
				}
				m.campaigning = false
				m.settle()
			}
		}
		for progress := true; progress; {
			progress = false
			for _, m := range ms {
				for take(m) {
					progress = true
				}
				m.campaigning = false
				m.settle()
			}
		}
		for i, m := range ms {
			tm := &m.a.timers[election.TimerElection]
			tm.mu.Lock()
			scheduled := tm.runAt != 0
			tm.mu.Unlock()
			if !tm.pending || scheduled || mb[m.a] < len(sentOf(m.a)) {
				continue
			}
			tm.mu.Lock()
			runAt, due := tm.runAt, tm.due
			tm.mu.Unlock()
			st := gateState(m.a.inbox.owner.gate.Load())
			rt.Fatalf("member %d: election timer armed but never fires again: runAt %v due %v gate %v", i, runAt, due, st)
		}
		if st := g.Stats(); st.Holding != 0 || st.Queued != 0 {
			rt.Fatalf("%d places held, %d waiting", st.Holding, st.Queued)
		}
	})
}

// extendElectionTo is Actor.extendElection with the stand-in core's due.
func (a *Actor) extendElectionTo(at time.Duration) {
	t := &a.timers[election.TimerElection]
	if !t.pending {
		return
	}
	t.mu.Lock()
	if at > t.due {
		t.due = at
	}
	t.mu.Unlock()
}
