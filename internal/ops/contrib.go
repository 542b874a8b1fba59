package ops

import "github.com/onnxpart/onnxpart/graph"

// Cost facts of ONNX Runtime's contrib ops and of quantised ops.

// attnCore counts scaled dot-product attention of b·heads query rows s over l keys: Q·Kᵀ
// (2·s·l·hk per head), softmax (5 per score) and the product with V (2·s·l·hv per head).
func attnCore(b, heads, s, l, hk, hv int64) int64 {
	return b * heads * s * l * (2*hk + 2*hv + 5)
}

// gqaFLOPs: GroupQueryAttention's attention over the present keys (output [B, S, N·H],
// present [B, kv, T, H]), plus the rotary embedding of queries and keys when do_rotary is
// set (3 per element: x·cos + rotate(x)·sin).
func gqaFLOPs(g *graph.Graph, n *graph.Node) int64 {
	o, ok := Dims(g, Out(n, 0))
	nh := n.AttrInt("num_heads", 0)
	if !ok || len(o) != 3 || nh <= 0 || o[2]%nh != 0 {
		return 0
	}
	h := o[2] / nh
	t := o[1]
	kv := n.AttrInt("kv_num_heads", nh)
	if p, ok := Dims(g, Out(n, 1)); ok && len(p) == 4 {
		t, kv = p[2], p[1]
	} else if p, ok := Dims(g, In(n, 3)); ok && len(p) == 4 {
		t = p[2] + o[1]
	}
	f := attnCore(o[0], nh, o[1], t, h, h)
	if n.AttrInt("do_rotary", 0) != 0 {
		f += 3 * o[0] * o[1] * (nh + kv) * h
	}
	return f
}

// mhaFLOPs: MultiHeadAttention's attention over L keys (present [B, N, L, H], else the key
// input's length), plus the bias add when a bias is given.
func mhaFLOPs(g *graph.Graph, n *graph.Node) int64 {
	o, ok := Dims(g, Out(n, 0))
	nh := n.AttrInt("num_heads", 0)
	if !ok || len(o) != 3 || nh <= 0 || o[2]%nh != 0 {
		return 0
	}
	hv := o[2] / nh
	hk, l := hv, int64(-1)
	if p, ok := Dims(g, Out(n, 1)); ok && len(p) == 4 {
		l, hk = p[2], p[3]
	} else if q, ok := Dims(g, In(n, 0)); ok && len(q) == 5 {
		l = q[1]
	} else if k, ok := Dims(g, In(n, 1)); ok && len(k) == 3 {
		l = k[1]
	} else if ok && len(k) == 4 { // [B, N, L, H]
		l = k[2]
	} else if ok && len(k) == 5 { // packed KV [B, L, N, 2, H]
		l = k[1]
	}
	if l < 0 {
		return 0
	}
	f := attnCore(o[0], nh, o[1], l, hk, hv)
	if b, ok := Dims(g, In(n, 3)); ok && len(b) == 1 {
		f += o[0] * o[1] * b[0]
	}
	return f
}

// msAttentionFLOPs: Attention's fused QKV projection (2·B·S·In·W, plus the bias) and the
// attention over the present keys ([2, B, N, T, H]; T = S without past).
func msAttentionFLOPs(g *graph.Graph, n *graph.Node) int64 {
	x, okx := Dims(g, In(n, 0))
	w, okw := Dims(g, In(n, 1))
	o, oko := Dims(g, Out(n, 0))
	nh := n.AttrInt("num_heads", 0)
	if !okx || !okw || !oko || len(x) != 3 || len(w) != 2 || len(o) != 3 || nh <= 0 {
		return 0
	}
	b, s := x[0], x[1]
	f := 2 * b * s * x[2] * w[1]
	if In(n, 2) >= 0 {
		f += b * s * w[1]
	}
	dk, dv := (w[1]-o[2])/2, o[2]
	if hs := n.AttrInts("qkv_hidden_sizes"); len(hs) == 3 {
		dk = hs[1]
	}
	t := s
	if p, ok := Dims(g, Out(n, 1)); ok && len(p) == 5 {
		t = p[3]
	}
	return f + attnCore(b, nh, s, t, dk/nh, dv/nh)
}

// matMulNBitsFLOPs: the product with the dequantised B, 2·|output|·K, as MatMul's. Unpacking
// the int4 weights is integer work inside the kernel, not counted (it shows in the time the
// cost class prices, not in the model's FLOPs, so that a quantised model's FLOPs compare
// with its float twin's).
func matMulNBitsFLOPs(g *graph.Graph, n *graph.Node) int64 {
	o, ok := Dims(g, Out(n, 0))
	k := n.AttrInt("K", 0)
	if !ok || k <= 0 {
		return 0
	}
	return 2 * prod(o) * k
}

// matMulNBitsParams: B, packed [N, K/block, block·bits/8] bytes, holds N·K weights; scales and
// zero points are quantisation metadata (zero points packed like B when bits < 8).
func matMulNBitsParams(g *graph.Graph, n *graph.Node, i int, elems int64) (int64, int64) {
	bits := n.AttrInt("bits", 4)
	switch i {
	case 1:
		if k, nn := n.AttrInt("K", 0), n.AttrInt("N", 0); k > 0 && nn > 0 {
			return k * nn, 0
		}
		return elems * unpack(bits), 0
	case 2:
		return 0, elems
	case 3:
		if t := In(n, 3); t >= 0 && g.Tensors[t].DType == graph.Uint8 {
			return 0, elems * unpack(bits)
		}
		return 0, elems
	}
	return elems, 0
}

// gatherBlockQuantizedParams: data packed 8/bits values per uint8 byte; scales and zero
// points are metadata.
func gatherBlockQuantizedParams(g *graph.Graph, n *graph.Node, i int, elems int64) (int64, int64) {
	switch i {
	case 0:
		if t := In(n, 0); t >= 0 && g.Tensors[t].DType == graph.Uint8 {
			return elems * unpack(n.AttrInt("bits", 4)), 0
		}
		return elems, 0
	case 2, 3:
		return 0, elems
	}
	return elems, 0
}

// qdqParams: the quantised tensor a DequantizeLinear reads (a QDQ model's weight) holds
// parameters; its scale and zero point are metadata. QuantizeLinear's scale and zero point
// likewise.
func qdqParams(g *graph.Graph, n *graph.Node, i int, elems int64) (int64, int64) {
	if i == 0 {
		return elems, 0
	}
	return 0, elems
}

func unpack(bits int64) int64 {
	if bits <= 0 || bits >= 8 || 8%bits != 0 {
		return 1
	}
	return 8 / bits
}

// qGemmFLOPs: QGemm's product, A (input 0) by B (input 3), plus the bias C (input 6).
func qGemmFLOPs(g *graph.Graph, n *graph.Node) int64 { return gemmProductFLOPs(g, n, 6) }

// nhwcConvFLOPs: Conv's formula with the channels last: 2 · |Y| · (Cin/group) · Π(kernel),
// plus the bias (input 2).
func nhwcConvFLOPs(g *graph.Graph, n *graph.Node) int64 {
	w, okw := Dims(g, In(n, 1))
	o, oko := Dims(g, Out(n, 0))
	if !okw || !oko || len(w) < 3 || len(o) < 3 {
		return 0
	}
	f := 2 * prod(o) * w[1] * prod(w[2:])
	if In(n, 2) >= 0 {
		f += prod(o)
	}
	return f
}

// gemmFastGeluFLOPs: GemmFastGelu's product X·W (MatMul's), the bias and FastGelu's 4 per
// output element.
func gemmFastGeluFLOPs(g *graph.Graph, n *graph.Node) int64 {
	f := matmulFLOPs(false)(g, n)
	if f == 0 {
		return 0
	}
	o := Elems(g, Out(n, 0))
	if In(n, 2) >= 0 {
		f += o
	}
	return f + 4*o
}

// packedMHAFLOPs: PackedMultiHeadAttention over B sequences of at most S tokens
// (token_offset, input 4, is [B, S]): attention as if every sequence were S long, an upper
// bound when the batch's sequences differ in length, plus the bias add.
func packedMHAFLOPs(g *graph.Graph, n *graph.Node) int64 {
	q, okq := Dims(g, In(n, 0))
	o, oko := Dims(g, Out(n, 0))
	off, okt := Dims(g, In(n, 4))
	nh := n.AttrInt("num_heads", 0)
	if !okq || !oko || !okt || len(off) != 2 || len(o) != 2 || nh <= 0 || o[1]%nh != 0 {
		return 0
	}
	hk := o[1] / nh
	switch {
	case len(q) == 4:
		hk = q[3]
	case len(q) == 2 && q[1]%nh == 0:
		hk = q[1] / nh
	}
	f := attnCore(off[0], nh, off[1], off[1], hk, o[1]/nh)
	if b, ok := Dims(g, In(n, 3)); ok && len(b) == 1 {
		f += o[0] * b[0]
	}
	return f
}

// dmmhaFLOPs: DecoderMaskedMultiHeadAttention, S new tokens (1) against the M positions of
// present_key ([B, N, M, H]): with a shared buffer an upper bound, the kernel reads the
// past_sequence_length filled positions only.
func dmmhaFLOPs(g *graph.Graph, n *graph.Node) int64 {
	o, oko := Dims(g, Out(n, 0))
	p, okp := Dims(g, Out(n, 1))
	nh := n.AttrInt("num_heads", 0)
	if !oko || !okp || len(o) != 3 || len(p) != 4 || nh <= 0 || o[2]%nh != 0 {
		return 0
	}
	return attnCore(o[0], nh, o[1], p[2], p[3], o[2]/nh)
}

// gatedRPBFLOPs: GatedRelativePositionBias projects every head's query rows by weight
// [H, D] (2·B·S·N·H·D), then gates the relative position bias (about 8 per output element).
func gatedRPBFLOPs(g *graph.Graph, n *graph.Node) int64 {
	q, okq := Dims(g, In(n, 0))
	w, okw := Dims(g, In(n, 3))
	o := Elems(g, Out(n, 0))
	if !okq || !okw || len(q) != 3 || len(w) != 2 || o == 0 {
		return 0
	}
	return 2*q[0]*q[1]*q[2]*w[1] + 8*o
}
