package diag_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
)

// ownKind is an error type of its own that says its kind, as graph/dag's CycleError does.
type ownKind struct{}

func (ownKind) Error() string       { return "own" }
func (ownKind) DiagKind() diag.Kind { return diag.KindInfeasible }

func TestExitCode(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("planning: %w", err) }
	cases := []struct {
		name string
		err  error
		want int
		kind diag.Kind
	}{
		{"nil", nil, 0, diag.KindInternal},
		{"plain", errors.New("bad model"), 1, diag.KindInput},
		{"fs", fs.ErrNotExist, 1, diag.KindInput},
		{"input", diag.Input("x"), 1, diag.KindInput},
		{"internal", diag.Internal("x"), 1, diag.KindInternal},
		{"zero", &diag.Error{Msg: "x"}, 1, diag.KindInternal},
		{"usage", diag.Usage("-k %d: must be positive", 0), 2, diag.KindUsage},
		{"infeasible", diag.Infeasible("too big"), 3, diag.KindInfeasible},
		{"mismatch", diag.Mismatch("differs"), 4, diag.KindMismatch},
		{"no-plan", diag.NoPlan("none"), 5, diag.KindNoPlan},
		{"interrupted", diag.Interrupted("stopped"), 130, diag.KindInterrupted},
		{"canceled", context.Canceled, 130, diag.KindInterrupted},
		{"deadline", context.DeadlineExceeded, 1, diag.KindInput},
		{"own kind", ownKind{}, 3, diag.KindInfeasible},
		{"wrap", diag.Wrap(diag.KindUsage, errors.New("x")), 2, diag.KindUsage},
		{"unknown kind", diag.New(diag.Kind(200), "x"), 1, diag.Kind(200)},
		// The outermost kind wins: a usage error that wraps an infeasible one is usage.
		{"outermost", diag.Usage("-k 3: %w", diag.Infeasible("too big")), 2, diag.KindUsage},
		{"kind over canceled", diag.Input("reading: %w", context.Canceled), 1, diag.KindInput},
		{"own kind in a diag", diag.Wrap(diag.KindUsage, ownKind{}), 2, diag.KindUsage},
	}
	for _, c := range cases {
		for i, err := range []error{c.err, wrap(c.err)} {
			if c.err == nil && i > 0 {
				continue
			}
			if got := diag.ExitCode(err); got != c.want {
				t.Errorf("%s (%v): exit %d, want %d", c.name, err, got, c.want)
			}
			if got := diag.KindOf(err); got != c.kind {
				t.Errorf("%s (%v): kind %v, want %v", c.name, err, got, c.kind)
			}
		}
	}
}

func TestError(t *testing.T) {
	cause := fs.ErrPermission
	cases := []struct {
		name  string
		err   *diag.Error
		msg   string
		cause error
	}{
		{"plain", diag.Usage("-k %d: must be positive", 0), "-k 0: must be positive", nil},
		{"file", diag.Input("not an ONNX model").About(diag.File, "m.onnx"), "m.onnx: not an ONNX model", nil},
		{"file line", diag.Input("devices: missing").About(diag.File, "d.yaml").AtLine(3), "d.yaml:3: devices: missing", nil},
		{"file no name", diag.Input("empty").About(diag.File, ""), "empty", nil},
		{"node", diag.Infeasible("node %s fits no device", "a").About(diag.Node, "a"), "node a fits no device", nil},
		{"%w", diag.Input("reading: %w", cause).About(diag.File, "w.bin"), "w.bin: reading: permission denied", cause},
		{"Wrap", diag.NoPlan("none").Wrap(cause), "none", cause},
		{"notes", diag.NoPlan("none").Note("tried %s", "brkga").Note("tried dp"), "none", nil},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.msg {
			t.Errorf("%s: Error() = %q, want %q", c.name, got, c.msg)
		}
		if got := errors.Unwrap(c.err); got != c.cause {
			t.Errorf("%s: Unwrap() = %v, want %v", c.name, got, c.cause)
		}
		if c.cause != nil && !errors.Is(c.err, c.cause) {
			t.Errorf("%s: errors.Is does not find the cause", c.name)
		}
	}
	e := diag.NoPlan("none").Note("tried %s", "brkga").Note("tried dp").About(diag.Stage, "2")
	if len(e.Notes) != 2 || e.Notes[0] != "tried brkga" || e.Subject != (diag.Subject{Kind: diag.Stage, Name: "2"}) {
		t.Errorf("notes %q, subject %+v", e.Notes, e.Subject)
	}
	two := diag.Input("%w and %w", fs.ErrNotExist, fs.ErrExist)
	if !errors.Is(two, fs.ErrNotExist) || !errors.Is(two, fs.ErrExist) {
		t.Errorf("two %%w: causes not reachable")
	}
	if e := diag.Wrap(diag.KindInput, nil); e == nil || e.Error() != "<nil>" || e.Cause != nil {
		t.Errorf("Wrap(nil) = %#v", e)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[diag.Kind]string{diag.KindInternal: "internal", diag.KindInput: "input", diag.KindUsage: "usage",
		diag.KindInfeasible: "infeasible", diag.KindMismatch: "mismatch", diag.KindNoPlan: "no-plan", diag.KindInterrupted: "interrupted", diag.Kind(99): "Kind(99)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind %d: %q, want %q", k, got, want)
		}
	}
	for s, want := range map[diag.SubjectKind]string{diag.File: "file", diag.Node: "node", diag.Tensor: "tensor", diag.Device: "device",
		diag.Stage: "stage", diag.Flag: "flag", diag.Dim: "dim"} {
		if got := s.String(); got != want {
			t.Errorf("SubjectKind %d: %q, want %q", s, got, want)
		}
	}
}

// Names say an option as the caller knows it, or as a Go caller writes it.
func TestNames(t *testing.T) {
	flags := diag.Names{"K": "-k"}
	for _, tc := range []struct{ got, want string }{
		{flags.Say("K", "8"), "-k 8"},
		{flags.Name("K"), "-k"},
		{flags.Say("Batch", "4"), "Options.Batch = 4"},
		{diag.Names(nil).Name("GPUIDs"), "Options.GPUIDs"},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
}
