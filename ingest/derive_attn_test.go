package ingest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/internal/genaigen"
)

// TestDeriveThroughGroupQueryAttention: in a model-builder decoder the KV cache passes
// through GroupQueryAttention (no Concat, no broadcasting mask), so total_sequence_length =
// past_sequence_length + sequence_length comes from the op's semantics and from
// attention_mask's length feeding total_sequence_length; binding the independent dims
// binds it, and any two of the three settle the third.
func TestDeriveThroughGroupQueryAttention(t *testing.T) {
	sep := genaigen.Tiny
	sep.Rotary, sep.Name = genaigen.RotarySeparate, "sep"
	for _, c := range []genaigen.Config{genaigen.Tiny, sep} {
		p, err := genaigen.Write(t.TempDir(), c)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			given            map[string]int64
			seq, past, total int64
		}{
			{map[string]int64{genaigen.Batch: 1, genaigen.Seq: 1, genaigen.Past: 16}, 1, 16, 17},
			{map[string]int64{genaigen.Batch: 2, genaigen.Seq: 8, genaigen.Past: 0}, 8, 0, 8},
			{map[string]int64{genaigen.Batch: 1, genaigen.Seq: 1, genaigen.Total: 33}, 1, 32, 33},
		} {
			m, err := Load(p, Options{Dims: tc.given})
			if err != nil {
				t.Fatal(err)
			}
			if len(m.SymbolicDims) > 0 {
				t.Errorf("%s %v: unbound %v", c.Name, tc.given, m.SymbolicDims)
			}
			if len(m.DerivedDims) != 1 {
				t.Errorf("%s %v: derived %v, want one dim", c.Name, tc.given, m.DerivedDims)
			}
			id, _ := m.Graph.TensorByName(genaigen.PresentKey(0))
			want := fmt.Sprintf("[%d,2,%d,16]", tc.given[genaigen.Batch], tc.total)
			if got := fmt.Sprint(m.Graph.Tensors[id].Shape); got != want {
				t.Errorf("%s %v: present.0.key %s, want %s", c.Name, tc.given, got, want)
			}
			id, _ = m.Graph.TensorByName("attention_mask")
			if got := m.Graph.Tensors[id].Shape[1]; !got.Known() || got.Value != tc.total {
				t.Errorf("%s %v: attention_mask length %v, want %d", c.Name, tc.given, got, tc.total)
			}
		}
	}
}

// TestDeriveKVCacheDim: the current model builder writes the KV caches' last axis as the
// dim_param kv_cache_dim; for a float cache it is the attention's head size, derived from
// GroupQueryAttention's query width and num_heads (fused and separate rotary, with and
// without value_info), so the independent dims alone bind every input.
func TestDeriveKVCacheDim(t *testing.T) {
	for _, c := range []genaigen.Config{genaigen.Tiny, genaigen.Small} {
		for _, vi := range []bool{true, false} {
			c := c
			c.KVCacheDim, c.ValueInfo = true, vi
			if vi {
				c.Rotary = genaigen.RotarySeparate
			}
			p, err := genaigen.Write(t.TempDir(), c)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Load(p, Options{Dims: map[string]int64{genaigen.Batch: 1, genaigen.Seq: 1, genaigen.Past: 16}})
			if err != nil {
				t.Fatal(err)
			}
			if len(m.SymbolicDims) > 0 {
				t.Errorf("%s: unbound %v", c.Name, m.SymbolicDims)
			}
			if got := m.DerivedDims[genaigen.KVDim]; got != fmt.Sprint(c.HeadSize()) {
				t.Errorf("%s value_info %v: kv_cache_dim derived as %q, want %d (derived %v)", c.Name, vi, got, c.HeadSize(), m.DerivedDims)
			}
			id, _ := m.Graph.TensorByName(genaigen.PastValue(c.Layers - 1))
			if got, want := fmt.Sprint(m.Graph.Tensors[id].Shape), fmt.Sprintf("[1,%d,16,%d]", c.KVHeads, c.HeadSize()); got != want {
				t.Errorf("%s: past value %s, want %s", c.Name, got, want)
			}
			notes := fmt.Sprint(m.DerivedNotes())
			if want := fmt.Sprintf("kv_cache_dim = %d, the head size", c.HeadSize()); !strings.Contains(notes, want) {
				t.Errorf("%s: notes %s, want %q", c.Name, notes, want)
			}
			// a size that contradicts the head size is refused, naming both
			_, err = Load(p, Options{Dims: map[string]int64{genaigen.Batch: 1, genaigen.Seq: 1, genaigen.Past: 16, genaigen.KVDim: int64(c.HeadSize() + 2)}})
			if err == nil || !strings.Contains(err.Error(), "kv_cache_dim") {
				t.Errorf("%s: kv_cache_dim=%d: %v", c.Name, c.HeadSize()+2, err)
			}
		}
	}
}
