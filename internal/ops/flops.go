package ops

import (
	"strings"

	"github.com/onnxpart/onnxpart/graph"
)

// FLOP formulas (N batch, C channels, K kernel, spatial products written Π); one
// multiply-accumulate counts as 2:
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

// Elems is the element count of tensor t, 0 when t is absent or its shape unknown.
func Elems(g *graph.Graph, t int) int64 {
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

// Dims returns tensor t's sizes when its shape is known.
func Dims(g *graph.Graph, t int) ([]int64, bool) {
	if t < 0 || !g.Tensors[t].Shape.Known() {
		return nil, false
	}
	return g.Tensors[t].Shape.Dims(), true
}

// In is node n's input i, -1 when absent.
func In(n *graph.Node, i int) int {
	if i < len(n.Inputs) {
		return n.Inputs[i]
	}
	return -1
}

// Out is node n's output i, -1 when absent.
func Out(n *graph.Node, i int) int {
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

// perOut counts k operations per element of output 0.
func perOut(k int64) FLOPsFunc {
	return func(g *graph.Graph, n *graph.Node) int64 { return k * Elems(g, Out(n, 0)) }
}

// perIn counts one operation per element of input 0 (reductions, global pools).
func perIn(g *graph.Graph, n *graph.Node) int64 { return Elems(g, In(n, 0)) }

// convFLOPs is Conv's formula with the weight at input w and the bias at input b.
func convFLOPs(w, b int) FLOPsFunc {
	return func(g *graph.Graph, n *graph.Node) int64 {
		wd, okw := Dims(g, In(n, w))
		o, oko := Dims(g, Out(n, 0))
		if !okw || !oko || len(wd) < 3 || len(o) < 3 {
			return 0
		}
		f := 2 * o[0] * o[1] * prod(o[2:]) * wd[1] * prod(wd[2:])
		if In(n, b) >= 0 {
			f += prod(o)
		}
		return f
	}
}

func convTransposeFLOPs(g *graph.Graph, n *graph.Node) int64 {
	w, okw := Dims(g, In(n, 1))
	x, okx := Dims(g, In(n, 0))
	if !okw || !okx || len(w) < 3 || len(x) < 3 {
		return 0
	}
	f := 2 * x[0] * x[1] * prod(x[2:]) * w[1] * prod(w[2:])
	if In(n, 2) >= 0 {
		f += Elems(g, Out(n, 0))
	}
	return f
}

// matmulFLOPs is 2·|output|·K: the inner size K comes from A (its second-to-last axis when
// transA is set and honoured).
func matmulFLOPs(transA bool) FLOPsFunc {
	return func(g *graph.Graph, n *graph.Node) int64 {
		a, oka := Dims(g, In(n, 0))
		o, oko := Dims(g, Out(n, 0))
		if !oka || !oko || len(a) == 0 {
			return 0
		}
		k := a[len(a)-1]
		if transA && n.AttrInt("transA", 0) != 0 && len(a) >= 2 {
			k = a[len(a)-2]
		}
		return 2 * prod(o) * k
	}
}

// gemmProductFLOPs is a Gemm-like node's product A (input 0, transA) by B into output 0, plus
// the bias at input bias when present.
func gemmProductFLOPs(g *graph.Graph, n *graph.Node, bias int) int64 {
	a, oka := Dims(g, In(n, 0))
	o, oko := Dims(g, Out(n, 0))
	if !oka || !oko || len(a) != 2 {
		return 0
	}
	k := a[1]
	if n.AttrInt("transA", 0) != 0 {
		k = a[0]
	}
	f := 2 * prod(o) * k
	if In(n, bias) >= 0 {
		f += prod(o)
	}
	return f
}

func gemmFLOPs(g *graph.Graph, n *graph.Node) int64 {
	f := gemmProductFLOPs(g, n, 2)
	if f == 0 {
		return 0 // shapes unknown
	}
	o, _ := Dims(g, Out(n, 0))
	if n.AttrFloat("alpha", 1) != 1 {
		f += prod(o)
	}
	if In(n, 2) >= 0 && n.AttrFloat("beta", 1) != 1 {
		f += prod(o)
	}
	return f
}

func rnnFLOPs(gates int64) FLOPsFunc {
	return func(g *graph.Graph, n *graph.Node) int64 {
		x, okx := Dims(g, In(n, 0))
		if !okx || len(x) != 3 {
			return 0
		}
		h := n.AttrInt("hidden_size", 0)
		dirs := int64(1)
		if n.AttrString("direction", "forward") == "bidirectional" {
			dirs = 2
		}
		return 2 * x[0] * x[1] * dirs * gates * h * (x[2] + h)
	}
}

func poolFLOPs(g *graph.Graph, n *graph.Node) int64 {
	return Elems(g, Out(n, 0)) * prod(n.AttrInts("kernel_shape"))
}

// ParseEinsum splits "ij,jk->ik" into input terms and the output term ("" when implicit).
func ParseEinsum(eq string) (ins []string, out string, explicit bool) {
	eq = strings.ReplaceAll(eq, " ", "")
	lhs := eq
	if i := strings.Index(eq, "->"); i >= 0 {
		lhs, out, explicit = eq[:i], eq[i+2:], true
	}
	return strings.Split(lhs, ","), out, explicit
}

func einsumFLOPs(g *graph.Graph, n *graph.Node) int64 {
	ins, _, _ := ParseEinsum(n.AttrString("equation", ""))
	size := map[byte]int64{}
	var ell []int64 // broadcast ellipsis dims, right-aligned
	for i, term := range ins {
		d, ok := Dims(g, In(n, i))
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
