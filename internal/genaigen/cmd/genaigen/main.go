// Command genaigen writes models in the forms ONNX Runtime users deploy (internal/genaigen),
// with deterministic pseudo-random weights, for trying onnxpart on them:
//
//	go run ./internal/genaigen/cmd/genaigen -preset small -o /tmp/genai          # int4 decoder + genai_config.json
//	go run ./internal/genaigen/cmd/genaigen -preset tiny -fp32 -rotary separate -o /tmp/genai
//	go run ./internal/genaigen/cmd/genaigen -preset small -no-value-info -o /tmp/genai
//	go run ./internal/genaigen/cmd/genaigen -preset hybrid -o /tmp/hybrid        # hybrid stack, state from If nodes
//	go run ./internal/genaigen/cmd/genaigen -kind cnn -o /tmp/qdq                # QDQ int8 CNN
//	go run ./internal/genaigen/cmd/genaigen -kind encoder -o /tmp/bert           # ORT-optimizer encoder
//
// A decoder's inputs are input_ids, attention_mask (and position_ids with -rotary separate)
// and past_key_values.{i}.key/.value, with the builder's dimensions batch_size,
// sequence_length, past_sequence_length and total_sequence_length.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/onnxpart/onnxpart/internal/genaigen"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "genaigen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("genaigen", flag.ContinueOnError)
	out := fs.String("o", ".", "output directory")
	kind := fs.String("kind", "decoder", "decoder, cnn (QDQ int8) or encoder (ORT transformer optimizer form)")
	preset := fs.String("preset", "tiny", "decoder preset: tiny, small, medium or hybrid (24 layers: 3 linear-attention layers with conv and recurrent state, then 1 full-attention layer, repeated)")
	name := fs.String("name", "", "base name of the model file (default: the preset's)")
	layers := fs.Int("layers", 0, "decoder layers")
	hidden := fs.Int("hidden", 0, "model width")
	heads := fs.Int("heads", 0, "attention heads")
	kvHeads := fs.Int("kv-heads", 0, "key/value heads")
	inter := fs.Int("intermediate", 0, "MLP width")
	vocab := fs.Int("vocab", 0, "vocabulary size")
	ctx := fs.Int("context", 0, "context length (rows of the rotary caches)")
	fp32 := fs.Bool("fp32", false, "float32 MatMul projections instead of int4 MatMulNBits")
	deq := fs.Bool("dequantized", false, "float32 MatMul with the int4 model's dequantized weights (its reference)")
	qembed := fs.Bool("quant-embed", false, "embedding as GatherBlockQuantized")
	rotary := fs.String("rotary", "fused", "fused (inside GroupQueryAttention) or separate (RotaryEmbedding nodes)")
	acc := fs.Int("accuracy-level", -1, "MatMulNBits accuracy_level (default: the preset's)")
	noVI := fs.Bool("no-value-info", false, "leave out the intermediate tensors' value_info")
	kvDim := fs.Bool("kv-cache-dim", false, "the KV caches' last axis as the symbolic dim kv_cache_dim (the current builder's form)")
	seed := fs.Uint64("seed", 0, "weight seed (default: the preset's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	switch *kind {
	case "cnn":
		c := genaigen.TinyCNN
		if *name != "" {
			c.Name = *name
		}
		p, err := genaigen.WriteCNN(*out, c)
		if err == nil {
			fmt.Println(p)
		}
		return err
	case "encoder":
		c := genaigen.TinyEncoder
		if *name != "" {
			c.Name = *name
		}
		p, err := genaigen.WriteEncoder(*out, c)
		if err == nil {
			fmt.Println(p)
		}
		return err
	case "decoder":
	default:
		return fmt.Errorf("-kind %q: decoder, cnn or encoder", *kind)
	}
	var c genaigen.Config
	switch *preset {
	case "tiny":
		c = genaigen.Tiny
	case "small":
		c = genaigen.Small
	case "medium":
		c = genaigen.Medium
	case "hybrid":
		c = genaigen.Hybrid
	default:
		return fmt.Errorf("-preset %q: tiny, small, medium or hybrid", *preset)
	}
	for dst, v := range map[*int]int{&c.Layers: *layers, &c.Hidden: *hidden, &c.Heads: *heads, &c.KVHeads: *kvHeads,
		&c.Intermediate: *inter, &c.Vocab: *vocab, &c.Context: *ctx} {
		if v > 0 {
			*dst = v
		}
	}
	if *name != "" {
		c.Name = *name
	}
	if *seed != 0 {
		c.Seed = *seed
	}
	if *acc >= 0 {
		c.AccuracyLevel = *acc
	}
	if *fp32 || *deq {
		c.Int4 = false
	}
	c.Dequantized = *deq
	c.QuantEmbed = *qembed
	c.ValueInfo = !*noVI
	c.KVCacheDim = *kvDim
	switch *rotary {
	case "fused":
		c.Rotary = genaigen.RotaryFused
	case "separate":
		c.Rotary = genaigen.RotarySeparate
	default:
		return fmt.Errorf("-rotary %q: fused or separate", *rotary)
	}
	p, err := genaigen.Write(*out, c)
	if err != nil {
		return err
	}
	form := "int4 MatMulNBits"
	if !c.Int4 {
		form = "float32 MatMul"
	}
	fmt.Printf("%s: %d layers, hidden %d, %d heads / %d KV heads, vocab %d, context %d, %s: %d parameters\n",
		p, c.Layers, c.Hidden, c.Heads, c.KVHeads, c.Vocab, c.Context, form, c.Params())
	return nil
}
