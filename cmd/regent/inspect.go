package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/regent-go/regent/act"
	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/node"
)

const inspectSynopsis = `inspect [flags] NODE

Prints the state of the cluster that the member on NODE (name@host:port)
belongs to: one row per member, read remotely from a short-lived node of this
command's own. The other members are found through each member's declared
peers (ergo:declared). Use --route for nodes whose names carry no port.`

// inspected is one member as inspect reports it.
type inspected struct {
	Node       gen.Atom          `json:"node"`
	PID        string            `json:"pid,omitempty"`
	Error      string            `json:"error,omitempty"`
	Inspection map[string]string `json:"inspection,omitempty"`
}

// inspectReport is inspect's JSON output.
type inspectReport struct {
	Cluster string      `json:"cluster"`
	Members []inspected `json:"members"`
}

func runInspect(ctx context.Context, args []string, env *environment) error {
	var (
		cookie, member string
		routes         listFlag
		asJSON         bool
		timeout        time.Duration
	)
	fs := newFlags(env, "inspect", inspectSynopsis)
	fs.StringVar(&cookie, "cookie", "", "the cluster's cookie (or REGENT_COOKIE)")
	fs.StringVar(&member, "member", string(memberName), "registered name of the election actor")
	fs.Var(&routes, "route", "NAME=HOST:PORT for a node whose name has no port; repeat or comma-separate")
	fs.BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	fs.DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for each member")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := applyEnv(fs, env); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError("give exactly one node name, e.g. n1@127.0.0.1:4370")
	}
	target := gen.Atom(fs.Arg(0))
	report, err := inspectCluster(ctx, target, gen.Atom(member), cookie, routes, timeout)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(report)
	}
	return printInspectTable(env, report)
}

// inspectCluster starts a node of its own, finds the member on target and
// every member reachable through declared peers, and inspects each.
func inspectCluster(ctx context.Context, target, member gen.Atom, cookie string, routes []string, timeout time.Duration) (inspectReport, error) {
	self := gen.Atom(fmt.Sprintf("regent-inspect-%d-%d@127.0.0.1", os.Getpid(), time.Now().UnixNano()%1e6))
	n, err := node.Start(self, gen.NodeOptions{
		Network: gen.NetworkOptions{Cookie: cookie, Acceptor: gen.AcceptorOptions{Host: "127.0.0.1"}},
		Log:     gen.LogOptions{Level: gen.LogLevelError},
	})
	if err != nil {
		return inspectReport{}, fmt.Errorf("starting the inspecting node: %w", err)
	}
	defer n.Stop()
	if err := n.Network().RegisterTypes(leader.NetworkTypes()); err != nil {
		return inspectReport{}, fmt.Errorf("registering the election's types: %w", err)
	}
	for _, r := range routes {
		name, addr, ok := strings.Cut(r, "=")
		if !ok {
			return inspectReport{}, usageError("--route %q is not NAME=HOST:PORT", r)
		}
		if err := n.Network().AddRoute(gen.Atom(name), addr); err != nil {
			return inspectReport{}, fmt.Errorf("route %s: %w", r, err)
		}
	}
	answers := make(chan leader.MessageLeaderChanged, 64)
	probe, err := n.Spawn(func() gen.ProcessBehavior { return &probeActor{out: answers} }, gen.ProcessOptions{})
	if err != nil {
		return inspectReport{}, fmt.Errorf("spawning the probe: %w", err)
	}

	var report inspectReport
	seen := map[gen.Atom]bool{target: true}
	queue := []gen.Atom{target}
	for len(queue) > 0 {
		nodeName := queue[0]
		queue = queue[1:]
		m := inspectOne(ctx, n, probe, answers, gen.ProcessID{Name: member, Node: nodeName}, timeout)
		report.Members = append(report.Members, m)
		if report.Cluster == "" {
			report.Cluster = m.Inspection["ergo:cluster"]
		}
		for _, peer := range splitProcessIDs(m.Inspection["ergo:declared"]) {
			if !seen[peer.Node] {
				seen[peer.Node] = true
				queue = append(queue, peer.Node)
			}
		}
	}
	if report.Members[0].Error != "" {
		return report, fmt.Errorf("inspecting %s on %s: %s", member, target, report.Members[0].Error)
	}
	slices.SortFunc(report.Members, func(a, b inspected) int { return strings.Compare(string(a.Node), string(b.Node)) })
	return report, nil
}

// inspectOne learns the PID of the member named id (by subscribing to it,
// which answers at once) and reads its whole inspection.
func inspectOne(ctx context.Context, n gen.Node, probe gen.PID, answers chan leader.MessageLeaderChanged, id gen.ProcessID, timeout time.Duration) inspected {
	out := inspected{Node: id.Node}
	if err := n.Send(id, leader.MessageSubscribe{Subscriber: probe}); err != nil {
		out.Error = fmt.Sprintf("reaching %s: %v", id, err)
		return out
	}
	wait := time.NewTimer(timeout)
	defer wait.Stop()
	var pid gen.PID
	for pid == (gen.PID{}) {
		select {
		case a := <-answers:
			if a.Member.Node == id.Node {
				pid = a.Member
			}
		case <-wait.C:
			out.Error = fmt.Sprintf("%s did not answer within %s: %v", id, timeout, gen.ErrTimeout)
			return out
		case <-ctx.Done():
			out.Error = ctx.Err().Error()
			return out
		}
	}
	if err := n.Send(pid, leader.MessageUnsubscribe{Subscriber: probe}); err != nil {
		out.Error = fmt.Sprintf("unsubscribing from %s: %v", pid, err)
	}
	out.PID = pid.String()
	in, err := n.Inspect(pid)
	if err != nil {
		out.Error = fmt.Sprintf("inspecting %s: %v", pid, err)
		return out
	}
	out.Inspection = in
	return out
}

// probeActor passes the leader actors' MessageLeaderChanged answers to the
// inspecting goroutine; the channel is buffered and a full one drops.
type probeActor struct {
	act.Actor
	out chan<- leader.MessageLeaderChanged
}

func (p *probeActor) HandleMessage(_ gen.PID, message any) error {
	if m, ok := message.(leader.MessageLeaderChanged); ok {
		select {
		case p.out <- m:
		default:
		}
	}
	return nil
}

// splitProcessIDs parses ergo:declared: "<name@node>, <name@node>".
func splitProcessIDs(v string) []gen.ProcessID {
	var out []gen.ProcessID
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(part), "<"), ">")
		name, nodeName, ok := strings.Cut(part, "@")
		if ok && name != "" && nodeName != "" {
			out = append(out, gen.ProcessID{Name: gen.Atom(name), Node: gen.Atom(nodeName)})
		}
	}
	return out
}

func printInspectTable(env *environment, r inspectReport) error {
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tTERM\tLEADER\tVIEW\tQUORUM\tPEERS\tUNREACHABLE\tLAST HEARTBEAT IN\tELECTIONS")
	leaders := map[string]int{}
	for _, m := range r.Members {
		if m.Error != "" {
			fmt.Fprintf(tw, "%s\t(error: %s)\n", m.Node, m.Error)
			continue
		}
		in := m.Inspection
		leaders[in["ergo:leader_node"]+" at term "+in["ergo:term"]]++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Node, in["ergo:state"], in["ergo:term"], dash(in["ergo:leader_node"]),
			in["ergo:view_size"], in["ergo:quorum"], in["ergo:peers"], dash(in["ergo:unreachable"]), age(in["ergo:heartbeat_in_last"]), in["ergo:elections_started"])
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	beliefs := make([]string, 0, len(leaders))
	for b, count := range leaders {
		beliefs = append(beliefs, fmt.Sprintf("%d see leader %s", count, b))
	}
	slices.Sort(beliefs)
	_, err := fmt.Fprintf(env.stdout, "\ncluster %q, %d members: %s\n", r.Cluster, len(r.Members), strings.Join(beliefs, "; "))
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// age keeps the "(12ms ago)" part of a time key.
func age(v string) string {
	if i := strings.LastIndex(v, "("); i >= 0 {
		return strings.TrimSuffix(v[i+1:], ")")
	}
	return dash(v)
}
