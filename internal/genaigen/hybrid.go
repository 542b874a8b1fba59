package genaigen

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/seeded"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// Hybrid stacks. With Config.FullEvery = n > 0, layer i is a full-attention layer
// (GroupQueryAttention with a KV cache) when i+1 is a multiple of n and a gated
// linear-attention layer otherwise, as in Qwen3-Next, Falcon-H1 or LFM2-style hybrids: n = 4
// repeats three linear layers and one full-attention layer. A linear layer keeps two
// fixed-size states from call to call instead of a KV cache that grows:
//
//   - a conv state [batch, C, K-1]: the last K-1 inputs of a causal depthwise Conv of
//     kernel K over the projected q, k and v (C = 3·LinearHeads·head size);
//   - a recurrent state [batch, LinearHeads, d, d] (d the head size): S_t = g_t·S_{t−1} +
//     k_tᵀ v_t, o_t = q_t S_t, with a gate g_t = sigmoid(x W_g) per head and position.
//
// The sequence is computed in parallel (the chunked form of such layers, with one chunk):
// with c = cumsum(log g), o = ((q kᵀ) ⊙ exp(c_t − c_s) ⊙ [s ≤ t]) v + (q ⊙ exp(c_t)) S_past and
// S = exp(c_T) S_past + (k ⊙ exp(c_T − c_s))ᵀ v. Both states come out of If nodes whose
// condition is "no past" (attention_mask as long as input_ids): the then-branch starts from
// zeros (a Pad, not reading the past), the else-branch updates the past. So a decode step
// after a prefill equals a longer prefill, and the past states a first call is fed do not
// matter.

// Names of a linear layer's state inputs and outputs: the conv cache as the model builder
// names LFM2's (past_conv.%d, present_conv.%d; the KV caches keep their names at the
// attention layers' indices), the recurrent state alike.
func PastConv(i int) string         { return fmt.Sprintf("past_conv.%d", i) }
func PastRecurrent(i int) string    { return fmt.Sprintf("past_recurrent.%d", i) }
func PresentConv(i int) string      { return fmt.Sprintf("present_conv.%d", i) }
func PresentRecurrent(i int) string { return fmt.Sprintf("present_recurrent.%d", i) }

// Hybrid is a 24-layer hybrid stack, the shape of the real graph: six groups of three
// linear-attention layers and one full-attention layer (48 state pairs), small dims, int4.
var Hybrid = Config{Name: "genai-hybrid", Layers: 24, Hidden: 64, Heads: 4, KVHeads: 2, Intermediate: 128,
	Vocab: 256, Context: 128, Int4: true, BlockSize: 32, ValueInfo: true, Seed: 1, FullEvery: 4, LinearHeads: 2, ConvKernel: 4}

// Linear reports whether layer i is a linear-attention layer.
func (c Config) Linear(i int) bool { return c.FullEvery > 0 && (i+1)%c.FullEvery != 0 }

func (c Config) linearHeads() int {
	if c.LinearHeads > 0 {
		return c.LinearHeads
	}
	return c.KVHeads
}

func (c Config) kernel() int {
	if c.ConvKernel > 1 {
		return c.ConvKernel
	}
	return 4
}

// convChannels is C, the channels of a linear layer's conv (q, k and v).
func (c Config) convChannels() int { return 3 * c.linearHeads() * c.HeadSize() }

// linearParams are a linear layer's mixer parameters: the qkv projection, the conv, the gate
// and the output projection.
func (c Config) linearParams() int64 {
	h, C, d := int64(c.Hidden), int64(c.convChannels()), int64(c.linearHeads()*c.HeadSize())
	return h*C + C*int64(c.kernel()) + h*int64(c.linearHeads()) + d*h
}

// graphAttr is a graph-valued attribute.
func graphAttr(name string, g *onnxpb.GraphProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_GRAPH.Enum(), G: g}
}

// branch builds an If branch: fill adds its nodes to sub and returns its outputs, float
// tensors (typed without shapes, as exporters often write them).
func (b *builder) branch(name string, fill func(sub *builder) []string) *onnxpb.GraphProto {
	sub := newBuilder(name)
	sub.count = b.count // node names stay unique across the model
	for _, o := range fill(sub) {
		sub.g.Output = append(sub.g.Output, &onnxpb.ValueInfoProto{Name: proto.String(o), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(graph.Float))}}}})
	}
	return sub.g
}

// linearMixer adds layer i's gated linear attention on the normalized input x [B, S, H] and
// returns its output [B, S, H]. first is the "no past" condition (a bool scalar).
func (c Config) linearMixer(b *builder, i int, x, first string) string {
	p := fmt.Sprintf("/model/layers.%d/linear_attn", i)
	wp := fmt.Sprintf("model.layers.%d.linear_attn.", i)
	H, LH, d, K, C := c.Hidden, c.linearHeads(), c.HeadSize(), c.kernel(), c.convChannels()
	D := LH * d
	qkv := c.linear(b, p+"/in_proj", wp+"in_proj.weight", x, H, C)
	xt := b.op("Transpose", p+"/conv/Transpose", []string{qkv}, graph.Float, dims{Batch, C, Seq}, attrInts("perm", 0, 2, 1))
	padLen := fmt.Sprintf("%d + %s", K-1, Seq) // the padded length, an expression in value_info as exporters write
	// the conv state: If(first) pads with zeros, else prepends the past
	pads := b.constInt64(false, 0, 0, int64(K-1), 0, 0, 0)
	starts, ends, axis2 := b.constInt64(false, -int64(K-1)), b.constInt64(false, math.MaxInt64), b.constInt64(false, 2)
	then := b.branch(p+"/conv/then", func(s *builder) []string {
		pad := s.op("Pad", p+"/conv/Pad", []string{xt, pads}, graph.Float, nil)
		return []string{s.op("Identity", p+"/conv/then/padded", []string{pad}, graph.Float, nil),
			s.op("Slice", p+"/conv/then/Slice", []string{pad, starts, ends, axis2}, graph.Float, nil)}
	})
	els := b.branch(p+"/conv/else", func(s *builder) []string {
		cat := s.op("Concat", p+"/conv/Concat", []string{PastConv(i), xt}, graph.Float, nil, attrInt("axis", 2))
		return []string{s.op("Identity", p+"/conv/else/padded", []string{cat}, graph.Float, nil),
			s.op("Slice", p+"/conv/else/Slice", []string{cat, starts, ends, axis2}, graph.Float, nil)}
	})
	outs := b.node("", "If", p+"/conv/If", []string{first}, []out{{dt: graph.Float, shape: dims{Batch, C, padLen}},
		{name: PresentConv(i), dt: graph.Float, shape: dims{Batch, C, K - 1}}}, graphAttr("then_branch", then), graphAttr("else_branch", els))
	w := seeded.Uniform(c.Seed, wp+"conv.weight", C*K, float32(1/math.Sqrt(float64(K))))
	conv := b.op("Conv", p+"/conv/Conv", []string{outs[0], b.initF32(wp+"conv.weight", w, int64(C), 1, int64(K))}, graph.Float, dims{Batch, C, Seq},
		attrInt("group", int64(C)))
	sg := b.op("Sigmoid", p+"/conv/act/Sigmoid", []string{conv}, graph.Float, dims{Batch, C, Seq})
	act := b.op("Mul", p+"/conv/act/Mul", []string{conv, sg}, graph.Float, dims{Batch, C, Seq})
	at := b.op("Transpose", p+"/Transpose", []string{act}, graph.Float, dims{Batch, Seq, C}, attrInts("perm", 0, 2, 1))
	parts := b.node("", "Split", p+"/Split", []string{at, b.constInt64(false, int64(D), int64(D), int64(D))},
		[]out{{dt: graph.Float, shape: dims{Batch, Seq, D}}, {dt: graph.Float, shape: dims{Batch, Seq, D}}, {dt: graph.Float, shape: dims{Batch, Seq, D}}},
		attrInt("axis", 2))
	heads := func(t, name string) string { // [B, S, D] → [B, LH, S, d]
		r := b.op("Reshape", p+"/"+name+"/Reshape", []string{t, b.constInt64(false, 0, 0, int64(LH), int64(d))}, graph.Float, dims{Batch, Seq, LH, d})
		return b.op("Transpose", p+"/"+name+"/Transpose", []string{r}, graph.Float, dims{Batch, LH, Seq, d}, attrInts("perm", 0, 2, 1, 3))
	}
	q, k, v := heads(parts[0], "q"), heads(parts[1], "k"), heads(parts[2], "v")
	scale := b.initF32(wp+"scale", []float32{float32(1 / math.Sqrt(float64(d)))})
	q = b.op("Mul", p+"/q/Mul", []string{q, scale}, graph.Float, dims{Batch, LH, Seq, d})
	// the gate: log g = −softplus(−x W_g), cumulated along the sequence
	a := c.linear(b, p+"/gate_proj", wp+"gate_proj.weight", x, H, LH)
	na := b.op("Neg", p+"/gate/Neg", []string{a}, graph.Float, dims{Batch, Seq, LH})
	sp := b.op("Softplus", p+"/gate/Softplus", []string{na}, graph.Float, dims{Batch, Seq, LH})
	lg := b.op("Neg", p+"/gate/Neg_1", []string{sp}, graph.Float, dims{Batch, Seq, LH})
	cs := b.op("CumSum", p+"/gate/CumSum", []string{lg, b.constInt64(true, 1)}, graph.Float, dims{Batch, Seq, LH})
	ct := b.op("Transpose", p+"/gate/Transpose", []string{cs}, graph.Float, dims{Batch, LH, Seq}, attrInts("perm", 0, 2, 1))
	// intra: (q kᵀ ⊙ exp(c_t − c_s) ⊙ [s ≤ t]) v
	kt := b.op("Transpose", p+"/k/Transpose_1", []string{k}, graph.Float, dims{Batch, LH, d, Seq}, attrInts("perm", 0, 1, 3, 2))
	qk := b.op("MatMul", p+"/MatMul", []string{q, kt}, graph.Float, dims{Batch, LH, Seq, Seq})
	ctT := b.op("Unsqueeze", p+"/gate/Unsqueeze", []string{ct, b.constInt64(false, -1)}, graph.Float, dims{Batch, LH, Seq, 1})
	ctS := b.op("Unsqueeze", p+"/gate/Unsqueeze_1", []string{ct, b.constInt64(false, -2)}, graph.Float, dims{Batch, LH, 1, Seq})
	diff := b.op("Sub", p+"/gate/Sub", []string{ctT, ctS}, graph.Float, dims{Batch, LH, Seq, Seq})
	shp := b.op("Shape", p+"/mask/Shape", []string{qk}, graph.Int64, dims{4})
	ss := b.op("Slice", p+"/mask/Slice", []string{shp, b.constInt64(false, 2), b.constInt64(false, 4), b.constInt64(false, 0)}, graph.Int64, dims{2})
	one := &onnxpb.AttributeProto{Name: proto.String("value"), Type: onnxpb.AttributeProto_TENSOR.Enum(),
		T: &onnxpb.TensorProto{DataType: proto.Int32(int32(graph.Float)), Dims: []int64{1}, RawData: f32raw([]float32{1})}}
	ones := b.op("ConstantOfShape", p+"/mask/ConstantOfShape", []string{ss}, graph.Float, dims{Seq, Seq}, one)
	tri := b.op("Trilu", p+"/mask/Trilu", []string{ones}, graph.Float, dims{Seq, Seq}, attrInt("upper", 0))
	causal := b.op("Cast", p+"/mask/Cast", []string{tri}, graph.Bool, dims{Seq, Seq}, attrInt("to", int64(graph.Bool)))
	ninf := b.initF32(wp+"neg_inf", []float32{float32(math.Inf(-1))})
	masked := b.op("Where", p+"/mask/Where", []string{causal, diff, ninf}, graph.Float, dims{Batch, LH, Seq, Seq})
	decay := b.op("Exp", p+"/gate/Exp", []string{masked}, graph.Float, dims{Batch, LH, Seq, Seq})
	wqk := b.op("Mul", p+"/Mul", []string{qk, decay}, graph.Float, dims{Batch, LH, Seq, Seq})
	intra := b.op("MatMul", p+"/MatMul_1", []string{wqk, v}, graph.Float, dims{Batch, LH, Seq, d})
	// this call's contribution to the state: (k ⊙ exp(c_T − c_s))ᵀ v
	last := b.op("Slice", p+"/gate/Slice", []string{ct, b.constInt64(false, -1), ends, b.constInt64(false, 2)}, graph.Float, dims{Batch, LH, 1})
	toEnd := b.op("Sub", p+"/gate/Sub_1", []string{last, ct}, graph.Float, dims{Batch, LH, Seq})
	toEndE := b.op("Exp", p+"/gate/Exp_1", []string{toEnd}, graph.Float, dims{Batch, LH, Seq})
	toEndU := b.op("Unsqueeze", p+"/gate/Unsqueeze_2", []string{toEndE, b.constInt64(false, -1)}, graph.Float, dims{Batch, LH, Seq, 1})
	kw := b.op("Mul", p+"/k/Mul", []string{k, toEndU}, graph.Float, dims{Batch, LH, Seq, d})
	kwt := b.op("Transpose", p+"/k/Transpose_2", []string{kw}, graph.Float, dims{Batch, LH, d, Seq}, attrInts("perm", 0, 1, 3, 2))
	kv := b.op("MatMul", p+"/MatMul_2", []string{kwt, v}, graph.Float, dims{Batch, LH, d, d})
	// the recurrent state: If(first) starts from this call's, else decays and adds the past
	rthen := b.branch(p+"/recurrent/then", func(s *builder) []string {
		return []string{s.op("Identity", p+"/recurrent/then/out", []string{intra}, graph.Float, nil),
			s.op("Identity", p+"/recurrent/then/state", []string{kv}, graph.Float, nil)}
	})
	relse := b.branch(p+"/recurrent/else", func(s *builder) []string {
		e := s.op("Exp", p+"/recurrent/Exp", []string{ct}, graph.Float, nil)
		eu := s.op("Unsqueeze", p+"/recurrent/Unsqueeze", []string{e, b.constInt64(false, -1)}, graph.Float, nil)
		qe := s.op("Mul", p+"/recurrent/Mul", []string{q, eu}, graph.Float, nil)
		inter := s.op("MatMul", p+"/recurrent/MatMul", []string{qe, PastRecurrent(i)}, graph.Float, nil)
		out := s.op("Add", p+"/recurrent/else/out", []string{intra, inter}, graph.Float, nil)
		el := s.op("Exp", p+"/recurrent/Exp_1", []string{last}, graph.Float, nil)
		elu := s.op("Unsqueeze", p+"/recurrent/Unsqueeze_1", []string{el, b.constInt64(false, -1)}, graph.Float, nil)
		dec := s.op("Mul", p+"/recurrent/Mul_1", []string{PastRecurrent(i), elu}, graph.Float, nil)
		return []string{out, s.op("Add", p+"/recurrent/else/state", []string{dec, kv}, graph.Float, nil)}
	})
	// the output's sequence axis named as exporters name internal dims (total_token_count),
	// a name no input has
	rout := b.node("", "If", p+"/recurrent/If", []string{first}, []out{{dt: graph.Float, shape: dims{Batch, LH, "total_token_count", d}},
		{name: PresentRecurrent(i), dt: graph.Float, shape: dims{Batch, LH, d, d}}}, graphAttr("then_branch", rthen), graphAttr("else_branch", relse))
	o := b.op("Transpose", p+"/o/Transpose", []string{rout[0]}, graph.Float, dims{Batch, Seq, LH, d}, attrInts("perm", 0, 2, 1, 3))
	o = b.op("Reshape", p+"/o/Reshape", []string{o, b.constInt64(false, 0, 0, int64(D))}, graph.Float, dims{Batch, Seq, D})
	return c.linear(b, p+"/o_proj", wp+"o_proj.weight", o, D, H)
}

// noPast adds the "no past" condition: attention_mask is as long as input_ids.
func (c Config) noPast(b *builder) string {
	p := "/model/linear_attn_mask"
	sa := b.op("Shape", p+"/Shape", []string{"attention_mask"}, graph.Int64, dims{2})
	si := b.op("Shape", p+"/Shape_1", []string{"input_ids"}, graph.Int64, dims{2})
	one := b.constInt64(true, 1)
	ta := b.op("Gather", p+"/Gather", []string{sa, one}, graph.Int64, dims{}, attrInt("axis", 0))
	ti := b.op("Gather", p+"/Gather_1", []string{si, one}, graph.Int64, dims{}, attrInt("axis", 0))
	return b.op("Equal", p+"/Equal", []string{ta, ti}, graph.Bool, dims{})
}
