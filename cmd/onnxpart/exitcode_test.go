package main

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph/dag"
	"github.com/onnxpart/onnxpart/verify"
)

// exitCode is the one map from every package's errors to the documented exit codes, through
// any wrapping: diag's kinds, graph/dag's CycleError, and (until emit returns *diag.Error)
// emit's own error types.
func TestExitCodeMap(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("planning: %w", err) }
	cases := []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{errors.New("bad model"), exitBadInput},
		{diag.Input("m.onnx: not an ONNX model"), exitBadInput},
		{diag.Internal("a bug"), exitBadInput},
		{diag.Usage("--dim x=-1"), exitUsage},
		{&emit.CutError{}, exitUsage},
		{&emit.StageCountError{}, exitUsage},
		{diag.Infeasible("too big"), exitInfeasible},
		{diag.NoPlan("none"), exitNoPlan},
		{&verify.MismatchError{Report: &verify.Report{}}, exitMismatch},
		{diag.Mismatch("differs"), exitMismatch},
		{&emit.WriteError{}, exitBadInput},
		{&dag.CycleError{Nodes: []string{"a", "b"}}, exitBadInput},
		{context.Canceled, exitInterrupted},
		{diag.Interrupted("stopped"), exitInterrupted},
		// The outermost kind wins over emit's types inside.
		{diag.Input("%w", &emit.CutError{}), exitBadInput},
		{diag.Usage("%w", &emit.WriteError{}), exitUsage},
	}
	for _, c := range cases {
		for _, err := range []error{c.err, wrap(c.err)} {
			if c.err == nil && err != nil {
				continue
			}
			if got := exitCode(err); got != c.want {
				t.Errorf("%T (%v): exit %d, want %d", c.err, err, got, c.want)
			}
		}
	}
}
