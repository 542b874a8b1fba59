package verify

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/llamagen"
	"github.com/onnxpart/onnxpart/internal/testmodel"
	"github.com/onnxpart/onnxpart/onnxpb"
	"github.com/onnxpart/onnxpart/verify/npy"
)

// TestVerifyToleranceFor: with optimizations the tolerance follows the output's type,
// integers and bools stay exact, a given tolerance applies to every float type, and
// without optimizations everything is exact.
func TestVerifyToleranceFor(t *testing.T) {
	for _, c := range []struct {
		dt       graph.DType
		optimize bool
		given    float64
		want     float64
	}{
		{graph.Float, true, 0, 1e-4},
		{graph.Double, true, 0, 1e-4},
		{graph.Float16, true, 0, 1e-2},
		{graph.BFloat16, true, 0, 8e-2},
		{graph.Int64, true, 0, 0},
		{graph.Bool, true, 0, 0},
		{graph.Float16, true, 1e-3, 1e-3},
		{graph.Float, true, 1e-3, 1e-3},
		{graph.Int32, true, 1e-3, 0},
		{graph.Float16, false, 0, 0},
		{graph.Float, false, 1e-3, 0},
	} {
		if got := toleranceFor(c.dt, c.optimize, c.given); got != c.want {
			t.Errorf("toleranceFor(%s, optimize %v, given %g) = %g, want %g", c.dt, c.optimize, c.given, got, c.want)
		}
	}
}

// splitLlama writes the llamagen model c split in two at a decode step.
func splitLlama(t *testing.T, c llamagen.Config) string {
	t.Helper()
	return splitLlamaAt(t, c, map[string]int64{"batch": 1, "past": 4, "seq": 1})
}

// splitLlamaAt writes the llamagen model c split in two equal-FLOP stages planned at dims.
func splitLlamaAt(t *testing.T, c llamagen.Config, dims map[string]int64) string {
	t.Helper()
	p, err := llamagen.Write(t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ingest.Load(p, ingest.Options{Dims: dims})
	if err != nil {
		t.Fatal(err)
	}
	stage, err := emit.EqualFLOPs(m.Graph, 2)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if _, err := emit.Write(m, &emit.Assignment{Stage: stage}, dir, emit.Options{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestVerifyFloat16Tolerance: a float16 decoder split in two verifies with all
// optimizations under the default tolerance, which is float16's for every float16 output
// (the KV cache) and 1e-4 for its float32 logits, reported per output; a float32 model
// keeps 1e-4; a given tolerance applies to all.
func TestVerifyFloat16Tolerance(t *testing.T) {
	needORT(t)
	ctx := context.Background()
	c := llamagen.Tiny
	c.DType = graph.Float16
	dir := splitLlama(t, c)
	rep, err := Run(ctx, dir, Options{Optimize: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass {
		t.Fatalf("float16 with --opt all: %v", MismatchOf(rep).Error())
	}
	if rep.Tolerance != Float16Tolerance {
		t.Errorf("report tolerance %g, want %g", rep.Tolerance, Float16Tolerance)
	}
	// The KV cache is float16; llamagen casts the logits to float32 at the end, so they
	// carry float16's rounding and get its tolerance too (computedTolerance).
	half := 0
	for _, o := range rep.Outputs {
		if o.Tolerance != Float16Tolerance {
			t.Errorf("%s (%s): tolerance %g, want %g: every output is computed in float16", o.Name, o.DType, o.Tolerance, Float16Tolerance)
		}
		if o.DType == "float16" {
			half++
		}
	}
	if half == 0 {
		t.Errorf("no float16 output: %+v", rep.Outputs)
	}
	worst := 0.0
	for _, o := range rep.Outputs {
		if o.DType == "float16" {
			worst = max(worst, o.MaxRel)
		}
	}
	t.Logf("float16 outputs: max rel %.3g (float32's 1e-4 would %s)", worst, map[bool]string{true: "fail", false: "pass"}[worst > DefaultTolerance])
	// Without optimizations it stays bit-exact, and the report says so.
	rep, err = Run(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass || rep.Tolerance != 0 || rep.Outputs[0].Tolerance != 0 || !rep.Outputs[0].BitExact {
		t.Errorf("float16 without optimizations: pass %v, tolerance %g, %+v", rep.Pass, rep.Tolerance, rep.Outputs[0])
	}
	// A given tolerance holds every output to it.
	rep, err = Run(ctx, dir, Options{Optimize: true, Tolerance: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range rep.Outputs {
		if o.Tolerance != 0.5 {
			t.Errorf("%s: tolerance %g with 0.5 given", o.Name, o.Tolerance)
		}
	}

	dir = splitLlama(t, llamagen.Tiny)
	rep, err = Run(ctx, dir, Options{Optimize: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass || rep.Tolerance != DefaultTolerance {
		t.Errorf("float32: pass %v, tolerance %g", rep.Pass, rep.Tolerance)
	}
	for _, o := range rep.Outputs {
		if o.DType == "float32" && o.Tolerance != DefaultTolerance {
			t.Errorf("float32 %s: tolerance %g, want %g", o.Name, o.Tolerance, DefaultTolerance)
		}
	}
}

// computedTolerance follows the least precise float type on an output's way: a float32
// output cast up from float16 gets float16's tolerance, an integer path adds nothing.
func TestComputedTolerance(t *testing.T) {
	b := graph.NewBuilder("mixed")
	b.AddInput("x")
	b.AddInput("ids")
	b.AddNode("down", "Cast", "", []string{"x"}, []string{"h"}, nil, nil)
	b.AddNode("up", "Cast", "", []string{"h"}, []string{"y"}, nil, nil)
	b.AddNode("relu", "Relu", "", []string{"x"}, []string{"z"}, nil, nil)
	b.AddNode("n", "Neg", "", []string{"ids"}, []string{"k"}, nil, nil)
	for _, o := range []string{"y", "z", "k"} {
		b.AddOutput(o)
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for name, dt := range map[string]graph.DType{"x": graph.Float, "h": graph.Float16, "y": graph.Float, "z": graph.Float, "ids": graph.Int64, "k": graph.Int64} {
		id, _ := g.TensorByName(name)
		g.Tensors[id].DType = dt
	}
	for name, want := range map[string]float64{"y": Float16Tolerance, "z": DefaultTolerance, "k": 0} {
		id, _ := g.TensorByName(name)
		if got := computedTolerance(g, id); got != want {
			t.Errorf("%s: %g, want %g", name, got, want)
		}
	}
}

// TestVerifyUnnamedDims: an input whose dimensions have no names cannot be sized by --dim;
// the error says how to feed it (--input-shape, --input), and both ways verify.
func TestVerifyUnnamedDims(t *testing.T) {
	needORT(t)
	mp := &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: testmodel.Opsets(), Graph: &onnxpb.GraphProto{
		Name:   proto.String("unnamed"),
		Input:  []*onnxpb.ValueInfoProto{testmodel.VInfo("x", graph.Float, nil, nil)},
		Output: []*onnxpb.ValueInfoProto{testmodel.VInfo("y", graph.Float, nil, nil)},
		Node: []*onnxpb.NodeProto{
			testmodel.Node("Relu", "relu", []string{"x"}, []string{"a"}),
			testmodel.Node("Sigmoid", "sigmoid", []string{"a"}, []string{"y"}),
		},
	}}
	p := testmodel.WriteModel(t, mp)
	m := testmodel.LoadPath(t, p)
	stage, err := emit.CutAfter(m.Graph, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if _, err := emit.Write(m, &emit.Assignment{Stage: stage}, dir, emit.Options{}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A Go caller reads the options' fields; the command passes its flags' names.
	_, err = Run(ctx, dir, Options{})
	if !isKind(err, diag.KindUsage) {
		t.Fatalf("got %v, want a usage error", err)
	}
	for _, want := range []string{`input "x" has shape [?,?]`, `Options.InputShapes["x"] = 1x1`, `Options.Inputs["x"] = FILE.npy`, `Options.Dims["NAME"] = SIZE`} {
		if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "--") {
			t.Errorf("error %q lacks %q (or names a flag)", err, want)
		}
	}
	flags := diag.Names{"Inputs": "--input", "InputShapes": "--input-shape", "Dims": "--dim"}
	_, err = Run(ctx, dir, Options{Names: flags})
	for _, want := range []string{`input "x" has shape [?,?]`, "--input-shape x=1x1", "--input x=FILE.npy", "--dim NAME=SIZE"} {
		if !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	rep, err := Run(ctx, dir, Options{InputShapes: map[string][]int64{"x": {2, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass || len(rep.Inputs) != 1 || !slices.Equal(rep.Inputs[0].Shape, []int64{2, 3}) || !slices.Equal(rep.Outputs[0].Shape, []int64{2, 3}) {
		t.Errorf("--input-shape x=2x3: pass %v, inputs %+v, outputs %+v", rep.Pass, rep.Inputs, rep.Outputs)
	}
	f := filepath.Join(t.TempDir(), "x.npy")
	w, err := os.Create(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := npy.Write(w, &npy.Array{DType: graph.Float, Shape: []int64{3, 1}, Data: make([]byte, 12)}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	rep, err = Run(ctx, dir, Options{Inputs: map[string]string{"x": f}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass || !slices.Equal(rep.Outputs[0].Shape, []int64{3, 1}) {
		t.Errorf("--input x=x.npy: pass %v, outputs %+v", rep.Pass, rep.Outputs)
	}
}
