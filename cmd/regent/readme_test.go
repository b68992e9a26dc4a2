package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shortRun bounds a command that would run on (a benchmark, the demo): it
// is stopped after this long, which is fine as long as it was not refused.
const shortRun = 3 * time.Second

// docCommand is one command a document shows: environment assignments in
// force, and either regent's arguments or a shell line.
type docCommand struct {
	env    map[string]string
	regent []string // nil for a shell line
	shell  string
}

// portMap rewrites the fixed loopback ports of documented commands to free
// ones, the same port for the same number everywhere, so the commands run
// as printed on a machine where those ports may be taken.
type portMap struct {
	t     *testing.T
	ports map[string]string
}

var loopbackPort = regexp.MustCompile(`127\.0\.0\.1:(\d{4,5})`)

func (p *portMap) rewrite(s string) string {
	return loopbackPort.ReplaceAllStringFunc(s, func(m string) string {
		port := strings.TrimPrefix(m, "127.0.0.1:")
		if p.ports[port] == "" {
			p.ports[port] = fmt.Sprint(freePort(p.t))
		}
		return "127.0.0.1:" + p.ports[port]
	})
}

// regentArgs returns the arguments of a line that runs regent
// (go run ./cmd/regent ..., ./regent ..., regent ...), after any VAR=value
// assignments, which go to env.
func regentArgs(line string, env map[string]string) ([]string, bool) {
	fields := strings.Fields(line)
	for len(fields) > 0 && strings.Contains(fields[0], "=") && strings.HasPrefix(fields[0], "REGENT_") {
		k, v, _ := strings.Cut(fields[0], "=")
		env[k] = v
		fields = fields[1:]
	}
	switch {
	case len(fields) >= 3 && fields[0] == "go" && fields[1] == "run" && fields[2] == "./cmd/regent":
		return fields[3:], true
	case len(fields) >= 1 && (fields[0] == "regent" || fields[0] == "./regent"):
		return fields[1:], true
	}
	return nil, false
}

// readmeCommands reads every command of README.md's shell blocks that
// concerns regent (go commands that do not run it are left to CI), and the
// regent commands with flags quoted inline in its prose.
func readmeCommands(t *testing.T, readme string, ports *portMap) []docCommand {
	data, err := os.ReadFile(readme)
	require.NoError(t, err)
	var out []docCommand
	env := map[string]string{}
	inBlock := false
	inline := regexp.MustCompile("`((?:go run ./cmd/)?regent [^`]+)`")
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "```sh"):
			inBlock = true
			continue
		case strings.HasPrefix(line, "```"):
			inBlock = false
			continue
		}
		if !inBlock {
			// Prose names commands too (`regent bench`); a span with a
			// flag is one to run.
			for _, m := range inline.FindAllStringSubmatch(line, -1) {
				if !strings.Contains(m[1], " --") {
					continue
				}
				cmdEnv := map[string]string{}
				if args, ok := regentArgs(ports.rewrite(m[1]), cmdEnv); ok {
					out = append(out, docCommand{env: cmdEnv, regent: args})
				}
			}
			continue
		}
		if i := strings.Index(line, "  #"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(ports.rewrite(line))
		switch {
		case line == "":
		case strings.HasPrefix(line, "export "):
			for _, kv := range strings.Fields(strings.TrimPrefix(line, "export ")) {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
		default:
			cmdEnv := map[string]string{}
			for k, v := range env {
				cmdEnv[k] = v
			}
			if args, ok := regentArgs(line, cmdEnv); ok {
				out = append(out, docCommand{env: cmdEnv, regent: args})
			} else if !strings.HasPrefix(line, "go ") {
				out = append(out, docCommand{env: cmdEnv, shell: line})
			}
		}
	}
	return out
}

// helpExamples reads the commands under "Examples:" in the help of each
// command.
func helpExamples(t *testing.T, ports *portMap) []docCommand {
	var out []docCommand
	for _, args := range [][]string{{"demo"}, {"node"}, {"inspect"}, {"bench"}, {"bench", "scale"}} {
		code, help, _ := runCmd(context.Background(), nil, append(args, "--help")...)
		require.Equal(t, 0, code)
		_, examples, ok := strings.Cut(help, "\nExamples:\n")
		require.True(t, ok, "regent %s --help shows examples", strings.Join(args, " "))
		for _, line := range strings.Split(examples, "\n") {
			if !strings.HasPrefix(line, "  ") {
				break
			}
			env := map[string]string{}
			regent, ok := regentArgs(ports.rewrite(strings.TrimSpace(line)), env)
			require.True(t, ok, "an example runs regent: %q", line)
			out = append(out, docCommand{env: env, regent: regent})
		}
	}
	return out
}

// docRunner runs documented commands other than regent node (which the
// tests run with runNodes) in a directory of their own: shell lines to
// completion, inspect for as long as it takes, the rest for at most
// shortRun.
type docRunner struct {
	t   *testing.T
	dir string
}

func (r *docRunner) run(c docCommand) (int, string) {
	t := r.t
	if c.regent == nil {
		cmd := exec.Command("sh", "-c", c.shell)
		cmd.Dir = r.dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s: %s", c.shell, out)
		return 0, string(out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), shortRun)
	defer cancel()
	if c.regent[0] == "inspect" {
		ctx, cancel = context.WithTimeout(context.Background(), generous)
		defer cancel()
	}
	code, out, errOut := runCmd(ctx, c.env, c.regent...)
	return code, out + errOut
}

func containsHelp(args []string) bool {
	for _, a := range args {
		if a == "--help" || a == "-h" {
			return true
		}
	}
	return false
}

// The README's commands run as printed (on free ports): its five-member
// recipe forms a cluster that inspect reads whole, and nothing it shows is
// a usage error.
func TestTheREADMEsCommandsRun(t *testing.T) {
	readme, err := filepath.Abs("../../README.md")
	require.NoError(t, err)
	dir := t.TempDir()
	t.Chdir(dir)
	ports := &portMap{t: t, ports: map[string]string{}}
	cmds := readmeCommands(t, readme, ports)
	require.NotEmpty(t, cmds)
	r := &docRunner{t: t, dir: dir}
	sawInspect := false
	for _, c := range cmds {
		if c.regent == nil {
			r.run(c)
			continue
		}
		what := "regent " + strings.Join(c.regent, " ")
		if c.regent[0] == "node" && !containsHelp(c.regent) {
			runNodes(t, c.env, []string{argValue(c.regent, "--name")}, withoutFlag(c.regent[1:], "--name")...)
			continue
		}
		if c.regent[0] == "inspect" {
			sawInspect = true
			var out string
			require.Eventually(t, func() bool {
				var code int
				code, out = r.run(c)
				require.NotEqual(t, 2, code, "%s is a usage error: %s", what, out)
				return code == 0 && strings.Contains(out, "5 members, 5 read: leader ")
			}, generous, 200*time.Millisecond, "%s never showed the whole cluster with a leader: %s", what, out)
			continue
		}
		code, out := r.run(c)
		assert.NotEqual(t, 2, code, "%s is a usage error: %s", what, out)
	}
	assert.True(t, sawInspect, "the README shows how to inspect the cluster")
}

// Every example --help prints runs as printed (on free ports, with the
// files it names made first) without a usage error.
func TestTheHelpExamplesRun(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	writePKI(t, dir, "n1")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "regent.cookie"), []byte("help-examples\n"), 0o600))
	ports := &portMap{t: t, ports: map[string]string{}}
	r := &docRunner{t: t, dir: dir}
	var inspects, others []docCommand
	examples := helpExamples(t, ports)
	for _, c := range examples {
		switch c.regent[0] {
		case "inspect":
			inspects = append(inspects, c)
		case "node":
		default:
			others = append(others, c)
		}
	}
	t.Run("the examples of demo and bench are not refused", func(t *testing.T) {
		codes := make([]int, len(others))
		outs := make([]string, len(others))
		var wg sync.WaitGroup
		for i, c := range others {
			wg.Go(func() { codes[i], outs[i] = r.run(c) })
		}
		wg.Wait()
		for i, c := range others {
			assert.NotEqual(t, 2, codes[i], "regent %s is a usage error: %s", strings.Join(c.regent, " "), outs[i])
		}
	})
	for _, c := range examples {
		what := "regent " + strings.Join(c.regent, " ")
		switch c.regent[0] {
		case "node":
			t.Run(what+" starts a member, and inspect examples read it", func(t *testing.T) {
				out := runNodes(t, c.env, []string{argValue(c.regent, "--name")}, withoutFlag(c.regent[1:], "--name")...)[0]
				require.Eventually(t, func() bool { return strings.Contains(out.String(), "listening on") }, generous, 20*time.Millisecond,
					"%s did not start: %s", what, out.String())
				for _, in := range inspects {
					code, text := r.run(in)
					assert.NotEqual(t, 2, code, "regent %s is a usage error: %s", strings.Join(in.regent, " "), text)
				}
			})
		}
	}
}

// argValue returns the value of flag in args ("--flag value" or "--flag=value").
func argValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

// withoutFlag drops flag and its value from args.
func withoutFlag(args []string, flag string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == flag:
			i++
		case strings.HasPrefix(args[i], flag+"="):
		default:
			out = append(out, args[i])
		}
	}
	return out
}
