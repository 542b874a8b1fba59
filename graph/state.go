package graph

import (
	"sort"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
)

// StatePair is state a model carries from one call to the next: a graph input (a decoder's
// past_key_values.3.key) whose next value is a graph output (present.3.key). A serving loop
// feeds the output of one call back as the input of the next, so the pair lives on one
// device between calls instead of crossing a link every step.
type StatePair struct {
	In, Out int // tensor ids: a graph input and a graph output
	// Concat is the node that appends this call's values to the past (the output's producer),
	// or -1 for a pair named by hand that is not so joined.
	Concat int
	// Axis is the Concat's axis, non-negative (the sequence axis of a KV cache); -1 without one.
	Axis int
	// Given marks a pair named by hand (--state) rather than found.
	Given bool
}

// Owner is the node that writes the state's next value: the producer of Out (-1 when Out
// is a graph input passed through).
func (g *Graph) StateOwner(p StatePair) int { return g.Tensors[p.Out].Producer }

// StatePairs finds the graph's state pairs: a graph input read by a Concat whose output is a
// graph output (possibly through Identity or Cast), the pattern of every KV cache exported by
// transformers and optimum (present.i.key = Concat(past_key_values.i.key, k, axis=2)), or
// read as past_key/past_value by an attention contrib op whose present_key/present_value is
// a graph output (GroupQueryAttention in ONNX Runtime GenAI's model builder; Concat is then
// that node and Axis 2). given
// adds pairs by name, IN → OUT, for models the pattern misses; a name that is not a graph
// input (IN) or output (OUT), or a tensor in two pairs, is an error naming it. Pairs are in
// the order of their inputs among the graph's inputs.
func (g *Graph) StatePairs(given map[string]string) ([]StatePair, error) {
	var out []StatePair
	usedIn, usedOut := map[int]bool{}, map[int]bool{}
	names := make([]string, 0, len(given))
	for in := range given {
		names = append(names, in)
	}
	sort.Strings(names)
	for _, inName := range names {
		outName := given[inName]
		in, ok := g.TensorByName(inName)
		if !ok || g.Tensors[in].Kind != Input {
			return nil, diag.Usage("state pair %s=%s: %q is not an input of the model", inName, outName, inName).About(diag.Tensor, inName)
		}
		o, ok := g.TensorByName(outName)
		if !ok || !g.Tensors[o].IsOutput {
			return nil, diag.Usage("state pair %s=%s: %q is not an output of the model", inName, outName, outName).About(diag.Tensor, outName)
		}
		if usedOut[o] {
			return nil, diag.Usage("state pair %s=%s: output %q is already the state of another input", inName, outName, outName).About(diag.Tensor, outName)
		}
		p := StatePair{In: in, Out: o, Concat: -1, Axis: -1, Given: true}
		if c := g.Tensors[o].Producer; c >= 0 && g.Nodes[c].OpType == optype.Concat && g.Nodes[c].Domain == "" {
			p.Concat, p.Axis = c, g.concatAxis(c)
		}
		usedIn[in], usedOut[o] = true, true
		out = append(out, p)
	}
	for _, in := range g.Inputs {
		if usedIn[in] {
			continue
		}
		for _, c := range g.Tensors[in].Consumers {
			n := &g.Nodes[c]
			if o, ok := g.attentionPresent(c, in); ok && !usedOut[o] {
				usedIn[in], usedOut[o] = true, true
				out = append(out, StatePair{In: in, Out: o, Concat: c, Axis: 2})
				break
			}
			if n.OpType != optype.Concat || n.Domain != "" || len(n.Outputs) != 1 || n.Outputs[0] < 0 {
				continue
			}
			o := g.passThrough(n.Outputs[0])
			if o < 0 || !g.Tensors[o].IsOutput || usedOut[o] || g.Tensors[o].Kind == Input {
				continue
			}
			usedIn[in], usedOut[o] = true, true
			out = append(out, StatePair{In: in, Out: o, Concat: c, Axis: g.concatAxis(c)})
			break
		}
	}
	pos := map[int]int{}
	for i, t := range g.Inputs {
		pos[t] = i
	}
	sort.SliceStable(out, func(i, j int) bool { return pos[out[i].In] < pos[out[j].In] })
	return out, nil
}

// attentionKV maps, for ONNX Runtime's attention contrib ops that keep a KV cache, the
// input index of past_key and past_value to the output index of present_key and
// present_value: GroupQueryAttention (past 3, 4 → present 1, 2), MultiHeadAttention (past 6,
// 7 → present 1, 2) and DecoderMaskedMultiHeadAttention (past 5, 6 → present 1, 2: ORT's
// kPastInputIndex is 5). Each appends this call's keys
// and values to the past on axis 2 (BNSH).
var attentionKV = map[string]map[int]int{
	optype.GroupQueryAttention:             {3: 1, 4: 2},
	optype.MultiHeadAttention:              {6: 1, 7: 2},
	optype.DecoderMaskedMultiHeadAttention: {5: 1, 6: 2},
}

// attentionPresent returns the graph output that node c, an attention contrib op, makes
// from graph input in as its past key or value (through Identity or Cast).
func (g *Graph) attentionPresent(c, in int) (int, bool) {
	n := &g.Nodes[c]
	kv, ok := attentionKV[n.OpType]
	if !ok || n.Domain != "com.microsoft" {
		return -1, false
	}
	for i, t := range n.Inputs {
		j, ok := kv[i]
		if t != in || !ok || j >= len(n.Outputs) || n.Outputs[j] < 0 {
			continue
		}
		if o := g.passThrough(n.Outputs[j]); o >= 0 && g.Tensors[o].Kind != Input {
			return o, true
		}
	}
	return -1, false
}

// passThrough follows t through a chain of single-consumer Identity and Cast nodes to a graph
// output; it returns t itself when t is an output, the output reached, or -1.
func (g *Graph) passThrough(t int) int {
	for steps := 0; steps < 4; steps++ {
		if g.Tensors[t].IsOutput {
			return t
		}
		cs := g.Tensors[t].Consumers
		if len(cs) != 1 {
			return -1
		}
		n := &g.Nodes[cs[0]]
		if (n.OpType != optype.Identity && n.OpType != optype.Cast) || n.Domain != "" || len(n.Outputs) != 1 || n.Outputs[0] < 0 {
			return -1
		}
		t = n.Outputs[0]
	}
	return -1
}

// concatAxis is Concat node c's axis made non-negative with its output's rank (-1 when the
// rank is unknown and the axis negative).
func (g *Graph) concatAxis(c int) int {
	n := &g.Nodes[c]
	a := n.AttrInt("axis", 0)
	if a < 0 {
		r := len(g.Tensors[n.Outputs[0]].Shape)
		if r == 0 {
			return -1
		}
		a += int64(r)
	}
	return int(a)
}

// ShapeOnly reports whether node v reads its input tensors' shapes only (Shape, Size), not
// their values.
func (g *Graph) ShapeOnly(v int) bool {
	n := &g.Nodes[v]
	return n.Domain == "" && (n.OpType == optype.Shape || n.OpType == optype.Size)
}
