package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// command is one subcommand: its name, a line for the overview, and its body.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, env *environment) error
}

// environment is what a subcommand may touch: its output streams and the
// process environment, so tests can run subcommands in-process.
type environment struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

func commands() []command {
	return []command{
		{"demo", "run 5 members in this process and break them on a schedule", runDemo},
		{"node", "run one member as its own OS process", runNode},
		{"inspect", "print a cluster's state, read from any member", runInspect},
		{"bench", "measure failover latency (and `bench scale`: many clusters)", runBench},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], &environment{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand and turns its result into an exit code:
// 0 on success or --help, 2 on a usage error, 1 otherwise.
func run(ctx context.Context, args []string, env *environment) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(env.stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], env)
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(env.stderr, "regent %s: %v\n", c.name, err)
			return 2
		default:
			fmt.Fprintf(env.stderr, "regent %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(env.stderr, "regent: unknown command %q\n\n", args[0])
	usage(env.stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "regent: leader election for Go actor services\n\nUsage: regent <command> [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `regent <command> --help` for a command's flags.")
}

// errUsage marks a mistake in the command line.
var errUsage = errors.New("usage")

// usageError reports a command-line mistake.
func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// newFlags makes a flag set whose --help prints synopsis and the flags to stdout.
func newFlags(env *environment, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("regent "+name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.stdout, "Usage: regent %s\n\n%s\n\nFlags:\n", name, synopsis)
		fs.SetOutput(env.stdout)
		fs.PrintDefaults()
		fs.SetOutput(env.stderr)
	}
	return fs
}

// applyEnv sets every flag not given on the command line from REGENT_<NAME>
// (upper case, dashes as underscores) when that variable is set.
func applyEnv(fs *flag.FlagSet, env *environment) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		key := "REGENT_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := env.getenv(key); v != "" {
			if setErr := fs.Set(f.Name, v); setErr != nil {
				err = usageError("%s=%q: %v", key, v, setErr)
			}
		}
	})
	return err
}

// listFlag is a flag of comma-separated values that may also be repeated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l = append(*l, part)
		}
	}
	return nil
}

// intsFlag is a comma-separated list of positive integers.
type intsFlag []int

func (l *intsFlag) String() string {
	parts := make([]string, len(*l))
	for i, v := range *l {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ",")
}

func (l *intsFlag) Set(v string) error {
	*l = nil
	for _, part := range strings.Split(v, ",") {
		var n int
		if _, err := fmt.Sscanf(strings.TrimSpace(part), "%d", &n); err != nil || n <= 0 {
			return fmt.Errorf("%q is not a positive integer", part)
		}
		*l = append(*l, n)
	}
	return nil
}
