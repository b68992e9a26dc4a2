package node_test

import (
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/regent-go/regent/act"
	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/syncbuf"
	"github.com/regent-go/regent/node"
)

func TestMain(m *testing.M) {
	if name := os.Getenv(envChildNode); name != "" {
		runChildNode(name)
		return
	}
	goleak.VerifyTestMain(m)
}

// wait is the generous bound for anything a test waits for.
const wait = 10 * time.Second

// probe is a test actor: it reports what happens to it on channels the test
// reads, and lets the test script its answers.
type probe struct {
	act.Actor
	cfg *probeConfig
}

type probeConfig struct {
	messages   chan any
	terminated chan error
	onCall     func(p *probe, from gen.PID, ref gen.Ref, request any) (any, error)
	onMessage  func(p *probe, from gen.PID, message any) error
	onInit     func(p *probe, args ...any) error
	inspect    map[string]string
}

func newProbe() *probeConfig {
	return &probeConfig{messages: make(chan any, 1024), terminated: make(chan error, 16)}
}

func (c *probeConfig) factory() gen.ProcessFactory {
	return func() gen.ProcessBehavior { return &probe{cfg: c} }
}

func (p *probe) Init(args ...any) error {
	if p.cfg.onInit != nil {
		return p.cfg.onInit(p, args...)
	}
	return nil
}

func (p *probe) HandleMessage(from gen.PID, message any) error {
	if p.cfg.onMessage != nil {
		return p.cfg.onMessage(p, from, message)
	}
	p.cfg.messages <- message
	return nil
}

func (p *probe) HandleCall(from gen.PID, ref gen.Ref, request any) (any, error) {
	if p.cfg.onCall != nil {
		return p.cfg.onCall(p, from, ref, request)
	}
	return request, nil
}

// Terminate reports the reason; probes sharing a config report the first few.
func (p *probe) Terminate(reason error) {
	select {
	case p.cfg.terminated <- reason:
	default:
	}
}

func (p *probe) HandleInspect(from gen.PID, item ...string) map[string]string {
	return p.cfg.inspect
}

// next returns the next message the probe handled.
func (c *probeConfig) next(t *testing.T) any {
	t.Helper()
	select {
	case m := <-c.messages:
		return m
	case <-time.After(wait):
		t.Fatal("no message arrived")
		return nil
	}
}

// byType collects the next count messages keyed by their type name, for
// messages whose relative order is not specified.
func (c *probeConfig) byType(t *testing.T, count int) map[string]any {
	t.Helper()
	got := map[string]any{}
	for i := 0; i < count; i++ {
		m := c.next(t)
		got[fmt.Sprintf("%T", m)] = m
	}
	return got
}

// reason returns the reason the probe terminated with.
func (c *probeConfig) reason(t *testing.T) error {
	t.Helper()
	select {
	case r := <-c.terminated:
		return r
	case <-time.After(wait):
		t.Fatal("the process did not terminate")
		return nil
	}
}

// startLocal starts a node without network whose log goes to the returned
// buffer; the node stops when the test ends.
func startLocal(t *testing.T, name gen.Atom) (gen.Node, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	n, err := node.Start(name, gen.NodeOptions{
		Network: gen.NetworkOptions{Mode: gen.NetworkModeDisabled},
		Log:     gen.LogOptions{Handler: slog.NewTextHandler(logs, nil)},
	})
	require.NoError(t, err)
	t.Cleanup(n.Stop)
	return n, logs
}

func spawnProbe(t *testing.T, n gen.Node, c *probeConfig) gen.PID {
	t.Helper()
	pid, err := n.Spawn(c.factory(), gen.ProcessOptions{})
	require.NoError(t, err)
	return pid
}

// silentCallers spawns a process that answers no Call, and returns a probe
// config whose processes, on any message, call it with a 600 s timeout and
// report the error the Call ends with.
func silentCallers(t *testing.T, n gen.Node) *probeConfig {
	t.Helper()
	silent := newProbe()
	silent.onCall = func(p *probe, from gen.PID, ref gen.Ref, request any) (any, error) { return nil, nil }
	silentPID := spawnProbe(t, n, silent)
	callers := newProbe()
	callers.onMessage = func(p *probe, from gen.PID, message any) error {
		_, err := p.CallWithTimeout(silentPID, "never answered", 600)
		p.cfg.messages <- err
		return nil
	}
	return callers
}

func nodeStartDisabled(name gen.Atom) (gen.Node, error) {
	return node.Start(name, gen.NodeOptions{Network: gen.NetworkOptions{Mode: gen.NetworkModeDisabled}})
}
