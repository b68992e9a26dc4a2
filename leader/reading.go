package leader

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/regent-go/regent/gen"
)

// Role is a member's role, as ergo:state, Transition and MessageLeaderChanged name it.
type Role string

// The roles of a member.
const (
	// RoleUnclustered: no visible leader may exist where the member is (its
	// agreed view is below MinClusterSize, it is outside the view, or its
	// state cannot be written); Inspection.UnclusteredBecause says which.
	RoleUnclustered Role = "unclustered"
	RoleFollower    Role = "follower"
	RoleCandidate   Role = "candidate"
	RoleLeader      Role = "leader"
)

// Inspection is a member's ergo:* inspection, parsed. ParseInspection fills
// it from the map an Inspect returns; a key that is missing (a member of an
// older version) leaves its field zero.
type Inspection struct {
	Cluster        string
	Role           Role
	Leading        bool // ergo:leader: this member holds published leadership
	Term           uint64
	LeaderNode     gen.Atom // empty when no leader is known
	LeaderPID      string   // the leader's PID as text; PIDs do not parse back
	VotedFor       string
	TermChangedAt  Moment
	FencingToken   uint64
	ViewSize       int
	Quorum         int
	MinClusterSize int
	Peers          int
	PeersList      []string // the known PIDs of the view's members, as text
	Declared       []gen.ProcessID
	Bootstrap      []gen.ProcessID
	Unreachable    []Unreachable
	GhostTTL       time.Duration

	// The agreed view (docs/membership.md): zero before any view.
	ViewMembers        []gen.ProcessID
	ViewEpoch          uint64
	ViewTerm           uint64
	ViewLineage        string
	ViewAgreed         bool
	ViewCommitted      bool
	PendingChange      string
	Lagging            []gen.Atom
	Joining            string
	UnclusteredBecause string
	ProtocolLeader     bool
	ViewChanges        uint64

	VotesGranted    []gen.Atom
	VotesCount      int
	PreVoting       bool
	AwaitingConfirm bool
	Rounds          uint64

	ElectionTimerArmed  bool
	HeartbeatTimerArmed bool
	HeartbeatInLast     Moment
	HeartbeatOutLast    Moment
	ElectionTimeoutMin  time.Duration
	ElectionTimeoutMax  time.Duration
	HeartbeatInterval   time.Duration

	Dropped          map[string]uint64
	SendFailingPeers []gen.Atom
	ConfirmDenied    uint64
	LastDeniedAt     Moment
	StorageError     string
	Stopped          string

	ElectionsStarted    uint64
	ElectionsWon        uint64
	LeadershipChanges   uint64
	QuorumLostStepDowns uint64
	CampaignHeld        bool
	LeaderConflicts     uint64
	Prefer              string
	PreferredTransfers  uint64
	FailedHandovers     uint64
	StartedAt           Moment
	SameHost            SameHostCell
	Subscribers         int

	// HeartbeatCoalescing is ergo:heartbeat_coalescing: this member's
	// steady heartbeats travel through its node's coalescer.
	HeartbeatCoalescing bool
	// Coalescer is the member's node's coalescer, from ergo:coalescer and
	// ergo:coalescer_dropped.
	Coalescer CoalescerStats
	// RuntimeTimers counts the runtime timers the member armed for its
	// election timers (ergo:runtime_timers).
	RuntimeTimers uint64
	// SlowCallbacks counts, by callback name, the user's callbacks that ran
	// for the evidence window or longer (ergo:slow_callbacks).
	SlowCallbacks map[string]uint64

	// Raw is the map the inspection was parsed from, the user's keys and any
	// key this version does not know included.
	Raw map[string]string
}

// Moment is when an event happened, with its age as the member measured it
// when inspected (free of any skew between the member's clock and the
// reader's). The zero Moment is an event that never happened.
type Moment struct {
	At  time.Time
	Ago time.Duration
}

// IsZero reports whether the event never happened.
func (m Moment) IsZero() bool { return m.At.IsZero() }

// Unreachable is a member whose connection dropped, and how long ago it did
// when the inspection was taken.
type Unreachable struct {
	Node gen.Atom
	For  time.Duration
}

// SameHostCell is ergo:same_host parsed; Enabled is false when the member
// runs without a cell (the key says "off").
type SameHostCell struct {
	Enabled bool
	Path    string
	Self    int // this member's OS PID
	Holder  int // the OS PID the cell names, 0 when none
	Holds   bool
	Term    uint64
	Epoch   uint64
	Stale   bool
}

// inspectionField parses one key's value into its field of an Inspection.
type inspectionField func(in *Inspection, v string) error

// inspectionFields maps each ergo:* key to its parser. A key added to
// inspect.go gets a line here and a field above; keys not listed stay in Raw.
var inspectionFields = map[string]inspectionField{
	"ergo:cluster": func(in *Inspection, v string) error { in.Cluster = v; return nil },
	"ergo:state":   func(in *Inspection, v string) error { in.Role = Role(v); return nil },
	"ergo:leader":  boolField(func(in *Inspection) *bool { return &in.Leading }),
	"ergo:peers_list": func(in *Inspection, v string) error {
		in.PeersList = strings.Split(v, ", ")
		return nil
	},
	"ergo:term":                  uintField(func(in *Inspection) *uint64 { return &in.Term }),
	"ergo:leader_node":           func(in *Inspection, v string) error { in.LeaderNode = gen.Atom(v); return nil },
	"ergo:leader_pid":            func(in *Inspection, v string) error { in.LeaderPID = v; return nil },
	"ergo:voted_for":             func(in *Inspection, v string) error { in.VotedFor = v; return nil },
	"ergo:term_changed_at":       momentField(func(in *Inspection) *Moment { return &in.TermChangedAt }),
	"ergo:fencing_token":         uintField(func(in *Inspection) *uint64 { return &in.FencingToken }),
	"ergo:view_size":             intField(func(in *Inspection) *int { return &in.ViewSize }),
	"ergo:quorum":                intField(func(in *Inspection) *int { return &in.Quorum }),
	"ergo:min_cluster_size":      intField(func(in *Inspection) *int { return &in.MinClusterSize }),
	"ergo:peers":                 intField(func(in *Inspection) *int { return &in.Peers }),
	"ergo:declared":              processIDsField(func(in *Inspection) *[]gen.ProcessID { return &in.Declared }),
	"ergo:bootstrap":             processIDsField(func(in *Inspection) *[]gen.ProcessID { return &in.Bootstrap }),
	"ergo:unreachable":           parseUnreachable,
	"ergo:ghost_ttl":             durationField(func(in *Inspection) *time.Duration { return &in.GhostTTL }),
	"ergo:view_members":          processIDsField(func(in *Inspection) *[]gen.ProcessID { return &in.ViewMembers }),
	"ergo:view_epoch":            uintField(func(in *Inspection) *uint64 { return &in.ViewEpoch }),
	"ergo:view_term":             uintField(func(in *Inspection) *uint64 { return &in.ViewTerm }),
	"ergo:view_lineage":          func(in *Inspection, v string) error { in.ViewLineage = v; return nil },
	"ergo:view_agreed":           boolField(func(in *Inspection) *bool { return &in.ViewAgreed }),
	"ergo:view_committed":        boolField(func(in *Inspection) *bool { return &in.ViewCommitted }),
	"ergo:pending_change":        func(in *Inspection, v string) error { in.PendingChange = v; return nil },
	"ergo:lagging":               atomsField(func(in *Inspection) *[]gen.Atom { return &in.Lagging }),
	"ergo:joining":               func(in *Inspection, v string) error { in.Joining = v; return nil },
	"ergo:unclustered_because":   func(in *Inspection, v string) error { in.UnclusteredBecause = v; return nil },
	"ergo:protocol_leader":       boolField(func(in *Inspection) *bool { return &in.ProtocolLeader }),
	"ergo:view_changes":          uintField(func(in *Inspection) *uint64 { return &in.ViewChanges }),
	"ergo:storage_error":         func(in *Inspection, v string) error { in.StorageError = v; return nil },
	"ergo:stopped":               func(in *Inspection, v string) error { in.Stopped = v; return nil },
	"ergo:failed_handovers":      uintField(func(in *Inspection) *uint64 { return &in.FailedHandovers }),
	"ergo:votes_granted":         atomsField(func(in *Inspection) *[]gen.Atom { return &in.VotesGranted }),
	"ergo:votes_count":           intField(func(in *Inspection) *int { return &in.VotesCount }),
	"ergo:prevoting":             boolField(func(in *Inspection) *bool { return &in.PreVoting }),
	"ergo:awaiting_confirm":      boolField(func(in *Inspection) *bool { return &in.AwaitingConfirm }),
	"ergo:rounds":                uintField(func(in *Inspection) *uint64 { return &in.Rounds }),
	"ergo:election_timer_armed":  boolField(func(in *Inspection) *bool { return &in.ElectionTimerArmed }),
	"ergo:heartbeat_timer_armed": boolField(func(in *Inspection) *bool { return &in.HeartbeatTimerArmed }),
	"ergo:heartbeat_in_last":     momentField(func(in *Inspection) *Moment { return &in.HeartbeatInLast }),
	"ergo:heartbeat_out_last":    momentField(func(in *Inspection) *Moment { return &in.HeartbeatOutLast }),
	"ergo:election_timeout_min":  durationField(func(in *Inspection) *time.Duration { return &in.ElectionTimeoutMin }),
	"ergo:election_timeout_max":  durationField(func(in *Inspection) *time.Duration { return &in.ElectionTimeoutMax }),
	"ergo:heartbeat_interval":    durationField(func(in *Inspection) *time.Duration { return &in.HeartbeatInterval }),
	"ergo:dropped_by_reason":     parseDropped,
	"ergo:send_failing_peers":    atomsField(func(in *Inspection) *[]gen.Atom { return &in.SendFailingPeers }),
	"ergo:confirm_denied":        uintField(func(in *Inspection) *uint64 { return &in.ConfirmDenied }),
	"ergo:last_denied_at":        momentField(func(in *Inspection) *Moment { return &in.LastDeniedAt }),
	"ergo:elections_started":     uintField(func(in *Inspection) *uint64 { return &in.ElectionsStarted }),
	"ergo:elections_won":         uintField(func(in *Inspection) *uint64 { return &in.ElectionsWon }),
	"ergo:leadership_changes":    uintField(func(in *Inspection) *uint64 { return &in.LeadershipChanges }),
	"ergo:quorum_lost_stepdowns": uintField(func(in *Inspection) *uint64 { return &in.QuorumLostStepDowns }),
	"ergo:campaign_held":         boolField(func(in *Inspection) *bool { return &in.CampaignHeld }),
	"ergo:leader_conflicts":      uintField(func(in *Inspection) *uint64 { return &in.LeaderConflicts }),
	"ergo:prefer":                func(in *Inspection, v string) error { in.Prefer = v; return nil },
	"ergo:preferred_transfers":   uintField(func(in *Inspection) *uint64 { return &in.PreferredTransfers }),
	"ergo:started_at":            momentField(func(in *Inspection) *Moment { return &in.StartedAt }),
	"ergo:same_host":             parseSameHost,
	"ergo:subscribers":           intField(func(in *Inspection) *int { return &in.Subscribers }),
	"ergo:heartbeat_coalescing": func(in *Inspection, v string) error {
		switch v {
		case "on", "off":
			in.HeartbeatCoalescing = v == "on"
			return nil
		}
		return fmt.Errorf("%q is neither on nor off", v)
	},
	"ergo:coalescer": parseCoalescer,
	"ergo:coalescer_dropped": func(in *Inspection, v string) error {
		return parseCounts(v, func(reason string, n uint64) {
			if in.Coalescer.Dropped == nil {
				in.Coalescer.Dropped = map[string]uint64{}
			}
			in.Coalescer.Dropped[reason] = n
		})
	},
	"ergo:runtime_timers": uintField(func(in *Inspection) *uint64 { return &in.RuntimeTimers }),
	"ergo:slow_callbacks": func(in *Inspection, v string) error {
		return parseCounts(v, func(callback string, n uint64) {
			if in.SlowCallbacks == nil {
				in.SlowCallbacks = map[string]uint64{}
			}
			in.SlowCallbacks[callback] = n
		})
	},
}

// ParseInspection reads an inspection map. Unknown keys are kept in Raw
// only; an empty value or unknownItem leaves its field zero. A value that
// does not parse leaves its field zero too, and the error (one line per such
// key, wrapping gen.ErrMalformed) comes back beside the rest of the reading.
func ParseInspection(raw map[string]string) (Inspection, error) {
	in := Inspection{Raw: raw, Dropped: map[string]uint64{}}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys) // errors in a stable order
	var errs []error
	for _, k := range keys {
		parse, ok := inspectionFields[k]
		v := raw[k]
		if !ok || v == "" || v == unknownItem {
			continue
		}
		if err := parse(&in, v); err != nil {
			errs = append(errs, fmt.Errorf("leader: inspection key %s=%q: %v: %w", k, v, err, gen.ErrMalformed))
		}
	}
	return in, errors.Join(errs...)
}

// ReadInspection inspects the leader actor pid (local or remote) for keys
// (none: every key) and parses the answer.
func ReadInspection(node gen.Node, pid gen.PID, keys ...string) (Inspection, error) {
	raw, err := node.Inspect(pid, keys...)
	if err != nil {
		return Inspection{}, fmt.Errorf("leader: inspect %s: %w", pid, err)
	}
	return ParseInspection(raw)
}

// Belief is what the member on node Member believes as this inspection
// shows it. An inspection does not name its own node, hence the argument.
func (in Inspection) Belief(member gen.Atom) Belief {
	return Belief{Member: member, Role: in.Role, Term: in.Term, Leader: in.LeaderNode}
}

// typedField parses a value with parse into the field dst points at.
func typedField[T any](parse func(string) (T, error), dst func(*Inspection) *T) inspectionField {
	return func(in *Inspection, v string) error {
		x, err := parse(v)
		if err == nil {
			*dst(in) = x
		}
		return err
	}
}

func uintField(dst func(*Inspection) *uint64) inspectionField {
	return typedField(func(v string) (uint64, error) { return strconv.ParseUint(v, 10, 64) }, dst)
}

func intField(dst func(*Inspection) *int) inspectionField { return typedField(strconv.Atoi, dst) }

func boolField(dst func(*Inspection) *bool) inspectionField {
	return typedField(strconv.ParseBool, dst)
}

func durationField(dst func(*Inspection) *time.Duration) inspectionField {
	return typedField(time.ParseDuration, dst)
}

// momentField parses "2006-01-02T15:04:05.999Z (12ms ago)"; never is the zero Moment.
func momentField(dst func(*Inspection) *Moment) inspectionField {
	return func(in *Inspection, v string) error {
		if v == never {
			return nil
		}
		stamp, age, _ := strings.Cut(v, " (")
		t, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil {
			return err
		}
		ago, err := time.ParseDuration(strings.TrimSuffix(age, " ago)"))
		if err != nil {
			return err
		}
		*dst(in) = Moment{At: t, Ago: ago}
		return nil
	}
}

func atomsField(dst func(*Inspection) *[]gen.Atom) inspectionField {
	return func(in *Inspection, v string) error {
		for _, s := range splitList(v) {
			*dst(in) = append(*dst(in), gen.Atom(s))
		}
		return nil
	}
}

// processIDsField parses "<name@node>, <name@node>".
func processIDsField(dst func(*Inspection) *[]gen.ProcessID) inspectionField {
	return func(in *Inspection, v string) error {
		for _, s := range splitList(v) {
			name, node, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(s, "<"), ">"), "@")
			if !ok || name == "" || node == "" {
				return fmt.Errorf("%q is not <name@node>", s)
			}
			*dst(in) = append(*dst(in), gen.ProcessID{Name: gen.Atom(name), Node: gen.Atom(node)})
		}
		return nil
	}
}

// parseUnreachable parses "node (12ms ago), node (3s ago)".
func parseUnreachable(in *Inspection, v string) error {
	for _, s := range splitList(v) {
		node, age, ok := strings.Cut(s, " (")
		d, err := time.ParseDuration(strings.TrimSuffix(age, " ago)"))
		if !ok || err != nil {
			return fmt.Errorf("%q is not \"node (age ago)\"", s)
		}
		in.Unreachable = append(in.Unreachable, Unreachable{Node: gen.Atom(node), For: d})
	}
	return nil
}

// parseDropped parses "reason=count, reason=count".
func parseDropped(in *Inspection, v string) error {
	return parseCounts(v, func(reason string, n uint64) { in.Dropped[reason] = n })
}

// parseCounts parses "reason=count, reason=count", handing each pair to set.
func parseCounts(v string, set func(reason string, n uint64)) error {
	for _, s := range splitList(v) {
		reason, count, ok := strings.Cut(s, "=")
		n, err := strconv.ParseUint(count, 10, 64)
		if !ok || err != nil {
			return fmt.Errorf("%q is not reason=count", s)
		}
		set(reason, n)
	}
	return nil
}

// parseCoalescer parses ergo:coalescer, "running=B frames_out=N ...".
func parseCoalescer(in *Inspection, v string) error {
	c := &in.Coalescer
	counters := map[string]*uint64{
		"frames_out": &c.FramesOut, "entries_out": &c.EntriesOut, "flushes": &c.Flushes, "failed_frames": &c.FailedFrames,
		"frames_in": &c.FramesIn, "entries_in": &c.EntriesIn, "deliveries": &c.Deliveries, "held": &c.Held,
		"answered": &c.Answered, "beaten_ahead": &c.BeatenAhead, "taken": &c.Taken, "mismatched": &c.Mismatched,
	}
	for _, word := range strings.Fields(v) {
		key, value, ok := strings.Cut(word, "=")
		if !ok {
			return fmt.Errorf("%q is not key=value", word)
		}
		var err error
		switch dst, known := counters[key]; {
		case key == "running":
			c.Running, err = strconv.ParseBool(value)
		case known:
			*dst, err = strconv.ParseUint(value, 10, 64)
		default:
			continue // a counter of a later version
		}
		if err != nil {
			return fmt.Errorf("%s: %v", key, err)
		}
	}
	return nil
}

// parseSameHost parses "off" or "path=P self=N holder=N holds=B term=N
// epoch=N stale=B"; the path may hold spaces, so a word without a known
// key= prefix continues the previous value.
func parseSameHost(in *Inspection, v string) error {
	if v == "off" {
		return nil
	}
	fields := map[string]string{}
	last := ""
	for _, word := range strings.Split(v, " ") {
		key, value, ok := strings.Cut(word, "=")
		switch key {
		case "path", "self", "holder", "holds", "term", "epoch", "stale":
			if ok {
				fields[key], last = value, key
				continue
			}
		}
		if last == "" {
			return fmt.Errorf("%q does not start with path=", v)
		}
		fields[last] += " " + word
	}
	c := SameHostCell{Enabled: true, Path: fields["path"]}
	var errs []error
	atoi := func(k string) int {
		n, err := strconv.Atoi(fields[k])
		errs = append(errs, err)
		return n
	}
	parseUint := func(k string) uint64 {
		n, err := strconv.ParseUint(fields[k], 10, 64)
		errs = append(errs, err)
		return n
	}
	parseBool := func(k string) bool {
		b, err := strconv.ParseBool(fields[k])
		errs = append(errs, err)
		return b
	}
	c.Self, c.Holder, c.Holds = atoi("self"), atoi("holder"), parseBool("holds")
	c.Term, c.Epoch, c.Stale = parseUint("term"), parseUint("epoch"), parseBool("stale")
	if err := errors.Join(errs...); err != nil {
		return err
	}
	in.SameHost = c
	return nil
}

// splitList splits a ", "-joined inspection value; empty gives nil.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Belief is what one member believes: its role, its term and the leader it
// recognises. Agree finds the leader enough beliefs share.
type Belief struct {
	// Member is the believing member's node.
	Member gen.Atom
	Role   Role
	Term   uint64
	// Leader is the recognised leader's node, empty when none is known.
	Leader gen.Atom
	// LeaderPID is the recognised leader's PID where the source carries it
	// (transitions, notifications); inspection does not.
	LeaderPID gen.PID
	// Since is when the member came to believe this, zero when unknown.
	Since time.Time
}

// Belief is what the member that made this transition believes.
func (t Transition) Belief() Belief {
	return Belief{Member: t.Member.Node, Role: t.Role, Term: t.Term, Leader: t.Leader.Node, LeaderPID: t.Leader, Since: t.At}
}

// Belief is what the member that sent this notification believes.
func (m MessageLeaderChanged) Belief() Belief {
	return Belief{Member: m.Member.Node, Role: m.Role, Term: m.Term, Leader: m.LeaderNode, LeaderPID: m.Leader}
}

// Agreement is a leader that members recognise at one term.
type Agreement struct {
	Leader    gen.Atom
	LeaderPID gen.PID // zero when no belief carried it
	Term      uint64
	// Members are the members that recognise it, earliest believer first
	// (by Since, then by node name).
	Members []gen.Atom
	// At is when the need-th member came to believe it; zero when Agree
	// failed or a needed belief had no Since.
	At time.Time
}

// Agree is the one rule for "which leader do enough members agree on": of
// the beliefs that name a leader, it groups those that name the same leader
// at the same term and picks the largest group (on a tie the higher term,
// then the lower node name). ok is true when that group holds at least need
// beliefs (need below 1 counts as 1). The best group comes back either way,
// so a caller can say how close it came. Which beliefs count (running
// members, terms above a failed leader's, not a dead leader) is the caller's
// filter; what need is (a majority of the view, every member) is the
// caller's rule.
func Agree(beliefs []Belief, need int) (Agreement, bool) {
	need = max(need, 1)
	type key struct {
		leader gen.Atom
		term   uint64
	}
	groups := map[key][]Belief{}
	for _, b := range beliefs {
		if b.Leader != "" {
			k := key{b.Leader, b.Term}
			groups[k] = append(groups[k], b)
		}
	}
	var best key
	var members []Belief
	for k, g := range groups {
		switch {
		case len(g) > len(members),
			len(g) == len(members) && k.term > best.term,
			len(g) == len(members) && k.term == best.term && k.leader < best.leader:
			best, members = k, g
		}
	}
	if members == nil {
		return Agreement{}, false
	}
	slices.SortFunc(members, func(a, b Belief) int {
		if c := a.Since.Compare(b.Since); c != 0 {
			return c
		}
		return strings.Compare(string(a.Member), string(b.Member))
	})
	a := Agreement{Leader: best.leader, Term: best.term}
	for _, b := range members {
		a.Members = append(a.Members, b.Member)
		if a.LeaderPID == (gen.PID{}) {
			a.LeaderPID = b.LeaderPID
		}
	}
	if len(members) < need {
		return a, false
	}
	if at := members[need-1].Since; !slices.ContainsFunc(members[:need], func(b Belief) bool { return b.Since.IsZero() }) {
		a.At = at
	}
	return a, true
}
