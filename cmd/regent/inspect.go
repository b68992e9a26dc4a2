package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
)

const inspectSynopsis = `inspect [flags] NODE

Prints the state of the cluster that the member on NODE (name@host:port)
belongs to: one row per member of the view, read remotely from a short-lived
node of this command's own. Each member is asked once, for its view and its
inspection together, and every member found in any view is asked in turn, so
the same cluster comes back whichever member is named. A member that cannot
be read says why: connection refused, wrong cookie, no such host, no answer
in time. The cookie comes from $REGENT_COOKIE or --cookie-file, as for
regent node. Use --route for nodes whose names carry no port.

Examples:
  REGENT_COOKIE_FILE=regent.cookie regent inspect n1@127.0.0.1:4371
  regent inspect --json --cookie-file regent.cookie n1@127.0.0.1:4371`

// inspected is one member as inspect reports it.
type inspected struct {
	Node gen.Atom `json:"node"`
	PID  string   `json:"pid,omitempty"`
	// Error is why the member could not be read, in words.
	Error      string            `json:"error,omitempty"`
	Inspection map[string]string `json:"inspection,omitempty"`
	// Network is the member's node's network counters.
	Network *gen.NetworkStats `json:"network,omitempty"`
	reading leader.Inspection
}

// inspectReport is inspect's JSON output.
type inspectReport struct {
	Cluster string      `json:"cluster"`
	Members []inspected `json:"members"`
}

func runInspect(ctx context.Context, args []string, env *environment) error {
	var (
		client clientFlags
		asJSON bool
	)
	fs := newFlags(env, "inspect", inspectSynopsis).withEnv()
	client.register(fs, "how long to wait for each member")
	fs.BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	rest, err := fs.parse(args)
	if err != nil {
		return err
	}
	target, err := client.target(fs, "inspect", rest)
	if err != nil {
		return err
	}
	report, err := inspectCluster(ctx, target, client)
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

// inspectCluster starts a node of its own and reads the member on target
// and every member of every view it learns of, one request each
// (leader.ReadMember), those learnt together in parallel.
func inspectCluster(ctx context.Context, target gen.ProcessID, client clientFlags) (inspectReport, error) {
	n, err := client.start("inspect")
	if err != nil {
		return inspectReport{}, err
	}
	defer n.Stop()

	var report inspectReport
	seen := map[gen.Atom]bool{target.Node: true}
	wave := []gen.ProcessID{target}
	for len(wave) > 0 {
		found := readAll(ctx, n, wave, client.timeout)
		wave = nil
		for _, f := range found {
			report.Members = append(report.Members, f.inspected)
			for _, m := range f.members {
				if !seen[m.Node] {
					seen[m.Node] = true
					wave = append(wave, m.ProcessID)
				}
			}
		}
	}
	first := report.Members[0]
	if first.Error != "" {
		return report, fmt.Errorf("reading %s: %s", target, first.Error)
	}
	report.Cluster = first.reading.Cluster
	slices.SortFunc(report.Members, func(a, b inspected) int { return strings.Compare(string(a.Node), string(b.Node)) })
	return report, nil
}

// readResult is one member read, with the view it reported.
type readResult struct {
	inspected
	members []leader.Member
}

// readAll reads every member of ids at once and returns the results in the
// order of ids.
func readAll(ctx context.Context, n gen.Node, ids []gen.ProcessID, timeout time.Duration) []readResult {
	out := make([]readResult, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { out[i] = readOne(ctx, n, id, timeout) })
	}
	wg.Wait()
	return out
}

// readOne asks the member id for its view and inspection, waiting at most
// timeout; a read still pending then ends when the inspecting node stops.
func readOne(ctx context.Context, n gen.Node, id gen.ProcessID, timeout time.Duration) readResult {
	out := readResult{inspected: inspected{Node: id.Node}}
	type answer struct {
		r   leader.MemberReading
		err error
	}
	done := make(chan answer, 1)
	go func() {
		r, err := leader.ReadMember(n, id)
		done <- answer{r, err}
	}()
	wait := time.NewTimer(timeout)
	defer wait.Stop()
	var a answer
	select {
	case a = <-done:
	case <-wait.C:
		a.err = fmt.Errorf("no answer within --timeout %s: %w", timeout, gen.ErrTimeout)
	case <-ctx.Done():
		a.err = ctx.Err()
	}
	if a.err != nil {
		out.Error = cause(a.err)
		return out
	}
	out.PID = a.r.PID.String()
	out.Inspection = a.r.Inspection
	out.Network = &a.r.Network
	out.members = a.r.Members
	reading, err := leader.ParseInspection(a.r.Inspection)
	if err != nil {
		out.Error = err.Error()
	}
	out.reading = reading
	return out
}

func printInspectTable(env *environment, r inspectReport) error {
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tTERM\tLEADER\tVIEW\tQUORUM\tFLOOR\tUNREACHABLE\tLAST HEARTBEAT IN\tELECTIONS\tPROBLEM")
	var beliefs []leader.Belief
	answered := 0
	for _, m := range r.Members {
		if m.Error != "" && m.Inspection == nil {
			fmt.Fprintf(tw, "%s\tunreadable\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n", m.Node, m.Error)
			continue
		}
		answered++
		in := m.reading
		beliefs = append(beliefs, in.Belief(m.Node))
		unreachable := make([]string, 0, len(in.Unreachable))
		for _, u := range in.Unreachable {
			unreachable = append(unreachable, fmt.Sprintf("%s (%s)", shortNode(u.Node), u.For))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%d\t%d\t%s\t%s\t%d\t%s\n", m.Node, in.Role, in.Term, dash(string(in.LeaderNode)),
			in.ViewSize, in.Quorum, in.MinClusterSize, dash(strings.Join(unreachable, ", ")), age(in.HeartbeatInLast),
			in.ElectionsStarted, m.Error)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	if _, err := fmt.Fprintf(env.stdout, "\ncluster %q, %d members, %d read: %s\n", r.Cluster, len(r.Members), answered, agreementLine(beliefs, answered)); err != nil {
		return err
	}
	return printNetwork(env, r)
}

// printNetwork lists, for each member whose node refused handshakes or
// dropped anything, its counters by reason: rejections are visible from the
// command line as on /metrics.
func printNetwork(env *environment, r inspectReport) error {
	for _, m := range r.Members {
		s := m.Network
		if s == nil || (s.HandshakesRejected == 0 && len(s.Dropped) == 0) {
			continue
		}
		line := fmt.Sprintf("network of %s: %d peers, %d handshakes rejected", m.Node, s.Connections, s.HandshakesRejected)
		if len(s.Rejected) > 0 {
			line += " (" + byReason(s.Rejected) + ")"
		}
		if len(s.Dropped) > 0 {
			line += ", dropped " + byReason(s.Dropped)
		}
		if s.NameCollisions > 0 {
			line += fmt.Sprintf(", %d name collisions", s.NameCollisions)
		}
		if _, err := fmt.Fprintln(env.stdout, line); err != nil {
			return err
		}
	}
	return nil
}

// byReason renders counters as "reason n, reason n", sorted by reason.
func byReason(counts map[string]uint64) string {
	reasons := slices.Sorted(maps.Keys(counts))
	out := make([]string, len(reasons))
	for i, k := range reasons {
		out[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return strings.Join(out, ", ")
}

// agreementLine says which leader the members that answered agree on
// (leader.Agree, a majority of them needed), or what each group believes.
func agreementLine(beliefs []leader.Belief, answered int) string {
	if a, ok := leader.Agree(beliefs, answered/2+1); ok {
		return fmt.Sprintf("leader %s at term %d, recognised by %d of %d", a.Leader, a.Term, len(a.Members), answered)
	}
	groups := map[string]int{}
	for _, b := range beliefs {
		who := "no leader"
		if b.Leader != "" {
			who = "leader " + string(b.Leader)
		}
		groups[fmt.Sprintf("%s at term %d", who, b.Term)]++
	}
	parts := make([]string, 0, len(groups))
	for g, count := range groups {
		parts = append(parts, fmt.Sprintf("%d see %s", count, g))
	}
	slices.Sort(parts)
	return "no leader that a majority agrees on: " + strings.Join(parts, "; ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// age is how long ago m happened, as the member saw it; "-" for never.
func age(m leader.Moment) string {
	if m.IsZero() {
		return "-"
	}
	return m.Ago.String() + " ago"
}
