package main

import (
	"context"
	"fmt"
	"strings"

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
		client clientFlags
		yes    bool
	)
	fs := newFlags(env, "reform", reformSynopsis).withEnv()
	client.register(fs, "how long to wait for the member")
	fs.BoolVar(&yes, "yes", false, "re-form the view; without it, only show what would change")
	rest, err := fs.parse(args)
	if err != nil {
		return err
	}
	target, err := client.target(fs, "reform", rest)
	if err != nil {
		return err
	}
	n, err := client.start("reform")
	if err != nil {
		return err
	}
	defer n.Stop()

	read := readOne(ctx, n, target, client.timeout)
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
