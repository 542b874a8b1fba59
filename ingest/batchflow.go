package ingest

import (
	"fmt"
	"regexp"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// BatchFlow says where tensors carry a batch when the model is run on one: the shapes are
// inferred once more (onnxpart's own symbolic inference) with the leading dim of every graph
// input made the symbolic dim name (a fixed 1 or a dim_param alike), every other dim as
// bound. It returns, per tensor of m.Graph, which axes carry the batch: BatchExact where the
// dim is the batch itself, BatchFolded where it is an expression of it (batch*12 after a
// Reshape that merges heads into the batch), 0 elsewhere (nil for a tensor that carries no
// batch). The model takes a batch when every graph input and output carries it on its
// leading axis; otherwise the error, of kind usage, names the first that does not and its
// shape at batch name (a Reshape whose constant shape pins the batch at 1 shows here).
//
// It is a proof about shapes only: an op that mixes the inputs of a batch while keeping its
// size (a Softmax over axis 0) passes; running the stage files at a batch larger than 1 in
// ONNX Runtime is the check of values.
func (m *Model) BatchFlow(name string) ([][]BatchAxis, error) {
	clone := proto.Clone(m.proto).(*onnxpb.ModelProto)
	g := clone.Graph
	inits := map[string]bool{}
	for _, t := range g.Initializer {
		inits[t.GetName()] = true
	}
	leading := map[string]bool{} // dim_params at the leading axis of an input
	for _, vi := range g.Input {
		if inits[vi.GetName()] {
			continue
		}
		ds := tensorDims(vi.GetType())
		if len(ds) == 0 {
			return nil, diag.Usage("input %q has no leading axis to carry a batch (its rank is %d or unknown)", vi.GetName(), len(ds)).About(diag.Tensor, vi.GetName())
		}
		switch v := ds[0].Value.(type) {
		case *onnxpb.TensorShapeProto_Dimension_DimValue:
			if v.DimValue != 1 {
				return nil, diag.Usage("input %q %s has a fixed leading dim of %d, not a batch of one", vi.GetName(), declaredShape(ds), v.DimValue).About(diag.Tensor, vi.GetName())
			}
		case *onnxpb.TensorShapeProto_Dimension_DimParam:
			if v.DimParam != "" {
				leading[v.DimParam] = true
			}
		}
		ds[0].Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: name}
	}
	// Declared shapes of outputs and value_info that fix the leading dim at 1 would only
	// state the batch-one load again: their leading dim becomes unknown.
	for _, l := range [][]*onnxpb.ValueInfoProto{g.Output, g.ValueInfo} {
		for _, vi := range l {
			if ds := tensorDims(vi.GetType()); len(ds) > 0 {
				if v, ok := ds[0].Value.(*onnxpb.TensorShapeProto_Dimension_DimValue); ok && v.DimValue == 1 {
					ds[0].Value = nil
				}
			}
		}
	}
	dims := map[string]int64{}
	for k, v := range m.dims {
		if !leading[k] && k != name {
			dims[k] = v
		}
	}
	u := &Model{Path: m.Path, Dir: m.Dir, SHA256: m.SHA256, FileSize: m.FileSize, proto: clone, shapesOnly: true, names: m.names}
	if err := u.bindDims(dims, nil); err != nil {
		return nil, diag.Usage("the model cannot be loaded with a batch along its inputs' leading axis: %v", err)
	}
	if err := u.build(); err != nil {
		return nil, diag.Usage("the model cannot be loaded with a batch along its inputs' leading axis: %v", err)
	}
	if len(u.Graph.Tensors) != len(m.Graph.Tensors) {
		return nil, fmt.Errorf("ingest: %d tensors at batch %s, %d as loaded", len(u.Graph.Tensors), name, len(m.Graph.Tensors))
	}
	word := regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(name) + `($|[^A-Za-z0-9_])`)
	flow := make([][]BatchAxis, len(u.Graph.Tensors))
	for t := range u.Graph.Tensors {
		tt := &u.Graph.Tensors[t]
		if tt.Name != m.Graph.Tensors[t].Name {
			return nil, fmt.Errorf("ingest: tensor %d is %q at batch %s, %q as loaded", t, tt.Name, name, m.Graph.Tensors[t].Name)
		}
		s := tt.Shape
		if len(s) != len(m.Graph.Tensors[t].Shape) {
			continue // rank unknown in one of the loads: the stage files keep the load's shape
		}
		for i, d := range s {
			if d.Known() || !word.MatchString(d.Param) {
				continue
			}
			if flow[t] == nil {
				flow[t] = make([]BatchAxis, len(s))
			}
			flow[t][i] = BatchFolded
			if d.Param == name {
				flow[t][i] = BatchExact
			}
		}
	}
	leads := func(t int) bool { return len(flow[t]) > 0 && flow[t][0] == BatchExact }
	for _, id := range append(append([]int{}, u.Graph.Inputs...), u.Graph.Outputs...) {
		tt := &u.Graph.Tensors[id]
		if tt.NonTensor == "" && !leads(id) {
			what := "input"
			if tt.IsOutput {
				what = "output"
			}
			return nil, diag.Usage("%s %q is %s at batch %s: its leading axis does not carry the batch (%s)", what, tt.Name, tt.Shape, name, producerOf(u, id)).About(diag.Tensor, tt.Name)
		}
	}
	return flow, nil
}

// BatchAxis says how an axis carries a batch (Model.BatchFlow).
type BatchAxis uint8

// Batch axes.
const (
	BatchExact  BatchAxis = 1 // the axis is the batch
	BatchFolded BatchAxis = 2 // the axis is an expression of the batch (batch*12)
)

// producerOf names the node that produces tensor t of u's graph.
func producerOf(u *Model, t int) string {
	if p := u.Graph.Tensors[t].Producer; p >= 0 {
		return "made by " + u.Graph.Nodes[p].Label()
	}
	return "a graph input"
}
