package observer_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/node"
	"github.com/regent-go/regent/observer"
	"github.com/regent-go/regent/testing/loopback"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// settle bounds every wait for an election or a network event: generous for
// a loaded 2-core machine, though a loopback election takes about a second.
const settle = 30 * time.Second

const poll = 25 * time.Millisecond

// memberName is the registered name of every test cluster's leader actor.
const memberName gen.Atom = "election"

// member is the smallest useful leader actor: it takes its Options from its
// spawn arguments and does no singleton work.
type member struct{ leader.Actor }

func (m *member) Init(args ...any) (leader.Options, error) {
	return args[0].(leader.Options), nil
}

func (m *member) HandleBecomeLeader() error          { return nil }
func (m *member) HandleBecomeFollower(gen.PID) error { return nil }
func (m *member) HandleInspect(gen.PID, ...string) map[string]string {
	return map[string]string{"user:role": "observer test member"}
}

// clusterSeq keeps node names unique across the tests of one run.
var clusterSeq atomic.Int64

// testCluster is nodes on loopback TCP, each running one member of cluster id.
type testCluster struct {
	id    string
	lb    *loopback.Cluster
	nodes []gen.Node
	pids  []gen.PID
}

// startCluster starts size nodes named cN_i@127.0.0.1 on free ports, routed
// to each other (testing/loopback), and spawns a member of cluster id on
// each with the others as Bootstrap. The nodes stop when the test ends.
func startCluster(t *testing.T, id string, size int) *testCluster {
	t.Helper()
	lb, err := loopback.Start(loopback.Names(fmt.Sprintf("c%d_", clusterSeq.Add(1)), size), loopback.Options{})
	require.NoError(t, err)
	t.Cleanup(lb.Close)
	c := &testCluster{id: id, lb: lb, nodes: lb.Nodes()}
	c.pids = spawnMembers(t, c.nodes, id, memberName)
	return c
}

// alsoRun starts a second cluster, id, on the same nodes, its members
// registered as name.
func (c *testCluster) alsoRun(t *testing.T, id string, name gen.Atom) *testCluster {
	t.Helper()
	return &testCluster{id: id, nodes: c.nodes, pids: spawnMembers(t, c.nodes, id, name)}
}

// spawnMembers spawns a member of cluster id, registered as name, on each
// node, with the others as Bootstrap.
func spawnMembers(t *testing.T, nodes []gen.Node, id string, name gen.Atom) []gen.PID {
	t.Helper()
	return spawnMembersWith(t, nodes, id, name, func(int) gen.ProcessBehavior { return &member{} })
}

// spawnMembersWith is spawnMembers, the member on node i made by
// factory(i).
func spawnMembersWith(t *testing.T, nodes []gen.Node, id string, name gen.Atom, factory func(i int) gen.ProcessBehavior) []gen.PID {
	t.Helper()
	var pids []gen.PID
	for i, n := range nodes {
		opts := leader.Options{ClusterID: id}
		for j, other := range nodes {
			if j != i {
				opts.Bootstrap = append(opts.Bootstrap, gen.ProcessID{Name: name, Node: other.Name()})
			}
		}
		pid, err := n.SpawnRegister(name, func() gen.ProcessBehavior { return factory(i) }, gen.ProcessOptions{}, opts)
		require.NoError(t, err)
		pids = append(pids, pid)
	}
	return pids
}

// startLocalNode starts a node without a network, stopped when the test ends.
func startLocalNode(t *testing.T, name gen.Atom) gen.Node {
	t.Helper()
	n, err := node.Start(name, gen.NodeOptions{
		Network: gen.NetworkOptions{Mode: gen.NetworkModeDisabled},
		Log:     gen.LogOptions{Level: gen.LogLevelError},
	})
	require.NoError(t, err)
	t.Cleanup(n.Stop)
	return n
}

// healthy waits until node i sees its cluster with one agreed leader, every
// member answering and no problem, and returns that report.
func (c *testCluster) healthy(t *testing.T, i int) observer.ClusterReport {
	t.Helper()
	var got, last observer.ClusterReport
	var lastErr error
	found := false
	ok := assert.Eventually(t, func() bool {
		report, err := observer.Collect(c.nodes[i])
		lastErr = err
		if err != nil {
			return false
		}
		cluster, ok := report.Cluster(c.id)
		last, found = cluster, ok
		if !ok || cluster.Leader == "" || len(cluster.Problems) != 0 || len(cluster.Members) != len(c.nodes) {
			return false
		}
		got = cluster
		return true
	}, settle, poll)
	if !ok {
		t.Fatalf("cluster %s never looked healthy from %s; last reading: found %t, leader %q, members %+v, problems %+v, error %q, collect error %v",
			c.id, c.nodes[i].Name(), found, last.Leader, last.Members, last.Problems, last.Error, lastErr)
	}
	return got
}

// nodeIndex returns the index of the node named name, -1 when none is.
func (c *testCluster) nodeIndex(name string) int {
	for i, n := range c.nodes {
		if string(n.Name()) == name {
			return i
		}
	}
	return -1
}

// fetchJSON fetches url and decodes the body into v; it fails unless the
// status and content type are the expected ones. It does not touch t, so
// conditions polled by require.Eventually can use it.
func fetchJSON(url string, status int, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" {
		return fmt.Errorf("GET %s: %d %s, want %d application/json: %s", url, resp.StatusCode, resp.Header.Get("Content-Type"), status, body)
	}
	return json.Unmarshal(body, v)
}

// getJSON is fetchJSON that fails the test.
func getJSON(t *testing.T, url string, status int, v any) {
	t.Helper()
	require.NoError(t, fetchJSON(url, status, v))
}

// serve starts an observer server on a free loopback port, closed when the test ends.
func serve(t *testing.T, n gen.Node, opts ...observer.Option) *observer.Server {
	t.Helper()
	s, err := observer.Serve(n, "127.0.0.1:0", opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}
