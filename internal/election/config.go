package election

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/regent-go/regent/gen"
)

// Evidence selects what counts, on a leader's heartbeat tick, as having
// reached a member within the last election timeout.
type Evidence int

const (
	// EvidenceContact is the leader document's rule: an accepted send to the
	// member or any inbound protocol message from it.
	EvidenceContact Evidence = iota
	// EvidenceReplies counts only replies (vote answers and heartbeat
	// acknowledgements), so a leader whose sends vanish into a dead connection
	// still steps down.
	EvidenceReplies
)

// String names the evidence rule.
func (e Evidence) String() string {
	switch e {
	case EvidenceContact:
		return "contact"
	case EvidenceReplies:
		return "replies"
	}
	return "unknown"
}

// Config is one member's election configuration. Every member of a cluster
// should use the same values; the shell (leader.Actor) fills in defaults.
type Config struct {
	// ClusterID namespaces the election; messages with another one are dropped.
	// Required.
	ClusterID string
	// Self is this member's registered name and node, carried in every message
	// so peers can reach it again by name. Required.
	Self gen.ProcessID
	// MinClusterSize is the smallest view that may have a leader; a smaller
	// view is unclustered. At least 1.
	MinClusterSize int
	// Bootstrap peers are declared at start exactly as by Join; entries naming
	// this node are skipped.
	Bootstrap []gen.ProcessID
	// ElectionTimeoutMin and ElectionTimeoutMax bound the randomised wait
	// before a follower campaigns; Max must not be below Min. Both positive.
	ElectionTimeoutMin time.Duration
	ElectionTimeoutMax time.Duration
	// HeartbeatInterval is how often a leader asserts itself and checks its
	// quorum evidence. Positive; it should be comfortably below
	// ElectionTimeoutMin, which the shell warns about but the core does not
	// enforce: with slower heartbeats followers time out between them and
	// campaign against a healthy leader (spurious elections), and the leader's
	// evidence window widens to two heartbeat intervals so its own pace alone
	// does not cost it the quorum.
	HeartbeatInterval time.Duration
	// GhostTTL is how long a member whose connection dropped stays in the view
	// before it is dropped. Positive.
	GhostTTL time.Duration
	// PreVote makes a would-be candidate ask first whether it could win, and
	// makes voters that heard from a live leader within ElectionTimeoutMin
	// refuse (leader stickiness), so an isolated member cannot disrupt a
	// healthy cluster when it returns.
	PreVote bool
	// Evidence is the leader's rule for having reached a member.
	Evidence Evidence
	// FastFailover makes a follower that is told its leader went down campaign
	// (or pre-vote, when the drop is only a lost connection) after a short
	// random delay below HeartbeatInterval instead of a full election timeout.
	FastFailover bool
	// Started is when this member started (the shell passes the actor's start
	// time). It travels in every message so peers can rank members for
	// PreferOldest; zero means unknown, which PreferOldest refuses.
	Started time.Time
	// Prefer chooses a preferred leader: a leader that sees a more preferred
	// member answering steadily for PreferStableFor hands leadership to it.
	// The zero value (PreferNone) never hands over on its own.
	Prefer Preference
	// PreferStableFor is how long a more preferred member must have answered
	// without a gap (each reply within the evidence window of the one before)
	// before the leader hands over to it. Zero means 2×ElectionTimeoutMax; not
	// negative.
	PreferStableFor time.Duration
	// Rand is the only source of randomness (election timeouts, delays), so a
	// seeded source makes a run reproducible. Required; owned by the Core.
	Rand *rand.Rand
}

// evidenceWindow is how recent contact must be, on a leader's heartbeat tick,
// to count as having reached a member: ElectionTimeoutMin, or two heartbeat
// intervals when heartbeats are not faster than that (a slower pace would
// otherwise make every tick look like a lost quorum).
func (c Config) evidenceWindow() time.Duration {
	if c.HeartbeatInterval >= c.ElectionTimeoutMin {
		return 2 * c.HeartbeatInterval
	}
	return c.ElectionTimeoutMin
}

// preferStableFor is PreferStableFor with its default applied.
func (c Config) preferStableFor() time.Duration {
	if c.PreferStableFor == 0 {
		return 2 * c.ElectionTimeoutMax
	}
	return c.PreferStableFor
}

// Validate reports the first problem with c; errors wrap gen.ErrIncorrect.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("election: config: %s: %w", fmt.Sprintf(format, args...), gen.ErrIncorrect)
	}
	switch {
	case c.ClusterID == "":
		return bad("ClusterID is required")
	case c.Self.Name == "" || c.Self.Node == "":
		return bad("Self needs a name and a node, got %s", c.Self)
	case c.MinClusterSize < 1:
		return bad("MinClusterSize must be at least 1, got %d", c.MinClusterSize)
	case c.ElectionTimeoutMin <= 0:
		return bad("ElectionTimeoutMin must be positive, got %s", c.ElectionTimeoutMin)
	case c.ElectionTimeoutMax < c.ElectionTimeoutMin:
		return bad("ElectionTimeoutMax %s is below ElectionTimeoutMin %s", c.ElectionTimeoutMax, c.ElectionTimeoutMin)
	case c.HeartbeatInterval <= 0:
		return bad("HeartbeatInterval must be positive, got %s", c.HeartbeatInterval)
	case c.GhostTTL <= 0:
		return bad("GhostTTL must be positive, got %s", c.GhostTTL)
	case c.Evidence != EvidenceContact && c.Evidence != EvidenceReplies:
		return bad("unknown Evidence %d", int(c.Evidence))
	case c.Rand == nil:
		return bad("Rand is required")
	case c.PreferStableFor < 0:
		return bad("PreferStableFor must not be negative, got %s", c.PreferStableFor)
	}
	if err := c.Prefer.validate(c.Started); err != nil {
		return bad("%s", err)
	}
	for i, p := range c.Bootstrap {
		if p.Name == "" || p.Node == "" {
			return bad("Bootstrap[%d] needs a name and a node, got %s", i, p)
		}
	}
	return nil
}
