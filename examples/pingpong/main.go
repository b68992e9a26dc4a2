// Command pingpong starts two nodes on loopback that authenticate with a
// shared cookie, bounce a few messages between two actors and make a Call
// across the connection.
package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/regent-go/regent/act"
	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node"
)

// Ping and Pong are the messages the two nodes exchange; both nodes register
// them so they may cross the wire.
type Ping struct{ N int }

// Pong answers a Ping with the same N.
type Pong struct{ N int }

const rounds = 3

// ponger answers every Ping: a message with a Pong message, a Call with a
// Pong result.
type ponger struct{ act.Actor }

func (p *ponger) HandleMessage(from gen.PID, message any) error {
	if ping, ok := message.(Ping); ok {
		return p.Send(from, Pong{N: ping.N})
	}
	return p.Actor.HandleMessage(from, message)
}

func (p *ponger) HandleCall(from gen.PID, ref gen.Ref, request any) (any, error) {
	if ping, ok := request.(Ping); ok {
		return Pong{N: ping.N}, nil
	}
	return p.Actor.HandleCall(from, ref, request)
}

// pinger sends Ping{1}, waits for its Pong, sends the next, and reports every
// Pong on out until the last round.
type pinger struct {
	act.Actor
	target gen.ProcessID
	out    chan<- Pong
}

func (p *pinger) Init(args ...any) error {
	return p.Send(p.target, Ping{N: 1})
}

func (p *pinger) HandleMessage(from gen.PID, message any) error {
	pong, ok := message.(Pong)
	if !ok {
		return p.Actor.HandleMessage(from, message)
	}
	p.out <- pong
	if pong.N == rounds {
		return nil
	}
	return p.Send(p.target, Ping{N: pong.N + 1})
}

func startNode(name gen.Atom, cookie string, logs io.Writer) (gen.Node, error) {
	n, err := node.Start(name, gen.NodeOptions{
		Network: gen.NetworkOptions{Cookie: cookie},
		Log:     gen.LogOptions{Handler: slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})},
	})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	if err := n.Network().RegisterTypes([]any{Ping{}, Pong{}}); err != nil {
		n.Stop()
		return nil, fmt.Errorf("register types on %s: %w", name, err)
	}
	return n, nil
}

// run starts both nodes, plays the rounds and the Call, writes what happens
// to out, and stops the nodes.
func run(out io.Writer, logs io.Writer) error {
	const cookie = "pingpong example cookie"
	pongNode, err := startNode("pong@127.0.0.1", cookie, logs)
	if err != nil {
		return err
	}
	defer pongNode.Stop()
	pingNode, err := startNode("ping@127.0.0.1", cookie, logs)
	if err != nil {
		return err
	}
	defer pingNode.Stop()
	if err := pingNode.Network().AddRoute(pongNode.Name(), pongNode.Network().AcceptorAddress()); err != nil {
		return err
	}
	if _, err := pongNode.SpawnRegister("pong", func() gen.ProcessBehavior { return &ponger{} }, gen.ProcessOptions{}); err != nil {
		return fmt.Errorf("spawn pong: %w", err)
	}
	target := gen.ProcessID{Name: "pong", Node: pongNode.Name()}
	pongs := make(chan Pong, rounds)
	factory := func() gen.ProcessBehavior { return &pinger{target: target, out: pongs} }
	if _, err := pingNode.Spawn(factory, gen.ProcessOptions{}); err != nil {
		return fmt.Errorf("spawn ping: %w", err)
	}
	for i := 1; i <= rounds; i++ {
		select {
		case pong := <-pongs:
			fmt.Fprintf(out, "ping %d -> pong %d\n", i, pong.N)
		case <-time.After(10 * time.Second):
			return fmt.Errorf("round %d: no pong: %w", i, gen.ErrTimeout)
		}
	}
	answer, err := pingNode.Call(target, Ping{N: 42})
	if err != nil {
		return fmt.Errorf("call pong: %w", err)
	}
	fmt.Fprintf(out, "call Ping{42} -> %#v\n", answer)
	fmt.Fprintf(out, "connected nodes of %s: %v\n", pingNode.Name(), pingNode.Network().Nodes())
	return nil
}

func main() {
	if err := run(os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "pingpong:", err)
		os.Exit(1)
	}
}
