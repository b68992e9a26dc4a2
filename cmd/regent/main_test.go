package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

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
	t.Run("an unknown command is a usage error", func(t *testing.T) {
		code, _, errOut := runCmd(context.Background(), nil, "frobnicate")
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, `unknown command "frobnicate"`)
	})
	t.Run("a bad flag value is a usage error", func(t *testing.T) {
		code, _, _ := runCmd(context.Background(), nil, "bench", "--sizes", "2")
		assert.Equal(t, 2, code)
	})
}

func TestNodeFlagsFromEnvironment(t *testing.T) {
	t.Run("a missing name is reported before anything starts", func(t *testing.T) {
		code, _, errOut := runCmd(context.Background(), map[string]string{"REGENT_COOKIE": "c"}, "node")
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, "REGENT_NAME")
	})
	t.Run("environment fills flags and the command line wins", func(t *testing.T) {
		env := &environment{stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string {
			return map[string]string{"REGENT_CLUSTER": "from-env", "REGENT_JOIN": "a@h:1,b@h:2", "REGENT_COOKIE": "env"}[k]
		}}
		fs := newFlags(env, "node", "")
		cluster := fs.String("cluster", "regent", "")
		cookie := fs.String("cookie", "", "")
		var join listFlag
		fs.Var(&join, "join", "")
		require.NoError(t, fs.Parse([]string{"--cookie", "flag"}))
		require.NoError(t, applyEnv(fs, env))
		assert.Equal(t, "from-env", *cluster)
		assert.Equal(t, "flag", *cookie)
		assert.Equal(t, listFlag{"a@h:1", "b@h:2"}, join)
	})
}

func TestDemo(t *testing.T) {
	t.Run("the demo runs its whole schedule and stops every node", func(t *testing.T) {
		code, out, errOut := runCmd(context.Background(), nil, "demo", "--once", "--step", "200ms", "--observer", "127.0.0.1:0", "--duration", "2m")
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
		for _, step := range []string{"cold start:", "failover after node kill:", "failover after a silent partition:",
			"failover after process kill:", "planned handover:", "schedule complete; every node is down"} {
			assert.Contains(t, out, step)
		}
		assert.Regexp(t, `LEADER\s+term \d+`, out)
		assert.NotContains(t, out, "\x1b[", "no colors when the output is not a terminal")
	})
	t.Run("the demo serves the observer page and stops cleanly when interrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var out syncbuf.Buffer
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, []string{"demo", "--step", "1h", "--observer", "127.0.0.1:0"}, &environment{stdout: &out, stderr: &out, getenv: os.Getenv})
		}()
		page := regexp.MustCompile(`observer page: (http://\S+)`)
		require.Eventually(t, func() bool { return page.MatchString(out.String()) && strings.Contains(out.String(), "cold start:") }, generous, 20*time.Millisecond)
		url := page.FindStringSubmatch(out.String())[1]
		require.Eventually(t, func() bool {
			resp, err := http.Get(url + "api/clusters")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			return err == nil && resp.StatusCode == http.StatusOK && strings.Contains(string(body), "demo")
		}, generous, 50*time.Millisecond)
		cancel()
		select {
		case code := <-done:
			assert.Equal(t, 0, code)
		case <-time.After(generous):
			t.Fatal("the demo did not stop after the interrupt")
		}
		assert.Contains(t, out.String(), "stopped; every node is down")
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
	t.Run("scale elects a leader in every cluster and reports the window", func(t *testing.T) {
		code, out, errOut := runCmd(context.Background(), nil, "bench", "scale", "--clusters", "3", "--window", "500ms", "--json")
		require.Equal(t, 0, code, errOut)
		var rows []scaleRow
		require.NoError(t, json.Unmarshal([]byte(out), &rows))
		require.Len(t, rows, 1)
		assert.Equal(t, 15, rows[0].Actors)
		assert.Positive(t, rows[0].AllLeaders)
		assert.Positive(t, rows[0].FramesPerSec, "leaders heartbeat during the window")
		assert.Positive(t, rows[0].CPUShare)
		assert.Equal(t, leader.DefaultHeartbeatInterval, rows[0].HeartbeatMS, "the default timings are the document's")
	})
	t.Run("scale runs with the timings it is given", func(t *testing.T) {
		code, out, errOut := runCmd(context.Background(), nil, "bench", "scale", "--clusters", "2", "--window", "500ms", "--json",
			"--election-min", "400", "--election-max", "800", "--heartbeat", "100")
		require.Equal(t, 0, code, errOut)
		var rows []scaleRow
		require.NoError(t, json.Unmarshal([]byte(out), &rows))
		require.Len(t, rows, 1)
		assert.Equal(t, 400, rows[0].ElectionMinMS)
		assert.Equal(t, 800, rows[0].ElectionMaxMS)
		assert.Equal(t, 100, rows[0].HeartbeatMS)
		assert.Positive(t, rows[0].AllLeaders)
	})
}

// startTestCluster runs a 3-member cluster in the test process and waits
// until all follow one leader.
func startTestCluster(t *testing.T) *localCluster {
	rec := newRecorder(nil)
	c := newLocalCluster(3, "i", leader.Options{ClusterID: "inspected"}, false, rec)
	c.cookie = "inspect-test"
	t.Cleanup(func() { require.NoError(t, c.stop()) })
	require.NoError(t, c.start(context.Background()))
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	_, err := rec.waitAgreed(ctx, 0, gen.PID{}, 3)
	require.NoError(t, err)
	return c
}

func TestInspect(t *testing.T) {
	c := startTestCluster(t)
	var routes []string
	for i, n := range c.nodes {
		routes = append(routes, "--route", fmt.Sprintf("%s=%s", c.names[i], n.Network().AcceptorAddress()))
	}
	t.Run("JSON lists every member found from one, with one leader all agree on", func(t *testing.T) {
		args := append([]string{"inspect", "--cookie", "inspect-test", "--json"}, routes...)
		code, out, errOut := runCmd(context.Background(), nil, append(args, string(c.names[1]))...)
		require.Equal(t, 0, code, errOut)
		var r inspectReport
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		assert.Equal(t, "inspected", r.Cluster)
		require.Len(t, r.Members, 3)
		leaders := 0
		for _, m := range r.Members {
			require.Empty(t, m.Error)
			if m.Inspection["ergo:state"] == "leader" {
				leaders++
			}
			assert.Equal(t, r.Members[0].Inspection["ergo:leader_node"], m.Inspection["ergo:leader_node"])
		}
		assert.Equal(t, 1, leaders)
	})
	t.Run("the table has a row per member and a summary", func(t *testing.T) {
		args := append([]string{"inspect", "--cookie", "inspect-test"}, routes...)
		code, out, errOut := runCmd(context.Background(), nil, append(args, string(c.names[0]))...)
		require.Equal(t, 0, code, errOut)
		for _, name := range c.names {
			assert.Contains(t, out, string(name))
		}
		assert.Contains(t, out, `cluster "inspected", 3 members: 3 see leader`)
	})
	t.Run("a wrong cookie is an error, not an empty table", func(t *testing.T) {
		args := append([]string{"inspect", "--cookie", "wrong", "--timeout", "2s"}, routes...)
		code, _, errOut := runCmd(context.Background(), nil, append(args, string(c.names[0]))...)
		assert.Equal(t, 1, code)
		assert.NotEmpty(t, errOut)
	})
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

func TestNodeProcessesFormACluster(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "regent")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())

	var names []string
	for i := 1; i <= 3; i++ {
		names = append(names, fmt.Sprintf("p%d@127.0.0.1:%d", i, freePort(t)))
	}
	type proc struct {
		cmd *exec.Cmd
		out *syncbuf.Buffer
	}
	var procs []proc
	for _, name := range names {
		out := &syncbuf.Buffer{}
		cmd := exec.Command(bin, "node")
		cmd.Env = append(os.Environ(), "REGENT_NAME="+name, "REGENT_COOKIE=os-test", "REGENT_CLUSTER=os", "REGENT_JOIN="+strings.Join(names, ","))
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		procs = append(procs, proc{cmd, out})
	}
	t.Cleanup(func() {
		for _, p := range procs {
			_ = p.cmd.Process.Kill() // already gone when the test stopped it
			_ = p.cmd.Wait()
		}
	})

	t.Run("three OS processes elect one leader that all recognise", func(t *testing.T) {
		require.Eventually(t, func() bool {
			code, out, _ := runCmd(context.Background(), nil, "inspect", "--cookie", "os-test", "--json", "--timeout", "2s", names[0])
			if code != 0 {
				return false
			}
			var r inspectReport
			if json.Unmarshal([]byte(out), &r) != nil || len(r.Members) != 3 {
				return false
			}
			leaders := 0
			for _, m := range r.Members {
				if m.Inspection["ergo:leader_node"] != r.Members[0].Inspection["ergo:leader_node"] || m.Inspection["ergo:leader_node"] == "" {
					return false
				}
				if m.Inspection["ergo:state"] == "leader" {
					leaders++
				}
			}
			return leaders == 1
		}, generous, 200*time.Millisecond)
	})
	t.Run("exactly one process logs that it became leader", func(t *testing.T) {
		leaders := 0
		for _, p := range procs {
			if strings.Contains(p.out.String(), "LEADER ") {
				leaders++
			}
		}
		assert.Equal(t, 1, leaders)
	})
	t.Run("every process stops cleanly on SIGTERM", func(t *testing.T) {
		for _, p := range procs {
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
			require.NoError(t, p.cmd.Wait())
			assert.Contains(t, p.out.String(), "stopping node")
		}
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
	t.Run("declared peers parse from their inspection text", func(t *testing.T) {
		got := splitProcessIDs("<election@n2@127.0.0.1:4371>, <election@n3@host>")
		assert.Equal(t, []gen.ProcessID{{Name: "election", Node: "n2@127.0.0.1:4371"}, {Name: "election", Node: "n3@host"}}, got)
	})
}

func TestRecorderAgreement(t *testing.T) {
	rec := newRecorder(nil)
	leaderPID := gen.PID{Node: "a@h", ID: 1}
	t0 := time.Now()
	report := func(member uint64, term uint64, at time.Duration) {
		rec.record(leader.Transition{Member: gen.PID{Node: "x@h", ID: member}, Role: "follower", Term: term, Leader: leaderPID, At: t0.Add(at)})
	}
	report(1, 2, 10*time.Millisecond)
	_, ok, _ := rec.agreed(1, gen.PID{}, 2)
	assert.False(t, ok, "one member is not a majority of three")
	report(2, 2, 30*time.Millisecond)
	report(1, 2, 50*time.Millisecond) // a repeat does not move when member 1 came to believe it
	a, ok, _ := rec.agreed(1, gen.PID{}, 2)
	require.True(t, ok)
	assert.Equal(t, t0.Add(30*time.Millisecond), a.at, "agreement dates from the member that completed the majority")
	_, ok, _ = rec.agreed(2, gen.PID{}, 2)
	assert.False(t, ok, "only terms above the old one count")
}
