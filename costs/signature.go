package costs

import (
	"strconv"
	"strings"

	"github.com/onnxpart/onnxpart/graph"
)

// Signature is node v's op signature, the key of its measured time: canonical (the same node
// gives the same string in any model, whatever the names of its tensors and of the node) and
// stable across onnxpart versions within costs.v1. It holds
//
//	[domain::]OpType(input, …)->(output, …){attr=value;…}
//
// where an input is dtype[shape] followed by #w when it is a weight (an initializer or the
// output of a node folded before run time) or @Producer, the op type of the node producing
// it (@in for a graph input), "-" for an omitted optional input; outputs are dtype[shape];
// attributes are sorted by name, floats in Go's shortest round-trip form, and a node with
// subgraphs (If, Loop) adds its subgraph count and the bytes of weights they hold. The
// producers' op types tell apart a node the runtime fuses into its producer's kernel (a Relu
// after a Conv) from the same node running alone (see the package comment).
func Signature(g *graph.Graph, v int) string {
	n := &g.Nodes[v]
	var b strings.Builder
	if n.Domain != "" && n.Domain != "ai.onnx" {
		b.WriteString(n.Domain)
		b.WriteString("::")
	}
	b.WriteString(n.OpType)
	b.WriteByte('(')
	for i, t := range n.Inputs {
		if i > 0 {
			b.WriteByte(',')
		}
		if t < 0 {
			b.WriteByte('-')
			continue
		}
		tn := &g.Tensors[t]
		tensorSig(&b, tn)
		switch {
		case tn.Kind == graph.Initializer || tn.Producer >= 0 && g.Nodes[tn.Producer].Static:
			b.WriteString("#w")
		case tn.Producer >= 0:
			b.WriteByte('@')
			p := &g.Nodes[tn.Producer]
			if p.Domain != "" && p.Domain != "ai.onnx" {
				b.WriteString(p.Domain)
				b.WriteString("::")
			}
			b.WriteString(p.OpType)
		default:
			b.WriteString("@in")
		}
	}
	b.WriteString(")->(")
	for i, t := range n.Outputs {
		if i > 0 {
			b.WriteByte(',')
		}
		if t < 0 {
			b.WriteByte('-')
			continue
		}
		tensorSig(&b, &g.Tensors[t])
	}
	b.WriteString("){")
	attrs := make([]int, len(n.Attrs))
	for i := range attrs {
		attrs[i] = i
	}
	// Sorted by name (insertion sort: a handful of attributes).
	for i := 1; i < len(attrs); i++ {
		for j := i; j > 0 && n.Attrs[attrs[j]].Name < n.Attrs[attrs[j-1]].Name; j-- {
			attrs[j], attrs[j-1] = attrs[j-1], attrs[j]
		}
	}
	for k, i := range attrs {
		if k > 0 {
			b.WriteByte(';')
		}
		attrSig(&b, &n.Attrs[i])
	}
	if n.Subgraphs > 0 {
		if len(attrs) > 0 {
			b.WriteByte(';')
		}
		b.WriteString("subgraphs=")
		b.WriteString(strconv.Itoa(n.Subgraphs))
		b.WriteString(";subgraph_weight_bytes=")
		b.WriteString(strconv.FormatInt(n.SubgraphParamBytes, 10))
	}
	b.WriteByte('}')
	return b.String()
}

func tensorSig(b *strings.Builder, t *graph.Tensor) {
	if t.NonTensor != "" {
		b.WriteString(t.NonTensor)
		return
	}
	b.WriteString(t.DType.String())
	b.WriteString(t.Shape.String())
}

func attrSig(b *strings.Builder, a *graph.Attr) {
	b.WriteString(a.Name)
	b.WriteByte('=')
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	switch a.Kind {
	case graph.AttrInt:
		b.WriteString(strconv.FormatInt(a.Int, 10))
	case graph.AttrFloat:
		b.WriteString(f(a.Float))
	case graph.AttrString:
		b.WriteString(strconv.Quote(a.Str))
	case graph.AttrInts:
		b.WriteByte('[')
		for i, x := range a.Ints {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatInt(x, 10))
		}
		b.WriteByte(']')
	case graph.AttrFloats:
		b.WriteByte('[')
		for i, x := range a.Floats {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(f(x))
		}
		b.WriteByte(']')
	case graph.AttrStrings:
		b.WriteByte('[')
		for i, x := range a.Strings {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(x))
		}
		b.WriteByte(']')
	default:
		// Tensor- or graph-valued attributes: their kind only (values are in the weights).
		b.WriteString("<")
		b.WriteString(strconv.Itoa(int(a.Kind)))
		b.WriteString(">")
	}
}
