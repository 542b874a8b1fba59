// Package genaigen writes ONNX models in the forms ONNX Runtime users deploy, for onnxpart's
// tests of contrib and quantized operators (issue 39):
//
//   - decoders as ONNX Runtime GenAI's model builder writes them (Config, Write):
//     com.microsoft GroupQueryAttention with past/present KV caches in BNSH layout, seqlens_k
//     and total_sequence_length computed from attention_mask (ReduceSum, Sub, Cast; Shape,
//     Gather, Cast), the residual carried by SimplifiedLayerNormalization and
//     SkipSimplifiedLayerNormalization (no residual Add), projections as MatMulNBits with
//     4-bit block-quantized weights or as plain MatMul in float32, rotary embeddings inside
//     GroupQueryAttention (do_rotary) or as separate RotaryEmbedding nodes, the KV caches'
//     last axis as the head size or as the dim_param kv_cache_dim (the current builder's
//     form, which serves float and quantized caches alike), the embedding as
//     Gather or GatherBlockQuantized; node and tensor names in the builder's style
//     (/model/layers.0/attn/GroupQueryAttention), and genai_config.json beside the model;
//   - an int8 CNN in QDQ form (QuantizeLinear/DequantizeLinear around Conv and MatMul, as
//     ORT's static quantization writes it): QDQCNN;
//   - a BERT-style encoder in the form ORT's transformer optimizer writes
//     (EmbedLayerNormalization, Attention, SkipLayerNormalization, FastGelu or BiasGelu):
//     Encoder.
//
// Weights are small deterministic pseudo-random values: the models compute something well
// defined, which tests compare with ONNX Runtime, but have learnt nothing. Nothing here is
// copied from the builder; the forms follow its documented output and ORT's
// ContribOperators.md.
package genaigen

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/seeded"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// Rotary says where the rotary embedding is applied.
type Rotary int

const (
	// RotaryFused applies it inside GroupQueryAttention (do_rotary = 1, cos/sin caches as
	// inputs 7 and 8), as the builder does for the CPU and CUDA providers; the model has no
	// position_ids input (positions come from seqlens_k).
	RotaryFused Rotary = iota
	// RotarySeparate applies it with com.microsoft RotaryEmbedding nodes on q and k, fed by
	// the position_ids input.
	RotarySeparate
)

// Config describes a decoder in the model builder's form.
type Config struct {
	// Name is the base name: <Name>.onnx (and genai_config.json beside it).
	Name string
	// Layers decoder layers of width Hidden; Heads query heads of Hidden/Heads each over
	// KVHeads key/value heads; Intermediate the MLP width; Vocab the vocabulary; Context the
	// rows of the rotary caches (context_length).
	Layers, Hidden, Heads, KVHeads, Intermediate, Vocab, Context int
	// Int4 writes the projections and lm_head as MatMulNBits (bits 4, BlockSize, symmetric:
	// no zero points, so the default zero point 8 applies); otherwise float32 MatMul.
	Int4 bool
	// Dequantized, with Int4 false, writes float32 MatMul weights equal to the int4 model's
	// dequantized ones: the reference the int4 model is compared with.
	Dequantized bool
	// BlockSize is the quantization block (0: 32); AccuracyLevel MatMulNBits'
	// accuracy_level (the builder uses 4 for the CPU: int8 activations).
	BlockSize, AccuracyLevel int
	// QuantEmbed writes the embedding as GatherBlockQuantized (uint8-packed 4-bit, blocks
	// along the hidden axis) instead of Gather.
	QuantEmbed bool
	Rotary     Rotary
	// ValueInfo writes every intermediate tensor's type and shape, as the builder's
	// exports carry; without it, shapes must be inferred.
	ValueInfo bool
	// KVCacheDim writes the KV caches' last axis as the symbolic dim kv_cache_dim, as the
	// current model builder does (one export serves a float cache, whose last axis is the
	// head size, and a quantized one); otherwise it is the head size itself.
	KVCacheDim bool
	// FullEvery > 0 makes a hybrid stack (hybrid.go): layer i is full attention when i+1 is
	// a multiple of FullEvery, else gated linear attention with LinearHeads heads (0:
	// KVHeads) and a causal conv of kernel ConvKernel (0: 4), keeping a conv state and a
	// recurrent state that If nodes produce.
	FullEvery, LinearHeads, ConvKernel int
	// Theta is the rotary base (0: 10000); Eps the RMSNorm ε (0: 1e-5).
	Theta float64
	Eps   float32
	Seed  uint64
}

// Presets.
var (
	// Tiny: 2 layers, hidden 64, 4 heads over 2 KV heads (head size 16), vocabulary 256,
	// int4 with block 32, fused rotary.
	Tiny = Config{Name: "genai-tiny", Layers: 2, Hidden: 64, Heads: 4, KVHeads: 2, Intermediate: 128,
		Vocab: 256, Context: 128, Int4: true, BlockSize: 32, ValueInfo: true, Seed: 1}
	// Small is the decoder: 4 layers, hidden 256, 8 heads over 2 KV heads (head
	// size 32), MLP 704, vocabulary 1000, context 512, int4 (3,332,352 logical parameters,
	// as llamagen.Small, whose plain-op twin it is).
	Small = Config{Name: "genai-small", Layers: 4, Hidden: 256, Heads: 8, KVHeads: 2, Intermediate: 704,
		Vocab: 1000, Context: 512, Int4: true, BlockSize: 32, AccuracyLevel: 4, ValueInfo: true, Seed: 1}
	// Medium: 16 layers, hidden 1024, 16 heads over 4 KV heads, MLP 2816, vocabulary 8000,
	// context 2048, int4 (for the opt-in tier).
	Medium = Config{Name: "genai-medium", Layers: 16, Hidden: 1024, Heads: 16, KVHeads: 4, Intermediate: 2816,
		Vocab: 8000, Context: 2048, Int4: true, BlockSize: 32, AccuracyLevel: 4, ValueInfo: true, Seed: 1}
)

// HeadSize is Hidden/Heads.
func (c Config) HeadSize() int { return c.Hidden / c.Heads }

func (c Config) block() int {
	if c.BlockSize <= 0 {
		return 32
	}
	return c.BlockSize
}

func (c Config) theta() float64 {
	if c.Theta <= 0 {
		return 10000
	}
	return c.Theta
}

func (c Config) eps() float32 {
	if c.Eps <= 0 {
		return 1e-5
	}
	return c.Eps
}

func (c Config) name() string {
	if c.Name == "" {
		return "model"
	}
	return c.Name
}

// Validate reports a config that cannot make a model.
func (c Config) Validate() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("genaigen: "+f, a...) }
	switch {
	case c.Layers < 1 || c.Hidden < 1 || c.Heads < 1 || c.KVHeads < 1 || c.Intermediate < 1 || c.Vocab < 1 || c.Context < 1:
		return bad("layers, hidden, heads, KV heads, intermediate, vocab and context must be positive: %+v", c)
	case c.Hidden%c.Heads != 0 || c.Heads%c.KVHeads != 0:
		return bad("hidden %d, heads %d, KV heads %d: hidden must be a multiple of heads, heads of KV heads", c.Hidden, c.Heads, c.KVHeads)
	case c.HeadSize()%2 != 0:
		return bad("head size %d is odd", c.HeadSize())
	case (c.Int4 || c.Dequantized || c.QuantEmbed) && (c.Hidden%c.block() != 0 || c.Intermediate%c.block() != 0 || c.block()%2 != 0):
		return bad("hidden %d and intermediate %d must be multiples of the block size %d", c.Hidden, c.Intermediate, c.block())
	case c.QuantEmbed && !c.Int4 && !c.Dequantized:
		return bad("QuantEmbed needs Int4 (or Dequantized for its float32 reference)")
	case c.Int4 && c.Dequantized:
		return bad("Int4 and Dequantized exclude each other")
	case c.FullEvery < 0 || c.LinearHeads < 0 || c.ConvKernel < 0:
		return bad("full-every %d, linear heads %d and conv kernel %d must not be negative", c.FullEvery, c.LinearHeads, c.ConvKernel)
	case c.FullEvery > 0 && (c.Int4 || c.Dequantized) && (c.linearHeads()*c.HeadSize())%c.block() != 0:
		return bad("linear heads %d × head size %d must be a multiple of the block size %d", c.linearHeads(), c.HeadSize(), c.block())
	}
	return nil
}

// Params is the number of logical (unpacked) parameters: embeddings, projections, norms,
// lm_head (the rotary caches are not parameters).
func (c Config) Params() int64 {
	h, kv := int64(c.Hidden), int64(c.KVHeads*c.HeadSize())
	mlp := 2*h + 3*h*int64(c.Intermediate)
	var n int64
	for i := range c.Layers {
		if c.Linear(i) {
			n += mlp + c.linearParams()
		} else {
			n += mlp + 2*h*h + 2*h*kv
		}
	}
	return n + 2*h*int64(c.Vocab) + h
}

// Names of the KV inputs and outputs, as the builder writes them.
func PastKey(i int) string      { return fmt.Sprintf("past_key_values.%d.key", i) }
func PastValue(i int) string    { return fmt.Sprintf("past_key_values.%d.value", i) }
func PresentKey(i int) string   { return fmt.Sprintf("present.%d.key", i) }
func PresentValue(i int) string { return fmt.Sprintf("present.%d.value", i) }

// Inputs lists the model's inputs in order.
func (c Config) Inputs() []string {
	in := []string{"input_ids", "attention_mask"}
	if c.Rotary == RotarySeparate {
		in = append(in, "position_ids")
	}
	for i := range c.Layers {
		if c.Linear(i) {
			in = append(in, PastConv(i), PastRecurrent(i))
		} else {
			in = append(in, PastKey(i), PastValue(i))
		}
	}
	return in
}

// Outputs lists the model's outputs in order.
func (c Config) Outputs() []string {
	out := []string{"logits"}
	for i := range c.Layers {
		if c.Linear(i) {
			out = append(out, PresentConv(i), PresentRecurrent(i))
		} else {
			out = append(out, PresentKey(i), PresentValue(i))
		}
	}
	return out
}

// The builder's dimension names.
const (
	Batch = "batch_size"
	Seq   = "sequence_length"
	Past  = "past_sequence_length"
	Total = "total_sequence_length"
	// KVDim is the KV caches' last axis with Config.KVCacheDim.
	KVDim = "kv_cache_dim"
)

// kvLast is the KV caches' last axis: the head size, or kv_cache_dim.
func (c Config) kvLast() any {
	if c.KVCacheDim {
		return KVDim
	}
	return c.HeadSize()
}

// Write writes dir/<Name>.onnx and dir/genai_config.json and returns the model's path.
func Write(dir string, c Config) (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	b, err := c.build()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, c.name()+".onnx")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		return "", err
	}
	cfg, err := json.MarshalIndent(c.GenAIConfig(), "", "    ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "genai_config.json"), append(cfg, '\n'), 0o644); err != nil {
		return "", err
	}
	return p, nil
}

// GenAIConfig is genai_config.json as the builder writes it for this model.
func (c Config) GenAIConfig() map[string]any {
	in := map[string]any{
		"input_ids": "input_ids", "attention_mask": "attention_mask",
		"past_key_names": "past_key_values.%d.key", "past_value_names": "past_key_values.%d.value",
	}
	if c.Rotary == RotarySeparate {
		in["position_ids"] = "position_ids"
	}
	return map[string]any{
		"model": map[string]any{
			"bos_token_id":   1,
			"context_length": c.Context,
			"decoder": map[string]any{
				"session_options":     map[string]any{"log_id": "onnxruntime-genai", "provider_options": []any{}},
				"filename":            c.name() + ".onnx",
				"head_size":           c.HeadSize(),
				"hidden_size":         c.Hidden,
				"inputs":              in,
				"outputs":             map[string]any{"logits": "logits", "present_key_names": "present.%d.key", "present_value_names": "present.%d.value"},
				"num_attention_heads": c.Heads,
				"num_hidden_layers":   c.Layers,
				"num_key_value_heads": c.KVHeads,
			},
			"eos_token_id": 2,
			"pad_token_id": 0,
			"type":         "llama",
			"vocab_size":   c.Vocab,
		},
		"search": map[string]any{
			"diversity_penalty": 0.0, "do_sample": false, "early_stopping": true, "length_penalty": 1.0,
			"max_length": c.Context, "min_length": 0, "no_repeat_ngram_size": 0, "num_beams": 1,
			"num_return_sequences": 1, "past_present_share_buffer": true, "repetition_penalty": 1.0,
			"temperature": 1.0, "top_k": 1, "top_p": 1.0,
		},
	}
}

// quantize4 quantizes w [K, N] (row-major, used as x·w) per column in blocks of bs along K,
// symmetrically (scale = max|w|/7, q = round(w/scale) + 8 in [0, 15]). It returns
// MatMulNBits' B [N, K/bs, bs/2] (two values a byte, the even index in the low nibble),
// scales [N·K/bs], and the dequantized w.
func quantize4(w []float32, K, N, bs int) (packed []byte, scales []float32, deq []float32) {
	nb := K / bs
	packed = make([]byte, N*nb*bs/2)
	scales = make([]float32, N*nb)
	deq = make([]float32, len(w))
	for n := range N {
		for blk := range nb {
			var amax float32
			for j := range bs {
				amax = max(amax, float32(math.Abs(float64(w[(blk*bs+j)*N+n]))))
			}
			s := amax / 7
			if s == 0 {
				s = 1
			}
			scales[n*nb+blk] = s
			for j := range bs {
				k := blk*bs + j
				q := int(math.Round(float64(w[k*N+n] / s)))
				q = min(max(q, -8), 7) + 8
				deq[k*N+n] = float32(q-8) * s
				at := (n*nb+blk)*bs/2 + j/2
				if j%2 == 0 {
					packed[at] |= byte(q)
				} else {
					packed[at] |= byte(q) << 4
				}
			}
		}
	}
	return packed, scales, deq
}

// quantizeRows4 quantizes e [V, H] in blocks of bs along H: GatherBlockQuantized's data
// [V, H/2] (uint8, two values a byte) and scales [V, H/bs], and the dequantized e.
func quantizeRows4(e []float32, V, H, bs int) (packed []byte, scales []float32, deq []float32) {
	nb := H / bs
	packed = make([]byte, V*H/2)
	scales = make([]float32, V*nb)
	deq = make([]float32, len(e))
	for v := range V {
		for blk := range nb {
			var amax float32
			for j := range bs {
				amax = max(amax, float32(math.Abs(float64(e[v*H+blk*bs+j]))))
			}
			s := amax / 7
			if s == 0 {
				s = 1
			}
			scales[v*nb+blk] = s
			for j := range bs {
				h := blk*bs + j
				q := min(max(int(math.Round(float64(e[v*H+h]/s))), -8), 7) + 8
				deq[v*H+h] = float32(q-8) * s
				if h%2 == 0 {
					packed[(v*H+h)/2] |= byte(q)
				} else {
					packed[(v*H+h)/2] |= byte(q) << 4
				}
			}
		}
	}
	return packed, scales, deq
}

// linear adds x [b, s, K] · W [K, N] named /model/…/<scope>/MatMul: MatMulNBits for an int4
// model, MatMul (with the dequantized weights when Dequantized) otherwise.
func (c Config) linear(b *builder, scope, weight, x string, K, N int) string {
	w := seeded.Uniform(c.Seed, weight, K*N, float32(math.Sqrt(3/float64(K))))
	shape := dims{Batch, Seq, N}
	if c.Int4 || c.Dequantized {
		packed, scales, deq := quantize4(w, K, N, c.block())
		if c.Dequantized {
			return b.op("MatMul", scope+"/MatMul", []string{x, b.initF32(weight, deq, int64(K), int64(N))}, graph.Float, shape)
		}
		nb := K / c.block()
		bw := b.init(weight+".quant.weight", graph.Uint8, packed, int64(N), int64(nb), int64(c.block()/2))
		bs := b.initF32(weight+".quant.scales", scales, int64(N*nb))
		return b.ms("MatMulNBits", scope+"/MatMulNBits", []string{x, bw, bs}, graph.Float, shape,
			attrInt("K", int64(K)), attrInt("N", int64(N)), attrInt("bits", 4), attrInt("block_size", int64(c.block())),
			attrInt("accuracy_level", int64(c.AccuracyLevel)))
	}
	return b.op("MatMul", scope+"/MatMul", []string{x, b.initF32(weight, w, int64(K), int64(N))}, graph.Float, shape)
}

func (c Config) normWeight(b *builder, name string) string {
	v := seeded.Uniform(c.Seed, name, c.Hidden, 0.1)
	for i := range v {
		v[i]++
	}
	return b.initF32(name, v, int64(c.Hidden))
}

// build makes the ModelProto.
func (c Config) build() ([]byte, error) {
	b := newBuilder("main_graph")
	g := b.g
	H, KV, hd := c.Hidden, c.KVHeads, c.HeadSize()
	g.Input = append(g.Input, valueInfo("input_ids", graph.Int64, Batch, Seq), valueInfo("attention_mask", graph.Int64, Batch, Total))
	if c.Rotary == RotarySeparate {
		g.Input = append(g.Input, valueInfo("position_ids", graph.Int64, Batch, Seq))
	}
	LH := c.linearHeads()
	for i := range c.Layers {
		if c.Linear(i) {
			g.Input = append(g.Input, valueInfo(PastConv(i), graph.Float, Batch, c.convChannels(), c.kernel()-1), valueInfo(PastRecurrent(i), graph.Float, Batch, LH, hd, hd))
			continue
		}
		g.Input = append(g.Input, valueInfo(PastKey(i), graph.Float, Batch, KV, Past, c.kvLast()), valueInfo(PastValue(i), graph.Float, Batch, KV, Past, c.kvLast()))
	}
	g.Output = append(g.Output, valueInfo("logits", graph.Float, Batch, Seq, c.Vocab))
	for i := range c.Layers {
		if c.Linear(i) {
			g.Output = append(g.Output, valueInfo(PresentConv(i), graph.Float, Batch, c.convChannels(), c.kernel()-1), valueInfo(PresentRecurrent(i), graph.Float, Batch, LH, hd, hd))
			continue
		}
		g.Output = append(g.Output, valueInfo(PresentKey(i), graph.Float, Batch, KV, Total, c.kvLast()), valueInfo(PresentValue(i), graph.Float, Batch, KV, Total, c.kvLast()))
	}

	// seqlens_k = ReduceSum(attention_mask, 1) − 1, total_sequence_length = shape[1], as int32.
	am := "/model/attn_mask_reformat/attn_mask_subgraph"
	sum := b.op("ReduceSum", am+"/ReduceSum", []string{"attention_mask", b.constInt64(false, 1)}, graph.Int64, dims{Batch}, attrInt("keepdims", 0))
	sub := b.op("Sub", am+"/Sub", []string{sum, b.constInt64(true, 1)}, graph.Int64, dims{Batch})
	seqlens := b.op("Cast", am+"/Sub/Cast", []string{sub}, graph.Int32, dims{Batch}, attrInt("to", int64(graph.Int32)))
	shp := b.op("Shape", am+"/Shape", []string{"attention_mask"}, graph.Int64, dims{2})
	tot := b.op("Gather", am+"/Gather", []string{shp, b.constInt64(true, 1)}, graph.Int64, dims{}, attrInt("axis", 0))
	total := b.op("Cast", am+"/Gather/Cast", []string{tot}, graph.Int32, dims{}, attrInt("to", int64(graph.Int32)))

	// rotary caches [Context, hd/2]
	cosv, sinv := make([]float32, c.Context*hd/2), make([]float32, c.Context*hd/2)
	for p := range c.Context {
		for j := range hd / 2 {
			inv := 1 / math.Pow(c.theta(), float64(2*j)/float64(hd))
			a := float64(float32(p) * float32(inv))
			cosv[p*hd/2+j], sinv[p*hd/2+j] = float32(math.Cos(a)), float32(math.Sin(a))
		}
	}
	cos := b.initF32("cos_cache", cosv, int64(c.Context), int64(hd/2))
	sin := b.initF32("sin_cache", sinv, int64(c.Context), int64(hd/2))

	// embedding
	emb := seeded.Uniform(c.Seed, "model.embed_tokens.weight", c.Vocab*H, 1)
	var x string
	if c.QuantEmbed && !c.Dequantized {
		packed, scales, _ := quantizeRows4(emb, c.Vocab, H, c.block())
		data := b.init("model.embed_tokens.qweight", graph.Uint8, packed, int64(c.Vocab), int64(H/2))
		sc := b.initF32("model.embed_tokens.scales", scales, int64(c.Vocab), int64(H/c.block()))
		x = b.ms("GatherBlockQuantized", "/model/embed_tokens/GatherBlockQuantized", []string{data, "input_ids", sc},
			graph.Float, dims{Batch, Seq, H}, attrInt("gather_axis", 0), attrInt("quantize_axis", 1),
			attrInt("block_size", int64(c.block())), attrInt("bits", 4))
	} else {
		if c.QuantEmbed {
			_, _, emb = quantizeRows4(emb, c.Vocab, H, c.block())
		}
		x = b.op("Gather", "/model/embed_tokens/Gather", []string{b.initF32("model.embed_tokens.weight", emb, int64(c.Vocab), int64(H)), "input_ids"},
			graph.Float, dims{Batch, Seq, H})
	}

	hs := dims{Batch, Seq, H}
	eps := attrFloat("epsilon", c.eps())
	residual := x
	var normed, pending string // pending: the last MLP output, not yet added to the residual
	skipNorm := func(name, in, weight string) {
		outs := b.node(msDomain, "SkipSimplifiedLayerNormalization", name, []string{in, residual, c.normWeight(b, weight)},
			[]out{{dt: graph.Float, shape: hs}, {}, {}, {dt: graph.Float, shape: hs}}, eps)
		// the builder leaves outputs 1 and 2 (mean, inv_std_var) unnamed
		n := b.g.Node[len(b.g.Node)-1]
		n.Output[1], n.Output[2] = "", ""
		normed, residual = outs[0], outs[3]
	}
	first := ""
	if c.FullEvery > 0 {
		first = c.noPast(b)
	}
	for i := range c.Layers {
		p := fmt.Sprintf("/model/layers.%d", i)
		wp := fmt.Sprintf("model.layers.%d.", i)
		if i == 0 {
			normed = b.op("SimplifiedLayerNormalization", p+"/input_layernorm/LayerNorm", []string{x, c.normWeight(b, wp+"input_layernorm.weight")},
				graph.Float, hs, attrInt("axis", -1), eps, attrInt("stash_type", 1))
		} else {
			skipNorm(p+"/input_layernorm/SkipLayerNorm", pending, wp+"input_layernorm.weight")
		}
		var o string
		if c.Linear(i) {
			o = c.linearMixer(b, i, normed, first)
		} else {
			a := p + "/attn"
			q := c.linear(b, a+"/q_proj", wp+"attn.q_proj.weight", normed, H, H)
			k := c.linear(b, a+"/k_proj", wp+"attn.k_proj.weight", normed, H, KV*hd)
			v := c.linear(b, a+"/v_proj", wp+"attn.v_proj.weight", normed, H, KV*hd)
			gqaIn := []string{q, k, v, PastKey(i), PastValue(i), seqlens, total}
			attrs := []*onnxpb.AttributeProto{attrInt("num_heads", int64(c.Heads)), attrInt("kv_num_heads", int64(KV)),
				attrInt("local_window_size", -1)}
			if c.Rotary == RotarySeparate {
				q = b.ms("RotaryEmbedding", a+"/q_rotary/RotaryEmbedding", []string{q, "position_ids", cos, sin}, graph.Float, dims{Batch, Seq, H},
					attrInt("interleaved", 0), attrInt("num_heads", int64(c.Heads)), attrInt("rotary_embedding_dim", int64(hd)))
				k = b.ms("RotaryEmbedding", a+"/k_rotary/RotaryEmbedding", []string{k, "position_ids", cos, sin}, graph.Float, dims{Batch, Seq, KV * hd},
					attrInt("interleaved", 0), attrInt("num_heads", int64(KV)), attrInt("rotary_embedding_dim", int64(hd)))
				gqaIn[0], gqaIn[1] = q, k
			} else {
				gqaIn = append(gqaIn, cos, sin)
				attrs = append(attrs, attrInt("do_rotary", 1), attrInt("rotary_interleaved", 0))
			}
			o = b.node(msDomain, "GroupQueryAttention", a+"/GroupQueryAttention", gqaIn, []out{{dt: graph.Float, shape: hs},
				{name: PresentKey(i), dt: graph.Float, shape: dims{Batch, KV, Total, c.kvLast()}},
				{name: PresentValue(i), dt: graph.Float, shape: dims{Batch, KV, Total, c.kvLast()}}}, attrs...)[0]
			o = c.linear(b, a+"/o_proj", wp+"attn.o_proj.weight", o, H, H)
		}
		skipNorm(p+"/post_attention_layernorm/SkipLayerNorm", o, wp+"post_attention_layernorm.weight")
		m := p + "/mlp"
		gate := c.linear(b, m+"/gate_proj", wp+"mlp.gate_proj.weight", normed, H, c.Intermediate)
		up := c.linear(b, m+"/up_proj", wp+"mlp.up_proj.weight", normed, H, c.Intermediate)
		is := dims{Batch, Seq, c.Intermediate}
		sig := b.op("Sigmoid", m+"/act_fn/Sigmoid", []string{gate}, graph.Float, is)
		act := b.op("Mul", m+"/act_fn/Mul", []string{gate, sig}, graph.Float, is)
		prod := b.op("Mul", m+"/Mul", []string{act, up}, graph.Float, is)
		pending = c.linear(b, m+"/down_proj", wp+"mlp.down_proj.weight", prod, c.Intermediate, H)
	}
	skipNorm("/model/layers."+fmt.Sprint(c.Layers)+"/final_norm_layernorm/SkipLayerNorm", pending, "model.norm.weight")
	// the final norm's residual sum is not used: leave it unnamed, as the builder does
	last := b.g.Node[len(b.g.Node)-1]
	last.Output = last.Output[:1]
	b.vi = b.vi[:len(b.vi)-1]
	logits := c.linear(b, "/lm_head", "lm_head.weight", normed, H, c.Vocab)
	// rename the lm_head output to logits
	for _, n := range b.g.Node {
		for j, o := range n.Output {
			if o == logits {
				n.Output[j] = "logits"
			}
		}
	}
	b.vi = b.vi[:len(b.vi)-1]
	return b.model("onnxruntime-genai (genaigen)", 21, c.ValueInfo)
}
