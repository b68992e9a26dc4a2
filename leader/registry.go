package leader

import (
	"fmt"
	"sync"

	"github.com/regent-go/regent/gen"
)

// registryKey names one cluster on one life of one node: a restarted node
// has a new creation, so a registration its earlier life left behind never
// blocks it.
type registryKey struct {
	node     gen.Atom
	creation int64
	cluster  string
}

// registry holds the leader actor of each cluster on each node. Two actors
// with one ClusterID on one node would vote separately while the view counts
// their node once, so the second is refused at start. Its lock guards the
// map and nothing else; it is taken only at an actor's start and end.
var registry = struct {
	sync.Mutex
	byKey map[registryKey]gen.PID
}{byKey: map[registryKey]gen.PID{}}

// register claims cluster on pid's node for pid; errors wrap gen.ErrTaken.
func register(pid gen.PID, cluster string) error {
	k := registryKey{node: pid.Node, creation: pid.Creation, cluster: cluster}
	registry.Lock()
	defer registry.Unlock()
	if other, ok := registry.byKey[k]; ok && other != pid {
		return fmt.Errorf("leader: cluster %q already has a member on node %s (%s); one election actor per cluster per node: %w",
			cluster, pid.Node, other, gen.ErrTaken)
	}
	registry.byKey[k] = pid
	return nil
}

// unregister gives this actor's place back, once.
func (a *Actor) unregister() {
	if !a.registered {
		return
	}
	a.registered = false
	pid := a.PID()
	k := registryKey{node: pid.Node, creation: pid.Creation, cluster: a.options.ClusterID}
	registry.Lock()
	defer registry.Unlock()
	if registry.byKey[k] == pid {
		delete(registry.byKey, k)
	}
}
