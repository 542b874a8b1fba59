package testmodel

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// RunActivations makes every activation of m (tensors only) a graph output, writes that model
// to dir/all_outputs.onnx (dir beside the model when its weights are external), runs it in ONNX
// Runtime on in, and returns ORT's tensors by name with the activations' names in graph order.
// Scalars and float16/bfloat16 outputs get onnxpart's type and shape as hints (ORT's wrapper
// preallocates those); every other output's shape is ORT's own.
func RunActivations(t testing.TB, m *ingest.Model, in map[string]*ort.Tensor, dir string) (map[string]*ort.Tensor, []string) {
	t.Helper()
	g := m.Graph
	mp := proto.Clone(m.Proto()).(*onnxpb.ModelProto)
	have := map[string]bool{}
	for _, o := range mp.Graph.Output {
		have[o.GetName()] = true
	}
	var names []string
	hints := map[string]ort.OutputHint{}
	for _, tn := range g.Tensors {
		if tn.Kind != graph.Activation || tn.Producer < 0 || tn.NonTensor != "" {
			continue
		}
		names = append(names, tn.Name)
		if len(tn.Shape) == 0 || tn.DType == graph.Float16 || tn.DType == graph.BFloat16 {
			hints[tn.Name] = ort.OutputHint{DType: tn.DType, Shape: tn.Shape.Dims()}
		}
		if !have[tn.Name] {
			mp.Graph.Output = append(mp.Graph.Output, &onnxpb.ValueInfoProto{Name: proto.String(tn.Name),
				Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
					ElemType: proto.Int32(int32(tn.DType))}}}})
		}
	}
	path := filepath.Join(dir, "all_outputs.onnx")
	b, err := proto.Marshal(mp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var inNames []string
	for _, id := range g.Inputs {
		inNames = append(inNames, g.Tensors[id].Name)
	}
	s, err := ort.NewSession(path, inNames, names, ort.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Run(in, hints)
	if err != nil {
		t.Fatal(err)
	}
	return res, names
}
