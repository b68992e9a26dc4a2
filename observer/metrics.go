package observer

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
)

// FailoverBuckets are the upper bounds, in seconds, of the failover histogram.
var FailoverBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// memberGauge is one per-member metric read from an inspection field.
type memberGauge struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(MemberReport) float64
}

// metrics is the Prometheus collector of one observed node: per-member values
// from the sampler's latest collection (report), and the failover histogram
// the sampler feeds.
type metrics struct {
	node gen.Node
	// report is the handler's latest reading (Handler.report): a scrape
	// adds no inspection of its own, so its cost does not grow with the
	// clusters.
	report   func() (Report, error)
	members  []memberGauge
	up       *prometheus.Desc
	dropped  *prometheus.Desc
	slow     *prometheus.Desc
	failover *prometheus.HistogramVec
	network  networkDescs
}

// networkDescs describe the node's gen.NetworkStats: rejections and drops
// stay visible where an operator looks.
type networkDescs struct {
	peers, inFlight, rejected, dropped, collisions *prometheus.Desc
	// traffic: frames and bytes each way, and the socket writes that
	// carried the frames out.
	framesIn, framesOut, bytesIn, bytesOut, writes *prometheus.Desc
	// coalescer: the node's heartbeat coalescer (leader.CoalescerStats).
	coalFramesOut, coalEntriesOut, coalFailed, coalFramesIn, coalEntriesIn, coalAnswered, coalBeatenAhead, coalTaken, coalMismatched, coalForgotten, coalDropped, coalPairs, gateEvents, gateWaiting *prometheus.Desc
}

// all lists every description.
func (d networkDescs) all() []*prometheus.Desc {
	return []*prometheus.Desc{d.peers, d.inFlight, d.rejected, d.dropped, d.collisions,
		d.framesIn, d.framesOut, d.bytesIn, d.bytesOut, d.writes,
		d.coalFramesOut, d.coalEntriesOut, d.coalFailed, d.coalFramesIn, d.coalEntriesIn, d.coalAnswered, d.coalBeatenAhead, d.coalTaken, d.coalMismatched, d.coalForgotten, d.coalDropped, d.coalPairs, d.gateEvents, d.gateWaiting}
}

func newMetrics(node gen.Node) *metrics {
	labels := []string{"cluster", "node"}
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("regent_leader_"+name, help, labels, nil)
	}
	gauge := func(name, help string, value func(MemberReport) float64) memberGauge {
		return memberGauge{desc: desc(name, help), kind: prometheus.GaugeValue, value: value}
	}
	counter := func(name, help string, value func(MemberReport) uint64) memberGauge {
		return memberGauge{desc: desc(name, help), kind: prometheus.CounterValue, value: func(m MemberReport) float64 { return float64(value(m)) }}
	}
	netDesc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("regent_network_"+name, help, append([]string{"node"}, labels...), nil)
	}
	return &metrics{
		node: node,
		network: networkDescs{
			peers:      netDesc("peers", "Peers with an established connection."),
			inFlight:   netDesc("handshakes_in_flight", "Accepted connections still in their handshake."),
			rejected:   netDesc("handshakes_rejected_total", "Connections refused before or during the handshake, by reason.", "reason"),
			dropped:    netDesc("dropped_total", "Frames discarded and connections closed, by reason.", "reason"),
			collisions: netDesc("name_collisions_total", "Connections refused because a live connection serves a node of that name."),
			framesIn:   netDesc("frames_in_total", "Frames received from peers."),
			framesOut:  netDesc("frames_out_total", "Frames sent to peers."),
			bytesIn:    netDesc("bytes_in_total", "Bytes received from peers."),
			bytesOut:   netDesc("bytes_out_total", "Bytes sent to peers."),
			writes:     netDesc("writes_total", "Socket writes that carried the frames sent; frames_out_total over this is the frames per write."),
			coalFramesOut: prometheus.NewDesc("regent_coalescer_frames_out_total",
				"Heartbeat batches the node's coalescer sent.", []string{"node"}, nil),
			coalEntriesOut: prometheus.NewDesc("regent_coalescer_entries_out_total",
				"Heartbeats and acknowledgements those batches carried.", []string{"node"}, nil),
			coalFailed: prometheus.NewDesc("regent_coalescer_failed_frames_total",
				"Batches whose send failed (their senders were told).", []string{"node"}, nil),
			coalFramesIn: prometheus.NewDesc("regent_coalescer_frames_in_total",
				"Heartbeat batches the node's coalescer received.", []string{"node"}, nil),
			coalEntriesIn: prometheus.NewDesc("regent_coalescer_entries_in_total",
				"Heartbeats and acknowledgements those batches carried.", []string{"node"}, nil),
			coalAnswered: prometheus.NewDesc("regent_coalescer_answered_total",
				"Heartbeats the coalescer answered with their follower's steady answer, without waking it.", []string{"node"}, nil),
			coalBeatenAhead: prometheus.NewDesc("regent_coalescer_beaten_ahead_total",
				"Heartbeat ticks of steady leaders sent for them without waking them.", []string{"node"}, nil),
			coalTaken: prometheus.NewDesc("regent_coalescer_taken_total",
				"Acknowledgements taken for steady leaders without waking them.", []string{"node"}, nil),
			coalMismatched: prometheus.NewDesc("regent_coalescer_mismatched_total",
				"Heartbeats answered ahead whose follower then sent another answer, and catch-ups a steady leader's core refused: 0 unless there is a defect.", []string{"node"}, nil),
			coalForgotten: prometheus.NewDesc("regent_coalescer_forgotten_total",
				"What the coalescer kept for a peer node (an outbox, either side of a pair) and freed once unused for a whole tidy period: it follows the peers that came and went.", []string{"node"}, nil),
			coalDropped: prometheus.NewDesc("regent_coalescer_dropped_total",
				"Entries the node's coalescer dropped, by reason.", []string{"node", "reason"}, nil),
			coalPairs: prometheus.NewDesc("regent_coalescer_pair_events_total",
				"Pair beat events of the node's coalescer (leaders paired and unpaired, beats and acknowledgements, slots bound, refused and unbound, bindings kept through a wake-up, resets, failed sends), by event.", []string{"node", "event"}, nil),
			gateEvents: prometheus.NewDesc("regent_campaign_gate_events_total",
				"Election timer firings of the node's members at the process's campaign gate: admitted at once, deferred until a place freed, places passed on by a round that timed out while others waited, places given to a waiting member that did not campaign with them (stale), probe firings held for waiting members (probes_held); each node counts its own members, so the nodes of one process sum to the process's.", []string{"node", "event"}, nil),
			gateWaiting: prometheus.NewDesc("regent_campaign_gate_waiting",
				"Members of the node waiting at the process's campaign gate for a place to campaign (their election timer fired and waits).", []string{"node"}, nil),
		},
		members: []memberGauge{
			gauge("is_leader", "1 when the member holds leadership, 0 otherwise.", func(m MemberReport) float64 {
				if m.State == RoleLeader {
					return 1
				}
				return 0
			}),
			gauge("term", "The member's current election term.", func(m MemberReport) float64 { return float64(m.Term) }),
			gauge("view_size", "Members in the member's view, itself included.", func(m MemberReport) float64 { return float64(m.ViewSize) }),
			gauge("view_epoch", "Membership changes the member's agreed view went through; a member behind the others lags.", func(m MemberReport) float64 { return float64(m.View.Epoch) }),
			gauge("quorum", "Votes the member needs to win an election in its current view.", func(m MemberReport) float64 { return float64(m.Quorum) }),
			counter("elections_started_total", "Campaigns the member started.", func(m MemberReport) uint64 { return m.ElectionsStarted }),
			counter("elections_won_total", "Elections the member won.", func(m MemberReport) uint64 { return m.ElectionsWon }),
			counter("leadership_changes_total", "Changes of the leader the member recognises.", func(m MemberReport) uint64 { return m.LeadershipChanges }),
			counter("confirm_denied_total", "Won elections that HandleConfirmLeader refused on the member.", func(m MemberReport) uint64 { return m.ConfirmDenied }),
		},
		up:      desc("member_up", "1 when the member's inspection could be read, 0 otherwise."),
		dropped: prometheus.NewDesc("regent_leader_messages_dropped_total", "Election messages the member dropped, by reason.", []string{"cluster", "node", "reason"}, nil),
		slow: prometheus.NewDesc("regent_leader_slow_callbacks_total",
			"Callbacks of the user's that ran for the evidence window or longer on the member, by callback: while one runs the actor neither beats nor answers.",
			[]string{"cluster", "node", "callback"}, nil),
		failover: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "regent_observer_failover_seconds",
			Help: "Failovers seen by the observer's sampling: from the first sample that found no leader in a cluster that had one to the first that found one, " +
				"or the time between two samples that saw different leaderships; node is the observing node. Each value is within the time between two readings of the cluster of the true failover: the sampling interval, or longer on a node of many clusters (observer package doc).",
			Buckets: FailoverBuckets,
		}, []string{"cluster", "node"}),
	}
}

// Describe sends every metric's description.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range m.members {
		ch <- g.desc
	}
	ch <- m.up
	ch <- m.dropped
	ch <- m.slow
	m.failover.Describe(ch)
	for _, d := range m.network.all() {
		ch <- d
	}
}

// collectNetwork sends the node's network counters.
func (m *metrics) collectNetwork(ch chan<- prometheus.Metric) {
	s, node := m.node.Network().Stats(), string(m.node.Name())
	ch <- prometheus.MustNewConstMetric(m.network.peers, prometheus.GaugeValue, float64(s.Connections), node)
	ch <- prometheus.MustNewConstMetric(m.network.inFlight, prometheus.GaugeValue, float64(s.HandshakesInFlight), node)
	ch <- prometheus.MustNewConstMetric(m.network.collisions, prometheus.CounterValue, float64(s.NameCollisions), node)
	coal := leader.ReadCoalescer(m.node)
	for desc, n := range map[*prometheus.Desc]uint64{
		m.network.framesIn: s.FramesIn, m.network.framesOut: s.FramesOut, m.network.bytesIn: s.BytesIn,
		m.network.bytesOut: s.BytesOut, m.network.writes: s.Writes,
		m.network.coalFramesOut: coal.FramesOut, m.network.coalEntriesOut: coal.EntriesOut, m.network.coalFailed: coal.FailedFrames,
		m.network.coalFramesIn: coal.FramesIn, m.network.coalEntriesIn: coal.EntriesIn,
		m.network.coalAnswered: coal.Answered, m.network.coalBeatenAhead: coal.BeatenAhead, m.network.coalTaken: coal.Taken, m.network.coalMismatched: coal.Mismatched, m.network.coalForgotten: coal.Forgotten,
	} {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(n), node)
	}
	gate := leader.ReadNodeCampaignGate(m.node)
	ch <- prometheus.MustNewConstMetric(m.network.gateWaiting, prometheus.GaugeValue, float64(gate.Queued), node)
	for desc, counts := range map[*prometheus.Desc]map[string]uint64{m.network.rejected: s.Rejected, m.network.dropped: s.Dropped, m.network.coalDropped: coal.Dropped, m.network.coalPairs: coal.PairEvents(), m.network.gateEvents: gate.Counts()} {
		for reason, n := range counts {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(n), node, reason)
		}
	}
}

// Collect sends the members' metrics of the latest reading of the node's
// clusters. A failed reading is sent as an invalid metric, so the scrape
// reports it.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.failover.Collect(ch)
	m.collectNetwork(ch)
	report, err := m.report()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(m.up, err)
		return
	}
	for _, c := range report.Clusters {
		if c.Error != "" {
			ch <- prometheus.NewInvalidMetric(m.up, fmt.Errorf("observer: cluster %s: %s", c.ID, c.Error))
			continue
		}
		for _, member := range c.Members {
			up := 0.0
			if member.Answered() {
				up = 1
			}
			ch <- prometheus.MustNewConstMetric(m.up, prometheus.GaugeValue, up, c.ID, member.Node)
			if !member.Answered() {
				continue
			}
			for _, g := range m.members {
				ch <- prometheus.MustNewConstMetric(g.desc, g.kind, g.value(member), c.ID, member.Node)
			}
			for desc, counts := range map[*prometheus.Desc]map[string]uint64{m.dropped: member.Dropped, m.slow: member.SlowCallbacks} {
				for _, label := range slices.Sorted(maps.Keys(counts)) {
					ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(counts[label]), c.ID, member.Node, label)
				}
			}
		}
	}
}

func (m *metrics) observeFailover(cluster string, d time.Duration) {
	m.failover.WithLabelValues(cluster, string(m.node.Name())).Observe(d.Seconds())
}
