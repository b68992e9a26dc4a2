package election

import (
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/regent-go/regent/gen"
)

// Election safety under a hostile network: 3–7 cores, messages delivered in
// any order, lost, timers fired early or late, partitions, lost-connection
// downs, restarts with persisted state, joins and handovers. At most one
// leader per term (checked on every BecomeLeader by the network), terms never
// decrease, and no leader while the view is below MinClusterSize.
func TestPropertyAtMostOneLeaderPerTerm(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) { hostile(rt, false, false) })
}

// The same with a preferred leader, so handovers to more preferred members
// (and restarts that change who is preferred) join the hostile schedule.
func TestPropertyAtMostOneLeaderPerTermWithPreference(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) { hostile(rt, false, true) })
}

// The same with views shrinking for real (Leave, real downs, ghost expiry):
// the document permits diverged views to elect separately, so only terms and
// MinClusterSize are checked.
func TestPropertyShrinkingViewsKeepTermsAndFloor(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) { hostile(rt, true, false) })
}

func hostile(rt *rapid.T, shrink, prefer bool) {
	n := rapid.IntRange(3, 7).Draw(rt, "members")
	seed := rapid.Uint64().Draw(rt, "seed")
	preVote := rapid.Bool().Draw(rt, "prevote")
	replies := rapid.Bool().Draw(rt, "replies")
	fast := rapid.Bool().Draw(rt, "fastfailover")
	minSize := rapid.IntRange(1, n).Draw(rt, "min")
	var preference Preference
	var stableFor time.Duration
	if prefer {
		preference = rapid.SampledFrom([]Preference{preferOldest, preferHighestID, preferLowestName}).Draw(rt, "prefer")
		stableFor = time.Duration(rapid.IntRange(1, 300).Draw(rt, "stable ms")) * time.Millisecond
	}
	nw := newNetwork(rt, n, seed, func(c *Config) {
		c.PreVote, c.FastFailover, c.MinClusterSize = preVote, fast, minSize
		if replies {
			c.Evidence = EvidenceReplies
		}
		c.GhostTTL = time.Hour
		if prefer {
			c.Prefer, c.PreferStableFor = preference, stableFor
			c.Started = epoch.Add(-time.Duration(rapid.IntRange(0, 3).Draw(rt, "age")) * time.Second)
		}
		if shrink {
			c.GhostTTL = time.Second
		}
	})
	nw.diverged = shrink
	lastTerm := map[gen.Atom]uint64{}
	pick := func(label string) *simNode {
		return nw.nodes[nw.names[rapid.IntRange(0, len(nw.names)-1).Draw(rt, label)]]
	}
	steps := rapid.IntRange(50, 400).Draw(rt, "steps")
	for i := 0; i < steps; i++ {
		switch rapid.IntRange(0, 19).Draw(rt, "action") {
		case 0, 1, 2, 3, 4, 5, 6:
			if len(nw.queue) > 0 {
				nw.deliver(rapid.IntRange(0, len(nw.queue)-1).Draw(rt, "msg"))
			}
		case 7:
			if len(nw.queue) > 0 {
				j := rapid.IntRange(0, len(nw.queue)-1).Draw(rt, "lost")
				nw.queue = append(nw.queue[:j], nw.queue[j+1:]...)
			}
		case 8, 9, 10, 11:
			if sn, a, ok := nw.nextTimer(); ok {
				nw.fire(sn, a)
			}
		case 12:
			// A timer fires early, as a slow shell would deliver it late to others.
			sn := pick("early")
			for _, k := range []TimerKind{TimerElection, TimerHeartbeat, TimerGhost} {
				if a, ok := sn.timers[k]; ok && sn.up {
					a.at = nw.now
					nw.fire(sn, a)
					break
				}
			}
		case 13:
			var group []*simNode
			for _, name := range nw.names {
				if rapid.Bool().Draw(rt, "side") {
					group = append(group, nw.nodes[name])
				}
			}
			nw.isolate(group...)
		case 14:
			nw.heal()
		case 15:
			a, b := pick("observer"), pick("down")
			reason := error(gen.ErrNoConnection)
			if shrink && rapid.Bool().Draw(rt, "real") {
				reason = errCrashed
			}
			if a.up && a != b {
				nw.input(a, func(c *Core, now time.Time) { c.PeerDown(now, b.pid, reason) })
			}
		case 16:
			sn := pick("restart")
			cfg := sn.core.cfg
			cfg.Rand = testConfig(sn.name, seed+uint64(i)).Rand
			if prefer {
				cfg.Started = nw.now
			}
			restarted := nw.add(cfg, sn.hs)
			if restarted.core.Term() < lastTerm[sn.name] {
				rt.Fatalf("%s restarted at term %d below %d", sn.name, restarted.core.Term(), lastTerm[sn.name])
			}
		case 17:
			a, b := pick("leaver"), pick("left")
			if shrink && a.up && a != b {
				nw.input(a, func(c *Core, now time.Time) {
					if err := c.Leave(now, b.name); err != nil {
						rt.Fatalf("leave: %v", err)
					}
				})
			}
		case 18:
			a, b := pick("joiner"), pick("joined")
			if a.up && a != b {
				nw.input(a, func(c *Core, now time.Time) {
					if err := c.Join(now, procID(b.name)); err != nil {
						rt.Fatalf("join: %v", err)
					}
				})
			}
		case 19:
			sn := pick("handover")
			if sn.up && sn.core.IsLeader() {
				nw.input(sn, func(c *Core, now time.Time) {
					if err := c.StepDown(now); err != nil && !errors.Is(err, gen.ErrNotAllowed) {
						rt.Fatalf("step down: %v", err)
					}
				})
			}
		}
		for _, name := range nw.names {
			sn := nw.nodes[name]
			if !sn.up {
				continue
			}
			if term := sn.core.Term(); term < lastTerm[name] {
				rt.Fatalf("%s term went back from %d to %d", name, lastTerm[name], term)
			}
			lastTerm[name] = sn.core.Term()
			if sn.core.IsLeader() && sn.core.ViewSize() < minSize {
				rt.Fatalf("%s leads a view of %d below MinClusterSize %d", name, sn.core.ViewSize(), minSize)
			}
		}
	}
}

// A healed cluster always converges to one leader (design invariant 5).
func TestPropertyHealedClusterConverges(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(3, 7).Draw(rt, "members")
		seed := rapid.Uint64().Draw(rt, "seed")
		preVote := rapid.Bool().Draw(rt, "prevote")
		nw := newNetwork(rt, n, seed, func(c *Config) {
			c.PreVote = preVote
			c.Evidence = EvidenceReplies
		})
		for i := rapid.IntRange(0, 5).Draw(rt, "splits"); i > 0; i-- {
			var group []*simNode
			for _, name := range nw.names {
				if rapid.Bool().Draw(rt, "side") {
					group = append(group, nw.nodes[name])
				}
			}
			nw.isolate(group...)
			nw.run(time.Duration(rapid.IntRange(0, 2000).Draw(rt, "ms")) * time.Millisecond)
		}
		nw.heal()
		nw.settle(30 * time.Second)
	})
}
