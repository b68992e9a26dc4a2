package leader

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
	"github.com/regent-go/regent/node"
)

// These tests look at what the core is given, through Actor.observeStep;
// the tests of what users see are in coalescing_test.go.

// settleCoalescer bounds every wait here: generous for a loaded machine.
const settleCoalescer = 30 * time.Second

// stepLog records what each member's core was given.
type stepLog struct {
	mu    sync.Mutex
	steps map[gen.PID][]observed
}

type observed struct {
	from gen.PID
	msg  any
}

func (l *stepLog) observer(self gen.PID) func(time.Time, gen.PID, any) {
	return func(_ time.Time, from gen.PID, msg any) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.steps[self] = append(l.steps[self], observed{from: from, msg: msg})
	}
}

// snapshot copies what member got so far.
func (l *stepLog) snapshot(member gen.PID) []observed {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]observed(nil), l.steps[member]...)
}

// probe is a leader actor whose core inputs the test observes.
type probe struct {
	Actor
	opts Options
	log  *stepLog
}

func (p *probe) Init(...any) (Options, error) {
	p.more().observeStep = p.log.observer(p.PID())
	return p.opts, nil
}
func (p *probe) HandleBecomeLeader() error          { return nil }
func (p *probe) HandleBecomeFollower(gen.PID) error { return nil }

// startTestNodes starts n nodes on loopback with the election's types,
// routed to each other, stopped when the test ends; maxFrame, when given,
// is their MaxFrameSize.
func startTestNodes(t *testing.T, prefix string, n int, maxFrame ...int) []gen.Node {
	frameCap := 0 // the runtime's default
	if len(maxFrame) > 0 {
		frameCap = maxFrame[0]
	}
	var nodes []gen.Node
	t.Cleanup(func() {
		for _, nd := range nodes {
			nd.Stop()
		}
	})
	for i := range n {
		nd, err := node.Start(gen.Atom(fmt.Sprintf("%s%d@127.0.0.1", prefix, i)), gen.NodeOptions{
			Network: gen.NetworkOptions{Cookie: "regent-coalescer-test-cookie", MaxFrameSize: frameCap, Acceptor: gen.AcceptorOptions{Host: "127.0.0.1"}},
			Log:     gen.LogOptions{Level: gen.LogLevelError},
		})
		require.NoError(t, err)
		require.NoError(t, nd.Network().RegisterTypes(NetworkTypes()))
		for _, other := range nodes {
			require.NoError(t, nd.Network().AddRoute(other.Name(), other.Network().AcceptorAddress()))
			require.NoError(t, other.Network().AddRoute(nd.Name(), nd.Network().AcceptorAddress()))
		}
		nodes = append(nodes, nd)
	}
	return nodes
}

// spawnProbes starts one probe per node, registered as name, observed by log.
func spawnProbes(t *testing.T, nodes []gen.Node, name gen.Atom, log *stepLog, opts Options) []gen.PID {
	pids := make([]gen.PID, len(nodes))
	for i, nd := range nodes {
		o := opts
		for j, other := range nodes {
			if j != i {
				o.Bootstrap = append(o.Bootstrap, gen.ProcessID{Name: name, Node: other.Name()})
			}
		}
		var err error
		pids[i], err = nd.SpawnRegister(name, func() gen.ProcessBehavior { return &probe{opts: o, log: log} }, gen.ProcessOptions{})
		require.NoError(t, err)
	}
	return pids
}

// waitLeader waits until every member follows one leader and returns its index.
func waitLeader(t *testing.T, nodes []gen.Node, pids []gen.PID) int {
	leader := -1
	require.Eventually(t, func() bool {
		leader = -1
		var leaderNode string
		for i, nd := range nodes {
			in, err := ReadInspection(nd, pids[i], "ergo:state", "ergo:leader_node")
			if err != nil || in.LeaderNode == "" {
				return false
			}
			if leaderNode != "" && string(in.LeaderNode) != leaderNode {
				return false
			}
			leaderNode = string(in.LeaderNode)
			if in.Role == RoleLeader {
				leader = i
			}
		}
		return leader >= 0
	}, settleCoalescer, 20*time.Millisecond)
	return leader
}

// counts tallies what one member's core was given: heartbeat ticks, and
// heartbeats and acknowledgements by sender.
type counts struct {
	ticks      int
	heartbeats map[gen.PID]int
	acks       map[gen.PID]int
}

func tally(steps []observed) counts {
	c := counts{heartbeats: map[gen.PID]int{}, acks: map[gen.PID]int{}}
	for _, s := range steps {
		switch m := s.msg.(type) {
		case election.Timer:
			if m.Kind == election.TimerHeartbeat {
				c.ticks++
			}
		case election.MessageHeartbeat:
			c.heartbeats[s.from]++
		case election.MessageHeartbeatAck:
			c.acks[s.from]++
		case caughtUp:
			c.ticks += m.beats
			c.heartbeats[m.from] += m.heartbeats
			for from, n := range m.acks {
				c.acks[from] += n
			}
		}
	}
	return c
}

// The core still sees one heartbeat per peer per tick, stepped with the
// PID of the member that sent it, when heartbeats travel coalesced; and the
// leader one acknowledgement from each follower, and every tick, some
// caught up on at once (coalescer.go, rule 7). Most heartbeats are
// answered ahead, without waking their follower (coalescer.go, rule 6), and
// every answer ahead is the one the follower's core gives when it steps the
// heartbeat.
func TestCoalescedHeartbeatsReachTheCoreOncePerTickFromTheirSender(t *testing.T) {
	nodes := startTestNodes(t, "cs", 3)
	log := &stepLog{steps: map[gen.PID][]observed{}}
	pids := spawnProbes(t, nodes, "m", log, Options{ClusterID: "coalesced", HeartbeatInterval: 20, ElectionTimeoutMin: 300, ElectionTimeoutMax: 600})
	li := waitLeader(t, nodes, pids)
	leaderPID := pids[li]

	// A follower steps the heartbeats answered ahead when it next wakes
	// (coalescer.go, rule 6): an inspection wakes it, so the tallies below
	// count what its core has been given by then.
	wakeAll := func() {
		for i, pid := range pids {
			_, err := nodes[i].Inspect(pid, "ergo:term")
			require.NoError(t, err)
		}
	}
	wakeAll()
	coalBefore := make([]CoalescerStats, len(nodes))
	for i, nd := range nodes {
		coalBefore[i] = ReadCoalescer(nd)
	}
	before := tally(log.snapshot(leaderPID))
	followers := map[gen.PID]counts{}
	for i, pid := range pids {
		if i != li {
			followers[pid] = tally(log.snapshot(pid))
		}
	}
	// Let the leader tick fifty times more. A steady leader's ticks are
	// sent for it and reach its core when it next wakes (rule 7): the
	// inspection wakes it.
	require.Eventually(t, func() bool {
		_, err := nodes[li].Inspect(leaderPID, "ergo:term")
		return err == nil && tally(log.snapshot(leaderPID)).ticks >= before.ticks+50
	}, settleCoalescer, 20*time.Millisecond)
	after := tally(log.snapshot(leaderPID))
	wakeAll()
	ticks := after.ticks - before.ticks

	for pid, was := range followers {
		now := tally(log.snapshot(pid))
		got := now.heartbeats[leaderPID] - was.heartbeats[leaderPID]
		assert.InDelta(t, ticks, got, 3, "follower %s stepped %d heartbeats from the leader over %d ticks", pid, got, ticks)
		for from := range now.heartbeats {
			assert.Equal(t, leaderPID, from, "every heartbeat is stepped with the leader's PID")
		}
		acks := after.acks[pid] - before.acks[pid]
		assert.InDelta(t, ticks, acks, 3, "the leader stepped %d acknowledgements from %s over %d ticks", acks, pid, ticks)
	}
	for from := range after.acks {
		_, isFollower := followers[from]
		assert.True(t, isFollower, "every acknowledgement is stepped with a follower's PID, not %s", from)
	}
	for i, nd := range nodes {
		s := ReadCoalescer(nd)
		assert.Positive(t, s.EntriesIn, "node %d received coalesced entries", i)
		assert.Empty(t, s.Dropped, "node %d dropped nothing", i)
	}
	ls := ReadCoalescer(nodes[li])
	assert.Positive(t, ls.Held+ls.Taken+ls.PairAcksIn-coalBefore[li].Held-coalBefore[li].Taken-coalBefore[li].PairAcksIn,
		"the leader's acknowledgements waited for its ticks")
	assert.Positive(t, ls.BeatenAhead+ls.PairBeatsOut-coalBefore[li].BeatenAhead-coalBefore[li].PairBeatsOut, "the steady leader's ticks were sent for it")
	assert.Zero(t, ls.Mismatched, "every catch-up on a steady beat was taken by the core")
	for i, nd := range nodes {
		if i != li {
			s := ReadCoalescer(nd)
			answered, delivered := s.Answered-coalBefore[i].Answered, s.Deliveries-coalBefore[i].Deliveries
			assert.Greater(t, answered, delivered, "node %d: most heartbeats were answered ahead without waking the follower (answered %d, delivered %d)", i, answered, delivered)
			assert.Zero(t, s.Mismatched, "node %d: every answer ahead was the one the core gave", i)
		}
	}
}

// A node cannot speak for a member of another node: the sender of a
// coalesced entry is always on the node the frame came from, an entry
// whose message names another node is dropped and counted, and a batch from
// the node itself is dropped.
func TestCoalescerRefusesToLetANodeSpeakForAnother(t *testing.T) {
	nodes := startTestNodes(t, "sp", 3)
	log := &stepLog{steps: map[gen.PID][]observed{}}
	pids := spawnProbes(t, nodes, "m", log, Options{ClusterID: "spoof", DisableHeartbeatCoalescing: true})
	waitLeader(t, nodes, pids)
	a, b, c := nodes[0], nodes[1], nodes[2]
	target := pids[0]
	victim := pids[2] // the member on c that b pretends to be

	entry := func(senderNode gen.Atom) CoalescedHeartbeat {
		return CoalescedHeartbeat{
			CoalescedRoute: CoalescedRoute{FromID: victim.ID, FromCreation: victim.Creation, ToID: target.ID, ToCreation: target.Creation},
			// Another ClusterID, so the core drops what it is given.
			Message: MessageHeartbeat{Header: Header{ClusterID: "spoofed", Term: 1, From: gen.ProcessID{Name: "m", Node: senderNode}}},
		}
	}
	toA := gen.ProcessID{Name: CoalescerName, Node: a.Name()}

	t.Run("an entry whose message names another node is dropped", func(t *testing.T) {
		require.NoError(t, b.Send(toA, MessageHeartbeatBatch{Heartbeats: []CoalescedHeartbeat{entry(c.Name())}}))
		require.Eventually(t, func() bool { return ReadCoalescer(a).Dropped[dropForeignSender] == 1 }, settleCoalescer, 10*time.Millisecond)
	})
	t.Run("an entry is from the node the frame came from, whatever ID it names", func(t *testing.T) {
		require.NoError(t, b.Send(toA, MessageHeartbeatBatch{Heartbeats: []CoalescedHeartbeat{entry("")}}))
		spoofed := gen.PID{Node: b.Name(), ID: victim.ID, Creation: victim.Creation}
		require.Eventually(t, func() bool {
			for _, s := range log.snapshot(target) {
				if s.from == spoofed {
					return true
				}
			}
			return false
		}, settleCoalescer, 10*time.Millisecond, "the entry reached the core as sent by node %s", b.Name())
		for _, s := range log.snapshot(target) {
			if hb, ok := s.msg.(election.MessageHeartbeat); ok && hb.ClusterID == "spoofed" {
				assert.Equal(t, b.Name(), s.from.Node, "never as a member of %s", c.Name())
				assert.Equal(t, b.Name(), hb.From.Node, "and its message names node %s", b.Name())
			}
		}
	})
	t.Run("a batch from the node itself is dropped", func(t *testing.T) {
		require.NoError(t, a.Send(toA, MessageHeartbeatBatch{Heartbeats: []CoalescedHeartbeat{entry("")}}))
		require.Eventually(t, func() bool { return ReadCoalescer(a).Dropped[dropLocalBatch] == 1 }, settleCoalescer, 10*time.Millisecond)
	})
}

// The heartbeat grid never makes an interval longer than asked for, keeps
// steady intervals exactly on it, and gives each node its own phase.
func TestHeartbeatGrid(t *testing.T) {
	const d = 50 * time.Millisecond
	phase := gridPhase("n1@host")
	origin := gridEpoch.Add(time.Duration(phase % uint64(d)))
	t.Run("every wait is in (0, d]", func(t *testing.T) {
		for i := range 1000 {
			now := gridEpoch.Add(time.Duration(i) * 137 * time.Microsecond)
			after := onGrid(now, d, phase)
			require.Greater(t, after, time.Duration(0))
			require.LessOrEqual(t, after, d)
			require.Zero(t, mod(now.Add(after).Sub(origin), d), "it lands on the node's grid")
		}
	})
	t.Run("a tick armed just after a grid instant fires one interval after it", func(t *testing.T) {
		at := origin.Add(40 * d)
		assert.Equal(t, d-3*time.Millisecond, onGrid(at.Add(3*time.Millisecond), d, phase))
		assert.Equal(t, d, onGrid(at, d, phase))
	})
	t.Run("nodes have their own phases", func(t *testing.T) {
		assert.NotEqual(t, gridPhase("n1@host")%uint64(d), gridPhase("n2@host")%uint64(d))
	})
}

// Plus and Since cover every counter of CoalescerStats: bench scale sums
// nodes and windows with them, and a counter they missed would read 0
// there while the coalescer counts it.
func TestCoalescerStatsPlusAndSinceCoverEveryCounter(t *testing.T) {
	var a CoalescerStats
	v := reflect.ValueOf(&a).Elem()
	counters := 0
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Uint64 {
			counters++
			f.SetUint(uint64(10 + i))
		}
	}
	a.Dropped = map[string]uint64{"stale_pair": 3}
	require.Positive(t, counters)

	sum := reflect.ValueOf(a.Plus(a))
	zero := reflect.ValueOf(a.Since(a))
	later := reflect.ValueOf(a.Plus(a).Since(a))
	for i := range v.NumField() {
		if v.Field(i).Kind() != reflect.Uint64 {
			continue
		}
		name, n := v.Type().Field(i).Name, v.Field(i).Uint()
		assert.Equal(t, 2*n, sum.Field(i).Uint(), "Plus sums %s", name)
		assert.Zero(t, zero.Field(i).Uint(), "Since of itself is 0 for %s", name)
		assert.Equal(t, n, later.Field(i).Uint(), "Since takes the earlier %s away", name)
	}
	assert.Equal(t, map[string]uint64{"stale_pair": 6}, a.Plus(a).Dropped)
	assert.Empty(t, a.Since(a).Dropped)
	stopped, running := CoalescerStats{}, CoalescerStats{Running: true}
	assert.True(t, stopped.Plus(running).Running, "a sum runs when either does")
	assert.False(t, stopped.Since(running).Running, "a difference runs when the later reading does")
}
