package onnxpart_test

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart"
	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/feeds"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/internal/testmodel"
	"github.com/onnxpart/onnxpart/onnxpb"
	"github.com/onnxpart/onnxpart/pipebench"
)

// TestBatchedStagesRunTheBatch (issue 40): a plan that prices a batch of N as batched kernels
// writes stage files that take that batch. resnet50_small fixes its input at [1,3,224,224];
// before the fix its batched plan's stage0.onnx took [1,...] only. Every route's chain is run
// in ONNX Runtime on the route's whole batch at once (distinct inputs) and each input's slice
// of every model output must equal the unmodified model's output for that input alone.
func TestBatchedStagesRunTheBatch(t *testing.T) {
	m, r, out := resnetBatch8(t)
	for i, rt := range r.Batch.Routes {
		dir := filepath.Join(out, onnxpart.RouteDir(i))
		man, err := emit.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range man.Stages {
			for _, ref := range append(append([]emit.TensorRef{}, st.Inputs...), st.Outputs...) {
				if len(ref.Shape) == 0 || ref.Shape[0].Param != "batch" {
					t.Fatalf("route %d %s: %s is %v, want a symbolic leading batch dim", i, st.File, ref.Name, graph.Shape(ref.Shape))
				}
			}
		}
		if err := ort.Init(); err != nil {
			t.Logf("ONNX Runtime not available (%v): the stages are not run", err)
			continue
		}
		checkChainAtBatch(t, m.Path, dir, man, rt.Inputs)
	}
}

// checkChainAtBatch runs the stage chain of man at batch n and the model once per input.
func checkChainAtBatch(t *testing.T, model, dir string, man *emit.Manifest, n int) {
	t.Helper()
	ins, outs, err := ort.ModelIO(model)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		if in.DType != graph.Float {
			t.Fatalf("input %s: %v, the test feeds float32", in.Name, in.DType)
		}
	}
	one, batch, err := feeds.Batch(int64(7+n), ins, n) // per input, and all
	if err != nil {
		t.Fatal(err)
	}
	var inNames, outNames []string
	for _, in := range ins {
		inNames = append(inNames, in.Name)
	}
	for _, o := range outs {
		outNames = append(outNames, o.Name)
	}
	ref, err := ort.NewSession(model, inNames, outNames, ort.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	values := batch
	for _, st := range man.Stages {
		var sin, sout []string
		feeds := map[string]*ort.Tensor{}
		for _, in := range st.Inputs {
			sin = append(sin, in.Name)
			feeds[in.Name] = values[in.Name]
		}
		for _, o := range st.Outputs {
			sout = append(sout, o.Name)
		}
		s, err := ort.NewSession(filepath.Join(dir, st.File), sin, sout, ort.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Run(feeds, nil)
		s.Close()
		if err != nil {
			t.Fatalf("%s at batch %d: %v", st.File, n, err)
		}
		for k, v := range got {
			values[k] = v
		}
	}
	for k := range n {
		want, err := ref.Run(one[k], nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range outNames {
			w, g := want[name], values[name]
			if g == nil || g.Shape[0] != int64(n) {
				t.Fatalf("output %s of the chain: %+v, want a leading batch of %d", name, g, n)
			}
			size := len(w.Data)
			slice := g.Data[k*size : (k+1)*size]
			for j := 0; j < size; j += 4 {
				a := math.Float32frombits(binary.LittleEndian.Uint32(w.Data[j:]))
				b := math.Float32frombits(binary.LittleEndian.Uint32(slice[j:]))
				if math.Abs(float64(a-b)) > 1e-4*(1+math.Abs(float64(a))) {
					t.Fatalf("output %s, input %d of %d, element %d: chain %g, model %g", name, k, n, j/4, b, a)
				}
			}
		}
	}
}

// TestBatchThroughPinningReshape: a Reshape to the constant shape [1,-1] pins the batch at 1
// (a fixed-batch export's flatten). The stage files make its leading 1 a 0 (copy the batch
// from the input), which is the same Reshape at batch 1; the plan says so, and the chain run
// at batch 4 in ONNX Runtime gives each input's output of the unmodified model. A graph that
// reduces over the batch cannot take one: --batch refuses with the reason, naming the
// output, before any plan.
func TestBatchThroughPinningReshape(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([]float32, 128*10)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	mp := &onnxpb.ModelProto{IrVersion: ptr(int64(8)), OpsetImport: testmodel.Opsets(), Graph: &onnxpb.GraphProto{
		Name:  ptr("pinned"),
		Input: []*onnxpb.ValueInfoProto{testmodel.VInfo("x", graph.Float, 1, 8, 4, 4)},
		Initializer: []*onnxpb.TensorProto{
			{Name: ptr("shape"), DataType: ptr(int32(onnxpb.TensorProto_INT64)), Dims: []int64{2}, Int64Data: []int64{1, -1}},
			testmodel.FloatTensor("w", []int64{128, 10}, w...),
		},
		Node: []*onnxpb.NodeProto{
			testmodel.Node("Relu", "relu", []string{"x"}, []string{"r"}),
			testmodel.Node("Reshape", "flat", []string{"r", "shape"}, []string{"f"}),
			testmodel.Node("MatMul", "fc", []string{"f", "w"}, []string{"y"}),
		},
		Output: []*onnxpb.ValueInfoProto{testmodel.VInfo("y", graph.Float, 1, 10)},
	}}
	path := testmodel.WriteModel(t, mp)
	m := testmodel.LoadPath(t, path)
	c, err := hw.Resolve(context.Background(), "2xT4", hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := onnxpart.Plan(context.Background(), m, c, onnxpart.Options{Batch: 4, MaxStages: 1, Seed: 1, Reproducible: true, TimeLimit: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	l, err := onnxpart.Prepare(m, r, emit.Options{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := l.WriteDir(out); err != nil {
		t.Fatal(err)
	}
	man, err := emit.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(diag.NoteStrings(man.Notes), "\n"), "Reshape shape constant(s) shape became 0") {
		t.Errorf("the notes do not say which constant changed: %q", man.Notes)
	}
	if err := ort.Init(); err == nil {
		for i, rt := range r.Batch.Routes {
			dir := filepath.Join(out, onnxpart.RouteDir(i))
			rm, err := emit.ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			checkChainAtBatch(t, path, dir, rm, rt.Inputs)
		}
	}

	// ReduceMean over axis 0 mixes the inputs of a batch: refused.
	mp.Graph.Node = []*onnxpb.NodeProto{testmodel.Node("ReduceMean", "mean", []string{"x"}, []string{"y"},
		&onnxpb.AttributeProto{Name: ptr("axes"), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: []int64{0}})}
	mp.Graph.Initializer = nil
	mp.Graph.Output = []*onnxpb.ValueInfoProto{testmodel.VInfo("y", graph.Float, 1, 8, 4, 4)}
	m = testmodel.LoadPath(t, testmodel.WriteModel(t, mp))
	_, err = onnxpart.Plan(context.Background(), m, c, onnxpart.Options{Batch: 4, Seed: 1, Reproducible: true, TimeLimit: 5 * time.Second})
	if diag.KindOf(err) != diag.KindUsage || !strings.Contains(err.Error(), "cannot take a batch") || !strings.Contains(err.Error(), `node mean reads "x", [batch,8,4,4] at batch batch, and writes "y", [1,8,4,4], which drops the batch`) {
		t.Fatalf("got %v, want a usage error saying the stage files cannot take a batch, naming the node that drops it", err)
	}
	// Without --batch the same model plans.
	if _, err := onnxpart.Plan(context.Background(), m, c, onnxpart.Options{Seed: 1, Reproducible: true, TimeLimit: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestBenchRunsBatchedPlanAsPriced (issue 40): bench ran one input per request on every
// route, while the plan priced each route's stage calls as one batch of its share. Now a
// request to a route is its whole share, run through the stage files at that batch, and the
// throughput counts inputs.
func TestBenchRunsBatchedPlanAsPriced(t *testing.T) {
	if err := ort.Init(); err != nil {
		t.Skipf("ONNX Runtime not available: %v", err)
	}
	_, r, out := resnetBatch8(t)
	rep, err := pipebench.Run(context.Background(), out, pipebench.Options{Requests: 6, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := r.Batch.Inputs, 0
	for _, rt := range r.Batch.Routes {
		lo, hi = min(lo, rt.Inputs), max(hi, rt.Inputs)
	}
	inputs := rep.Throughput.Measured * rep.Seconds
	if inputs < float64(lo*rep.Requests)*0.999 || inputs > float64(hi*rep.Requests)*1.001 || hi < 2 {
		t.Errorf("%d requests counted as %.1f inputs; each request should carry a route's share (%d to %d inputs)", rep.Requests, inputs, lo, hi)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "whole share of the batch") {
		t.Errorf("notes do not say how the batch ran: %q", rep.Notes)
	}
}

// resnetBatch8 plans resnet50_small (its input fixed at [1,3,224,224]) for a batch of 8 on
// 2xT4, reproducibly, and writes the plan: the batched plan whose stage files the tests run.
func resnetBatch8(t *testing.T) (*ingest.Model, *onnxpart.Result, string) {
	t.Helper()
	m, err := ingest.Load(filepath.Join("testdata", "models", "resnet50_small.onnx"), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := hw.Resolve(context.Background(), "2xT4", hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := onnxpart.Plan(context.Background(), m, c, onnxpart.Options{Batch: 8, Seed: 3, Reproducible: true, TimeLimit: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	l, err := onnxpart.Prepare(m, r, emit.Options{}, 3)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := l.WriteDir(out); err != nil {
		t.Fatal(err)
	}
	return m, r, out
}
