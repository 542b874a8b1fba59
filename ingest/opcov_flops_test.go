package ingest

import (
	"path/filepath"
	"testing"
)

// TestFLOPsByHand checks flops.go's formulas on small models against FLOP counts worked out
// by hand (one multiply-accumulate = 2 FLOPs). knownBug marks cases where flops.go is wrong
// (reported, not fixed here: flops.go belongs to another owner); those log the discrepancy
// and fail once the count becomes right, so the mark is removed.
func TestFLOPsByHand(t *testing.T) {
	type fc struct {
		name     string
		opset    int64
		build    func(m *ocModel)
		want     int64 // FLOPs of the last node
		knownBug string
	}
	cases := []fc{
		// out [1,6,4,4]: (7+2−3)/2+1 = 4; MACs 1·6·16 · 4·3·3 = 3456; bias 96.
		{"ConvStridedBias", 11, func(m *ocModel) {
			m.op("Conv", ins(m.in(f32, 1, 4, 7, 7), m.weight(f32, 6, 4, 3, 3), m.weight(f32, 6)), aIs("pads", 1, 1, 1, 1), aIs("strides", 2, 2))
		}, 2*3456 + 96, ""},
		// group 2: out [1,6,7,7] = 294 outputs, each 2·3·3 = 18 MACs.
		{"ConvGrouped", 11, func(m *ocModel) {
			m.op("Conv", ins(m.in(f32, 1, 4, 7, 7), m.weight(f32, 6, 2, 3, 3)), aI("group", 2), aIs("pads", 1, 1, 1, 1))
		}, 2 * 294 * 18, ""},
		// depthwise: (7−3)/2+1 = 3, out [1,4,3,3] = 36 outputs of 9 MACs.
		{"ConvDepthwise", 11, func(m *ocModel) {
			m.op("Conv", ins(m.in(f32, 1, 4, 7, 7), m.weight(f32, 4, 1, 3, 3)), aI("group", 4), aIs("strides", 2, 2))
		}, 2 * 36 * 9, ""},
		// 1-D: out [2,4,6] = 48 outputs of 3·3 = 9 MACs.
		{"Conv1D", 11, func(m *ocModel) {
			m.op("Conv", ins(m.in(f32, 2, 3, 10), m.weight(f32, 4, 3, 3)), aIs("strides", 2), aIs("pads", 1, 2))
		}, 2 * 48 * 9, ""},
		// 3-D: D (5+0+1−2)/1+1 = 5, H (6+1+0−3)/2+1 = 3, W (7+1+1−3)/2+1 = 4: out [1,3,5,3,4] =
		// 180 outputs of 2·2·3·3 = 36 MACs.
		{"Conv3D", 11, func(m *ocModel) {
			m.op("Conv", ins(m.in(f32, 1, 2, 5, 6, 7), m.weight(f32, 3, 2, 2, 3, 3)), aIs("strides", 1, 2, 2), aIs("pads", 0, 1, 1, 1, 0, 1))
		}, 2 * 180 * 36, ""},
		// Each of the 2·12 input pixels is scattered to 3 channels · 3·3 taps: 648 MACs; bias
		// on the [1,3,7,9] output: 189.
		{"ConvTranspose", 11, func(m *ocModel) {
			m.op("ConvTranspose", ins(m.in(f32, 1, 2, 3, 4), m.weight(f32, 2, 3, 3, 3), m.weight(f32, 3)), aIs("strides", 2, 2))
		}, 2*648 + 189, ""},
		// group 2: each input pixel reaches Cout/group = 2 channels: 2·12·2·9 = 432 MACs.
		{"ConvTransposeGrouped", 11, func(m *ocModel) {
			m.op("ConvTranspose", ins(m.in(f32, 1, 2, 3, 4), m.weight(f32, 2, 2, 3, 3)), aI("group", 2), aIs("strides", 2, 1))
		}, 2 * 432, ""},
		// out [2,5,3,6] = 180 outputs of K = 4 MACs.
		{"MatMulBatchBroadcast", 13, func(m *ocModel) {
			m.op("MatMul", ins(m.in(f32, 2, 1, 3, 4), m.in(f32, 5, 4, 6)))
		}, 2 * 180 * 4, ""},
		// [3]·[2,3,4] → [2,4]: 8 outputs of 3 MACs.
		{"MatMulVecLeft", 13, func(m *ocModel) { m.op("MatMul", ins(m.in(f32, 3), m.in(f32, 2, 3, 4))) }, 2 * 8 * 3, ""},
		// [2,5,3]·[3] → [2,5]: 10 outputs of 3 MACs.
		{"MatMulVecRight", 13, func(m *ocModel) { m.op("MatMul", ins(m.in(f32, 2, 5, 3), m.in(f32, 3))) }, 2 * 10 * 3, ""},
		// dot product of length 3.
		{"MatMulDot", 13, func(m *ocModel) { m.op("MatMul", ins(m.in(f32, 3), m.in(f32, 3))) }, 2 * 3, ""},
		// [3,4]·[4,5] + C: 15 outputs of 4 MACs, + 15 adds for C.
		{"GemmBias", 13, func(m *ocModel) {
			m.op("Gemm", ins(m.in(f32, 3, 4), m.weight(f32, 4, 5), m.weight(f32, 5)))
		}, 2*15*4 + 15, ""},
		// transA, transB, no C: A is [4,3] → M=3, K=4; B [5,4] → N=5.
		{"GemmTransposed", 13, func(m *ocModel) {
			m.op("Gemm", ins(m.in(f32, 4, 3), m.weight(f32, 5, 4)), aI("transA", 1), aI("transB", 1))
		}, 2 * 15 * 4, ""},
		// alpha ≠ 1 scales A·B (15 multiplies), beta ≠ 1 scales C (15 more), + 15 adds for C
		// (the formula documented in flops.go).
		{"GemmAlphaBeta", 13, func(m *ocModel) {
			m.op("Gemm", ins(m.in(f32, 3, 4), m.weight(f32, 4, 5), m.weight(f32, 5)), aF("alpha", 0.5), aF("beta", 2))
		}, 2*15*4 + 15 + 15 + 15, ""},
		// 3·4·5 = 60 MACs.
		{"EinsumMatMul", 12, func(m *ocModel) {
			m.op("Einsum", ins(m.in(f32, 3, 4), m.in(f32, 4, 5)), aS("equation", "ij,jk->ik"))
		}, 2 * 60, ""},
		// b·h·i·j·d = 2·4·3·5·8 = 960 MACs.
		{"EinsumAttention", 12, func(m *ocModel) {
			m.op("Einsum", ins(m.in(f32, 2, 4, 3, 8), m.in(f32, 2, 4, 5, 8)), aS("equation", "bhid,bhjd->bhij"))
		}, 2 * 960, ""},
		// Broadcast batch [2,1]×[1,5] → [2,5] = 10 batches of 3·4·6 = 72 MACs.
		{"EinsumEllipsisBroadcast", 12, func(m *ocModel) {
			m.op("Einsum", ins(m.in(f32, 2, 1, 3, 4), m.in(f32, 1, 5, 4, 6)), aS("equation", "...ij,...jk->...ik"))
		}, 2 * 10 * 72, ""},
		// LSTM: seq 5 · batch 2 · 4 gates · hidden 4 · (input 3 + hidden 4) = 1120 MACs per
		// direction.
		{"LSTM", 14, func(m *ocModel) {
			m.opN("LSTM", ins(m.in(f32, 5, 2, 3), m.weight(f32, 1, 16, 3), m.weight(f32, 1, 16, 4)), 3, aI("hidden_size", 4))
		}, 2 * 1120, ""},
		{"LSTMBidirectional", 14, func(m *ocModel) {
			m.opN("LSTM", ins(m.in(f32, 5, 2, 3), m.weight(f32, 2, 16, 3), m.weight(f32, 2, 16, 4)), 3, aI("hidden_size", 4), aS("direction", "bidirectional"))
		}, 2 * 2 * 1120, ""},
		// GRU: 3 gates; RNN: 1.
		{"GRU", 14, func(m *ocModel) {
			m.opN("GRU", ins(m.in(f32, 5, 2, 3), m.weight(f32, 1, 12, 3), m.weight(f32, 1, 12, 4)), 2, aI("hidden_size", 4))
		}, 2 * 5 * 2 * 3 * 4 * 7, ""},
		{"RNN", 14, func(m *ocModel) {
			m.opN("RNN", ins(m.in(f32, 5, 2, 3), m.weight(f32, 1, 4, 3), m.weight(f32, 1, 4, 4)), 2, aI("hidden_size", 4))
		}, 2 * 5 * 2 * 4 * 7, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newOCModel(c.opset)
			c.build(m)
			path := filepath.Join(t.TempDir(), "m.onnx")
			ocWrite(t, path, m.modelProto())
			im, err := Load(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			n := &im.Graph.Nodes[len(im.Graph.Nodes)-1]
			switch {
			case c.knownBug == "" && n.FLOPs != c.want:
				t.Errorf("%s: %d FLOPs, by hand %d", n.OpType, n.FLOPs, c.want)
			case c.knownBug != "" && n.FLOPs == c.want:
				t.Errorf("%s: %d FLOPs is now right; drop the knownBug mark", n.OpType, n.FLOPs)
			case c.knownBug != "":
				t.Logf("known flops.go bug: %s: %d FLOPs, by hand %d (%s)", n.OpType, n.FLOPs, c.want, c.knownBug)
			}
		})
	}
}
