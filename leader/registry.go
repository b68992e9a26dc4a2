package leader

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/regent-go/regent/gen"
)

// nodeKey names one life of one node: a restarted node has a new creation,
// so a registration its earlier life left behind never blocks it.
type nodeKey struct {
	node     gen.Atom
	creation int64
}

// registry holds the leader actor of each cluster on each node, and what the
// leader actors of each node life share. Two actors with one ClusterID on
// one node would vote separately while the view counts their node once, so
// the second is refused at start. Its lock guards nodes and every
// nodeShare's members and clusters; it is taken at an actor's start and end and when a
// coalescer process ends, and is held while a coalescer process is spawned
// (whose Init takes no lock of ours). Lock order: registry, then the
// runtime's own locks.
var registry = struct {
	sync.Mutex
	nodes map[nodeKey]*nodeShare
}{nodes: map[nodeKey]*nodeShare{}}

// nodeShare is what the leader actors of one node life share: the heartbeat
// coalescer and its process. It lives while members is above zero.
type nodeShare struct {
	key     nodeKey
	node    gen.Node
	members int // leader actors registered on this node life; guarded by the registry lock
	// clusters holds the PID.ID of the leader actor of each ClusterID on
	// this node life (node and creation are the key's); guarded by the
	// registry lock. Kept per node, under the cluster alone, its entry is a
	// third of what one keyed by node, creation and cluster, with a whole
	// PID, cost each member.
	clusters map[string]uint64
	coal     *coalescer
	// gate is what the campaign gate counted for the node's members
	// (campaigngate.go); its waiting and maxQueue are guarded by the
	// gate's mu.
	gate gateTally
	// gridsMu guards grids: the heartbeat grid of each HeartbeatInterval
	// the node's leaders use (timers.go).
	gridsMu sync.Mutex
	grids   map[time.Duration]*heartbeatGrid
}

// gridFor returns the node's heartbeat grid for interval d.
func (s *nodeShare) gridFor(d time.Duration) *heartbeatGrid {
	s.gridsMu.Lock()
	defer s.gridsMu.Unlock()
	g := s.grids[d]
	if g == nil {
		if s.grids == nil {
			s.grids = make(map[time.Duration]*heartbeatGrid)
		}
		g = newHeartbeatGrid(newPairBeats(s.coal, d, gridPhase(s.node.Name())))
		s.grids[d] = g
	}
	return g
}

// closeGrids stops the node's heartbeat grids, once its last leader actor
// has ended.
func (s *nodeShare) closeGrids() {
	s.gridsMu.Lock()
	defer s.gridsMu.Unlock()
	for _, g := range s.grids {
		g.close()
	}
}

// pairBeatsFor returns the pair beats of the node's grid for interval d,
// nil when it has none.
func (c *coalescer) pairBeatsFor(d time.Duration) *pairBeats {
	s := c.share
	if s == nil {
		return nil
	}
	s.gridsMu.Lock()
	defer s.gridsMu.Unlock()
	if g := s.grids[d]; g != nil {
		return g.pairs
	}
	return nil
}

// coalescerSpawnWait bounds how long a first member waits for the coalescer
// process of a node's previous set of members to release the name.
const coalescerSpawnWait = 5 * time.Second

// register claims cluster on the node of process for it, and joins the
// node's share, starting the coalescer process when this is the node's
// first member. Errors wrap gen.ErrTaken when the cluster already has a
// member on the node (or the coalescer's name stays taken).
func register(process gen.Process, cluster string) (*nodeShare, error) {
	pid := process.PID()
	nk := nodeKey{node: pid.Node, creation: pid.Creation}
	deadline := time.Now().Add(coalescerSpawnWait)
	for {
		share, err := tryRegister(process, cluster, nk)
		if err == nil || !errors.Is(err, errCoalescerNameTaken) || time.Now().After(deadline) {
			return share, err
		}
		// The coalescer of the node's previous members is still ending.
		time.Sleep(time.Millisecond)
	}
}

var errCoalescerNameTaken = fmt.Errorf("leader: the heartbeat coalescer's name %s is taken: %w", CoalescerName, gen.ErrTaken)

func tryRegister(process gen.Process, cluster string, nk nodeKey) (*nodeShare, error) {
	pid := process.PID()
	registry.Lock()
	defer registry.Unlock()
	share := registry.nodes[nk]
	if share != nil {
		if other, ok := share.clusters[cluster]; ok && other != pid.ID {
			return nil, fmt.Errorf("leader: cluster %q already has a member on node %s (%s); one election actor per cluster per node: %w",
				cluster, pid.Node, share.pidOf(other), gen.ErrTaken)
		}
	}
	if share == nil {
		share = &nodeShare{key: nk, node: process.Node(), coal: newCoalescer(process.Node()), clusters: map[string]uint64{}}
		share.coal.share = share
		if _, err := process.Node().SpawnRegister(CoalescerName, coalescerFactory(share), gen.ProcessOptions{}); err != nil {
			if errors.Is(err, gen.ErrTaken) {
				return nil, errCoalescerNameTaken
			}
			return nil, fmt.Errorf("leader: starting the heartbeat coalescer: %w", err)
		}
		registry.nodes[nk] = share
	}
	share.clusters[cluster] = pid.ID
	share.members++
	return share, nil
}

// unregister gives this actor's place back, once; the node's last member
// stops the coalescer process.
func (a *Actor) unregister() {
	if !a.registered {
		return
	}
	a.registered = false
	pid := a.PID()
	share := a.share
	share.coal.removeInbox(pid)
	registry.Lock()
	if id, ok := share.clusters[a.options.ClusterID]; ok && id == pid.ID {
		delete(share.clusters, a.options.ClusterID)
	}
	share.members--
	last := share.members == 0 && registry.nodes[share.key] == share
	if last {
		delete(registry.nodes, share.key)
	}
	registry.Unlock()
	if !last {
		return
	}
	share.coal.stop()
	share.closeGrids()
	if cp := share.coal.pid.Load(); cp != nil {
		// Kill, not a message: nothing of this share may run after it. A
		// process already gone (the node stopping) is fine.
		_ = share.node.Kill(*cp)
	}
}

// coalescerEnded runs when the coalescer process ends. While the share is
// current (members remain) and the node runs, the process is replaced: it
// was killed or failed from outside, and peers must still reach the name.
// It reports whether the coalescer ended for good instead: its last member
// ended, or its node stops.
func (s *nodeShare) coalescerEnded(process gen.Process, reason error) bool {
	s.coal.pid.Store(nil)
	registry.Lock()
	defer registry.Unlock()
	if registry.nodes[s.key] != s || !s.node.IsAlive() {
		return true
	}
	process.Log().Error("leader: the heartbeat coalescer ended (%v) while %d leader actors use it; starting another", reason, s.members)
	if _, err := s.node.SpawnRegister(CoalescerName, coalescerFactory(s), gen.ProcessOptions{}); err != nil {
		process.Log().Error("leader: restarting the heartbeat coalescer: %v; members send directly until their node restarts", err)
	}
	return false
}

// ReadCoalescer returns the counters of node's heartbeat coalescer; Running is
// false when no leader actor runs on node.
func ReadCoalescer(node gen.Node) CoalescerStats {
	share := shareOf(node)
	if share == nil {
		return CoalescerStats{Dropped: map[string]uint64{}}
	}
	return share.coal.Stats()
}

// shareOf returns the share of node's current life; nil when no leader
// actor runs on it.
func shareOf(node gen.Node) *nodeShare {
	var share *nodeShare
	withShare(node, func(s *nodeShare) { share = s })
	return share
}

// withShare calls f with the share of node's current life (nil when no
// leader actor runs on it) under the registry's lock, which guards the
// share's clusters.
func withShare(node gen.Node, f func(*nodeShare)) {
	nk := nodeKey{node: node.Name(), creation: node.Creation()}
	registry.Lock()
	defer registry.Unlock()
	f(registry.nodes[nk])
}

// pidOf is the PID of the leader actor of s's node life whose PID.ID is id
// (clusters).
func (s *nodeShare) pidOf(id uint64) gen.PID {
	return gen.PID{Node: s.key.node, ID: id, Creation: s.key.creation}
}
