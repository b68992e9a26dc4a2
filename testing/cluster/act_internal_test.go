package cluster

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/faultproxy"
	"github.com/regent-go/regent/leader"
)

func TestActingOverlaps(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, int64(ms)*int64(time.Millisecond)) }
	act := func(member string, life int, term uint64, ms int) Act {
		return Act{Member: member, Life: life, Term: term, Token: term, Before: at(ms), At: at(ms)}
	}
	t.Run("a superseded leader acting after its successor first did is an overlap of that long", func(t *testing.T) {
		got, err := ActingOverlaps([]Act{
			act("m0", 1, 3, 0), act("m0", 1, 3, 100), act("m1", 1, 4, 60), act("m0", 1, 3, 90), act("m1", 1, 4, 200),
		})
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Equal(t, 40*time.Millisecond, got[0].By)
		assert.Equal(t, "m0", got[0].Older.Member)
		assert.Equal(t, "m1", got[0].Newer.Member)
	})
	t.Run("leaderships one after the other do not overlap, whatever the member", func(t *testing.T) {
		got, err := ActingOverlaps([]Act{
			act("m0", 1, 3, 0), act("m0", 1, 3, 50), act("m1", 1, 4, 51), act("m0", 2, 5, 80), act("m0", 2, 5, 90),
		})
		require.NoError(t, err)
		assert.Empty(t, got)
	})
	t.Run("the newer term decides which is older, not who acted first", func(t *testing.T) {
		got, err := ActingOverlaps([]Act{act("m1", 1, 9, 0), act("m2", 1, 7, 30)})
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Equal(t, uint64(7), got[0].Older.Term)
		assert.Equal(t, 30*time.Millisecond, got[0].By)
	})
	t.Run("two members acting in one term is an error", func(t *testing.T) {
		_, err := ActingOverlaps([]Act{act("m1", 1, 4, 0), act("m2", 1, 4, 500)})
		require.ErrorIs(t, err, gen.ErrIncorrect)
	})
	t.Run("records round-trip through the files the members write", func(t *testing.T) {
		dir := t.TempDir()
		write := func(name, text string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
		}
		write("m0.1", "ACT 3 3 1000 1100\nACT 3 0 5000 5001\n")
		write("m1.2", "ACT 4 4 2000 2002\n")
		got, err := ReadActs(dir)
		require.NoError(t, err)
		require.Len(t, got, 3)
		assert.Equal(t, Act{Member: "m0", Life: 1, Term: 3, Token: 3, Before: time.Unix(0, 1000), At: time.Unix(0, 1100)}, got[0])
		assert.Equal(t, "m1", got[1].Member)
		assert.Equal(t, 2, got[1].Life)
		assert.Zero(t, got[2].Token)
		write("m2.1", "ACT 4 4\n")
		_, err = ReadActs(dir)
		require.ErrorIs(t, err, gen.ErrMalformed)
	})
}

// actSetting reads a duration or flag knob of the acting soak.
func actSetting(name string) string { return os.Getenv("REGENT_ACT_" + name) }

func actDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := actSetting(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	require.NoError(t, err, "REGENT_ACT_%s=%q", name, v)
	return d
}

// actFault is one fault of the acting soak: it strikes leader l of c (rng
// for its parameters) and returns what it did; repair follows.
type actFault struct {
	name   string
	strike func(t *testing.T, c *Cluster, rng *rand.Rand, l int) string
}

func pauseFor(rng *rand.Rand) time.Duration {
	return 300*time.Millisecond + time.Duration(rng.Int64N(int64(2700*time.Millisecond)))
}

func follower(c *Cluster, rng *rand.Rand, l int) int {
	return (l + 1 + rng.IntN(c.Size()-1)) % c.Size()
}

// actFaults are the soak's faults by name.
var actFaults = []actFault{
	{"stop-leader", func(t *testing.T, c *Cluster, rng *rand.Rand, l int) string {
		d := pauseFor(rng)
		require.NoError(t, c.Pause(l))
		time.Sleep(d)
		require.NoError(t, c.Resume(l))
		return fmt.Sprintf("SIGSTOP leader %d for %v", l, d)
	}},
	{"stop-follower", func(t *testing.T, c *Cluster, rng *rand.Rand, l int) string {
		f, d := follower(c, rng, l), pauseFor(rng)
		require.NoError(t, c.Pause(f))
		time.Sleep(d)
		require.NoError(t, c.Resume(f))
		return fmt.Sprintf("SIGSTOP follower %d for %v", f, d)
	}},
	{"block", func(t *testing.T, c *Cluster, rng *rand.Rand, l int) string {
		require.NoError(t, c.BlockHandler(l))
		time.Sleep(c.cfg.Worker.Block + time.Second)
		return fmt.Sprintf("block leader %d's handler for %v", l, c.cfg.Worker.Block)
	}},
	{"delay-cut", func(t *testing.T, c *Cluster, rng *rand.Rand, l int) string {
		d := time.Duration(100+rng.IntN(1400)) * time.Millisecond
		rampDelay(c, l, d)
		time.Sleep(time.Second)
		for j := 0; j < c.Size(); j++ {
			if j != l {
				c.mesh.Cut(c.cfg.nodeName(l), c.cfg.nodeName(j))
			}
		}
		time.Sleep(time.Duration(500+rng.IntN(2000)) * time.Millisecond)
		return fmt.Sprintf("delay into leader %d grown to %v, then its sends cut", l, d)
	}},
	{"cut-one", func(t *testing.T, c *Cluster, rng *rand.Rand, l int) string {
		f := follower(c, rng, l)
		require.NoError(t, c.CutOneWay(l, f))
		time.Sleep(time.Duration(500+rng.IntN(2000)) * time.Millisecond)
		return fmt.Sprintf("cut leader %d -> follower %d", l, f)
	}},
	{"bridge", func(t *testing.T, c *Cluster, rng *rand.Rand, l int) string {
		// The leader and one follower cannot hear each other; the other
		// follower hears both, so the leader keeps its majority.
		f := follower(c, rng, l)
		require.NoError(t, c.CutOneWay(l, f))
		require.NoError(t, c.CutOneWay(f, l))
		time.Sleep(time.Duration(500+rng.IntN(2000)) * time.Millisecond)
		return fmt.Sprintf("cut leader %d <-> follower %d", l, f)
	}},
	{"kill-leader", func(t *testing.T, c *Cluster, rng *rand.Rand, l int) string {
		d := time.Duration(rng.IntN(500)) * time.Millisecond
		require.NoError(t, c.Kill(l))
		time.Sleep(d)
		require.NoError(t, c.Restart(l))
		return fmt.Sprintf("kill -9 leader %d, restart after %v", l, d)
	}},
	{"kill-follower", func(t *testing.T, c *Cluster, rng *rand.Rand, l int) string {
		f := follower(c, rng, l)
		require.NoError(t, c.Kill(f))
		require.NoError(t, c.Restart(f))
		return fmt.Sprintf("kill -9 follower %d, restart at once", f)
	}},
	{"cut-one-kill-other", func(t *testing.T, c *Cluster, rng *rand.Rand, l int) string {
		// The leader's beats stop reaching one follower, which campaigns;
		// the other, which refused it for stickiness, restarts and forgets.
		f := follower(c, rng, l)
		g := 3 - l - f
		require.NoError(t, c.CutOneWay(l, f))
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		require.NoError(t, c.Kill(g))
		require.NoError(t, c.Restart(g))
		time.Sleep(time.Second)
		return fmt.Sprintf("cut leader %d -> %d, kill -9 and restart %d", l, f, g)
	}},
	{"stop-leader-block", func(t *testing.T, c *Cluster, rng *rand.Rand, l int) string {
		d := pauseFor(rng)
		require.NoError(t, c.BlockHandler(l))
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		require.NoError(t, c.Pause(l))
		time.Sleep(d)
		require.NoError(t, c.Resume(l))
		time.Sleep(c.cfg.Worker.Block)
		return fmt.Sprintf("block leader %d's handler, then SIGSTOP it for %v", l, d)
	}},
}

// TestActingLeadersNeverOverlap is the end-to-end check of what a user
// relies on: three members, each its own OS process over real TCP through
// the fault proxies, run a worker that acts (records) on every work
// message while IsLeader says so; the faults strike the leader's process,
// its followers, its handler and its network. Afterwards no act of a
// superseded leadership may come after the first act of its successor by
// more than the bound (REGENT_ACT_BOUND, default the evidence window plus
// a heartbeat, 200 ms, plus REGENT_ACT_SLACK, default 100 ms, for a loaded
// machine). REGENT_ACT_SOAK=<cycles> runs it; REGENT_ACT_FAULTS (comma
// separated names of actFaults, default all), REGENT_ACT_NOPREVOTE,
// REGENT_ACT_NOCOAL, REGENT_ACT_STATEFILE, REGENT_ACT_BLOCK (1s),
// REGENT_ACT_CONFIRM (a slow HandleConfirmLeader, 0) and REGENT_ACT_SEED
// choose the run.
func TestActingLeadersNeverOverlap(t *testing.T) {
	if actSetting("SOAK") == "" {
		t.Skip("set REGENT_ACT_SOAK=<cycles> to run")
	}
	cycles, err := strconv.Atoi(actSetting("SOAK"))
	require.NoError(t, err)
	seed := uint64(time.Now().UnixNano())
	if v := actSetting("SEED"); v != "" {
		seed, err = strconv.ParseUint(v, 10, 64)
		require.NoError(t, err)
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	faults := actFaults
	if v := actSetting("FAULTS"); v != "" {
		faults = nil
		for _, name := range strings.Split(v, ",") {
			for _, f := range actFaults {
				if f.name == name {
					faults = append(faults, f)
				}
			}
		}
		require.NotEmpty(t, faults, "REGENT_ACT_FAULTS=%q names none of the faults", v)
	}
	stateDir, records := t.TempDir(), t.TempDir()
	noPreVote, noCoal, stateFile := actSetting("NOPREVOTE") != "", actSetting("NOCOAL") != "", actSetting("STATEFILE") != ""
	bound := actDuration(t, "BOUND", time.Duration(leader.DefaultElectionTimeoutMin+leader.DefaultHeartbeatInterval)*time.Millisecond) +
		actDuration(t, "SLACK", 100*time.Millisecond)
	t.Logf("REGENT_ACT_SEED=%d: %d cycles, prevote %v, coalescing %v, state file %v, bound %v", seed, cycles, !noPreVote, !noCoal, stateFile, bound)
	c, err := Start(t, Config{Size: 3, Seed: seed, Processes: true, PollInterval: 200 * time.Millisecond,
		Worker: &WorkerConfig{Dir: records, Block: actDuration(t, "BLOCK", time.Second), ConfirmDelay: actDuration(t, "CONFIRM", 0)},
		Options: func(i int) leader.Options {
			o := leader.Options{ClusterID: DefaultClusterID, DisablePreVote: noPreVote, DisableHeartbeatCoalescing: noCoal}
			if stateFile {
				o.StateFile = filepath.Join(stateDir, fmt.Sprintf("m%d.state", i))
			}
			return o
		}})
	require.NoError(t, err)
	type struck struct {
		at   time.Time
		what string
	}
	var log []struck
	for cycle := range cycles {
		l, err := c.WaitLeader(30 * time.Second)
		require.NoError(t, err)
		time.Sleep(time.Duration(200+rng.IntN(800)) * time.Millisecond)
		f := faults[rng.IntN(len(faults))]
		at := time.Now()
		what := f.strike(t, c, rng, l)
		log = append(log, struck{at, what})
		t.Logf("cycle %d at %s: %s", cycle, at.Format("15:04:05.000"), what)
		require.NoError(t, c.Heal())
		c.mesh.Update(func(_, _ gen.Atom, f *faultproxy.Fault) { *f = faultproxy.Fault{} })
		for i := range c.Size() {
			if !c.Alive(i) {
				require.NoError(t, c.Restart(i))
			}
		}
	}
	_, err = c.WaitLeader(30 * time.Second)
	require.NoError(t, err)
	time.Sleep(500 * time.Millisecond)

	acts, err := ReadActs(records)
	require.NoError(t, err)
	overlaps, err := ActingOverlaps(acts)
	require.NoError(t, err)
	var stale time.Duration // the longest an IsLeader call took: a pause inside it
	for _, a := range acts {
		stale = max(stale, a.At.Sub(a.Before))
	}
	worst := time.Duration(0)
	if len(overlaps) > 0 {
		worst = overlaps[0].By
	}
	t.Logf("%d acts, %d overlapping pairs of leaderships, max overlap %v, longest IsLeader call %v", len(acts), len(overlaps), worst, stale)
	for _, o := range overlaps {
		cause := "before any fault"
		for _, s := range log {
			if !s.at.After(o.Newer.At) {
				cause = fmt.Sprintf("%s (struck %v before the newer leader's first act)", s.what, o.Newer.At.Sub(s.at).Round(time.Millisecond))
			}
		}
		t.Logf("overlap: %s; after: %s", o, cause)
	}
	require.LessOrEqual(t, worst, bound, "a superseded leader acted beside its successor")
}
