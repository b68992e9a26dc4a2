package leader_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/node"
	"github.com/regent-go/regent/testing/loopback"
)

// settle bounds every wait for an election outcome: generous for a loaded
// 2-core machine, though a loopback election takes well under a second.
const settle = 30 * time.Second

const poll = 20 * time.Millisecond

// member is the user type of these tests: it records its callbacks so tests
// can assert what a user would see.
type member struct {
	leader.Actor

	opts    leader.Options
	confirm func() (bool, error)
	onLead  func() error
	events  *eventLog
	// holdLong, when set, replaces every delay the actor asks for its
	// downs (DownDelayOnLoss): what it lets wait then waits that long.
	holdLong time.Duration
}

func (m *member) DownDelayOnLoss(lost gen.Atom) time.Duration {
	d := m.Actor.DownDelayOnLoss(lost)
	if d > 0 && m.holdLong > 0 {
		return m.holdLong
	}
	return d
}

// eventLog collects the callbacks of every member of a test cluster. The lock
// guards entries; actors append from their own goroutines, the test reads.
type eventLog struct {
	mu      sync.Mutex
	entries []string
}

func (l *eventLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, fmt.Sprintf(format, args...))
}

func (l *eventLog) count(entry string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.entries {
		if e == entry {
			n++
		}
	}
	return n
}

func (m *member) Init(args ...any) (leader.Options, error) { return m.opts, nil }

func (m *member) HandleConfirmLeader() (bool, error) {
	if m.confirm != nil {
		return m.confirm()
	}
	return true, nil
}

func (m *member) HandleBecomeLeader() error {
	m.events.add("%s leader", m.Node().Name())
	if m.onLead != nil {
		return m.onLead()
	}
	return nil
}

func (m *member) HandleBecomeFollower(l gen.PID) error {
	m.events.add("%s follower", m.Node().Name())
	return nil
}

func (m *member) HandleCall(from gen.PID, ref gen.Ref, request any) (any, error) {
	switch r := request.(type) {
	case string:
		switch r {
		case "leader?":
			return m.IsLeader(), nil
		case "rare?":
			return leader.RareFieldsMade(&m.Actor), nil
		}
	case broadcastRequest:
		failed, err := m.Broadcast(r.message)
		return broadcastResult{failed: failed, err: err}, nil
	case apiRequest:
		return apiResult{
			leader: m.Leader(), term: m.Term(), cluster: m.ClusterID(), peers: m.Peers(),
			peerCount: m.PeerCount(), bootstrap: m.Bootstrap(), token: m.FencingToken(),
			hasFirstPeer: len(m.Peers()) > 0 && m.HasPeer(m.Peers()[0]), hasSelf: m.HasPeer(m.PID()),
		}, nil
	}
	return nil, gen.ErrUnsupported
}

// HandleMessage records broadcast payloads so tests can count deliveries,
// and runs a blockFor: a handler of the user's that takes long.
func (m *member) HandleMessage(from gen.PID, message any) error {
	if b, ok := message.(blockFor); ok {
		<-b.release
		b.seen <- leadership{isLeader: m.IsLeader(), token: m.FencingToken(), leader: m.Leader()}
		return nil
	}
	if s, ok := message.(string); ok {
		m.events.add("%s got %s", m.Node().Name(), s)
	}
	return nil
}

// blockFor keeps the member's handler busy until release closes, then
// reports what the member's API says of its leadership.
type blockFor struct {
	release chan struct{}
	seen    chan leadership
}

type leadership struct {
	isLeader bool
	token    uint64
	leader   gen.PID
}

type broadcastRequest struct{ message any }
type broadcastResult struct {
	failed int
	err    error
}
type apiRequest struct{}
type apiResult struct {
	leader                gen.PID
	term                  uint64
	cluster               string
	peers                 []gen.PID
	peerCount             int
	bootstrap             []gen.ProcessID
	token                 uint64
	hasFirstPeer, hasSelf bool
}

func (m *member) HandleInspect(from gen.PID, item ...string) map[string]string {
	return map[string]string{"user:callbacks": "recorded"}
}

// testCluster is N nodes on loopback TCP, each running one member registered
// as "election".
type testCluster struct {
	t      *testing.T
	nodes  []gen.Node
	pids   []gen.PID
	events *eventLog
}

const memberName gen.Atom = "election"

// startNode starts a node listening on a free loopback port with the
// election's types registered (loopback.StartNode), and routes it to and
// from every node of the cluster.
func (c *testCluster) startNode(name gen.Atom) gen.Node {
	n, err := loopback.StartNode(name, loopback.Options{Cookie: "regent-test", Network: gen.NetworkOptions{Acceptor: gen.AcceptorOptions{Host: loopback.Host}}})
	require.NoError(c.t, err)
	for _, other := range c.nodes {
		if other == nil || !other.IsAlive() {
			continue
		}
		require.NoError(c.t, n.Network().AddRoute(other.Name(), other.Network().AcceptorAddress()))
		require.NoError(c.t, other.Network().AddRoute(n.Name(), n.Network().AcceptorAddress()))
	}
	return n
}

// newCluster starts size nodes and one member on each; opts(i) gives member
// i's options (its Bootstrap is filled with every other member unless set).
func newCluster(t *testing.T, size int, opts func(i int) leader.Options, configure ...func(i int, m *member)) *testCluster {
	c := &testCluster{t: t, events: &eventLog{}}
	for i := 0; i < size; i++ {
		c.nodes = append(c.nodes, c.startNode(gen.Atom(fmt.Sprintf("m%d@127.0.0.1", i))))
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.Stop()
		}
	})
	c.pids = make([]gen.PID, size)
	for i := 0; i < size; i++ {
		o := opts(i)
		if o.Bootstrap == nil {
			for j := 0; j < size; j++ {
				if j != i {
					o.Bootstrap = append(o.Bootstrap, gen.ProcessID{Name: memberName, Node: c.nodes[j].Name()})
				}
			}
		}
		c.pids[i] = c.spawn(i, o, configure...)
	}
	return c
}

func (c *testCluster) spawn(i int, o leader.Options, configure ...func(i int, m *member)) gen.PID {
	pid, err := c.nodes[i].SpawnRegister(memberName, func() gen.ProcessBehavior {
		m := &member{opts: o, events: c.events}
		for _, f := range configure {
			f(i, m)
		}
		return m
	}, gen.ProcessOptions{})
	require.NoError(c.t, err)
	return pid
}

// inspect reads member i's inspection, or nil when it cannot be read.
func (c *testCluster) inspect(i int, items ...string) map[string]string {
	if !c.nodes[i].IsAlive() {
		return nil
	}
	m, err := c.nodes[i].Inspect(c.pids[i], items...)
	if err != nil {
		c.t.Logf("inspect member %d (%s): %v", i, c.pids[i], err)
		return nil
	}
	return m
}

// leaders lists the members that believe they lead, among those in alive.
func (c *testCluster) leaders(alive []int) []int {
	var out []int
	for _, i := range alive {
		if c.inspect(i, "ergo:state")["ergo:state"] == "leader" {
			out = append(out, i)
		}
	}
	return out
}

// waitOneLeader waits until exactly one member among alive leads and every
// member of alive follows it at its term; it returns the leader and term.
func (c *testCluster) waitOneLeader(alive []int) (int, string) {
	var leaderIdx int
	var term string
	require.Eventually(c.t, func() bool {
		ls := c.leaders(alive)
		if len(ls) != 1 {
			return false
		}
		leaderIdx = ls[0]
		want := c.inspect(leaderIdx, "ergo:term", "ergo:leader_node")
		term = want["ergo:term"]
		for _, i := range alive {
			got := c.inspect(i, "ergo:term", "ergo:leader_node")
			if got["ergo:term"] != term || got["ergo:leader_node"] != string(c.nodes[leaderIdx].Name()) {
				return false
			}
		}
		return true
	}, settle, poll, "no single agreed leader among %v", alive)
	return leaderIdx, term
}

func all(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func without(list []int, drop ...int) []int {
	var out []int
	for _, v := range list {
		keep := true
		for _, d := range drop {
			if v == d {
				keep = false
			}
		}
		if keep {
			out = append(out, v)
		}
	}
	return out
}

func defaults(int) leader.Options { return leader.Options{ClusterID: "test"} }

var errRefused = errors.New("test: refusing leadership")

func startPlainNode(name gen.Atom) (gen.Node, error) {
	return node.Start(name, gen.NodeOptions{
		Network: gen.NetworkOptions{Cookie: "regent-test", Acceptor: gen.AcceptorOptions{Host: "127.0.0.1"}},
		Log:     gen.LogOptions{Level: gen.LogLevelError},
	})
}
