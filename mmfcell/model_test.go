//go:build unix

package mmfcell

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// model is the cell's specification, written as plainly as possible, for a
// single caller at a time.
type model struct {
	host      *fakeHost
	leader    uint32
	term      uint32
	heartbeat uint64
	epoch     uint64
	leaderFP  uint32 // fingerprint of the incarnation that claimed
}

func (m *model) sameIncarnation(fp uint32) bool {
	return m.leaderFP == 0 || fp == 0 || m.leaderFP == fp
}

func (m *model) fit(grace uint64) bool {
	if m.epoch > m.heartbeat && m.epoch-m.heartbeat > grace {
		return false
	}
	state := m.host.probe(m.leader)
	return state.Alive && m.sameIncarnation(state.Fingerprint)
}

func (m *model) holds(pid uint32) bool {
	return pid != NoLeader && pid == m.leader && m.sameIncarnation(m.host.probe(pid).Fingerprint)
}

func (m *model) claim(pid uint32, grace uint64) bool {
	if pid == NoLeader {
		return false
	}
	fp := m.host.probe(pid).Fingerprint
	if pid == m.leader && m.sameIncarnation(fp) {
		return true
	}
	if m.leader != NoLeader && pid > m.leader && m.fit(grace) {
		return false
	}
	m.leader, m.term, m.leaderFP = pid, m.term+1, fp
	m.heartbeat = max(m.heartbeat, m.epoch)
	return true
}

func (m *model) beat(pid uint32) bool {
	if !m.holds(pid) {
		return false
	}
	m.heartbeat = max(m.heartbeat, m.epoch)
	return true
}

func (m *model) stepDown(pid uint32) bool {
	if !m.holds(pid) {
		return false
	}
	m.leader = NoLeader
	return true
}

func (m *model) snapshot(grace uint64) Snapshot {
	s := Snapshot{Leader: m.leader, Term: m.term, Heartbeat: m.heartbeat, Epoch: m.epoch}
	if m.leader != NoLeader {
		s.Fingerprint = m.leaderFP
		s.Stale = !m.fit(grace)
	}
	return s
}

func TestCellMatchesModel(t *testing.T) {
	t.Run("any sequence of claims, beats, step-downs, ticks, deaths and PID reuse behaves as the specification", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) {
			host := newFakeHost(1, 2, 3, 4, 5)
			c := newCell(t, WithProbe(host.probe))
			m := &model{host: host}
			pid := rapid.Uint32Range(0, 6)
			grace := rapid.Uint64Range(0, 4)
			nextFP := uint32(1000)

			rt.Repeat(map[string]func(*rapid.T){
				"claim": func(rt *rapid.T) {
					p, g := pid.Draw(rt, "pid"), grace.Draw(rt, "grace")
					require.Equal(rt, m.claim(p, g), c.TryClaim(p, g), "TryClaim(%d, %d)", p, g)
				},
				"beat": func(rt *rapid.T) {
					p := pid.Draw(rt, "pid")
					require.Equal(rt, m.beat(p), c.Beat(p), "Beat(%d)", p)
				},
				"step down": func(rt *rapid.T) {
					p := pid.Draw(rt, "pid")
					require.Equal(rt, m.stepDown(p), c.StepDown(p), "StepDown(%d)", p)
				},
				"tick": func(rt *rapid.T) {
					m.epoch++
					require.Equal(rt, m.epoch, c.TickEpoch())
				},
				"kill": func(rt *rapid.T) {
					host.kill(pid.Draw(rt, "pid"))
				},
				"start, perhaps reusing a PID": func(rt *rapid.T) {
					nextFP++
					host.start(pid.Draw(rt, "pid"), nextFP)
				},
				"": func(rt *rapid.T) {
					g := grace.Draw(rt, "grace")
					require.Equal(rt, m.snapshot(g), c.Snapshot(g))
					require.Equal(rt, m.leader != NoLeader && !m.fit(g), c.IsStale(g))
				},
			})
		})
	})
}
