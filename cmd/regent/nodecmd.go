package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/observer"
	"github.com/regent-go/regent/testing/loopback"
)

const nodeSynopsis = `node --name NAME@HOST:PORT [--join PEER@HOST:PORT,...] [flags]

Runs one election member as this OS process, on a node listening at the port
in its name. Start several with the same cookie and --cluster, each joining
the others, to form a cluster across terminals or hosts. Logs every change of
role, and warns about a --join peer it cannot reach, saying why. Every flag
may also come from the environment variable shown beside it; the command line
wins. The cookie is required: give it as $REGENT_COOKIE or in a file
(--cookie-file), not as --cookie, which every user of the machine can read in
ps.

The observer (--observer) has no authentication: anyone who reaches its
address reads the cluster's state. Bind it to 127.0.0.1 or another trusted
address, never to a public interface.

Examples:
  REGENT_COOKIE_FILE=regent.cookie regent node --name n1@127.0.0.1:4371 --join n2@127.0.0.1:4372,n3@127.0.0.1:4373
  regent node --name n1@127.0.0.1:4371 --cookie-file regent.cookie --tls-cert n1.pem --tls-key n1.key --tls-ca ca.pem --join n2@127.0.0.1:4372
  regent node --name n1@127.0.0.1:4371 --cookie-file regent.cookie --state-file n1.state --observer 127.0.0.1:8481`

// nodeConfig is regent node's command line.
type nodeConfig struct {
	name, cluster, member string
	join                  listFlag
	net                   netFlags
	opts                  leader.Options // the fields the flags below fill
	minSize               int
	eMin, eMax, heartbeat msFlag
	ghostTTL, preferFor   msFlag
	confirmEvery          msFlag
	evidence, prefer      string
	confirmFile           string
	observer              string
	mcpStdio, noColor     bool
	logLevel, logFormat   string
}

func (c *nodeConfig) register(fs *flagSet) {
	fs.StringVar(&c.name, "name", "", "this node's `NAME@HOST:PORT`; it listens at that port, and peers dial it there (required)")
	c.net.register(fs)
	fs.StringVar(&c.cluster, "cluster", "regent", "cluster `ID` (leader.Options.ClusterID); every member of a cluster uses the same")
	fs.Var(&c.join, "join", "`PEERS` to join, name@host:port, comma-separated or repeated; may name this node too (Options.Bootstrap)")
	fs.StringVar(&c.member, "member", string(memberName), "registered `NAME` of the election actor on every node")
	fs.IntVar(&c.minSize, "min-size", 0, "smallest view that may have a leader, in `MEMBERS` (MinClusterSize; 0: the default, 3): keep it above half the cluster")
	fs.Var(&c.eMin, "election-min", "least wait before a follower campaigns, in `MS` or a duration such as 1.5s (ElectionTimeoutMin; default 150)")
	fs.Var(&c.eMax, "election-max", "most wait before a follower campaigns, in `MS` (ElectionTimeoutMax; default 300, or twice --election-min)")
	fs.Var(&c.heartbeat, "heartbeat", "how often a leader asserts itself, in `MS` (HeartbeatInterval; default 50)")
	fs.Var(&c.ghostTTL, "ghost-ttl", "how long a peer whose connection dropped stays in the view, in `MS` (GhostTTL; default 5000)")
	fs.BoolVar(&c.opts.DisablePreVote, "no-prevote", false, "turn off PreVote and leader stickiness")
	fs.StringVar(&c.evidence, "evidence", "replies", "what proves a leader still reaches a peer: `replies|contact` (acknowledgements, or any traffic as the leader document says)")
	fs.BoolVar(&c.opts.DisableFastFailover, "no-fast-failover", false, "do not campaign early when the leader is reported down")
	fs.StringVar(&c.prefer, "prefer", "none", "preferred leader: `none|oldest|highest-id` (earliest start, or highest node name)")
	fs.Var(&c.preferFor, "prefer-stable-for", "how long a more-preferred member must answer steadily before leadership moves to it, in `MS` (PreferStableFor; default twice --election-max)")
	fs.StringVar(&c.confirmFile, "confirm-file", "", "lead only while this `FILE` exists (HandleConfirmLeader): remove it to keep this node from leading")
	fs.Var(&c.confirmEvery, "confirm-interval", "with --confirm-file, re-check it every `MS` while leading and step down when it is gone (ConfirmInterval; 0: at election only)")
	fs.StringVar(&c.opts.SameHost, "same-host", "", "`PATH` of the same-host cell shared by this cluster's members on this host (SameHost)")
	fs.StringVar(&c.opts.StateFile, "state-file", "", "keep the term and vote in this `FILE` across restarts (StateFile); without it a restarted member may vote twice in a term")
	fs.StringVar(&c.observer, "observer", "", "serve the observer page, /api, /metrics and /mcp at `HOST:PORT`; it has no authentication, so bind it to a trusted address such as 127.0.0.1:8481 (empty: none)")
	fs.BoolVar(&c.mcpStdio, "mcp-stdio", false, "serve the observer's MCP tools on stdin/stdout (the log moves to stderr)")
	fs.StringVar(&c.logLevel, "log-level", "warning", "runtime log `LEVEL`: trace, debug, info, warning, error, disabled (role changes are always logged)")
	fs.StringVar(&c.logFormat, "log-format", logText, "log format: `text|json` (readable lines for a terminal, or one JSON object a line)")
	fs.BoolVar(&c.noColor, "no-color", false, "never color the log")
}

// options completes the leader.Options from the flags.
func (c *nodeConfig) options() (leader.Options, error) {
	o := c.opts
	o.ClusterID = c.cluster
	o.MinClusterSize = c.minSize
	o.ElectionTimeoutMin, o.ElectionTimeoutMax, o.HeartbeatInterval = int(c.eMin), int(c.eMax), int(c.heartbeat)
	o.GhostTTL, o.PreferStableFor, o.ConfirmInterval = int(c.ghostTTL), int(c.preferFor), int(c.confirmEvery)
	if c.minSize < 0 {
		return o, usageError("--min-size %d: must be 1 or more (0 takes the default)", c.minSize)
	}
	switch c.evidence {
	case "replies":
		o.Evidence = leader.EvidenceReplies
	case "contact":
		o.Evidence = leader.EvidenceContact
	default:
		return o, usageError("--evidence %q: want replies or contact", c.evidence)
	}
	switch c.prefer {
	case "none":
	case "oldest":
		o.Prefer = leader.Preference{Kind: leader.PreferOldest}
	case "highest-id":
		o.Prefer = leader.Preference{Kind: leader.PreferHighestID}
	default:
		return o, usageError("--prefer %q: want none, oldest or highest-id", c.prefer)
	}
	if c.confirmEvery > 0 && c.confirmFile == "" {
		return o, usageError("--confirm-interval needs --confirm-file: without a gate there is nothing to re-check")
	}
	for _, peer := range c.join {
		if err := checkNodeName("--join", peer); err != nil {
			return o, err
		}
		if peer != c.name {
			o.Bootstrap = append(o.Bootstrap, gen.ProcessID{Name: gen.Atom(c.member), Node: gen.Atom(peer)})
		}
	}
	return o, nil
}

// optionFlags maps the leader.Options fields that errors from Init may
// name to the flags that set them.
var optionFlags = strings.NewReplacer(
	"ElectionTimeoutMin", "--election-min", "ElectionTimeoutMax", "--election-max",
	"HeartbeatInterval", "--heartbeat", "GhostTTL", "--ghost-ttl", "MinClusterSize", "--min-size",
	"PreferStableFor", "--prefer-stable-for", "ConfirmInterval", "--confirm-interval",
	"ClusterID", "--cluster", "StateFile", "--state-file", "SameHost", "--same-host",
)

func runNode(ctx context.Context, args []string, env *environment) error {
	var c nodeConfig
	fs := newFlags(env, "node", nodeSynopsis).withEnv()
	c.register(fs)
	rest, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageError("unexpected arguments %q (flags take --name=value or --name value)", rest)
	}
	if c.name == "" {
		return usageError("--name (or $REGENT_NAME) is required: name@host:port")
	}
	if err := checkNodeName("--name", c.name); err != nil {
		return err
	}
	if err := c.net.resolve(fs.typed["cookie"]); err != nil {
		return err
	}
	level, err := parseLevel(c.logLevel)
	if err != nil {
		return err
	}
	opts, err := c.options()
	if err != nil {
		return err
	}
	logOut := env.stdout
	if c.mcpStdio {
		logOut = env.stderr
	}
	p, err := newPrinter(logOut, c.logFormat, c.noColor)
	if err != nil {
		return err
	}
	for _, w := range c.net.warnings() {
		p.warn("%s", w)
	}
	p.say("%s", c.net.notice())

	n, err := loopback.StartNode(gen.Atom(c.name), loopback.Options{
		Cookie:  c.net.resolvedCookie,
		Network: c.net.options(),
		Log:     p.nodeLog(level),
	})
	if err != nil {
		return err
	}
	defer n.Stop()
	opts.OnTransition = roleLogger(p)
	gate := confirmGate(c.confirmFile)
	pid, err := n.SpawnRegister(gen.Atom(c.member), func() gen.ProcessBehavior { return &member{opts: opts, confirm: gate} }, gen.ProcessOptions{})
	if err != nil {
		if errors.Is(err, gen.ErrIncorrect) {
			return usageError("%s", optionFlags.Replace(err.Error()))
		}
		return fmt.Errorf("spawning the member: %w", err)
	}
	p.say("node %s listening on %s: member %s %s of cluster %q, joining %d peers",
		c.name, n.Network().AcceptorAddress(), c.member, pid, c.cluster, len(opts.Bootstrap))
	if c.observer != "" {
		s, err := observer.Serve(n, c.observer)
		if err != nil {
			return err
		}
		defer closeAndLog(s, p)
		p.say("observer page: %s (no authentication: anyone who reaches this address can read it)", s.URL())
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		newJoinWatch(n, p, gen.Atom(c.member), c.cluster, opts.Bootstrap).run(watchCtx)
	}()
	defer func() {
		stopWatch()
		<-watched
	}()
	if c.mcpStdio {
		err := observer.ServeMCPStdio(ctx, n)
		if ctx.Err() == nil {
			return err
		}
	} else {
		<-ctx.Done()
	}
	p.say("stopping node %s", c.name)
	return nil
}

// roleLogger logs every change of a member's role, term or leader, with
// the view and the floor it is under, as the OnTransition of a member.
func roleLogger(p *printer) func(leader.Transition) {
	var last leader.Transition // owned by the member's goroutine, the only caller
	return func(t leader.Transition) {
		if t.Role == last.Role && t.Leader == last.Leader && t.Term == last.Term {
			return
		}
		last = t
		attrs := transitionAttrs(t)
		if t.Role == leader.RoleUnclustered {
			attrs = append(attrs, slog.String("why", fmt.Sprintf("its view of %d is below the floor of %d (--min-size)", t.ViewSize, t.MinClusterSize)))
		}
		p.event(t.At, strings.ToUpper(string(t.Role)), attrs...)
	}
}

// confirmGate returns the member's HandleConfirmLeader for --confirm-file:
// nil without one (every election is confirmed).
func confirmGate(path string) func() (bool, error) {
	if path == "" {
		return nil
	}
	return func() (bool, error) {
		_, err := os.Stat(path)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, os.ErrNotExist):
			return false, nil
		}
		return false, fmt.Errorf("checking --confirm-file: %w", err)
	}
}

// closeAndLog closes c and reports a failure on p: the process is ending, so
// the error cannot change the outcome but must not vanish.
func closeAndLog(c io.Closer, p *printer) {
	if err := c.Close(); err != nil {
		p.warn("closing: %v", err)
	}
}

// parseLevel reads a gen.LogLevel by name.
func parseLevel(s string) (gen.LogLevel, error) {
	for l := gen.LogLevelTrace; l <= gen.LogLevelDisabled; l++ {
		if l.String() == strings.ToLower(s) {
			return l, nil
		}
	}
	return 0, usageError("--log-level %q: want trace, debug, info, warning, error or disabled", s)
}

// msFlag is a non-negative number of milliseconds, given as an integer (150)
// or a duration (150ms, 2s).
type msFlag int

func (m *msFlag) String() string { return strconv.Itoa(int(*m)) }

func (m *msFlag) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		d, derr := time.ParseDuration(v)
		if derr != nil {
			return fmt.Errorf("%q is neither milliseconds nor a duration", v)
		}
		if d%time.Millisecond != 0 {
			return fmt.Errorf("%q is finer than a millisecond", v)
		}
		n = int(d / time.Millisecond)
	}
	if n < 0 {
		return fmt.Errorf("%q is negative", v)
	}
	*m = msFlag(n)
	return nil
}
