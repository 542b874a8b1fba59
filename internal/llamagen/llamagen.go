// Package llamagen writes Llama-architecture decoder-only language models as ONNX files, for
// onnxpart's tests of LLM decoders (issue 32). The graphs follow what Hugging Face
// transformers and optimum export at opset 17 (the "decoder with past" model of
// text-generation-with-past): the same inputs and outputs, the same operator patterns and
// node names in the style of /model/layers.3/self_attn/q_proj/MatMul. The weights are small
// deterministic pseudo-random values, so the models compute something well defined (tests
// compare them with a reference forward pass) but have learnt nothing.
//
// Inputs: input_ids int64 [batch, seq]; attention_mask int64 [batch, total]; position_ids
// int64 [batch, seq]; past_key_values.{i}.key and .value [batch, KVHeads, past, head_dim] in
// the model's dtype. Outputs: logits float32 [batch, seq, vocab] (an fp16 model casts them
// up, as transformers' LlamaForCausalLM does) and present.{i}.key and .value [batch, KVHeads,
// total, head_dim], where total = past + seq.
//
// The graph, per layer: RMSNorm (Pow, ReduceMean, Add ε, Sqrt, Div 1/x, Mul, in fp32 with
// Casts around it in an fp16 model); q/k/v projections as MatMul by [in, out] weights;
// Reshape to heads with targets built Shape→Gather→Unsqueeze→Concat; Transpose to
// [b, h, s, d]; rotary embedding (cos and sin tables [MaxPositions, head_dim] gathered by
// position_ids, rotate_half by Slice/Neg/Concat, in fp32); present = Concat(past, new) on
// axis 2; grouped-query heads repeated by Unsqueeze/Expand/Reshape with shape-derived targets;
// scores Q·Kᵀ/√d plus the 4-D mask, Softmax in fp32; o_proj and the residual Add; the SwiGLU
// MLP (gate MatMul, SiLU as x·Sigmoid(x), up MatMul, Mul, down MatMul) and the residual Add.
// The causal mask [batch, 1, seq, total] is built once from the shapes and attention_mask:
// key position k is visible from query row q when k ≤ past+q and attention_mask[b, k] ≠ 0
// (Range, LessOrEqual, Cast to bool, And, Where 0 / float32 min).
package llamagen

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/onnxpart/onnxpart/graph"
)

// Config describes a model.
type Config struct {
	// Name is the base name of the files: Name.onnx and, with External, Name.onnx.data.
	Name string
	// Layers is the number of decoder layers.
	Layers int
	// Hidden is the model width; Heads query heads of Hidden/Heads (head_dim, even) each,
	// KVHeads key/value heads (grouped-query attention: Heads must be a multiple of it).
	Hidden, Heads, KVHeads int
	// Intermediate is the MLP width.
	Intermediate int
	// Vocab is the vocabulary size; MaxPositions the rows of the rotary tables (positions
	// must stay below it).
	Vocab, MaxPositions int
	// DType is the weights' and the KV cache's element type: graph.Float or graph.Float16.
	DType graph.DType
	// RMSEps is RMSNorm's ε; RopeTheta the rotary base (0: 10000).
	RMSEps    float64
	RopeTheta float64
	// Seed determines the weights.
	Seed uint64
	// External puts every weight in one data file beside the model (page-aligned offsets),
	// as exports of large models do; without it the weights are inside the protobuf, which
	// must then stay under 2 GiB.
	External bool
}

// The presets. Copy one and change fields to vary it.
var (
	// Tiny is a two-layer model for fast tests: hidden 64, 4 heads over 2 KV heads (head_dim
	// 16), vocabulary 256: 125,248 parameters, 517,376 bytes of float32 weights.
	Tiny = Config{Name: "llama-tiny", Layers: 2, Hidden: 64, Heads: 4, KVHeads: 2, Intermediate: 176,
		Vocab: 256, MaxPositions: 128, DType: graph.Float, RMSEps: 1e-5, Seed: 1}
	// Small has four layers of width 256 (8 heads over 2 KV heads, head_dim 32), vocabulary
	// 1000: 3,332,352 parameters, 13.5 MB of float32 weights; ONNX Runtime runs a decode step
	// in about 2 ms on one CPU thread.
	Small = Config{Name: "llama-small", Layers: 4, Hidden: 256, Heads: 8, KVHeads: 2, Intermediate: 704,
		Vocab: 1000, MaxPositions: 512, DType: graph.Float, RMSEps: 1e-5, Seed: 1}
	// TinyLlama1B has the shape of TinyLlama-1.1B: 22 layers of width 2048, 32 heads over 4
	// KV heads (head_dim 64), MLP 5632, vocabulary 32000, fp16 weights in external data:
	// 1,100,048,384 parameters, 2,201,145,344 bytes (2.05 GiB) of data. ONNX Runtime's CPU
	// build runs it, slowly (fp16 on the CPU).
	TinyLlama1B = Config{Name: "tinyllama-1.1b", Layers: 22, Hidden: 2048, Heads: 32, KVHeads: 4,
		Intermediate: 5632, Vocab: 32000, MaxPositions: 2048, DType: graph.Float16, RMSEps: 1e-5,
		Seed: 1, External: true}
)

// HeadDim is Hidden/Heads.
func (c Config) HeadDim() int {
	if c.Heads <= 0 {
		return 0
	}
	return c.Hidden / c.Heads
}

func (c Config) name() string {
	if c.Name == "" {
		return "llama"
	}
	return c.Name
}

func (c Config) theta() float64 {
	if c.RopeTheta <= 0 {
		return 10000
	}
	return c.RopeTheta
}

// maxInline bounds the weights kept inside the protobuf (its limit is 2 GiB, the whole file).
const maxInline = 1 << 30

// Validate reports a config that cannot make a model.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error { return fmt.Errorf("llamagen: "+format, a...) }
	switch {
	case c.Layers < 1 || c.Hidden < 1 || c.Heads < 1 || c.KVHeads < 1 || c.Intermediate < 1 ||
		c.Vocab < 1 || c.MaxPositions < 1:
		return bad("layers, hidden, heads, KV heads, intermediate, vocab and max positions must be positive: %+v", c)
	case c.Hidden%c.Heads != 0:
		return bad("hidden %d is not a multiple of heads %d", c.Hidden, c.Heads)
	case c.HeadDim()%2 != 0:
		return bad("head_dim %d is odd (rotary embeddings rotate halves)", c.HeadDim())
	case c.Heads%c.KVHeads != 0:
		return bad("heads %d is not a multiple of KV heads %d", c.Heads, c.KVHeads)
	case c.DType != graph.Float && c.DType != graph.Float16:
		return bad("dtype %s: float32 or float16 only", c.DType)
	case c.RMSEps <= 0:
		return bad("RMSEps must be positive")
	case !c.External && c.WeightBytes() > maxInline:
		return bad("%d bytes of weights do not fit in the protobuf: set External", c.WeightBytes())
	}
	return nil
}

// Params is the number of learnt parameters (embeddings, projections, norms, lm_head; the
// rotary tables are not parameters).
func (c Config) Params() int64 {
	h, kv := int64(c.Hidden), int64(c.KVHeads)*int64(c.HeadDim())
	layer := 2*h + // norms
		2*h*h + 2*h*kv + // q, o; k, v
		3*h*int64(c.Intermediate)
	return int64(c.Layers)*layer + 2*h*int64(c.Vocab) + h
}

// WeightBytes is the size of every initializer: the parameters in DType plus the float32
// rotary tables (the data file's size, alignment padding aside, when External).
func (c Config) WeightBytes() int64 {
	return c.Params()*int64(c.DType.Bits()/8) + 2*int64(c.MaxPositions)*int64(c.HeadDim())*4
}

// tensors lists the initializers in the order they are laid out.
func (c Config) tensors() []*tensor {
	h, in, kv := int64(c.Hidden), int64(c.Intermediate), int64(c.KVHeads*c.HeadDim())
	var ts []*tensor
	add := func(name string, kind weightKind, fanIn int64, dims ...int64) {
		scale := float32(1)
		if fanIn > 0 {
			// uniform with standard deviation 1/√fan_in: activations stay near unit size
			scale = float32(math.Sqrt(3 / float64(fanIn)))
		}
		ts = append(ts, &tensor{name: name, dims: dims, dtype: c.DType, kind: kind, scale: scale,
			seed: tensorSeed(c.Seed, name)})
	}
	add("model.embed_tokens.weight", uniform, 0, int64(c.Vocab), h)
	for i := range c.Layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		add(p+"input_layernorm.weight", norm, 0, h)
		add(p+"self_attn.q_proj.weight", uniform, h, h, h)
		add(p+"self_attn.k_proj.weight", uniform, h, h, kv)
		add(p+"self_attn.v_proj.weight", uniform, h, h, kv)
		add(p+"self_attn.o_proj.weight", uniform, h, h, h)
		add(p+"post_attention_layernorm.weight", norm, 0, h)
		add(p+"mlp.gate_proj.weight", uniform, h, h, in)
		add(p+"mlp.up_proj.weight", uniform, h, h, in)
		add(p+"mlp.down_proj.weight", uniform, in, in, h)
	}
	add("model.norm.weight", norm, 0, h)
	add("lm_head.weight", uniform, h, h, int64(c.Vocab))
	for _, k := range []weightKind{rotCos, rotSin} {
		name := "model.rotary_emb.cos_cached"
		if k == rotSin {
			name = "model.rotary_emb.sin_cached"
		}
		ts = append(ts, &tensor{name: name, dims: []int64{int64(c.MaxPositions), int64(c.HeadDim())},
			dtype: graph.Float, kind: k, headDim: int64(c.HeadDim()), theta: c.theta()})
	}
	return ts
}

// align is the offset alignment of every tensor in the data file (a page, so weights can be
// mapped).
const align = 4096

// Write writes dir/<Name>.onnx (and dir/<Name>.onnx.data when External) and returns the
// model's path. The weights go to the data file in chunks made on every core: a model of
// several GiB needs a few megabytes of memory.
func Write(dir string, c Config) (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	name := c.name()
	modelPath := filepath.Join(dir, name+".onnx")
	ts := c.tensors()
	var ext *externalData
	if c.External {
		ext = &externalData{location: name + ".onnx.data", offsets: make([]int64, len(ts))}
		var at int64
		for i, t := range ts {
			at = (at + align - 1) / align * align
			ext.offsets[i] = at
			at += t.bytes()
		}
		f, err := os.OpenFile(filepath.Join(dir, ext.location), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return "", err
		}
		if err := f.Truncate(at); err != nil {
			f.Close()
			return "", err
		}
		if err := writeData(f, ts, ext.offsets); err != nil {
			f.Close()
			return "", fmt.Errorf("llamagen: writing %s: %w", ext.location, err)
		}
		if err := f.Close(); err != nil {
			return "", err
		}
	}
	b, err := c.model(ts, ext)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(modelPath, b, 0o644); err != nil {
		return "", err
	}
	return modelPath, nil
}

// externalData places the tensors (by index in tensors()) in one data file.
type externalData struct {
	location string
	offsets  []int64
}
