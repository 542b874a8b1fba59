// Package familygen generates models of the families the planner is judged on beyond its
// corpus, with deterministic pseudo-random weights, for tests and benchmarks: DenseNet
// (dense blocks, a Concat of all earlier features per layer), Inception-v3 (factorised
// 1×7/7×1 branches), RandWire (random graphs of ReLU–SepConv–BN nodes with weighted-sum
// aggregation, ER, WS or BA) and a GPT-2-like decoder (pre-LN, causal attention as plain ONNX
// ops). Each is written as PyTorch's exporter writes the architecture in eval mode (batch
// norms folded into the convolutions they follow), at batch 1 with static shapes; the
// presets keep the full architectures' graphs with the corpus's small widths (channels
// divided by 8, as the corpus's *_small models), so they load, run and plan quickly.
//
// What goes in: a Model (a preset or a configured DenseNet, Inception, RandWire or GPT2)
// and a weight seed. What comes out: the model file's bytes or path.
package familygen

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/onnxpart/onnxpart/schedule/instances"
)

// Model is one configured architecture.
type Model interface {
	build(b *builder) (opset int64, err error)
}

// Presets are the held-out families at the corpus's small widths (the full architectures'
// graphs, channels divided by 8; transformers at width 64 with 12 layers, as the corpus's
// BERT), and tiny variants for tests.
var Presets = map[string]Model{
	"densenet121_small":  DenseNet{Blocks: []int{6, 12, 24, 16}, Growth: 4, Init: 8, BNSize: 4, Image: 224, Classes: 125},
	"inception_v3_small": Inception{Div: 8, Image: 299, Classes: 125},
	"randwire_er_small":  RandWire{Model: instances.ER, N: 32, C: 8, Stages: 3, Image: 224, Classes: 125, GraphSeed: 1},
	"randwire_ws_small":  RandWire{Model: instances.WS, N: 32, C: 8, Stages: 3, Image: 224, Classes: 125, GraphSeed: 1},
	"gpt2_small":         GPT2{Layers: 12, Hidden: 64, Heads: 2, Seq: 128, Vocab: 1000},
	// Full widths (torchvision's), and a wider GPT-2-like at opset 17.
	"densenet121":       DenseNet{Blocks: []int{6, 12, 24, 16}, Growth: 32, Init: 64, BNSize: 4, Image: 224, Classes: 1000},
	"inception_v3":      Inception{Div: 1, Image: 299, Classes: 1000},
	"gpt2_w256_op17":    GPT2{Layers: 12, Hidden: 256, Heads: 4, Seq: 128, Vocab: 8000, LayerNorm: true},
	"gpt2_small_masks":  GPT2{Layers: 12, Hidden: 64, Heads: 2, Seq: 128, Vocab: 1000, MaskPerLayer: true},
	"gpt2_small_op17":   GPT2{Layers: 12, Hidden: 64, Heads: 2, Seq: 128, Vocab: 1000, LayerNorm: true},
	"inception_v3_div4": Inception{Div: 4, Image: 299, Classes: 250},
	"densenet121_div4":  DenseNet{Blocks: []int{6, 12, 24, 16}, Growth: 8, Init: 16, BNSize: 4, Image: 224, Classes: 250},
	"gpt2_d128_s256":    GPT2{Layers: 12, Hidden: 128, Heads: 4, Seq: 256, Vocab: 2000},
	// Tiny variants: few blocks, for tests that plan in seconds.
	"densenet_tiny":  DenseNet{Blocks: []int{3, 4}, Growth: 4, Init: 8, BNSize: 4, Image: 64, Classes: 10},
	"randwire_tiny":  RandWire{Model: instances.ER, N: 8, C: 8, Stages: 2, Image: 64, Classes: 10, GraphSeed: 1},
	"gpt2_tiny":      GPT2{Layers: 2, Hidden: 32, Heads: 2, Seq: 16, Vocab: 50},
	"inception_tiny": Inception{Div: 16, Image: 107, Classes: 10},
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	var out []string
	for n := range Presets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Build returns the model's bytes (an ONNX ModelProto) with weights drawn from seed.
func Build(name string, m Model, seed uint64) ([]byte, error) {
	b := newBuilder(name, seed)
	opset, err := m.build(b)
	if err != nil {
		return nil, err
	}
	return b.model(opset)
}

// Write writes the model as dir/name.onnx and returns the path.
func Write(dir, name string, m Model, seed uint64) (string, error) {
	data, err := Build(name, m, seed)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name+".onnx")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return "", fmt.Errorf("familygen: %w", err)
	}
	return p, nil
}
