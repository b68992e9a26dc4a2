package leader

import (
	"fmt"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// Defaults of Options, as the leader document gives them.
const (
	DefaultMinClusterSize     = 3
	DefaultElectionTimeoutMin = 150  // ms
	DefaultElectionTimeoutMax = 300  // ms
	DefaultHeartbeatInterval  = 50   // ms
	DefaultGhostTTL           = 5000 // ms
)

// Evidence selects what a leader accepts as proof that it still reaches a
// peer when it checks its quorum on every heartbeat tick.
type Evidence int

const (
	// EvidenceReplies (the default) counts a peer as reached only when a reply
	// from it (a heartbeat acknowledgement or a vote answer) arrived within the
	// window, so a half-open link cannot keep a stale leader.
	EvidenceReplies Evidence = iota
	// EvidenceContact is the leader document's rule: an accepted send or any
	// inbound protocol message within one election timeout.
	EvidenceContact
)

// Options configure a leader.Actor; Init returns them. Durations are integer
// milliseconds, as in the leader document, so `ElectionTimeoutMin: 150` means
// 150 ms. Zero values take the defaults; every rejection is an error from Init.
type Options struct {
	// ClusterID namespaces the election; required. Messages carrying another
	// ClusterID are dropped and counted.
	ClusterID string
	// MinClusterSize is the smallest view (this node plus known peers) that may
	// have a leader. Default 3; 1 and 2 are allowed with a warning; below 1 is
	// rejected.
	MinClusterSize int
	// Bootstrap declares peers at start, exactly as Join would.
	Bootstrap []gen.ProcessID
	// ElectionTimeoutMin and ElectionTimeoutMax bound the randomised wait, in
	// ms, before a follower campaigns. Defaults 150 and 300; set one and the
	// other is derived (min doubles to max, max halves to min); max must
	// exceed min.
	ElectionTimeoutMin int
	ElectionTimeoutMax int
	// HeartbeatInterval is how often a leader asserts itself, in ms. Default
	// 50; a warning is logged when it exceeds a third of ElectionTimeoutMin.
	HeartbeatInterval int
	// GhostTTL is how long, in ms, a peer whose connection dropped stays in
	// the view before it is dropped. Default 5000.
	GhostTTL int

	// DisablePreVote turns off PreVote and leader stickiness (on by default):
	// with it on, a would-be candidate first asks whether it could win at the
	// next term, and a member that hears a live leader refuses.
	DisablePreVote bool
	// Evidence selects the quorum-evidence rule; the default is EvidenceReplies.
	Evidence Evidence
	// DisableFastFailover turns off campaigning soon after the leader is
	// reported down (on by default); a silent failure always costs a full
	// election timeout.
	DisableFastFailover bool

	// Prefer picks a preferred leader on top of quorum safety: a leader that
	// sees a reachable, more-preferred member that has answered steadily for
	// PreferStableFor hands leadership to it. The zero value prefers nobody.
	Prefer Preference
	// PreferStableFor is how long, in ms, a more-preferred member must have
	// answered without a gap before leadership moves to it. Default 2 x
	// ElectionTimeoutMax.
	PreferStableFor int

	// ConfirmInterval, when positive, makes a leader consult
	// HandleConfirmLeader again every ConfirmInterval ms and step down on a
	// denial, so an external lease lost mid-term ends leadership. Off (0) by
	// default, as in the leader document, where the callback runs once per
	// won election.
	ConfirmInterval int

	// SameHost, when set, is the path of this cluster's same-host cell (an
	// mmfcell file; one per cluster per host, created if missing). Of the
	// members of the cluster on this host, only the OS process holding the
	// cell (the lowest live PID) starts elections; the others vote, follow
	// and take heartbeats as usual. Votes and quorum are unchanged, so safety
	// is too. Members in one OS process share a PID and so all hold it.
	SameHost string

	// StateFile, when set, keeps the term and the vote in this file, written
	// atomically and fsynced before a vote is granted or a candidacy starts,
	// and read back at start. Without it a restarted member starts at term 0
	// and may vote a second time in a term it already voted in. A file that
	// cannot be read or parsed makes Init fail rather than start fresh.
	StateFile string

	// OnTransition, when set, is called on the actor's goroutine after each
	// input that changed the role, term or recognised leader, with the state
	// at the end of that input (steps within one input, such as a lone member
	// going from follower through candidate to leader, are reported as one).
	// It must return quickly; the test harness records histories with it.
	OnTransition func(Transition) `json:"-"`
}

// Preference selects a preferred leader: Kind is PreferNone, PreferOldest
// (earliest start wins, ties by node name), PreferHighestID (highest node name
// wins) or PreferFunc with Less reporting whether a is more preferred than b
// (a strict total order, the same on every member).
type Preference = election.Preference

// Candidate is what a preference compares: a member's node, name and start time.
type Candidate = election.Candidate

// The kinds of Preference.
const (
	PreferNone      = election.PreferNone
	PreferOldest    = election.PreferOldest
	PreferHighestID = election.PreferHighestID
	PreferFunc      = election.PreferFunc
)

// electionTimings are Options' durations resolved to time.Duration, once, at
// the boundary between the document's milliseconds and the core.
type electionTimings struct {
	min, max, heartbeat, ghostTTL, preferStableFor time.Duration
}

// resolve fills defaults and checks Options. It returns the resolved timings,
// the effective MinClusterSize and the warnings Init logs.
func (o Options) resolve() (electionTimings, int, []string, error) {
	var warnings []string
	if o.ClusterID == "" {
		return electionTimings{}, 0, nil, fmt.Errorf("leader: ClusterID is required: %w", gen.ErrIncorrect)
	}
	minSize := o.MinClusterSize
	switch {
	case minSize < 0:
		return electionTimings{}, 0, nil, fmt.Errorf("leader: MinClusterSize %d is below 1: %w", minSize, gen.ErrIncorrect)
	case minSize == 0:
		minSize = DefaultMinClusterSize
	case minSize == 1:
		warnings = append(warnings, "MinClusterSize 1 lets a lone node appoint itself; nothing prevents a fragment of one from operating alone")
	case minSize == 2:
		warnings = append(warnings, "MinClusterSize 2 gives a quorum of two out of two: losing either node ends leadership; sensible only with HandleConfirmLeader gating")
	}

	lo, hi := o.ElectionTimeoutMin, o.ElectionTimeoutMax
	if lo < 0 || hi < 0 || o.HeartbeatInterval < 0 || o.GhostTTL < 0 {
		return electionTimings{}, 0, nil, fmt.Errorf("leader: negative duration in Options (ElectionTimeoutMin %d, ElectionTimeoutMax %d, HeartbeatInterval %d, GhostTTL %d ms): %w",
			lo, hi, o.HeartbeatInterval, o.GhostTTL, gen.ErrIncorrect)
	}
	switch {
	case lo == 0 && hi == 0:
		lo, hi = DefaultElectionTimeoutMin, DefaultElectionTimeoutMax
	case hi == 0:
		hi = 2 * lo
	case lo == 0:
		lo = hi / 2
	}
	if hi <= lo {
		return electionTimings{}, 0, nil, fmt.Errorf("leader: ElectionTimeoutMax %d ms must exceed ElectionTimeoutMin %d ms: %w", hi, lo, gen.ErrIncorrect)
	}
	if lo == 0 {
		return electionTimings{}, 0, nil, fmt.Errorf("leader: ElectionTimeoutMax %d ms is too small to derive a minimum: %w", hi, gen.ErrIncorrect)
	}
	heartbeat := o.HeartbeatInterval
	if heartbeat == 0 {
		heartbeat = DefaultHeartbeatInterval
	}
	if heartbeat*3 > lo {
		warnings = append(warnings, fmt.Sprintf("HeartbeatInterval %d ms is not comfortably below ElectionTimeoutMin %d ms: followers may time out between heartbeats and campaign against a healthy leader", heartbeat, lo))
	}
	ghost := o.GhostTTL
	if ghost == 0 {
		ghost = DefaultGhostTTL
	}
	if o.ConfirmInterval < 0 {
		return electionTimings{}, 0, nil, fmt.Errorf("leader: ConfirmInterval %d ms is negative: %w", o.ConfirmInterval, gen.ErrIncorrect)
	}
	if o.PreferStableFor < 0 {
		return electionTimings{}, 0, nil, fmt.Errorf("leader: PreferStableFor %d ms is negative: %w", o.PreferStableFor, gen.ErrIncorrect)
	}
	if o.Evidence != EvidenceReplies && o.Evidence != EvidenceContact {
		return electionTimings{}, 0, nil, fmt.Errorf("leader: unknown Evidence %d: %w", o.Evidence, gen.ErrIncorrect)
	}
	ms := time.Millisecond
	return electionTimings{
		min:       time.Duration(lo) * ms,
		max:       time.Duration(hi) * ms,
		heartbeat: time.Duration(heartbeat) * ms,
		ghostTTL:  time.Duration(ghost) * ms,

		preferStableFor: time.Duration(o.PreferStableFor) * ms,
	}, minSize, warnings, nil
}

func (e Evidence) core() election.Evidence {
	if e == EvidenceContact {
		return election.EvidenceContact
	}
	return election.EvidenceReplies
}
