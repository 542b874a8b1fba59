package ingest

import (
	"testing"

	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// TestOpCoverageContrib checks shape inference of ONNX Runtime's contrib and quantised ops
// (the ops its transformer optimizer, GenAI model builder and quantisation tools emit)
// against ONNX Runtime, with no value_info.
func TestOpCoverageContrib(t *testing.T) {
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
	for _, c := range ocContrib() {
		t.Run(c.name, func(t *testing.T) { runOCCase(t, c) })
	}
}

func ocContrib() []ocCase {
	msOp := func(m *ocModel) func(op string, inputs []string, n int, attrs ...*onnxpb.AttributeProto) []string {
		m.opsets["com.microsoft"] = 1
		return func(op string, inputs []string, n int, attrs ...*onnxpb.AttributeProto) []string {
			return m.opD("com.microsoft", op, inputs, n, attrs...)
		}
	}
	// GroupQueryAttention, 4 query heads and 2 KV heads of size 8.
	gqa := aI("num_heads", 4)
	gqaKV := aI("kv_num_heads", 2)
	return []ocCase{
		// Prefill-and-continue: past 4, new 3, total a graph input (value unknown to ingest):
		// present = past + new.
		{name: "GQAPast", opset: 17, build: func(m *ocModel) {
			ms := msOp(m)
			ms("GroupQueryAttention", ins(m.in(f32, 1, 3, 32), m.in(f32, 1, 3, 16), m.in(f32, 1, 3, 16),
				m.in(f32, 1, 2, 4, 8), m.in(f32, 1, 2, 4, 8), m.inData(i32, []float64{6}, 1), m.inData(i32, []float64{7})), 3, gqa, gqaKV)
		}},
		// Total known (an initializer), no past: a prefill of 5.
		{name: "GQAPrefill", opset: 17, build: func(m *ocModel) {
			ms := msOp(m)
			ms("GroupQueryAttention", ins(m.in(f32, 2, 5, 32), m.in(f32, 2, 5, 16), m.in(f32, 2, 5, 16),
				"", "", m.inData(i32, []float64{4, 4}, 2), m.init(i32, []int64{}, []float64{5})), 3, gqa, gqaKV)
		}},
		// A shared past/present buffer of 16 positions, decoding one token at total 6: present
		// is the buffer. Packed QKV (no key, value) with rotary inside the op (ORT wants heads of
		// a multiple of 16 for rotary).
		{name: "GQASharedBufferPackedRotary", opset: 17, build: func(m *ocModel) {
			ms := msOp(m)
			ms("GroupQueryAttention", ins(m.in(f32, 1, 1, 128), "", "",
				m.in(f32, 1, 2, 16, 16), m.in(f32, 1, 2, 16, 16), m.inData(i32, []float64{5}, 1), m.init(i32, []int64{}, []float64{6}),
				m.weight(f32, 16, 8), m.weight(f32, 16, 8)), 3, gqa, gqaKV, aI("do_rotary", 1))
		}},
		// Symbolic sizes: present follows past + sequence (ORT runs batch 1 only when a prompt
		// continues a past).
		{name: "GQASymbolic", opset: 17, run: map[string]int64{"B": 1, "S": 3, "P": 4}, build: func(m *ocModel) {
			ms := msOp(m)
			ms("GroupQueryAttention", ins(m.in(f32, "B", "S", 32), m.in(f32, "B", "S", 16), m.in(f32, "B", "S", 16),
				m.in(f32, "B", 2, "P", 8), m.in(f32, "B", 2, "P", 8), m.inData(i32, []float64{6}, "B"), m.inData(i32, []float64{7})), 3, gqa, gqaKV)
		}},
		// MatMulNBits: int4 weights [N=16, K/32=2 blocks, 16 bytes], with and without zero
		// points, at accuracy level 4 (int8 activations).
		{name: "MatMulNBits", opset: 17, build: func(m *ocModel) {
			ms := msOp(m)
			attrs := []*onnxpb.AttributeProto{aI("K", 64), aI("N", 16), aI("bits", 4), aI("block_size", 32)}
			ms("MatMulNBits", ins(m.in(f32, 2, 3, 64), m.weight(u8, 16, 2, 16), m.weight(f32, 32)), 1, attrs...)
			ms("MatMulNBits", ins(m.in(f32, 5, 64), m.weight(u8, 16, 2, 16), m.weight(f32, 16, 2), m.weight(u8, 16)), 1,
				append(attrs, aI("accuracy_level", 4))...)
			ms("MatMulNBits", ins(m.in(f32, "S", 64), m.weight(u8, 16, 2, 16), m.weight(f32, 32), "", "", m.weight(f32, 16)), 1, attrs...)
		}, run: map[string]int64{"S": 4}},
		// GatherBlockQuantized: an int4 embedding table of 10 rows of 64, packed 2 per byte.
		{name: "GatherBlockQuantized", opset: 17, build: func(m *ocModel) {
			ms := msOp(m)
			ms("GatherBlockQuantized", ins(m.weight(u8, 10, 32), m.inData(i64, []float64{1, 9, 0, 3, 3, 7}, 2, 3), m.weight(f32, 10, 2)), 1,
				aI("block_size", 32), aI("quantize_axis", 1))
			ms("GatherBlockQuantized", ins(m.weight(u8, 10, 32), m.inData(i32, []float64{4}, 1), m.weight(f32, 10, 2), m.weight(u8, 10, 1)), 1,
				aI("block_size", 32))
		}},
		{name: "RotaryEmbedding", opset: 17, build: func(m *ocModel) {
			ms := msOp(m)
			ms("RotaryEmbedding", ins(m.in(f32, 2, 3, 32), m.inData(i64, []float64{0, 1, 2, 3, 4, 5}, 2, 3), m.weight(f32, 8, 4), m.weight(f32, 8, 4)), 1,
				aI("num_heads", 4))
			ms("RotaryEmbedding", ins(m.in(f32, 1, 4, 2, 8), m.inData(i64, []float64{2, 3}, 1, 2), m.weight(f32, 8, 4), m.weight(f32, 8, 4)), 1)
		}},
		{name: "SkipSimplifiedLayerNorm", opset: 17, build: func(m *ocModel) {
			ms := msOp(m)
			ms("SkipSimplifiedLayerNormalization", ins(m.in(f32, 2, 3, 8), m.in(f32, 2, 3, 8), m.weight(f32, 8)), 4, aF("epsilon", 1e-5))
			ms("SkipSimplifiedLayerNormalization", ins(m.in(f32, "S", 8), m.in(f32, "S", 8), m.weight(f32, 8), m.weight(f32, 8)), 1)
		}, run: map[string]int64{"S": 5}},
		// Attention of ORT's transformer optimizer: fused QKV weights, with and without past.
		{name: "MSAttention", opset: 17, build: func(m *ocModel) {
			ms := msOp(m)
			ms("Attention", ins(m.in(f32, 2, 3, 16), m.weight(f32, 16, 48), m.weight(f32, 48)), 1, aI("num_heads", 4))
			ms("Attention", ins(m.in(f32, 2, 3, 16), m.weight(f32, 16, 40), m.weight(f32, 40)), 1, aI("num_heads", 4),
				aIs("qkv_hidden_sizes", 16, 16, 8))
			ms("Attention", ins(m.in(f32, 2, 1, 16), m.weight(f32, 16, 48), m.weight(f32, 48), "", m.in(f32, 2, 2, 4, 5, 4)), 2,
				aI("num_heads", 4), aI("unidirectional", 1))
		}},
		{name: "MultiHeadAttention", opset: 17, build: func(m *ocModel) {
			ms := msOp(m)
			ms("MultiHeadAttention", ins(m.in(f32, 2, 3, 16), m.in(f32, 2, 5, 16), m.in(f32, 2, 5, 16)), 1, aI("num_heads", 4))
			ms("MultiHeadAttention", ins(m.in(f32, 2, 1, 16), m.in(f32, 2, 1, 16), m.in(f32, 2, 1, 16), "", "", "",
				m.in(f32, 2, 4, 6, 4), m.in(f32, 2, 4, 6, 4)), 3, aI("num_heads", 4))
			ms("MultiHeadAttention", ins(m.in(f32, 2, 3, 16), m.in(f32, 2, 4, 7, 4), m.in(f32, 2, 4, 7, 4)), 1, aI("num_heads", 4))
		}},
		{name: "EmbedLayerNorm", opset: 17, build: func(m *ocModel) {
			ms := msOp(m)
			ms("EmbedLayerNormalization", ins(m.inData(i32, []float64{1, 2, 3, 4, 5, 9}, 2, 3), m.inData(i32, []float64{0, 0, 1, 0, 1, 1}, 2, 3),
				m.weight(f32, 10, 8), m.weight(f32, 16, 8), m.weight(f32, 2, 8), m.weight(f32, 8), m.weight(f32, 8)), 2)
			ms("EmbedLayerNormalization", ins(m.inData(i32, []float64{1, 2, 3, 4}, 1, 4), "",
				m.weight(f32, 10, 8), m.weight(f32, 16, 8), "", m.weight(f32, 8), m.weight(f32, 8)), 3)
		}},
		{name: "QuantizedMatMulToFloat", opset: 17, build: func(m *ocModel) {
			ms := msOp(m)
			ms("DynamicQuantizeMatMul", ins(m.in(f32, 2, 3, 8), m.weight(i8, 8, 5), m.init(f32, []int64{1}, []float64{0.1})), 1)
			ms("MatMulIntegerToFloat", ins(m.in(u8, 2, 3, 8), m.weight(u8, 8, 5), m.init(f32, []int64{}, []float64{0.1}), m.init(f32, []int64{}, []float64{0.2})), 1)
		}},
		// QGemm (ORT's quantizer writes it for Gemm in QOperator form): with a quantised
		// output, transposed B and a bias; and with a float output.
		{name: "QGemm", opset: 17, build: func(m *ocModel) {
			ms := msOp(m)
			sa, za := m.scalarF(0.1), m.init(u8, []int64{}, []float64{128})
			zb := m.init(i8, []int64{}, []float64{0})
			ms("QGemm", ins(m.in(u8, 3, 8), sa, za, m.weight(i8, 5, 8), sa, zb, m.weight(i32, 5), sa, za), 1, aI("transB", 1))
			ms("QGemm", ins(m.in(u8, 8, 3), sa, za, m.weight(i8, 8, 5), sa, zb), 1, aI("transA", 1))
		}},
		// The QOperator pools, channels first.
		{name: "QLinearPools", opset: 17, build: func(m *ocModel) {
			ms := msOp(m)
			sa, za := m.scalarF(0.1), m.init(u8, []int64{}, []float64{128})
			x := m.in(u8, 2, 3, 7, 7)
			ms("QLinearAveragePool", ins(x, sa, za, sa, za), 1, aIs("kernel_shape", 3, 3), aIs("strides", 2, 2), aIs("pads", 1, 1, 1, 1))
			ms("QLinearGlobalAveragePool", ins(x, sa, za, sa, za), 1)
		}},
		// QOperator elementwise ops of ORT's quantizer (uint8, per-tensor).
		{name: "QLinearElementwise", opset: 17, build: func(m *ocModel) {
			ms := msOp(m)
			sa, za := m.scalarF(0.1), m.init(u8, []int64{}, []float64{128})
			a, b := m.in(u8, 2, 3, 4), m.in(u8, 3, 1)
			ms("QLinearAdd", ins(a, sa, za, b, sa, za, sa, za), 1)
			ms("QLinearMul", ins(b, sa, za, a, sa, za, sa, za), 1)
			ms("QLinearSigmoid", ins(a, sa, za, sa, za), 1)
			ms("QLinearLeakyRelu", ins(a, sa, za, sa, za), 1, aF("alpha", 0.1))
			ms("QLinearSoftmax", ins(a, sa, za, sa, za), 1, aI("axis", -1), aI("opset", 13))
			ms("QLinearConcat", ins(sa, za, a, sa, za, m.in(u8, 2, 5, 4), sa, za), 1, aI("axis", 1))
		}},
		// QAttention (dynamic quantisation of the encoder's Attention): uint8 input and
		// weights, float output; with and without past.
		{name: "QAttention", opset: 17, build: func(m *ocModel) {
			ms := msOp(m)
			sa := m.scalarF(0.05)
			za := m.init(u8, []int64{}, []float64{128})
			ms("QAttention", ins(m.in(u8, 2, 3, 16), m.weight(u8, 16, 48), m.weight(f32, 48), sa, sa, "", za, za), 1, aI("num_heads", 4))
			ms("QAttention", ins(m.in(u8, 2, 1, 16), m.weight(u8, 16, 48), m.weight(f32, 48), sa, sa, "", za, za, m.in(f32, 2, 2, 4, 5, 4)), 2,
				aI("num_heads", 4), aI("unidirectional", 1))
		}},
		// DecoderMaskedMultiHeadAttention, one token of 4 heads of 8 after 5 past positions in
		// a shared buffer of 8 (ORT's CPU kernel takes the shared form only).
		{name: "DecoderMaskedMHA", opset: 17, build: func(m *ocModel) {
			ms := msOp(m)
			ms("DecoderMaskedMultiHeadAttention", ins(m.in(f32, 2, 1, 32), m.in(f32, 2, 1, 32), m.in(f32, 2, 1, 32), "", "",
				m.in(f32, 2, 4, 8, 8), m.in(f32, 2, 4, 8, 8), m.inData(i32, []float64{5}, 1)), 3, aI("num_heads", 4), aI("past_present_share_buffer", 1))
		}},
		// Blocked quantisation (opset 21): scales per 32 elements along axis 1.
		{name: "QDQBlocked", opset: 21, build: func(m *ocModel) {
			q := m.op("QuantizeLinear", ins(m.in(f32, 4, 64), m.weight(f32, 4, 2), m.weight(i8, 4, 2)), aI("axis", 1), aI("block_size", 32))
			m.op("DequantizeLinear", ins(q, m.weight(f32, 4, 2), m.weight(i8, 4, 2)), aI("axis", 1), aI("block_size", 32))
			m.op("DequantizeLinear", ins(m.weight(u8, 64, 16), m.weight(f32, 2, 16)), aI("axis", 0), aI("block_size", 32))
		}},
	}
}
