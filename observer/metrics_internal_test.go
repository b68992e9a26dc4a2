package observer

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node"
)

// A member's slow callbacks reach the metrics by callback, labelled like
// every other member metric.
func TestSlowCallbacksAreMetricsByCallback(t *testing.T) {
	n, err := node.Start("metrics-slow@127.0.0.1", gen.NodeOptions{
		Network: gen.NetworkOptions{Mode: gen.NetworkModeDisabled},
		Log:     gen.LogOptions{Level: gen.LogLevelError},
	})
	require.NoError(t, err)
	t.Cleanup(n.Stop)
	m := newMetrics(n)
	m.report = func() (Report, error) {
		return Report{Clusters: []ClusterReport{{ID: "c", Members: []MemberReport{
			{Node: "a@h", SlowCallbacks: map[string]uint64{"HandleMessage": 3, "HandleCall": 1}},
			{Node: "b@h"},
		}}}}, nil
	}
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "regent_leader_slow_callbacks_total" {
			continue
		}
		for _, metric := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range metric.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			require.Equal(t, "c", labels["cluster"])
			got[labels["node"]+" "+labels["callback"]] = metric.GetCounter().GetValue()
		}
	}
	require.Equal(t, map[string]float64{"a@h HandleMessage": 3, "a@h HandleCall": 1}, got)
}
