package main

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/onnxpart/onnxpart"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/partition"
	"github.com/onnxpart/onnxpart/profile"
	"github.com/onnxpart/onnxpart/verify"
)

// exitCode is the one map from every package's error types to the documented exit codes,
// through any wrapping.
func TestExitCodeMap(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("planning: %w", err) }
	cases := []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{errors.New("bad model"), exitBadInput},
		{&ingest.Error{}, exitBadInput},
		{&ingest.UsageError{}, exitUsage},
		{&profile.UsageError{}, exitUsage},
		{&onnxpart.UsageError{Msg: "-k 0"}, exitUsage},
		{&emit.CutError{}, exitUsage},
		{&emit.StageCountError{}, exitUsage},
		{&onnxpart.InfeasibleError{Msg: "too big"}, exitInfeasible},
		{&partition.InfeasibleError{}, exitInfeasible},
		{&onnxpart.NoPlanError{Msg: "none"}, exitNoPlan},
		{&partition.NoPlanError{}, exitNoPlan},
		{&verify.MismatchError{Report: &verify.Report{}}, exitMismatch},
		{context.Canceled, exitInterrupted},
		{usageErrorf("x"), exitUsage},
		{inputErrorf("x"), exitBadInput},
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
