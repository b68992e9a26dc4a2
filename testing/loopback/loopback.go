package loopback

import (
	"crypto/rand"
	"errors"
	"fmt"
	"sync"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/node"
)

// Host is the address every node of a Cluster listens on.
const Host = "127.0.0.1"

// Options configure StartNode and Start.
type Options struct {
	// Cookie is the shared secret; it overrides Network.Cookie. When both are
	// empty a random cookie is made (one for all the nodes of a Start).
	Cookie string
	// Types are registered on every node besides leader.NetworkTypes.
	Types []any
	// Network is the template of every node's network options (TLS,
	// keepalive, routes, acceptor). Start listens on Host when
	// Network.Acceptor.Host is empty; StartNode leaves the acceptor as given.
	Network gen.NetworkOptions
	// Log is every node's log options; the zero value logs errors only.
	Log gen.LogOptions
	// Mesh, when set, carries every connection between the nodes of a Start:
	// each node is added to it and dials the others through its routes.
	// *faultproxy.Mesh is one.
	Mesh Mesh
}

// Mesh is a proxy between nodes: it learns where each node listens and
// gives the address one node dials to reach another.
type Mesh interface {
	Add(name gen.Atom, acceptorAddr string) error
	Route(from, to gen.Atom) string
}

// RandomCookie returns a fresh random cookie (128 bits as text), for nodes that only
// ever talk to each other (a demo, a benchmark).
func RandomCookie() string {
	return rand.Text()
}

// StartNode starts one node named name and registers the election's wire
// types and o.Types on it. On error nothing is left running.
func StartNode(name gen.Atom, o Options) (gen.Node, error) {
	opts := o.Network
	if o.Cookie != "" {
		opts.Cookie = o.Cookie
	}
	if opts.Cookie == "" {
		opts.Cookie = RandomCookie()
	}
	logOpts := o.Log
	if logOpts == (gen.LogOptions{}) {
		logOpts.Level = gen.LogLevelError
	}
	n, err := node.Start(name, gen.NodeOptions{Network: opts, Log: logOpts})
	if err != nil {
		return nil, fmt.Errorf("loopback: starting node %s: %w", name, err)
	}
	if err := n.Network().RegisterTypes(append(leader.NetworkTypes(), o.Types...)); err != nil {
		n.StopForce()
		return nil, fmt.Errorf("loopback: registering the election's types on %s: %w", name, err)
	}
	return n, nil
}

// Cluster is nodes on 127.0.0.1, each routed to every other. Indexes are
// stable: a node that is down keeps its slot (and its name) until Restart.
type Cluster struct {
	opts  Options
	names []gen.Atom
	nodes []gen.Node // nil while down
}

// Start starts one node per name (see Names), registers the election's wire
// types and o.Types on each, and routes every node to every other: through
// o.Mesh when set, directly otherwise. On error it stops what it started.
func Start(names []gen.Atom, o Options) (*Cluster, error) {
	if o.Cookie == "" && o.Network.Cookie == "" {
		o.Cookie = RandomCookie()
	}
	if o.Network.Acceptor.Host == "" {
		o.Network.Acceptor.Host = Host
	}
	c := &Cluster{opts: o, names: names, nodes: make([]gen.Node, len(names))}
	for i := range names {
		if err := c.Restart(i); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// Names returns prefix1@127.0.0.1 .. prefixN@127.0.0.1.
func Names(prefix string, n int) []gen.Atom {
	out := make([]gen.Atom, n)
	for i := range out {
		out[i] = gen.Atom(fmt.Sprintf("%s%d@%s", prefix, i+1, Host))
	}
	return out
}

// Size is the number of node slots.
func (c *Cluster) Size() int { return len(c.names) }

// Name is node i's name; it stays the same across restarts.
func (c *Cluster) Name(i int) gen.Atom { return c.names[i] }

// Node is node i, nil while it is down.
func (c *Cluster) Node(i int) gen.Node { return c.nodes[i] }

// Nodes returns every slot's node, nil for those that are down.
func (c *Cluster) Nodes() []gen.Node { return append([]gen.Node(nil), c.nodes...) }

// Cookie is the nodes' shared secret.
func (c *Cluster) Cookie() string {
	if c.opts.Cookie != "" {
		return c.opts.Cookie
	}
	return c.opts.Network.Cookie
}

// Live lists the indexes of the running nodes.
func (c *Cluster) Live() []int {
	var out []int
	for i, n := range c.nodes {
		if n != nil && n.IsAlive() {
			out = append(out, i)
		}
	}
	return out
}

// Peers returns the ProcessIDs of the process registered as name on every
// node but i, for Options.Bootstrap.
func (c *Cluster) Peers(name gen.Atom, i int) []gen.ProcessID {
	var out []gen.ProcessID
	for j, n := range c.names {
		if j != i {
			out = append(out, gen.ProcessID{Name: name, Node: n})
		}
	}
	return out
}

// Restart starts node i (again, after Kill or Stop: the same name on a new
// port) and routes it to and from every running node. It does nothing when
// node i runs.
func (c *Cluster) Restart(i int) error {
	if c.nodes[i] != nil && c.nodes[i].IsAlive() {
		return nil
	}
	n, err := StartNode(c.names[i], c.opts)
	if err != nil {
		return err
	}
	c.nodes[i] = n
	if c.opts.Mesh != nil {
		if err := c.opts.Mesh.Add(c.names[i], n.Network().AcceptorAddress()); err != nil {
			return fmt.Errorf("loopback: adding %s to the mesh: %w", c.names[i], err)
		}
	}
	for j, other := range c.nodes {
		if j == i || other == nil || !other.IsAlive() {
			continue
		}
		if err := c.route(i, j); err != nil {
			return err
		}
		if err := c.route(j, i); err != nil {
			return err
		}
	}
	return nil
}

// route tells node from where node to listens (or its mesh route).
func (c *Cluster) route(from, to int) error {
	addr := c.nodes[to].Network().AcceptorAddress()
	if c.opts.Mesh != nil {
		addr = c.opts.Mesh.Route(c.names[from], c.names[to])
	}
	if err := c.nodes[from].Network().AddRoute(c.names[to], addr); err != nil {
		return fmt.Errorf("loopback: routing %s to %s: %w", c.names[from], c.names[to], err)
	}
	return nil
}

// Kill stops node i at once (StopForce): peers see its connections drop.
func (c *Cluster) Kill(i int) {
	if n := c.nodes[i]; n != nil {
		c.nodes[i] = nil
		n.StopForce()
		n.Wait()
	}
}

// Stop stops node i gracefully: its processes terminate with a real reason.
func (c *Cluster) Stop(i int) {
	if n := c.nodes[i]; n != nil {
		c.nodes[i] = nil
		n.Stop()
	}
}

// Close stops every running node gracefully, all at once, and returns when
// they are down. It does not close the mesh, which the caller owns.
func (c *Cluster) Close() {
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		if n != nil {
			c.nodes[i] = nil
			wg.Go(n.Stop)
		}
	}
	wg.Wait()
}

// errNotRunning marks a member whose node is down.
var errNotRunning = errors.New("loopback: node is down")
