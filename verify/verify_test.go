package verify

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/llamagen"
	"github.com/onnxpart/onnxpart/internal/outdir"
	"github.com/onnxpart/onnxpart/internal/testmodel"
	"github.com/onnxpart/onnxpart/onnxpb"
	"github.com/onnxpart/onnxpart/verify/npy"
)

// rewriteStage applies edit to a stage model and refreshes the manifest's hash, so that the
// structural checks pass and only running the stages can tell.
func rewriteStage(t *testing.T, dir string, i int, edit func(*onnxpb.ModelProto)) {
	t.Helper()
	man, err := emit.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, man.Stages[i].File)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var mp onnxpb.ModelProto
	if err := proto.Unmarshal(data, &mp); err != nil {
		t.Fatal(err)
	}
	edit(&mp)
	if data, err = proto.Marshal(&mp); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	man.Stages[i].SHA256 = hex.EncodeToString(sum[:])
	js, _ := man.MarshalIndent()
	if err := os.WriteFile(filepath.Join(dir, emit.ManifestFile), js, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyDetectsChangedWeight: one bit flipped in one weight of the middle stage makes
// the bit-exact verification fail and names the output.
func TestVerifyDetectsChangedWeight(t *testing.T) {
	needORT(t)
	dir, man := writeSplit(t, testmodel.Corpus(t, "resnet50_small.onnx"), 3)
	rewriteStage(t, dir, 1, func(mp *onnxpb.ModelProto) {
		for _, w := range mp.Graph.Initializer {
			if len(w.RawData) >= 4 && len(w.Dims) == 4 {
				w.RawData[1] ^= 0x01 // low mantissa bit of the first element
				return
			}
		}
		t.Fatal("no conv weight in stage 1")
	})
	for _, optimize := range []bool{false, true} {
		rep, err := Run(context.Background(), dir, Options{Optimize: optimize})
		if err != nil {
			t.Fatal(err)
		}
		o := rep.Outputs[0]
		if o.BitExact || o.Differing == 0 || o.MaxAbs == 0 {
			t.Errorf("optimize=%v: a changed weight went unnoticed: %+v", optimize, o)
		}
		if !optimize && rep.Pass {
			t.Errorf("bit-exact mode passed a changed weight")
		}
		t.Logf("optimize=%v: %s max abs %.3g, max rel %.3g, %d of %d differ", optimize, o.Name, o.MaxAbs, o.MaxRel, o.Differing, o.Elements)
	}
	// A larger change fails the tolerance too.
	rewriteStage(t, dir, len(man.Stages)-1, func(mp *onnxpb.ModelProto) {
		for _, w := range mp.Graph.Initializer {
			if len(w.RawData) >= 4 && len(w.Dims) == 1 { // a bias
				w.RawData[3] ^= 0x40
				return
			}
		}
		t.Fatal("no bias in the last stage")
	})
	rep, err := Run(context.Background(), dir, Options{Optimize: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pass {
		t.Errorf("a changed bias passed with optimizations: %+v", rep.Outputs[0])
	}
	err = MismatchOf(rep)
	if msg := err.Error(); !strings.Contains(msg, "output") {
		t.Errorf("mismatch message %q does not name the output", msg)
	}
	var mm *Mismatch
	if diag.ExitCode(err) != 4 || !errors.As(err, &mm) || mm.Report != rep {
		t.Errorf("MismatchOf: exit %d, want 4 and the report as the cause", diag.ExitCode(err))
	}
}

// TestVerifyRejects: tampered files, a different model, bad inputs.
func TestVerifyRejects(t *testing.T) {
	needORT(t)
	c := testmodel.Corpus(t, "squeezenet1_1_small.onnx")
	dir, man := writeSplit(t, c, 3)
	ctx := context.Background()

	// A stage file changed behind the manifest's back.
	p := filepath.Join(dir, man.Stages[1].File)
	orig, _ := os.ReadFile(p)
	os.WriteFile(p, append(append([]byte{}, orig...), 0), 0o644)
	_, err := Run(ctx, dir, Options{})
	if !isKind(err, diag.KindInput) || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("tampered stage: got %v", err)
	}
	os.WriteFile(p, orig, 0o644)

	// Another model.
	other := testmodel.Corpus(t, "resnet50_small.onnx").Path
	_, err = Run(ctx, dir, Options{ModelPath: other})
	if !isKind(err, diag.KindInput) || !strings.Contains(err.Error(), "but the stages were made from a model with sha256") {
		t.Errorf("other model: got %v", err)
	}
	// An input file of the wrong type, an unknown input, a --dim the stages do not have.
	f := filepath.Join(t.TempDir(), "x.npy")
	w, _ := os.Create(f)
	npy.Write(w, &npy.Array{DType: 7, Shape: []int64{1}, Data: make([]byte, 8)})
	w.Close()
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{Inputs: map[string]string{"input": f}}, "holds int64, the model wants float32"},
		{Options{Inputs: map[string]string{"nope": f}}, `no input "nope"`},
		{Options{Dims: map[string]int64{"batch": 2}}, "not a symbolic dimension"},
	} {
		_, err := Run(ctx, dir, tc.opt)
		if !isKind(err, diag.KindUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want a usage error with %q", err, tc.want)
		}
	}
}

// TestVerifyWithInputFile feeds real data from .npy files: the report names the file and
// the run is bit-exact; on the dynamic-batch model the file's batch binds the dimension.
func TestVerifyWithInputFile(t *testing.T) {
	needORT(t)
	c := testmodel.Corpus(t, "mobilenet_v2_small_dynbatch.onnx")
	dir, _ := writeSplit(t, c, 3)
	feeds, err := RandomFeeds(testmodel.Load(t, testmodel.Config{Name: "dyn-b2", Path: c.Path, Dims: map[string]int64{"batch": 2}}).Graph, 42)
	if err != nil {
		t.Fatal(err)
	}
	in := feeds["input"]
	f := filepath.Join(t.TempDir(), "input.npy")
	w, _ := os.Create(f)
	if err := npy.Write(w, &npy.Array{DType: in.DType, Shape: in.Shape, Data: in.Data}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	rep, err := Run(context.Background(), dir, Options{Inputs: map[string]string{"input": f}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass || rep.Dims["batch"] != 2 || rep.Inputs[0].Source != f {
		t.Errorf("report %+v", rep)
	}
	if got := rep.Outputs[0].Shape; len(got) != 2 || got[0] != 2 {
		t.Errorf("output shape %v, want batch 2", got)
	}
}

// TestVerifySymbolicDims plans the dynamic-batch model at batch 8 (--dim batch=8): the stage
// files keep the symbolic batch, the manifest records both, and verify runs the chain at
// batch 8 and at batch 1. With FreezeDims the files are fixed at 8 and verified there only;
// frozen files that a manifest claims are symbolic fail at batch 1.
func TestVerifySymbolicDims(t *testing.T) {
	needORT(t)
	ctx := context.Background()
	c := testmodel.Corpus(t, "mobilenet_v2_small_dynbatch.onnx")
	m, err := ingest.Load(c.Path, ingest.Options{Dims: map[string]int64{"batch": 8}})
	if err != nil {
		t.Fatal(err)
	}
	stage, err := emit.EqualFLOPs(m.Graph, 2)
	if err != nil {
		t.Fatal(err)
	}
	write := func(freeze bool) (string, *emit.Manifest) {
		dir := filepath.Join(t.TempDir(), "out")
		man, err := emit.Write(m, &emit.Assignment{Stage: stage}, dir, emit.Options{FreezeDims: freeze})
		if err != nil {
			t.Fatal(err)
		}
		return dir, man
	}
	firstDim := func(dir string, i int) *onnxpb.TensorShapeProto_Dimension {
		b, err := os.ReadFile(filepath.Join(dir, stageFile(i)))
		if err != nil {
			t.Fatal(err)
		}
		var mp onnxpb.ModelProto
		if err := proto.Unmarshal(b, &mp); err != nil {
			t.Fatal(err)
		}
		return mp.Graph.Input[0].GetType().GetTensorType().GetShape().GetDim()[0]
	}

	dir, man := write(false)
	if man.Model.Dims["batch"] != 8 || strings.Join(man.Model.SymbolicDims, ",") != "batch" {
		t.Errorf("manifest dims %v, symbolic %v; want batch=8 bound and kept symbolic", man.Model.Dims, man.Model.SymbolicDims)
	}
	for i := range man.Stages {
		if d := firstDim(dir, i); d.GetDimParam() != "batch" {
			t.Errorf("stage %d input leads with %v, want dim_param batch", i, d)
		}
		if got := graph.Shape(man.Stages[i].Inputs[0].Shape).String(); !strings.HasPrefix(got, "[batch,") {
			t.Errorf("stage %d input in the manifest: %s", i, got)
		}
	}
	if tr := man.Transfers[0]; tr.Bytes <= 0 {
		t.Errorf("transfer %s has %d bytes; want its size at batch 8", tr.Tensor, tr.Bytes)
	}
	rep, err := Run(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass || rep.Dims["batch"] != 8 || rep.Outputs[0].Shape[0] != 8 {
		t.Errorf("at the bound size: pass %v, dims %v, output %v", rep.Pass, rep.Dims, rep.Outputs[0].Shape)
	}
	if len(rep.OtherSizes) != 1 {
		t.Fatalf("%d other sizes, want 1 (batch=1)", len(rep.OtherSizes))
	}
	if o := rep.OtherSizes[0]; !o.Pass || o.Dims["batch"] != 1 || o.Outputs[0].Shape[0] != 1 || !o.Outputs[0].BitExact || o.Skipped != "" {
		t.Errorf("at batch 1: %+v", o)
	}
	// --dim on verify sizes the dim: no second size.
	if rep, err := Run(ctx, dir, Options{Dims: map[string]int64{"batch": 3}}); err != nil || !rep.Pass || len(rep.OtherSizes) != 0 || rep.Dims["batch"] != 3 {
		t.Errorf("verify --dim batch=3: %v %+v", err, rep)
	}

	fdir, fman := write(true)
	if fman.Model.Dims["batch"] != 8 || len(fman.Model.SymbolicDims) != 0 {
		t.Errorf("frozen manifest dims %v, symbolic %v", fman.Model.Dims, fman.Model.SymbolicDims)
	}
	if d := firstDim(fdir, 0); d.GetDimValue() != 8 {
		t.Errorf("frozen stage 0 input leads with %v, want 8", d)
	}
	rep, err = Run(ctx, fdir, Options{})
	if err != nil || !rep.Pass || len(rep.OtherSizes) != 0 || rep.Dims["batch"] != 8 {
		t.Errorf("frozen: %v %+v", err, rep)
	}
	// Frozen files under a manifest that says they keep batch: batch 1 fails in a stage.
	fman.Model.SymbolicDims = []string{"batch"}
	fman.Model.Inputs[0].Shape[0] = graph.Symbolic("batch")
	js, err := fman.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fdir, emit.ManifestFile), js, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = Run(ctx, fdir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pass || len(rep.OtherSizes) != 1 || !strings.Contains(rep.OtherSizes[0].Problem, "at batch=1, stage 0") {
		t.Fatalf("frozen files claimed symbolic: pass %v, %+v", rep.Pass, *rep.OtherSizes[0])
	}
	if !rep.Outputs[0].Pass {
		t.Errorf("frozen files fail at their own size: %+v", rep.Outputs[0])
	}
	if msg := MismatchOf(rep).Error(); !strings.Contains(msg, "at batch=1, stage 0") {
		t.Errorf("mismatch message %q does not name the size and the stage", msg)
	}
}

// A decoder planned at past=1024 keeps its dims symbolic and runs at past=1023: the second
// size of past moves total too, as the model's shapes demand (the issue's "Got: 1024
// Expected: 1025" came from stage files frozen at the planned lengths).
func TestVerifyDecoderSecondSizes(t *testing.T) {
	needORT(t)
	p := testmodel.DecoderModel(t)
	m, err := ingest.Load(p, ingest.Options{Dims: map[string]int64{"batch": 1, "past": 1024, "seq": 1, "total": 1025}})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.ShapeErrors) > 0 {
		t.Fatalf("shape errors at the planned sizes: %v", m.ShapeErrors)
	}
	dir := filepath.Join(t.TempDir(), "out")
	man, err := emit.Write(m, &emit.Assignment{Stage: []int{0, 0, 1, 1}}, dir, emit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(man.Model.SymbolicDims, ","); got != "batch,past,seq,total" {
		t.Errorf("symbolic dims %s", got)
	}
	var h emit.TensorRef
	for _, r := range man.Stages[1].Inputs {
		if r.Name == "h" {
			h = r
		}
	}
	if h.Name != "h" || h.Shape[1].Known() || h.Shape[1].Param == "" || h.Bytes != 1025*8*4 {
		t.Errorf("boundary h: %+v; want a symbolic length and the bytes at the planned sizes", h)
	}
	rep, err := Run(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass {
		t.Fatalf("verify failed: %v", MismatchOf(rep).Error())
	}
	var sizes []string
	for _, o := range rep.OtherSizes {
		if o.Skipped != "" || o.Problem != "" || len(o.Outputs) == 0 || !o.Outputs[0].BitExact {
			t.Errorf("at %s: skipped %q, problem %q", outdir.DimList(o.Dims), o.Skipped, o.Problem)
		}
		sizes = append(sizes, outdir.DimList(o.Dims))
	}
	// total follows from past and seq (ingest derives it): it has no second size of its
	// own, and moves with theirs.
	if rep.DerivedDims["total"] != "past + seq" {
		t.Errorf("derived dims %v, want total = past + seq", rep.DerivedDims)
	}
	want := []string{
		"batch=2, past=1024, seq=1, total=1025",
		"batch=1, past=1023, seq=1, total=1024",
		"batch=1, past=1024, seq=2, total=1026",
	}
	if strings.Join(sizes, " | ") != strings.Join(want, " | ") {
		t.Errorf("second sizes:\n%s\nwant\n%s", strings.Join(sizes, "\n"), strings.Join(want, "\n"))
	}
}

// kvDecoderModel is a two-layer decoder with a KV cache as transformers exports it, in
// miniature: input_ids [batch, seq], attention_mask [batch, total] and
// past_key_values.{0,1}.{key,value} [batch, 2, past, 4] in; logits [batch, seq, 10] and
// present.{0,1}.{key,value} [batch, 2, total, 4] = Concat(past, new) on axis 2 out. Each
// layer's scores [batch, 2, seq, past + seq] are added to the mask unsqueezed to [batch, 1,
// 1, total], so total = past + seq. Layer 1's past keys are scaled (by 1) into an output
// of their own, past_scaled.1, before the concatenation: computed in stage 0 and read in
// stage 1 of the split stage0, it is an empty tensor that crosses a stage boundary at a
// prefill (past = 0), and an empty model output.
func kvDecoderModel(t testing.TB) (path string, stage0 map[string]bool) {
	w := func(name string, dims ...int64) *onnxpb.TensorProto {
		n := int64(1)
		for _, d := range dims {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32((i*5+len(name))%9-4) / 8
		}
		return testmodel.FloatTensor(name, dims, v...)
	}
	i64 := func(name string, v ...int64) *onnxpb.TensorProto {
		raw := make([]byte, 8*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint64(raw[8*i:], uint64(x))
		}
		return &onnxpb.TensorProto{Name: proto.String(name), Dims: []int64{int64(len(v))}, DataType: proto.Int32(int32(graph.Int64)), RawData: raw}
	}
	one := func(name string, v int64) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
	}
	perm := func(v ...int64) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String("perm"), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
	}
	inits := []*onnxpb.TensorProto{w("emb", 10, 8), w("wout", 8, 10), testmodel.FloatTensor("one", nil, 1), testmodel.FloatTensor("neg", nil, -1e4),
		i64("split_heads", 0, 0, 2, 4), i64("merge_heads", 0, 0, 8), i64("mask_axes", 1, 2)}
	nodes := []*onnxpb.NodeProto{
		testmodel.Node("Gather", "embed", []string{"emb", "input_ids"}, []string{"h0"}),
		testmodel.Node("Cast", "mask_cast", []string{"attention_mask"}, []string{"mf"}, one("to", int64(graph.Float))),
		testmodel.Node("Unsqueeze", "mask_4d", []string{"mf", "mask_axes"}, []string{"m4"}),
		testmodel.Node("Sub", "mask_inv", []string{"one", "m4"}, []string{"mi"}),
		testmodel.Node("Mul", "mask_big", []string{"mi", "neg"}, []string{"mb"}),
		testmodel.Node("Mul", "scale_past1", []string{"past_key_values.1.key", "one"}, []string{"past_scaled.1"}),
	}
	stage0 = map[string]bool{}
	for _, n := range nodes {
		stage0[n.GetName()] = true
	}
	for l := 0; l < 2; l++ {
		p := fmt.Sprintf("l%d_", l)
		h, out := fmt.Sprintf("h%d", l), fmt.Sprintf("h%d", l+1)
		pastK := fmt.Sprintf("past_key_values.%d.key", l)
		if l == 1 {
			pastK = "past_scaled.1"
		}
		inits = append(inits, w(p+"wq", 8, 8), w(p+"wk", 8, 8), w(p+"wv", 8, 8))
		layer := []*onnxpb.NodeProto{}
		for _, x := range []string{"q", "k", "v"} {
			layer = append(layer,
				testmodel.Node("MatMul", p+x+"_proj", []string{h, p + "w" + x}, []string{p + x + "0"}),
				testmodel.Node("Reshape", p+x+"_reshape", []string{p + x + "0", "split_heads"}, []string{p + x + "1"}),
				testmodel.Node("Transpose", p+x+"_heads", []string{p + x + "1"}, []string{p + x}, perm(0, 2, 1, 3)))
		}
		layer = append(layer,
			testmodel.Node("Concat", p+"cat_k", []string{pastK, p + "k"}, []string{fmt.Sprintf("present.%d.key", l)}, one("axis", 2)),
			testmodel.Node("Concat", p+"cat_v", []string{fmt.Sprintf("past_key_values.%d.value", l), p + "v"}, []string{fmt.Sprintf("present.%d.value", l)}, one("axis", 2)),
			testmodel.Node("Transpose", p+"kt", []string{fmt.Sprintf("present.%d.key", l)}, []string{p + "kT"}, perm(0, 1, 3, 2)),
			testmodel.Node("MatMul", p+"scores", []string{p + "q", p + "kT"}, []string{p + "s"}),
			testmodel.Node("Add", p+"mask_add", []string{p + "s", "mb"}, []string{p + "sm"}),
			testmodel.Node("Softmax", p+"softmax", []string{p + "sm"}, []string{p + "p"}, one("axis", -1)),
			testmodel.Node("MatMul", p+"attend", []string{p + "p", fmt.Sprintf("present.%d.value", l)}, []string{p + "a"}),
			testmodel.Node("Transpose", p+"merge_t", []string{p + "a"}, []string{p + "at"}, perm(0, 2, 1, 3)),
			testmodel.Node("Reshape", p+"merge", []string{p + "at", "merge_heads"}, []string{p + "o"}),
			testmodel.Node("Add", p+"residual", []string{p + "o", h}, []string{out}))
		for _, n := range layer {
			stage0[n.GetName()] = l == 0
		}
		nodes = append(nodes, layer...)
	}
	nodes = append(nodes, testmodel.Node("MatMul", "lm_head", []string{"h2", "wout"}, []string{"logits"}))
	in := []*onnxpb.ValueInfoProto{testmodel.VInfo("input_ids", graph.Int64, "batch", "seq"), testmodel.VInfo("attention_mask", graph.Int64, "batch", "total")}
	out := []*onnxpb.ValueInfoProto{testmodel.VInfo("logits", graph.Float, "batch", "seq", 10), testmodel.VInfo("past_scaled.1", graph.Float, "batch", 2, "past", 4)}
	for l := 0; l < 2; l++ {
		for _, kv := range []string{"key", "value"} {
			in = append(in, testmodel.VInfo(fmt.Sprintf("past_key_values.%d.%s", l, kv), graph.Float, "batch", 2, "past", 4))
			out = append(out, testmodel.VInfo(fmt.Sprintf("present.%d.%s", l, kv), graph.Float, "batch", 2, "total", 4))
		}
	}
	g := &onnxpb.GraphProto{Name: proto.String("kv_decoder"), Input: in, Output: out, Initializer: inits, Node: nodes}
	return testmodel.WriteModel(t, &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: testmodel.Opsets(), Graph: g}), stage0
}

// TestVerifyDecoderPrefill: a decoder planned with only batch, past and seq bound (ingest
// derives total = past + seq) verifies at the planned sizes and at second sizes of each of
// them, and then as a prefill (--dim past=0): the past keys and values are empty tensors
// fed to ONNX Runtime, one of them crosses the stage boundary, and an empty model output
// compares equal to the original's. A total that contradicts past + seq is one input
// error naming the dim and both sizes.
func TestVerifyDecoderPrefill(t *testing.T) {
	needORT(t)
	p, stage0 := kvDecoderModel(t)
	m, err := ingest.Load(p, ingest.Options{Dims: map[string]int64{"batch": 1, "past": 16, "seq": 4}})
	if err != nil {
		t.Fatal(err)
	}
	if m.DerivedDims["total"] != "past + seq" || m.Dims()["total"] != 20 || len(m.ShapeErrors) > 0 {
		t.Fatalf("derived %v, dims %v, shape errors %v", m.DerivedDims, m.Dims(), m.ShapeErrors)
	}
	stage := make([]int, len(m.Graph.Nodes))
	for v := range m.Graph.Nodes {
		if !stage0[m.Graph.Nodes[v].Name] {
			stage[v] = 1
		}
	}
	dir := filepath.Join(t.TempDir(), "out")
	man, err := emit.Write(m, &emit.Assignment{Stage: stage}, dir, emit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	crosses := false
	for _, tr := range man.Transfers {
		crosses = crosses || tr.Tensor == "past_scaled.1"
	}
	if !crosses || man.Model.Dims["total"] != 20 {
		t.Fatalf("transfers %+v, dims %v; want past_scaled.1 sent from stage 0 to 1 and total=20 recorded", man.Transfers, man.Model.Dims)
	}
	ctx := context.Background()
	rep, err := Run(ctx, dir, Options{Runs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass || rep.Dims["total"] != 20 || rep.DerivedDims["total"] != "past + seq" {
		t.Fatalf("at the planned sizes: pass %v, dims %v, derived %v: %v", rep.Pass, rep.Dims, rep.DerivedDims, MismatchOf(rep).Error())
	}
	var sizes []string
	for _, o := range rep.OtherSizes {
		if !o.Pass || o.Skipped != "" {
			t.Errorf("at %s: pass %v, skipped %q, problem %q", outdir.DimList(o.Dims), o.Pass, o.Skipped, o.Problem)
		}
		sizes = append(sizes, outdir.DimList(o.Dims))
	}
	if got := strings.Join(sizes, " | "); got != "batch=2, past=16, seq=4, total=20 | batch=1, past=15, seq=4, total=19 | batch=1, past=16, seq=3, total=19" {
		t.Errorf("second sizes %s", got)
	}

	// The prefill.
	rep, err = Run(ctx, dir, Options{Dims: map[string]int64{"past": 0}, Runs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass || rep.Dims["past"] != 0 || rep.Dims["total"] != 4 || len(rep.OtherSizes) != 2 { // batch and seq; --dim sizes past
		t.Fatalf("prefill: pass %v, dims %v, %d other sizes: %v", rep.Pass, rep.Dims, len(rep.OtherSizes), MismatchOf(rep).Error())
	}
	for _, in := range rep.Inputs {
		if strings.HasPrefix(in.Name, "past_key_values.") && fmt.Sprint(in.Shape) != "[1 2 0 4]" {
			t.Errorf("prefill input %s %v", in.Name, in.Shape)
		}
	}
	for _, o := range rep.Outputs {
		switch {
		case !o.Pass || !o.BitExact:
			t.Errorf("prefill output %s: %+v", o.Name, o)
		case o.Name == "past_scaled.1" && (fmt.Sprint(o.Shape) != "[1 2 0 4]" || o.Elements != 0):
			t.Errorf("empty output %s: shape %v, %d elements", o.Name, o.Shape, o.Elements)
		case strings.HasPrefix(o.Name, "present.") && fmt.Sprint(o.Shape) != "[1 2 4 4]":
			t.Errorf("prefill %s: shape %v", o.Name, o.Shape)
		}
	}
	for _, o := range rep.OtherSizes {
		if !o.Pass || o.Dims["past"] != 0 {
			t.Errorf("prefill at %s: pass %v, %s%s", outdir.DimList(o.Dims), o.Pass, o.Skipped, o.Problem)
		}
	}

	// Sizes that contradict the model's tie.
	_, err = Run(ctx, dir, Options{Dims: map[string]int64{"past": 16, "seq": 8, "total": 5}})
	if !isKind(err, diag.KindUsage) || !strings.Contains(err.Error(), "dimension total is bound to 5") || !strings.Contains(err.Error(), "past + seq = 24") {
		t.Errorf("total=5 at past=16, seq=8: %v", err)
	}
}

// TestVerifyLlamaPrefill: internal/llamagen's Llama-style decoder, planned in two stages with
// batch, past and seq bound (total derived), verifies at the planned sizes, at their second
// sizes and as a prefill (--dim past=0), where every past_key_values input is empty.
func TestVerifyLlamaPrefill(t *testing.T) {
	needORT(t)
	dir := splitLlamaAt(t, llamagen.Tiny, map[string]int64{"batch": 1, "past": 8, "seq": 3})
	ctx := context.Background()
	for _, opt := range []Options{{}, {Dims: map[string]int64{"past": 0}}} {
		rep, err := Run(ctx, dir, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Pass || rep.Dims["total"] != rep.Dims["past"]+3 || rep.DerivedDims["total"] != "past + seq" {
			t.Fatalf("%v: pass %v, dims %v, derived %v: %v", opt.Dims, rep.Pass, rep.Dims, rep.DerivedDims, MismatchOf(rep).Error())
		}
		for _, o := range rep.OtherSizes {
			if !o.Pass || o.Skipped != "" || o.Dims["total"] != o.Dims["past"]+o.Dims["seq"] {
				t.Errorf("%v at %s: pass %v, %s%s", opt.Dims, outdir.DimList(o.Dims), o.Pass, o.Skipped, o.Problem)
			}
		}
		empty := 0
		for _, in := range rep.Inputs {
			if strings.HasPrefix(in.Name, "past_key_values.") && len(in.Shape) == 4 && in.Shape[2] == 0 {
				empty++
			}
		}
		if want := map[bool]int{false: 0, true: 2 * llamagen.Tiny.Layers}[opt.Dims != nil]; empty != want {
			t.Errorf("%v: %d empty past inputs, want %d", opt.Dims, empty, want)
		}
	}
}

// isKind: err is a *diag.Error (somewhere in its chain) and its kind is k.
func isKind(err error, k diag.Kind) bool {
	var de *diag.Error
	return errors.As(err, &de) && diag.KindOf(err) == k
}
