package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
	"github.com/regent-go/regent/testing/history"
)

// Config describes one simulated cluster and its run. Zero fields take the
// documented defaults; the election's own defaults are production's.
type Config struct {
	// Seed decides every random choice of the run: timeouts, delays, losses
	// and the chaos plan.
	Seed uint64
	// Members is the cluster size. Default 5.
	Members int
	// Election is the template of every member's election.Config. Its zero
	// fields take production's defaults (election.Config.WithDefaults: the
	// defaults leader.Options' zero value runs with), so a test that wants
	// PreVote off sets DisablePreVote. The simulator sets ClusterID, Self,
	// Bootstrap, Started (the virtual time a life starts) and Rand itself.
	Election election.Config
	// Durable keeps each member's term, vote and view across a restart
	// (HardState, as a StateFile does); without it a restarted member starts
	// from term zero with no vote and no view.
	Durable bool
	// Bootstrap shapes the members' declared peers, from Seed; Lists, when
	// set, gives them outright: Lists[i] are the indexes member i declares.
	Bootstrap BootstrapKind
	Lists     [][]int
	// Join declares each member's peers with Core.Join right after each
	// start instead of through Bootstrap.
	Join bool
	// Rogues are members on whose nodes a second actor of the cluster runs
	// from the start, before any view names anyone: the misconfiguration
	// that leader's per-process registry refuses locally. The core cannot
	// refuse it then (each side of a split may meet a different actor of
	// the node first, and their votes count as the node's), so it can make
	// two leaders; chaos never draws it (FaultRogue waits for the views).
	Rogues []int
	// Network shapes message delivery and failure detection.
	Network Network
	// Plan is a fixed list of faults, applied at their times.
	Plan []Fault
	// Chaos, when set, adds random faults drawn from Seed to Plan.
	Chaos *Chaos
	// ConfirmTakes is how long every HandleConfirmLeader runs before it
	// grants. The member is busy meanwhile, as the leader shell is in a
	// callback: the rest of that Ready (its messages included) and
	// everything that reaches it (messages, timers, downs) wait until the
	// answer. Zero (the default) answers at once, as the shell does with
	// a confirmation that takes no time.
	ConfirmTakes time.Duration
}

// BootstrapKind is a shape of the members' declared peers.
type BootstrapKind int

const (
	// BootstrapAll: every member declares every other (the zero value).
	BootstrapAll BootstrapKind = iota
	// BootstrapNested: the first half of the members declare only the first
	// half and one more, the rest declare everyone (issue 11's first
	// scenario: views nested in one another).
	BootstrapNested
	// BootstrapOverlapping: each member declares a window of the members
	// that follow it (a majority of them, wrapping around) and a few at
	// random: lists that overlap without being equal.
	BootstrapOverlapping
	// BootstrapHalves: two disjoint halves, each declaring only its own.
	// They learn of each other only through a Join across the halves, which
	// RandomConfig plans.
	BootstrapHalves
	// BootstrapRing: each member declares only the next one, wrapping
	// around: partial lists whose knowledge is connected. Each member then
	// knows two others (the next, and the one before once it calls), and a
	// member without a view campaigns only once it knows MinClusterSize
	// members with itself, so a ring forms a cluster only with
	// MinClusterSize up to 3 (RandomConfig keeps to that).
	BootstrapRing
	bootstrapKinds
)

// String names the kind as the schedule shows it.
func (k BootstrapKind) String() string {
	switch k {
	case BootstrapAll:
		return "all"
	case BootstrapNested:
		return "nested"
	case BootstrapOverlapping:
		return "overlapping"
	case BootstrapHalves:
		return "halves"
	case BootstrapRing:
		return "ring"
	}
	return "unknown"
}

// lists draws the declared lists of n members for the kind.
func (k BootstrapKind) lists(r *rand.Rand, n int) [][]int {
	out := make([][]int, n)
	span := func(i, from, to int) {
		for j := from; j < to; j++ {
			if j%n != i {
				out[i] = append(out[i], j%n)
			}
		}
	}
	half := n / 2
	for i := range n {
		switch k {
		case BootstrapNested:
			if i < half {
				span(i, 0, half+1)
			} else {
				span(i, 0, n)
			}
		case BootstrapOverlapping:
			span(i, i+1, i+1+n/2)
			for j := range n {
				if j != i && !slices.Contains(out[i], j) && r.IntN(4) == 0 {
					out[i] = append(out[i], j)
				}
			}
			slices.Sort(out[i])
		case BootstrapHalves:
			if i < half {
				span(i, 0, half)
			} else {
				span(i, half, n)
			}
		case BootstrapRing:
			span(i, i+1, i+2)
		default:
			span(i, 0, n)
		}
	}
	return out
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
// while and are then repaired (a heal, a restart of every member down and
// the end of every second actor), separated by quiet gaps.
type Chaos struct {
	// Duration is the span in which episodes start; the last one is repaired
	// after it. Default 10s.
	Duration time.Duration
	// MaxGap and MaxHold bound the quiet gap before an episode and how long
	// its faults stand. Defaults 1s and 2s.
	MaxGap  time.Duration
	MaxHold time.Duration
	// MaxDelay bounds the extra delay of a FaultDelay; default six
	// ElectionTimeoutMax, well beyond the evidence window.
	MaxDelay time.Duration
	// Faults are the kinds to draw from, each as likely; default every kind
	// chaos draws (ChaosKinds), less FaultDelay under EvidenceContact. Each
	// targets TheLeader or a random member, as likely; see chaosPlan for how
	// each kind is drawn.
	Faults []FaultKind
}

// ChaosKinds are the fault kinds Chaos draws from, all by default.
//
// Under EvidenceContact the default leaves FaultDelay out: that rule counts
// an accepted send as contact, so a leader whose heartbeats are lost
// one-way leads until the runtime notices the dead connection, and the
// side of a one-way cut that still receives notices only when the other
// side's close reaches it, after the whole delay. The leader document's
// rule is known to lean on that detection (docs/guarantees.md, quorum
// evidence); the default rule is the one FaultDelay tests.
var ChaosKinds = []FaultKind{FaultPartition, FaultIsolate, FaultBridge, FaultCrash, FaultStop, FaultRogue, FaultJoin, FaultLeave, FaultDelay}

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
	c.Election = c.Election.WithDefaults()
	def(&c.Network.Latency, time.Millisecond)
	def(&c.Network.Jitter, 4*time.Millisecond)
	def(&c.Network.ReorderDelay, c.Election.ElectionTimeoutMax)
	def(&c.Network.DetectCut, c.Election.ElectionTimeoutMin)
	def(&c.Network.DetectCrash, 5*time.Millisecond)
	if c.Lists == nil && c.Members > 0 {
		c.Lists = c.Bootstrap.lists(rand.New(rand.NewPCG(c.Seed, 3)), c.Members)
	}
	if c.Chaos != nil {
		ch := *c.Chaos
		def(&ch.Duration, 10*time.Second)
		def(&ch.MaxGap, time.Second)
		def(&ch.MaxHold, 2*time.Second)
		def(&ch.MaxDelay, 6*c.Election.ElectionTimeoutMax)
		if len(ch.Faults) == 0 {
			ch.Faults = ChaosKinds
			if c.Election.Evidence == election.EvidenceContact {
				ch.Faults = slices.DeleteFunc(slices.Clone(ChaosKinds), func(k FaultKind) bool { return k == FaultDelay })
			}
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
	case c.ConfirmTakes < 0:
		return bad("ConfirmTakes must not be negative")
	case c.Network.Latency < 0 || c.Network.Jitter < 0 || c.Network.ReorderDelay < 0 || c.Network.DetectCrash < 0:
		return bad("network delays must not be negative")
	case c.Network.Loss < 0 || c.Network.Loss >= 1 || c.Network.Duplicate < 0 || c.Network.Duplicate >= 1 ||
		c.Network.Reorder < 0 || c.Network.Reorder >= 1:
		return bad("network probabilities must lie in [0, 1)")
	case c.Bootstrap < 0 || c.Bootstrap >= bootstrapKinds:
		return bad("unknown Bootstrap kind %d", int(c.Bootstrap))
	case len(c.Lists) != c.Members:
		return bad("Lists has %d lists for %d members", len(c.Lists), c.Members)
	}
	probe := c.Election
	probe.ClusterID, probe.Self, probe.Started, probe.Rand = clusterID, gen.ProcessID{Name: memberName, Node: "m1@sim"}, epoch, rand.New(rand.NewPCG(0, 0))
	if err := probe.Validate(); err != nil {
		return fmt.Errorf("sim: config: Election: %w", err)
	}
	for k, i := range c.Rogues {
		if i < 0 || i >= c.Members || slices.Contains(c.Rogues[:k], i) {
			return bad("Rogues names member %d twice or out of %d", i, c.Members)
		}
	}
	for i, l := range c.Lists {
		for _, j := range l {
			if j < 0 || j >= c.Members {
				return bad("Lists[%d] names member %d out of %d", i, j, c.Members)
			}
		}
	}
	if c.Chaos != nil {
		for _, k := range c.Chaos.Faults {
			if !slices.Contains(ChaosKinds, k) {
				return bad("Chaos.Faults may hold %v, got %s", ChaosKinds, k)
			}
		}
		if c.Chaos.Duration < 0 || c.Chaos.MaxGap < 0 || c.Chaos.MaxHold < 0 || c.Chaos.MaxDelay < 0 {
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

// Bounds are the limits of the timed invariants for a run of c.
//
// StepDown: under EvidenceReplies, a leader cut off from its quorum
// notices within one election timeout (its evidence window) plus a
// heartbeat tick of the cut, however slow its messages: a reply counts as
// of the send time of what it answers, which came before the cut (one more
// heartbeat is the rule's slack). Under EvidenceContact it notices within
// the cut detection time or one election timeout, whichever is later, plus
// a heartbeat tick and the slowest message, and StepDown is zero, which
// skips the step-down and overlap rules, when cuts are never detected:
// accepted sends then count as contact forever.
//
// Overlap: under EvidenceReplies, two visible leaders coexist for at most
// the evidence window W (ElectionTimeoutMin, or two heartbeat intervals
// when heartbeats are not faster) plus one heartbeat interval H, whatever
// the message delays: docs/guarantees.md's step-down bound, 200ms with the
// defaults. The simulator adds no granularity (steps take no virtual time,
// timers fire on time). Why, once a reply counts as evidence from the
// time the message it answers was sent (the earlier of that and its
// arrival), not from its arrival:
//
//  1. Let L1 lead at term t1 and L2 win term t2 > t1 at time w; L2 holds
//     the votes of a majority of its view, each cast no later than w.
//  2. At a heartbeat tick at T, L1 keeps leading only if a majority of its
//     view, itself included, gave evidence within W: a reply credited at e
//     with T - e < W. The two majorities share a member v, other than L1
//     (which cannot vote at t2 while it leads t1): the views of a lineage
//     change one member at a time, so their majorities intersect, as
//     election safety relies on.
//  3. Once v voted at t2 its term is t2 or more (durably: Config.Durable,
//     or no restart), so every reply it sends L1 after, and its answer to
//     a heartbeat of the stale term, carries the higher term, on which L1
//     steps down at once. So the reply from v that keeps L1 leading was
//     sent before v voted, and answers a message L1 sent earlier still:
//     e < w.
//  4. Hence every tick L1 survives comes before e + W < w + W, and the next
//     comes at most H later (ticks come every H while it leads), so L1
//     stops leading, visibly or not, before w + W + H, and L2 is visible
//     only from w on: the overlap is below W + H.
//
// This holds with PreVote and without it. PreVote's stickiness (a member
// that heard its leader within ElectionTimeoutMin refuses to help a
// challenger) only delays w; without PreVote a member grants its vote at
// once, so w may come while L1 still hears from everyone, and the bound
// rests on L1's step-down alone, as above. It does not rest on failure
// detection, nor on how long any message takes: a reply credited at its
// arrival instead lets a reply delayed by D keep L1 leading up to D longer
// (a queue that built up on its reply path, FaultDelay), and StepDown,
// which adds the slowest message, would hide only the part of D the
// network model declares. Under EvidenceContact an accepted send or any
// inbound message counts at its own time, so the overlap is bounded only
// by the failure detection that StepDown includes, and Overlap is zero
// (the rule takes StepDown).
//
// Lease: under EvidenceReplies, two members of one lineage at different
// terms hold a lease (Core.LeadsAt, what leader.Actor's IsLeader and
// FencingToken answer: the visible role and, at that instant, the
// evidence a tick checks) at once for at most W, without the H of
// Overlap. Let L1 be the member at the lower term t1 and L2 win t2 at w,
// and let LeadsAt of L1 hold at T. Step 2 applies at T as at a tick: a
// majority of L1's view gave evidence e with T - e < W, and shares a
// member v with L2's majority. By step 3 the reply of v credited at e was
// sent before v voted at t2, and e is no later than when L1 sent what it
// answers, which v received before it replied: e <= w (e < w when that
// message took any time), so T < w + W. L2 holds a lease only while visible, from w on, so the two overlap
// within [w, w + W). This does not depend on which led first: a lease of
// L1 taken after w still needs evidence from before w. The H of Overlap
// is only the wait for the tick at which a visible role ends; a lease
// ends with its evidence. The simulator records each member's lease after
// every step (History.RecordLease; Simulator.leaseEnd), since it ends as
// time passes with no event. Under EvidenceContact Lease is zero, as
// Overlap is.
//
// Converge: twenty election timeouts for an election to settle
// (randomised timeouts make split votes ever rarer, never impossible), plus
// what re-admitting members takes once they are back: a member withdrawn by
// Leave is refused for ElectionTimeoutMax, a member outside the view asks
// to be admitted on its next probe or election timeout (ElectionTimeoutMax
// each), and the leader then admits one member at a time, each change
// committed by a round trip and the next proposed at once or on the next
// heartbeat tick.
func (c Config) Bounds() history.Bounds {
	c = c.withDefaults()
	e, n := c.Election, c.Network
	slowest := n.Latency + n.Jitter
	if n.Reorder > 0 {
		slowest += n.ReorderDelay
	}
	b := history.Bounds{
		Converge: 23*e.ElectionTimeoutMax + time.Duration(c.Members)*(e.HeartbeatInterval+2*slowest),
	}
	notice := e.ElectionTimeoutMin
	if e.Evidence == election.EvidenceContact {
		if n.DetectCut < 0 {
			return b
		}
		notice = max(notice, n.DetectCut+slowest)
	}
	b.StepDown = notice + 2*e.HeartbeatInterval + slowest
	if e.Evidence == election.EvidenceReplies {
		b.StepDown = notice + 2*e.HeartbeatInterval
		b.Overlap = evidenceWindow(e) + e.HeartbeatInterval
		b.Lease = evidenceWindow(e)
	}
	return b
}

// evidenceWindow is the election's evidence window for e: how recent a
// reply must be, on a leader's heartbeat tick, to count (ElectionTimeoutMin,
// or two heartbeat intervals when heartbeats are not faster than that).
func evidenceWindow(e election.Config) time.Duration {
	if e.HeartbeatInterval >= e.ElectionTimeoutMin {
		return 2 * e.HeartbeatInterval
	}
	return e.ElectionTimeoutMin
}

// LastFault is the latest time a planned or chaos fault of c can apply:
// after it, only the cluster's own settling remains.
func (c Config) LastFault() time.Duration {
	c = c.withDefaults()
	var last time.Duration
	for _, f := range c.Plan {
		last = max(last, f.At+f.AwaitChange+f.CutAfter)
	}
	if c.Chaos != nil {
		hold := c.Chaos.MaxHold
		if slices.Contains(c.Chaos.Faults, FaultDelay) {
			// A delay episode is held as long as it needs (chaosPlan): a
			// ramp of up to two delays, a cut up to a quarter delay later,
			// one and a half delays more.
			hold = max(hold, 4*c.Chaos.MaxDelay)
		}
		last = max(last, c.Chaos.Duration+hold)
	}
	return last
}

// RandomConfig draws a chaotic configuration from seed: 3 to 7 members,
// production's election defaults half the time and variations of them
// otherwise (MinClusterSize from 1 to a majority, other timeouts, GhostTTL
// 300ms–2s, PreVote or fast failover off, contact evidence, a preferred
// leader), Bootstrap lists of every kind (with a Join across disjoint
// halves at a random time), Join instead of Bootstrap a quarter of the
// time, Durable always on (so the safety rules must hold), a lossy,
// reordering, duplicating network, and Chaos over span with holds up to 6s,
// longer than the shorter GhostTTLs.
func RandomConfig(seed uint64, span time.Duration) Config {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	coin := func() bool { return r.IntN(2) == 0 }
	ms := func(from, to int) time.Duration { return time.Duration(from+r.IntN(to-from+1)) * time.Millisecond }
	members := 3 + r.IntN(5)
	var e election.Config
	if coin() {
		e.MinClusterSize = 1 + r.IntN(members/2+1)
	}
	if coin() {
		e.ElectionTimeoutMin = ms(100, 300)
		e.HeartbeatInterval = e.ElectionTimeoutMin / time.Duration(3+r.IntN(4))
	}
	if coin() {
		e.GhostTTL = ms(300, 2000)
	}
	e.DisablePreVote = r.IntN(4) == 0
	e.DisableFastFailover = r.IntN(4) == 0
	if coin() {
		e.Evidence = election.EvidenceContact
	}
	prefer := []election.PreferKind{election.PreferNone, election.PreferNone, election.PreferOldest, election.PreferHighestID}
	e.Prefer = election.Preference{Kind: prefer[r.IntN(len(prefer))]}
	cfg := Config{
		Seed:      seed,
		Members:   members,
		Election:  e,
		Durable:   true,
		Bootstrap: BootstrapKind(r.IntN(int(bootstrapKinds))),
		Join:      r.IntN(4) == 0,
		Network: Network{
			Latency:   ms(1, 5),
			Jitter:    ms(0, 19),
			Loss:      float64(r.IntN(10)) / 100,
			Duplicate: float64(r.IntN(5)) / 100,
			Reorder:   float64(r.IntN(5)) / 100,
			DetectCut: ms(20, 219),
		},
		Chaos: &Chaos{Duration: span, MaxHold: ms(2000, 6000)},
	}
	if cfg.Bootstrap == BootstrapRing && e.MinClusterSize > 3 {
		cfg.Election.MinClusterSize = 3
	}
	if cfg.Bootstrap == BootstrapHalves {
		// Someone declares a member of the other half, or they never meet:
		// at a random time, and again once every episode is repaired (the
		// first may strike a member that is down).
		at := time.Duration(r.Int64N(int64(span) + 1))
		cfg.Plan = append(cfg.Plan, Fault{At: at, Kind: FaultJoin, Member: 0, Peer: members - 1},
			Fault{At: span + cfg.Chaos.MaxHold + time.Millisecond, Kind: FaultJoin, Member: members - 1, Peer: 0})
	}
	return cfg
}
