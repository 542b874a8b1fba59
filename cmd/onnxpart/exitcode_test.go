package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/graph/dag"
	"github.com/onnxpart/onnxpart/verify"
)

// exitCode is the one map from every package's errors to the documented exit codes, through
// any wrapping: diag's kinds (the output side's errors among them: emit's, verify's,
// deploy/triton's) and graph/dag's CycleError.
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
		{cutErr(t), exitUsage},
		{stageCountErr(t), exitUsage},
		{diag.Infeasible("too big"), exitInfeasible},
		{diag.NoPlan("none"), exitNoPlan},
		{verify.MismatchOf(&verify.Report{}), exitMismatch},
		{diag.Mismatch("differs"), exitMismatch},
		{assignmentErr(t), exitBadInput},
		{graph.StageCycle([]int{0, 1}, []string{"a", "b"}), exitBadInput},
		{&dag.CycleError{Nodes: []string{"a", "b"}}, exitBadInput},
		{context.Canceled, exitInterrupted},
		{diag.Interrupted("stopped"), exitInterrupted},
		// The outermost kind wins over the kinds inside.
		{diag.Input("%w", cutErr(t)), exitBadInput},
		{diag.Usage("%w", assignmentErr(t)), exitUsage},
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

// cutErr is emit's error for a --cut the model does not allow.
func cutErr(t *testing.T) error {
	_, err := emit.CutAfter(tinyGraph(t), []string{"nope"})
	if err == nil {
		t.Fatal("CutAfter accepted an unknown tensor")
	}
	return err
}

// stageCountErr is emit's error for a stage count the model does not allow.
func stageCountErr(t *testing.T) error {
	_, err := emit.EqualFLOPs(tinyGraph(t), 5)
	if err == nil {
		t.Fatal("EqualFLOPs cut one node into 5 stages")
	}
	return err
}

// assignmentErr is emit's error for a bad assignment file.
func assignmentErr(t *testing.T) error {
	_, err := emit.ReadAssignment(strings.NewReader("[]"), tinyGraph(t))
	if err == nil {
		t.Fatal("ReadAssignment accepted a JSON array")
	}
	return err
}

func tinyGraph(t *testing.T) *graph.Graph {
	b := graph.NewBuilder("g")
	b.AddInput("x")
	b.AddNode("relu", "Relu", "", []string{"x"}, []string{"y"}, nil, nil)
	b.AddOutput("y")
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}
