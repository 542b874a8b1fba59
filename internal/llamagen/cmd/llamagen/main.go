// Command llamagen writes a Llama-architecture decoder (the ONNX graph transformers and
// optimum export, with deterministic pseudo-random weights) for trying onnxpart on LLMs:
//
//	go run ./internal/llamagen/cmd/llamagen -preset small -o /tmp/llama
//	go run ./internal/llamagen/cmd/llamagen -preset 1b -o /tmp/llama   # 2 GiB of fp16 weights
//	go run ./internal/llamagen/cmd/llamagen -preset tiny -layers 8 -fp16 -external -o /tmp/llama
//
// It prints the model's path, its parameter count and weight bytes. The model's inputs are
// input_ids, attention_mask, position_ids and past_key_values.{i}.key/.value, with the
// symbolic dimensions batch, seq, past and total (= past + seq), e.g.
// onnxpart inspect --dim batch=1,seq=1,past=127,total=128 model.onnx.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/llamagen"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "llamagen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("llamagen", flag.ContinueOnError)
	out := fs.String("o", ".", "output directory")
	preset := fs.String("preset", "tiny", "tiny, small or 1b (TinyLlama-1.1B's shape, fp16, external data)")
	name := fs.String("name", "", "base name of the files (default: the preset's)")
	layers := fs.Int("layers", 0, "decoder layers")
	hidden := fs.Int("hidden", 0, "model width")
	heads := fs.Int("heads", 0, "attention heads")
	kvHeads := fs.Int("kv-heads", 0, "key/value heads (grouped-query attention)")
	inter := fs.Int("intermediate", 0, "MLP width")
	vocab := fs.Int("vocab", 0, "vocabulary size")
	maxPos := fs.Int("max-positions", 0, "rows of the rotary tables")
	f16 := fs.Bool("fp16", false, "float16 weights and KV cache")
	f32 := fs.Bool("fp32", false, "float32 weights and KV cache")
	ext := fs.Bool("external", false, "weights in an external data file (needed over 1 GiB)")
	seed := fs.Uint64("seed", 0, "weight seed (default: the preset's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	var c llamagen.Config
	switch *preset {
	case "tiny":
		c = llamagen.Tiny
	case "small":
		c = llamagen.Small
	case "1b":
		c = llamagen.TinyLlama1B
	default:
		return fmt.Errorf("-preset %q: tiny, small or 1b", *preset)
	}
	set := func(dst *int, v int) {
		if v > 0 {
			*dst = v
		}
	}
	set(&c.Layers, *layers)
	set(&c.Hidden, *hidden)
	set(&c.Heads, *heads)
	set(&c.KVHeads, *kvHeads)
	set(&c.Intermediate, *inter)
	set(&c.Vocab, *vocab)
	set(&c.MaxPositions, *maxPos)
	if *name != "" {
		c.Name = *name
	}
	if *seed != 0 {
		c.Seed = *seed
	}
	switch {
	case *f16 && *f32:
		return fmt.Errorf("-fp16 and -fp32 together")
	case *f16:
		c.DType = graph.Float16
	case *f32:
		c.DType = graph.Float
	}
	if *ext {
		c.External = true
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	p, err := llamagen.Write(*out, c)
	if err != nil {
		return err
	}
	fmt.Printf("%s: %d layers, hidden %d, %d heads / %d KV heads, vocab %d, %s: %d parameters, %d weight bytes\n",
		p, c.Layers, c.Hidden, c.Heads, c.KVHeads, c.Vocab, c.DType, c.Params(), c.WeightBytes())
	return nil
}
