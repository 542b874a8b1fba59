// Command onnxpart splits an ONNX model across devices: it writes runnable per-stage ONNX
// files, a manifest, and a certificate (a proven lower bound) of the plan's quality.
//
// This file is the thin flag layer: each subcommand lives in its own file and registers
// itself; the work is done by the phase packages (ingest, profile, fusion, partition,
// schedule, emit).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/internal/typo"
)

// Exit codes (documented in --help and the README).
const (
	exitOK          = 0
	exitBadInput    = 1
	exitUsage       = 2
	exitInfeasible  = 3
	exitMismatch    = 4
	exitNoPlan      = 5
	exitInterrupted = 130
)

// command is one subcommand.
type command struct {
	name    string
	summary string // one line for the command list
	usage   string // "onnxpart NAME [flags] ARGS" plus examples
	// run parses its own flags from args and does the work.
	run func(ctx context.Context, env *env, args []string) error
	// flags, when set, defines the command's flags on fs without parsing (the top-level
	// help lists the main command's).
	flags func(fs *pflag.FlagSet)
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// env carries the process's streams so that tests can run commands in-process.
type env struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	// isTTY reports whether stderr is a terminal (live progress lines).
	isTTY bool
}

// exitCode maps an error to the documented exit codes: diag.ExitCode, the one map (usage 2,
// infeasible 3, mismatch 4, no plan 5, interrupted 130, anything else 1).
func exitCode(err error) int { return diag.ExitCode(err) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fi, _ := os.Stderr.Stat()
	e := &env{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin,
		isTTY: fi != nil && fi.Mode()&os.ModeCharDevice != 0}
	os.Exit(run(ctx, e, os.Args[1:]))
}

// run dispatches to a subcommand and turns its error into one line on stderr and an exit code.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 && args[0] == "help" {
			if c, ok := commands[args[1]]; ok {
				fmt.Fprint(e.stdout, c.usage)
				return exitOK
			}
			fmt.Fprintf(e.stderr, "onnxpart: %v\n", unknownCommand(args[1], ""))
			return exitUsage
		}
		printHelp(e.stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "--version" || args[0] == "version" {
		fmt.Fprintln(e.stdout, "onnxpart", version)
		return exitOK
	}
	c, ok := commands[args[0]]
	rest := args[1:]
	// Errors are prefixed with the command the user typed: "onnxpart" for the main
	// command given as onnxpart MODEL.onnx …, "onnxpart run" where run was typed.
	prefix := "onnxpart " + args[0]
	if !ok {
		prefix = "onnxpart"
		if err := mainCommandArg(args[0]); err != nil {
			fmt.Fprintf(e.stderr, "onnxpart: %v\n", err)
			return exitUsage
		}
		// `onnxpart MODEL.onnx …`, or its flags first, is the main job.
		c, rest = commands["run"], args
		if c == nil {
			fmt.Fprintln(e.stderr, "onnxpart: the main command is not available in this build")
			return exitUsage
		}
	}
	err := c.run(ctx, e, rest)
	if err == nil {
		return exitOK
	}
	if errors.Is(err, pflag.ErrHelp) {
		return exitOK
	}
	code := exitCode(err)
	if ctx.Err() != nil && code != exitMismatch {
		code = exitInterrupted
	}
	fmt.Fprintf(e.stderr, "%s: %v\n", prefix, err)
	return code
}

// mainCommandArg checks the first argument when it names no command: a flag (the main
// command's flags may come before the model) or a model file; anything else is a command
// misspelt, with a suggestion when one is close.
func mainCommandArg(a string) error {
	if strings.HasPrefix(a, "-") || strings.HasSuffix(strings.ToLower(a), ".onnx") {
		return nil
	}
	if _, err := os.Stat(a); err == nil {
		return nil
	}
	return unknownCommand(a, ", and no model file of that name")
}

// unknownCommand words a command name that is not one, with "did you mean" when one is
// close; why says more when nothing is.
func unknownCommand(a, why string) error {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	if s := suggest(a, names); s != "" {
		return fmt.Errorf("unknown command %q; did you mean %s? (see onnxpart --help)", a, s)
	}
	return fmt.Errorf("unknown command %q%s (see onnxpart --help)", a, why)
}

// version names this build: the module version the go command stamped (a release tag, or a
// pseudo-version from the VCS commit, "+dirty" for a modified tree), else the VCS revision,
// else "dev" (go test, go run of a tree without VCS).
var version = buildVersion(debug.ReadBuildInfo())

func buildVersion(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, modified := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified {
		rev += "+dirty"
	}
	return "devel-" + rev
}

func printHelp(w io.Writer) {
	fmt.Fprint(w, `onnxpart splits an ONNX model across devices and tells you how far the split is from the
best possible one.

Usage:
  onnxpart MODEL.onnx --devices auto|SPEC|FILE [flags]   plan, emit stage files, report
  onnxpart COMMAND [flags] ARGS

Commands:
`)
	names := make([]string, 0, len(commands))
	for n := range commands {
		if n != "run" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	if c := commands["run"]; c != nil && c.flags != nil {
		fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
		fs.SortFlags = false
		c.flags(fs)
		fmt.Fprint(w, "\nFlags of the main command (onnxpart MODEL.onnx …; onnxpart run --help for more):\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	fmt.Fprint(w, `
Run 'onnxpart help COMMAND' or 'onnxpart COMMAND --help' for a command's flags and examples.

Exit codes:
  0 ok, 1 bad input, 2 bad usage, 3 infeasible (the model cannot fit the devices),
  4 verification mismatch, 5 no plan found within the limits (not proved infeasible),
  130 interrupted
`)
}

// newFlags makes a GNU-style flag set for a subcommand whose --help prints usage.
func newFlags(e *env, c *command) *pflag.FlagSet {
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprint(e.stdout, c.usage)
		fmt.Fprintln(e.stdout, "\nFlags:")
		fs.SetOutput(e.stdout)
		fs.PrintDefaults()
		fs.SetOutput(e.stderr)
	}
	return fs
}

// parseFlags parses args, turning flag errors into usage errors that point to the
// command's help, with a suggestion for an unknown flag close to a known one.
func parseFlags(fs *pflag.FlagSet, args []string) error {
	err := fs.Parse(args)
	var ne *pflag.NotExistError
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return err
	case errors.As(err, &ne):
		return diag.Usage("%s", unknownFlag(fs, ne))
	}
	return diag.Usage("%v (see %s)", err, helpCommand(fs))
}

// helpCommand is how to get the help of the command a flag set belongs to.
func helpCommand(fs *pflag.FlagSet) string {
	if fs.Name() == "run" {
		return "onnxpart --help"
	}
	return "onnxpart " + fs.Name() + " --help"
}

// notTaken says why a subcommand does not take a flag the main command takes.
var notTaken = map[string]map[string]string{
	"split": {"time-limit": "it does not search", "objective": "it cuts equal-FLOP stages"},
}

// unknownFlag words an unknown flag, with "did you mean" when a known flag is close: a long
// flag misspelt (--devics), or one given with a single dash (-devices, which pflag reads as
// shorthands).
func unknownFlag(fs *pflag.FlagSet, ne *pflag.NotExistError) string {
	var names []string
	short := ""
	name, group := ne.GetSpecifiedName(), ne.GetSpecifiedShortnames()
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
			if f.Shorthand != "" && f.Shorthand == name && group == "" {
				short = "-" + f.Shorthand // --k for -k
			}
		}
	})
	given, word := "--"+name, name
	if group != "" {
		given, word = "-"+group, group
	}
	word, _, _ = strings.Cut(word, "=")
	if why, ok := notTaken[fs.Name()][word]; ok && group == "" {
		return fmt.Sprintf("%s takes no %s: %s (see %s)", fs.Name(), given, why, helpCommand(fs))
	}
	if s := suggest(word, names); s != "" {
		short = "--" + s
	}
	if short != "" {
		return fmt.Sprintf("unknown flag %s; did you mean %s? (see %s)", given, short, helpCommand(fs))
	}
	if group != "" && len(group) > 1 {
		given = fmt.Sprintf("-%s in -%s", name, group)
	}
	return fmt.Sprintf("unknown flag %s (see %s)", given, helpCommand(fs))
}

// suggest returns the candidate closest to word when it is close enough to be a
// misspelling (at most 2 edits, fewer than a third of the word) or word starts it (at least
// 3 letters), else "". Ties go to the first in sorted order.
func suggest(word string, candidates []string) string {
	sort.Strings(candidates)
	best, bestD := "", 3
	for _, c := range candidates {
		d := typo.Distance(strings.ToLower(word), c)
		if d < bestD && 3*d <= len(word) {
			best, bestD = c, d
		}
	}
	if best == "" && len(word) >= 3 {
		for _, c := range candidates {
			if strings.HasPrefix(c, word) {
				return c
			}
		}
	}
	return best
}

// inputShapeHelp describes --input-shape, which every command that loads a model takes.
const inputShapeHelp = "bind every dimension of an input, unnamed ones included, NAME=1x3x224x224 (repeatable)"
