package election

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// harness drives one core by hand: the test plays every peer.
type harness struct {
	t      *testing.T
	c      *Core
	now    time.Time
	timers map[TimerKind]Timer
	due    map[TimerKind]time.Time // when each armed timer fires
	out    Ready                   // everything since the last take
}

func peerPID(i int) gen.PID { return gen.PID{Node: nodeName(i), ID: 1000, Creation: 1} }

// newHarness makes member n1 with peers n2..n(peers+1) declared in Bootstrap.
func newHarness(t *testing.T, peers int, tune func(*Config)) *harness {
	cfg := testConfig(nodeName(1), 1)
	for i := 2; i <= peers+1; i++ {
		cfg.Bootstrap = append(cfg.Bootstrap, procID(nodeName(i)))
	}
	if tune != nil {
		tune(&cfg)
	}
	c, err := New(cfg, peerPID(1), HardState{}, epoch)
	require.NoError(t, err)
	h := &harness{t: t, c: c, now: epoch, timers: map[TimerKind]Timer{}, due: map[TimerKind]time.Time{}}
	h.collect()
	return h
}

// collect moves the core's Ready into h.out, tracking armed timers.
func (h *harness) collect() {
	for h.c.HasReady() {
		rd := h.c.Ready()
		if rd.HardState != nil {
			h.out.HardState = rd.HardState
		}
		h.out.Messages = append(h.out.Messages, rd.Messages...)
		h.out.Timers = append(h.out.Timers, rd.Timers...)
		h.out.Effects = append(h.out.Effects, rd.Effects...)
		for _, op := range rd.Timers {
			if op.Cancel {
				delete(h.timers, op.Timer.Kind)
			} else {
				h.timers[op.Timer.Kind] = op.Timer
				h.due[op.Timer.Kind] = h.now.Add(op.After)
			}
		}
	}
}

// take returns and clears what the core asked for since the last take.
func (h *harness) take() Ready {
	h.collect()
	rd := h.out
	h.out = Ready{}
	return rd
}

func (h *harness) step(from int, msg any) {
	h.c.Step(h.now, peerPID(from), msg)
	h.collect()
}

func (h *harness) advance(d time.Duration) { h.now = h.now.Add(d) }

// fire fires the armed timer of kind, which must be armed, first moving the
// clock to its deadline when that is later.
func (h *harness) fire(kind TimerKind) {
	h.t.Helper()
	tm, ok := h.timers[kind]
	require.True(h.t, ok, "%s timer is not armed", kind)
	delete(h.timers, kind)
	if at := h.due[kind]; at.After(h.now) {
		h.now = at
	}
	h.c.Tick(h.now, tm)
	h.collect()
}

// campaign fires the election timer (PreVote off) and returns the term asked for.
func (h *harness) campaign() uint64 {
	h.t.Helper()
	h.fire(TimerElection)
	require.Equal(h.t, RoleCandidate, h.c.Role())
	return h.c.Term()
}

func (h *harness) grant(from int, term uint64) {
	h.step(from, MessageVote{ClusterID: testCluster, Term: term, Granted: true, Voter: procID(nodeName(from))})
}

func (h *harness) heartbeat(from int, term uint64) {
	h.step(from, MessageHeartbeat{ClusterID: testCluster, Term: term, Leader: procID(nodeName(from))})
}

func (h *harness) requestVote(from int, term uint64) {
	h.step(from, MessageRequestVote{ClusterID: testCluster, Term: term, Candidate: procID(nodeName(from))})
}

// lastVote returns the last MessageVote the core sent.
func lastVote(t *testing.T, rd Ready) MessageVote {
	t.Helper()
	for i := len(rd.Messages) - 1; i >= 0; i-- {
		if v, ok := rd.Messages[i].Message.(MessageVote); ok {
			return v
		}
	}
	t.Fatalf("no vote sent in %+v", rd.Messages)
	return MessageVote{}
}

// messagesOf lists the Outbounds in rd carrying a T.
func messagesOf[T any](rd Ready) []Outbound {
	var out []Outbound
	for _, o := range rd.Messages {
		if _, ok := o.Message.(T); ok {
			out = append(out, o)
		}
	}
	return out
}

// effectsIn lists the effects of type T in rd.
func effectsIn[T Effect](rd Ready) []T {
	var out []T
	for _, e := range rd.Effects {
		if v, ok := e.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// lead makes the harness core leader at a fresh term with peers granting.
func (h *harness) lead(voters ...int) uint64 {
	h.t.Helper()
	term := h.campaign()
	for _, v := range voters {
		h.grant(v, term)
	}
	confirms := effectsIn[Confirm](h.out)
	require.NotEmpty(h.t, confirms)
	h.c.ConfirmResult(h.now, term, true, nil)
	h.collect()
	require.Equal(h.t, RoleLeader, h.c.Role())
	return term
}
