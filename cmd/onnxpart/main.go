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
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"onnxpart/ingest"
)

// Exit codes (documented in --help and the README).
const (
	exitOK          = 0
	exitBadInput    = 1
	exitUsage       = 2
	exitInfeasible  = 3
	exitMismatch    = 4
	exitInterrupted = 130
)

// command is one subcommand.
type command struct {
	name    string
	summary string // one line for the command list
	usage   string // "onnxpart NAME [flags] ARGS" plus examples
	// run parses its own flags from args and does the work.
	run func(ctx context.Context, env *env, args []string) error
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

// exitError carries an exit code with the message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

func inputErrorf(format string, a ...any) error {
	return &exitError{code: exitBadInput, err: fmt.Errorf(format, a...)}
}

// exitCode maps an error to the documented exit code.
func exitCode(err error) int {
	var ee *exitError
	var ue *ingest.UsageError
	var ie *ingest.Error
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &ie):
		return exitBadInput
	}
	return exitBadInput
}

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
	if !ok {
		if strings.HasPrefix(args[0], "-") || !strings.HasSuffix(strings.ToLower(args[0]), ".onnx") {
			if _, err := os.Stat(args[0]); err != nil || strings.HasPrefix(args[0], "-") {
				fmt.Fprintf(e.stderr, "onnxpart: unknown command %q (see onnxpart --help)\n", args[0])
				return exitUsage
			}
		}
		// `onnxpart MODEL.onnx …` is the main job.
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
	fmt.Fprintf(e.stderr, "onnxpart %s: %v\n", c.name, err)
	return code
}

var version = "dev"

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
	fmt.Fprint(w, `
Run 'onnxpart help COMMAND' or 'onnxpart COMMAND --help' for a command's flags and examples.

Exit codes:
  0 ok, 1 bad input, 2 bad usage, 3 infeasible (the model cannot fit the devices),
  4 verification mismatch, 130 interrupted
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

// parseFlags parses args, turning flag errors into usage errors.
func parseFlags(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageErrorf("%v", err)
	}
	return nil
}

// parseDims turns --dim name=value flags into bindings.
func parseDims(list []string) (map[string]int64, error) {
	if len(list) == 0 {
		return nil, nil
	}
	out := map[string]int64{}
	for _, s := range list {
		name, val, ok := strings.Cut(s, "=")
		var v int64
		if ok {
			_, err := fmt.Sscanf(val, "%d", &v)
			ok = err == nil && fmt.Sprint(v) == val
		}
		if !ok || name == "" {
			return nil, usageErrorf("--dim %q: want NAME=SIZE, e.g. --dim batch=4", s)
		}
		out[name] = v
	}
	return out, nil
}
