package ingest

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/llamagen"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// decoderProto is one attention layer of a decoder as transformers exports it, in
// miniature: input_ids [batch, seq], attention_mask [batch, total] and the past keys and
// values [batch, 2, past, 4] in; logits [batch, seq, 10] and present.0.key/value [batch, 2,
// total, 4] = Concat(past, new) on axis 2 out. The scores [batch, 2, seq, past + seq] are
// added to the mask, unsqueezed to [batch, 1, 1, total]: total = past + seq.
func decoderProto() *onnxpb.ModelProto {
	vi := func(name string, dt graph.DType, dims ...any) *onnxpb.ValueInfoProto {
		s := &onnxpb.TensorShapeProto{}
		for _, d := range dims {
			dim := &onnxpb.TensorShapeProto_Dimension{}
			switch v := d.(type) {
			case int:
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(v)}
			case string:
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: v}
			}
			s.Dim = append(s.Dim, dim)
		}
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(dt)), Shape: s}}}}
	}
	weight := func(name string, dims ...int64) *onnxpb.TensorProto {
		n := int64(1)
		for _, d := range dims {
			n *= d
		}
		raw := make([]byte, 4*n)
		for i := int64(0); i < n; i++ {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(i%7-3)/8))
		}
		return &onnxpb.TensorProto{Name: proto.String(name), Dims: dims, DataType: proto.Int32(int32(graph.Float)), RawData: raw}
	}
	ints := func(name string, v ...int64) *onnxpb.TensorProto {
		raw := make([]byte, 8*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint64(raw[8*i:], uint64(x))
		}
		return &onnxpb.TensorProto{Name: proto.String(name), Dims: []int64{int64(len(v))}, DataType: proto.Int32(int32(graph.Int64)), RawData: raw}
	}
	attrI := func(name string, v int64) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
	}
	attrIs := func(name string, v ...int64) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
	}
	node := func(op, name string, ins, outs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		return &onnxpb.NodeProto{OpType: proto.String(op), Name: proto.String(name), Input: ins, Output: outs, Attribute: attrs}
	}
	heads := func(x, name string) []*onnxpb.NodeProto { // [batch, seq, 8] → [batch, 2, seq, 4]
		return []*onnxpb.NodeProto{
			node("Reshape", name+"_reshape", []string{x, "split_heads"}, []string{name + "_r"}),
			node("Transpose", name+"_heads", []string{name + "_r"}, []string{name}, attrIs("perm", 0, 2, 1, 3)),
		}
	}
	nodes := []*onnxpb.NodeProto{
		node("Gather", "embed", []string{"emb", "input_ids"}, []string{"h"}),
		node("MatMul", "q_proj", []string{"h", "wq"}, []string{"q0"}),
		node("MatMul", "k_proj", []string{"h", "wk"}, []string{"k0"}),
		node("MatMul", "v_proj", []string{"h", "wv"}, []string{"v0"}),
	}
	nodes = append(nodes, heads("q0", "q")...)
	nodes = append(nodes, heads("k0", "k")...)
	nodes = append(nodes, heads("v0", "v")...)
	nodes = append(nodes,
		node("Concat", "cat_k", []string{"past_key_values.0.key", "k"}, []string{"present.0.key"}, attrI("axis", 2)),
		node("Concat", "cat_v", []string{"past_key_values.0.value", "v"}, []string{"present.0.value"}, attrI("axis", 2)),
		node("Transpose", "kt", []string{"present.0.key"}, []string{"kT"}, attrIs("perm", 0, 1, 3, 2)),
		node("MatMul", "scores", []string{"q", "kT"}, []string{"s"}),
		node("Cast", "mask_cast", []string{"attention_mask"}, []string{"mf"}, attrI("to", int64(graph.Float))),
		node("Unsqueeze", "mask_4d", []string{"mf", "mask_axes"}, []string{"m4"}),
		node("Sub", "mask_inv", []string{"one", "m4"}, []string{"mi"}),
		node("Mul", "mask_big", []string{"mi", "neg"}, []string{"mb"}),
		node("Add", "mask_add", []string{"s", "mb"}, []string{"sm"}),
		node("Softmax", "softmax", []string{"sm"}, []string{"p"}, attrI("axis", -1)),
		node("MatMul", "attend", []string{"p", "present.0.value"}, []string{"a"}),
		node("Transpose", "merge_t", []string{"a"}, []string{"at"}, attrIs("perm", 0, 2, 1, 3)),
		node("Reshape", "merge", []string{"at", "merge_heads"}, []string{"o"}),
		node("MatMul", "lm_head", []string{"o", "wout"}, []string{"logits"}),
	)
	one := weight("one")
	binary.LittleEndian.PutUint32(one.RawData, math.Float32bits(1))
	neg := weight("neg")
	binary.LittleEndian.PutUint32(neg.RawData, math.Float32bits(-1e4))
	g := &onnxpb.GraphProto{
		Name: proto.String("decoder"),
		Input: []*onnxpb.ValueInfoProto{
			vi("input_ids", graph.Int64, "batch", "seq"), vi("attention_mask", graph.Int64, "batch", "total"),
			vi("past_key_values.0.key", graph.Float, "batch", 2, "past", 4), vi("past_key_values.0.value", graph.Float, "batch", 2, "past", 4)},
		Output: []*onnxpb.ValueInfoProto{vi("logits", graph.Float, "batch", "seq", 10),
			vi("present.0.key", graph.Float, "batch", 2, "total", 4), vi("present.0.value", graph.Float, "batch", 2, "total", 4)},
		Initializer: []*onnxpb.TensorProto{weight("emb", 10, 8), weight("wq", 8, 8), weight("wk", 8, 8), weight("wv", 8, 8),
			weight("wout", 8, 10), one, neg, ints("split_heads", 0, 0, 2, 4), ints("merge_heads", 0, 0, 8), ints("mask_axes", 1, 2)},
		Node: nodes,
	}
	return &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: proto.Int64(17)}}, Graph: g}
}

func writeDecoder(t *testing.T) string {
	t.Helper()
	return writeModel(t, t.TempDir(), "decoder.onnx", decoderProto())
}

// TestDerivedDims: the decoder's total = past + seq is found where the mask is added to the
// scores; bound past and seq derive total (any one of the three follows from the other two),
// a contradicting total is one error naming the dim and both sizes, defaults give way to a
// derivation, and an unbound model is told which dims to bind.
func TestDerivedDims(t *testing.T) {
	p := writeDecoder(t)
	shape := func(m *Model, name string) string {
		id, ok := m.Graph.TensorByName(name)
		if !ok {
			t.Fatalf("no tensor %s", name)
		}
		return m.Graph.Tensors[id].Shape.String()
	}

	m, err := Load(p, Options{Dims: map[string]int64{"batch": 1, "past": 16, "seq": 8}})
	if err != nil {
		t.Fatal(err)
	}
	if m.DerivedDims["total"] != "past + seq" || m.Dims()["total"] != 24 || len(m.DerivedDims) != 1 {
		t.Errorf("derived %v, dims %v; want total = past + seq = 24", m.DerivedDims, m.Dims())
	}
	if got := strings.Join(m.DerivedNotes(), "; "); got != "total = past + seq = 24 (derived)" {
		t.Errorf("notes %q", got)
	}
	if len(m.SymbolicDims) != 0 || len(m.ShapeErrors) != 0 || m.RequireInputSizes() != nil {
		t.Errorf("symbolic %v, shape errors %v, %v", m.SymbolicDims, m.ShapeErrors, m.RequireInputSizes())
	}
	if s := shape(m, "attention_mask"); s != "[1,24]" {
		t.Errorf("attention_mask %s", s)
	}
	if s := shape(m, "present.0.key"); s != "[1,2,24,4]" {
		t.Errorf("present.0.key %s", s)
	}

	// A prefill: no past.
	m, err = Load(p, Options{Dims: map[string]int64{"batch": 1, "past": 0, "seq": 5}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Dims()["total"] != 5 || shape(m, "past_key_values.0.key") != "[1,2,0,4]" || len(m.ShapeErrors) != 0 {
		t.Errorf("prefill: dims %v, past %s, errors %v", m.Dims(), shape(m, "past_key_values.0.key"), m.ShapeErrors)
	}

	// The other way round: total and seq give past.
	m, err = Load(p, Options{Dims: map[string]int64{"batch": 1, "total": 24, "seq": 8}})
	if err != nil {
		t.Fatal(err)
	}
	if m.DerivedDims["past"] != "total - seq" || m.Dims()["past"] != 16 || len(m.ShapeErrors) != 0 {
		t.Errorf("derived %v, dims %v, errors %v; want past = total - seq = 16", m.DerivedDims, m.Dims(), m.ShapeErrors)
	}
	// A total below seq leaves past unbound rather than negative.
	if m, err = Load(p, Options{Dims: map[string]int64{"batch": 1, "total": 4, "seq": 8}}); err != nil || len(m.DerivedDims) != 0 {
		t.Errorf("total < seq: %v, derived %v", err, m.DerivedDims)
	}

	// Bound by hand, consistently: nothing derived, no error.
	m, err = Load(p, Options{Dims: map[string]int64{"batch": 1, "past": 16, "seq": 8, "total": 24}})
	if err != nil || len(m.DerivedDims) != 0 || len(m.ShapeErrors) != 0 {
		t.Errorf("consistent: %v, derived %v, errors %v", err, m.DerivedDims, m.ShapeErrors)
	}
	// Inconsistently: one error with the dim and both sizes.
	_, err = Load(p, Options{Dims: map[string]int64{"batch": 1, "past": 16, "seq": 8, "total": 5}})
	if !isUsage(err) {
		t.Fatalf("total=5 at past=16, seq=8: %v, want a usage error", err)
	}
	for _, want := range []string{"dimension total is bound to 5", "past + seq = 24", "past=16, seq=8", "node mask_add (Add)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}

	// Defaults (the sizes a plan was made at) give way to what the bound dims derive.
	m, err = Load(p, Options{Dims: map[string]int64{"past": 0}, DefaultDims: map[string]int64{"batch": 2, "past": 1024, "seq": 3, "total": 1027, "other": 7}})
	if err != nil {
		t.Fatal(err)
	}
	if d := m.Dims(); d["batch"] != 2 || d["past"] != 0 || d["seq"] != 3 || d["total"] != 3 || len(d) != 4 || m.DerivedDims["total"] != "past + seq" {
		t.Errorf("defaults: dims %v, derived %v", d, m.DerivedDims)
	}
	m, err = Load(p, Options{DefaultDims: map[string]int64{"batch": 1, "past": 1024, "seq": 1, "total": 7}})
	if err != nil || m.Dims()["total"] != 1025 {
		t.Errorf("defaults alone: %v, dims %v", err, m.Dims())
	}

	// Unbound: the message asks for the dims that do not follow from others.
	m, err = Load(p, Options{Names: diag.Names{"Dims": "--dim"}})
	if err != nil {
		t.Fatal(err)
	}
	err = m.RequireInputSizes()
	if err == nil || !strings.Contains(err.Error(), "--dim batch=SIZE,past=SIZE,seq=SIZE (total = past + seq follows)") {
		t.Errorf("unbound: %v", err)
	}
	m, err = Load(p, Options{Dims: map[string]int64{"batch": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RequireInputSizes(); err == nil || !strings.Contains(err.Error(), `Options.Dims["past"] = SIZE, Options.Dims["seq"] = SIZE (total = past + seq follows)`) {
		t.Errorf("batch bound: %v", err)
	}
}

// TestDerivedDimsLlama: the Llama-style decoder of internal/llamagen (a 4-D causal mask made
// from Range, the attention mask and Where; grouped-query attention) ties total to past and
// seq in its mask Add, and derives it.
func TestDerivedDimsLlama(t *testing.T) {
	p, err := llamagen.Write(t.TempDir(), llamagen.Tiny)
	if err != nil {
		t.Fatal(err)
	}
	for _, past := range []int64{0, 16} {
		m, err := Load(p, Options{Dims: map[string]int64{"batch": 1, "past": past, "seq": 4}})
		if err != nil {
			t.Fatal(err)
		}
		if m.DerivedDims["total"] != "past + seq" || m.Dims()["total"] != past+4 || len(m.SymbolicDims) != 0 {
			t.Errorf("past=%d: derived %v, dims %v, unbound %v", past, m.DerivedDims, m.Dims(), m.SymbolicDims)
		}
		if len(m.ShapeErrors) > 0 || len(m.Warnings) > 0 {
			t.Errorf("past=%d: shape errors %v, warnings %v", past, m.ShapeErrors, m.Warnings)
		}
	}
	_, err = Load(p, Options{Dims: map[string]int64{"batch": 1, "past": 16, "seq": 8, "total": 5}})
	if err == nil || !strings.Contains(err.Error(), "dimension total is bound to 5, but the model makes it past + seq = 24") {
		t.Errorf("total=5 at past=16, seq=8: %v", err)
	}
	// Unbound, the causal mask's query positions Range(total − seq, total, 1) are seq long,
	// so the mask (which stage files may pass between stages) is [batch, 1, seq, total].
	m, err := Load(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, ok := m.Graph.TensorByName("/model/Where_output_0")
	if !ok {
		t.Fatal("no causal mask /model/Where_output_0")
	}
	if s := m.Graph.Tensors[id].Shape.String(); s != "[batch,1,seq,total]" {
		t.Errorf("causal mask %s", s)
	}
}
