// Package benchtest makes broken stage directories for the tests of pipebench and of the
// bench command.
package benchtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
	"github.com/onnxpart/onnxpart/onnxpb"
	"github.com/onnxpart/onnxpart/verify"
)

// FailingStage writes a model with stage i's inputs and outputs that fails at run time (a
// Gather whose index, computed from the inputs, is out of range) in place of the stage file,
// with the manifest's sha256 updated, so that the directory still checks.
func FailingStage(dir string, i int) error {
	man, err := emit.ReadManifest(dir)
	if err != nil {
		return err
	}
	st := &man.Stages[i]
	s := proto.String
	i64 := proto.Int64
	vi := func(r emit.TensorRef) *onnxpb.ValueInfoProto {
		dt, _ := graph.ParseDType(r.DType)
		var dims []*onnxpb.TensorShapeProto_Dimension
		for _, d := range r.Shape {
			dims = append(dims, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d.Value}})
		}
		return &onnxpb.ValueInfoProto{Name: s(r.Name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(dt)), Shape: &onnxpb.TensorShapeProto{Dim: dims}}}}}
	}
	g := &onnxpb.GraphProto{Name: s("fails")}
	var maxes []string
	for k, in := range st.Inputs {
		g.Input = append(g.Input, vi(in))
		m := "max" + string(rune('a'+k))
		g.Node = append(g.Node, &onnxpb.NodeProto{OpType: s(optype.ReduceMax), Input: []string{in.Name}, Output: []string{m},
			Attribute: []*onnxpb.AttributeProto{{Name: s("keepdims"), Type: onnxpb.AttributeProto_INT.Enum(), I: i64(0)}}})
		maxes = append(maxes, m)
	}
	f32 := func(name string, v float32, dims ...int64) *onnxpb.TensorProto {
		return &onnxpb.TensorProto{Name: s(name), DataType: proto.Int32(int32(graph.Float)), Dims: dims, FloatData: []float32{v}}
	}
	g.Initializer = append(g.Initializer, f32("zero", 0), f32("seven", 7),
		&onnxpb.TensorProto{Name: s("shape1"), DataType: proto.Int32(int32(graph.Int64)), Dims: []int64{1}, Int64Data: []int64{1}})
	g.Node = append(g.Node,
		&onnxpb.NodeProto{OpType: s(optype.Sum), Input: maxes, Output: []string{"sum"}},
		&onnxpb.NodeProto{OpType: s(optype.Mul), Input: []string{"sum", "zero"}, Output: []string{"nought"}},
		&onnxpb.NodeProto{OpType: s(optype.Add), Input: []string{"nought", "seven"}, Output: []string{"sevenf"}},
		&onnxpb.NodeProto{OpType: s(optype.Reshape), Input: []string{"sevenf", "shape1"}, Output: []string{"idxf"}},
		&onnxpb.NodeProto{OpType: s(optype.Cast), Input: []string{"idxf"}, Output: []string{"idx"},
			Attribute: []*onnxpb.AttributeProto{{Name: s("to"), Type: onnxpb.AttributeProto_INT.Enum(), I: i64(int64(graph.Int64))}}})
	for k, out := range st.Outputs {
		if len(out.Shape) == 0 || out.Shape[0].Value != 1 {
			return fmt.Errorf("stage %d output %s has shape %v; want a leading 1", i, out.Name, out.Shape)
		}
		n := int64(2)
		dims := []int64{2}
		for _, d := range out.Shape[1:] {
			dims = append(dims, d.Value)
			n *= d.Value
		}
		table := "table" + string(rune('a'+k))
		g.Initializer = append(g.Initializer, &onnxpb.TensorProto{Name: s(table), DataType: proto.Int32(int32(graph.Float)), Dims: dims, RawData: make([]byte, 4*n)})
		g.Node = append(g.Node, &onnxpb.NodeProto{OpType: s(optype.Gather), Input: []string{table, "idx"}, Output: []string{out.Name}})
		g.Output = append(g.Output, vi(out))
	}
	mp := &onnxpb.ModelProto{IrVersion: i64(8), OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: s(""), Version: i64(17)}}, Graph: g}
	data, err := proto.Marshal(mp)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, st.File), data, 0o644); err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	raw, err := os.ReadFile(filepath.Join(dir, emit.ManifestFile))
	if err != nil {
		return err
	}
	fixed := strings.Replace(string(raw), st.SHA256, hex.EncodeToString(sum[:]), 1)
	if err := os.WriteFile(filepath.Join(dir, emit.ManifestFile), []byte(fixed), 0o644); err != nil {
		return err
	}
	if _, err := verify.Check(dir); err != nil {
		return fmt.Errorf("the failing stage does not check: %v", err)
	}
	return nil
}
