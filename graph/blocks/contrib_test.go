package blocks

import (
	"testing"

	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/genaigen"
)

// TestFusedResidualLayers: exports whose residual runs through SkipSimplifiedLayerNormalization
// or SkipLayerNormalization (GenAI's model builder, ORT's transformer optimizer) have no
// single tensor between layers, and a mask path into GroupQueryAttention longer than the
// embedding's; the layers are still found as repeated blocks, one attention op each.
func TestFusedResidualLayers(t *testing.T) {
	dir := t.TempDir()
	dec := genaigen.Tiny
	dec.Layers = 6
	dp, err := genaigen.Write(dir, dec)
	if err != nil {
		t.Fatal(err)
	}
	enc := genaigen.TinyEncoder
	enc.Layers = 6
	ep, err := genaigen.WriteEncoder(dir, enc)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		dims map[string]int64
		attn string
	}{
		{dp, map[string]int64{genaigen.Batch: 1, genaigen.Seq: 8, genaigen.Past: 0}, "GroupQueryAttention"},
		{ep, map[string]int64{"batch": 1, "sequence": 8}, "Attention"},
	} {
		m, err := ingest.Load(tc.path, ingest.Options{Dims: tc.dims})
		if err != nil {
			t.Fatal(err)
		}
		g := m.Graph
		r := Find(g)
		repeated := 0
		for _, b := range r.Blocks {
			if !b.Repeated {
				continue
			}
			repeated++
			n := 0
			for _, v := range b.Nodes {
				if g.Nodes[v].OpType == tc.attn {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s: a block with %d %s nodes", tc.path, n, tc.attn)
			}
		}
		if repeated < 5 {
			t.Errorf("%s: %d repeated blocks of %d, want at least 5 of the 6 layers", tc.path, repeated, len(r.Blocks))
		}
	}
}
