package ingest

import (
	"strings"

	"github.com/onnxpart/onnxpart/graph"
)

// FLOP counting. One multiply-accumulate (MAC) counts as 2 FLOPs. Formulas per op family
// (N batch, C channels, K kernel, spatial products written Π):
//
//	Conv            2 · N · Cout · Π(out spatial) · (Cin/group) · Π(kernel)   (+ N·Cout·Π(out) with bias)
//	ConvTranspose   2 · N · Cin · Π(in spatial) · (Cout/group) · Π(kernel)    (+ bias as Conv)
//	MatMul          2 · Π(batch) · M · K · N
//	Gemm            2 · M · K · N  (+ M·N for C, + M·N per alpha/beta ≠ 1)
//	RNN/GRU/LSTM    2 · seq · batch · dirs · gates · hidden · (input + hidden)
//	Einsum          2 · Π(size of every distinct index letter)
//	MaxPool/AvgPool out elements · Π(kernel);  global pools: input elements
//	Reduce*, ArgMax input elements;  Softmax family 5 per element
//	LayerNorm/GroupNorm/InstanceNorm 8 per element;  BatchNorm 2 per element (scale, shift)
//	elementwise arithmetic 1 per output element; transcendental (Exp, Erf, Tanh, Sigmoid,
//	Log, Sqrt, Pow, Gelu, …) 4 per output element
//	data movement (Reshape, Transpose, Concat, Slice, Gather, Cast, Pad, …) 0
//
// Bytes: InputBytes sums the activations and graph inputs a node reads, ParamBytes the
// weights (initializers and Constant-node values), OutputBytes what it writes; unknown
// sizes count 0.

var transcendental = map[string]bool{
	"Exp": true, "Log": true, "Erf": true, "Tanh": true, "Sigmoid": true, "Sqrt": true,
	"Pow": true, "Gelu": true, "Softplus": true, "Softsign": true, "Elu": true, "Selu": true,
	"Celu": true, "Mish": true, "HardSwish": true, "HardSigmoid": true, "Sin": true, "Cos": true,
	"Tan": true, "Asin": true, "Acos": true, "Atan": true, "Sinh": true, "Cosh": true,
	"Asinh": true, "Acosh": true, "Atanh": true, "Reciprocal": true, "FastGelu": true,
	"BiasGelu": true, "QuickGelu": true, "Swish": true,
}

var arithmetic = map[string]bool{
	"Add": true, "Sub": true, "Mul": true, "Div": true, "Mod": true, "Max": true, "Min": true,
	"Sum": true, "Mean": true, "Relu": true, "LeakyRelu": true, "PRelu": true, "Clip": true,
	"Neg": true, "Abs": true, "Floor": true, "Ceil": true, "Round": true, "Sign": true,
	"Where": true, "Equal": true, "Less": true, "Greater": true, "LessOrEqual": true,
	"GreaterOrEqual": true, "And": true, "Or": true, "Xor": true, "Not": true,
	"ThresholdedRelu": true, "Shrink": true, "BitShift": true, "IsNaN": true, "IsInf": true,
	"CumSum": true, "BiasAdd": true, "QuantizeLinear": true, "DequantizeLinear": true,
	"DynamicQuantizeLinear": true, "Dropout": false,
}

func (m *Model) countCosts() {
	g := m.Graph
	for i := range g.Nodes {
		n := &g.Nodes[i]
		n.FLOPs = nodeFLOPs(g, n)
		if n.Subgraphs > 0 && i < len(m.proto.GetGraph().GetNode()) {
			f, note := m.sub.controlFLOPs(n, m.proto.Graph.Node[i])
			n.FLOPs = addSat(max(n.FLOPs, 0), f)
			if note != "" {
				m.Notes = append(m.Notes, note)
			}
			_, n.SubgraphParamBytes = subgraphWeights(m.proto.Graph.Node[i])
		}
		n.InputBytes, n.ParamBytes, n.OutputBytes = 0, 0, 0
		seen := map[int]bool{}
		for _, t := range n.Deps() {
			if seen[t] {
				continue
			}
			seen[t] = true
			b := max(g.Tensors[t].Bytes, 0)
			if isParam(g, t) {
				n.ParamBytes += b
			} else {
				n.InputBytes += b
			}
		}
		n.ParamBytes += n.SubgraphParamBytes
		for _, t := range n.Outputs {
			if t >= 0 {
				n.OutputBytes += max(g.Tensors[t].Bytes, 0)
			}
		}
	}
}

// isParam reports whether tensor t is a weight stored in the model: an initializer, or the
// value of a Constant node (graph.Graph.IsParam).
func isParam(g *graph.Graph, t int) bool { return g.IsParam(t) }

// ParamBytes sums the sizes of the weights some node reads, each once: initializers and
// Constant-node values (graph.Graph.ParamBytes).
func (m *Model) ParamBytes() int64 { return m.Graph.ParamBytes() }

func elems(g *graph.Graph, t int) int64 {
	if t < 0 {
		return 0
	}
	s := g.Tensors[t].Shape
	if !s.Known() {
		return 0
	}
	n, err := s.NumElements()
	if err != nil {
		return 0
	}
	return n
}

func dimsOfTensor(g *graph.Graph, t int) ([]int64, bool) {
	if t < 0 || !g.Tensors[t].Shape.Known() {
		return nil, false
	}
	return g.Tensors[t].Shape.Dims(), true
}

func in(n *graph.Node, i int) int {
	if i < len(n.Inputs) {
		return n.Inputs[i]
	}
	return -1
}

func out(n *graph.Node, i int) int {
	if i < len(n.Outputs) {
		return n.Outputs[i]
	}
	return -1
}

func prod(v []int64) int64 {
	p := int64(1)
	for _, x := range v {
		p *= x
	}
	return p
}

// nodeFLOPs applies the formulas above; 0 when shapes are unknown.
func nodeFLOPs(g *graph.Graph, n *graph.Node) int64 {
	op := n.OpType
	y := out(n, 0)
	switch op {
	case "Conv", "ConvInteger", "QLinearConv", "FusedConv":
		wIdx := 1
		if op == "QLinearConv" {
			wIdx = 3
		}
		w, okw := dimsOfTensor(g, in(n, wIdx))
		o, oko := dimsOfTensor(g, y)
		if !okw || !oko || len(w) < 3 || len(o) < 3 {
			return 0
		}
		macs := o[0] * o[1] * prod(o[2:]) * w[1] * prod(w[2:])
		f := 2 * macs
		bIdx := 2
		if op == "QLinearConv" {
			bIdx = 8
		}
		if in(n, bIdx) >= 0 {
			f += prod(o)
		}
		return f
	case "ConvTranspose":
		w, okw := dimsOfTensor(g, in(n, 1))
		x, okx := dimsOfTensor(g, in(n, 0))
		if !okw || !okx || len(w) < 3 || len(x) < 3 {
			return 0
		}
		f := 2 * x[0] * x[1] * prod(x[2:]) * w[1] * prod(w[2:])
		if in(n, 2) >= 0 {
			f += elems(g, y)
		}
		return f
	case "MatMul", "MatMulInteger", "QLinearMatMul", "FusedMatMul":
		// FLOPs = 2·|output|·K: the inner size K comes from A, so B's index is not needed.
		a, oka := dimsOfTensor(g, in(n, 0))
		o, oko := dimsOfTensor(g, y)
		if !oka || !oko || len(a) == 0 {
			return 0
		}
		k := a[len(a)-1]
		if op == "FusedMatMul" && n.AttrInt("transA", 0) != 0 && len(a) >= 2 {
			k = a[len(a)-2]
		}
		return 2 * prod(o) * k
	case "Gemm", "FusedGemm":
		a, oka := dimsOfTensor(g, in(n, 0))
		o, oko := dimsOfTensor(g, y)
		if !oka || !oko || len(a) != 2 {
			return 0
		}
		k := a[1]
		if n.AttrInt("transA", 0) != 0 {
			k = a[0]
		}
		f := 2 * prod(o) * k
		if in(n, 2) >= 0 {
			f += prod(o)
		}
		if n.AttrFloat("alpha", 1) != 1 {
			f += prod(o)
		}
		if in(n, 2) >= 0 && n.AttrFloat("beta", 1) != 1 {
			f += prod(o)
		}
		return f
	case "RNN", "GRU", "LSTM":
		x, okx := dimsOfTensor(g, in(n, 0))
		if !okx || len(x) != 3 {
			return 0
		}
		h := n.AttrInt("hidden_size", 0)
		gates := map[string]int64{"RNN": 1, "GRU": 3, "LSTM": 4}[op]
		dirs := int64(1)
		if n.AttrString("direction", "forward") == "bidirectional" {
			dirs = 2
		}
		return 2 * x[0] * x[1] * dirs * gates * h * (x[2] + h)
	case "Einsum":
		return einsumFLOPs(g, n)
	case "MaxPool", "AveragePool", "LpPool":
		k := n.AttrInts("kernel_shape")
		return elems(g, y) * prod(k)
	case "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool",
		"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
		"ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "TopK":
		return elems(g, in(n, 0))
	case "Softmax", "LogSoftmax", "Hardmax":
		return 5 * elems(g, y)
	case "LayerNormalization", "GroupNormalization", "InstanceNormalization",
		"SkipLayerNormalization", "SimplifiedLayerNormalization", "MeanVarianceNormalization",
		"LpNormalization", "LRN":
		return 8 * elems(g, y)
	case "BatchNormalization":
		return 2 * elems(g, y)
	}
	if transcendental[op] {
		return 4 * elems(g, y)
	}
	if arithmetic[op] {
		return elems(g, y)
	}
	return 0
}

func einsumFLOPs(g *graph.Graph, n *graph.Node) int64 {
	ins, _, _ := parseEinsum(n.AttrString("equation", ""))
	size := map[byte]int64{}
	var ell []int64 // broadcast ellipsis dims, right-aligned
	for i, term := range ins {
		d, ok := dimsOfTensor(g, in(n, i))
		if !ok {
			return 0
		}
		letters := strings.Replace(term, "...", "", 1)
		nEll := len(d) - len(letters)
		pos := 0
		for j := 0; j < len(term); j++ {
			if strings.HasPrefix(term[j:], "...") {
				e := d[pos : pos+nEll]
				for len(ell) < len(e) {
					ell = append([]int64{1}, ell...)
				}
				off := len(ell) - len(e)
				for k, x := range e {
					ell[off+k] = max(ell[off+k], x)
				}
				pos += nEll
				j += 2
				continue
			}
			if pos < len(d) && d[pos] > size[term[j]] {
				size[term[j]] = d[pos]
			}
			pos++
		}
	}
	f := 2 * prod(ell)
	for _, s := range size {
		f *= s
	}
	return f
}
