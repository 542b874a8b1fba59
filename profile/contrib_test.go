package profile_test

import (
	"context"
	"testing"

	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/genaigen"
	"github.com/onnxpart/onnxpart/profile"
)

// TestContribOpsPricedOnModels: on the decoders and the encoder that ONNX Runtime's tools
// write (internal/genaigen: GroupQueryAttention, MatMulNBits, GatherBlockQuantized,
// RotaryEmbedding, Skip/SimplifiedLayerNormalization; Attention, EmbedLayerNormalization,
// SkipLayerNormalization, FastGelu, BiasGelu), every com.microsoft node counts FLOPs and is
// priced, on a CPU and on a GPU, by a class other than the generic one with a roofline term
// above zero: the attention ops as fused attention, MatMulNBits as int4 weight streaming
// (int8 arithmetic on the CPU at accuracy_level 4 only).
func TestContribOpsPricedOnModels(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, c := range []genaigen.Config{
		func() genaigen.Config { c := genaigen.Tiny; c.QuantEmbed = true; c.AccuracyLevel = 4; return c }(),
		func() genaigen.Config {
			c := genaigen.Tiny
			c.Name = "sep"
			c.Rotary = genaigen.RotarySeparate
			return c
		}(),
	} {
		p, err := genaigen.Write(dir, c)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	for _, bg := range []bool{false, true} {
		c := genaigen.TinyEncoder
		c.BiasGelu = bg
		if bg {
			c.Name = "bert-biasgelu"
		}
		p, err := genaigen.WriteEncoder(dir, c)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	cl, err := hw.Resolve(context.Background(), "spr,t4", hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := profile.NewCostModel(cl, profile.CostOptions{})
	seen := map[string]bool{}
	for i, p := range paths {
		dims := map[string]int64{genaigen.Batch: 1, genaigen.Seq: 8, genaigen.Past: 8}
		if i >= 2 { // the encoders
			dims = map[string]int64{"batch": 1, "sequence": 8}
		}
		m, err := ingest.Load(p, ingest.Options{Dims: dims})
		if err != nil {
			t.Fatal(err)
		}
		g := m.Graph
		for v := range g.Nodes {
			n := &g.Nodes[v]
			if n.Domain != "com.microsoft" || n.Static {
				continue
			}
			seen[n.OpType] = true
			if n.FLOPs <= 0 {
				t.Errorf("%s: %s %s counts %d FLOPs", p, n.OpType, n.Name, n.FLOPs)
			}
			for d := range cl.Devices {
				dev := &cl.Devices[d]
				x := cm.Explain(g, v, d)
				if x.Class == profile.ClassOther || x.Compute <= 0 && x.Memory <= 0 {
					t.Errorf("%s on %s: class %s, compute %g s, memory %g s", n.OpType, dev.Name, x.Class, x.Compute, x.Memory)
				}
				want := map[string]profile.OpClass{"GroupQueryAttention": profile.ClassAttention, "Attention": profile.ClassAttention,
					"MatMulNBits": profile.ClassNBits}[n.OpType]
				if n.OpType == "MatMulNBits" && dev.Kind == profile.CPU && n.AttrInt("accuracy_level", 0) == 4 {
					want = profile.ClassNBitsInt8
					if x.Precision != profile.INT8 {
						t.Errorf("MatMulNBits accuracy_level 4 on %s: precision %s", dev.Name, x.Precision)
					}
				}
				if want != "" && x.Class != want {
					t.Errorf("%s on %s: class %s, want %s", n.OpType, dev.Name, x.Class, want)
				}
			}
		}
	}
	for _, op := range []string{"GroupQueryAttention", "MatMulNBits", "GatherBlockQuantized", "RotaryEmbedding",
		"SkipSimplifiedLayerNormalization", "Attention", "EmbedLayerNormalization", "SkipLayerNormalization", "FastGelu", "BiasGelu"} {
		if !seen[op] {
			t.Errorf("no %s in the models", op)
		}
	}
}
