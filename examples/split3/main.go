// Command split3 is a small program that uses onnxpart as a library, through its public
// packages only: it loads an ONNX model, splits it into pipeline stages of about equal
// FLOPs, writes the stage files and manifest.json, and checks in ONNX Runtime that the
// chain of stages computes exactly what the model computes.
//
//	go run ./examples/split3 -model testdata/models/resnet50_small.onnx
//
// Exit status: 0 when every output is bit-exact, 4 when an output differs, 1 on any other
// error (as `onnxpart verify`). ONNX Runtime is loaded from ONNXPART_ORT_LIB, or from the
// cache `make deps` fills.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/verify"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("split3", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "testdata/models/resnet50_small.onnx", "the ONNX model to split")
	stages := fs.Int("stages", 3, "number of stages")
	out := fs.String("o", "", "output directory (default: a temporary directory, removed at the end)")
	runs := fs.Int("runs", 2, "input sets to verify with")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "split3:", err)
		return 1
	}

	// 1. Load: the graph with every tensor's shape and every node's FLOPs.
	m, err := ingest.Load(*model, ingest.Options{})
	if err != nil {
		return fail(err)
	}
	// 2. Assign: a stage per node, cutting the topological order at equal FLOPs.
	stage, err := emit.EqualFLOPs(m.Graph, *stages)
	if err != nil {
		return fail(err)
	}
	// 3. Write: stage<i>.onnx and manifest.json, atomically.
	dir := *out
	if dir == "" {
		tmp, err := os.MkdirTemp("", "split3-")
		if err != nil {
			return fail(err)
		}
		defer os.RemoveAll(tmp)
		dir = filepath.Join(tmp, "stages")
	}
	a := &emit.Assignment{Stage: stage, Split: emit.SplitInfo{Method: "stages", RequestedStages: *stages}}
	man, err := emit.Write(m, a, dir, emit.Options{})
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(stdout, "%s: %d nodes, %d FLOPs, %d stages\n", man.Model.File, man.Model.Nodes, man.Model.FLOPs, len(man.Stages))
	for _, st := range man.Stages {
		fmt.Fprintf(stdout, "  %s  %3d nodes  %10d FLOPs  %d inputs  %d outputs\n", st.File, len(st.Nodes), st.FLOPs, len(st.Inputs), len(st.Outputs))
	}
	// 4. Verify: the original model and the chain of stages on the same seeded inputs,
	// with graph optimizations off, so every output must be bit for bit the same.
	rep, err := verify.Run(context.Background(), dir, verify.Options{Runs: *runs, Seed: 1})
	if err != nil {
		return fail(err)
	}
	for _, o := range rep.Outputs {
		verdict := "bit-exact"
		if !o.Pass {
			verdict = fmt.Sprintf("DIFFERS (max abs %g, %d of %d elements) %s", o.MaxAbs, o.Differing, o.Elements, o.Problem)
		}
		fmt.Fprintf(stdout, "  output %s %s %v: %s\n", o.Name, o.DType, o.Shape, verdict)
	}
	if !rep.Pass {
		fmt.Fprintln(stdout, "FAIL: the stages do not reproduce the model")
		return 4
	}
	fmt.Fprintf(stdout, "PASS: %d runs, every output bit-exact\n", rep.Runs)
	return 0
}
