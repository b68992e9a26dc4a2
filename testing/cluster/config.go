package cluster

import (
	"fmt"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/testing/history"
)

// Defaults of Config.
const (
	DefaultName             gen.Atom = "leader"
	DefaultClusterID                 = "cluster"
	DefaultCookie                    = "regent-cluster-harness"
	DefaultNodePrefix                = "m"
	DefaultKeepAlivePeriod           = 200 * time.Millisecond
	DefaultKeepAliveTimeout          = time.Second
	DefaultPollInterval              = 10 * time.Millisecond
	DefaultWorkEvery                 = 2 * time.Millisecond
	// DefaultConverge bounds Check's "one leader after the last heal" rule:
	// keepalive, reconnection and a few election rounds on a loaded machine.
	DefaultConverge = 15 * time.Second
)

// Config describes a cluster to Start. Zero values take the defaults.
type Config struct {
	// Size is the number of members, at least 1.
	Size int
	// Name is the registered name of every member's leader actor. Default "leader".
	Name gen.Atom
	// NodePrefix names the nodes: member i runs on node <prefix><i>@127.0.0.1
	// and appears in the history as <prefix><i>. Default "m".
	NodePrefix string
	// Options gives member i's base options; nil means {ClusterID: "cluster"}.
	// The harness fills Bootstrap with every other member unless it is set,
	// and chains its own OnTransition recorder after the user's.
	Options func(i int) leader.Options
	// Factory makes member i's behavior, a type embedding leader.Actor. Its
	// Init must return m.Options, which carry the harness's recorder. Nil
	// means PlainMember. Ignored in OS-process mode, which runs PlainMember.
	Factory func(m Member) gen.ProcessBehavior
	// Types are extra message types registered on every node, besides
	// leader.NetworkTypes.
	Types []any
	// Cookie is the nodes' shared secret. Default DefaultCookie.
	Cookie string
	// KeepAlivePeriod and KeepAliveTimeout are the nodes' keepalive; short
	// defaults (200 ms, 1 s) make silent partitions detected fast.
	KeepAlivePeriod  time.Duration
	KeepAliveTimeout time.Duration
	// LogLevel is every node's log level. Default gen.LogLevelError.
	LogLevel gen.LogLevel
	// Processes runs each member as a separate OS process built from
	// internal/membernode; the harness reads their state by remote
	// inspection from a node of its own, every PollInterval.
	Processes bool
	// PollInterval is the history's resolution in OS-process mode. Default 10 ms.
	PollInterval time.Duration
	// HoldDials makes silent cuts hold new connections across them (as a
	// firewall that drops packets) instead of refusing them at once (as one
	// that rejects). With it, a dial across a partition hangs for the
	// runtime's HandshakeTimeout (here KeepAliveTimeout).
	HoldDials bool
	// Seed makes the proxies' random choices (jitter, loss) reproducible.
	Seed uint64
	// Worker, in OS-process mode, makes every member run a worker that
	// records each act it does as leader (see WorkerConfig).
	Worker *WorkerConfig
	// Bounds are Check's timed bounds; a zero field takes its default:
	// StepDown is the largest ElectionTimeoutMax plus two HeartbeatIntervals
	// (plus PollInterval in OS-process mode), Converge is DefaultConverge.
	Bounds history.Bounds
}

// WorkerConfig describes the user's work in OS-process mode: each member
// sends itself a work message every Every and, on each, appends one record
// to <Dir>/<label>.<life> if IsLeader says it leads (ReadActs reads them).
type WorkerConfig struct {
	Dir   string
	Every time.Duration
	// Block is how long the next handler blocks after BlockHandler.
	Block time.Duration
	// ConfirmDelay is how long every HandleConfirmLeader takes.
	ConfirmDelay time.Duration
}

// Member is what Factory gets to build member Index's behavior.
type Member struct {
	Index int
	// Node is the member's node name; it stays the same across restarts.
	Node gen.Atom
	// Life counts the member's starts, from 1.
	Life int
	// Options are the options the behavior's Init must return.
	Options leader.Options
}

// PlainMember is the default Factory: a leader actor with no work of its own.
func PlainMember(m Member) gen.ProcessBehavior { return &plainMember{opts: m.Options} }

type plainMember struct {
	leader.Actor
	opts leader.Options
}

func (p *plainMember) Init(args ...any) (leader.Options, error) { return p.opts, nil }

// withDefaults fills the zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if c.Size < 1 {
		return c, fmt.Errorf("cluster: Size %d must be at least 1: %w", c.Size, gen.ErrIncorrect)
	}
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.NodePrefix == "" {
		c.NodePrefix = DefaultNodePrefix
	}
	if c.Options == nil {
		c.Options = func(int) leader.Options { return leader.Options{ClusterID: DefaultClusterID} }
	}
	if c.Factory == nil {
		c.Factory = PlainMember
	}
	if c.Cookie == "" {
		c.Cookie = DefaultCookie
	}
	if c.KeepAlivePeriod == 0 {
		c.KeepAlivePeriod = DefaultKeepAlivePeriod
	}
	if c.KeepAliveTimeout == 0 {
		c.KeepAliveTimeout = DefaultKeepAliveTimeout
	}
	if c.KeepAliveTimeout <= c.KeepAlivePeriod {
		return c, fmt.Errorf("cluster: KeepAliveTimeout %v must exceed KeepAlivePeriod %v: %w", c.KeepAliveTimeout, c.KeepAlivePeriod, gen.ErrIncorrect)
	}
	if c.LogLevel == gen.LogLevelDefault {
		c.LogLevel = gen.LogLevelError
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if w := c.Worker; w != nil {
		if !c.Processes || w.Dir == "" {
			return c, fmt.Errorf("cluster: a Worker needs OS-process mode and a Dir: %w", gen.ErrIncorrect)
		}
		if w.Every <= 0 {
			cp := *w
			cp.Every = DefaultWorkEvery
			c.Worker = &cp
		}
	}
	if c.Bounds.Converge == 0 {
		c.Bounds.Converge = DefaultConverge
	}
	if c.Bounds.StepDown == 0 {
		c.Bounds.StepDown = c.stepDownBound()
	}
	return c, nil
}

// stepDownBound is one election timeout (the largest maximum among the
// members) measured from the leader's last evidence, which may precede the
// cut by up to a heartbeat, plus a heartbeat for the tick that notices.
func (c Config) stepDownBound() time.Duration {
	var worst time.Duration
	for i := 0; i < c.Size; i++ {
		o := c.Options(i)
		etMax, hb := o.ElectionTimeoutMax, o.HeartbeatInterval
		switch {
		case etMax == 0 && o.ElectionTimeoutMin == 0:
			etMax = leader.DefaultElectionTimeoutMax
		case etMax == 0:
			etMax = 2 * o.ElectionTimeoutMin
		}
		if hb == 0 {
			hb = leader.DefaultHeartbeatInterval
		}
		worst = max(worst, time.Duration(etMax+2*hb)*time.Millisecond)
	}
	if c.Processes {
		worst += c.PollInterval
	}
	return worst
}

// nodeName is member i's node name.
func (c Config) nodeName(i int) gen.Atom {
	return gen.Atom(fmt.Sprintf("%s%d@127.0.0.1", c.NodePrefix, i))
}

// label is member i's name in the history.
func (c Config) label(i int) string { return fmt.Sprintf("%s%d", c.NodePrefix, i) }

func (c Config) networkOptions(routes map[gen.Atom]string) gen.NetworkOptions {
	return gen.NetworkOptions{
		Cookie:              c.Cookie,
		Acceptor:            gen.AcceptorOptions{Host: "127.0.0.1"},
		Routes:              routes,
		KeepAlivePeriod:     c.KeepAlivePeriod,
		KeepAliveTimeout:    c.KeepAliveTimeout,
		HandshakeTimeout:    c.KeepAliveTimeout,
		ReconnectBackoffMin: 20 * time.Millisecond,
		ReconnectBackoffMax: 250 * time.Millisecond,
	}
}
