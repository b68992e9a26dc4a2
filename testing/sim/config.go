package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
	"github.com/regent-go/regent/testing/history"
)

// Config describes one simulated cluster and its run. Zero fields take the
// documented defaults.
type Config struct {
	// Seed decides every random choice of the run: timeouts, delays, losses
	// and the chaos plan.
	Seed uint64
	// Members is the cluster size. Default 5.
	Members int
	// MinClusterSize is every member's MinClusterSize. Default a majority of
	// Members.
	MinClusterSize int
	// ElectionTimeoutMin, ElectionTimeoutMax and HeartbeatInterval are the
	// cores' timings. Defaults 150ms, 300ms and 50ms, the leader document's.
	ElectionTimeoutMin time.Duration
	ElectionTimeoutMax time.Duration
	HeartbeatInterval  time.Duration
	// GhostTTL is how long a member with a lost connection stays in a view.
	// Default 5s.
	GhostTTL     time.Duration
	PreVote      bool
	FastFailover bool
	Evidence     election.Evidence
	// Prefer and PreferStableFor are every member's preferred-leader rule;
	// each member's Started is the virtual time of its current life's start.
	Prefer          election.Preference
	PreferStableFor time.Duration
	// Durable keeps each member's term and vote across a restart; without it
	// a restarted member starts from term zero with no vote.
	Durable bool
	// Join declares peers with Core.Join right after each start instead of
	// through Bootstrap.
	Join bool
	// Network shapes message delivery and failure detection.
	Network Network
	// Plan is a fixed list of faults, applied at their times.
	Plan []Fault
	// Chaos, when set, adds random faults drawn from Seed to Plan.
	Chaos *Chaos
}

// Network shapes how messages travel and how fast failures are noticed.
type Network struct {
	// Latency and Jitter: each message takes Latency plus a uniform draw
	// below Jitter, so messages overtake each other. Defaults 1ms and 4ms.
	Latency time.Duration
	Jitter  time.Duration
	// Loss, Duplicate and Reorder are per-message probabilities of dropping
	// a message, delivering it twice, and holding it back by up to
	// ReorderDelay (default ElectionTimeoutMax).
	Loss         float64
	Duplicate    float64
	Reorder      float64
	ReorderDelay time.Duration
	// DetectCut is how long a cut link takes to be noticed (the runtime's
	// keepalive): then both sides' monitors fire with gen.ErrNoConnection and
	// sends across it fail. Default ElectionTimeoutMin; negative: never.
	DetectCut time.Duration
	// DetectCrash is how long the peers of a crashed member take to see
	// gen.ErrNoConnection. Default 5ms.
	DetectCrash time.Duration
}

// Chaos draws random faults: episodes of one or two faults that stand for a
// while and are then repaired (a heal and a restart of every member down),
// separated by quiet gaps.
type Chaos struct {
	// Duration is the span in which episodes start; the last one is repaired
	// after it. Default 10s.
	Duration time.Duration
	// MaxGap and MaxHold bound the quiet gap before an episode and how long
	// its faults stand. Defaults 1s and 2s.
	MaxGap  time.Duration
	MaxHold time.Duration
	// Faults are the kinds to draw from, each as likely; default
	// FaultPartition, FaultIsolate, FaultCrash and FaultStop. Each targets
	// TheLeader or a random member, as likely.
	Faults []FaultKind
}

// withDefaults fills the zero fields of c.
func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Members == 0 {
		c.Members = 5
	}
	if c.MinClusterSize == 0 {
		c.MinClusterSize = c.Members/2 + 1
	}
	def(&c.ElectionTimeoutMin, 150*time.Millisecond)
	def(&c.ElectionTimeoutMax, 300*time.Millisecond)
	def(&c.HeartbeatInterval, 50*time.Millisecond)
	def(&c.GhostTTL, 5*time.Second)
	def(&c.Network.Latency, time.Millisecond)
	def(&c.Network.Jitter, 4*time.Millisecond)
	def(&c.Network.ReorderDelay, c.ElectionTimeoutMax)
	def(&c.Network.DetectCut, c.ElectionTimeoutMin)
	def(&c.Network.DetectCrash, 5*time.Millisecond)
	if c.Chaos != nil {
		ch := *c.Chaos
		def(&ch.Duration, 10*time.Second)
		def(&ch.MaxGap, time.Second)
		def(&ch.MaxHold, 2*time.Second)
		if len(ch.Faults) == 0 {
			ch.Faults = []FaultKind{FaultPartition, FaultIsolate, FaultCrash, FaultStop}
		}
		c.Chaos = &ch
	}
	return c
}

// validate reports what New cannot run; errors wrap gen.ErrIncorrect.
func (c Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("sim: config: %s: %w", fmt.Sprintf(format, args...), gen.ErrIncorrect)
	}
	switch {
	case c.Members < 1:
		return bad("Members must be at least 1, got %d", c.Members)
	case c.Network.Latency < 0 || c.Network.Jitter < 0 || c.Network.ReorderDelay < 0 || c.Network.DetectCrash < 0:
		return bad("network delays must not be negative")
	case c.Network.Loss < 0 || c.Network.Loss >= 1 || c.Network.Duplicate < 0 || c.Network.Duplicate >= 1 ||
		c.Network.Reorder < 0 || c.Network.Reorder >= 1:
		return bad("network probabilities must lie in [0, 1)")
	}
	if c.Chaos != nil {
		for _, k := range c.Chaos.Faults {
			if k != FaultPartition && k != FaultIsolate && k != FaultCrash && k != FaultStop {
				return bad("Chaos.Faults may hold partition, isolate, crash and stop, got %s", k)
			}
		}
		if c.Chaos.Duration < 0 || c.Chaos.MaxGap < 0 || c.Chaos.MaxHold < 0 {
			return bad("Chaos durations must not be negative")
		}
	}
	for i, f := range c.Plan {
		if err := f.validate(c.Members); err != nil {
			return fmt.Errorf("sim: config: Plan[%d]: %w", i, err)
		}
	}
	return nil
}

// Bounds are the limits of the timed invariants for a run of c: a leader cut
// off from its quorum notices within the cut detection time or one election
// timeout, whichever is later, plus a heartbeat tick and the slowest message;
// a healed cluster settles on one leader within twenty election timeouts
// (randomised timeouts make split votes ever rarer, never impossible).
// StepDown is zero, which skips that rule, when cuts are never detected
// under EvidenceContact: accepted sends then count as contact forever.
func (c Config) Bounds() history.Bounds {
	c = c.withDefaults()
	n := c.Network
	slowest := n.Latency + n.Jitter
	if n.Reorder > 0 {
		slowest += n.ReorderDelay
	}
	b := history.Bounds{Converge: 20 * c.ElectionTimeoutMax}
	notice := c.ElectionTimeoutMin
	if c.Evidence == election.EvidenceContact {
		if n.DetectCut < 0 {
			return b
		}
		notice = max(notice, n.DetectCut+slowest)
	}
	b.StepDown = notice + 2*c.HeartbeatInterval + slowest
	return b
}

// RandomConfig draws a chaotic configuration from seed: 3 to 7 members,
// PreVote, FastFailover, Evidence, Join and Prefer (none half the time,
// else oldest or highest ID) drawn at random, Durable always on (so the
// safety rules must hold), a lossy, reordering, duplicating network, and
// Chaos over span.
func RandomConfig(seed uint64, span time.Duration) Config {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	coin := func() bool { return r.IntN(2) == 0 }
	evidence := election.EvidenceContact
	if coin() {
		evidence = election.EvidenceReplies
	}
	members := 3 + r.IntN(5)
	prefer := []election.PreferKind{election.PreferNone, election.PreferNone, election.PreferOldest, election.PreferHighestID}
	return Config{
		Prefer:       election.Preference{Kind: prefer[r.IntN(len(prefer))]},
		Seed:         seed,
		Members:      members,
		PreVote:      coin(),
		FastFailover: coin(),
		Evidence:     evidence,
		Durable:      true,
		Join:         r.IntN(4) == 0,
		Network: Network{
			Latency:   time.Duration(1+r.IntN(5)) * time.Millisecond,
			Jitter:    time.Duration(r.IntN(20)) * time.Millisecond,
			Loss:      float64(r.IntN(10)) / 100,
			Duplicate: float64(r.IntN(5)) / 100,
			Reorder:   float64(r.IntN(5)) / 100,
			DetectCut: time.Duration(20+r.IntN(200)) * time.Millisecond,
		},
		Chaos: &Chaos{Duration: span},
	}
}
