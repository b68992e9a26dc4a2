package observer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
)

// Roles as the ergo:state inspection key names them (leader.Role).
const (
	RoleLeader      = string(leader.RoleLeader)
	RoleFollower    = string(leader.RoleFollower)
	RoleCandidate   = string(leader.RoleCandidate)
	RoleUnclustered = string(leader.RoleUnclustered)
)

// StuckCandidateRounds is how many campaigns in a row, with no leader known,
// make a candidate count as stuck.
const StuckCandidateRounds = 3

// Report is everything the observer knows about one node's clusters at one
// moment: what the JSON API, the live page and the MCP tools answer with.
type Report struct {
	// Node is the observing node.
	Node string `json:"node"`
	// CollectedAt is when the collection started.
	CollectedAt time.Time `json:"collected_at"`
	// Clusters lists each cluster the node takes part in, by cluster ID.
	Clusters []ClusterReport `json:"clusters"`
}

// Cluster returns the report of the cluster with id, and whether there is one.
func (r Report) Cluster(id string) (ClusterReport, bool) {
	i := slices.IndexFunc(r.Clusters, func(c ClusterReport) bool { return c.ID == id })
	if i < 0 {
		return ClusterReport{}, false
	}
	return r.Clusters[i], true
}

// ClusterReport is one cluster as seen through one local leader actor's view.
type ClusterReport struct {
	// ID is the cluster ID (Options.ClusterID).
	ID string `json:"cluster"`
	// Via is the PID of the local leader actor whose view was read.
	Via string `json:"via"`
	// ViaNode is the node of that actor, this observer's own.
	ViaNode string `json:"via_node"`
	// ReadAt is when the cluster was read: a reading of a node of many
	// clusters is spread over time (the sampler's pace), so each cluster
	// carries its own.
	ReadAt time.Time `json:"read_at"`
	// Error is why the view could not be read; Members is then empty.
	Error string `json:"error,omitempty"`
	// Members lists every member of the view, the local one included, by node name.
	Members []MemberReport `json:"members"`
	// Leaders lists the members that report the leader role.
	Leaders []string `json:"leaders"`
	// Leader is the leader every answering member agrees on, empty when there
	// is none or they disagree.
	Leader string `json:"leader"`
	// Term is the highest term any answering member reports.
	Term uint64 `json:"term"`
	// Problems lists the disagreements and faults found; empty means healthy.
	Problems []Problem `json:"problems"`
}

// Problem kinds, as Problem.Kind names them.
const (
	ProblemNoLeader           = "no_leader"
	ProblemSeveralLeaders     = "several_leaders"
	ProblemLeaderDisagreement = "leader_disagreement"
	ProblemTermDisagreement   = "term_disagreement"
	ProblemStuckCandidate     = "stuck_candidate"
	ProblemUnclustered        = "unclustered"
	ProblemUnreachable        = "unreachable"
	// ProblemViewLag: members hold different views of the cluster, or the
	// leader reports members whose acknowledgement lags its view.
	ProblemViewLag = "view_lag"
	// ProblemPendingChange: the leader proposed a membership change that is
	// not committed yet (normal for a moment; a finding if it stays).
	ProblemPendingChange = "pending_change"
)

// Problem is one disagreement or fault in a cluster.
type Problem struct {
	// Kind is one of the Problem* constants.
	Kind string `json:"kind"`
	// Members names the member nodes involved.
	Members []string `json:"members"`
	// Message explains it to a person.
	Message string `json:"message"`
}

// MemberReport is one member's inspection, parsed, with the raw keys kept.
type MemberReport struct {
	Node      string `json:"node"`
	ProcessID string `json:"process_id"`
	PID       string `json:"pid,omitempty"`
	// Self marks the local actor whose view was read.
	Self bool `json:"self"`
	// InViewUnreachable: the reading actor counts this member as unreachable.
	InViewUnreachable bool `json:"in_view_unreachable"`
	// Error is why this member's inspection could not be read; the parsed
	// fields are then zero.
	Error string `json:"error,omitempty"`

	// Cluster is the member's cluster ID, as it reports it.
	Cluster           string            `json:"cluster"`
	State             string            `json:"state"`
	Term              uint64            `json:"term"`
	LeaderNode        string            `json:"leader_node"`
	LeaderPID         string            `json:"leader_pid"`
	ViewSize          int               `json:"view_size"`
	Quorum            int               `json:"quorum"`
	MinClusterSize    int               `json:"min_cluster_size"`
	Peers             int               `json:"peers"`
	Unreachable       []string          `json:"unreachable"`
	Dropped           map[string]uint64 `json:"dropped"`
	ConfirmDenied     uint64            `json:"confirm_denied"`
	ElectionsStarted  uint64            `json:"elections_started"`
	ElectionsWon      uint64            `json:"elections_won"`
	LeadershipChanges uint64            `json:"leadership_changes"`
	// QuorumLostStepDowns counts the times this member stopped leading
	// because it no longer reached a quorum.
	QuorumLostStepDowns uint64 `json:"quorum_lost_stepdowns"`
	// SlowCallbacks counts, by name, the user's callbacks that ran for the
	// evidence window or longer (ergo:slow_callbacks): time the actor
	// neither beat nor answered.
	SlowCallbacks map[string]uint64 `json:"slow_callbacks,omitempty"`
	Rounds        uint64            `json:"rounds"`
	Timers        Timers            `json:"timers"`
	// View is the agreed view this member holds (docs/membership.md).
	View View `json:"view"`
	// PendingChange is, on a leader, the change proposed and not committed.
	PendingChange string `json:"pending_change,omitempty"`
	// Lagging lists, on a leader, members whose acknowledgement lags its view.
	Lagging []string `json:"lagging"`
	// UnclusteredBecause says why the member is unclustered.
	UnclusteredBecause string `json:"unclustered_because,omitempty"`
	// Inspection is the member's full inspection map, user keys included.
	Inspection map[string]string `json:"inspection,omitempty"`
	// ParseErrors lists keys whose values could not be parsed; their parsed
	// fields are left zero.
	ParseErrors []string `json:"parse_errors,omitempty"`
}

// View is a member's agreed view: its members and the stamp that orders it.
// Epoch counts membership changes; Term is the term of the leader that last
// stamped it; Lineage names the formation it descends from.
type View struct {
	Epoch     uint64   `json:"epoch"`
	Term      uint64   `json:"term"`
	Lineage   string   `json:"lineage"`
	Agreed    bool     `json:"agreed"`
	Committed bool     `json:"committed"`
	Members   []string `json:"members"`
}

// Answered reports whether the member's inspection was read.
func (m MemberReport) Answered() bool { return m.Error == "" }

// Timers are a member's election and heartbeat timers, as inspection shows
// them: whether each is armed, when a heartbeat last came in and went out
// (with its age as the member measured it, empty for never), and the
// configured timeouts.
type Timers struct {
	ElectionArmed      bool          `json:"election_armed"`
	HeartbeatArmed     bool          `json:"heartbeat_armed"`
	HeartbeatInLast    time.Time     `json:"heartbeat_in_last,omitzero"`
	HeartbeatInAgo     string        `json:"heartbeat_in_ago,omitempty"`
	HeartbeatOutLast   time.Time     `json:"heartbeat_out_last,omitzero"`
	HeartbeatOutAgo    string        `json:"heartbeat_out_ago,omitempty"`
	ElectionTimeoutMin time.Duration `json:"election_timeout_min_ns"`
	ElectionTimeoutMax time.Duration `json:"election_timeout_max_ns"`
	HeartbeatInterval  time.Duration `json:"heartbeat_interval_ns"`
}

// parseMember fills m's parsed fields from an inspection map
// (leader.ParseInspection). A value that does not parse is recorded in
// m.ParseErrors; a missing key leaves its field zero (an older member may
// not have it).
func parseMember(m *MemberReport, raw map[string]string) {
	in, err := leader.ParseInspection(raw)
	m.Inspection = raw
	m.ParseErrors = nil
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			m.ParseErrors = append(m.ParseErrors, e.Error())
		}
	}
	m.Cluster = in.Cluster
	m.State = string(in.Role)
	m.Term = in.Term
	m.LeaderNode = string(in.LeaderNode)
	m.LeaderPID = in.LeaderPID
	m.ViewSize, m.Quorum, m.MinClusterSize, m.Peers = in.ViewSize, in.Quorum, in.MinClusterSize, in.Peers
	m.ConfirmDenied = in.ConfirmDenied
	m.ElectionsStarted, m.ElectionsWon, m.LeadershipChanges = in.ElectionsStarted, in.ElectionsWon, in.LeadershipChanges
	m.QuorumLostStepDowns, m.Rounds = in.QuorumLostStepDowns, in.Rounds
	m.SlowCallbacks = in.SlowCallbacks
	m.Unreachable = make([]string, 0, len(in.Unreachable))
	for _, u := range in.Unreachable {
		m.Unreachable = append(m.Unreachable, fmt.Sprintf("%s (%s ago)", u.Node, u.For))
	}
	m.Dropped = in.Dropped
	m.View = View{Epoch: in.ViewEpoch, Term: in.ViewTerm, Lineage: in.ViewLineage, Agreed: in.ViewAgreed, Committed: in.ViewCommitted, Members: []string{}}
	for _, p := range in.ViewMembers {
		m.View.Members = append(m.View.Members, string(p.Node))
	}
	m.PendingChange, m.UnclusteredBecause = in.PendingChange, in.UnclusteredBecause
	m.Lagging = make([]string, 0, len(in.Lagging))
	for _, n := range in.Lagging {
		m.Lagging = append(m.Lagging, string(n))
	}
	m.Timers = Timers{
		ElectionArmed: in.ElectionTimerArmed, HeartbeatArmed: in.HeartbeatTimerArmed,
		HeartbeatInLast: in.HeartbeatInLast.At, HeartbeatOutLast: in.HeartbeatOutLast.At,
		ElectionTimeoutMin: in.ElectionTimeoutMin, ElectionTimeoutMax: in.ElectionTimeoutMax, HeartbeatInterval: in.HeartbeatInterval,
	}
	if !in.HeartbeatInLast.IsZero() {
		m.Timers.HeartbeatInAgo = in.HeartbeatInLast.Ago.String()
	}
	if !in.HeartbeatOutLast.IsZero() {
		m.Timers.HeartbeatOutAgo = in.HeartbeatOutLast.Ago.String()
	}
}

// analyze fills the cluster-wide fields (Leaders, Leader, Term, Problems) from
// the members.
func (c *ClusterReport) analyze() {
	c.Leaders = []string{}
	c.Problems = []Problem{}
	if c.Error != "" {
		return
	}
	var answered []MemberReport
	var unreachable []string
	for _, m := range c.Members {
		if !m.Answered() {
			unreachable = append(unreachable, m.Node)
			continue
		}
		answered = append(answered, m)
		c.Term = max(c.Term, m.Term)
		if m.State == RoleLeader {
			c.Leaders = append(c.Leaders, m.Node)
		}
	}

	add := func(kind string, members []string, format string, args ...any) {
		c.Problems = append(c.Problems, Problem{Kind: kind, Members: members, Message: fmt.Sprintf(format, args...)})
	}
	switch len(c.Leaders) {
	case 0:
		add(ProblemNoLeader, []string{}, "no answering member holds leadership")
	case 1:
	default:
		add(ProblemSeveralLeaders, c.Leaders, "%d members claim leadership at once: %s", len(c.Leaders), strings.Join(c.Leaders, ", "))
	}

	believed := groupBy(answered, func(m MemberReport) string { return m.LeaderNode })
	if len(believed) > 1 {
		add(ProblemLeaderDisagreement, nodesOf(answered), "members believe in different leaders: %s", describeGroups(believed, "no leader"))
	}
	beliefs := make([]leader.Belief, 0, len(answered))
	for _, m := range answered {
		beliefs = append(beliefs, leader.Belief{Member: gen.Atom(m.Node), Role: leader.Role(m.State), Term: m.Term, Leader: gen.Atom(m.LeaderNode)})
	}
	if a, ok := leader.Agree(beliefs, len(answered)); ok && len(c.Leaders) == 1 && string(a.Leader) == c.Leaders[0] {
		c.Leader = c.Leaders[0]
	}
	terms := groupBy(answered, func(m MemberReport) string { return strconv.FormatUint(m.Term, 10) })
	if len(terms) > 1 {
		add(ProblemTermDisagreement, nodesOf(answered), "members are at different terms: %s", describeGroups(terms, ""))
	}
	for _, m := range answered {
		switch {
		case m.State == RoleCandidate && m.Rounds >= StuckCandidateRounds:
			add(ProblemStuckCandidate, []string{m.Node}, "%s has campaigned %d times in a row without a leader being known (term %d)", m.Node, m.Rounds, m.Term)
		case m.State == RoleUnclustered && m.UnclusteredBecause != "":
			add(ProblemUnclustered, []string{m.Node}, "%s is unclustered: %s", m.Node, m.UnclusteredBecause)
		case m.State == RoleUnclustered:
			add(ProblemUnclustered, []string{m.Node}, "%s is unclustered: its view of %d is below the floor of %d (MinClusterSize)", m.Node, m.ViewSize, m.MinClusterSize)
		}
		if m.PendingChange != "" {
			add(ProblemPendingChange, []string{m.Node}, "%s has proposed a membership change not committed yet: %s", m.Node, m.PendingChange)
		}
		if len(m.Lagging) > 0 {
			add(ProblemViewLag, m.Lagging, "%s (leading) has not heard %s acknowledge its view (epoch %d)", m.Node, strings.Join(m.Lagging, ", "), m.View.Epoch)
		}
	}
	views := groupBy(answered, func(m MemberReport) string {
		return fmt.Sprintf("epoch %d/term %d of lineage %s", m.View.Epoch, m.View.Term, m.View.Lineage)
	})
	if len(views) > 1 {
		add(ProblemViewLag, nodesOf(answered), "members hold different views: %s", describeGroups(views, "no view"))
	}
	if len(unreachable) > 0 {
		add(ProblemUnreachable, unreachable, "could not read %s", strings.Join(unreachable, ", "))
	}
}

// groupBy maps each distinct key to the nodes of the members that have it.
func groupBy(members []MemberReport, key func(MemberReport) string) map[string][]string {
	out := make(map[string][]string)
	for _, m := range members {
		k := key(m)
		out[k] = append(out[k], m.Node)
	}
	return out
}

// describeGroups renders groups as "key: node, node; key: node" in key order;
// empty names the empty key.
func describeGroups(groups map[string][]string, empty string) string {
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		name := k
		if k == "" {
			name = empty
		}
		parts = append(parts, fmt.Sprintf("%s (by %s)", name, strings.Join(groups[k], ", ")))
	}
	return strings.Join(parts, "; ")
}

func nodesOf(members []MemberReport) []string {
	out := make([]string, 0, len(members))
	for _, m := range members {
		out = append(out, m.Node)
	}
	return out
}
