package election

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/regent-go/regent/gen"
)

// Election safety under a hostile network, with no escape hatch: 3–7 cores
// whose Bootstrap lists differ (nested, overlapping, partial), any
// MinClusterSize, messages delivered in any order or lost, timers fired early
// or late, transitive and non-transitive cuts, lost-connection and real downs,
// restarts with durable state, storage failures, Join, Leave and handovers.
// The network fails the run on two protocol leaders of one lineage and term,
// on two visible leaders of one term when MinClusterSize exceeds half the
// members, and on any Fatal effect; the loop below checks that terms never
// decrease and no visible leader has a view below MinClusterSize.
func TestPropertyOneLeaderPerTermWhateverTheViews(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) { hostile(rt, false) })
}

// The same with a preferred leader, so handovers join the schedule.
func TestPropertyOneLeaderPerTermWithPreference(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) { hostile(rt, true) })
}

func hostile(rt *rapid.T, prefer bool) {
	n := rapid.IntRange(3, 7).Draw(rt, "members")
	seed := rapid.Uint64().Draw(rt, "seed")
	preVote := rapid.Bool().Draw(rt, "prevote")
	contact := rapid.Bool().Draw(rt, "contact evidence")
	fast := rapid.Bool().Draw(rt, "fastfailover")
	minSize := rapid.IntRange(1, n).Draw(rt, "min")
	ghost := time.Duration(rapid.IntRange(1, 4).Draw(rt, "ghost s")) * time.Second
	// Each member knows a random subset of the others (itself always).
	known := make([][]bool, n)
	for i := range n {
		known[i] = make([]bool, n)
		for j := range n {
			known[i][j] = i == j || rapid.IntRange(0, 3).Draw(rt, fmt.Sprintf("%d knows %d", i+1, j+1)) > 0
		}
	}
	var preference Preference
	if prefer {
		preference = rapid.SampledFrom([]Preference{{Kind: PreferHighestID}, {Kind: PreferOldest}}).Draw(rt, "prefer")
	}
	index := 0
	nw := newNetwork(rt, n, seed, func(c *Config) {
		c.DisablePreVote, c.DisableFastFailover, c.MinClusterSize, c.GhostTTL = !preVote, !fast, minSize, ghost
		if contact {
			c.Evidence = EvidenceContact
		}
		var boot []gen.ProcessID
		for j := range n {
			if known[index][j] {
				boot = append(boot, procID(nodeName(j+1)))
			}
		}
		c.Bootstrap = boot
		c.Prefer = preference
		c.Started = epoch.Add(-time.Duration(index) * time.Second)
		index++
	})
	lastTerm := map[gen.Atom]uint64{}
	pick := func(label string) *simNode {
		return nw.nodes[nw.names[rapid.IntRange(0, len(nw.names)-1).Draw(rt, label)]]
	}
	// Actions by weight: mostly deliveries and timers, so that faults strike
	// clusters that are electing and leading, not ones that never start.
	weights := []int{0: 55, 8: 3, 9: 22, 13: 2, 14: 2, 15: 2, 16: 3, 17: 2, 18: 2, 19: 2, 20: 2, 21: 1, 22: 1}
	var actions []int
	for a, w := range weights {
		for range w {
			actions = append(actions, a)
		}
	}
	steps := rapid.IntRange(100, 1000).Draw(rt, "steps")
	for i := 0; i < steps; i++ {
		switch actions[rapid.IntRange(0, len(actions)-1).Draw(rt, "action")] {
		case 0:
			if len(nw.queue) > 0 {
				nw.deliver(rapid.IntRange(0, len(nw.queue)-1).Draw(rt, "msg"))
			}
		case 8:
			if len(nw.queue) > 0 {
				j := rapid.IntRange(0, len(nw.queue)-1).Draw(rt, "lost")
				nw.queue = append(nw.queue[:j], nw.queue[j+1:]...)
			}
		case 9:
			if sn, a, ok := nw.nextTimer(); ok {
				nw.fire(sn, a)
			}
		case 13:
			// A timer fires early, as a slow shell would deliver others late.
			sn := pick("early")
			for k := range timerKinds {
				if a, ok := sn.timers[k]; ok && sn.up {
					a.at = nw.now
					nw.fire(sn, a)
					break
				}
			}
		case 14:
			var group []*simNode
			for _, name := range nw.names {
				if rapid.Bool().Draw(rt, "side") {
					group = append(group, nw.nodes[name])
				}
			}
			nw.isolate(group...)
		case 15:
			// A non-transitive cut: one pair only.
			a, b := pick("cut a"), pick("cut b")
			nw.cut[[2]gen.Atom{a.name, b.name}], nw.cut[[2]gen.Atom{b.name, a.name}] = true, true
		case 16:
			nw.heal()
		case 17:
			a, b := pick("observer"), pick("down")
			reason := error(gen.ErrNoConnection)
			if rapid.Bool().Draw(rt, "real") {
				reason = errCrashed
			}
			if a.up && a != b && b.pid != (gen.PID{}) {
				nw.input(a, func(c *Core, now time.Time) { c.PeerDown(now, b.pid, reason) })
			}
		case 18:
			sn := pick("restart")
			cfg := sn.core.cfg
			cfg.Rand = testConfig(sn.name, seed+uint64(i)).Rand
			cfg.Started = nw.now
			restarted := nw.add(cfg, sn.hs)
			if restarted.core.Term() < lastTerm[sn.name] {
				rt.Fatalf("%s restarted at term %d below %d", sn.name, restarted.core.Term(), lastTerm[sn.name])
			}
		case 19:
			a, b := pick("leaver"), pick("left")
			if a.up && a != b {
				nw.input(a, func(c *Core, now time.Time) {
					if err := c.Leave(now, b.name); err != nil {
						rt.Fatalf("leave: %v", err)
					}
				})
			}
		case 20:
			a, b := pick("joiner"), pick("joined")
			if a.up && a != b {
				nw.input(a, func(c *Core, now time.Time) {
					if err := c.Join(now, procID(b.name)); err != nil {
						rt.Fatalf("join: %v", err)
					}
				})
			}
		case 21:
			sn := pick("handover")
			if sn.up && sn.core.IsLeader() {
				nw.input(sn, func(c *Core, now time.Time) {
					if err := c.StepDown(now); err != nil && !errors.Is(err, gen.ErrNotAllowed) {
						rt.Fatalf("step down: %v", err)
					}
				})
			}
		case 22:
			sn := pick("storage")
			if sn.up {
				nw.input(sn, toggleStorage)
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
