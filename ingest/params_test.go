package ingest

import (
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/onnxpb"
)

// TestConstantWeightsAreParams loads the same small network twice, once with its weights as
// initializers and once as Constant nodes (as Paddle2ONNX and some PyTorch exports write
// them): params, their bytes and every consumer's param bytes must agree.
func TestConstantWeightsAreParams(t *testing.T) {
	m := newOCModel(13)
	x := m.in(f32, 2, 16)
	h := m.op("Relu", ins(m.op("Add", ins(m.op("MatMul", ins(x, m.weight(f32, 16, 32))), m.weight(f32, 32)))))
	w2 := m.weight(f32, 32, 8)
	y := m.op("MatMul", ins(h, w2))
	m.op("Reshape", ins(m.op("Add", ins(y, m.op("MatMul", ins(h, w2)))), m.ints(-1))) // w2 read twice
	m.g.Output = append(m.g.Output, &onnxpb.ValueInfoProto{Name: proto.String(m.g.Node[len(m.g.Node)-1].Output[0])})
	dir := t.TempDir()
	withInits := m.modelProto()
	p1 := filepath.Join(dir, "inits.onnx")
	ocWrite(t, p1, withInits)

	withConsts := proto.Clone(withInits).(*onnxpb.ModelProto)
	var consts []*onnxpb.NodeProto
	for _, init := range withConsts.Graph.Initializer {
		v := proto.Clone(init).(*onnxpb.TensorProto)
		v.Name = nil
		consts = append(consts, &onnxpb.NodeProto{Name: proto.String("const_" + init.GetName()), OpType: proto.String("Constant"),
			Input: []string{}, Output: []string{init.GetName()}, Attribute: []*onnxpb.AttributeProto{aT("value", v)}})
	}
	withConsts.Graph.Initializer = nil
	withConsts.Graph.Node = append(consts, withConsts.Graph.Node...)
	p2 := filepath.Join(dir, "consts.onnx")
	ocWrite(t, p2, withConsts)

	a, err := Load(p1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(p2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sa, sb := a.Summarize(false), b.Summarize(false)
	wantBytes := int64(4*(16*32+32+32*8) + 8) // float weights and the int64 Reshape target
	if sa.ParamsBytes != wantBytes || sa.Params != 16*32+32+32*8+1 {
		t.Fatalf("initializer model: params %d (%d B), want %d B", sa.Params, sa.ParamsBytes, wantBytes)
	}
	if sb.Params != sa.Params || sb.ParamsBytes != sa.ParamsBytes || b.ParamBytes() != sa.ParamsBytes {
		t.Errorf("Constant-node weights: params %d (%d B, ParamBytes %d), initializers: %d (%d B)",
			sb.Params, sb.ParamsBytes, b.ParamBytes(), sa.Params, sa.ParamsBytes)
	}
	if sb.ActivationBytes != sa.ActivationBytes {
		t.Errorf("Constant-node weights count as activations: %d B, want %d B", sb.ActivationBytes, sa.ActivationBytes)
	}
	// Per node (the figures memory and plans use): the consumers read the same param bytes.
	per := func(m *Model) map[string][2]int64 {
		out := map[string][2]int64{}
		for _, n := range m.Graph.Nodes {
			if n.OpType != "Constant" {
				out[n.Name] = [2]int64{n.ParamBytes, n.InputBytes}
			}
		}
		return out
	}
	pa, pb := per(a), per(b)
	for name, v := range pa {
		if pb[name] != v {
			t.Errorf("node %s: param and input bytes %v with Constant weights, %v with initializers", name, pb[name], v)
		}
	}
	var total int64
	for _, n := range b.Graph.Nodes {
		total += n.ParamBytes
	}
	if total != sa.ParamsBytes+4*32*8 { // w2 is read by two nodes
		t.Errorf("node param bytes sum to %d, want %d", total, sa.ParamsBytes+4*32*8)
	}
	// The graph's own total (the manifest's params_bytes, the plan's memory check) agrees.
	if got := b.Graph.ParamBytes(); got != sa.ParamsBytes {
		t.Errorf("graph.ParamBytes with Constant weights = %d, want %d", got, sa.ParamsBytes)
	}
}
