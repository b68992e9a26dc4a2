package observer_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/observer"
)

// scrape fetches and parses a server's /metrics. It does not touch a test,
// so conditions polled by require.Eventually can use it.
func scrape(s *observer.Server) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(s.URL() + "metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// byNode returns a family's values keyed by the node label, for one cluster;
// nil when the family is missing.
func byNode(families map[string]*dto.MetricFamily, name, cluster string) map[string]float64 {
	f, ok := families[name]
	if !ok {
		return nil
	}
	out := make(map[string]float64)
	for _, m := range f.GetMetric() {
		labels := labelMap(m)
		if labels["cluster"] != cluster {
			continue
		}
		switch {
		case m.GetGauge() != nil:
			out[labels["node"]] = m.GetGauge().GetValue()
		case m.GetCounter() != nil:
			out[labels["node"]] += m.GetCounter().GetValue()
		}
	}
	return out
}

// atRest reports whether one scrape shows the cluster settled: all three
// members up, exactly one leading, all at one term.
func atRest(families map[string]*dto.MetricFamily, cluster string) bool {
	up, isLeader, terms := byNode(families, "regent_leader_member_up", cluster), byNode(families, "regent_leader_is_leader", cluster), byNode(families, "regent_leader_term", cluster)
	if len(up) != 3 || len(isLeader) != 3 || len(terms) != 3 {
		return false
	}
	leaders := 0.0
	seen := make(map[float64]bool)
	for node := range up {
		if up[node] != 1 {
			return false
		}
		leaders += isLeader[node]
		seen[terms[node]] = true
	}
	return leaders == 1 && len(seen) == 1
}

func labelMap(m *dto.Metric) map[string]string {
	out := make(map[string]string)
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func TestMetricsDescribeEveryMember(t *testing.T) {
	c := startCluster(t, "metrics", 3)
	want := c.healthy(t, 0)
	s := serve(t, c.nodes[0])
	// A heartbeat from another cluster: the local member drops it by reason.
	require.NoError(t, c.nodes[0].Send(c.pids[0], leader.MessageHeartbeat{Header: leader.Header{ClusterID: "intruder", Term: 1, From: gen.ProcessID{Name: memberName, Node: "x@127.0.0.1"}}}))

	// Poll until one scrape shows the cluster at rest and the drop: a loaded
	// machine may hold an election between two scrapes.
	var families map[string]*dto.MetricFamily
	require.Eventually(t, func() bool {
		var err error
		if families, err = scrape(s); err != nil {
			return false
		}
		f, ok := families["regent_leader_messages_dropped_total"]
		return ok && len(f.GetMetric()) > 0 && atRest(families, "metrics")
	}, settle, poll, "the metrics never showed the cluster at rest with the dropped heartbeat")

	t.Run("every member is labelled by cluster and node and exactly one leads", func(t *testing.T) {
		isLeader := byNode(families, "regent_leader_is_leader", "metrics")
		require.Len(t, isLeader, 3)
		total := 0.0
		for _, n := range c.nodes {
			v, ok := isLeader[string(n.Name())]
			require.True(t, ok, "no is_leader for %s", n.Name())
			total += v
		}
		assert.Equal(t, 1.0, total)
	})

	t.Run("term, view size and quorum agree with the inspection", func(t *testing.T) {
		for node, term := range byNode(families, "regent_leader_term", "metrics") {
			assert.GreaterOrEqual(t, term, float64(want.Term), node, "terms never go back")
		}
		for node, v := range byNode(families, "regent_leader_view_size", "metrics") {
			assert.Equal(t, 3.0, v, node)
		}
		for node, v := range byNode(families, "regent_leader_quorum", "metrics") {
			assert.Equal(t, 2.0, v, node)
		}
		for node, v := range byNode(families, "regent_leader_member_up", "metrics") {
			assert.Equal(t, 1.0, v, node)
		}
	})

	t.Run("election counters are counters and count the won election", func(t *testing.T) {
		won := 0.0
		for _, v := range byNode(families, "regent_leader_elections_won_total", "metrics") {
			won += v
		}
		assert.GreaterOrEqual(t, won, 1.0)
		started := byNode(families, "regent_leader_elections_started_total", "metrics")
		for node, leads := range byNode(families, "regent_leader_is_leader", "metrics") {
			if leads == 1 {
				assert.GreaterOrEqual(t, started[node], 1.0, "the leader %s campaigned", node)
			}
		}
		for _, name := range []string{"regent_leader_elections_started_total", "regent_leader_elections_won_total", "regent_leader_leadership_changes_total", "regent_leader_confirm_denied_total"} {
			assert.Equal(t, dto.MetricType_COUNTER, families[name].GetType(), name)
		}
		for node, v := range byNode(families, "regent_leader_confirm_denied_total", "metrics") {
			assert.Zero(t, v, node)
		}
	})

	t.Run("dropped messages are counted by reason", func(t *testing.T) {
		found := false
		for _, m := range families["regent_leader_messages_dropped_total"].GetMetric() {
			l := labelMap(m)
			if l["cluster"] == "metrics" && l["node"] == string(c.nodes[0].Name()) && l["reason"] == "cluster_mismatch" {
				found = true
				assert.GreaterOrEqual(t, m.GetCounter().GetValue(), 1.0)
			}
		}
		assert.True(t, found, "no cluster_mismatch drop on %s", c.nodes[0].Name())
	})
}

func TestAFailoverIsMeasuredInTheHistogram(t *testing.T) {
	c := startCluster(t, "failover", 3)
	watcher := (c.nodeIndex(c.healthy(t, 0).Leader) + 1) % len(c.nodes)
	const interval = 50 * time.Millisecond
	s := serve(t, c.nodes[watcher], observer.WithSampleInterval(interval))

	// Let the sampler see the leader before it is lost.
	events := openEvents(t, s.URL()+"api/events")
	for data := range events {
		if sampleHasLeader(t, data, "failover") {
			break
		}
	}
	count := func() uint64 {
		families, err := scrape(s)
		if err != nil {
			return 0
		}
		for _, m := range families["regent_observer_failover_seconds"].GetMetric() {
			l := labelMap(m)
			if l["cluster"] == "failover" && l["node"] == string(c.nodes[watcher].Name()) {
				return m.GetHistogram().GetSampleCount()
			}
		}
		return 0
	}
	// A loaded machine may already have held a spurious election; count from here.
	before := count()

	// Crash whoever leads now, which a loaded machine may have changed.
	victim := -1
	require.Eventually(t, func() bool {
		report, err := observer.Collect(c.nodes[watcher])
		if err != nil {
			return false
		}
		cluster, ok := report.Cluster("failover")
		if !ok || cluster.Leader == "" || cluster.Leader == string(c.nodes[watcher].Name()) {
			return false
		}
		victim = c.nodeIndex(cluster.Leader)
		return victim >= 0
	}, settle, poll, "no leader other than the watcher")
	c.nodes[victim].StopForce()
	require.Eventually(t, func() bool { return count() > before }, settle, poll, "the failover was never measured")
}

// sampleHasLeader reports whether an event's report shows cluster with an
// agreed leader.
func sampleHasLeader(t *testing.T, data, cluster string) bool {
	t.Helper()
	var update struct {
		Report observer.Report `json:"report"`
	}
	require.NoError(t, json.Unmarshal([]byte(data), &update))
	c, ok := update.Report.Cluster(cluster)
	return ok && c.Leader != ""
}

// countingMember is member, counting the inspections it answers.
type countingMember struct {
	member
	inspections *atomic.Int64
}

func (m *countingMember) HandleInspect(from gen.PID, items ...string) map[string]string {
	m.inspections.Add(1)
	return m.member.HandleInspect(from, items...)
}

// A scrape serves the sampler's latest reading: however often /metrics is
// scraped, the members are read at the sampler's pace only, so scraping a
// node of many clusters costs it no readings of its own.
func TestScrapesReadTheLatestSampleAndInspectNothing(t *testing.T) {
	c := startCluster(t, "scraped", 3)
	var inspections atomic.Int64
	counted := &testCluster{id: "counted", nodes: c.nodes}
	counted.pids = spawnMembersWith(t, c.nodes, "counted", "counted", func(int) gen.ProcessBehavior { return &countingMember{inspections: &inspections} })
	counted.healthy(t, 0)
	s := serve(t, c.nodes[0], observer.WithSampleInterval(time.Hour))
	// The first sample is taken at once; the next would be in an hour.
	require.Eventually(t, func() bool {
		families, err := scrape(s)
		return err == nil && len(byNode(families, "regent_leader_term", "counted")) == 3
	}, settle, poll, "the first sample never showed the counted cluster's members")
	// A scrape before the first sample was published read the members
	// itself, maybe while the sampler's first reading still ran: count from
	// when no reading runs any more.
	var read int64
	require.Eventually(t, func() bool {
		before := inspections.Load()
		time.Sleep(100 * time.Millisecond)
		read = inspections.Load()
		return read == before
	}, settle, poll, "the readings never stopped")
	require.Positive(t, read, "the sample read the members")
	for range 5 {
		families, err := scrape(s)
		require.NoError(t, err)
		assert.Len(t, byNode(families, "regent_leader_term", "counted"), 3, "each scrape shows every member")
	}
	assert.Equal(t, read, inspections.Load(), "no scrape inspected a member")
}
