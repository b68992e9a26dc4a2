package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
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
		{"reform", "re-form a cluster whose majority is gone for good (operator action)", runReform},
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
			fmt.Fprintf(env.stderr, "regent %s: %v\nRun 'regent %s --help' for its flags.\n", c.name, err, c.name)
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

// flagSet is a subcommand's flags: flags may come before, between and after
// the positional arguments, --help prints the synopsis and every flag, and
// every mistake is a usage error that names the flag as typed (--name).
type flagSet struct {
	*flag.FlagSet
	env      *environment
	name     string
	synopsis string
	// fromEnv: flags not given on the command line are read from
	// REGENT_<FLAG> (upper case, dashes as underscores).
	fromEnv bool
	// typed is the set of flags given on the command line, set by parse.
	typed map[string]bool
}

// newFlags makes the flag set of subcommand name; synopsis is its usage
// line(s), a blank line and its description.
func newFlags(env *environment, name, synopsis string) *flagSet {
	fs := flag.NewFlagSet("regent "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned, help is printed by parse
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, env: env, name: name, synopsis: synopsis}
}

// withEnv makes parse read unset flags from the environment.
func (f *flagSet) withEnv() *flagSet {
	f.fromEnv = true
	return f
}

// parse reads args and returns the positional arguments. Everything after
// "--" is positional. --help (or -h) prints the help to stdout and returns
// flag.ErrHelp.
func (f *flagSet) parse(args []string) ([]string, error) {
	var positional []string
	for {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				f.printHelp()
				return nil, err
			}
			return nil, usageError("%s", dashed(err.Error()))
		}
		rest := f.Args()
		if len(rest) == 0 {
			break
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	f.typed = map[string]bool{}
	f.Visit(func(fl *flag.Flag) { f.typed[fl.Name] = true })
	if f.fromEnv {
		if err := f.applyEnv(); err != nil {
			return nil, err
		}
	}
	return positional, nil
}

// flagName matches a flag as the flag package writes it in errors: -name.
var flagName = regexp.MustCompile(`(^|[\s:])-([a-z][a-z0-9-]*)`)

// dashed rewrites the flag package's "-name" into the "--name" users type.
func dashed(msg string) string { return flagName.ReplaceAllString(msg, "$1--$2") }

// parseNoArgs parses a command that takes flags only.
func parseNoArgs(fs *flagSet, args []string) error {
	rest, err := fs.parse(args)
	if err == nil && len(rest) > 0 {
		err = usageError("unexpected arguments %q", rest)
	}
	return err
}

// envName is the environment variable that may set flag name.
func envName(name string) string {
	return "REGENT_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// applyEnv sets every flag not given on the command line from its
// environment variable, when that is set.
func (f *flagSet) applyEnv() error {
	var err error
	f.VisitAll(func(fl *flag.Flag) {
		if f.typed[fl.Name] || err != nil {
			return
		}
		key := envName(fl.Name)
		if v := f.env.getenv(key); v != "" {
			if setErr := f.Set(fl.Name, v); setErr != nil {
				err = usageError("%s=%q (for --%s): %v", key, v, fl.Name, setErr)
			}
		}
	})
	return err
}

// printHelp writes the synopsis and the flags, each with its default and,
// for commands that read the environment, its variable.
func (f *flagSet) printHelp() {
	w := f.env.stdout
	fmt.Fprintf(w, "Usage: regent %s\n\nFlags:\n", f.synopsis)
	f.VisitAll(func(fl *flag.Flag) {
		kind, usage := flag.UnquoteUsage(fl)
		line := "  --" + fl.Name
		if kind != "" {
			line += " " + strings.ToUpper(kind)
		}
		text := usage
		if fl.DefValue != "" && fl.DefValue != "0" && fl.DefValue != "false" && fl.DefValue != "0s" {
			text += fmt.Sprintf(" (default %s)", fl.DefValue)
		}
		if f.fromEnv {
			text += fmt.Sprintf(" [$%s]", envName(fl.Name))
		}
		fmt.Fprintf(w, "%s\n        %s\n", line, text)
	})
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
