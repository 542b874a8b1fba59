package measure

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/genaigen"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/onnxpb"
	"github.com/onnxpart/onnxpart/profile"
)

// TestQDQGroupsAreORTKernels: the groups the ort-cpu rule set prices as int8 kernels are
// the integer kernels ONNX Runtime's CPU provider makes of a QDQ model, as many of each kind
// as the graph ORT optimises holds: on genaigen's QDQ CNN (its convolutions DQ → Conv → Relu
// → Q: QLinearConv; its classifier DQ → MatMul → Add, which ORT turns into a float Gemm
// first: no integer product) and on a QDQ MLP (DQ → MatMul → Q twice: QLinearMatMul).
func TestQDQGroupsAreORTKernels(t *testing.T) {
	if err := ort.Init(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	c := genaigen.TinyCNN
	c.Channels = []int{16, 32, 32, 64}
	p, err := genaigen.WriteCNN(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	checkQDQGroups(t, p, map[string]int64{"batch": 2}, len(c.Channels), 0)
	for _, act := range []graph.DType{graph.Uint8, graph.Int8} {
		checkQDQGroups(t, qdqMLP(t, dir, act, false), nil, 0, 2)
		checkQDQGroups(t, qdqMLP(t, dir, act, true), nil, 1, 0)
	}
}

// checkQDQGroups compares the int8 groups of ort-cpu on the model at p with the integer
// kernels of ORT's optimised graph; convs and products are the counts ORT must show.
func checkQDQGroups(t *testing.T, p string, dims map[string]int64, convs, products int) {
	t.Helper()
	dir := t.TempDir()
	m, err := ingest.Load(p, ingest.Options{Dims: dims})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "optimized.onnx")
	if err := saveOptimized(p, out, m.Graph, MeasureOptions{Threads: 1}); err != nil {
		t.Fatal(err)
	}
	opt, err := readOptNodes(out)
	if err != nil {
		t.Fatal(err)
	}
	ortConv, ortMatMul := 0, 0
	for _, n := range opt {
		switch n.Op {
		case optype.QLinearConv:
			ortConv++
		case optype.QLinearMatMul, optype.QGemm, optype.MatMulIntegerToFloat:
			ortMatMul++
		}
	}
	cl, err := hw.Resolve(context.Background(), "spr", hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := fusion.Builtin("ort-cpu")
	if err != nil {
		t.Fatal(err)
	}
	co, err := fusion.Coarsen(m.Graph, rs)
	if err != nil {
		t.Fatal(err)
	}
	conv, mm := 0, 0
	for i := range co.Groups {
		members := co.Members(i)
		for _, v := range members {
			switch cls, _, ok := profile.GroupKernel(&cl.Devices[0], m.Graph, members, v); {
			case ok && cls == profile.ClassConvInt8:
				conv++
			case ok && cls == profile.ClassMatMulInt8:
				mm++
			}
		}
	}
	if ortConv != convs || ortMatMul != products {
		t.Errorf("%s: ONNX Runtime runs %d integer convolutions and %d integer products, want %d and %d", filepath.Base(p), ortConv, ortMatMul, convs, products)
	}
	if conv != ortConv || mm != ortMatMul {
		t.Errorf("%s: ort-cpu prices %d int8 convolutions and %d int8 products; ONNX Runtime runs %d and %d", filepath.Base(p), conv, mm, ortConv, ortMatMul)
	}
}

// qdqMLP writes x [4, 32] → Q → DQ → MatMul(DQ(int8 w1 [32, 64])) → Q → DQ → MatMul(DQ(int8
// w2 [64, 16])) → Q → DQ → y, as ORT's static quantizer writes an MLP in QDQ form, with
// activations of type act; with conv, x [1, 8, 8, 8] → Q → DQ → Conv(DQ(int8 w [16, 8, 3, 3]),
// pads 1) → Q → DQ → y instead.
func qdqMLP(t *testing.T, dir string, act graph.DType, conv bool) string {
	t.Helper()
	g := &onnxpb.GraphProto{Name: proto.String("qdq_mlp")}
	vi := func(name string, dims ...int64) *onnxpb.ValueInfoProto {
		var pd []*onnxpb.TensorShapeProto_Dimension
		for _, d := range dims {
			pd = append(pd, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
		}
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(graph.Float)), Shape: &onnxpb.TensorShapeProto{Dim: pd}}}}}
	}
	init := func(name string, dt graph.DType, raw []byte, dims ...int64) string {
		g.Initializer = append(g.Initializer, &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(dt)), Dims: dims, RawData: raw})
		return name
	}
	node := func(op string, ins []string, out string) string {
		g.Node = append(g.Node, &onnxpb.NodeProto{Name: proto.String(out), OpType: proto.String(op), Input: ins, Output: []string{out}})
		return out
	}
	scale := init("scale", graph.Float, []byte{0, 0, 0, 0x3d}) // 0.03125
	zv := byte(128)
	if act == graph.Int8 {
		zv = 0
	}
	zp := init("zp", act, []byte{zv})
	wzp := init("wzp", graph.Int8, []byte{0})
	qdq := func(x, name string) string {
		return node("DequantizeLinear", []string{node("QuantizeLinear", []string{x, scale, zp}, name+"_q"), scale, zp}, name+"_dq")
	}
	weight := func(name string, dims ...int64) string {
		n := int64(1)
		for _, d := range dims {
			n *= d
		}
		raw := make([]byte, n)
		for i := range raw {
			raw[i] = byte(int8(i*37%255 - 127))
		}
		return node("DequantizeLinear", []string{init(name, graph.Int8, raw, dims...), scale, wzp}, name+"_dq")
	}
	if conv {
		g.Input = append(g.Input, vi("x", 1, 8, 8, 8))
		y := node("Conv", []string{qdq("x", "x"), weight("w", 16, 8, 3, 3)}, "y0")
		g.Node[len(g.Node)-1].Attribute = []*onnxpb.AttributeProto{{Name: proto.String("pads"), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: []int64{1, 1, 1, 1}}}
		node("Identity", []string{qdq(y, "y0")}, "y")
		g.Output = append(g.Output, vi("y", 1, 16, 8, 8))
	} else {
		g.Input = append(g.Input, vi("x", 4, 32))
		h := node("MatMul", []string{qdq("x", "x"), weight("w1", 32, 64)}, "h")
		y := node("MatMul", []string{qdq(h, "h"), weight("w2", 64, 16)}, "y0")
		node("Identity", []string{qdq(y, "y0")}, "y")
		g.Output = append(g.Output, vi("y", 4, 16))
	}
	mp := &onnxpb.ModelProto{IrVersion: proto.Int64(10), Graph: g,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(21)}}}
	data, err := proto.Marshal(mp)
	if err != nil {
		t.Fatal(err)
	}
	name := "qdq-mlp-"
	if conv {
		name = "qdq-conv-"
	}
	p := filepath.Join(dir, name+act.String()+".onnx")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
