package observer_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/observer"
)

func TestHandlerOnAThreeMemberCluster(t *testing.T) {
	c := startCluster(t, "orders", 3)
	want := c.healthy(t, 0)
	s := serve(t, c.nodes[0])

	t.Run("Serve given port 0 listens on a real port and says where", func(t *testing.T) {
		_, port, err := net.SplitHostPort(s.Addr())
		require.NoError(t, err)
		assert.NotEqual(t, "0", port)
		assert.Equal(t, "http://"+s.Addr()+"/", s.URL())
	})

	t.Run("the clusters endpoint reads every member, local and remote, from one node", func(t *testing.T) {
		// Poll until the cluster is at rest: a loaded machine may hold an
		// election between two reads.
		var report observer.Report
		var got observer.ClusterReport
		require.Eventually(t, func() bool {
			if err := fetchJSON(s.URL()+"api/clusters", http.StatusOK, &report); err != nil || len(report.Clusters) != 1 {
				return false
			}
			got = report.Clusters[0]
			return got.Leader != "" && len(got.Problems) == 0
		}, settle, poll, "the endpoint never reported the cluster at rest: %+v", report)
		assert.Equal(t, string(c.nodes[0].Name()), report.Node)
		assert.Equal(t, "orders", got.ID)
		assert.Equal(t, c.pids[0].String(), got.Via)
		require.Len(t, got.Members, 3)
		assert.Len(t, got.Leaders, 1, "exactly one member leads")
		assert.Equal(t, got.Leaders[0], got.Leader)
		assert.Empty(t, got.Problems)
		for i, m := range got.Members {
			assert.Equal(t, string(c.nodes[i].Name()), m.Node, "members are ordered by node name")
			assert.Empty(t, m.Error, "member %s answered", m.Node)
			assert.Equal(t, i == 0, m.Self, "only the local member is self")
			assert.Equal(t, got.Leader, m.LeaderNode, "%s believes in the agreed leader", m.Node)
			assert.Equal(t, got.Term, m.Term, "%s is at the cluster's term", m.Node)
			assert.Equal(t, 3, m.ViewSize)
			assert.Equal(t, 2, m.Quorum)
			assert.Equal(t, "observer test member", m.Inspection["user:role"], "the user's inspection keys come along")
			assert.Empty(t, m.ParseErrors)
		}
		assert.GreaterOrEqual(t, got.Term, want.Term, "terms never go back")
	})

	t.Run("one cluster can be asked for by ID", func(t *testing.T) {
		var got observer.ClusterReport
		getJSON(t, s.URL()+"api/clusters/orders", http.StatusOK, &got)
		assert.Equal(t, "orders", got.ID)
		assert.Len(t, got.Members, 3)
	})

	t.Run("a cluster the node is not in is not found", func(t *testing.T) {
		var body map[string]string
		getJSON(t, s.URL()+"api/clusters/payments", http.StatusNotFound, &body)
		assert.Contains(t, body["error"], `"payments"`)
	})

	t.Run("the actors endpoint lists the node's leader actor with its own inspection", func(t *testing.T) {
		var body struct {
			Node   string           `json:"node"`
			Actors []observer.Actor `json:"actors"`
		}
		getJSON(t, s.URL()+"api/actors", http.StatusOK, &body)
		require.Len(t, body.Actors, 1)
		a := body.Actors[0]
		assert.Equal(t, c.pids[0].String(), a.PID)
		assert.Equal(t, "orders", a.Cluster)
		assert.Empty(t, a.Error)
		assert.Contains(t, []string{observer.RoleLeader, observer.RoleFollower, observer.RoleCandidate}, a.Status.State)
		assert.Equal(t, 3, a.Status.ViewSize)
	})

	t.Run("the page and its assets are served from the binary", func(t *testing.T) {
		for path, want := range map[string]string{"": "<title>Regent observer</title>", "static/app.js": "EventSource", "static/style.css": ".role.leader"} {
			resp, err := http.Get(s.URL() + path)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, resp.Body.Close())
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, resp.StatusCode, path)
			assert.Contains(t, string(body), want, path)
		}
	})

	t.Run("the event stream sends a report per sample", func(t *testing.T) {
		events := openEvents(t, s.URL()+"api/events")
		for range 2 {
			data, ok := <-events
			require.True(t, ok, "the stream ended early")
			var update struct {
				Report     observer.Report `json:"report"`
				Error      string          `json:"error"`
				IntervalMS int64           `json:"interval_ms"`
				CollectMS  int64           `json:"collect_ms"`
			}
			require.NoError(t, json.Unmarshal([]byte(data), &update))
			assert.Empty(t, update.Error)
			// The interval asked for, or the collection's time when that was
			// longer (a loaded machine). Both are whole milliseconds,
			// rounded down.
			assert.InDelta(t, max(observer.DefaultSampleInterval.Milliseconds(), update.CollectMS), update.IntervalMS, 1, "collected in %d ms", update.CollectMS)
			require.Len(t, update.Report.Clusters, 1)
			assert.Equal(t, "orders", update.Report.Clusters[0].ID)
		}
	})
}

func TestClosingTheServerEndsOpenEventStreams(t *testing.T) {
	c := startCluster(t, "streams", 3)
	s, err := observer.Serve(c.nodes[1], "127.0.0.1:0")
	require.NoError(t, err)
	events := openEvents(t, s.URL()+"api/events")
	_, ok := <-events
	require.True(t, ok, "no first event")

	require.NoError(t, s.Close())
	for range events {
		// drain what was sent before the close
	}
	require.NoError(t, s.Close(), "a second Close repeats the first one's result")
	_, err = http.Get(s.URL())
	require.Error(t, err, "the listener is closed")
}

func TestAMemberThatCannotBeReachedCarriesAnError(t *testing.T) {
	c := startCluster(t, "billing", 3)
	c.healthy(t, 0)
	gone := string(c.nodes[2].Name())
	c.nodes[2].StopForce() // a crash: the member stays in the view, unreachable

	require.Eventually(t, func() bool {
		report, err := observer.Collect(c.nodes[0])
		if err != nil {
			return false
		}
		cluster, ok := report.Cluster("billing")
		if !ok || len(cluster.Members) != 3 {
			return false
		}
		m := cluster.Members[2]
		if m.Node != gone || m.Error == "" {
			return false
		}
		for _, p := range cluster.Problems {
			if p.Kind == observer.ProblemUnreachable && assert.ObjectsAreEqual([]string{gone}, p.Members) {
				return true
			}
		}
		return false
	}, settle, poll, "the stopped member never showed as unreachable")
}

// openEvents opens an event stream and yields the data of each event until
// the stream ends; the stream is closed and drained when the test ends.
func openEvents(t *testing.T, url string) <-chan string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	out := make(chan string)
	t.Cleanup(func() {
		require.NoError(t, resp.Body.Close())
		for range out {
		}
	})
	go func() {
		defer close(out)
		scanner := bufio.NewScanner(resp.Body)
		scanner.Buffer(make([]byte, 0, 1<<16), 1<<24)
		for scanner.Scan() {
			if data, ok := strings.CutPrefix(scanner.Text(), "data: "); ok {
				out <- data
			}
		}
	}()
	return out
}

func TestHandlerMountedUnderAPrefixOnANodeWithoutLeaders(t *testing.T) {
	n := startLocalNode(t, "lonely@127.0.0.1")
	h := observer.NewHandler(n)
	defer func() { require.NoError(t, h.Close()) }()
	mux := http.NewServeMux()
	mux.Handle("/observer/", http.StripPrefix("/observer", h))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	t.Run("the page is served under the prefix", func(t *testing.T) {
		resp, err := http.Get(srv.URL + "/observer/")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, resp.Body.Close())
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Contains(t, string(body), `src="static/app.js"`, "assets are linked relatively, so they resolve under the prefix")
	})

	t.Run("a node without leader actors reports no clusters rather than an error", func(t *testing.T) {
		var report observer.Report
		getJSON(t, srv.URL+"/observer/api/clusters", http.StatusOK, &report)
		assert.Equal(t, "lonely@127.0.0.1", report.Node)
		assert.Empty(t, report.Clusters)
		var actors struct {
			Actors []observer.Actor `json:"actors"`
		}
		getJSON(t, srv.URL+"/observer/api/actors", http.StatusOK, &actors)
		assert.Empty(t, actors.Actors)
	})

	t.Run("the metrics endpoint answers even with nothing to report", func(t *testing.T) {
		resp, err := http.Get(srv.URL + "/observer/metrics")
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	})
}

func TestANodeInTwoClustersReportsBoth(t *testing.T) {
	orders := startCluster(t, "orders", 3)
	billing := orders.alsoRun(t, "billing", "billing_election")
	orders.healthy(t, 2)
	billing.healthy(t, 2)
	s := serve(t, orders.nodes[2])

	var report observer.Report
	getJSON(t, s.URL()+"api/clusters", http.StatusOK, &report)
	require.Len(t, report.Clusters, 2)
	assert.Equal(t, "billing", report.Clusters[0].ID, "clusters are ordered by ID")
	assert.Equal(t, billing.pids[2].String(), report.Clusters[0].Via)
	assert.Equal(t, "orders", report.Clusters[1].ID)
	assert.Equal(t, orders.pids[2].String(), report.Clusters[1].Via)
	for _, c := range report.Clusters {
		assert.Len(t, c.Members, 3, c.ID)
	}

	var actors struct {
		Actors []observer.Actor `json:"actors"`
	}
	getJSON(t, s.URL()+"api/actors", http.StatusOK, &actors)
	require.Len(t, actors.Actors, 2)
	assert.Equal(t, []string{"billing", "orders"}, []string{actors.Actors[0].Cluster, actors.Actors[1].Cluster})

	t.Run("the MCP member tool then needs the cluster named", func(t *testing.T) {
		cs := connectInMemory(t, orders, 2)
		args := map[string]any{"node": string(orders.nodes[0].Name())}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "member", Arguments: args})
		require.NoError(t, err)
		assert.True(t, res.IsError)
		assert.Contains(t, toolText(res), "in 2 clusters")
		args["cluster"] = "billing"
		var m observer.MemberReport
		callTool(t, cs, "member", args, &m)
		assert.Equal(t, "billing", m.Inspection["ergo:cluster"])
	})
}

// slowCountingMember is member, counting its inspections, whose next one
// waits for stall (then zero).
type slowCountingMember struct {
	member
	inspections, stall *atomic.Int64
}

func (m *slowCountingMember) HandleInspect(from gen.PID, items ...string) map[string]string {
	m.inspections.Add(1)
	if d := time.Duration(m.stall.Swap(0)); d > 0 {
		time.Sleep(d)
	}
	return m.member.HandleInspect(from, items...)
}

// Requests made before the first reading is published wait for it: however
// many come, the node is read once, not once per request (on a node of many
// clusters each would be a burst of thousands of wake-ups).
func TestRequestsBeforeTheFirstReadingWaitForIt(t *testing.T) {
	c := startCluster(t, "first", 3)
	var inspections, stall atomic.Int64
	waited := &testCluster{id: "waited", nodes: c.nodes}
	waited.pids = spawnMembersWith(t, c.nodes, "waited", "waited", func(int) gen.ProcessBehavior {
		return &slowCountingMember{inspections: &inspections, stall: &stall}
	})
	waited.healthy(t, 0)
	before := inspections.Load()
	_, err := observer.Collect(c.nodes[0])
	require.NoError(t, err)
	oneReading := inspections.Load() - before

	stall.Store(int64(time.Second)) // the sampler's first reading takes a second
	before = inspections.Load()
	s := serve(t, c.nodes[0], observer.WithSampleInterval(time.Hour))
	var wg sync.WaitGroup
	reports := make([]observer.Report, 4)
	errs := make([]error, 4)
	for i := range reports {
		wg.Go(func() {
			resp, err := http.Get(s.URL() + "api/clusters")
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			errs[i] = json.NewDecoder(resp.Body).Decode(&reports[i])
		})
	}
	wg.Wait()
	for i := range reports {
		require.NoError(t, errs[i])
		_, ok := reports[i].Cluster("waited")
		assert.True(t, ok, "request %d got the first reading", i)
	}
	assert.Equal(t, oneReading, inspections.Load()-before, "the node was read once")
}
