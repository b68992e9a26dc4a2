package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/node"
	"github.com/regent-go/regent/observer"
)

const nodeSynopsis = `node --name NAME@HOST:PORT [--join PEER@HOST:PORT,...] [flags]

Runs one election member as this OS process, on a node listening at the port
in its name. Start several with the same --cookie and --cluster, each joining
the others, to form a cluster across terminals or hosts. Logs every change of
role. Every flag may also come from REGENT_<FLAG> in the environment (dashes as
underscores), e.g. REGENT_NAME, REGENT_COOKIE, REGENT_CLUSTER, REGENT_JOIN
(comma-separated); the command line wins.`

func runNode(ctx context.Context, args []string, env *environment) error {
	var (
		name, cookie, cluster, member, obsAddr, logLevel string
		join                                             listFlag
		minSize, eMin, eMax, heartbeat                   int
		mcpStdio, noColor                                bool
	)
	fs := newFlags(env, "node", nodeSynopsis)
	fs.StringVar(&name, "name", "", "node name, name@host:port (required)")
	fs.StringVar(&cookie, "cookie", "", "shared secret of the cluster's nodes (required)")
	fs.StringVar(&cluster, "cluster", "regent", "cluster ID")
	fs.Var(&join, "join", "peer node names to join, comma-separated or repeated")
	fs.StringVar(&member, "member", string(memberName), "registered name of the election actor on every node")
	fs.IntVar(&minSize, "min-size", 0, "MinClusterSize (0: the default, 3)")
	fs.IntVar(&eMin, "election-min", 0, "ElectionTimeoutMin in ms (0: default 150)")
	fs.IntVar(&eMax, "election-max", 0, "ElectionTimeoutMax in ms (0: default 300)")
	fs.IntVar(&heartbeat, "heartbeat", 0, "HeartbeatInterval in ms (0: default 50)")
	fs.StringVar(&obsAddr, "observer", "", "serve the observer page, /metrics and /mcp at this address (empty: none)")
	fs.BoolVar(&mcpStdio, "mcp-stdio", false, "serve the observer's MCP tools on stdin/stdout (the log moves to stderr)")
	fs.StringVar(&logLevel, "log-level", "warning", "runtime log level: trace, debug, info, warning, error, disabled")
	fs.BoolVar(&noColor, "no-color", false, "never color the log")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := applyEnv(fs, env); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("unexpected arguments %q", fs.Args())
	}
	if name == "" || !strings.Contains(name, "@") {
		return usageError("--name (or REGENT_NAME) must be name@host:port, got %q", name)
	}
	if cookie == "" {
		return usageError("--cookie (or REGENT_COOKIE) is required")
	}
	level, err := parseLevel(logLevel)
	if err != nil {
		return err
	}

	logOut := env.stdout
	if mcpStdio {
		logOut = env.stderr
	}
	p := newPrinter(logOut, noColor)
	n, err := node.Start(gen.Atom(name), gen.NodeOptions{
		Network: gen.NetworkOptions{Cookie: cookie},
		Log:     gen.LogOptions{Level: level},
	})
	if err != nil {
		return fmt.Errorf("starting node %s: %w", name, err)
	}
	defer n.Stop()
	if err := n.Network().RegisterTypes(leader.NetworkTypes()); err != nil {
		return fmt.Errorf("registering the election's types: %w", err)
	}
	opts := leader.Options{ClusterID: cluster, MinClusterSize: minSize,
		ElectionTimeoutMin: eMin, ElectionTimeoutMax: eMax, HeartbeatInterval: heartbeat}
	for _, peer := range join {
		if peer != name {
			opts.Bootstrap = append(opts.Bootstrap, gen.ProcessID{Name: gen.Atom(member), Node: gen.Atom(peer)})
		}
	}
	rec := newRecorder(func(t leader.Transition, prev view) {
		if t.Role == prev.role && t.Leader == prev.leader && t.Term == prev.term {
			return
		}
		lead := "nobody"
		if t.Leader != (gen.PID{}) {
			lead = string(t.Leader.Node)
		}
		detail := fmt.Sprintf("term %d   leader %s   view %d   quorum %d", t.Term, lead, t.ViewSize, t.Quorum)
		p.event(t.At, shortNode(t.Member.Node), strings.ToUpper(t.Role), roleStyle(t.Role), detail)
	})
	opts.OnTransition = rec.record
	pid, err := n.SpawnRegister(gen.Atom(member), memberFactory(opts), gen.ProcessOptions{})
	if err != nil {
		return fmt.Errorf("spawning the member: %w", err)
	}
	p.say("node %s listening on %s: member %s %s of cluster %q, joining %d peers",
		name, n.Network().AcceptorAddress(), member, pid, cluster, len(opts.Bootstrap))
	if obsAddr != "" {
		s, err := observer.Serve(n, obsAddr)
		if err != nil {
			return err
		}
		defer closeAndLog(s, p)
		p.say("observer page: %s", s.URL())
	}
	if mcpStdio {
		err := observer.ServeMCPStdio(ctx, n)
		if ctx.Err() == nil {
			return err
		}
	} else {
		<-ctx.Done()
	}
	p.say("stopping node %s", name)
	return nil
}

// closeAndLog closes c and reports a failure on p: the process is ending, so
// the error cannot change the outcome but must not vanish.
func closeAndLog(c io.Closer, p *printer) {
	if err := c.Close(); err != nil {
		p.say("closing: %v", err)
	}
}

// parseLevel reads a gen.LogLevel by name.
func parseLevel(s string) (gen.LogLevel, error) {
	for l := gen.LogLevelTrace; l <= gen.LogLevelDisabled; l++ {
		if l.String() == strings.ToLower(s) {
			return l, nil
		}
	}
	return 0, usageError("unknown log level %q", s)
}
