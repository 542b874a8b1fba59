package main

import (
	"math/rand"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/genaigen"
	"github.com/onnxpart/onnxpart/internal/ort"
)

// The GenAI model builder's format (issue 39): decoders written by internal/genaigen, with
// GroupQueryAttention over past/present KV caches, SkipSimplifiedLayerNormalization,
// rotary embeddings inside GroupQueryAttention, and the projections and lm_head as int4
// MatMulNBits (accuracy_level 4, as the builder writes them for the CPU: int8 activations,
// and 0: float32 activations) or float32 MatMul.

// genaiPhases: decode steps after 128 and 1024 cached positions, prefills of 32 and 256.
var genaiPhases = []phase{
	{"decode", 1, 128},
	{"decode", 1, 1024},
	{"prefill", 32, 0},
	{"prefill", 256, 0},
}

// genaiConfigs: genaigen's Small (4 layers, hidden 256) in int4 at accuracy levels 4 and 0,
// in float32, and in int4 with separate RotaryEmbedding nodes and a GatherBlockQuantized
// embedding; and 8 layers of width 512 (8 heads over 2 KV heads, MLP 1408, vocabulary
// 4000) in int4 and float32; every context 2048.
func genaiConfigs() []genaigen.Config {
	small := genaigen.Small
	small.Context = 2048
	small0 := small
	small0.Name, small0.AccuracyLevel = "genai-small-acc0", 0
	small32 := small
	small32.Name, small32.Int4, small32.AccuracyLevel = "genai-small-fp32", false, 0
	rope := small
	rope.Name, rope.Rotary, rope.QuantEmbed = "genai-small-rope", genaigen.RotarySeparate, true
	mid := genaigen.Config{Name: "genai-8x512", Layers: 8, Hidden: 512, Heads: 8, KVHeads: 2, Intermediate: 1408,
		Vocab: 4000, Context: 2048, Int4: true, BlockSize: 32, AccuracyLevel: 4, ValueInfo: true, Seed: 1}
	mid32 := mid
	mid32.Name, mid32.Int4, mid32.AccuracyLevel = "genai-8x512-fp32", false, 0
	return []genaigen.Config{small, small0, small32, rope, mid, mid32}
}

// genaiDecoder is a genaigen model written to path.
func genaiDecoder(c genaigen.Config, path string) *decoder {
	return &decoder{name: c.Name, path: path, inputs: c.Inputs(), outputs: c.Outputs(), phases: genaiPhases,
		dims: func(p phase) map[string]int64 {
			return map[string]int64{genaigen.Batch: 1, genaigen.Seq: p.seq, genaigen.Past: p.past, genaigen.Total: p.past + p.seq}
		},
		feeds: func(p phase) (map[string]*ort.Tensor, map[string]ort.OutputHint) { return genaiFeeds(c, p) }}
}

// genaiFeeds makes the inputs of a phase: random token ids, a mask of ones, position ids
// past … past+seq−1 where the model takes them, and a random KV cache of past positions
// (BNSH); and the output shapes.
func genaiFeeds(c genaigen.Config, p phase) (map[string]*ort.Tensor, map[string]ort.OutputHint) {
	rng := rand.New(rand.NewSource(p.seq*7919 + p.past))
	total := p.past + p.seq
	ids := make([]int64, p.seq)
	pos := make([]int64, p.seq)
	for i := range ids {
		ids[i] = rng.Int63n(int64(c.Vocab))
		pos[i] = p.past + int64(i)
	}
	mask := make([]int64, total)
	for i := range mask {
		mask[i] = 1
	}
	feeds := map[string]*ort.Tensor{"input_ids": int64s(ids, 1, p.seq), "attention_mask": int64s(mask, 1, total)}
	if c.Rotary == genaigen.RotarySeparate {
		feeds["position_ids"] = int64s(pos, 1, p.seq)
	}
	hints := map[string]ort.OutputHint{"logits": {DType: graph.Float, Shape: []int64{1, p.seq, int64(c.Vocab)}}}
	kv := []int64{1, int64(c.KVHeads), p.past, int64(c.HeadSize())}
	kvTotal := []int64{1, int64(c.KVHeads), total, int64(c.HeadSize())}
	for i := range c.Layers {
		feeds[genaigen.PastKey(i)] = randomKV(rng, graph.Float, kv)
		feeds[genaigen.PastValue(i)] = randomKV(rng, graph.Float, kv)
		hints[genaigen.PresentKey(i)] = ort.OutputHint{DType: graph.Float, Shape: kvTotal}
		hints[genaigen.PresentValue(i)] = ort.OutputHint{DType: graph.Float, Shape: kvTotal}
	}
	return feeds, hints
}
