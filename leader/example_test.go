package leader_test

import (
	"fmt"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/node"
)

// coordinator is the leader document's Basic Usage: work that must run in
// exactly one place starts on promotion and stops on demotion.
type coordinator struct {
	leader.Actor

	peers   []gen.ProcessID
	running bool
	elected chan<- gen.Atom
}

type messageTick struct{}

func (c *coordinator) Init(args ...any) (leader.Options, error) {
	return leader.Options{
		ClusterID:      "scheduler",
		MinClusterSize: 3,
		Bootstrap:      c.peers,
	}, nil
}

func (c *coordinator) HandleBecomeLeader() error {
	c.running = true
	select {
	case c.elected <- c.Node().Name():
	default: // the example only needs the first election
	}
	return c.Send(c.PID(), messageTick{})
}

func (c *coordinator) HandleBecomeFollower(leader gen.PID) error {
	c.running = false // the tick handler sees it and stops rescheduling
	return nil
}

func (c *coordinator) HandleMessage(from gen.PID, message any) error {
	if _, ok := message.(messageTick); ok {
		if !c.IsLeader() {
			return nil // demoted between ticks
		}
		// The singleton work goes here, carrying c.FencingToken().
		_, err := c.SendAfter(c.PID(), messageTick{}, time.Second)
		return err
	}
	return nil
}

// Three nodes on loopback, each running the coordinator: exactly one becomes
// leader.
func Example() {
	names := []gen.Atom{"a@127.0.0.1", "b@127.0.0.1", "c@127.0.0.1"}
	var nodes []gen.Node
	for _, name := range names {
		n, err := node.Start(name, gen.NodeOptions{
			Network: gen.NetworkOptions{Cookie: "example", Acceptor: gen.AcceptorOptions{Host: "127.0.0.1"}},
			Log:     gen.LogOptions{Level: gen.LogLevelError},
		})
		if err != nil {
			panic(err)
		}
		defer n.Stop()
		// The wire types are registered before the actor is spawned.
		if err := n.Network().RegisterTypes(leader.NetworkTypes()); err != nil {
			panic(err)
		}
		nodes = append(nodes, n)
	}
	// Every node learns where the others listen (a discovery step of yours).
	for _, n := range nodes {
		for _, other := range nodes {
			if n != other {
				n.Network().AddRoute(other.Name(), other.Network().AcceptorAddress())
			}
		}
	}
	elected := make(chan gen.Atom, 8)
	for _, n := range nodes {
		var peers []gen.ProcessID
		for _, other := range names {
			if other != n.Name() {
				peers = append(peers, gen.ProcessID{Name: "coordinator", Node: other})
			}
		}
		_, err := n.SpawnRegister("coordinator", func() gen.ProcessBehavior {
			return &coordinator{peers: peers, elected: elected}
		}, gen.ProcessOptions{})
		if err != nil {
			panic(err)
		}
	}
	winner := <-elected
	fmt.Println("one coordinator leads:", winner != "")
	// Output: one coordinator leads: true
}

// Reading a member's election state through inspection, with item names.
func ExampleInspectKeys() {
	for _, key := range leader.InspectKeys()[:4] {
		fmt.Println(key)
	}
	// Output:
	// ergo:state
	// ergo:leader
	// ergo:leader_pid
	// ergo:leader_node
}
