package emit

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/onnxpb"
)

// A small builder of ONNX models for tests.

func vinfo(name string, dt graph.DType, dims ...any) *onnxpb.ValueInfoProto {
	sh := &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{}}
	for _, d := range dims {
		dim := &onnxpb.TensorShapeProto_Dimension{}
		switch v := d.(type) {
		case int:
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(v)}
		case string:
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: v}
		}
		sh.Dim = append(sh.Dim, dim)
	}
	return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(dt)), Shape: sh}}}}
}

func node(op, name string, ins, outs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{OpType: proto.String(op), Name: proto.String(name), Input: ins, Output: outs, Attribute: attrs}
}

func floatTensor(name string, dims []int64, vals ...float32) *onnxpb.TensorProto {
	raw := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return &onnxpb.TensorProto{Name: proto.String(name), Dims: dims, DataType: proto.Int32(int32(graph.Float)), RawData: raw}
}

func graphAttr(name string, g *onnxpb.GraphProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_GRAPH.Enum(), G: g}
}

func writeModel(t testing.TB, mp *onnxpb.ModelProto) string {
	t.Helper()
	b, err := proto.Marshal(mp)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "model.onnx")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func opsets(extra ...*onnxpb.OperatorSetIdProto) []*onnxpb.OperatorSetIdProto {
	return append([]*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(17)}}, extra...)
}

// controlFlowModel: x → Relu → a; If(cond) { a + w } else { a − w } → y (captures a and
// the weight w); local.Square(y) → z (a model-local function); Sigmoid(w2) → s, a
// weight-only node read by two later nodes; outputs z, z2 = z·s + a, the input x itself
// and the weight w.
func controlFlowModel(t testing.TB) string {
	w := floatTensor("w", []int64{2, 3}, 1, 2, 3, 4, 5, 6)
	w2 := floatTensor("w2", []int64{2, 3}, -1, 0.5, 2, -3, 0.25, 1)
	thenG := &onnxpb.GraphProto{Name: proto.String("then"),
		Node:   []*onnxpb.NodeProto{node("Add", "then_add", []string{"a", "w"}, []string{"t_out"})},
		Output: []*onnxpb.ValueInfoProto{vinfo("t_out", graph.Float, 2, 3)}}
	elseG := &onnxpb.GraphProto{Name: proto.String("else"),
		Node:   []*onnxpb.NodeProto{node("Sub", "else_sub", []string{"a", "w"}, []string{"e_out"})},
		Output: []*onnxpb.ValueInfoProto{vinfo("e_out", graph.Float, 2, 3)}}
	square := &onnxpb.FunctionProto{Name: proto.String("Square"), Domain: proto.String("local"),
		Input: []string{"X"}, Output: []string{"Y"},
		Node:        []*onnxpb.NodeProto{node("Mul", "sq", []string{"X", "X"}, []string{"Y"})},
		OpsetImport: opsets()}
	unused := &onnxpb.FunctionProto{Name: proto.String("Unused"), Domain: proto.String("local"),
		Input: []string{"X"}, Output: []string{"Y"},
		Node:        []*onnxpb.NodeProto{node("Neg", "n", []string{"X"}, []string{"Y"})},
		OpsetImport: opsets()}
	g := &onnxpb.GraphProto{Name: proto.String("cf"),
		Input: []*onnxpb.ValueInfoProto{vinfo("x", graph.Float, 2, 3), vinfo("cond", graph.Bool)},
		Output: []*onnxpb.ValueInfoProto{vinfo("z", graph.Float, 2, 3), vinfo("z2", graph.Float, 2, 3),
			vinfo("x", graph.Float, 2, 3), vinfo("w", graph.Float, 2, 3)},
		Initializer: []*onnxpb.TensorProto{w, w2},
		Node: []*onnxpb.NodeProto{
			node("Relu", "relu", []string{"x"}, []string{"a"}),
			node("Sigmoid", "sig_w2", []string{"w2"}, []string{"s"}),
			node("If", "if", []string{"cond"}, []string{"y"}, graphAttr("then_branch", thenG), graphAttr("else_branch", elseG)),
			{OpType: proto.String("Square"), Domain: proto.String("local"), Name: proto.String("square"), Input: []string{"y"}, Output: []string{"z"}},
			node("Mul", "mul_s", []string{"z", "s"}, []string{"zs"}),
			node("Add", "add_a", []string{"zs", "a"}, []string{"z2_pre"}),
			node("Mul", "mul_s2", []string{"z2_pre", "s"}, []string{"z2"}),
		},
	}
	mp := &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: opsets(&onnxpb.OperatorSetIdProto{Domain: proto.String("local"), Version: proto.Int64(1)}),
		ProducerName: proto.String("test"), Graph: g, Functions: []*onnxpb.FunctionProto{square, unused},
		MetadataProps: []*onnxpb.StringStringEntryProto{{Key: proto.String("author"), Value: proto.String("tests")}}}
	return writeModel(t, mp)
}

func loadPath(t testing.TB, p string) *ingest.Model {
	t.Helper()
	m, err := ingest.Load(p, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func stageModelOf(t *testing.T, dir string, st Stage) *onnxpb.ModelProto {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, st.File))
	if err != nil {
		t.Fatal(err)
	}
	var mp onnxpb.ModelProto
	if err := proto.Unmarshal(data, &mp); err != nil {
		t.Fatal(err)
	}
	return &mp
}

func metadata(mp *onnxpb.ModelProto) map[string]string {
	out := map[string]string{}
	for _, kv := range mp.MetadataProps {
		out[kv.GetKey()] = kv.GetValue()
	}
	return out
}

func labels(t *testing.T, g *graph.Graph, byName map[string]int) []int {
	t.Helper()
	stage := make([]int, len(g.Nodes))
	for v := range g.Nodes {
		s, ok := byName[g.Nodes[v].Name]
		if !ok {
			t.Fatalf("no stage for %s", g.Nodes[v].Name)
		}
		stage[v] = s
	}
	return stage
}

// TestCycleRefused: relu in stage 1 and the If (reading relu's output) in stage 0, while
// the If's output flows to stage 1: the error names both tensors of the cycle.
func TestCycleRefused(t *testing.T) {
	m := loadPath(t, controlFlowModel(t))
	stage := labels(t, m.Graph, map[string]int{"relu": 1, "sig_w2": 0, "if": 0, "square": 1, "mul_s": 1, "add_a": 1, "mul_s2": 1})
	_, err := Prepare(m, &Assignment{Stage: stage}, Options{})
	var ce *graph.StageCycleError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a StageCycleError", err)
	}
	if len(ce.Tensors) != 2 || !strings.Contains(err.Error(), `a`) || !strings.Contains(err.Error(), `y`) {
		t.Errorf("cycle %+v: want the tensors a (1→0, captured by the If) and y (0→1)", ce)
	}
	// A weight-only node on the "wrong" side closes no cycle: it goes with its consumers.
	stage = labels(t, m.Graph, map[string]int{"relu": 0, "sig_w2": 1, "if": 0, "square": 0, "mul_s": 0, "add_a": 1, "mul_s2": 1})
	l, err := Prepare(m, &Assignment{Stage: stage}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.NumStages() != 2 || len(l.Manifest.Stages[0].DuplicatedNodes) != 1 || l.Manifest.Stages[0].DuplicatedNodes[0] != "sig_w2" {
		t.Errorf("stages %+v", l.Manifest.Stages)
	}
}

// TestRenumberAndDrop: labels 7 and 3 become stages 1 and 0; a label holding only a
// weight-only node is dropped with a note; equal splits under any labelling give
// identical files.
func TestRenumberAndDrop(t *testing.T) {
	m := loadPath(t, controlFlowModel(t))
	a := labels(t, m.Graph, map[string]int{"relu": 3, "sig_w2": 5, "if": 3, "square": 3, "mul_s": 7, "add_a": 7, "mul_s2": 7})
	b := labels(t, m.Graph, map[string]int{"relu": 0, "sig_w2": 0, "if": 0, "square": 0, "mul_s": 1, "add_a": 1, "mul_s2": 1})
	da := filepath.Join(t.TempDir(), "a")
	db := filepath.Join(t.TempDir(), "b")
	ma, err := Write(m, &Assignment{Stage: a}, da, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(m, &Assignment{Stage: b}, db, Options{}); err != nil {
		t.Fatal(err)
	}
	if len(ma.Stages) != 2 || ma.Stages[0].Label != 3 || ma.Stages[1].Label != 7 {
		t.Fatalf("stages %+v", ma.Stages)
	}
	notes := strings.Join(ma.Notes, "\n")
	if !strings.Contains(notes, "stage 5 of the assignment was dropped") || !strings.Contains(notes, "3→0, 7→1") {
		t.Errorf("notes %q", notes)
	}
	for i := range ma.Stages {
		fa, _ := os.ReadFile(filepath.Join(da, stageFile(i)))
		fb, _ := os.ReadFile(filepath.Join(db, stageFile(i)))
		if string(fa) != string(fb) {
			t.Errorf("stage %d differs between labellings", i)
		}
	}
}

// TestShapeOnlyRecomputed: a cut inside BERT's attention, between the shape arithmetic
// (Shape → Gather → Add → Div) and the Slices it feeds. The Slices' stage holds the
// activation anyway, so the shape arithmetic is recomputed there and no shape tensor is
// sent; the attention mask (/Equal_output_0) crosses once per receiving stage.
func TestShapeOnlyRecomputed(t *testing.T) {
	m := loadConfig(t, corpusModel(t, "bert_base_like_small.onnx"))
	g := m.Graph
	stage, err := CutAfter(g, []string{"/enc/layers.3/self_attn/Div_output_0", "/enc/layers.8/self_attn/Shape_output_0"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := Prepare(m, &Assignment{Stage: stage}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	role, _ := classify(g, g.TopoOrder())
	for _, tr := range l.Manifest.Transfers {
		id, _ := g.TensorByName(tr.Tensor)
		if p := g.Tensors[id].Producer; p >= 0 && role[p] != roleNormal {
			t.Errorf("transfer of %s, computed by a %s node", tr.Tensor, g.Nodes[p].OpType)
		}
	}
	masks := 0
	for _, tr := range l.Manifest.Transfers {
		if tr.Tensor == "/Equal_output_0" {
			masks++
		}
	}
	if masks != 2 {
		t.Errorf("the mask is sent %d times, want once to each of the 2 later stages", masks)
	}
	in := func(i int, node string) bool {
		for _, n := range l.Manifest.Stages[i].Nodes {
			if n == node {
				return true
			}
		}
		return false
	}
	if !in(1, "/enc/layers.3/self_attn/Div") || in(0, "/enc/layers.3/self_attn/Div") {
		t.Errorf("the shape arithmetic of layer 3 is not with its Slices in stage 1")
	}
	// Cut right after Shape in layer 8: Shape's output is consumed by stage 2, which holds
	// the activation; Shape is recomputed there.
	if !in(2, "/enc/layers.8/self_attn/Shape") {
		t.Errorf("layer 8's Shape is not recomputed in stage 2")
	}
}
