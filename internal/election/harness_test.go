package election

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// harness drives one core, n1, by hand: the test plays every peer.
type harness struct {
	t      *testing.T
	c      *Core
	now    time.Time
	timers map[TimerKind]Timer
	due    map[TimerKind]time.Time // when each armed timer fires
	out    Ready                   // everything since the last take
	stored HardState               // what the shell persisted last
	// confirm answers HandleConfirmLeader; nil grants.
	confirm func(term uint64) (bool, error)
}

func peerPID(i int) gen.PID { return gen.PID{Node: nodeName(i), ID: 1000, Creation: 1} }

// members lists n1..nk.
func members(k int) []gen.ProcessID {
	out := make([]gen.ProcessID, 0, k)
	for i := 1; i <= k; i++ {
		out = append(out, procID(nodeName(i)))
	}
	return out
}

// agreedView is an agreed view of n1..nk at key (term, epoch), of the lineage
// that n1 formed at term 1.
func agreedView(k int, term, epoch uint64) *View {
	return newView(ViewStamp{Lineage: Lineage{Term: 1, Node: nodeName(1)}, Key: ViewKey{Term: term, Epoch: epoch}, Agreed: true}, members(k))
}

// newHarness makes n1 with n2..n(peers+1) in Bootstrap and no view: a
// member before formation.
func newHarness(t *testing.T, peers int, tune func(*Config)) *harness {
	return newHarnessWith(t, peers, HardState{}, tune)
}

// newAgreed makes n1 as a member of an agreed view of n1..n(peers+1) at term
// 1 (as if restarted from durable state), Bootstrap naming every member.
func newAgreed(t *testing.T, peers int, tune func(*Config)) *harness {
	return newHarnessWith(t, peers, HardState{Term: 1, View: agreedView(peers+1, 1, 1)}, tune)
}

func newHarnessWith(t *testing.T, peers int, hs HardState, tune func(*Config)) *harness {
	cfg := testConfig(nodeName(1), 1)
	for i := 2; i <= peers+1; i++ {
		cfg.Bootstrap = append(cfg.Bootstrap, procID(nodeName(i)))
	}
	cfg.DisablePreVote = true
	if tune != nil {
		tune(&cfg)
	}
	c, err := New(cfg, peerPID(1), hs, epoch)
	require.NoError(t, err)
	h := &harness{t: t, c: c, now: epoch, timers: map[TimerKind]Timer{}, due: map[TimerKind]time.Time{}, stored: hs}
	h.collect()
	return h
}

// collect moves the core's Ready into h.out, tracking armed timers and what
// was persisted.
func (h *harness) collect() {
	for h.c.HasReady() {
		rd := h.c.Ready()
		if rd.HardState != nil {
			h.out.HardState = rd.HardState
			h.stored = *rd.HardState
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
		for _, e := range rd.Effects {
			if c := e; c.Kind == EffectConfirm {
				granted, err := true, error(nil)
				if h.confirm != nil {
					granted, err = h.confirm(c.Term)
				}
				h.c.ConfirmResult(h.now, c.Term, granted, err)
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
	h.c.Step(h.now, peerPID(from), answeredNow(h.c, h.now, msg))
	h.collect()
}

// answeredNow is msg, an answer whose Echo the test left zero, as an answer
// to what the core sent at now: evidence at now, as a peer that answers at
// once gives. Tests of the echo itself set it, or step the core directly.
func answeredNow(c *Core, now time.Time, msg any) any {
	switch m := msg.(type) {
	case MessageHeartbeatAck:
		if m.Echo == 0 {
			m.Echo = int64(c.clock().at(now))
		}
		return m
	case MessageVote:
		if m.Echo == 0 {
			m.Echo = int64(c.clock().at(now))
		}
		return m
	}
	return msg
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

// stamp is the stamp of n1's view (peers in these tests hold the same).
func (h *harness) stamp() ViewStamp {
	v, _ := h.c.View()
	return v.Stamp
}

// hdr is peer i's header at term, holding a view stamped s.
func hdr(i int, term uint64, s ViewStamp) Header {
	return Header{ClusterID: testCluster, Term: term, From: procID(nodeName(i)), View: s}
}

// campaign fires the election timer (PreVote off) and returns the term asked for.
func (h *harness) campaign() uint64 {
	h.t.Helper()
	h.fire(TimerElection)
	require.True(h.t, h.c.role == RoleCandidate, "n1 did not campaign: %s", h.c.Status(h.now).Below)
	return h.c.Term()
}

// grant answers n1's request as peer i, holding n1's view.
func (h *harness) grant(i int, term uint64) {
	h.step(i, MessageVote{Header: hdr(i, term, h.stamp()), Granted: true})
}

// refuse answers n1's request as peer i with a refusal at term.
func (h *harness) refuse(i int, term uint64) {
	h.step(i, MessageVote{Header: hdr(i, term, h.stamp())})
}

// ack acknowledges n1's view as peer i at term.
func (h *harness) ack(i int, term uint64) {
	h.step(i, MessageHeartbeatAck{Header: hdr(i, term, h.stamp())})
}

// heartbeat is peer i leading at term with a view stamped s (and whole,
// when v is not nil).
func (h *harness) heartbeat(i int, term uint64, s ViewStamp, v *View) {
	h.step(i, MessageHeartbeat{Header: hdr(i, term, s), View: v})
}

// requestVote is peer i asking for a real vote at term, holding a view
// stamped s.
func (h *harness) requestVote(i int, term uint64, s ViewStamp) {
	h.step(i, MessageRequestVote{Header: hdr(i, term, s)})
}

// lead makes n1 the visible leader of its agreed view at a fresh term: the
// voters grant, then acknowledge the re-stamped view.
func (h *harness) lead(voters ...int) uint64 {
	h.t.Helper()
	term := h.campaign()
	for _, v := range voters {
		h.grant(v, term)
	}
	require.True(h.t, h.c.IsProtocolLeader(), "n1 did not win term %d", term)
	for _, v := range voters {
		h.ack(v, term)
	}
	require.Equal(h.t, RoleLeader, h.c.Role(), "n1 is not the visible leader: %+v", h.c.Status(h.now))
	return term
}

// nodeIndex is i for node ni@host.
func nodeIndex(n gen.Atom) int {
	i := 0
	for _, r := range string(n)[1:] {
		if r < '0' || r > '9' {
			break
		}
		i = i*10 + int(r-'0')
	}
	return i
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

// effectsIn lists the effects of kind k in rd.
func effectsIn(rd Ready, k EffectKind) []Effect {
	var out []Effect
	for _, e := range rd.Effects {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}
