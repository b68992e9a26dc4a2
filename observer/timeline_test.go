package observer

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sampleOf builds a cluster report of members a@h, b@h, c@h: lead names
// the member that leads (at term), down the ones that do not answer, and
// started their elections_started counts.
type sampleOf struct {
	lead       string
	term       uint64
	down       []string
	gone       []string // left every view
	started    map[string]uint64
	quorumLoss map[string]uint64
}

func (s sampleOf) report() ClusterReport {
	c := ClusterReport{ID: "x"}
	for _, n := range []string{"a@h", "b@h", "c@h"} {
		if contains(s.gone, n) {
			continue
		}
		m := MemberReport{Node: n}
		switch {
		case contains(s.down, n):
			m.Error = "no connection"
		case n == s.lead:
			m.State, m.Term, m.LeaderNode = RoleLeader, s.term, n
		default:
			m.State, m.Term, m.LeaderNode = RoleFollower, s.term, s.lead
		}
		m.ElectionsStarted = s.started[n]
		m.QuorumLostStepDowns = s.quorumLoss[n]
		c.Members = append(c.Members, m)
	}
	c.analyze()
	return c
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func kindsOf(t Timeline) []string {
	var out []string
	for _, e := range t.Events {
		out = append(out, e.Kind)
	}
	return out
}

func TestTimeline(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	t.Run("the first leader is an election, with the campaigns it took", func(t *testing.T) {
		h := newHistory("x", at(0))
		h.observe(at(0), sampleOf{}.report())
		h.observe(at(100), sampleOf{lead: "a@h", term: 2, started: map[string]uint64{"a@h": 1, "b@h": 1}}.report())
		tl := h.timeline()
		assert.Equal(t, []string{EventElected}, kindsOf(tl))
		assert.Equal(t, uint64(2), tl.Events[0].Campaigns)
		assert.Contains(t, tl.Events[0].Message, "2 campaigns: a multi-round election")
		assert.Equal(t, []Tenure{{Leader: "a@h", Term: 2, From: at(100)}}, tl.Tenures)
	})

	t.Run("a leader that dies makes a failover that lasts from the first leaderless sample to the new leader", func(t *testing.T) {
		h := newHistory("x", at(0))
		h.observe(at(0), sampleOf{lead: "a@h", term: 1}.report())
		h.observe(at(100), sampleOf{down: []string{"a@h"}, term: 1}.report())
		d, ended := h.observe(at(350), sampleOf{lead: "b@h", term: 2, down: []string{"a@h"}, started: map[string]uint64{"b@h": 1}}.report())
		require.True(t, ended)
		assert.Equal(t, 250*time.Millisecond, d, "the metrics get the same duration")
		tl := h.timeline()
		assert.Equal(t, []string{EventElected, EventMemberGone, EventLeaderLost, EventFailover}, kindsOf(tl))
		f := tl.Events[3]
		assert.Equal(t, "a@h", f.Previous)
		assert.Equal(t, "b@h", f.Leader)
		assert.Equal(t, 250*time.Millisecond, f.Duration)
		assert.Equal(t, "failover: a@h → b@h, term 1 → 2, 250ms without a leader (1 campaign)", f.Message)
		assert.Equal(t, []Tenure{{Leader: "a@h", Term: 1, From: at(0), To: at(100)}, {Leader: "b@h", Term: 2, From: at(350)}}, tl.Tenures)
		assert.Equal(t, []GoneMember{{Node: "a@h", Since: at(100), LastError: "no connection"}}, tl.Gone)
	})

	t.Run("a leader that stays up and hands over between two samples is a handover", func(t *testing.T) {
		h := newHistory("x", at(0))
		h.observe(at(0), sampleOf{lead: "a@h", term: 1}.report())
		h.observe(at(100), sampleOf{lead: "b@h", term: 2}.report())
		tl := h.timeline()
		assert.Equal(t, []string{EventElected, EventHandover}, kindsOf(tl))
		assert.Equal(t, "handover: a@h passed leadership to b@h, term 1 → 2, within 100ms", tl.Events[1].Message)
	})

	t.Run("a leader that lost its quorum did not hand over", func(t *testing.T) {
		h := newHistory("x", at(0))
		h.observe(at(0), sampleOf{lead: "a@h", term: 1}.report())
		h.observe(at(100), sampleOf{lead: "b@h", term: 2, quorumLoss: map[string]uint64{"a@h": 1}}.report())
		assert.Equal(t, []string{EventElected, EventFailover}, kindsOf(h.timeline()))
	})

	t.Run("a member every view dropped stays listed as gone until it answers again", func(t *testing.T) {
		h := newHistory("x", at(0))
		h.observe(at(0), sampleOf{lead: "a@h", term: 1}.report())
		h.observe(at(100), sampleOf{lead: "a@h", term: 1, down: []string{"c@h"}}.report())
		h.observe(at(5000), sampleOf{lead: "a@h", term: 1, gone: []string{"c@h"}}.report())
		tl := h.timeline()
		assert.Equal(t, []GoneMember{{Node: "c@h", Since: at(100), LastError: ""}}, tl.Gone, "gone since it stopped answering")
		h.observe(at(6000), sampleOf{lead: "a@h", term: 1}.report())
		tl = h.timeline()
		assert.Empty(t, tl.Gone)
		assert.Equal(t, []string{EventElected, EventMemberGone, EventMemberBack}, kindsOf(tl))
		assert.Contains(t, tl.Events[2].Message, "after 5.9s gone")
	})

	t.Run("the history is bounded", func(t *testing.T) {
		h := newHistory("x", at(0))
		for i := range 2 * MaxTimelineEvents {
			lead := []string{"a@h", "b@h"}[i%2]
			h.observe(at(100*i), sampleOf{lead: lead, term: uint64(i + 1)}.report())
		}
		tl := h.timeline()
		assert.Len(t, tl.Events, MaxTimelineEvents)
		assert.Len(t, tl.Tenures, MaxTimelineTenures)
		last := tl.Tenures[len(tl.Tenures)-1]
		assert.Equal(t, uint64(2*MaxTimelineEvents), last.Term, fmt.Sprintf("the newest are kept: %+v", last))
	})
}
