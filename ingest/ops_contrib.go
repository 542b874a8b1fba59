package ingest

import (
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
)

// Shape rules of ONNX Runtime's contrib ops (com.microsoft) that its transformer optimizer,
// GenAI model builder and quantisation tools emit. Each follows the op's definition in ONNX
// Runtime (docs/ContribOperators.md and the CPU kernels' input checks): the outputs' shapes
// come from the inputs and attributes alone, so models without value_info are covered.

// headsDim is attribute name as a static dim, unknown when absent or not positive.
func headsDim(c *nctx, name string) graph.Dim {
	if v := c.n.AttrInt(name, 0); v > 0 {
		return graph.Static(v)
	}
	return unknownDim
}

// totalSeqDim is the dim that input i (a scalar such as total_sequence_length) holds, when
// its value is known as a number or named by a symbolic dimension.
func totalSeqDim(c *nctx, i int) (graph.Dim, bool) {
	t := c.in(i)
	if t == nil || len(t.ival) != 1 {
		return unknownDim, false
	}
	d := dimOfVal(t.ival[0])
	if !d.Known() && d.Param == "" {
		return unknownDim, false
	}
	return d, true
}

// groupQueryAttention: query [B, S, D] with key and value [B, S, kv·H], or packed QKV
// (D = (num_heads + 2·kv_num_heads)·H, no key); past_key/past_value [B, kv, P, H]; seqlens_k
// [B]; total_sequence_length (a scalar T). Output [B, S, num_heads·H]; present_key/value
// [B, kv, max(P, T), H] (with a shared past/present buffer P ≥ T, so present is the past
// buffer; else present holds P + S = T positions).
func groupQueryAttention(c *nctx) error {
	q := c.in(0)
	if q == nil {
		return nil
	}
	nh, kv := headsDim(c, "num_heads"), headsDim(c, "kv_num_heads")
	if q.shape == nil || len(q.shape) != 3 {
		for i := 0; i < c.nout(); i++ {
			c.set(i, q.dt, nil)
		}
		return nil
	}
	b, s, d := q.shape[0], q.shape[1], q.shape[2]
	var h graph.Dim
	if k := c.in(1); k != nil {
		h = dimDiv(d, nh)
	} else {
		h = dimDiv(d, dimAdd(nh, dimMul(graph.Static(2), kv)))
	}
	if d.Known() && h.Known() && nh.Known() && kv.Known() {
		want := nh.Value * h.Value
		if c.in(1) == nil {
			want = (nh.Value + 2*kv.Value) * h.Value
		}
		if want != d.Value {
			return c.errorf("query hidden size %d does not split into num_heads %d and kv_num_heads %d", d.Value, nh.Value, kv.Value)
		}
	}
	c.set(0, q.dt, graph.Shape{b, s, dimMul(nh, h)})
	present := unknownDim
	t, tOK := totalSeqDim(c, 6)
	past := c.in(3)
	switch {
	case past != nil && past.shape != nil && len(past.shape) == 4:
		p := past.shape[2]
		if l := past.shape[3]; l.Known() && h.Known() && l.Value != h.Value && c.n.AttrString("k_quant_type", "NONE") == "NONE" {
			return c.errorf("past_key's last axis %d is not the head size %d (query width %d over the heads)", l.Value, h.Value, d.Value)
		}
		switch {
		case tOK && t.Known() && p.Known():
			present = graph.Static(max(t.Value, p.Value))
		case tOK:
			present = t
		default:
			present = dimAdd(p, s)
		}
	case tOK:
		present = t
	case past == nil:
		present = s
	}
	if c.nout() > 1 {
		c.set(1, q.dt, graph.Shape{b, kv, present, h})
	}
	if c.nout() > 2 {
		c.set(2, q.dt, graph.Shape{b, kv, present, h})
	}
	return nil
}

// msAttention is com.microsoft Attention: input [B, S, In], weights [In, Dq+Dk+Dv]
// (qkv_hidden_sizes, else three equal parts), past [2, B, N, P, H]. Output [B, S, Dv];
// present [2, B, N, P+S, H].
func msAttention(c *nctx) error {
	x, w := c.in(0), c.in(1)
	if x == nil {
		return nil
	}
	if x.shape == nil || len(x.shape) != 3 || w == nil || w.shape == nil || len(w.shape) != 2 {
		c.set(0, x.dt, nil)
		return nil
	}
	b, s := x.shape[0], x.shape[1]
	nh := headsDim(c, "num_heads")
	dt, pastIdx := x.dt, 4
	if c.n.OpType == optype.QAttention { // integer input and weights; float result (input_scale's type)
		pastIdx = 8
		if sc := c.in(3); sc != nil {
			dt = sc.dt
		}
	}
	dv, dk := dimDiv(w.shape[1], graph.Static(3)), dimDiv(w.shape[1], graph.Static(3))
	if hs := c.n.AttrInts("qkv_hidden_sizes"); len(hs) == 3 {
		dk, dv = graph.Static(hs[1]), graph.Static(hs[2])
	}
	c.set(0, dt, graph.Shape{b, s, dv})
	if c.nout() > 1 {
		total := s
		if p := c.in(pastIdx); p != nil {
			total = unknownDim
			if p.shape != nil && len(p.shape) == 5 {
				total = dimAdd(p.shape[3], s)
			}
		}
		c.set(1, dt, graph.Shape{graph.Static(2), b, nh, total, dimDiv(dk, nh)})
	}
	return nil
}

// multiHeadAttention: query [B, S, D]; key/value [B, L, D] and [B, L, Dv], or [B, N, L, H]
// (cross attention with projected keys), or packed in key ([B, L, N, 2, H]) or in query
// ([B, S, N, 3, H], no key). past_key/past_value [B, N, P, H]. Output [B, S, Dv];
// present_key/value [B, N, P+L, H].
func multiHeadAttention(c *nctx) error {
	q := c.in(0)
	if q == nil {
		return nil
	}
	nh := headsDim(c, "num_heads")
	k, v := c.in(1), c.in(2)
	unknown := func() error {
		for i := 0; i < c.nout(); i++ {
			c.set(i, q.dt, nil)
		}
		return nil
	}
	if q.shape == nil {
		return unknown()
	}
	var b, s, l, hk, hv graph.Dim
	switch {
	case len(q.shape) == 5: // packed QKV [B, S, N, 3, H]
		b, s, l, hk, hv = q.shape[0], q.shape[1], q.shape[1], q.shape[4], q.shape[4]
	case len(q.shape) == 3 && k != nil && k.shape != nil && len(k.shape) == 5: // packed KV [B, L, N, 2, H]
		b, s, l = q.shape[0], q.shape[1], k.shape[1]
		hk, hv = k.shape[4], k.shape[4]
	case len(q.shape) == 3 && k != nil && v != nil && k.shape != nil && v.shape != nil && len(k.shape) == 3 && len(v.shape) == 3:
		b, s, l = q.shape[0], q.shape[1], k.shape[1]
		hk, hv = dimDiv(q.shape[2], nh), dimDiv(v.shape[2], nh)
	case len(q.shape) == 3 && k != nil && v != nil && k.shape != nil && v.shape != nil && len(k.shape) == 4 && len(v.shape) == 4:
		b, s, l = q.shape[0], q.shape[1], k.shape[2]
		hk, hv = k.shape[3], v.shape[3]
	default:
		return unknown()
	}
	c.set(0, q.dt, graph.Shape{b, s, dimMul(nh, hv)})
	total := l
	if pk := c.in(6); pk != nil {
		total = unknownDim
		if pk.shape != nil && len(pk.shape) == 4 {
			total = dimAdd(pk.shape[2], l)
		}
	}
	if c.nout() > 1 {
		c.set(1, q.dt, graph.Shape{b, nh, total, hk})
	}
	if c.nout() > 2 {
		c.set(2, q.dt, graph.Shape{b, nh, total, hv})
	}
	return nil
}

// matMulNBits: A [..., K] times the block-quantised B (attributes K and N) gives [..., N]
// in A's type.
func matMulNBits(c *nctx) error {
	a := c.in(0)
	if a == nil {
		return nil
	}
	n := c.n.AttrInt("N", 0)
	if a.shape == nil || len(a.shape) == 0 || n <= 0 {
		c.set(0, a.dt, nil)
		return nil
	}
	if k := c.n.AttrInt("K", 0); k > 0 && a.shape[len(a.shape)-1].Known() && a.shape[len(a.shape)-1].Value != k {
		return c.errorf("A's last dimension is %d, attribute K is %d", a.shape[len(a.shape)-1].Value, k)
	}
	out := a.shape.Clone()
	out[len(out)-1] = graph.Static(n)
	c.set(0, a.dt, out)
	return nil
}

// gatherBlockQuantized gathers rows of block-quantised data and dequantises them: data's
// shape with the gathered axis replaced by the indices' shape, the quantised axis unpacked
// (8/bits values per uint8 byte), in the scales' type.
func gatherBlockQuantized(c *nctx) error {
	data, idx, scales := c.in(0), c.in(1), c.in(2)
	if data == nil || idx == nil || scales == nil {
		return nil
	}
	if data.shape == nil || idx.shape == nil {
		c.set(0, scales.dt, nil)
		return nil
	}
	r := int64(len(data.shape))
	ga := c.n.AttrInt("gather_axis", 0)
	qa := c.n.AttrInt("quantize_axis", r-1)
	if ga < 0 {
		ga += r
	}
	if qa < 0 {
		qa += r
	}
	if ga < 0 || ga >= r || qa < 0 || qa >= r {
		return c.errorf("gather_axis %d or quantize_axis %d out of range for rank %d", ga, qa, r)
	}
	unpacked := data.shape.Clone()
	if data.dt == graph.Uint8 {
		bits := c.n.AttrInt("bits", 4)
		if bits <= 0 || 8%bits != 0 {
			return c.errorf("bits %d", bits)
		}
		unpacked[qa] = dimMul(unpacked[qa], graph.Static(8/bits))
	}
	out := append(graph.Shape{}, unpacked[:ga]...)
	out = append(out, idx.shape...)
	out = append(out, unpacked[ga+1:]...)
	c.set(0, scales.dt, out)
	return nil
}

// embedLayerNorm: input_ids [B, S], word_embedding [V, H]. Output [B, S, H] in the
// embedding's type, mask_index [B] int32, embedding_sum [B, S, H].
func embedLayerNorm(c *nctx) error {
	ids, emb := c.in(0), c.in(2)
	if ids == nil || emb == nil {
		return nil
	}
	if ids.shape == nil || len(ids.shape) != 2 || emb.shape == nil || len(emb.shape) != 2 {
		c.set(0, emb.dt, nil)
		return nil
	}
	out := graph.Shape{ids.shape[0], ids.shape[1], emb.shape[1]}
	c.set(0, emb.dt, out)
	if c.nout() > 1 {
		c.set(1, graph.Int32, graph.Shape{ids.shape[0]})
	}
	if c.nout() > 2 {
		c.set(2, emb.dt, out.Clone())
	}
	return nil
}

// matMulToFloat is a quantised matrix product with a float result (DynamicQuantizeMatMul:
// float A; MatMulIntegerToFloat: integer A): matmul shapes, in the type of the scale at
// input scaleIdx (A's own type when A is float).
func matMulToFloat(c *nctx) error {
	a, b := c.in(0), c.in(1)
	if a == nil || b == nil {
		return nil
	}
	dt := a.dt
	if !dt.IsFloat() {
		if s := c.in(2); s != nil {
			dt = s.dt
		}
	}
	s, err := matmulShape(a.shape, b.shape)
	if err != nil {
		return c.errorf("%v", err)
	}
	c.set(0, dt, s)
	return nil
}

// qGemm is com.microsoft's QGemm: Gemm of A (input 0) and B (input 3) with transA/transB;
// the result is float when y_scale (input 7) is absent, else of y_zero_point's type
// (input 8; uint8 without one).
func qGemm(c *nctx) error {
	a, b := c.in(0), c.in(3)
	if a == nil || b == nil {
		return nil
	}
	dt := graph.Float
	if c.in(7) != nil {
		dt = graph.Uint8
		if z := c.in(8); z != nil {
			dt = z.dt
		}
	}
	return gemmShape(c, a, b, dt)
}

// qlinearPool is QLinearAveragePool and QLinearGlobalAveragePool: the float op's shapes in
// the input's (integer) type. With channels_last the channels are the last axis; the
// pooled shape is then left unknown (ONNX Runtime's NHWC transformer writes that form
// itself; exported models carry channels first).
func qlinearPool(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	if c.n.AttrInt("channels_last", 0) != 0 {
		c.set(0, x.dt, nil)
		return nil
	}
	if c.n.OpType == optype.QLinearGlobalAveragePool {
		return globalPool(c)
	}
	return pool(c)
}

// nhwcConv is com.microsoft's NhwcConv: Conv with the input and output channels last
// (X [N, spatial…, C], Y [N, spatial…, M]) and the weight as Conv's [M, C/group, k…].
func nhwcConv(c *nctx) error {
	x, w := c.in(0), c.in(1)
	if x == nil || w == nil {
		return nil
	}
	if x.shape == nil || w.shape == nil || len(x.shape) < 3 {
		c.set(0, x.dt, nil)
		return nil
	}
	nsp := len(x.shape) - 2
	kernel := c.n.AttrInts("kernel_shape")
	if len(kernel) != nsp {
		if len(w.shape) != nsp+2 || !w.shape.Known() {
			c.set(0, x.dt, nil)
			return nil
		}
		kernel = w.shape.Dims()[2:]
	}
	strides, dils, pads, autoPad := spatialParams(c, nsp, kernel)
	out := graph.Shape{x.shape[0]}
	for i := 0; i < nsp; i++ {
		d, err := windowOut(optype.Conv, x.shape[1+i], kernel[i], strides[i], dils[i], pads[i], pads[nsp+i], autoPad, false)
		if err != nil {
			return c.errorf("spatial axis %d: %v", i, err)
		}
		out = append(out, d)
	}
	c.set(0, x.dt, append(out, w.shape[0]))
	return nil
}

// qlinearBinary is QLinearAdd and QLinearMul (A, A_scale, A_zero_point, B, B_scale,
// B_zero_point, C_scale, C_zero_point): A and B broadcast, in A's integer type.
func qlinearBinary(c *nctx) error {
	a, b := c.in(0), c.in(3)
	if a == nil || b == nil {
		return nil
	}
	if a.shape == nil || b.shape == nil {
		c.set(0, a.dt, nil)
		return nil
	}
	s, err := broadcast(a.shape, b.shape)
	if err != nil {
		return c.errorf("%v", err)
	}
	c.set(0, a.dt, s)
	return nil
}

// qlinearConcat is QLinearConcat (Y_scale, Y_zero_point, then X, X_scale, X_zero_point per
// input): the inputs concatenated along axis, in Y_zero_point's type.
func qlinearConcat(c *nctx) error {
	z := c.in(1)
	if z == nil {
		return nil
	}
	rank := -1
	var xs []*tinfo
	for i := 2; i < c.nin(); i += 3 {
		x := c.in(i)
		if x == nil {
			return nil
		}
		xs = append(xs, x)
		if x.shape != nil {
			rank = len(x.shape)
		}
	}
	if rank < 0 || len(xs) == 0 {
		c.set(0, z.dt, nil)
		return nil
	}
	out, _, err := concatShape(c, xs, rank)
	if err != nil {
		return err
	}
	c.set(0, z.dt, out)
	return nil
}

// biasSplitGelu is BiasSplitGelu: X [N, HW, D] plus bias [D], split in halves along the last
// axis, the first times GELU of the second: [N, HW, D/2].
func biasSplitGelu(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	if x.shape == nil || len(x.shape) != 3 {
		c.set(0, x.dt, nil)
		return nil
	}
	c.set(0, x.dt, graph.Shape{x.shape[0], x.shape[1], dimDiv(x.shape[2], graph.Static(2))})
	return nil
}

// packedMultiHeadAttention is PackedMultiHeadAttention: query [T, N·H] with key and value
// [T, N·H] and [T, N·Hv], or packed QKV [T, N, 3, H] (T tokens of every sequence, padding
// removed). Output [T, N·Hv].
func packedMultiHeadAttention(c *nctx) error {
	q := c.in(0)
	if q == nil {
		return nil
	}
	switch {
	case q.shape != nil && len(q.shape) == 4:
		c.set(0, q.dt, graph.Shape{q.shape[0], dimMul(q.shape[1], q.shape[3])})
	case q.shape != nil && len(q.shape) == 2:
		d := q.shape[1]
		if v := c.in(2); v != nil && v.shape != nil && len(v.shape) == 2 {
			d = v.shape[1]
		}
		c.set(0, q.dt, graph.Shape{q.shape[0], d})
	default:
		c.set(0, q.dt, nil)
	}
	return nil
}

// decoderMaskedMHA is DecoderMaskedMultiHeadAttention (one new token against the past):
// query [B, 1, D] (D = N·H, or 3·N·H packed when key is absent); past_key/past_value
// [B, N, P, H] (input 5, 6). Output [B, 1, N·Hv]; present_key/value the past buffer with
// past_present_share_buffer, else [B, N, P+1, H]; qk [B, N, 1, total].
func decoderMaskedMHA(c *nctx) error {
	q := c.in(0)
	if q == nil {
		return nil
	}
	nh := headsDim(c, "num_heads")
	if q.shape == nil || len(q.shape) != 3 {
		for i := 0; i < c.nout(); i++ {
			c.set(i, q.dt, nil)
		}
		return nil
	}
	d := q.shape[2]
	if c.in(1) == nil {
		d = dimDiv(d, graph.Static(3))
	}
	if v := c.in(2); v != nil && v.shape != nil && len(v.shape) == 3 {
		d = v.shape[2]
	}
	c.set(0, q.dt, graph.Shape{q.shape[0], q.shape[1], d})
	// present: the shared buffer as it is, else the past and the new token(s).
	share := c.n.AttrInt("past_present_share_buffer", 0) != 0
	var m graph.Dim = unknownDim
	for i, pi := range []int{5, 6} {
		p := c.in(pi)
		var ps graph.Shape
		if p != nil && p.shape != nil && len(p.shape) == 4 {
			ps = p.shape.Clone()
			if !share {
				ps[2] = dimAdd(ps[2], q.shape[1])
			}
			m = ps[2]
		}
		if c.nout() > i+1 {
			c.set(i+1, q.dt, ps)
		}
	}
	if c.nout() > 3 { // qk: [B, N, S, total]
		c.set(3, q.dt, graph.Shape{q.shape[0], nh, q.shape[1], m})
	}
	return nil
}

// gatedRelativePositionBias is GatedRelativePositionBias: query_layer [B, S, N·H] gives the
// bias [B, N, S, S] (num_heads N).
func gatedRelativePositionBias(c *nctx) error {
	q := c.in(0)
	if q == nil {
		return nil
	}
	if q.shape == nil || len(q.shape) != 3 {
		c.set(0, q.dt, nil)
		return nil
	}
	c.set(0, q.dt, graph.Shape{q.shape[0], headsDim(c, "num_heads"), q.shape[1], q.shape[1]})
	return nil
}

// sparseAttention is SparseAttention (GroupQueryAttention's block-sparse form, always with a
// shared past/present buffer): query [B, S, D] with key and value [B, S, kv·H], or packed
// (D = (N + 2·kv)·H); past_key/past_value [B, kv, M, H]. Output [B, S, N·H];
// present_key/value the buffer's shape.
func sparseAttention(c *nctx) error {
	q := c.in(0)
	if q == nil {
		return nil
	}
	nh, kv := headsDim(c, "num_heads"), headsDim(c, "kv_num_heads")
	if q.shape == nil || len(q.shape) != 3 {
		for i := 0; i < c.nout(); i++ {
			c.set(i, q.dt, nil)
		}
		return nil
	}
	h := dimDiv(q.shape[2], nh)
	if c.in(1) == nil {
		h = dimDiv(q.shape[2], dimAdd(nh, dimMul(graph.Static(2), kv)))
	}
	c.set(0, q.dt, graph.Shape{q.shape[0], q.shape[1], dimMul(nh, h)})
	for i, pi := range []int{3, 4} {
		if c.nout() > i+1 {
			if p := c.in(pi); p != nil && p.shape != nil {
				c.set(i+1, q.dt, p.shape.Clone())
			} else {
				c.set(i+1, q.dt, nil)
			}
		}
	}
	return nil
}
