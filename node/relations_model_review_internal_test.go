package node

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// relationsModel is what relations should hold, kept the plain way: a map
// of records per target, and per local watcher the records it holds.
type relationsModel struct {
	plain    map[target]map[plainWatcher]bool
	calls    map[target]map[watcher]bool
	watching map[gen.PID]map[watchEntry]bool
}

func (m *relationsModel) add(self gen.Atom, t target, w watcher) {
	if w.kind == relCall {
		if m.calls[t] == nil {
			m.calls[t] = map[watcher]bool{}
		}
		m.calls[t][w] = true
		return
	}
	if m.plain[t] == nil {
		m.plain[t] = map[plainWatcher]bool{}
	}
	m.plain[t][plainWatcher{w.pid, w.kind}] = true
	if w.pid.Node == self {
		if m.watching[w.pid] == nil {
			m.watching[w.pid] = map[watchEntry]bool{}
		}
		m.watching[w.pid][watchEntry{t, w.kind}] = true
	}
}

func (m *relationsModel) remove(t target, w watcher) bool {
	if w.kind == relCall {
		if !m.calls[t][w] {
			return false
		}
		delete(m.calls[t], w)
		if len(m.calls[t]) == 0 {
			delete(m.calls, t)
		}
		return true
	}
	pw := plainWatcher{w.pid, w.kind}
	if !m.plain[t][pw] {
		return false
	}
	delete(m.plain[t], pw)
	if len(m.plain[t]) == 0 {
		delete(m.plain, t)
	}
	if mine := m.watching[w.pid]; mine != nil {
		delete(mine, watchEntry{t, w.kind})
		if len(mine) == 0 {
			delete(m.watching, w.pid)
		}
	}
	return true
}

func sortedKeys[K comparable](m map[K]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, fmt.Sprint(k))
	}
	slices.Sort(out)
	return out
}

func sortedElems[T comparable](s smallSet[T]) []string {
	out := []string{}
	for _, v := range s.appendTo(nil) {
		out = append(out, fmt.Sprint(v))
	}
	slices.Sort(out)
	return out
}

// check compares r with the model: every set holds what the model says, and
// no empty set stays in a map.
func (m *relationsModel) check(t *testing.T, r *relations, step int) {
	t.Helper()
	for pid, s := range r.byPID {
		require.NotZero(t, s.len(), "step %d: an empty set kept for %s", step, pid)
		require.Equal(t, s.len(), len(s.appendTo(nil)), "step %d: len and elements disagree for %s", step, pid)
		for _, w := range s.appendTo(nil) {
			require.False(t, r.watchedOnly(pidTarget(pid), w.pid), "step %d: %v on %s kept twice", step, w, pid)
		}
	}
	for tg, s := range r.targets {
		require.NotZero(t, s.len(), "step %d: an empty set kept for %v", step, tg)
	}
	plain := map[target][]string{}
	r.eachPlain(func(tg target, w plainWatcher) {
		plain[tg] = append(plain[tg], fmt.Sprint(w))
	})
	for _, ws := range plain {
		slices.Sort(ws)
	}
	want := map[target][]string{}
	for tg, ws := range m.plain {
		want[tg] = sortedKeys(ws)
	}
	require.Equal(t, want, plain, "step %d: monitors and links", step)

	equalSets(t, step, "pending calls", r.calls, m.calls)
	equalSets(t, step, "what each local watcher watches", r.watching, m.watching)
}

// equalSets requires the sets in got to hold what want holds, key by key,
// with no empty set kept.
func equalSets[K, E comparable](t *testing.T, step int, what string, got map[K]smallSet[E], want map[K]map[E]bool) {
	t.Helper()
	g, w := map[K][]string{}, map[K][]string{}
	for k, s := range got {
		require.NotZero(t, s.len(), "step %d: an empty set kept in %s", step, what)
		g[k] = sortedElems(s)
	}
	for k, es := range want {
		w[k] = sortedKeys(es)
	}
	require.Equal(t, w, g, "step %d: %s", step, what)
}

// Review: the relations keep their sets by value, reading one from its map,
// changing the copy and storing it back, while what lies beyond the first
// element sits behind a pointer the copy shares. Driven at random through
// adds, removals and a target's end, with sets growing past smallSetMax
// into a map and shrinking again, they always hold what a plain model
// holds, and every local watcher's own set stays in step.
func TestReviewRelationsMatchAPlainModel(t *testing.T) {
	const self = gen.Atom("n1@h")
	var targets []target
	for i := range 3 {
		targets = append(targets, pidTarget(gen.PID{Node: self, ID: uint64(100 + i), Creation: 1}))
	}
	targets = append(targets, pidTarget(gen.PID{Node: "n2@h", ID: 200, Creation: 1}),
		target{name: "svc", node: self}, target{node: "n3@h"})
	var pids []gen.PID
	for i := range 14 {
		node := self
		if i%4 == 3 {
			node = gen.Atom(fmt.Sprintf("r%d@h", i))
		}
		pids = append(pids, gen.PID{Node: node, ID: uint64(1 + i), Creation: 1})
	}
	for seed := uint64(1); seed <= 8; seed++ {
		r := &relations{node: &node{name: self}}
		m := &relationsModel{plain: map[target]map[plainWatcher]bool{}, calls: map[target]map[watcher]bool{},
			watching: map[gen.PID]map[watchEntry]bool{}}
		rng := rand.New(rand.NewPCG(seed, 7))
		pick := func() (target, watcher) {
			tg := targets[rng.IntN(len(targets))]
			w := watcher{pid: pids[rng.IntN(len(pids))], kind: relKind(1 + rng.IntN(3))}
			if w.kind == relCall {
				w.ref = gen.Ref{Node: w.pid.Node, ID: [3]uint64{uint64(rng.IntN(3))}}
			}
			return tg, w
		}
		for step := range 1500 {
			switch op := rng.IntN(10); {
			case op < 5:
				tg, w := pick()
				r.add(tg, w)
				m.add(self, tg, w)
			case op < 9:
				tg, w := pick()
				require.Equal(t, m.remove(tg, w), r.remove(tg, w), "seed %d step %d: remove %v %v", seed, step, tg, w)
			default:
				tg := targets[rng.IntN(len(targets))]
				r.mu.Lock()
				got := r.takeTargetLocked(tg, nil)
				r.mu.Unlock()
				var wantN int
				for w := range maps.Keys(m.plain[tg]) {
					m.remove(tg, w.watcher())
					wantN++
				}
				for w := range maps.Keys(m.calls[tg]) {
					m.remove(tg, w)
					wantN++
				}
				require.Len(t, got, wantN, "seed %d step %d: a target's end takes each of its watchers once", seed, step)
			}
			m.check(t, r, step)
		}
	}
}

// A local process's monitor of a process on another node, by PID, is
// recorded once, in the watcher's own set: every election member holds one
// per peer, and a second record keyed by the target cost ~700 bytes per
// member. It is still found by everything that needs it.
func TestRemotePIDWatchIsRecordedOnce(t *testing.T) {
	const self = gen.Atom("n1@h")
	r := &relations{node: &node{name: self}}
	peer := pidTarget(gen.PID{Node: "n2@h", ID: 9, Creation: 1})
	w := watcher{pid: gen.PID{Node: self, ID: 1, Creation: 1}, kind: relMonitor}
	r.add(peer, w)
	assert.Empty(t, r.byPID, "no record keyed by the remote target")
	assert.Empty(t, r.targets)
	mine := r.watching[w.pid]
	assert.Equal(t, 1, mine.len())

	var seen []relEntry
	r.eachPlain(func(tg target, pw plainWatcher) { seen = append(seen, relEntry{tg, pw.watcher()}) })
	assert.Equal(t, []relEntry{{peer, w}}, seen, "a lost connection's scan finds it")
	assert.False(t, r.remove(peer, watcher{pid: w.pid, kind: relLink}), "a link it never held")
	assert.True(t, r.remove(peer, w), "the down frame's removal finds it")
	assert.False(t, r.remove(peer, w), "once")
	assert.Empty(t, r.watching)

	r.add(peer, w)
	r.mu.Lock()
	taken := r.takeTargetLocked(peer, nil)
	r.mu.Unlock()
	assert.Equal(t, []relEntry{{peer, w}}, taken)
	assert.Empty(t, r.watching)
}
