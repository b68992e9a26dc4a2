package observer

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
)

// Actor is one leader actor running on the observed node, with its own
// inspection only.
type Actor struct {
	PID     string `json:"pid"`
	Cluster string `json:"cluster"`
	// Error is why the actor's inspection could not be read.
	Error  string       `json:"error,omitempty"`
	Status MemberReport `json:"status"`
}

// Actors lists the leader actors on node with their own inspection, ordered
// by cluster ID then PID.
func Actors(node gen.Node) ([]Actor, error) {
	return actors(node, nil)
}

// actors is Actors, calling pause after each actor with how long reading
// it took (nil: no pause); pause returns false to stop, and the list then
// holds the actors read so far.
func actors(node gen.Node, pause func(read time.Duration) bool) ([]Actor, error) {
	pids, err := leader.Find(node)
	if err != nil {
		return nil, fmt.Errorf("observer: finding leader actors on %s: %w", node.Name(), err)
	}
	out := make([]Actor, 0, len(pids))
	for _, pid := range pids {
		start := time.Now()
		a := Actor{PID: pid.String(), Status: MemberReport{Node: string(pid.Node), PID: pid.String(), Self: true}}
		inspection, err := node.Inspect(pid)
		if err != nil {
			a.Error = fmt.Sprintf("inspect %s: %v", pid, err)
			a.Status.Error = a.Error
		} else {
			parseMember(&a.Status, inspection)
			a.Cluster = a.Status.Cluster
		}
		out = append(out, a)
		if pause != nil && !pause(time.Since(start)) {
			break
		}
	}
	slices.SortFunc(out, func(x, y Actor) int {
		if c := strings.Compare(x.Cluster, y.Cluster); c != 0 {
			return c
		}
		return strings.Compare(x.PID, y.PID)
	})
	return out, nil
}

// Collect reads every cluster the leader actors on node belong to: each
// member's inspection, local and remote. A cluster or member that cannot be
// read carries its error in the report; Collect itself fails only when the
// node's processes cannot be listed.
func Collect(node gen.Node) (Report, error) {
	return collect(node, nil)
}

// collect is Collect, calling pause after each cluster with how long
// reading it took (nil: no pause); pause returns false to stop, and the
// report then holds the clusters read so far.
func collect(node gen.Node, pause func(read time.Duration) bool) (Report, error) {
	report := emptyReport(node)
	report.CollectedAt = time.Now()
	pids, err := leader.Find(node)
	if err != nil {
		return report, fmt.Errorf("observer: finding leader actors on %s: %w", node.Name(), err)
	}
	seen := make(map[string]bool)
	for _, pid := range pids {
		start := time.Now()
		cluster := readCluster(node, pid)
		if cluster.ID != "" && !seen[cluster.ID] {
			// Else the actor ended between Find and now, or another local
			// actor of the same cluster was read already.
			seen[cluster.ID] = true
			report.Clusters = append(report.Clusters, cluster)
		}
		if pause != nil && !pause(time.Since(start)) {
			break
		}
	}
	slices.SortFunc(report.Clusters, func(x, y ClusterReport) int { return strings.Compare(x.ID, y.ID) })
	return report, nil
}

// emptyReport is a report of node with no cluster.
func emptyReport(node gen.Node) Report {
	return Report{Node: string(node.Name()), Clusters: []ClusterReport{}}
}

// CollectCluster reads one cluster of node, as Collect reads each, and
// reports false when the node runs no leader actor of it. It reads that
// cluster's members only: asking about one cluster of a node of a thousand
// does not wake the others.
func CollectCluster(node gen.Node, cluster string) (ClusterReport, bool) {
	pid, ok := leader.FindCluster(node, cluster)
	if !ok {
		return ClusterReport{}, false
	}
	c := readCluster(node, pid)
	return c, c.ID == cluster
}

// readCluster reads the cluster of the local leader actor pid. Its ID is empty
// when the actor no longer answers.
func readCluster(node gen.Node, pid gen.PID) ClusterReport {
	c := ClusterReport{Via: pid.String(), ViaNode: string(pid.Node), ReadAt: time.Now(), Members: []MemberReport{}}
	self, err := leader.ReadInspection(node, pid, "ergo:cluster")
	if err != nil {
		return c
	}
	c.ID = self.Cluster
	inspections, err := leader.InspectCluster(node, pid)
	if err != nil {
		c.Error = fmt.Sprintf("reading the view of %s: %v", pid, err)
		c.analyze()
		return c
	}
	for _, mi := range inspections {
		m := MemberReport{
			Node:              string(mi.Node),
			ProcessID:         mi.ProcessID.String(),
			Self:              mi.Self,
			InViewUnreachable: mi.Unreachable,
		}
		if mi.PID != (gen.PID{}) {
			m.PID = mi.PID.String()
		}
		if mi.Err != nil {
			m.Error = mi.Err.Error()
		} else {
			parseMember(&m, mi.Inspection)
		}
		c.Members = append(c.Members, m)
	}
	c.analyze()
	return c
}
