package genai

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/onnxpb"
)

// decoderModel is a decoder step in miniature: the past keys and the new tokens concatenated
// into the present (past + seq), projected, reduced and masked by an attention mask of the
// total length; the model's dims are tied (total = past + seq).
func decoderModel(t testing.TB) string {
	w := make([]float32, 64)
	for i := range w {
		w[i] = float32(i%7) - 3
	}
	ints := func(name string, v ...int64) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
	}
	one := func(name string, v int64) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
	}
	g := &onnxpb.GraphProto{
		Name: proto.String("decoder"),
		Input: []*onnxpb.ValueInfoProto{vinfo("past_key", graph.Float, "batch", "past", 8), vinfo("x", graph.Float, "batch", "seq", 8),
			vinfo("attention_mask", graph.Float, "batch", "total")},
		Output:      []*onnxpb.ValueInfoProto{vinfo("y", graph.Float, "batch", "total"), vinfo("present", graph.Float, "batch", "total", 8)},
		Initializer: []*onnxpb.TensorProto{floatTensor("w", []int64{8, 8}, w...)},
		Node: []*onnxpb.NodeProto{
			node("Concat", "concat", []string{"past_key", "x"}, []string{"present"}, one("axis", 1)),
			node("MatMul", "proj", []string{"present", "w"}, []string{"h"}),
			node("ReduceMean", "mean", []string{"h"}, []string{"s"}, ints("axes", 2), one("keepdims", 0)),
			node("Mul", "mask", []string{"s", "attention_mask"}, []string{"y"}),
		},
	}
	return writeModel(t, &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: opsets(), Graph: g})
}

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

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
