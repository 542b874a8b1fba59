package ingest

import (
	"path/filepath"
	"testing"

	"github.com/onnxpart/onnxpart/graph"
)

// TestContribGPUOnlyShapes: the contrib ops ONNX Runtime implements for GPUs only (no CPU
// kernel to compare with) infer the shapes of their definitions in docs/ContribOperators.md
// and count the FLOPs of their formulas, without value_info. Expected values are written out
// from the definitions.
func TestContribGPUOnlyShapes(t *testing.T) {
	m := newOCModel(17)
	m.opsets["com.microsoft"] = 1
	type want struct {
		shape []int64
		flops int64 // of the node producing it (checked on its first output); -1: not checked
	}
	wants := map[string]want{}
	// BiasSplitGelu: [2, 64, 40] + bias [40] -> [2, 64, 20]; 6 per output element.
	o := m.opD("com.microsoft", "BiasSplitGelu", ins(m.in(f32, 2, 64, 40), m.weight(f32, 40)), 1)
	wants[o[0]] = want{[]int64{2, 64, 20}, 6 * 2 * 64 * 20}
	// PackedMultiHeadAttention: 10 tokens of at most 6 per sequence (token_offset [2, 6]), 4
	// heads of 8: output [10, 32]; attention as two sequences of 6.
	o = m.opD("com.microsoft", "PackedMultiHeadAttention", ins(m.in(f32, 10, 32), m.in(f32, 10, 32), m.in(f32, 10, 32), "",
		m.in(i32, 2, 6), m.in(i32, 3)), 1, aI("num_heads", 4))
	wants[o[0]] = want{[]int64{10, 32}, 2 * 4 * 6 * 6 * (2*8 + 2*8 + 5)}
	// Packed QKV [10, 4, 3, 8].
	o = m.opD("com.microsoft", "PackedMultiHeadAttention", ins(m.in(f32, 10, 4, 3, 8), "", "", "",
		m.in(i32, 2, 6), m.in(i32, 3)), 1, aI("num_heads", 4))
	wants[o[0]] = want{[]int64{10, 32}, 2 * 4 * 6 * 6 * (2*8 + 2*8 + 5)}
	// DecoderMaskedMultiHeadAttention: one token, 4 heads of 8, a buffer of 16 positions:
	// output [3, 1, 32], present = the buffer, qk [3, 4, 1, 16].
	o = m.opD("com.microsoft", "DecoderMaskedMultiHeadAttention", ins(m.in(f32, 3, 1, 32), m.in(f32, 3, 1, 32), m.in(f32, 3, 1, 32), "", "",
		m.in(f32, 3, 4, 16, 8), m.in(f32, 3, 4, 16, 8), m.in(i32, 1)), 4, aI("num_heads", 4), aI("past_present_share_buffer", 1))
	wants[o[0]] = want{[]int64{3, 1, 32}, 3 * 4 * 1 * 16 * (2*8 + 2*8 + 5)}
	wants[o[1]] = want{[]int64{3, 4, 16, 8}, -1}
	wants[o[3]] = want{[]int64{3, 4, 1, 16}, -1}
	// GatedRelativePositionBias: query_layer [2, 5, 4·8], weight [8, 6]: bias [2, 4, 5, 5].
	o = m.opD("com.microsoft", "GatedRelativePositionBias", ins(m.in(f32, 2, 5, 32), m.weight(f32, 32), m.in(f32, 1, 4, 5, 5),
		m.weight(f32, 8, 6), m.weight(f32, 6), m.weight(f32, 1, 4, 1, 1)), 1, aI("num_heads", 4))
	wants[o[0]] = want{[]int64{2, 4, 5, 5}, 2*2*5*32*6 + 8*2*4*5*5}
	// SparseAttention: packed QKV of 4 query and 2 KV heads of 16, a shared buffer of 32:
	// output [1, 3, 64], presents the buffer; FLOPs dense over the buffer (an upper bound).
	o = m.opD("com.microsoft", "SparseAttention", ins(m.in(f32, 1, 3, 128), "", "", m.in(f32, 1, 2, 32, 16), m.in(f32, 1, 2, 32, 16),
		m.in(i32, 1, 3), m.in(i32, 1, 3), m.in(i32, 1), m.in(i32, 1)), 3, aI("num_heads", 4), aI("kv_num_heads", 2), aI("sparse_block_size", 16))
	wants[o[0]] = want{[]int64{1, 3, 64}, 1 * 4 * 3 * 32 * (2*16 + 2*16 + 5)}
	wants[o[2]] = want{[]int64{1, 2, 32, 16}, -1}
	// GemmFastGelu: [2, 3, 8]·[8, 12] + bias, FastGelu: 2·72·8 + 72 + 4·72.
	o = m.opD("com.microsoft", "GemmFastGelu", ins(m.in(f32, 2, 3, 8), m.weight(f32, 8, 12), m.weight(f32, 12)), 1)
	wants[o[0]] = want{[]int64{2, 3, 12}, 2*72*8 + 72 + 4*72}
	// NhwcConv: [1, 9, 9, 4] by [6, 4, 3, 3], stride 2, pads 1: [1, 5, 5, 6].
	o = m.opD("com.microsoft", "NhwcConv", ins(m.in(f32, 1, 9, 9, 4), m.weight(f32, 6, 4, 3, 3), m.weight(f32, 6)), 1,
		aIs("strides", 2, 2), aIs("pads", 1, 1, 1, 1))
	wants[o[0]] = want{[]int64{1, 5, 5, 6}, 2*150*4*9 + 150}

	mp := m.modelProto()
	path := filepath.Join(t.TempDir(), "model.onnx")
	ocWrite(t, path, mp)
	im, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Unsupported) > 0 {
		t.Errorf("unsupported: %v", im.Unsupported)
	}
	g := im.Graph
	for name, w := range wants {
		id, ok := g.TensorByName(name)
		if !ok {
			t.Fatalf("no tensor %s", name)
		}
		tn := &g.Tensors[id]
		if !tn.Shape.Known() || !equalDims(tn.Shape.Dims(), w.shape) {
			t.Errorf("%s (%s): shape %v, want %v", name, g.Nodes[tn.Producer].OpType, tn.Shape, w.shape)
		}
		if tn.DType != graph.Float {
			t.Errorf("%s: dtype %v, want float", name, tn.DType)
		}
		if n := &g.Nodes[tn.Producer]; w.flops >= 0 && n.FLOPs != w.flops {
			t.Errorf("%s: %d FLOPs, want %d", n.OpType, n.FLOPs, w.flops)
		}
	}
}

func equalDims(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
