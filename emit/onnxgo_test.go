package emit

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	onnxgo "github.com/owulveryck/onnx-go"
	gonum "gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/simple"
	"gorgonia.org/tensor"

	"github.com/onnxpart/onnxpart/internal/testmodel"
)

// An onnx-go backend that records what onnx-go decodes: every value node with its name and
// (for weights and typed inputs) its tensor, and every operation with the values it
// produces and reads. Edges are recorded as they are set rather than read back through
// gonum's iterators: gonum v0.8.2 (onnx-go's dependency) ranges over maps through runtime
// internals that Go 1.26's maps no longer match, and returns nil edges unless built with
// -tags safe.
type recordingBackend struct {
	*simple.WeightedDirectedGraph
	inputs map[int64][]edgeTo // value node → the values it is computed from
	ops    []recordedOp
}

type edgeTo struct {
	index float64 // operator input index
	to    int64
}

type recordedOp struct {
	op      string
	outputs []string
	inputs  []string // in operator order
}

type valueNode struct {
	id     int64
	name   string
	tensor tensor.Tensor
}

func (n *valueNode) ID() int64                       { return n.id }
func (n *valueNode) SetName(s string)                { n.name = s }
func (n *valueNode) GetName() string                 { return n.name }
func (n *valueNode) SetTensor(t tensor.Tensor) error { n.tensor = t; return nil }
func (n *valueNode) GetTensor() tensor.Tensor        { return n.tensor }

func (b *recordingBackend) NewNode() gonum.Node {
	return &valueNode{id: b.WeightedDirectedGraph.NewNode().ID()}
}

func (b *recordingBackend) SetWeightedEdge(e gonum.WeightedEdge) {
	b.inputs[e.From().ID()] = append(b.inputs[e.From().ID()], edgeTo{e.Weight(), e.To().ID()})
	b.WeightedDirectedGraph.SetWeightedEdge(e)
}

func (b *recordingBackend) ApplyOperation(o onnxgo.Operation, outs ...gonum.Node) error {
	r := recordedOp{op: o.Name}
	for _, n := range outs {
		r.outputs = append(r.outputs, n.(*valueNode).name)
	}
	if len(outs) > 0 {
		ins := append([]edgeTo{}, b.inputs[outs[0].ID()]...)
		sort.SliceStable(ins, func(i, j int) bool { return ins[i].index < ins[j].index })
		for _, e := range ins {
			r.inputs = append(r.inputs, b.Node(e.to).(*valueNode).name)
		}
	}
	b.ops = append(b.ops, r)
	return nil
}

// TestStagesDecodeWithOnnxGo: the stages of the CNN models (float32, inline weights: the
// subset onnx-go v0.5.0 supports) decode with github.com/owulveryck/onnx-go, and what it
// sees is the stage: the same operators in the same order with the same inputs, the
// stage's inputs as graph inputs, and every weight decoded with its shape.
func TestStagesDecodeWithOnnxGo(t *testing.T) {
	for _, name := range []string{"resnet50_small.onnx", "squeezenet1_1_small.onnx", "vgg16_small.onnx",
		"googlenet_small.onnx", "mobilenet_v2_small.onnx", "efficientnet_b0_small.onnx"} {
		t.Run(name, func(t *testing.T) {
			dir, man := writeSplit(t, testmodel.Corpus(t, name), 4)
			for _, st := range man.Stages {
				data, err := os.ReadFile(filepath.Join(dir, st.File))
				if err != nil {
					t.Fatal(err)
				}
				b := &recordingBackend{WeightedDirectedGraph: simple.NewWeightedDirectedGraph(0, 0), inputs: map[int64][]edgeTo{}}
				model := onnxgo.NewModel(b)
				if err := model.UnmarshalBinary(data); err != nil {
					t.Fatalf("stage %d: onnx-go: %v", st.Index, err)
				}
				mp := stageModelOf(t, dir, st)
				if len(b.ops) != len(mp.Graph.Node) {
					t.Fatalf("stage %d: onnx-go saw %d operators, the stage has %d", st.Index, len(b.ops), len(mp.Graph.Node))
				}
				for i, n := range mp.Graph.Node {
					got := b.ops[i]
					wantIn := n.Input
					if len(wantIn) == 0 { // onnx-go invents an input for input-less nodes (Constant)
						wantIn = []string{n.GetName() + "/input"}
					}
					if got.op != n.GetOpType() || strings.Join(got.outputs, ",") != strings.Join(n.Output, ",") || strings.Join(got.inputs, ",") != strings.Join(wantIn, ",") {
						t.Fatalf("stage %d op %d: onnx-go saw %+v, the stage has %s(%v) → %v", st.Index, i, got, n.GetOpType(), n.Input, n.Output)
					}
				}
				// Graph inputs: the stage's inputs (onnx-go drops those that are weights).
				var ins []string
				for _, id := range model.Input {
					ins = append(ins, b.Node(id).(*valueNode).name)
				}
				var want []string
				for _, r := range st.Inputs {
					want = append(want, r.Name)
				}
				if strings.Join(ins, ",") != strings.Join(want, ",") {
					t.Errorf("stage %d: onnx-go inputs %v, want %v", st.Index, ins, want)
				}
				for _, w := range mp.Graph.Initializer {
					n, ok := model.GetNodeByName(w.GetName())
					if !ok || n.(*valueNode).tensor == nil {
						t.Fatalf("stage %d: onnx-go did not decode weight %s", st.Index, w.GetName())
					}
					shape := n.(*valueNode).tensor.Shape()
					if len(w.Dims) > 0 && len(shape) != len(w.Dims) {
						t.Errorf("stage %d: weight %s has shape %v in onnx-go, dims %v", st.Index, w.GetName(), shape, w.Dims)
					}
				}
			}
		})
	}
}
