package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/regent-go/regent/gen"
)

// FaultKind says what a Fault does.
type FaultKind int

const (
	// FaultPartition splits the members into Groups; members in no group
	// are each cut off alone.
	FaultPartition FaultKind = iota + 1
	// FaultIsolate cuts Member off from everyone else.
	FaultIsolate
	// FaultHeal reconnects every member.
	FaultHeal
	// FaultCrash kills Member; its peers see gen.ErrNoConnection.
	FaultCrash
	// FaultStop stops Member gracefully; its peers see
	// gen.TerminateReasonShutdown.
	FaultStop
	// FaultRestart starts Member again if it is down.
	FaultRestart
	// FaultRestartAll starts every member that is down.
	FaultRestartAll
)

// String names the kind as the schedule shows it.
func (k FaultKind) String() string {
	switch k {
	case FaultPartition:
		return "partition"
	case FaultIsolate:
		return "isolate"
	case FaultHeal:
		return "heal"
	case FaultCrash:
		return "crash"
	case FaultStop:
		return "stop"
	case FaultRestart:
		return "restart"
	case FaultRestartAll:
		return "restart-all"
	}
	return "unknown"
}

// TheLeader, as a Fault's Member, names whichever live member leads (at the
// highest term) when the fault applies, or the first live member when none
// leads.
const TheLeader = -1

// Fault is one scheduled fault: Kind at At, on Member (an index from 0, or
// TheLeader) or over Groups of member indexes.
type Fault struct {
	At     time.Duration
	Kind   FaultKind
	Member int
	Groups [][]int
}

func (f Fault) validate(members int) error {
	in := func(i int) bool { return i >= 0 && i < members }
	switch f.Kind {
	case FaultIsolate, FaultCrash, FaultStop, FaultRestart:
		if f.Member != TheLeader && !in(f.Member) {
			return fmt.Errorf("%s of member %d out of %d: %w", f.Kind, f.Member, members, gen.ErrIncorrect)
		}
	case FaultPartition:
		for _, g := range f.Groups {
			for _, i := range g {
				if !in(i) {
					return fmt.Errorf("partition names member %d out of %d: %w", i, members, gen.ErrIncorrect)
				}
			}
		}
	case FaultHeal, FaultRestartAll:
	default:
		return fmt.Errorf("unknown fault kind %d: %w", int(f.Kind), gen.ErrIncorrect)
	}
	if f.At < 0 {
		return fmt.Errorf("%s at negative time %s: %w", f.Kind, f.At, gen.ErrIncorrect)
	}
	return nil
}

// chaosPlan draws the episodes of ch for a cluster of n members.
func chaosPlan(r *rand.Rand, n int, ch Chaos) []Fault {
	var plan []Fault
	draw := func(d time.Duration) time.Duration { return time.Duration(r.Int64N(int64(d) + 1)) }
	for at := draw(ch.MaxGap); at < ch.Duration; at += draw(ch.MaxGap) {
		faults := 1 + r.IntN(2)
		for range faults {
			plan = append(plan, randomFault(r, n, at, ch.Faults))
		}
		at += ch.MaxHold/10 + draw(ch.MaxHold-ch.MaxHold/10)
		plan = append(plan, Fault{At: at, Kind: FaultHeal}, Fault{At: at, Kind: FaultRestartAll})
	}
	return plan
}

func randomFault(r *rand.Rand, n int, at time.Duration, kinds []FaultKind) Fault {
	member := TheLeader
	if r.IntN(2) == 0 {
		member = r.IntN(n)
	}
	kind := kinds[r.IntN(len(kinds))]
	if kind != FaultPartition {
		return Fault{At: at, Kind: kind, Member: member}
	}
	groups := make([][]int, 2+r.IntN(2))
	for i := range n {
		g := r.IntN(len(groups))
		groups[g] = append(groups[g], i)
	}
	return Fault{At: at, Kind: FaultPartition, Groups: groups}
}

// Entry is one line of a Schedule: a fault as it was applied, with
// TheLeader resolved to a member, or skipped.
type Entry struct {
	At   time.Duration
	What string
	// Fault is the fault with TheLeader resolved; Applied is false when it
	// was skipped (a crash of a member already down).
	Fault   Fault
	Applied bool
}

// Schedule is what a run did to its cluster, in order, with the config that
// reproduces it.
type Schedule struct {
	Config  string
	Entries []Entry
}

// String lists the config and then every entry, one per line.
func (s Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "config: %s\n", s.Config)
	for _, e := range s.Entries {
		fmt.Fprintf(&b, "%12s  %s\n", e.At, e.What)
	}
	return b.String()
}

// Plan lists the applied faults with TheLeader resolved: as Config.Plan,
// it replays this schedule in another run (with Durable flipped, say)
// whatever that run's leaders turn out to be.
func (s Schedule) Plan() []Fault {
	var out []Fault
	for _, e := range s.Entries {
		if e.Applied {
			out = append(out, e.Fault)
		}
	}
	return out
}

// describe formats a Config compactly for the schedule.
func describe(c Config) string {
	n := c.Network
	return fmt.Sprintf("seed=%d members=%d min=%d timeouts=%s/%s/%s ghost=%s prevote=%t fastfailover=%t evidence=%s prefer=%s durable=%t join=%t "+
		"latency=%s jitter=%s loss=%.2f dup=%.2f reorder=%.2f/%s detect=%s/%s",
		c.Seed, c.Members, c.MinClusterSize, c.ElectionTimeoutMin, c.ElectionTimeoutMax, c.HeartbeatInterval, c.GhostTTL,
		c.PreVote, c.FastFailover, c.Evidence, c.Prefer.Kind, c.Durable, c.Join,
		n.Latency, n.Jitter, n.Loss, n.Duplicate, n.Reorder, n.ReorderDelay, n.DetectCut, n.DetectCrash)
}

// sortPlan orders faults by time, keeping the given order at equal times.
func sortPlan(plan []Fault) []Fault {
	out := slices.Clone(plan)
	slices.SortStableFunc(out, func(a, b Fault) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
	return out
}
