package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"pgregory.net/rapid"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/syncbuf"
	"github.com/regent-go/regent/leader"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// generous bounds waits for elections and processes on a loaded 2-core machine.
const generous = 60 * time.Second

// runCmd runs the CLI in-process and returns its exit code and outputs.
func runCmd(ctx context.Context, env map[string]string, args ...string) (int, string, string) {
	var out, errOut syncbuf.Buffer
	code := run(ctx, args, &environment{stdout: &out, stderr: &errOut, getenv: func(k string) string { return env[k] }})
	return code, out.String(), errOut.String()
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// cookieFile writes a cookie file in a fresh directory and returns its path.
func cookieFile(t *testing.T, cookie string) string {
	path := filepath.Join(t.TempDir(), "cookie")
	require.NoError(t, os.WriteFile(path, []byte(cookie+"\n"), 0o600))
	return path
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"demo"}, {"node"}, {"inspect"}, {"bench"}, {"bench", "scale"}} {
		name := strings.Join(args, " ")
		t.Run(name+" --help describes the command and exits 0", func(t *testing.T) {
			code, out, _ := runCmd(context.Background(), nil, append(args, "--help")...)
			assert.Equal(t, 0, code)
			assert.Contains(t, out, "Usage: regent "+name)
			assert.Contains(t, out, "Flags:")
		})
	}
	t.Run("node --help names every flag's environment variable and warns about the observer", func(t *testing.T) {
		_, out, _ := runCmd(context.Background(), nil, "node", "--help")
		for _, v := range []string{"$REGENT_NAME", "$REGENT_COOKIE", "$REGENT_COOKIE_FILE", "$REGENT_GHOST_TTL", "$REGENT_STATE_FILE",
			"$REGENT_PREFER", "$REGENT_CONFIRM_INTERVAL", "$REGENT_TLS_CERT", "$REGENT_LOG_FORMAT"} {
			assert.Contains(t, out, v)
		}
		assert.Contains(t, out, "no authentication")
	})
	t.Run("an unknown command is a usage error", func(t *testing.T) {
		code, _, errOut := runCmd(context.Background(), nil, "frobnicate")
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, `unknown command "frobnicate"`)
	})
}

// Every leader.Options field a deployment sets is reachable from regent
// node, by flag and by environment variable.
func TestNodeOptionsFromFlagsAndEnvironment(t *testing.T) {
	parse := func(t *testing.T, env map[string]string, args ...string) leader.Options {
		t.Helper()
		e := &environment{stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}, getenv: func(k string) string { return env[k] }}
		var c nodeConfig
		fs := newFlags(e, "node", nodeSynopsis).withEnv()
		c.register(fs)
		_, err := fs.parse(args)
		require.NoError(t, err)
		o, err := c.options()
		require.NoError(t, err)
		return o
	}
	t.Run("every election option has a flag", func(t *testing.T) {
		o := parse(t, nil, "--name", "a@h:1", "--cluster", "c", "--min-size", "2", "--election-min", "400", "--election-max", "1s",
			"--heartbeat", "100", "--ghost-ttl", "9s", "--no-prevote", "--evidence", "contact", "--no-fast-failover",
			"--prefer", "oldest", "--prefer-stable-for", "3000", "--confirm-file", "gate", "--confirm-interval", "500",
			"--same-host", "/tmp/cell", "--state-file", "/tmp/state", "--join", "b@h:2,c@h:3")
		assert.Equal(t, leader.Options{
			ClusterID: "c", MinClusterSize: 2, ElectionTimeoutMin: 400, ElectionTimeoutMax: 1000, HeartbeatInterval: 100,
			GhostTTL: 9000, DisablePreVote: true, Evidence: leader.EvidenceContact, DisableFastFailover: true,
			Prefer: leader.Preference{Kind: leader.PreferOldest}, PreferStableFor: 3000, ConfirmInterval: 500,
			SameHost: "/tmp/cell", StateFile: "/tmp/state",
			Bootstrap: []gen.ProcessID{{Name: "election", Node: "b@h:2"}, {Name: "election", Node: "c@h:3"}},
		}, o)
	})
	t.Run("the environment fills what the command line leaves out, and the command line wins", func(t *testing.T) {
		o := parse(t, map[string]string{"REGENT_CLUSTER": "from-env", "REGENT_JOIN": "a@h:1,b@h:2", "REGENT_GHOST_TTL": "7000",
			"REGENT_STATE_FILE": "/env/state", "REGENT_PREFER": "highest-id"}, "--name", "a@h:1", "--ghost-ttl", "6000")
		assert.Equal(t, "from-env", o.ClusterID)
		assert.Equal(t, 6000, o.GhostTTL)
		assert.Equal(t, "/env/state", o.StateFile)
		assert.Equal(t, leader.PreferHighestID, o.Prefer.Kind)
		assert.Equal(t, []gen.ProcessID{{Name: "election", Node: "b@h:2"}}, o.Bootstrap, "a node does not join itself")
	})
}

// Usage errors exit 2 and speak the command line's language: the flag as
// typed, never an Options field, before anything starts.
func TestUsageErrorsNameTheFlag(t *testing.T) {
	cookie := map[string]string{"REGENT_COOKIE": "c"}
	port := freePort(t)
	name := "u1@127.0.0.1:" + strconv.Itoa(port)
	for _, tc := range []struct {
		name   string
		env    map[string]string
		args   []string
		want   []string
		reject []string
	}{
		{"an unknown flag", cookie, []string{"node", "--name", name, "--frobnicate"}, []string{"--frobnicate"}, nil},
		{"a flag without its value", cookie, []string{"node", "--name"}, []string{"--name"}, nil},
		{"a negative timeout", cookie, []string{"node", "--name", name, "--election-min", "-5"}, []string{"--election-min", "negative"}, []string{"GhostTTL"}},
		{"a maximum below the minimum", cookie, []string{"node", "--name", name, "--election-min", "300", "--election-max", "200"},
			[]string{"--election-max", "--election-min"}, []string{"ElectionTimeout", "GhostTTL"}},
		{"a node name without a port", cookie, []string{"node", "--name", "n5@127.0.0.1"}, []string{"--name", "has no port", "n5@127.0.0.1:PORT"}, nil},
		{"a join target without a port", cookie, []string{"node", "--name", name, "--join", "n2@127.0.0.1"}, []string{"--join", "has no port"}, nil},
		{"no cookie at all", nil, []string{"node", "--name", name}, []string{"no cookie", "REGENT_COOKIE", "--cookie-file"}, nil},
		{"a missing cookie file", nil, []string{"node", "--name", name, "--cookie-file", "/nonexistent/cookie"}, []string{"--cookie-file"}, nil},
		{"half the TLS files", cookie, []string{"node", "--name", name, "--tls-cert", "a.pem"}, []string{"--tls-cert", "--tls-key", "--tls-ca"}, nil},
		{"an unknown log format", cookie, []string{"node", "--name", name, "--log-format", "xml"}, []string{"--log-format"}, nil},
		{"a bad environment value", map[string]string{"REGENT_COOKIE": "c", "REGENT_HEARTBEAT": "often"}, []string{"node", "--name", name},
			[]string{"REGENT_HEARTBEAT", "--heartbeat"}, nil},
		{"inspect without a node", cookie, []string{"inspect"}, []string{"exactly one node name"}, nil},
		{"a bench size below the floor", nil, []string{"bench", "--sizes", "2"}, []string{"--sizes"}, nil},
		{"a negative stall", nil, []string{"bench", "scale", "--stall", "-1s"}, []string{"--stall", "negative"}, nil},
		{"a negative settling bound", nil, []string{"bench", "scale", "--settle-max", "-1s"}, []string{"--settle-max", "negative"}, nil},
		{"an argument demo does not take", nil, []string{"demo", "extra"}, []string{"unexpected"}, nil},
	} {
		t.Run(tc.name+" is a usage error naming what to fix", func(t *testing.T) {
			code, out, errOut := runCmd(context.Background(), tc.env, tc.args...)
			assert.Equal(t, 2, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			for _, w := range tc.want {
				assert.Contains(t, errOut, w)
			}
			for _, r := range tc.reject {
				assert.NotContains(t, errOut, r)
			}
			assert.NotContains(t, out, "listening on", "nothing ran")
		})
	}
}

func TestFlagsInAnyPosition(t *testing.T) {
	env := &environment{stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}, getenv: func(string) string { return "" }}
	fs := newFlags(env, "inspect", inspectSynopsis)
	cookie := fs.String("cookie", "", "")
	asJSON := fs.Bool("json", false, "")
	t.Run("flags after, before and between positional arguments are all read", func(t *testing.T) {
		rest, err := fs.parse([]string{"--json", "n1@h:1", "--cookie", "secret", "extra"})
		require.NoError(t, err)
		assert.Equal(t, []string{"n1@h:1", "extra"}, rest)
		assert.Equal(t, "secret", *cookie)
		assert.True(t, *asJSON)
	})
	t.Run("everything after -- is positional", func(t *testing.T) {
		rest, err := fs.parse([]string{"a", "--", "--cookie", "b"})
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "--cookie", "b"}, rest)
	})
}

func TestBench(t *testing.T) {
	plot := filepath.Join(t.TempDir(), "plot.svg")
	code, out, errOut := runCmd(context.Background(), nil, "bench", "--trials", "2", "--sizes", "3", "--json", "--plot", plot)
	require.Equal(t, 0, code, errOut)
	var res benchResult
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	t.Run("every case is measured with the asked number of trials", func(t *testing.T) {
		require.Len(t, res.Rows, len(benchCases))
		for _, r := range res.Rows {
			assert.Len(t, r.Samples, 2, r.Case)
			assert.Positive(t, r.Summary.Min, r.Case)
			assert.LessOrEqual(t, r.Summary.Min, r.Summary.Max, r.Case)
			assert.Positive(t, r.Bound, r.Case)
			assert.GreaterOrEqual(t, r.MeanRounds, 1.0, "%s: every failover needs at least one campaign", r.Case)
		}
		assert.Positive(t, res.RTT)
	})
	t.Run("the plot is an SVG with a row per case", func(t *testing.T) {
		svg, err := os.ReadFile(plot)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(svg), "<svg"))
		for _, c := range benchCases {
			assert.Contains(t, string(svg), c.name+", N=3")
		}
	})
	t.Run("CSV output has a header and a row per case", func(t *testing.T) {
		code, out, errOut := runCmd(context.Background(), nil, "bench", "--trials", "1", "--sizes", "3", "--cases", "handover,process-kill", "--csv")
		require.Equal(t, 0, code, errOut)
		records, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		require.NoError(t, err)
		require.Len(t, records, 3)
		assert.Equal(t, "case", records[0][0])
		assert.Equal(t, "handover", records[1][0])
	})
	t.Run("scale measures coalescing off and on, back to back, with failovers", func(t *testing.T) {
		code, out, errOut := runCmd(context.Background(), nil, "bench", "scale", "--clusters", "3", "--window", "500ms", "--failovers", "2", "--json")
		require.Equal(t, 0, code, errOut)
		var rows []scaleRow
		require.NoError(t, json.Unmarshal([]byte(out), &rows))
		require.Len(t, rows, 2)
		for i, r := range rows {
			assert.Equal(t, i == 1, r.Coalescing, "off first, then on")
			assert.Equal(t, 15, r.Actors)
			assert.Positive(t, r.AllLeaders)
			assert.Positive(t, r.FramesPerSec, "leaders heartbeat during the window")
			assert.Positive(t, r.FramesPerPair)
			assert.Positive(t, r.BytesPerPair)
			assert.Positive(t, r.CPUShare)
			assert.Positive(t, r.IdleFloor, "the frames alone cost some CPU")
			assert.Positive(t, r.CPUPerCluster)
			assert.Zero(t, r.HeapPerActor, "15 members are too few to tell their heap from the runtime's")
			assert.Equal(t, 2, r.Failover.N, "two failovers among the others")
			assert.Equal(t, 2, r.FailoverAlone.N, "and two on one cluster alone")
			assert.Equal(t, leader.DefaultHeartbeatInterval, r.HeartbeatMS, "the default timings are the document's")
		}
		assert.Zero(t, rows[0].Coalescer.EntriesOut, "nothing is coalesced with coalescing off")
		assert.Positive(t, rows[1].Coalescer.EntriesOut, "heartbeats are coalesced with it on")
	})
	t.Run("scale times node-kill failovers, and the killed node's members rejoin every cluster before the next trial", func(t *testing.T) {
		code, out, errOut := runCmd(context.Background(), nil, "bench", "scale", "--clusters", "3", "--window", "300ms", "--json",
			"--coalescing", "on", "--failovers", "2", "--failover-case", "node-kill", "--settle-max", "1m")
		require.Equal(t, 0, code, errOut)
		var rows []scaleRow
		require.NoError(t, json.Unmarshal([]byte(out), &rows))
		require.Len(t, rows, 1)
		// Each trial times every cluster led from the killed node, at
		// least cluster 0's; between trials the node restarts, and the
		// run fails unless every cluster agrees again with all five
		// members, the restarted one included.
		assert.GreaterOrEqual(t, rows[0].Failover.N, 2)
		assert.Equal(t, 2, rows[0].FailoverAlone.N)
		assert.Positive(t, rows[0].NodeDownCPU, "the survivors' CPU with the node down")
		assert.Len(t, rows[0].OthersReElected, 2, "the clusters the loss did not touch, counted per kill")
		require.Len(t, rows[0].KillCoalescer, 2, "and the survivors' coalescer counters, per kill")
		for _, k := range rows[0].KillCoalescer {
			assert.Positive(t, k.PairBeatsIn, "pair beats flow among the survivors until elections stop")
		}
		assert.Positive(t, rows[0].FailoverCPU, "the CPU a failover cost")
		assert.Positive(t, rows[0].FailoverWork, "the time half the failovers need at that cost")
	})
	t.Run("the p50 work is half a trial's failovers at their cost each, spread over the CPUs", func(t *testing.T) {
		per, half := failoverWork([]killWork{{hit: 5, cpu: 10 * time.Millisecond}, {hit: 0, cpu: time.Millisecond}}, 2)
		assert.Equal(t, 2*time.Millisecond, per, "10 ms over 5 failovers; a trial that hit nothing is left out")
		assert.Equal(t, 3*time.Millisecond, half, "3 of the 5 failovers at 2 ms each on 2 CPUs")
	})
	t.Run("scale runs with the timings it is given", func(t *testing.T) {
		code, out, errOut := runCmd(context.Background(), nil, "bench", "scale", "--clusters", "2", "--window", "500ms", "--json",
			"--election-min", "400", "--election-max", "800", "--heartbeat", "100", "--coalescing", "on", "--failovers", "0")
		require.Equal(t, 0, code, errOut)
		var rows []scaleRow
		require.NoError(t, json.Unmarshal([]byte(out), &rows))
		require.Len(t, rows, 1)
		assert.Equal(t, 400, rows[0].ElectionMinMS)
		assert.Equal(t, 800, rows[0].ElectionMaxMS)
		assert.Equal(t, 100, rows[0].HeartbeatMS)
		assert.Positive(t, rows[0].AllLeaders)
	})
	t.Run("scale runs the observer on the first node when asked", func(t *testing.T) {
		code, out, errOut := runCmd(context.Background(), nil, "bench", "scale", "--clusters", "2", "--window", "1s", "--json",
			"--coalescing", "on", "--failovers", "0", "--observer")
		require.Equal(t, 0, code, errOut)
		var rows []scaleRow
		require.NoError(t, json.Unmarshal([]byte(out), &rows))
		require.Len(t, rows, 1)
		assert.True(t, rows[0].Observer)
		// Each reading wakes every member: a leader paired on its pair
		// beats is unpaired by it.
		assert.Positive(t, rows[0].Coalescer.Unpaired, "the observer's readings woke the steady leaders in the window")
		code, out, errOut = runCmd(context.Background(), nil, "bench", "scale", "--clusters", "2", "--window", "300ms",
			"--coalescing", "on", "--failovers", "0", "--observer", "--settle-max", "0")
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "Observer: the observer sampled the first node")
	})
	t.Run("scale settles before the window and recovers from a stall after it", func(t *testing.T) {
		code, out, errOut := runCmd(context.Background(), nil, "bench", "scale", "--clusters", "2", "--window", "300ms", "--json",
			"--coalescing", "on", "--failovers", "0", "--stall", "100ms", "--settle-max", "2m")
		require.Equal(t, 0, code, errOut)
		var rows []scaleRow
		require.NoError(t, json.Unmarshal([]byte(out), &rows))
		require.Len(t, rows, 1)
		r := rows[0]
		assert.False(t, r.Unsettled, "two clusters go quiet long before two minutes")
		assert.Equal(t, 100*time.Millisecond, r.Stall)
		assert.False(t, r.StallUnrecovered, "and again after a stall of a tenth of a second")
		code, out, errOut = runCmd(context.Background(), nil, "bench", "scale", "--clusters", "2", "--window", "300ms",
			"--coalescing", "on", "--failovers", "0", "--stall", "100ms", "--settle-max", "0")
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "stall 100ms: elections, quiet after ms", "the table has the stall's column")
		assert.Contains(t, out, "Stall: after the window")
	})
}

func TestSummaries(t *testing.T) {
	t.Run("percentiles are nearest-rank over the sorted samples", func(t *testing.T) {
		var s []time.Duration
		for i := 100; i >= 1; i-- {
			s = append(s, time.Duration(i)*time.Millisecond)
		}
		got := summarize(s)
		assert.Equal(t, time.Millisecond, got.Min)
		assert.Equal(t, 50*time.Millisecond, got.P50)
		assert.Equal(t, 90*time.Millisecond, got.P90)
		assert.Equal(t, 99*time.Millisecond, got.P99)
		assert.Equal(t, 100*time.Millisecond, got.Max)
		assert.Equal(t, 50500*time.Microsecond, got.Mean)
	})
	t.Run("the node-kill bound is the expected minimum timeout less half a heartbeat plus a round trip", func(t *testing.T) {
		cfg := benchConfig{eMin: 150, eMax: 300, hb: 50}
		assert.Equal(t, (150+30-25)*time.Millisecond+time.Millisecond, bound(cfg, "node-kill-nofast", 5, time.Millisecond))
	})
	t.Run("the fast-failover bounds are the first-ranked member's expected jitter plus its rounds", func(t *testing.T) {
		cfg := benchConfig{eMin: 150, eMax: 300, hb: 50}
		assert.Equal(t, 1250*time.Microsecond+2*time.Millisecond, bound(cfg, "node-kill", 5, time.Millisecond))
		assert.Equal(t, 1250*time.Microsecond+time.Millisecond, bound(cfg, "process-kill", 7, time.Millisecond))
	})
}

func TestRecorderAgreement(t *testing.T) {
	rec := newRecorder(nil)
	leaderPID := gen.PID{Node: "a@h", ID: 1}
	t0 := time.Now()
	report := func(member uint64, term uint64, at time.Duration) {
		rec.record(leader.Transition{Member: gen.PID{Node: gen.Atom("x" + strconv.FormatUint(member, 10) + "@h"), ID: member}, Role: leader.RoleFollower,
			Term: term, Leader: leaderPID, At: t0.Add(at)})
	}
	report(1, 2, 10*time.Millisecond)
	_, ok, _ := rec.agreed(1, gen.PID{}, 2)
	assert.False(t, ok, "one member is not a majority of three")
	report(2, 2, 30*time.Millisecond)
	report(1, 2, 50*time.Millisecond) // a repeat does not move when member 1 came to believe it
	a, ok, _ := rec.agreed(1, gen.PID{}, 2)
	require.True(t, ok)
	assert.Equal(t, leaderPID, a.LeaderPID)
	assert.Equal(t, t0.Add(30*time.Millisecond), a.At, "agreement dates from the member that completed the majority")
	_, ok, _ = rec.agreed(2, gen.PID{}, 2)
	assert.False(t, ok, "only terms above the old one count")
	_, ok, _ = rec.agreed(1, leaderPID, 2)
	assert.False(t, ok, "a leader ruled out does not count")
}

// The trace's cheap count of clusters with a leader must be the agreement
// the waits use.
func TestRecorderLedIsAgreed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rec := newRecorder(nil)
		leaders := []gen.PID{{}, {Node: "a@h", ID: 1}, {Node: "b@h", ID: 2}, {Node: "b@h", ID: 3}}
		for i := range rapid.IntRange(0, 12).Draw(t, "reports") {
			member := rapid.IntRange(1, 5).Draw(t, fmt.Sprint("member", i))
			rec.record(leader.Transition{Member: gen.PID{Node: gen.Atom(fmt.Sprintf("x%d@h", member)), ID: uint64(member)},
				Role: leader.RoleFollower, Term: uint64(rapid.IntRange(0, 3).Draw(t, fmt.Sprint("term", i))),
				Leader: rapid.SampledFrom(leaders).Draw(t, fmt.Sprint("leader", i)), At: time.Now()})
		}
		for quorum := 1; quorum <= 5; quorum++ {
			_, agreed, _ := rec.agreed(0, gen.PID{}, quorum)
			if got := rec.led(quorum); got != agreed {
				t.Fatalf("quorum %d: led says %v, agreed %v", quorum, got, agreed)
			}
		}
	})
}
