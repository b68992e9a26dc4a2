package leader

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// unknownItem is the value of an inspection item that is not a key.
const unknownItem = "<unknown item>"

// never is the value of a time key for an event that has not happened.
const never = "never"

// inspectKey renders one ergo:* key from a status snapshot.
type inspectKey struct {
	name   string
	render func(s election.Status, now time.Time) string
}

// inspectKeys lists every election key in the order help shows them; the
// groups follow the leader document's Observability section.
var inspectKeys = []inspectKey{
	// Role and term.
	{"ergo:state", func(s election.Status, _ time.Time) string { return s.Role.String() }},
	{"ergo:leader", func(s election.Status, _ time.Time) string { return strconv.FormatBool(s.Role == election.RoleLeader) }},
	{"ergo:leader_pid", func(s election.Status, _ time.Time) string { return pidString(s.Leader) }},
	{"ergo:leader_node", func(s election.Status, _ time.Time) string { return string(s.LeaderNode) }},
	{"ergo:term", func(s election.Status, _ time.Time) string { return strconv.FormatUint(s.Term, 10) }},
	{"ergo:voted_for", func(s election.Status, _ time.Time) string {
		if s.VotedFor == (gen.ProcessID{}) {
			return ""
		}
		return s.VotedFor.String()
	}},
	{"ergo:term_changed_at", func(s election.Status, now time.Time) string { return at(s.TermChangedAt, now) }},
	{"ergo:fencing_token", func(s election.Status, _ time.Time) string {
		if s.Role != election.RoleLeader {
			return "0"
		}
		return strconv.FormatUint(s.Term, 10)
	}},
	// Membership.
	{"ergo:cluster", func(s election.Status, _ time.Time) string { return s.ClusterID }},
	{"ergo:view_size", func(s election.Status, _ time.Time) string { return strconv.Itoa(s.ViewSize) }},
	{"ergo:quorum", func(s election.Status, _ time.Time) string { return strconv.Itoa(s.Quorum) }},
	{"ergo:min_cluster_size", func(s election.Status, _ time.Time) string { return strconv.Itoa(s.MinClusterSize) }},
	{"ergo:peers", func(s election.Status, _ time.Time) string { return strconv.Itoa(len(knownPIDs(s))) }},
	{"ergo:peers_list", func(s election.Status, _ time.Time) string { return strings.Join(knownPIDs(s), ", ") }},
	{"ergo:declared", func(s election.Status, _ time.Time) string {
		var out []string
		for _, m := range s.Members {
			if m.Declared {
				out = append(out, m.ProcessID.String())
			}
		}
		return strings.Join(out, ", ")
	}},
	{"ergo:bootstrap", func(s election.Status, _ time.Time) string {
		out := make([]string, 0, len(s.Bootstrap))
		for _, p := range s.Bootstrap {
			out = append(out, p.String())
		}
		return strings.Join(out, ", ")
	}},
	{"ergo:unreachable", func(s election.Status, now time.Time) string {
		var out []string
		for _, m := range s.Members {
			if !m.UnreachableSince.IsZero() {
				out = append(out, fmt.Sprintf("%s (%s ago)", m.Node, now.Sub(m.UnreachableSince).Round(time.Millisecond)))
			}
		}
		return strings.Join(out, ", ")
	}},
	{"ergo:ghost_ttl", func(s election.Status, _ time.Time) string { return s.GhostTTL.String() }},
	// The agreed view.
	{"ergo:view_epoch", func(s election.Status, _ time.Time) string {
		return viewField(s, func(v *election.View) uint64 { return v.Stamp.Key.Epoch })
	}},
	{"ergo:view_term", func(s election.Status, _ time.Time) string {
		return viewField(s, func(v *election.View) uint64 { return v.Stamp.Key.Term })
	}},
	{"ergo:view_lineage", func(s election.Status, _ time.Time) string {
		if s.View == nil {
			return ""
		}
		return s.View.Stamp.Lineage.String()
	}},
	{"ergo:view_agreed", func(s election.Status, _ time.Time) string {
		return strconv.FormatBool(s.View != nil && s.View.Stamp.Agreed)
	}},
	{"ergo:view_committed", func(s election.Status, _ time.Time) string {
		return strconv.FormatBool(s.View != nil && s.Committed == s.View.Stamp.Key)
	}},
	{"ergo:view_members", func(s election.Status, _ time.Time) string {
		if s.View == nil {
			return ""
		}
		out := make([]string, len(s.View.Members))
		for i, m := range s.View.Members {
			out[i] = m.String()
		}
		return strings.Join(out, ", ")
	}},
	{"ergo:pending_change", func(s election.Status, _ time.Time) string { return s.PendingChange }},
	{"ergo:lagging", func(s election.Status, _ time.Time) string {
		var out []string
		for _, m := range s.Members {
			if m.Lags {
				out = append(out, string(m.Node))
			}
		}
		return strings.Join(out, ", ")
	}},
	{"ergo:joining", func(s election.Status, _ time.Time) string {
		if s.Joining.IsZero() {
			return ""
		}
		return s.Joining.String()
	}},
	{"ergo:unclustered_because", func(s election.Status, _ time.Time) string { return s.Below }},
	// The current election.
	{"ergo:votes_granted", func(s election.Status, _ time.Time) string { return joinAtoms(s.VotesGranted) }},
	{"ergo:votes_count", func(s election.Status, _ time.Time) string { return strconv.Itoa(s.VotesCount) }},
	{"ergo:prevoting", func(s election.Status, _ time.Time) string { return strconv.FormatBool(s.PreVoting) }},
	{"ergo:awaiting_confirm", func(s election.Status, _ time.Time) string { return strconv.FormatBool(s.AwaitingConfirm) }},
	{"ergo:rounds", func(s election.Status, _ time.Time) string { return strconv.FormatUint(s.Rounds, 10) }},
	// Liveness.
	{"ergo:election_timer_armed", func(s election.Status, _ time.Time) string { return strconv.FormatBool(s.ElectionTimerArmed) }},
	{"ergo:heartbeat_timer_armed", func(s election.Status, _ time.Time) string { return strconv.FormatBool(s.HeartbeatTimerArmed) }},
	{"ergo:heartbeat_in_last", func(s election.Status, now time.Time) string { return at(s.HeartbeatInLast, now) }},
	{"ergo:heartbeat_out_last", func(s election.Status, now time.Time) string { return at(s.HeartbeatOutLast, now) }},
	{"ergo:election_timeout_min", func(s election.Status, _ time.Time) string { return s.ElectionTimeoutMin.String() }},
	{"ergo:election_timeout_max", func(s election.Status, _ time.Time) string { return s.ElectionTimeoutMax.String() }},
	{"ergo:heartbeat_interval", func(s election.Status, _ time.Time) string { return s.HeartbeatInterval.String() }},
	// Problems.
	{"ergo:dropped_by_reason", func(s election.Status, _ time.Time) string { return formatCounts(s.Dropped) }},
	{"ergo:send_failing_peers", func(s election.Status, _ time.Time) string { return joinAtoms(s.SendFailingPeers) }},
	{"ergo:confirm_denied", func(s election.Status, _ time.Time) string { return strconv.FormatUint(s.ConfirmDenied, 10) }},
	{"ergo:storage_error", func(s election.Status, _ time.Time) string { return errString(s.StorageError) }},
	{"ergo:stopped", func(s election.Status, _ time.Time) string { return errString(s.Fatal) }},
	{"ergo:last_denied_at", func(s election.Status, now time.Time) string { return at(s.LastDeniedAt, now) }},
	// Counters beyond the document, for observers and benchmarks.
	{"ergo:elections_started", func(s election.Status, _ time.Time) string { return strconv.FormatUint(s.ElectionsStarted, 10) }},
	{"ergo:elections_won", func(s election.Status, _ time.Time) string { return strconv.FormatUint(s.ElectionsWon, 10) }},
	{"ergo:leadership_changes", func(s election.Status, _ time.Time) string { return strconv.FormatUint(s.LeadershipChanges, 10) }},
	{"ergo:quorum_lost_stepdowns", func(s election.Status, _ time.Time) string { return strconv.FormatUint(s.QuorumLostStepDowns, 10) }},
	{"ergo:campaign_held", func(s election.Status, _ time.Time) string { return strconv.FormatBool(s.CampaignHeld) }},
	{"ergo:leader_conflicts", func(s election.Status, _ time.Time) string { return strconv.FormatUint(s.LeaderConflicts, 10) }},
	{"ergo:protocol_leader", func(s election.Status, _ time.Time) string { return strconv.FormatBool(s.ProtocolLeader) }},
	{"ergo:view_changes", func(s election.Status, _ time.Time) string { return strconv.FormatUint(s.ViewChanges, 10) }},
	{"ergo:failed_handovers", func(s election.Status, _ time.Time) string { return strconv.FormatUint(s.FailedHandovers, 10) }},
	{"ergo:prefer", func(s election.Status, _ time.Time) string { return s.Prefer.String() }},
	{"ergo:preferred_transfers", func(s election.Status, _ time.Time) string { return strconv.FormatUint(s.PreferredTransfers, 10) }},
	{"ergo:started_at", func(s election.Status, now time.Time) string { return at(s.Started, now) }},
}

// actorKey renders one ergo:* key from the shell's own state rather than the core's.
type actorKey struct {
	name   string
	render func(a *Actor) string
}

// actorKeys follow inspectKeys in the help listing.
var actorKeys = []actorKey{
	{"ergo:same_host", func(a *Actor) string {
		if a.few().sameHost == nil {
			return "off"
		}
		return a.few().sameHost.describe()
	}},
	{"ergo:subscribers", func(a *Actor) string { return strconv.Itoa(len(a.few().subscribers)) }},
	{"ergo:heartbeat_coalescing", func(a *Actor) string {
		if a.options.coalesce {
			return "on"
		}
		return "off"
	}},
	{"ergo:coalescer", func(a *Actor) string { return formatCoalescer(a.share.coal.Stats()) }},
	{"ergo:coalescer_dropped", func(a *Actor) string { return formatCounts(a.share.coal.Stats().Dropped) }},
	{"ergo:runtime_timers", func(a *Actor) string { return strconv.FormatUint(a.inbox.owner.armed.Load(), 10) }},
	{"ergo:slow_callbacks", func(a *Actor) string { return formatCounts(a.few().slowCallbacks) }},
}

// formatCoalescer renders the node's coalescer counters for ergo:coalescer
// (the drops have a key of their own).
func formatCoalescer(s CoalescerStats) string {
	return fmt.Sprintf("running=%t frames_out=%d entries_out=%d flushes=%d failed_frames=%d frames_in=%d entries_in=%d deliveries=%d held=%d answered=%d beaten_ahead=%d taken=%d mismatched=%d pair_beats_out=%d pair_acks_in=%d pair_beats_in=%d forgotten=%d",
		s.Running, s.FramesOut, s.EntriesOut, s.Flushes, s.FailedFrames, s.FramesIn, s.EntriesIn, s.Deliveries, s.Held, s.Answered, s.BeatenAhead, s.Taken, s.Mismatched,
		s.PairBeatsOut, s.PairAcksIn, s.PairBeatsIn, s.Forgotten)
}

// InspectKeys returns the names of every election inspection key, in the order
// the help item lists them.
func InspectKeys() []string {
	out := make([]string, 0, len(inspectKeys)+len(actorKeys))
	for _, k := range inspectKeys {
		out = append(out, k.name)
	}
	for _, k := range actorKeys {
		out = append(out, k.name)
	}
	return out
}

// inspect answers an inspection request: every key when items is empty,
// otherwise the named ones ("help" lists the keys, an unknown name answers
// unknownItem), with the user's HandleInspect keys merged on top.
func (a *Actor) inspect(from gen.PID, items []string) map[string]string {
	now := time.Now()
	out := make(map[string]string)
	if a.core != nil {
		s := a.core.Status(now)
		if len(items) == 0 {
			for _, k := range inspectKeys {
				out[k.name] = k.render(s, now)
			}
			for _, k := range actorKeys {
				out[k.name] = k.render(a)
			}
		}
		for _, item := range items {
			if item == "help" {
				out["help"] = strings.Join(InspectKeys(), ", ")
				continue
			}
			if i := slices.IndexFunc(inspectKeys, func(k inspectKey) bool { return k.name == item }); i >= 0 {
				out[item] = inspectKeys[i].render(s, now)
				continue
			}
			if i := slices.IndexFunc(actorKeys, func(k actorKey) bool { return k.name == item }); i >= 0 {
				out[item] = actorKeys[i].render(a)
				continue
			}
			out[item] = unknownItem
		}
	}
	start := time.Now()
	user := a.behavior.HandleInspect(from, items...)
	a.timed("HandleInspect", start)
	for k, v := range user {
		out[k] = v
	}
	return out
}

// formatCounts renders counts by reason as "reason=count, reason=count",
// reasons sorted.
func formatCounts(counts map[string]uint64) string {
	reasons := make([]string, 0, len(counts))
	for r := range counts {
		reasons = append(reasons, r)
	}
	slices.Sort(reasons)
	out := make([]string, 0, len(reasons))
	for _, r := range reasons {
		out = append(out, fmt.Sprintf("%s=%d", r, counts[r]))
	}
	return strings.Join(out, ", ")
}

func pidString(pid gen.PID) string {
	if pid == (gen.PID{}) {
		return ""
	}
	return pid.String()
}

// knownPIDs lists the known PIDs of the view's members (of the declared
// peers before any view).
func knownPIDs(s election.Status) []string {
	var out []string
	for _, m := range s.Members {
		if m.PID != (gen.PID{}) && (m.InView || (s.View == nil && m.Declared)) {
			out = append(out, m.PID.String())
		}
	}
	return out
}

// viewField renders one number of the view, "" before any view.
func viewField(s election.Status, f func(*election.View) uint64) string {
	if s.View == nil {
		return ""
	}
	return strconv.FormatUint(f(s.View), 10)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func joinAtoms(atoms []gen.Atom) string {
	out := make([]string, 0, len(atoms))
	for _, a := range atoms {
		out = append(out, string(a))
	}
	return strings.Join(out, ", ")
}

// at formats an event time with its age, or never.
func at(t, now time.Time) string {
	if t.IsZero() {
		return never
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339Nano), now.Sub(t).Round(time.Millisecond))
}
