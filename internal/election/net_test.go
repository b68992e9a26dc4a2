package election

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// The test network: cores on a virtual clock, messages in a FIFO queue, timers
// as deadlines. Everything is deterministic for a given seed.

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const testCluster = "test"

func nodeName(i int) gen.Atom { return gen.Atom(fmt.Sprintf("n%d@host", i)) }

func procID(node gen.Atom) gen.ProcessID { return gen.ProcessID{Name: "regent", Node: node} }

// testConfig is a config for node with the document's default timings.
func testConfig(node gen.Atom, seed uint64) Config {
	return Config{
		ClusterID:          testCluster,
		Self:               procID(node),
		MinClusterSize:     3,
		ElectionTimeoutMin: 150 * time.Millisecond,
		ElectionTimeoutMax: 300 * time.Millisecond,
		HeartbeatInterval:  50 * time.Millisecond,
		GhostTTL:           5 * time.Second,
		Rand:               rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
}

type envelope struct {
	from gen.PID
	to   Outbound
	msg  any
}

type simNode struct {
	name    gen.Atom
	pid     gen.PID
	core    *Core
	up      bool
	timers  map[TimerKind]armed
	effects []Effect // every effect, in order
	sent    []Outbound
	hs      HardState
	// confirm answers HandleConfirmLeader; nil grants.
	confirm func(term uint64) (bool, error)
	// failLeader makes HandleBecomeLeader fail.
	failLeader error
}

type armed struct {
	t  Timer
	at time.Time
}

// tb is what the network needs of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	FailNow()
}

type network struct {
	t     tb
	now   time.Time
	nodes map[gen.Atom]*simNode
	names []gen.Atom
	queue []envelope
	cut   map[[2]gen.Atom]bool // pairs that cannot talk; messages are lost silently
	rand  *rand.Rand
	// leads records every protocol leadership by lineage and term, visible
	// every published one by term: one leader per lineage and term always,
	// and one visible leader per term when MinClusterSize is above half the
	// members (two agreed clusters cannot both form).
	leads   map[lineageTerm]gen.Atom
	visible map[uint64]gen.Atom
	// agreed records every lineage that became agreed: with MinClusterSize
	// above half the members, one at most.
	agreed map[Lineage]gen.Atom
	// allowFatal lets a test provoke a Fatal effect on purpose.
	allowFatal bool
	// lose, when set, drops the messages it reports true for, as a lossy
	// link would: a test uses it to keep one member from hearing one thing.
	lose func(from, to gen.Atom, msg any) bool
	// onReady, when set, sees every Ready a member hands out, before the
	// network acts on it.
	onReady func(sn *simNode, rd Ready)
}

type lineageTerm struct {
	lineage Lineage
	term    uint64
}

// newNetwork starts n cores that know each other through Bootstrap; tune
// edits each config before New.
func newNetwork(t tb, n int, seed uint64, tune func(*Config)) *network {
	nw := &network{
		t: t, now: epoch, nodes: map[gen.Atom]*simNode{}, cut: map[[2]gen.Atom]bool{},
		rand: rand.New(rand.NewPCG(seed, 7)), leads: map[lineageTerm]gen.Atom{}, visible: map[uint64]gen.Atom{},
		agreed: map[Lineage]gen.Atom{},
	}
	var all []gen.ProcessID
	for i := 1; i <= n; i++ {
		all = append(all, procID(nodeName(i)))
	}
	for i := 1; i <= n; i++ {
		cfg := testConfig(nodeName(i), seed*100+uint64(i))
		cfg.Bootstrap = all
		if tune != nil {
			tune(&cfg)
		}
		nw.add(cfg, HardState{})
	}
	return nw
}

// add starts a core with cfg (and persisted hs) on a fresh PID.
func (nw *network) add(cfg Config, hs HardState) *simNode {
	name := cfg.Self.Node
	creation := int64(1)
	if old := nw.nodes[name]; old != nil {
		creation = old.pid.Creation + 1
	} else {
		nw.names = append(nw.names, name)
	}
	pid := gen.PID{Node: name, ID: 1000, Creation: creation}
	core, err := New(cfg, pid, hs, nw.now)
	require.NoError(nw.t, err)
	sn := &simNode{name: name, pid: pid, core: core, up: true, timers: map[TimerKind]armed{}, hs: hs}
	nw.nodes[name] = sn
	nw.process(sn)
	return sn
}

func (nw *network) node(i int) *simNode { return nw.nodes[nodeName(i)] }

// process handles every Ready of sn as a shell would.
func (nw *network) process(sn *simNode) {
	for sn.up && sn.core.HasReady() {
		rd := sn.core.Ready()
		if nw.onReady != nil {
			nw.onReady(sn, rd)
		}
		if rd.HardState != nil {
			sn.hs = *rd.HardState
		}
		for _, op := range rd.Timers {
			if op.Cancel {
				if cur, ok := sn.timers[op.Timer.Kind]; ok && cur.t == op.Timer {
					delete(sn.timers, op.Timer.Kind)
				}
				continue
			}
			sn.timers[op.Timer.Kind] = armed{t: op.Timer, at: nw.now.Add(op.After)}
		}
		failed := false
		for _, e := range rd.Effects {
			sn.effects = append(sn.effects, e)
			switch e.Kind {
			case EffectConfirm:
				ok, err := true, error(nil)
				if sn.confirm != nil {
					ok, err = sn.confirm(e.Term)
				}
				sn.core.ConfirmResult(nw.now, e.Term, ok, err)
			case EffectBecomeLeader:
				if sn.failLeader != nil {
					sn.core.BecomeLeaderFailed(nw.now, sn.failLeader)
					failed = true
				} else if 2*sn.core.cfg.MinClusterSize > len(nw.names) {
					if prev, ok := nw.visible[e.Term]; ok && prev != sn.name {
						nw.t.Fatalf("two visible leaders in term %d: %s and %s", e.Term, prev, sn.name)
					}
					nw.visible[e.Term] = sn.name
				}
			case EffectFatal:
				if !nw.allowFatal {
					nw.t.Fatalf("%s stopped: %v", sn.name, e.Err)
				}
			}
			if failed {
				break
			}
		}
		if failed {
			sn.up = false // the shell terminates the actor
			return
		}
		nw.checkLeads(sn)
		for _, out := range rd.Messages {
			sn.sent = append(sn.sent, out)
			nw.transmit(sn, out)
		}
	}
}

// checkLeads fails when sn leads a lineage and term another member led, or
// when a second lineage becomes agreed although MinClusterSize exceeds half
// the members.
func (nw *network) checkLeads(sn *simNode) {
	v, ok := sn.core.View()
	if ok && v.Stamp.Agreed && nw.agreed[v.Stamp.Lineage] == "" {
		nw.agreed[v.Stamp.Lineage] = sn.name
		if 2*sn.core.cfg.MinClusterSize > len(nw.names) && len(nw.agreed) > 1 {
			nw.t.Fatalf("a second cluster agreed although MinClusterSize %d exceeds half of %d members: %v",
				sn.core.cfg.MinClusterSize, len(nw.names), nw.agreed)
		}
	}
	if !sn.core.IsProtocolLeader() {
		return
	}
	k := lineageTerm{v.Stamp.Lineage, sn.core.Term()}
	if prev, ok := nw.leads[k]; ok && prev != sn.name {
		nw.t.Fatalf("two leaders of lineage %s in term %d: %s and %s", k.lineage, k.term, prev, sn.name)
	}
	nw.leads[k] = sn.name
}

// transmit queues out, or reports a failed send when the target is down.
func (nw *network) transmit(sn *simNode, out Outbound) {
	to := out.To.Node
	if to == "" {
		to = out.ToName.Node
	}
	dst := nw.nodes[to]
	if dst == nil || !dst.up || (out.To != (gen.PID{}) && out.To != dst.pid) {
		sn.core.SendFailed(nw.now, to, fmt.Errorf("send to %s: %w", to, gen.ErrNoConnection))
		return
	}
	if nw.cut[[2]gen.Atom{sn.name, to}] || (nw.lose != nil && nw.lose(sn.name, to, out.Message)) {
		return
	}
	nw.queue = append(nw.queue, envelope{from: sn.pid, to: out, msg: out.Message})
}

// deliver hands the i-th queued message to its receiver.
func (nw *network) deliver(i int) {
	env := nw.queue[i]
	nw.queue = slices.Delete(nw.queue, i, i+1)
	to := env.to.To.Node
	if to == "" {
		to = env.to.ToName.Node
	}
	dst := nw.nodes[to]
	if dst == nil || !dst.up || nw.cut[[2]gen.Atom{env.from.Node, to}] ||
		(env.to.To != (gen.PID{}) && env.to.To != dst.pid) {
		return
	}
	dst.core.Step(nw.now, env.from, env.msg)
	nw.process(dst)
}

// flush delivers every queued message, including those sent in reply.
func (nw *network) flush() {
	for n := 0; len(nw.queue) > 0; n++ {
		require.Less(nw.t, n, 100000, "messages never stop")
		nw.deliver(0)
	}
}

// nextTimer finds the earliest armed timer of an up node.
func (nw *network) nextTimer() (*simNode, armed, bool) {
	var best *simNode
	var bt armed
	for _, name := range nw.names {
		sn := nw.nodes[name]
		if !sn.up {
			continue
		}
		for k := range timerKinds {
			if a, ok := sn.timers[k]; ok && (best == nil || a.at.Before(bt.at)) {
				best, bt = sn, a
			}
		}
	}
	return best, bt, best != nil
}

// fire moves the clock to a's deadline and fires it on sn.
func (nw *network) fire(sn *simNode, a armed) {
	if a.at.After(nw.now) {
		nw.now = a.at
	}
	delete(sn.timers, a.t.Kind)
	sn.core.Tick(nw.now, a.t)
	nw.process(sn)
}

// run advances the clock by d, firing timers in order and delivering every
// message at once (zero latency).
func (nw *network) run(d time.Duration) {
	end := nw.now.Add(d)
	nw.flush()
	for {
		sn, a, ok := nw.nextTimer()
		if !ok || a.at.After(end) {
			break
		}
		nw.fire(sn, a)
		nw.flush()
	}
	nw.now = end
}

// toggleStorage makes a working disk fail and a failing one recover.
func toggleStorage(c *Core, now time.Time) {
	if c.StorageFailing() {
		c.StorageRecovered(now)
	} else {
		c.StorageFailed(now, errors.New("test: disk full"))
	}
}

// input applies f to sn's core at the current time and handles the result.
func (nw *network) input(sn *simNode, f func(c *Core, now time.Time)) {
	f(sn.core, nw.now)
	nw.process(sn)
}

// leaders lists the up members that lead.
func (nw *network) leaders() []*simNode {
	var out []*simNode
	for _, name := range nw.names {
		if sn := nw.nodes[name]; sn.up && sn.core.IsLeader() {
			out = append(out, sn)
		}
	}
	return out
}

// settle runs until exactly one leader exists, failing after limit.
func (nw *network) settle(limit time.Duration) *simNode {
	nw.t.Helper()
	end := nw.now.Add(limit)
	for nw.now.Before(end) {
		nw.run(10 * time.Millisecond)
		if l := nw.leaders(); len(l) == 1 && nw.agree(l[0]) {
			return l[0]
		}
	}
	nw.t.Fatalf("no single leader after %s: %v", limit, nw.roles())
	return nil
}

// agree reports whether every up member connected to l recognises it.
func (nw *network) agree(l *simNode) bool {
	for _, name := range nw.names {
		sn := nw.nodes[name]
		if sn.up && !nw.cut[[2]gen.Atom{l.name, name}] && sn.core.Leader() != l.pid {
			return false
		}
	}
	return true
}

func (nw *network) roles() map[gen.Atom]string {
	out := map[gen.Atom]string{}
	for _, name := range nw.names {
		sn := nw.nodes[name]
		out[name] = fmt.Sprintf("%s@%d up=%v", sn.core.Role(), sn.core.Term(), sn.up)
	}
	return out
}

// isolate cuts every link between the group and the rest; heal restores all.
func (nw *network) isolate(group ...*simNode) {
	in := map[gen.Atom]bool{}
	for _, g := range group {
		in[g.name] = true
	}
	for _, a := range nw.names {
		for _, b := range nw.names {
			if in[a] != in[b] {
				nw.cut[[2]gen.Atom{a, b}] = true
			}
		}
	}
}

func (nw *network) heal() { nw.cut = map[[2]gen.Atom]bool{} }

// crash stops sn and tells every monitor with reason.
func (nw *network) crash(sn *simNode, reason error) {
	sn.up = false
	for _, name := range nw.names {
		o := nw.nodes[name]
		if o.up && o.core.HasPeer(sn.pid) {
			nw.input(o, func(c *Core, now time.Time) { c.PeerDown(now, sn.pid, reason) })
		}
	}
}

// effectsOf lists sn's effects of kind k.
func effectsOf(sn *simNode, k EffectKind) []Effect {
	var out []Effect
	for _, e := range sn.effects {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// sentOf lists the messages of type T that sn sent.
func sentOf[T any](sn *simNode) []Outbound {
	var out []Outbound
	for _, o := range sn.sent {
		if _, ok := o.Message.(T); ok {
			out = append(out, o)
		}
	}
	return out
}

var errCrashed = errors.New("test: process crashed")

// other returns the first member that is not l.
func (nw *network) other(l *simNode) *simNode {
	for _, name := range nw.names {
		if sn := nw.nodes[name]; sn != l {
			return sn
		}
	}
	return nil
}

// settledLeader starts n members, elects a leader and lets every follower
// acknowledge it a few times.
func settledLeader(t tb, n int, seed uint64, tune func(*Config)) (*network, *simNode) {
	nw := newNetwork(t, n, seed, tune)
	l := nw.settle(5 * time.Second)
	nw.run(3 * l.core.cfg.HeartbeatInterval)
	return nw, l
}

// partition cuts every pair of members in different groups (numbers from 1);
// a member in no group is cut off alone. Links inside a group are restored.
func (nw *network) partition(groups ...[]int) {
	side := map[gen.Atom]int{}
	for g, group := range groups {
		for _, i := range group {
			side[nodeName(i)] = g + 1
		}
	}
	nw.cut = map[[2]gen.Atom]bool{}
	for ia, a := range nw.names {
		for ib, b := range nw.names {
			sa, oka := side[a]
			sb, okb := side[b]
			if a != b && (!oka || !okb || sa != sb) {
				_, _ = ia, ib
				nw.cut[[2]gen.Atom{a, b}] = true
			}
		}
	}
}

// runUntil runs in small steps until done, failing after limit.
func (nw *network) runUntil(what string, limit time.Duration, done func() bool) {
	nw.t.Helper()
	end := nw.now.Add(limit)
	for !done() {
		if !nw.now.Before(end) {
			nw.t.Fatalf("%s: not within %s: %v", what, limit, nw.roles())
		}
		nw.run(5 * time.Millisecond)
	}
}

// makeLeader hands visible leadership to member i from a leader that can
// reach it, retrying until it holds.
func (nw *network) makeLeader(i int) *simNode {
	nw.t.Helper()
	want := nw.node(i)
	nw.runUntil(fmt.Sprintf("%s leading", want.name), 20*time.Second, func() bool {
		if want.core.IsLeader() {
			return true
		}
		for _, l := range nw.leaders() {
			if !nw.cut[[2]gen.Atom{l.name, want.name}] {
				nw.input(l, func(c *Core, now time.Time) { _ = c.TransferLeadership(now, want.name) })
			}
		}
		return false
	})
	return want
}

// viewOf is member i's view, nil when it holds none.
func (nw *network) viewOf(i int) *View { return nw.node(i).core.view }
