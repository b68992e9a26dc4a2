package election

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/regent-go/regent/gen"
)

// Evidence selects what counts, on a leader's heartbeat tick, as having
// reached a member within the evidence window.
type Evidence int

const (
	// EvidenceReplies (the default) counts only replies (vote answers and
	// heartbeat acknowledgements), each as of the time what it answers was
	// sent (evidenceOf), so a leader whose sends vanish into a dead
	// connection, or whose replies come ever later, still steps down.
	EvidenceReplies Evidence = iota
	// EvidenceContact is the leader document's rule: an accepted send to the
	// member or any inbound protocol message from it.
	EvidenceContact
)

// String names the evidence rule.
func (e Evidence) String() string {
	switch e {
	case EvidenceReplies:
		return "replies"
	case EvidenceContact:
		return "contact"
	}
	return "unknown"
}

// The defaults of Config, as the leader document gives them.
const (
	DefaultMinClusterSize     = 3
	DefaultElectionTimeoutMin = 150 * time.Millisecond
	DefaultElectionTimeoutMax = 300 * time.Millisecond
	DefaultHeartbeatInterval  = 50 * time.Millisecond
	DefaultGhostTTL           = 5 * time.Second
)

// Config is one member's election configuration. The zero value of every
// optional field means its production default (WithDefaults), so the shell,
// the simulator and tests all run the same protocol unless they say
// otherwise. Every member of a cluster should use the same values.
type Config struct {
	// ClusterID namespaces the election; messages with another one are
	// dropped. Required.
	ClusterID string
	// Self is this member's registered name and node, carried in every
	// message so peers can reach it again by name. Required.
	Self gen.ProcessID
	// MinClusterSize is the smallest agreed view that may have a visible
	// leader, and the fewest members that must acknowledge a cluster's first
	// view. Default 3; at least 1.
	MinClusterSize int
	// Bootstrap peers are declared at start exactly as by Join; entries
	// naming this node are skipped.
	Bootstrap []gen.ProcessID
	// ElectionTimeoutMin and ElectionTimeoutMax bound the randomised wait
	// before a follower campaigns. Defaults 150 ms and 300 ms; set one and
	// the other is derived (Min doubles to Max, Max halves to Min). Max must
	// exceed Min.
	ElectionTimeoutMin time.Duration
	ElectionTimeoutMax time.Duration
	// Origin is the time this member's clock counts from: the stamps its
	// messages carry (MessageHeartbeat.Sent, MessageRequestVote.Sent) are
	// offsets from it (Stamp). Zero: the time the Core is made. A shell
	// that sends heartbeats or credits acknowledgements for its members
	// (SteadyBeat) gives them all one origin, so that it stamps and reads
	// their messages as they do.
	Origin time.Time
	// HeartbeatInterval is how often a leader asserts itself and checks its
	// quorum evidence. Default 50 ms. It should be comfortably below
	// ElectionTimeoutMin (Warnings says when it is not): slower heartbeats
	// let followers time out between them, and the leader's evidence window
	// widens to two heartbeat intervals.
	HeartbeatInterval time.Duration
	// GhostTTL is how long a member of the view may stay silent before its
	// leader removes it. Default 5 s.
	GhostTTL time.Duration
	// DisablePreVote turns off PreVote and leader stickiness (on by default).
	DisablePreVote bool
	// Evidence is the leader's rule for having reached a member; the zero
	// value is EvidenceReplies.
	Evidence Evidence
	// DisableFastFailover turns off campaigning soon after the leader is
	// reported down (on by default).
	DisableFastFailover bool
	// Started is when this member started. It travels in every message so
	// peers can rank members for PreferOldest; zero means unknown.
	Started time.Time
	// Prefer chooses a preferred leader; the zero value never hands over on
	// its own.
	Prefer Preference
	// PreferStableFor is how long a more preferred member must have answered
	// without a gap before the leader hands over to it. Default
	// 2 × ElectionTimeoutMax; not negative.
	PreferStableFor time.Duration
	// Rand is the only source of randomness, so a seeded source makes a run
	// reproducible. Required; owned by the Core.
	Rand *rand.Rand
}

// WithDefaults returns c with every zero optional field set to its default
// and one election timeout bound derived from the other when only one is set.
func (c Config) WithDefaults() Config {
	if c.MinClusterSize == 0 {
		c.MinClusterSize = DefaultMinClusterSize
	}
	switch {
	case c.ElectionTimeoutMin == 0 && c.ElectionTimeoutMax == 0:
		c.ElectionTimeoutMin, c.ElectionTimeoutMax = DefaultElectionTimeoutMin, DefaultElectionTimeoutMax
	case c.ElectionTimeoutMax == 0:
		c.ElectionTimeoutMax = 2 * c.ElectionTimeoutMin
	case c.ElectionTimeoutMin == 0:
		c.ElectionTimeoutMin = c.ElectionTimeoutMax / 2
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.GhostTTL == 0 {
		c.GhostTTL = DefaultGhostTTL
	}
	if c.PreferStableFor == 0 {
		c.PreferStableFor = 2 * c.ElectionTimeoutMax
	}
	return c
}

// Validate reports the first problem with c once defaults are applied;
// errors wrap gen.ErrIncorrect and name the field.
func (c Config) Validate() error {
	c = c.WithDefaults()
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
	case c.ElectionTimeoutMax <= c.ElectionTimeoutMin:
		return bad("ElectionTimeoutMax %s must exceed ElectionTimeoutMin %s", c.ElectionTimeoutMax, c.ElectionTimeoutMin)
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

// Warnings lists what is allowed but probably a mistake in c (defaults
// applied), for the shell to log at start.
func (c Config) Warnings() []string {
	c = c.WithDefaults()
	var out []string
	switch c.MinClusterSize {
	case 1:
		out = append(out, "MinClusterSize 1 lets a lone node appoint itself; nothing prevents a fragment of one from operating alone")
	case 2:
		out = append(out, "MinClusterSize 2 lets two members lead as a cluster of their own, where losing either ends leadership: with three members it survives one loss; on two alone it is sensible only with HandleConfirmLeader gating")
	}
	if 3*c.HeartbeatInterval > c.ElectionTimeoutMin {
		out = append(out, fmt.Sprintf("HeartbeatInterval %s is not comfortably below ElectionTimeoutMin %s: followers may time out between heartbeats and campaign against a healthy leader",
			c.HeartbeatInterval, c.ElectionTimeoutMin))
	}
	return out
}

// evidenceWindow is how recent contact must be, on a leader's heartbeat tick,
// to count as having reached a member: ElectionTimeoutMin, or two heartbeat
// intervals when heartbeats are not faster than that.
func (c Config) evidenceWindow() time.Duration {
	if c.HeartbeatInterval >= c.ElectionTimeoutMin {
		return 2 * c.HeartbeatInterval
	}
	return c.ElectionTimeoutMin
}

// preVote and fastFailover read the negative options positively.
func (c Config) preVote() bool      { return !c.DisablePreVote }
func (c Config) fastFailover() bool { return !c.DisableFastFailover }

// lastTerm is the highest term a member may move to: a term must leave room
// for the next one, or the cluster could never elect again.
const lastTerm = math.MaxUint64 - 1
