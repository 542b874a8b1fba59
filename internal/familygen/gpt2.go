package familygen

import (
	"fmt"
	"math"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
)

// GPT2 is a GPT-2-like decoder (Radford et al., 2019) as a plain export at opset 14 looks
// without ONNX Runtime's fusions: token and position embeddings, Layers pre-LN blocks
// (LayerNorm as ReduceMean, Sub, Pow, Sqrt, Div, Mul, Add; the fused QKV projection split
// into heads by Split, Reshape and Transpose; scaled scores, a causal Where with a constant
// lower-triangular mask, the padding mask added, Softmax; the output projection and the
// residual; an MLP with the tanh GELU spelt out), a final LayerNorm and the tied LM head.
// Inputs input_ids and attention_mask (int64 [1, Seq]); output logits [1, Seq, Vocab].
type GPT2 struct {
	Layers, Hidden, Heads, Seq, Vocab int64
	// LayerNorm writes each LayerNorm as one LayerNormalization node at opset 17 (the
	// exporter's form from opset 17 on) instead of its seven ops at opset 14.
	LayerNorm bool
	// MaskPerLayer computes the padding mask in every layer from attention_mask (as
	// PyTorch's nn.MultiheadAttention exports it) instead of once before the layers.
	MaskPerLayer bool
}

func (m GPT2) build(b *builder) (int64, error) {
	if m.Layers < 1 || m.Heads < 1 || m.Hidden < m.Heads || m.Hidden%m.Heads != 0 || m.Seq < 1 || m.Vocab < 2 {
		return 0, fmt.Errorf("familygen: gpt2 needs layers, heads dividing hidden, seq and vocab (got %+v)", m)
	}
	d, h, s := m.Hidden, m.Heads, m.Seq
	hd := d / h
	ids := b.input("input_ids", graph.Int64, 1, s)
	mask := b.input("attention_mask", graph.Int64, 1, s)
	pos := make([]int64, s)
	for i := range pos {
		pos[i] = int64(i)
	}
	wte := b.weight("transformer.wte.weight", 0.1, 0, m.Vocab, d)
	x := b.op(optype.Gather, "/transformer/wte", []string{wte, ids})
	p := b.op(optype.Gather, "/transformer/wpe", []string{b.weight("transformer.wpe.weight", 0.02, 0, s, d), b.ints("position_ids", pos, 1, s)})
	x = b.op(optype.Add, "/transformer", []string{x, p})

	// Padding mask: (1 − mask) · min, broadcast over heads and query positions.
	axes, one, minv := b.ints("unsqueeze_axes", []int64{1, 2}, 2), b.floats("one", []float32{1}), b.floats("mask_min", []float32{-1e4})
	padding := func(sc string) string {
		em := b.op(optype.Unsqueeze, sc, []string{mask, axes})
		em = b.op(optype.Cast, sc, []string{em}, attrInt("to", int64(graph.Float)))
		em = b.op(optype.Sub, sc, []string{one, em})
		return b.op(optype.Mul, sc, []string{em, minv})
	}
	em := padding("/transformer")
	causal := make([]bool, s*s)
	for i := range s {
		for j := range i + 1 {
			causal[i*s+j] = true
		}
	}
	bias := b.bools("causal_mask", causal, 1, 1, s, s)
	maskValue := b.floats("masked_bias", []float32{-1e4})
	scale := b.floats("attn_scale", []float32{float32(math.Sqrt(float64(hd)))})
	headShape := b.ints("head_shape", []int64{1, s, h, hd}, 4)
	mergeShape := b.ints("merge_shape", []int64{1, s, d}, 3)
	split := b.ints("qkv_split", []int64{d, d, d}, 3)
	half, c1, c2 := b.floats("half", []float32{0.5}), b.floats("gelu_c", []float32{0.044715}), b.floats("gelu_s", []float32{float32(math.Sqrt(2 / math.Pi))})
	three := b.floats("three", []float32{3})
	two := b.floats("two", []float32{2})
	eps := b.floats("ln_eps", []float32{1e-5})

	ln := func(sc, x string) string {
		if m.LayerNorm {
			return b.op(optype.LayerNormalization, sc, []string{x, b.weight(sc[1:]+".weight", 0.1, 1, d), b.weight(sc[1:]+".bias", 0.05, 0, d)},
				attrInt("axis", -1), attrFloat("epsilon", 1e-5))
		}
		mu := b.op(optype.ReduceMean, sc, []string{x}, attrInts("axes", -1))
		dx := b.op(optype.Sub, sc, []string{x, mu})
		v := b.op(optype.ReduceMean, sc, []string{b.op(optype.Pow, sc, []string{dx, two})}, attrInts("axes", -1))
		sd := b.op(optype.Sqrt, sc, []string{b.op(optype.Add, sc, []string{v, eps})})
		y := b.op(optype.Div, sc, []string{dx, sd})
		y = b.op(optype.Mul, sc, []string{y, b.weight(sc[1:]+".weight", 0.1, 1, d)})
		return b.op(optype.Add, sc, []string{y, b.weight(sc[1:]+".bias", 0.05, 0, d)})
	}
	linear := func(sc, x string, in, out int64) string {
		y := b.op(optype.MatMul, sc, []string{x, b.weight(sc[1:]+".weight", float32(math.Sqrt(3/float64(in))), 0, in, out)})
		return b.op(optype.Add, sc, []string{y, b.weight(sc[1:]+".bias", 0.02, 0, out)})
	}
	for l := range m.Layers {
		sc := fmt.Sprintf("/transformer/h.%d", l)
		a := ln(sc+"/ln_1", x)
		qkv := b.node(optype.Split, sc+"/attn", []string{linear(sc+"/attn/c_attn", a, d, 3*d), split}, 3, attrInt("axis", 2))
		heads := func(t string, perm ...int64) string {
			r := b.op(optype.Reshape, sc+"/attn", []string{t, headShape})
			return b.op(optype.Transpose, sc+"/attn", []string{r}, attrInts("perm", perm...))
		}
		q, k, v := heads(qkv[0], 0, 2, 1, 3), heads(qkv[1], 0, 2, 3, 1), heads(qkv[2], 0, 2, 1, 3)
		w := b.op(optype.MatMul, sc+"/attn", []string{q, k})
		w = b.op(optype.Div, sc+"/attn", []string{w, scale})
		w = b.op(optype.Where, sc+"/attn", []string{bias, w, maskValue})
		if m.MaskPerLayer {
			em = padding(sc + "/attn/mask")
		}
		w = b.op(optype.Add, sc+"/attn", []string{w, em})
		w = b.op(optype.Softmax, sc+"/attn", []string{w}, attrInt("axis", -1))
		o := b.op(optype.MatMul, sc+"/attn", []string{w, v})
		o = b.op(optype.Transpose, sc+"/attn", []string{o}, attrInts("perm", 0, 2, 1, 3))
		o = b.op(optype.Reshape, sc+"/attn", []string{o, mergeShape})
		x = b.op(optype.Add, sc, []string{x, linear(sc+"/attn/c_proj", o, d, d)})

		f := linear(sc+"/mlp/c_fc", ln(sc+"/ln_2", x), d, 4*d)
		g := b.op(optype.Mul, sc+"/mlp/act", []string{b.op(optype.Pow, sc+"/mlp/act", []string{f, three}), c1})
		g = b.op(optype.Mul, sc+"/mlp/act", []string{b.op(optype.Add, sc+"/mlp/act", []string{f, g}), c2})
		g = b.op(optype.Add, sc+"/mlp/act", []string{b.op(optype.Tanh, sc+"/mlp/act", []string{g}), one})
		g = b.op(optype.Mul, sc+"/mlp/act", []string{b.op(optype.Mul, sc+"/mlp/act", []string{f, half}), g})
		x = b.op(optype.Add, sc, []string{x, linear(sc+"/mlp/c_proj", g, 4*d, d)})
	}
	x = ln("/transformer/ln_f", x)
	// The LM head is tied to wte: its transpose, as an exporter folds it to an initializer.
	wt := b.g.Initializer[0].GetRawData()
	tr := make([]byte, len(wt))
	for i := range m.Vocab {
		for j := range d {
			copy(tr[4*(j*m.Vocab+i):], wt[4*(i*d+j):4*(i*d+j)+4])
		}
	}
	y := b.node(optype.MatMul, "/lm_head", []string{x, b.raw("lm_head.weight", graph.Float, tr, d, m.Vocab)}, 1)
	b.g.Node[len(b.g.Node)-1].Output[0] = "logits"
	_ = y
	b.output("logits", graph.Float, 1, s, m.Vocab)
	if m.LayerNorm {
		return 17, nil
	}
	return 14, nil
}
