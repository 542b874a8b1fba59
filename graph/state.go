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
// that node and Axis 2), or carried by control flow (controlFlowState: Loop and Scan state,
// and If outputs made from the past, as hybrid stacks write their conv and recurrent
// states). given
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
	out = append(out, g.controlFlowState(usedIn, usedOut)...)
	pos := map[int]int{}
	for i, t := range g.Inputs {
		pos[t] = i
	}
	sort.SliceStable(out, func(i, j int) bool { return pos[out[i].In] < pos[out[j].In] })
	return out, nil
}

// controlFlowState finds state that control flow carries, for the pairs the patterns of
// StatePairs leave:
//   - Loop and Scan: a graph input fed as a loop-carried (Loop) or state (Scan) variable whose
//     final value is a graph output is an exact pair;
//   - If: a branch on whether there is a past (a hybrid stack's linear-attention layer
//     initialising its conv and recurrent states from zeros on the first call and updating
//     the past ones after) makes the present state an output of the If, whose branches read
//     the past input as a capture, directly or through nodes outside the If. Each If output
//     that is a graph output (through Identity or Cast) is paired with the nearest unpaired
//     graph input the If depends on with the output's dtype and shape, or with one axis
//     differing (a cache that grows along it; Axis says which). Inputs whose data reach the
//     If only through other If outputs or attention ops are not followed: another layer's
//     state is further away than this layer's own.
//
// Concat is the control-flow node; Axis -1 for a state of fixed size.
func (g *Graph) controlFlowState(usedIn, usedOut map[int]bool) []StatePair {
	var out []StatePair
	pair := func(c, in, o, axis int) {
		usedIn[in], usedOut[o] = true, true
		out = append(out, StatePair{In: in, Out: o, Concat: c, Axis: axis})
	}
	for _, c := range g.TopoOrder() {
		n := &g.Nodes[c]
		if n.Domain != "" {
			continue
		}
		switch n.OpType {
		case optype.Loop, optype.Scan:
			// Loop: inputs M, cond, v_initial...; outputs v_final..., scan outputs.
			// Scan (opset 9+): inputs state..., scan inputs (num_scan_inputs of them);
			// outputs final state..., scan outputs.
			first, count := 2, len(n.Inputs)-2
			if n.OpType == optype.Scan {
				first, count = 0, len(n.Inputs)-int(n.AttrInt("num_scan_inputs", 0))
			}
			for k := 0; k < count && first+k < len(n.Inputs) && k < len(n.Outputs); k++ {
				in, o := n.Inputs[first+k], n.Outputs[k]
				if in < 0 || o < 0 || g.Tensors[in].Kind != Input || usedIn[in] {
					continue
				}
				if o = g.passThrough(o); o >= 0 && g.Tensors[o].Kind != Input && !usedOut[o] {
					pair(c, in, o, -1)
				}
			}
		case optype.If:
			var outs []int
			for _, t := range n.Outputs {
				if t < 0 {
					continue
				}
				if o := g.passThrough(t); o >= 0 && g.Tensors[o].Kind != Input && !usedOut[o] {
					outs = append(outs, o)
				}
			}
			if len(outs) == 0 {
				continue
			}
			near := g.nearInputs(c)
			for _, o := range outs {
				for _, in := range near {
					if usedIn[in] || g.Tensors[in].DType != g.Tensors[o].DType {
						continue
					}
					if axis, ok := stateShapes(g.Tensors[in].Shape, g.Tensors[o].Shape); ok {
						pair(c, in, o, axis)
						break
					}
				}
			}
		}
	}
	return out
}

// nearInputs returns the graph inputs node c depends on (inputs and captures), nearest first
// (breadth-first over producers; ties in the order of g.Inputs). The walk does not pass
// through other control-flow nodes or attention contrib ops, whose outputs are other
// layers' state or hidden states.
func (g *Graph) nearInputs(c int) []int {
	pos := map[int]int{}
	for i, t := range g.Inputs {
		pos[t] = i
	}
	seen := map[int]bool{}
	var out []int
	frontier := []int{c}
	visited := map[int]bool{c: true}
	for depth := 0; len(frontier) > 0 && depth < 64; depth++ {
		var next, found []int
		for _, v := range frontier {
			for _, t := range g.Nodes[v].Deps() {
				tn := &g.Tensors[t]
				switch {
				case tn.Kind == Input:
					if !seen[t] {
						seen[t] = true
						found = append(found, t)
					}
				case tn.Producer >= 0 && !visited[tn.Producer]:
					p := &g.Nodes[tn.Producer]
					visited[tn.Producer] = true
					if p.OpType == optype.If || p.OpType == optype.Loop || p.OpType == optype.Scan || attentionKV[p.OpType] != nil && p.Domain == "com.microsoft" {
						continue
					}
					next = append(next, tn.Producer)
				}
			}
		}
		sort.Slice(found, func(i, j int) bool { return pos[found[i]] < pos[found[j]] })
		out = append(out, found...)
		frontier = next
	}
	return out
}

// stateShapes reports whether in and out can be one state's past and present: the same rank
// and dims, or all but one axis (a cache growing along it, returned; -1 for none).
func stateShapes(in, out Shape) (axis int, ok bool) {
	if in == nil || out == nil || len(in) != len(out) || len(in) == 0 {
		return -1, false
	}
	axis = -1
	for i := range in {
		if in[i].Known() == out[i].Known() && in[i].Value == out[i].Value && in[i].Param == out[i].Param {
			continue
		}
		if axis >= 0 {
			return -1, false
		}
		axis = i
	}
	return axis, true
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
