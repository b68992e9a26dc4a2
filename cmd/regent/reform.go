package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
)

const reformSynopsis = `reform [flags] NODE

The operator's way out when a majority of a cluster's view is gone for good
(a zone lost, a deploy that replaced more than half the members faster than
GhostTTL): the rest can then neither elect nor change the view, because
they cannot tell "gone for good" from "cut off". You can.

Without --yes it only shows the view of the member on NODE and which members
it cannot reach, and changes nothing. With --yes it asks that member to
replace the view with itself and the members it heard from within the last
two election timeouts, and to campaign with it at once; the member logs the
new view at Warning.

This is never automatic, and it is dangerous: if the members left out are
alive behind a partition with a leader of their own, two leaders act until
the partition heals. Make sure they are down first (docs/operations.md).

Examples:
  REGENT_COOKIE_FILE=regent.cookie regent reform n3@10.0.0.3:4370
  regent reform --yes --cookie-file regent.cookie n3@10.0.0.3:4370`

func runReform(ctx context.Context, args []string, env *environment) error {
	var (
		member  string
		net     netFlags
		routes  listFlag
		yes     bool
		timeout time.Duration
	)
	fs := newFlags(env, "reform", reformSynopsis).withEnv()
	net.register(fs)
	fs.StringVar(&member, "member", string(memberName), "registered name of the election actor")
	fs.Var(&routes, "route", "NAME=HOST:PORT for a node whose name has no port; repeat or comma-separate")
	fs.BoolVar(&yes, "yes", false, "re-form the view; without it, only show what would change")
	fs.DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the member")
	rest, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usageError("give exactly one node name, e.g. regent reform n3@127.0.0.1:4370 (got %d)", len(rest))
	}
	if err := net.resolve(fs.typed["cookie"]); err != nil {
		return err
	}
	if len(routes) == 0 {
		if err := checkNodeName("NODE", rest[0]); err != nil {
			return err
		}
	}
	resolved := map[gen.Atom]string{}
	for _, r := range routes {
		name, addr, ok := strings.Cut(r, "=")
		if !ok {
			return usageError("--route %q is not NAME=HOST:PORT", r)
		}
		resolved[gen.Atom(name)] = addr
	}
	n, err := startClientNode("reform", net, resolved, timeout)
	if err != nil {
		return err
	}
	defer n.Stop()
	target := gen.ProcessID{Name: gen.Atom(member), Node: gen.Atom(rest[0])}

	read := readOne(ctx, n, target, timeout)
	if read.Error != "" && read.Inspection == nil {
		return fmt.Errorf("reading %s: %s", target, read.Error)
	}
	in := read.reading
	var gone []string
	for _, m := range read.members {
		if m.Unreachable {
			gone = append(gone, string(m.Node))
		}
	}
	fmt.Fprintf(env.stdout, "cluster %q on %s: %s, term %d, view of %d (epoch %d, term %d): %s\n", in.Cluster, target.Node, in.Role, in.Term,
		in.ViewSize, in.ViewEpoch, in.ViewTerm, joinMembers(in.ViewMembers))
	fmt.Fprintf(env.stdout, "unreachable from it: %s\n", dash(strings.Join(gone, ", ")))
	if !yes {
		fmt.Fprintln(env.stdout, "nothing done: re-run with --yes to replace the view with this member and the members it heard from lately.")
		fmt.Fprintln(env.stdout, "Only if the others are down for good: if they lead elsewhere, two leaders will act.")
		return nil
	}
	v, err := leader.ReformMember(n, target)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "re-formed: the view is now %s\n", &v)
	return nil
}

// joinMembers lists members by node.
func joinMembers(ms []gen.ProcessID) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Node)
	}
	return dash(strings.Join(out, ", "))
}
