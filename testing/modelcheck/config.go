package modelcheck

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// Config is one exhaustive search: the cluster, the faults a path may hold,
// a scenario, the bounds and the invariants. Members are addressed by index
// from 0; member i is node "n<i+1>@mc".
type Config struct {
	// Name labels the search in results and logs.
	Name string
	// Members is the cluster size, 2 to 6 (3 and 4 are what searches afford).
	Members int
	// Bootstrap[i] lists the members member i declares at start; a nil
	// Bootstrap, or a nil entry, declares every member. Entries naming i
	// itself are allowed and skipped, as the core skips them.
	Bootstrap [][]int
	// MinClusterSize is every member's floor; 0 means Members.
	MinClusterSize int
	// PreVote, FastFailover and Evidence are every member's election options.
	// Unlike election.Config, PreVote and FastFailover are off unless set:
	// each adds messages to every path, and a search affords few.
	PreVote      bool
	FastFailover bool
	Evidence     election.Evidence
	// GhostTTL is every member's GhostTTL; 0 means the document's 5 s. A
	// member's clock moves only when one of its timers fires (by at most
	// ElectionTimeoutMax), so a search reaches an expiry within its depth
	// only with a GhostTTL of a few heartbeat intervals.
	GhostTTL time.Duration
	// Durable restarts a member with the term, vote and view it persisted;
	// without it a restart starts from nothing, which is known to allow a
	// double vote (docs/membership.md, "Without durable state").
	Durable bool

	// Crashes bounds the node crashes on one path: the member stops, what is
	// in flight from and to it vanishes, and its peers' monitors fire with
	// gen.ErrNoConnection. A crashed member may restart (Restart actions).
	Crashes int
	// Kills bounds the process deaths with a real reason on one path: as a
	// crash, but monitors fire with gen.TerminateReasonKill, which takes the
	// member out of their views at once.
	Kills int
	// Disconnects bounds the lost connections between two live members on
	// one path: what is in flight between them vanishes and each side's
	// monitors of the other fire with gen.ErrNoConnection.
	Disconnects int
	// Duplicates bounds the duplicated messages on one path. A duplicate is
	// explored as the delivery of a copy while the original stays in flight.
	Duplicates int
	// StorageFaults bounds, with Durable, the times on one path a member's
	// disk starts failing: until a Heal action, every write of its
	// HardState fails, and the shell reports it with StorageFailed and sends
	// nothing of that Ready, as leader/shell.go does.
	StorageFaults int
	// Drops enumerates losing each in-flight message. For the invariants here
	// a drop is never needed (a message left in flight changes no core), so
	// it only widens the search; it is there to show losses are harmless.
	Drops bool
	// NoProbes leaves the probe timers unfired: they only re-send the
	// negotiation a Bootstrap or Join already sent, and they cost depth.
	NoProbes bool
	// Script lists membership inputs (Join, Leave) applied in this order,
	// each at any point of a path once the one before it was applied.
	Script []Input
	// Prefix is a scenario played before the search starts, from the initial
	// state; the search explores everything from where it ends.
	Prefix []Action

	// MaxDepth bounds the actions after Prefix on one path. Required.
	MaxDepth int
	// MaxStates stops the search after this many distinct states (0: no bound).
	MaxStates int
	// Invariants are checked on every state reached, the initial one
	// included; nil means Default().
	Invariants []Invariant
	// Goals are what a search must reach to be evidence: a happy path says
	// nothing of a feature the search never exercised. Result.Goals says
	// which were reached, how deep first and by which path.
	Goals []Goal

	// fullSearch turns sleep sets off, and exactKeys keys states by every
	// field, clocks and random sources included, for the test that shows
	// sleep sets prune no state.
	fullSearch, exactKeys bool
}

// Input is one membership input of a scenario: Member calls Join or Leave
// for Peer.
type Input struct {
	Member int
	Peer   int
	Leave  bool
}

// String is "n1 joins n2" or "n1 leaves n2 out".
func (in Input) String() string {
	if in.Leave {
		return fmt.Sprintf("%s leaves %s out", name(in.Member), name(in.Peer))
	}
	return fmt.Sprintf("%s joins %s", name(in.Member), name(in.Peer))
}

// Timings of every member: the document's defaults (GhostTTL's unless the
// Config sets one). Only the predicates the core evaluates on them (a leader
// heard within ElectionTimeoutMin, a ghost past GhostTTL) matter, since
// timers fire whenever the search says.
const (
	electionTimeoutMin = 150 * time.Millisecond
	electionTimeoutMax = 300 * time.Millisecond
	heartbeatInterval  = 50 * time.Millisecond
	defaultGhostTTL    = 5 * time.Second
)

// clusterID is every member's ClusterID.
const clusterID = "mc"

// epoch is where every member's local clock starts.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// nodes are the members' node names, by index.
var nodes = func() (out [maxMembers]gen.Atom) {
	for i := range out {
		out[i] = gen.Atom(fmt.Sprintf("n%d@mc", i+1))
	}
	return out
}()

// maxMembers bounds Config.Members.
const maxMembers = 6

// node is member i's node name; name its short form for traces.
func node(i int) gen.Atom { return nodes[i] }

func name(i int) string { return short(nodes[i]) }

func processID(i int) gen.ProcessID { return gen.ProcessID{Name: "regent", Node: node(i)} }

func (c Config) withDefaults() Config {
	if c.MinClusterSize == 0 {
		c.MinClusterSize = c.Members
	}
	if c.GhostTTL == 0 {
		c.GhostTTL = defaultGhostTTL
	}
	if c.Invariants == nil {
		c.Invariants = Default()
	}
	return c
}

func (c Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("modelcheck: config %q: %s: %w", c.Name, fmt.Sprintf(format, args...), gen.ErrIncorrect)
	}
	in := func(i int) bool { return i >= 0 && i < c.Members }
	switch {
	case c.Members < 2 || c.Members > maxMembers:
		return bad("Members must be 2 to %d, got %d", maxMembers, c.Members)
	case c.GhostTTL < 0:
		return bad("GhostTTL must not be negative, got %s", c.GhostTTL)
	case c.MaxDepth < 0:
		return bad("MaxDepth must not be negative, got %d", c.MaxDepth)
	case c.Bootstrap != nil && len(c.Bootstrap) != c.Members:
		return bad("Bootstrap has %d lists for %d members", len(c.Bootstrap), c.Members)
	case c.Crashes < 0 || c.Kills < 0 || c.Disconnects < 0 || c.Duplicates < 0 || c.StorageFaults < 0 || c.MaxStates < 0:
		return bad("fault budgets and MaxStates must not be negative")
	case c.StorageFaults > 0 && !c.Durable:
		return bad("StorageFaults needs Durable: without a state file nothing is written")
	}
	for i, list := range c.Bootstrap {
		for _, p := range list {
			if !in(p) {
				return bad("Bootstrap[%d] names member %d", i, p)
			}
		}
	}
	for _, input := range c.Script {
		if !in(input.Member) || !in(input.Peer) || input.Member == input.Peer {
			return bad("script input %+v names no pair of members", input)
		}
	}
	return nil
}

// memberConfig is member i's election config for one life.
func (c Config) memberConfig(i int, r *rand.Rand) election.Config {
	var boot []gen.ProcessID
	if c.Bootstrap == nil || c.Bootstrap[i] == nil {
		for p := range c.Members {
			boot = append(boot, processID(p))
		}
	} else {
		for _, p := range c.Bootstrap[i] {
			boot = append(boot, processID(p))
		}
	}
	return election.Config{
		ClusterID:           clusterID,
		Self:                processID(i),
		MinClusterSize:      c.MinClusterSize,
		Bootstrap:           boot,
		ElectionTimeoutMin:  electionTimeoutMin,
		ElectionTimeoutMax:  electionTimeoutMax,
		HeartbeatInterval:   heartbeatInterval,
		GhostTTL:            c.GhostTTL,
		DisablePreVote:      !c.PreVote,
		Evidence:            c.Evidence,
		DisableFastFailover: !c.FastFailover,
		Rand:                r,
	}
}

// String describes the configuration in one line, for logs.
func (c Config) String() string {
	var lists []string
	for i := range c.Members {
		if c.Bootstrap == nil || c.Bootstrap[i] == nil {
			lists = append(lists, name(i)+":all")
			continue
		}
		var names []string
		for _, p := range slices.Sorted(slices.Values(c.Bootstrap[i])) {
			names = append(names, name(p))
		}
		lists = append(lists, name(i)+":"+strings.Join(names, ","))
	}
	return fmt.Sprintf("%s: members=%d min=%d ghostttl=%s prevote=%t fastfailover=%t evidence=%s durable=%t bootstrap=[%s] crashes=%d kills=%d disconnects=%d duplicates=%d storage=%d drops=%t probes=%t script=%d prefix=%d depth=%d",
		c.Name, c.Members, c.MinClusterSize, c.GhostTTL, c.PreVote, c.FastFailover, c.Evidence, c.Durable, strings.Join(lists, " "),
		c.Crashes, c.Kills, c.Disconnects, c.Duplicates, c.StorageFaults, c.Drops, !c.NoProbes, len(c.Script), len(c.Prefix), c.MaxDepth)
}
