package leader

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// Defaults of Options, as the leader document gives them, in milliseconds
// where they are durations.
const (
	DefaultMinClusterSize     = election.DefaultMinClusterSize
	DefaultElectionTimeoutMin = int(election.DefaultElectionTimeoutMin / time.Millisecond)
	DefaultElectionTimeoutMax = int(election.DefaultElectionTimeoutMax / time.Millisecond)
	DefaultHeartbeatInterval  = int(election.DefaultHeartbeatInterval / time.Millisecond)
	DefaultGhostTTL           = int(election.DefaultGhostTTL / time.Millisecond)
)

// Evidence selects what a leader accepts as proof that it still reaches a
// peer when it checks its quorum on every heartbeat tick.
type Evidence = election.Evidence

const (
	// EvidenceReplies (the default) counts a peer as reached only when a reply
	// from it (a heartbeat acknowledgement or a vote answer) answers what the
	// leader sent within the window, however late the reply arrived, so
	// neither a half-open link nor a slow one can keep a stale leader.
	EvidenceReplies = election.EvidenceReplies
	// EvidenceContact is the leader document's rule: an accepted send or any
	// inbound protocol message within one election timeout.
	EvidenceContact = election.EvidenceContact
)

// Options configure a leader.Actor; Init returns them. Durations are integer
// milliseconds, as in the leader document, so `ElectionTimeoutMin: 150` means
// 150 ms. Zero values take the defaults; every rejection is an error from Init.
type Options struct {
	// ClusterID namespaces the election; required. Messages carrying another
	// ClusterID are dropped and counted.
	ClusterID string
	// MinClusterSize is the smallest agreed view that may have a visible
	// leader, and the fewest members that must acknowledge a cluster's first
	// view. Default 3; 1 and 2 are allowed with a warning; negative is
	// rejected. Set it above half the expected node count and two disjoint
	// groups can never both form a cluster (docs/membership.md).
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
	// GhostTTL is how long, in ms, a member may stay silent (its connection
	// dropped, or no message from it) before the leader removes it from the
	// view. Default 5000. Only a leader removes members, so a side that has
	// no leader never shrinks its view.
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

	// DisableHeartbeatCoalescing makes this member send its heartbeats and
	// acknowledgements directly, one frame each. By default (a Regent
	// extension) the steady heartbeats of every cluster whose members sit on
	// the same two nodes travel in one frame per tick, gathered by a
	// coalescer process each node runs (CoalescerName); votes, handovers,
	// view changes and the first heartbeats of a leadership always go
	// direct. Members with and without it interoperate; every node must run
	// a Regent version that has the coalescer (docs/operations.md, Many
	// clusters on one machine).
	DisableHeartbeatCoalescing bool

	// ConfirmInterval, when positive, makes a leader consult
	// HandleConfirmLeader again every ConfirmInterval ms and step down on a
	// denial, so an external lease lost mid-term ends leadership. Off (0) by
	// default, as in the leader document, where the callback runs once per
	// won election.
	ConfirmInterval int

	// SameHost, when set, is the path of this cluster's same-host cell (an
	// mmfcell file; one per cluster per host, created if missing, and bound
	// to the ClusterID: Init fails for a path another cluster uses). Of the
	// members of the cluster on this host, only the OS process holding the
	// cell (the lowest live PID) starts elections; the others vote, follow
	// and take heartbeats as usual. Votes and quorum are unchanged, so safety
	// is too. Members in one OS process share a PID and so all hold it.
	SameHost string

	// StateFile, when set, keeps the term, the vote and the view in this
	// file, written atomically and fsynced before a vote is granted, a
	// candidacy starts or a view is acknowledged, and read back at start.
	// Without it a restarted member starts at term 0 with no view and may vote
	// a second time in a term it already voted in, or take part in a new
	// formation (docs/membership.md says what that can break). A file that
	// cannot be read or parsed makes Init fail rather than start fresh; one
	// that cannot be written makes the member vote for nobody and lead nothing
	// until a write succeeds (ergo:storage_error says why).
	StateFile string

	// OnTransition, when set, is called on the actor's goroutine after each
	// input that changed the role, term, recognised leader, protocol
	// leadership (Transition.ProtocolLeader) or accepted view, with the state
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

// config converts Options into the election's configuration: milliseconds
// become durations here, once, and everything else (defaults, derivation of
// one timeout bound from the other, validation, warnings) is the core's.
// Errors wrap gen.ErrIncorrect and name the Options field.
func (o Options) config(self gen.ProcessID, started time.Time, source *rand.Rand) (election.Config, error) {
	for _, f := range []struct {
		name  string
		value int
	}{
		{"MinClusterSize", o.MinClusterSize}, {"ElectionTimeoutMin", o.ElectionTimeoutMin}, {"ElectionTimeoutMax", o.ElectionTimeoutMax},
		{"HeartbeatInterval", o.HeartbeatInterval}, {"GhostTTL", o.GhostTTL}, {"PreferStableFor", o.PreferStableFor},
		{"ConfirmInterval", o.ConfirmInterval},
	} {
		if f.value < 0 {
			return election.Config{}, fmt.Errorf("leader: %s %d is negative: %w", f.name, f.value, gen.ErrIncorrect)
		}
	}
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	cfg := election.Config{
		ClusterID:           o.ClusterID,
		Self:                self,
		MinClusterSize:      o.MinClusterSize,
		Bootstrap:           o.Bootstrap,
		ElectionTimeoutMin:  ms(o.ElectionTimeoutMin),
		ElectionTimeoutMax:  ms(o.ElectionTimeoutMax),
		HeartbeatInterval:   ms(o.HeartbeatInterval),
		GhostTTL:            ms(o.GhostTTL),
		DisablePreVote:      o.DisablePreVote,
		Evidence:            o.Evidence,
		DisableFastFailover: o.DisableFastFailover,
		Started:             started,
		Prefer:              o.Prefer,
		PreferStableFor:     ms(o.PreferStableFor),
		Rand:                source,
		// One clock for every member of the process: the coalescer stamps
		// the heartbeats it sends for them and reads the echoes it credits
		// for them as their cores do (stampOf).
		Origin: gridEpoch,
	}.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return election.Config{}, fmt.Errorf("leader: %w", err)
	}
	return cfg, nil
}
