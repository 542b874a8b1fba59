package genai

import (
	"testing"

	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/genaigen"
	"github.com/onnxpart/onnxpart/internal/llamagen"
)

// TestAttentionHeadsNotSequence (#40): the head count comes from the graph, whatever the
// sizes it is bound at: a plain-op grouped-query export reshapes its repeated keys to
// [batch, heads, total, head_dim], whose axis 2 is the planned length, not a head count.
func TestAttentionHeadsNotSequence(t *testing.T) {
	dir := t.TempDir()
	lp, err := llamagen.Write(dir, llamagen.Tiny) // 4 heads over 2 KV heads, head_dim 16
	if err != nil {
		t.Fatal(err)
	}
	gp, err := genaigen.Write(dir, genaigen.Tiny) // GroupQueryAttention num_heads 4
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []int64{1, 4, 64, 96} {
		for _, tc := range []struct {
			path string
			dims map[string]int64
		}{
			{lp, map[string]int64{"batch": 1, "seq": seq, "past": 0, "total": seq}},
			{gp, map[string]int64{genaigen.Batch: 1, genaigen.Seq: seq, genaigen.Past: 0}},
		} {
			m, err := ingest.Load(tc.path, ingest.Options{Dims: tc.dims})
			if err != nil {
				t.Fatal(err)
			}
			gio := genaiNames(m.Graph)
			_, hidden := embedding(m.Graph, gio.idsTensor)
			if h := attentionHeads(m.Graph, gio.headSize, gio.kvHeads, hidden); h != 4 {
				t.Errorf("%s at seq %d: %d heads, want 4 (head size %d, KV heads %d, hidden %d)", tc.path, seq, h, gio.headSize, gio.kvHeads, hidden)
			}
		}
	}
}
