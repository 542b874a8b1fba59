package ingest

import (
	"encoding/binary"
	"fmt"
	"regexp"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
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
func (m *Model) BatchFlow(name string) ([][]BatchAxis, map[string]*onnxpb.TensorProto, error) {
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
			return nil, nil, diag.Usage("input %q has no leading axis to carry a batch (its rank is %d or unknown)", vi.GetName(), len(ds)).About(diag.Tensor, vi.GetName())
		}
		switch v := ds[0].Value.(type) {
		case *onnxpb.TensorShapeProto_Dimension_DimValue:
			if v.DimValue != 1 {
				return nil, nil, diag.Usage("input %q %s has a fixed leading dim of %d, not a batch of one", vi.GetName(), declaredShape(ds), v.DimValue).About(diag.Tensor, vi.GetName())
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
	rewrites := map[string]*onnxpb.TensorProto{}
	for {
		flow, u, err := m.flowOf(clone, dims, name)
		if err == nil || u == nil {
			return flow, rewrites, err
		}
		// A Reshape whose constant shape pins the batch at 1 ([1,-1] after a pooling): where
		// the batch leads its data input, the leading 1 becomes 0 (copy the input's dim),
		// which is the same Reshape at batch 1 and keeps each input's block at batch N
		// (row-major: the leading axis is the outermost).
		fixed := pinningReshapes(u, clone, name)
		if len(fixed) == 0 {
			return nil, nil, err
		}
		for n, tp := range fixed {
			rewrites[n] = tp
			for i, t := range clone.Graph.Initializer {
				if t.GetName() == n {
					clone.Graph.Initializer[i] = tp
				}
			}
		}
	}
}

// flowOf infers the shapes of clone (the model with the batch dim on its inputs) and reads
// the batch's axes; u is nil where the clone does not load at all.
func (m *Model) flowOf(clone *onnxpb.ModelProto, dims map[string]int64, name string) ([][]BatchAxis, *Model, error) {
	u := &Model{Path: m.Path, Dir: m.Dir, SHA256: m.SHA256, FileSize: m.FileSize, proto: clone, shapesOnly: true, names: m.names}
	if err := u.bindDims(dims, nil); err != nil {
		return nil, nil, diag.Usage("the model cannot be loaded with a batch along its inputs' leading axis: %v", err)
	}
	if err := u.build(); err != nil {
		return nil, nil, diag.Usage("the model cannot be loaded with a batch along its inputs' leading axis: %v", err)
	}
	if len(u.Graph.Tensors) != len(m.Graph.Tensors) {
		return nil, nil, fmt.Errorf("ingest: %d tensors at batch %s, %d as loaded", len(u.Graph.Tensors), name, len(m.Graph.Tensors))
	}
	word := regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(name) + `($|[^A-Za-z0-9_])`)
	flow := make([][]BatchAxis, len(u.Graph.Tensors))
	for t := range u.Graph.Tensors {
		tt := &u.Graph.Tensors[t]
		if tt.Name != m.Graph.Tensors[t].Name {
			return nil, nil, fmt.Errorf("ingest: tensor %d is %q at batch %s, %q as loaded", t, tt.Name, name, m.Graph.Tensors[t].Name)
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
	// A node that reads the batch and writes none of it has folded it into a constant (a
	// Reshape to a fixed shape that multiplied the batch of one into another axis) or
	// reduced over it; only ops that read shapes (Shape, Size) may drop it.
	for v := range u.Graph.Nodes {
		n := &u.Graph.Nodes[v]
		if n.OpType == optype.Shape || n.OpType == optype.Size || len(n.Outputs) == 0 {
			continue
		}
		in, out := -1, false
		for _, t := range n.Inputs {
			if t >= 0 && flow[t] != nil && in < 0 {
				in = t
			}
		}
		for _, t := range n.Outputs {
			out = out || (t >= 0 && flow[t] != nil)
		}
		if in >= 0 && !out {
			o := n.Outputs[0]
			if o < 0 {
				continue
			}
			return nil, u, diag.Usage("node %s reads %q, %s at batch %s, and writes %q, %s, which drops the batch (a constant shape or a reduction over it)",
				n.Label(), u.Graph.Tensors[in].Name, u.Graph.Tensors[in].Shape, name, u.Graph.Tensors[o].Name, u.Graph.Tensors[o].Shape).About(diag.Node, n.Label())
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
			return nil, u, diag.Usage("%s %q is %s at batch %s: its leading axis does not carry the batch (%s)", what, tt.Name, tt.Shape, name, producerOf(u, id)).About(diag.Tensor, tt.Name)
		}
	}
	return flow, u, nil
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

// pinningReshapes finds the Reshapes of u whose data input leads with the batch dim name
// and whose shape is an int64 initializer of clone leading with 1 (allowzero unset), read by
// nothing but such shape inputs; it returns each such initializer with its 1 made 0.
func pinningReshapes(u *Model, clone *onnxpb.ModelProto, name string) map[string]*onnxpb.TensorProto {
	g := u.Graph
	byName := map[string]*onnxpb.TensorProto{}
	for _, t := range clone.Graph.Initializer {
		byName[t.GetName()] = t
	}
	ok := map[string]bool{}  // shape initializers of pinning Reshapes
	bad := map[string]bool{} // initializers read otherwise
	for v, n := range clone.Graph.Node {
		for i, in := range n.Input {
			if byName[in] == nil {
				continue
			}
			if n.GetOpType() != optype.Reshape || n.GetDomain() != "" || i != 1 {
				bad[in] = true
				continue
			}
			pin := false
			for _, a := range n.Attribute {
				if a.GetName() == "allowzero" && a.GetI() != 0 {
					bad[in] = true
				}
			}
			node := &g.Nodes[v]
			if len(node.Inputs) > 0 && node.Inputs[0] >= 0 {
				s := g.Tensors[node.Inputs[0]].Shape
				pin = len(s) > 0 && !s[0].Known() && s[0].Param == name
			}
			if first, has := firstInt64(byName[in]); pin && has && first == 1 {
				ok[in] = true
			} else {
				bad[in] = true
			}
		}
	}
	out := map[string]*onnxpb.TensorProto{}
	for n := range ok {
		if bad[n] {
			continue
		}
		tp := proto.Clone(byName[n]).(*onnxpb.TensorProto)
		if len(tp.Int64Data) > 0 {
			tp.Int64Data[0] = 0
		} else {
			raw := append([]byte{}, tp.RawData...)
			clear(raw[:8])
			tp.RawData = raw
		}
		out[n] = tp
	}
	return out
}

// firstInt64 is the first element of an inline int64 tensor.
func firstInt64(tp *onnxpb.TensorProto) (int64, bool) {
	if tp.GetDataType() != int32(onnxpb.TensorProto_INT64) || tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL || len(tp.Dims) != 1 {
		return 0, false
	}
	if len(tp.Int64Data) > 0 {
		return tp.Int64Data[0], true
	}
	if len(tp.RawData) >= 8 {
		return int64(binary.LittleEndian.Uint64(tp.RawData)), true
	}
	return 0, false
}
