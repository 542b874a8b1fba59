package familygen

import (
	"fmt"
	"math/rand/v2"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
	"github.com/onnxpart/onnxpart/schedule/instances"
)

// RandWire is a randomly wired network (Xie et al., ICCV 2019) in the small regime, as the
// corpus's randwire_ws_small_small.onnx was exported: a 3×3 stride-2 stem, a ReLU–SepConv
// stride 2, then Stages random-graph stages of N nodes (the graph from
// schedule/instances.RandomDAG: Erdős–Rényi, Watts–Strogatz or Barabási–Albert), channels
// doubling and resolution halving per stage. A node with several inputs aggregates them by a
// weighted sum with sigmoid weights (Sigmoid of its weight vector, Gather, Mul, Add), then
// ReLU–SepConv (depthwise 3×3, pointwise 1×1 with its BN folded); the stage's source nodes
// read its input (one shared ReLU) at stride 2, and its output is the mean of its sink nodes.
// The head is ReLU, a 1×1 conv to 20·C channels, ReLU, pooling and the classifier.
type RandWire struct {
	Model   string  // instances.ER, WS or BA
	N       int     // nodes per stage (32)
	P       float64 // ER link / WS rewiring probability (0: the generator's default)
	K       int     // WS lattice degree (0: 4)
	M       int     // BA attachments (0: 5)
	C       int64   // channels of the first stage (small regime: 78; the corpus's small model 8)
	Stages  int     // random stages (3)
	Image   int64   // input height and width (224)
	Classes int64
	// GraphSeed draws the random graphs (the weights come from Write's seed).
	GraphSeed uint64
}

func (r RandWire) build(b *builder) (int64, error) {
	if r.N < 2 || r.C < 2 || r.Stages < 1 || r.Image < 32 || r.Classes < 1 {
		return 0, fmt.Errorf("familygen: randwire needs N ≥ 2, C ≥ 2, stages ≥ 1, image ≥ 32 and classes (got %+v)", r)
	}
	x := fmap{b.input("input", graph.Float, 1, 3, r.Image, r.Image), 3, r.Image, r.Image}
	x = b.conv("conv1.conv1.0", x, r.C/2, 3, 3, 2, 1, 1, 1)
	x = b.relu("conv2", x)
	x = b.convBias("conv2.dw", x, x.c, 3, 3, 2, 1, 1, x.c, false)
	x = b.conv("conv2.pw", x, r.C, 1, 1, 1, 0, 0, 1)
	for st := range r.Stages {
		edges, err := instances.RandomDAG(r.Model, r.N, r.P, r.K, r.M, randFor(r, st))
		if err != nil {
			return 0, err
		}
		preds := make([][]int, r.N)
		outdeg := make([]int, r.N)
		for _, e := range edges {
			preds[e[1]] = append(preds[e[1]], e[0])
			outdeg[e[0]]++
		}
		cout := r.C << st
		s := fmt.Sprintf("stages.%d", st)
		var in fmap // the stage input's ReLU, shared by the source nodes
		outs := make([]fmap, r.N)
		for v := range r.N {
			ns := fmt.Sprintf("%s.nodes.%d", s, v)
			var y fmap
			stride := int64(1)
			switch len(preds[v]) {
			case 0:
				if in.name == "" {
					in = b.relu(ns+"/unit", x)
				}
				y, stride = in, 2
			case 1:
				y = b.relu(ns+"/unit", outs[preds[v][0]])
			default:
				w := b.weight(ns+".w", 1, 0, int64(len(preds[v])))
				sig := b.op(optype.Sigmoid, "/"+ns, []string{w})
				var sum string
				for i, u := range preds[v] {
					idx := b.ints(fmt.Sprintf("%s.idx%d", ns, i), []int64{int64(i)})
					g := b.op(optype.Gather, "/"+ns, []string{sig, idx}, attrInt("axis", 0))
					m := b.op(optype.Mul, "/"+ns, []string{outs[u].name, g})
					if i == 0 {
						sum = m
					} else {
						sum = b.op(optype.Add, "/"+ns, []string{sum, m})
					}
				}
				y = outs[preds[v][0]]
				y.name = sum
				y = b.relu(ns+"/unit", y)
			}
			y = b.convBias(ns+".unit.dw", y, y.c, 3, 3, stride, 1, 1, y.c, false)
			outs[v] = b.conv(ns+".unit.pw", y, cout, 1, 1, 1, 0, 0, 1)
		}
		var sinks []fmap
		for v := range r.N {
			if outdeg[v] == 0 {
				sinks = append(sinks, outs[v])
			}
		}
		y := sinks[0]
		for _, z := range sinks[1:] {
			y.name = b.op(optype.Add, "/"+s, []string{y.name, z.name})
		}
		if len(sinks) > 1 {
			y.name = b.op(optype.Div, "/"+s, []string{y.name, b.floats(s+".count", []float32{float32(len(sinks))})})
		}
		x = y
	}
	x = b.relu("head/head.0", x)
	x = b.relu("head/head.3", b.conv("head.1", x, 20*r.C, 1, 1, 1, 0, 0, 1))
	b.head("head", x, r.Classes)
	return 14, nil
}

// randFor is the random source of stage st's graph.
func randFor(r RandWire, st int) *rand.Rand { return rand.New(rand.NewPCG(r.GraphSeed, uint64(st))) }
