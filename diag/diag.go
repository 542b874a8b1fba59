// Package diag is onnxpart's one error type. Every package reports a failure the user can act
// on as a *Error: what kind of failure it is (Kind, which also fixes the command's exit code),
// what it is about (a Subject: the file, node, tensor, device, stage, flag, option or
// dimension the message names), the message itself, optional notes, and optionally the error
// that caused it.
//
// Errors are built with a constructor per kind, which formats like fmt.Errorf (a %w verb
// wraps its operand as the cause), and refined with methods that return the same error:
//
//	return diag.Usage("--dim %s=%d: a dimension cannot be negative", name, v).About(diag.Dim, name)
//	return diag.Input("reading the weights: %w", err).About(diag.File, path)
//	return diag.Infeasible("node %s fits no device", n).About(diag.Node, n).Note("largest cap: %s", c)
//
// ExitCode is the one map from any error to the exit codes onnxpart documents: 0 ok, 1 bad
// input, 2 bad usage, 3 infeasible (proved), 4 verification mismatch, 5 no plan found within
// the limits, 130 interrupted. An error type of its own that should map to a kind (such as
// graph/dag's CycleError) gets a method DiagKind() Kind; ExitCode finds it anywhere in the
// chain, as it finds a *Error.
//
// diag imports nothing of onnxpart, so that every package can use it.
package diag

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Kind is what kind of failure an error is; it fixes the exit code.
type Kind uint8

const (
	// KindInternal is a bug in onnxpart (and the zero Kind). Exit code 1.
	KindInternal Kind = iota
	// KindInput is bad input: the model, a spec or input file, the output directory. Exit code 1.
	KindInput
	// KindUsage is a bad flag or a bad combination of options, or a value the model or the
	// devices do not allow. Exit code 2.
	KindUsage
	// KindInfeasible is proved infeasibility: the model cannot fit the devices. Exit code 3.
	KindInfeasible
	// KindMismatch is a verification that found outputs that differ. Exit code 4.
	KindMismatch
	// KindNoPlan is no plan found within the limits, while nothing proved that none exists
	// (compare KindInfeasible). Exit code 5.
	KindNoPlan
	// KindInterrupted is a run stopped by Ctrl-C or a cancelled context. Exit code 130.
	KindInterrupted
)

var kindNames = [...]string{
	KindInternal:    "internal",
	KindInput:       "input",
	KindUsage:       "usage",
	KindInfeasible:  "infeasible",
	KindMismatch:    "mismatch",
	KindNoPlan:      "no-plan",
	KindInterrupted: "interrupted",
}

var exitCodes = [...]int{
	KindInternal:    1,
	KindInput:       1,
	KindUsage:       2,
	KindInfeasible:  3,
	KindMismatch:    4,
	KindNoPlan:      5,
	KindInterrupted: 130,
}

// String returns the kind's name: "usage", "no-plan", ….
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// ExitCode returns the documented exit code of the kind (1 for a kind it does not know).
func (k Kind) ExitCode() int {
	if int(k) < len(exitCodes) {
		return exitCodes[k]
	}
	return 1
}

// SubjectKind is what a Subject is.
type SubjectKind uint8

const (
	// None: the error is about nothing in particular.
	None SubjectKind = iota
	// File is a file or directory, by path.
	File
	// Node is a node of the model, by its label.
	Node
	// Tensor is a tensor of the model (an input, an output, a weight), by name.
	Tensor
	// Device is a device, by name.
	Device
	// Stage is a pipeline stage, by number.
	Stage
	// Flag is a command-line flag, with its dashes ("--dim").
	Flag
	// Dim is a symbolic dimension of the model, by name.
	Dim
	// Option is an option of a library call, by the name its caller knows it by: the Go
	// field ("Options.GPUIDs"), or the flag the command set it from ("--gpu-ids").
	Option
)

var subjectNames = [...]string{None: "", File: "file", Node: "node", Tensor: "tensor", Device: "device", Stage: "stage", Flag: "flag", Dim: "dim", Option: "option"}

// String returns the subject kind's name: "file", "node", ….
func (s SubjectKind) String() string {
	if int(s) < len(subjectNames) {
		return subjectNames[s]
	}
	return "SubjectKind(" + strconv.Itoa(int(s)) + ")"
}

// Subject is what an error is about.
type Subject struct {
	Kind SubjectKind
	Name string
	// Line is the 1-based line in a File subject (0: unknown or not a file).
	Line int
}

// Error is onnxpart's one error type.
type Error struct {
	Kind    Kind
	Subject Subject
	// Msg is the message, one line. Error() returns it, after "PATH:LINE: " for a File subject
	// (as compilers print); other subjects are named by the message's own words.
	Msg string
	// Notes are further lines a front end may print below the message.
	Notes []string
	// Cause is the error this one wraps (nil: none); errors.Is and errors.As see it.
	Cause error
}

// New returns an error of kind k with the message fmt.Errorf(format, args...) would give; an
// operand of %w becomes the cause.
func New(k Kind, format string, args ...any) *Error {
	f := fmt.Errorf(format, args...)
	e := &Error{Kind: k, Msg: f.Error()}
	switch u := f.(type) {
	case interface{ Unwrap() error }:
		e.Cause = u.Unwrap()
	case interface{ Unwrap() []error }:
		e.Cause = f // several %w: keep them all reachable
	}
	return e
}

// Wrap returns an error of kind k whose message is err's and whose cause is err. err should
// not be nil (the message is then "<nil>", as fmt prints it; Wrap never returns a nil *Error,
// which would be a non-nil error).
func Wrap(k Kind, err error) *Error {
	if err == nil {
		return &Error{Kind: k, Msg: "<nil>"}
	}
	return &Error{Kind: k, Msg: err.Error(), Cause: err}
}

// Input is New(KindInput, …): bad input (the model, a spec or input file, the output directory).
func Input(format string, args ...any) *Error { return New(KindInput, format, args...) }

// Usage is New(KindUsage, …): a bad flag, a bad combination of options, a value the model or
// the devices do not allow.
func Usage(format string, args ...any) *Error { return New(KindUsage, format, args...) }

// Infeasible is New(KindInfeasible, …): proved infeasibility; the message says why.
func Infeasible(format string, args ...any) *Error { return New(KindInfeasible, format, args...) }

// NoPlan is New(KindNoPlan, …): no plan found within the limits, nothing proved.
func NoPlan(format string, args ...any) *Error { return New(KindNoPlan, format, args...) }

// Mismatch is New(KindMismatch, …): a verification found outputs that differ.
func Mismatch(format string, args ...any) *Error { return New(KindMismatch, format, args...) }

// Interrupted is New(KindInterrupted, …): the run was stopped.
func Interrupted(format string, args ...any) *Error { return New(KindInterrupted, format, args...) }

// Internal is New(KindInternal, …): a bug in onnxpart.
func Internal(format string, args ...any) *Error { return New(KindInternal, format, args...) }

// About sets the subject and returns e.
func (e *Error) About(k SubjectKind, name string) *Error {
	e.Subject = Subject{Kind: k, Name: name}
	return e
}

// AtLine sets the line of a File subject and returns e.
func (e *Error) AtLine(line int) *Error {
	e.Subject.Line = line
	return e
}

// Note adds a note, formatted as by fmt.Sprintf, and returns e.
func (e *Error) Note(format string, args ...any) *Error {
	e.Notes = append(e.Notes, fmt.Sprintf(format, args...))
	return e
}

// Wrap sets the cause and returns e.
func (e *Error) Wrap(cause error) *Error {
	e.Cause = cause
	return e
}

// Error returns the message, after "PATH: " or "PATH:LINE: " for a File subject.
func (e *Error) Error() string {
	if e.Subject.Kind != File || e.Subject.Name == "" {
		return e.Msg
	}
	if e.Subject.Line > 0 {
		return e.Subject.Name + ":" + strconv.Itoa(e.Subject.Line) + ": " + e.Msg
	}
	return e.Subject.Name + ": " + e.Msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// DiagKind returns e.Kind.
func (e *Error) DiagKind() Kind { return e.Kind }

// kinder is an error that says its kind: a *Error, or a type of its own such as graph/dag's
// CycleError.
type kinder interface {
	error
	DiagKind() Kind
}

// KindOf returns the kind of err: that of the first error in its chain with a DiagKind method
// (a *Error or a type of its own); else KindInterrupted when the chain holds context.Canceled;
// else KindInput (an error from outside onnxpart: a file system's, a parser's). KindOf(nil) is
// KindInternal; ExitCode(nil) is 0.
func KindOf(err error) Kind {
	var k kinder
	switch {
	case err == nil:
		return KindInternal
	case errors.As(err, &k):
		return k.DiagKind()
	case errors.Is(err, context.Canceled):
		return KindInterrupted
	}
	return KindInput
}

// ExitCode is the one map from errors to onnxpart's documented exit codes: 0 for nil, else
// KindOf(err).ExitCode().
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	return KindOf(err).ExitCode()
}

// Names are a caller's names for the options of a library call, by field ("MaxStages": "-k",
// "GPUIDs": "--gpu-ids"). A library's errors and notes name its options through them: the
// command passes its flags, so its users read what they typed; a Go caller passes none and
// reads the option as Go writes it ("Options.MaxStages = 8").
type Names map[string]string

// Say names the option field with its value (value "" names it alone).
func (n Names) Say(field, value string) string {
	if name, ok := n[field]; ok {
		if value == "" {
			return name
		}
		return name + " " + value
	}
	if value == "" {
		return "Options." + field
	}
	return "Options." + field + " = " + value
}

// Name is the option's name alone: Say(field, "").
func (n Names) Name(field string) string { return n.Say(field, "") }

// Or is the caller's name for field, else fallback: for what is no Go option field, such as
// a positional argument ("--devices", else "devices").
func (n Names) Or(field, fallback string) string {
	if name, ok := n[field]; ok {
		return name
	}
	return fallback
}

// SayKey names one entry of a map-valued option with its value ("--dim batch=4", or
// Options.Dims["batch"] = 4); value "" names the entry alone.
func (n Names) SayKey(field, key, value string) string {
	if name, ok := n[field]; ok {
		if value == "" {
			return name + " " + key
		}
		return name + " " + key + "=" + value
	}
	s := "Options." + field + "[" + strconv.Quote(key) + "]"
	if value != "" {
		s += " = " + value
	}
	return s
}
