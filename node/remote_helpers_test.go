package node_test

import (
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/syncbuf"
	"github.com/regent-go/regent/node"
)

const testCookie = "secret cookie"

// fastNet are network options with short keepalive bounds for tests.
func fastNet(cookie string) gen.NetworkOptions {
	return gen.NetworkOptions{
		Cookie:              cookie,
		KeepAlivePeriod:     100 * time.Millisecond,
		KeepAliveTimeout:    2 * time.Second,
		HandshakeTimeout:    2 * time.Second,
		ReconnectBackoffMin: 10 * time.Millisecond,
		ReconnectBackoffMax: 50 * time.Millisecond,
	}
}

// startNet starts a networked node on loopback; it stops when the test ends.
func startNet(t *testing.T, name gen.Atom, opts gen.NetworkOptions) (gen.Node, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	n, err := node.Start(name, gen.NodeOptions{
		Network: opts,
		Log:     gen.LogOptions{Handler: slog.NewTextHandler(logs, nil)},
	})
	require.NoError(t, err)
	t.Cleanup(n.Stop)
	require.NoError(t, n.Network().RegisterTypes([]any{ping{}, pong{}}))
	return n, logs
}

// pair starts two nodes that know each other's address.
func pair(t *testing.T) (gen.Node, gen.Node) {
	t.Helper()
	a, _ := startNet(t, "a@127.0.0.1", fastNet(testCookie))
	b, _ := startNet(t, "b@127.0.0.1", fastNet(testCookie))
	route(t, a, b)
	route(t, b, a)
	return a, b
}

// route tells from where to dial to.
func route(t *testing.T, from, to gen.Node) {
	t.Helper()
	require.NoError(t, from.Network().AddRoute(to.Name(), to.Network().AcceptorAddress()))
}

type ping struct {
	Seq  int
	Text string
}

type pong struct {
	Seq int
}

// freeAddr returns a loopback host:port nobody listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
