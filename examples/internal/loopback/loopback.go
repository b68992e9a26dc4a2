package loopback

import (
	"fmt"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/faultproxy"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/node"
)

// Cookie is the examples' shared cookie.
const Cookie = "regent-examples"

// Start starts one node per name, registers the election's wire types and
// extra on each, and routes every node to every other: through mesh when it
// is not nil, directly otherwise. On error it stops what it started.
func Start(names []gen.Atom, mesh *faultproxy.Mesh, extra ...any) ([]gen.Node, error) {
	var nodes []gen.Node
	fail := func(err error) ([]gen.Node, error) {
		StopAll(nodes)
		return nil, err
	}
	for _, name := range names {
		n, err := node.Start(name, gen.NodeOptions{
			Network: gen.NetworkOptions{Cookie: Cookie, Acceptor: gen.AcceptorOptions{Host: "127.0.0.1"}},
			Log:     gen.LogOptions{Level: gen.LogLevelError},
		})
		if err != nil {
			return fail(fmt.Errorf("starting %s: %w", name, err))
		}
		nodes = append(nodes, n)
		if err := n.Network().RegisterTypes(append(leader.NetworkTypes(), extra...)); err != nil {
			return fail(fmt.Errorf("registering types on %s: %w", name, err))
		}
		if mesh != nil {
			if err := mesh.Add(name, n.Network().AcceptorAddress()); err != nil {
				return fail(err)
			}
		}
	}
	for _, from := range nodes {
		for _, to := range nodes {
			if from == to {
				continue
			}
			addr := to.Network().AcceptorAddress()
			if mesh != nil {
				addr = mesh.Route(from.Name(), to.Name())
			}
			if err := from.Network().AddRoute(to.Name(), addr); err != nil {
				return fail(fmt.Errorf("routing %s to %s: %w", from.Name(), to.Name(), err))
			}
		}
	}
	return nodes, nil
}

// StopAll stops every node that is still running.
func StopAll(nodes []gen.Node) {
	for _, n := range nodes {
		if n.IsAlive() {
			n.Stop()
		}
	}
}

// Peers returns the ProcessIDs of name on every node but self.
func Peers(name gen.Atom, nodes []gen.Node, self gen.Node) []gen.ProcessID {
	var out []gen.ProcessID
	for _, n := range nodes {
		if n != self {
			out = append(out, gen.ProcessID{Name: name, Node: n.Name()})
		}
	}
	return out
}

// Names returns prefix1@127.0.0.1 .. prefixN@127.0.0.1.
func Names(prefix string, n int) []gen.Atom {
	out := make([]gen.Atom, n)
	for i := range out {
		out[i] = gen.Atom(fmt.Sprintf("%s%d@127.0.0.1", prefix, i+1))
	}
	return out
}
