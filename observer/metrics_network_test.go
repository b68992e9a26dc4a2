package observer_test

import (
	"net"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node"
)

// networkValue is the value of a regent_network_ family for one node and,
// when reason is not empty, one reason; -1 when it is missing.
func networkValue(families map[string]*dto.MetricFamily, name string, n gen.Node, reason string) float64 {
	for _, m := range families[name].GetMetric() {
		labels := labelMap(m)
		if labels["node"] != string(n.Name()) || labels["reason"] != reason {
			continue
		}
		if m.GetCounter() != nil {
			return m.GetCounter().GetValue()
		}
		return m.GetGauge().GetValue()
	}
	return -1
}

func TestMetricsShowNetworkRejections(t *testing.T) {
	n, err := node.Start("metered@127.0.0.1", gen.NodeOptions{
		Network: gen.NetworkOptions{Cookie: "observer network test cookie", Acceptor: gen.AcceptorOptions{Host: "127.0.0.1"}},
		Log:     gen.LogOptions{Level: gen.LogLevelDisabled},
	})
	require.NoError(t, err)
	t.Cleanup(n.Stop)
	s := serve(t, n)
	conn, err := net.Dial("tcp", n.Network().AcceptorAddress())
	require.NoError(t, err)
	_, err = conn.Write([]byte("not regent\r\n"))
	require.NoError(t, err)
	require.NoError(t, conn.Close())

	t.Run("a refused handshake appears on /metrics by reason, with the peer and handshake gauges", func(t *testing.T) {
		require.Eventually(t, func() bool {
			families, err := scrape(s)
			return err == nil &&
				networkValue(families, "regent_network_handshakes_rejected_total", n, "malformed") == 1 &&
				networkValue(families, "regent_network_dropped_total", n, "handshake_failed") == 1 &&
				networkValue(families, "regent_network_peers", n, "") == 0 &&
				networkValue(families, "regent_network_handshakes_in_flight", n, "") == 0 &&
				networkValue(families, "regent_network_name_collisions_total", n, "") == 0
		}, 10*time.Second, 10*time.Millisecond)
	})
}

func TestMetricsShowTrafficAndTheCoalescer(t *testing.T) {
	c := startCluster(t, "traffic", 3)
	report := c.healthy(t, 0)
	// A follower's node: its coalescer answers the leader's heartbeats.
	n := c.nodes[0]
	for _, nd := range c.nodes {
		if string(nd.Name()) != report.Leader {
			n = nd
			break
		}
	}
	s := serve(t, n)
	require.Eventually(t, func() bool {
		families, err := scrape(s)
		if err != nil {
			return false
		}
		framesOut, writes := networkValue(families, "regent_network_frames_out_total", n, ""), networkValue(families, "regent_network_writes_total", n, "")
		return framesOut > 0 && writes > 0 && writes <= framesOut &&
			networkValue(families, "regent_network_frames_in_total", n, "") > 0 &&
			networkValue(families, "regent_network_bytes_out_total", n, "") > framesOut &&
			networkValue(families, "regent_network_bytes_in_total", n, "") > 0 &&
			// steady heartbeats travel in batches once a leader ticks
			networkValue(families, "regent_coalescer_frames_out_total", n, "") > 0 &&
			networkValue(families, "regent_coalescer_entries_out_total", n, "") >= networkValue(families, "regent_coalescer_frames_out_total", n, "") &&
			networkValue(families, "regent_coalescer_frames_in_total", n, "") > 0 &&
			networkValue(families, "regent_coalescer_failed_frames_total", n, "") == 0 &&
			networkValue(families, "regent_coalescer_answered_total", n, "") > 0 &&
			networkValue(families, "regent_coalescer_mismatched_total", n, "") == 0
	}, settle, poll, "traffic and coalescer counters on /metrics")
}
