package blocks

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/genaigen"
)

// layerOf returns the layer a node's name places it in (matched by re's first group) and
// whether it has one. Only the test reads names; Find never does.
func layerOf(re *regexp.Regexp, name string) (int, bool) {
	m := re.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	i, err := strconv.Atoi(m[1])
	return i, err == nil
}

// checkOneLayerPerBlock checks that g has one block per layer and that every node re
// places in layer i (its attention and its MLP) is in block i.
func checkOneLayerPerBlock(t *testing.T, g *graph.Graph, r *Result, layers int, re *regexp.Regexp) {
	t.Helper()
	if len(r.Blocks) != layers {
		t.Errorf("%d blocks, want one per layer (%d)", len(r.Blocks), layers)
	}
	blockOf := BlockOf(g, r.Blocks)
	for v := range g.Nodes {
		if i, ok := layerOf(re, g.Nodes[v].Name); ok && blockOf[v] != i {
			t.Errorf("node %s (%s) of layer %d is in block %d", g.Nodes[v].Name, g.Nodes[v].OpType, i, blockOf[v])
		}
	}
}

// TestFusedResidualLayers: exports whose residual runs through SkipSimplifiedLayerNormalization
// or SkipLayerNormalization (GenAI's model builder, ORT's transformer optimizer) have no
// single tensor between layers, a first layer that normalises with
// SimplifiedLayerNormalization instead of the Skip form, and a mask path into
// GroupQueryAttention longer than the embedding's. Every layer is still one block, its
// attention and its MLP in it, whatever the number of layers.
func TestFusedResidualLayers(t *testing.T) {
	dir := t.TempDir()
	decRe := regexp.MustCompile(`^/model/layers\.(\d+)/(attn|mlp)/`)
	encRe := regexp.MustCompile(`^/encoder/layer\.(\d+)/`)
	for _, layers := range []int{2, 3, 4, 6} {
		for _, sep := range []bool{false, true} {
			dec := genaigen.Tiny
			dec.Name = fmt.Sprintf("dec%d-%v", layers, sep)
			dec.Layers = layers
			if sep {
				dec.Rotary = genaigen.RotarySeparate
				dec.Int4 = false
			}
			p, err := genaigen.Write(dir, dec)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(dec.Name, func(t *testing.T) {
				m, err := ingest.Load(p, ingest.Options{Dims: map[string]int64{genaigen.Batch: 1, genaigen.Seq: 8, genaigen.Past: 0}})
				if err != nil {
					t.Fatal(err)
				}
				r := Find(m.Graph)
				checkOneLayerPerBlock(t, m.Graph, r, layers, decRe)
				countOp(t, m.Graph, r, "GroupQueryAttention")
			})
		}
		enc := genaigen.TinyEncoder
		enc.Name = fmt.Sprintf("enc%d", layers)
		enc.Layers = layers
		p, err := genaigen.WriteEncoder(dir, enc)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(enc.Name, func(t *testing.T) {
			m, err := ingest.Load(p, ingest.Options{Dims: map[string]int64{"batch": 1, "sequence": 8}})
			if err != nil {
				t.Fatal(err)
			}
			r := Find(m.Graph)
			checkOneLayerPerBlock(t, m.Graph, r, layers, encRe)
			countOp(t, m.Graph, r, "Attention")
		})
	}
}

// countOp checks that every block holds one op of type op.
func countOp(t *testing.T, g *graph.Graph, r *Result, op string) {
	t.Helper()
	for b, bl := range r.Blocks {
		n := 0
		for _, v := range bl.Nodes {
			if g.Nodes[v].OpType == op {
				n++
			}
		}
		if n != 1 {
			t.Errorf("block %d has %d %s nodes", b, n, op)
		}
	}
}

// TestHybridLayers: a hybrid stack repeats a group of different layers (three linear-attention
// layers with their conv and recurrent If nodes, then a full-attention layer). The group is
// the period; every layer is still one block, its mixer and MLP in it, and the blocks are
// of two kinds.
func TestHybridLayers(t *testing.T) {
	re := regexp.MustCompile(`^/model/layers\.(\d+)/(attn|mlp|linear_attn)/`)
	for _, layers := range []int{8, 24} {
		for _, int4 := range []bool{true, false} {
			c := genaigen.Hybrid
			c.Name, c.Layers, c.Int4, c.ValueInfo = fmt.Sprintf("hybrid%d-%v", layers, int4), layers, int4, int4
			p, err := genaigen.Write(t.TempDir(), c)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(c.Name, func(t *testing.T) {
				m, err := ingest.Load(p, ingest.Options{Dims: map[string]int64{genaigen.Batch: 1, genaigen.Seq: 8, genaigen.Past: 0}})
				if err != nil {
					t.Fatal(err)
				}
				g := m.Graph
				r := Find(g)
				checkOneLayerPerBlock(t, g, r, layers, re)
				if r.Unit != 2*c.FullEvery {
					t.Errorf("unit %d segments, want a group of %d layers (%d)", r.Unit, c.FullEvery, 2*c.FullEvery)
				}
				kinds := map[int]bool{}
				for b, bl := range r.Blocks {
					kinds[bl.Kind] = true
					ifs, gqa := 0, 0
					for _, v := range bl.Nodes {
						switch g.Nodes[v].OpType {
						case "If":
							ifs++
						case "GroupQueryAttention":
							gqa++
						}
					}
					if c.Linear(b) && (ifs != 2 || gqa != 0) || !c.Linear(b) && (ifs != 0 || gqa != 1) {
						t.Errorf("block %d: %d If and %d GroupQueryAttention nodes", b, ifs, gqa)
					}
				}
				if len(kinds) != 2 {
					t.Errorf("%d kinds of blocks, want 2", len(kinds))
				}
			})
		}
	}
}
