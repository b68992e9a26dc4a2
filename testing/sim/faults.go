package sim

import (
	"cmp"
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
	// are each cut off alone. It replaces any earlier partition or cut.
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
	// FaultCut cuts exactly the Pairs of members from each other, and
	// nothing else: any cut, transitive or not. It replaces any earlier
	// partition or cut.
	FaultCut
	// FaultBridge cuts every member of Groups[0] from every member of
	// Groups[1]; the members in neither group reach both sides (a
	// non-transitive cut). It replaces any earlier partition or cut.
	FaultBridge
	// FaultRogue starts a second actor of the cluster on Member's node,
	// registered under another name, declaring every member: a
	// misconfiguration the core must refuse (its traffic is dropped as
	// duplicate_member by every member whose view names the real one). It
	// applies only once every live member's view names Member, the
	// condition under which that refusal is promised; otherwise it is
	// skipped.
	FaultRogue
	// FaultEndRogues stops every second actor gracefully.
	FaultEndRogues
	// FaultJoin calls Core.Join on Member, declaring Peer.
	FaultJoin
	// FaultLeave calls Core.Leave on Member, withdrawing Peer.
	FaultLeave
	// FaultDelay slows one direction of every link of Member: what every
	// other member sends it (what it sends them, when Out), by an extra
	// delay that grows from zero to Delay over Ramp (at once when Ramp is
	// zero) and stays there until a heal. Messages keep their order while
	// it grows, so a growing delay leaves no silence: acknowledgements keep
	// coming, ever later. When CutAfter is positive, the other direction
	// is cut (FaultOneWay, on the member this fault resolved to) CutAfter
	// later, unless a heal came first: the reply path of a leader grows a
	// long queue, then its heartbeats stop getting through.
	FaultDelay
	// FaultOneWay cuts one direction of every link of Member: what it
	// sends (what it receives, when Out is false) is lost, in flight too,
	// while the other direction still works. The receiving side notices
	// after Network.DetectCut (its keepalive hears nothing) and closes the
	// connection; the sending side, which still receives, notices only
	// when that close reaches it over the other direction, with whatever
	// delay that direction has. It adds to the two-way cuts and stands
	// until a heal.
	FaultOneWay
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
	case FaultCut:
		return "cut"
	case FaultBridge:
		return "bridge"
	case FaultRogue:
		return "rogue"
	case FaultEndRogues:
		return "end-rogues"
	case FaultJoin:
		return "join"
	case FaultLeave:
		return "leave"
	case FaultDelay:
		return "delay"
	case FaultOneWay:
		return "one-way cut"
	}
	return "unknown"
}

// Members a Fault may name by role, resolved when it applies.
const (
	// TheLeader names whichever live member leads visibly (at the highest
	// term), or the first live member when none does.
	TheLeader = -1
	// TheSubject names the member the last proposed view change added or
	// removed, or TheLeader when no change was proposed yet or that member
	// is down (a stopped member's removal names a member already down).
	TheSubject = -2
)

// Fault is one scheduled fault: Kind at At, on Member (an index from 0,
// TheLeader or TheSubject) and Peer, over Groups of member indexes, or over
// Pairs.
type Fault struct {
	At     time.Duration
	Kind   FaultKind
	Member int
	// Peer is the member a FaultJoin declares or a FaultLeave withdraws.
	Peer   int
	Groups [][]int
	Pairs  [][2]int
	// Out, Delay, Ramp and CutAfter shape a FaultDelay (Out alone a
	// FaultOneWay): the direction of Member's links it acts on, the
	// largest extra delay, how long the delay takes to grow to it, and when
	// the other direction is cut.
	Out      bool
	Delay    time.Duration
	Ramp     time.Duration
	CutAfter time.Duration
	// AwaitChange, when positive, makes the fault wait from At for a
	// leader to propose a view change, and apply right after it (so a
	// crash, stop or restart lands while the change is in flight), or at
	// At+AwaitChange if none comes.
	AwaitChange time.Duration
}

func (f Fault) validate(members int) error {
	in := func(i int) bool { return i >= 0 && i < members }
	member := func() error {
		if f.Member != TheLeader && f.Member != TheSubject && !in(f.Member) {
			return fmt.Errorf("%s of member %d out of %d: %w", f.Kind, f.Member, members, gen.ErrIncorrect)
		}
		return nil
	}
	switch f.Kind {
	case FaultIsolate, FaultCrash, FaultStop, FaultRestart, FaultRogue, FaultOneWay:
		if err := member(); err != nil {
			return err
		}
	case FaultDelay:
		if err := member(); err != nil {
			return err
		}
		if f.Delay <= 0 || f.Ramp < 0 || f.CutAfter < 0 {
			return fmt.Errorf("delay of %s over %s, cut after %s: the delay must be positive, the rest not negative: %w",
				f.Delay, f.Ramp, f.CutAfter, gen.ErrIncorrect)
		}
	case FaultJoin, FaultLeave:
		if err := member(); err != nil {
			return err
		}
		if !in(f.Peer) || f.Peer == f.Member {
			return fmt.Errorf("%s by member %d of peer %d out of %d: %w", f.Kind, f.Member, f.Peer, members, gen.ErrIncorrect)
		}
	case FaultPartition, FaultBridge:
		if f.Kind == FaultBridge && len(f.Groups) != 2 {
			return fmt.Errorf("a bridge needs two groups, got %d: %w", len(f.Groups), gen.ErrIncorrect)
		}
		for _, g := range f.Groups {
			for _, i := range g {
				if !in(i) {
					return fmt.Errorf("%s names member %d out of %d: %w", f.Kind, i, members, gen.ErrIncorrect)
				}
			}
		}
	case FaultCut:
		for _, p := range f.Pairs {
			if !in(p[0]) || !in(p[1]) {
				return fmt.Errorf("cut names pair %v out of %d: %w", p, members, gen.ErrIncorrect)
			}
		}
	case FaultHeal, FaultRestartAll, FaultEndRogues:
	default:
		return fmt.Errorf("unknown fault kind %d: %w", int(f.Kind), gen.ErrIncorrect)
	}
	if f.At < 0 || f.AwaitChange < 0 {
		return fmt.Errorf("%s at negative time %s or awaiting %s: %w", f.Kind, f.At, f.AwaitChange, gen.ErrIncorrect)
	}
	return nil
}

// chaosPlan draws the episodes of ch for a cluster of n members. Each
// episode holds one or two faults for a random hold, then repairs them all
// (heal, restart every member down, stop every second actor). How each kind
// is drawn:
//   - partition: two or three random groups; isolate: one member;
//   - bridge: two disjoint groups cut from each other, the rest reaching
//     both;
//   - crash and stop: a third of the time plain, a third landing on the next
//     view change (on TheLeader, TheSubject or a random member), a third a
//     random member whose restart waits for the next view change;
//   - rogue: a second actor on TheLeader's or a random member's node;
//   - join: a storm of two to four calls at once, by TheLeader or random
//     members, of random peers (one that names its caller is skipped);
//   - leave: a storm of two to four calls at once, by random members, of
//     random peers, each declared again by a join after the repair;
//   - delay: three times in four, what every other member sends the member
//     is delayed (the other times what it sends them), growing to between
//     half and all of MaxDelay at a slope of 2, 1, 2/3 or 1/2; three times
//     in four the other direction is then cut, once the delay has grown
//     and up to MaxDelay/4 later. The episode is held at least until the
//     delay has drained one and a half times after the cut.
func chaosPlan(r *rand.Rand, n int, ch Chaos) []Fault {
	var plan []Fault
	for at := draw(r, ch.MaxGap); at < ch.Duration; at += draw(r, ch.MaxGap) {
		hold := ch.MaxHold/10 + draw(r, ch.MaxHold-ch.MaxHold/10)
		faults := 1 + r.IntN(2)
		var undo []Fault
		for range faults {
			f, u, need := randomFaults(r, n, at, hold, ch, ch.Faults[r.IntN(len(ch.Faults))])
			plan, undo = append(plan, f...), append(undo, u...)
			hold = max(hold, need)
		}
		at += hold
		plan = append(plan, Fault{At: at, Kind: FaultHeal}, Fault{At: at, Kind: FaultRestartAll}, Fault{At: at, Kind: FaultEndRogues})
		plan = append(plan, undo...)
	}
	return plan
}

// draw is a uniform duration from zero to d.
func draw(r *rand.Rand, d time.Duration) time.Duration { return time.Duration(r.Int64N(int64(d) + 1)) }

// randomFaults draws the faults of one kind for an episode at at lasting
// hold, what repairs them besides the episode's usual repair, and how long
// the episode must be held at least for them to play out (zero: hold
// will do).
func randomFaults(r *rand.Rand, n int, at, hold time.Duration, ch Chaos, kind FaultKind) (faults, undo []Fault, need time.Duration) {
	member := TheLeader
	if r.IntN(2) == 0 {
		member = r.IntN(n)
	}
	switch kind {
	case FaultDelay:
		d := ch.MaxDelay/2 + draw(r, ch.MaxDelay/2)
		f := Fault{At: at, Kind: kind, Member: member, Out: r.IntN(4) == 0, Delay: d, Ramp: d * time.Duration(1+r.IntN(4)) / 2}
		need = f.Ramp + d
		if r.IntN(4) > 0 {
			f.CutAfter = f.Ramp + draw(r, ch.MaxDelay/4)
			need = f.CutAfter + d + d/2
		}
		return []Fault{f}, nil, need
	}
	faults, undo = episodeFaults(r, n, at, hold, member, kind)
	return faults, undo, 0
}

// episodeFaults draws the faults of a kind that fits any hold.
func episodeFaults(r *rand.Rand, n int, at, hold time.Duration, member int, kind FaultKind) (faults, undo []Fault) {
	switch kind {
	case FaultPartition:
		groups := make([][]int, 2+r.IntN(2))
		for i := range n {
			g := r.IntN(len(groups))
			groups[g] = append(groups[g], i)
		}
		return []Fault{{At: at, Kind: kind, Groups: groups}}, nil
	case FaultBridge:
		order := r.Perm(n)
		a := 1 + r.IntN(max(1, n-2))
		b := 1 + r.IntN(max(1, n-a-1))
		return []Fault{{At: at, Kind: kind, Groups: [][]int{slices.Sorted(slices.Values(order[:a])), slices.Sorted(slices.Values(order[a : a+b]))}}}, nil
	case FaultCrash, FaultStop:
		// A fault awaiting a view change gives up a millisecond before the
		// repair, so the repair always comes after it.
		switch r.IntN(3) {
		case 1:
			member = []int{TheLeader, TheSubject, r.IntN(n)}[r.IntN(3)]
			return []Fault{{At: at, Kind: kind, Member: member, AwaitChange: max(time.Nanosecond, hold-time.Millisecond)}}, nil
		case 2:
			i := r.IntN(n)
			return []Fault{{At: at, Kind: kind, Member: i},
				{At: at + time.Millisecond, Kind: FaultRestart, Member: i, AwaitChange: max(time.Nanosecond, hold-2*time.Millisecond)}}, nil
		}
		return []Fault{{At: at, Kind: kind, Member: member}}, nil
	case FaultJoin:
		for range 2 + r.IntN(3) {
			by := TheLeader
			if r.IntN(2) == 0 {
				by = r.IntN(n)
			}
			faults = append(faults, Fault{At: at, Kind: kind, Member: by, Peer: r.IntN(n)})
		}
		return faults, nil
	case FaultLeave:
		// Leave withdraws a live member for good from the caller's declared
		// peers; the repair declares it again, as discovery would once it
		// lists the member again, or a member nobody declares any more and
		// that holds no view could never be found.
		for range 2 + r.IntN(3) {
			by, peer := r.IntN(n), r.IntN(n-1)
			if peer >= by {
				peer++
			}
			faults = append(faults, Fault{At: at, Kind: kind, Member: by, Peer: peer})
			undo = append(undo, Fault{At: at + hold, Kind: FaultJoin, Member: by, Peer: peer})
		}
		return faults, undo
	}
	return []Fault{{At: at, Kind: kind, Member: member}}, nil
}

// Entry is one line of a Schedule: a fault as it was applied, with
// TheLeader and TheSubject resolved to a member, or skipped.
type Entry struct {
	At   time.Duration
	What string
	// Fault is the fault with its members resolved and At the time it
	// applied; Applied is false when it was skipped (a crash of a member
	// already down).
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

// Plan lists the applied faults with their members resolved and at the
// times they applied: as Config.Plan, it replays this schedule in another
// run (with Durable flipped, say) whatever that run's leaders turn out to
// be.
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
	n, e := c.Network, c.Election
	lists := ""
	if c.Bootstrap != BootstrapAll {
		lists = fmt.Sprintf("%v", c.Lists)
	}
	if len(c.Rogues) > 0 {
		lists += fmt.Sprintf(" rogues=%v", c.Rogues)
	}
	return fmt.Sprintf("seed=%d members=%d min=%d timeouts=%s/%s/%s ghost=%s prevote=%t fastfailover=%t evidence=%s prefer=%s durable=%t "+
		"bootstrap=%s%s join=%t latency=%s jitter=%s loss=%.2f dup=%.2f reorder=%.2f/%s detect=%s/%s",
		c.Seed, c.Members, e.MinClusterSize, e.ElectionTimeoutMin, e.ElectionTimeoutMax, e.HeartbeatInterval, e.GhostTTL,
		!e.DisablePreVote, !e.DisableFastFailover, e.Evidence, e.Prefer.Kind, c.Durable, c.Bootstrap, lists, c.Join,
		n.Latency, n.Jitter, n.Loss, n.Duplicate, n.Reorder, n.ReorderDelay, n.DetectCut, n.DetectCrash)
}

// sortPlan orders faults by time, keeping the given order at equal times.
func sortPlan(plan []Fault) []Fault {
	out := slices.Clone(plan)
	slices.SortStableFunc(out, func(a, b Fault) int { return cmp.Compare(a.At, b.At) })
	return out
}
