package llamagen

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/onnxpb"

	"github.com/x448/float16"
)

// builder appends nodes to a graph, naming them as torch.onnx.export does: scope/OpType,
// then scope/OpType_1, scope/OpType_2 … and outputs <node name>_output_0.
type builder struct {
	g     *onnxpb.GraphProto
	count map[string]int
}

func (b *builder) nodeName(scope, op string) string {
	base := scope + "/" + op
	k := b.count[base]
	b.count[base]++
	if k == 0 {
		return base
	}
	return base + "_" + strconv.Itoa(k)
}

// opTo adds a node whose single output is named out ("" for the default name) and returns
// the output's name.
func (b *builder) opTo(out, scope, op string, ins []string, attrs ...*onnxpb.AttributeProto) string {
	name := b.nodeName(scope, op)
	if out == "" {
		out = name + "_output_0"
	}
	b.g.Node = append(b.g.Node, &onnxpb.NodeProto{Name: proto.String(name), OpType: proto.String(op),
		Input: ins, Output: []string{out}, Attribute: attrs})
	return out
}

func (b *builder) op(scope, op string, ins []string, attrs ...*onnxpb.AttributeProto) string {
	return b.opTo("", scope, op, ins, attrs...)
}

func attrInt(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func attrInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

// constant adds a Constant node holding t.
func (b *builder) constant(scope string, t *onnxpb.TensorProto) string {
	return b.op(scope, "Constant", nil, &onnxpb.AttributeProto{Name: proto.String("value"),
		Type: onnxpb.AttributeProto_TENSOR.Enum(), T: t})
}

// ints is a 1-D int64 constant.
func (b *builder) ints(scope string, v ...int64) string {
	return b.constant(scope, &onnxpb.TensorProto{DataType: proto.Int32(int32(graph.Int64)),
		Dims: []int64{int64(len(v))}, Int64Data: v})
}

// scalarInt is a 0-D int64 constant.
func (b *builder) scalarInt(scope string, v int64) string {
	return b.constant(scope, &onnxpb.TensorProto{DataType: proto.Int32(int32(graph.Int64)), Int64Data: []int64{v}})
}

// scalarFloat is a 0-D constant of type dt (float32 or float16).
func (b *builder) scalarFloat(scope string, v float32, dt graph.DType) string {
	var raw []byte
	if dt == graph.Float16 {
		raw = binary.LittleEndian.AppendUint16(nil, float16.Fromfloat32(v).Bits())
	} else {
		raw = binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))
	}
	return b.constant(scope, &onnxpb.TensorProto{DataType: proto.Int32(int32(dt)), RawData: raw})
}

func (b *builder) cast(scope, x string, to graph.DType) string {
	return b.op(scope, "Cast", []string{x}, attrInt("to", int64(to)))
}

// gatherDim is Gather(shape, i) on axis 0: a scalar dimension.
func (b *builder) gatherDim(scope, shape string, i int64) string {
	return b.op(scope, "Gather", []string{shape, b.scalarInt(scope, i)}, attrInt("axis", 0))
}

// unsqueeze adds Unsqueeze(x, axes) (axes an input since opset 13).
func (b *builder) unsqueeze(scope, x string, axes ...int64) string {
	return b.op(scope, "Unsqueeze", []string{x, b.ints(scope, axes...)})
}

func valueInfo(name string, dt graph.DType, dims ...any) *onnxpb.ValueInfoProto {
	var ds []*onnxpb.TensorShapeProto_Dimension
	for _, d := range dims {
		switch d := d.(type) {
		case string:
			ds = append(ds, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: d}})
		case int:
			ds = append(ds, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d)}})
		default:
			panic(fmt.Sprintf("valueInfo: dimension %v", d))
		}
	}
	return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(dt)), Shape: &onnxpb.TensorShapeProto{Dim: ds}}}}}
}

// initializer makes t's TensorProto: in the data file at ext's offset, or inline.
func initializer(t *tensor, ext *externalData, i int) *onnxpb.TensorProto {
	tp := &onnxpb.TensorProto{Name: proto.String(t.name), DataType: proto.Int32(int32(t.dtype)), Dims: t.dims}
	if ext == nil {
		tp.RawData = t.raw()
		return tp
	}
	tp.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
	tp.ExternalData = []*onnxpb.StringStringEntryProto{
		{Key: proto.String("location"), Value: proto.String(ext.location)},
		{Key: proto.String("offset"), Value: proto.String(strconv.FormatInt(ext.offsets[i], 10))},
		{Key: proto.String("length"), Value: proto.String(strconv.FormatInt(t.bytes(), 10))},
	}
	return tp
}

// PastKey is the name of layer i's past key input, past_key_values.{i}.key.
func PastKey(i int) string { return fmt.Sprintf("past_key_values.%d.key", i) }

// PastValue is the name of layer i's past value input, past_key_values.{i}.value.
func PastValue(i int) string { return fmt.Sprintf("past_key_values.%d.value", i) }

// PresentKey is the name of layer i's present key output, present.{i}.key.
func PresentKey(i int) string { return fmt.Sprintf("present.%d.key", i) }

// PresentValue is the name of layer i's present value output, present.{i}.value.
func PresentValue(i int) string { return fmt.Sprintf("present.%d.value", i) }

// Inputs lists the model's input names in order.
func (c Config) Inputs() []string {
	in := []string{"input_ids", "attention_mask", "position_ids"}
	for i := range c.Layers {
		in = append(in, PastKey(i), PastValue(i))
	}
	return in
}

// Outputs lists the model's output names in order.
func (c Config) Outputs() []string {
	out := []string{"logits"}
	for i := range c.Layers {
		out = append(out, PresentKey(i), PresentValue(i))
	}
	return out
}

// model builds the ModelProto and marshals it.
func (c Config) model(ts []*tensor, ext *externalData) ([]byte, error) {
	b := &builder{g: &onnxpb.GraphProto{Name: proto.String("main_graph")}, count: map[string]int{}}
	g := b.g
	for i, t := range ts {
		g.Initializer = append(g.Initializer, initializer(t, ext, i))
	}
	dt, d := c.DType, c.HeadDim()
	g.Input = append(g.Input,
		valueInfo("input_ids", graph.Int64, "batch", "seq"),
		valueInfo("attention_mask", graph.Int64, "batch", "total"),
		valueInfo("position_ids", graph.Int64, "batch", "seq"))
	for i := range c.Layers {
		g.Input = append(g.Input,
			valueInfo(PastKey(i), dt, "batch", c.KVHeads, "past", d),
			valueInfo(PastValue(i), dt, "batch", c.KVHeads, "past", d))
	}
	g.Output = append(g.Output, valueInfo("logits", graph.Float, "batch", "seq", c.Vocab))
	for i := range c.Layers {
		g.Output = append(g.Output,
			valueInfo(PresentKey(i), dt, "batch", c.KVHeads, "total", d),
			valueInfo(PresentValue(i), dt, "batch", c.KVHeads, "total", d))
	}

	mask := b.causalMask("/model")
	h := b.op("/model/embed_tokens", "Gather", []string{"model.embed_tokens.weight", "input_ids"})
	for i := range c.Layers {
		h = c.layer(b, i, h, mask)
	}
	h = c.rmsNorm(b, "/model/norm", h, "model.norm.weight")
	if dt == graph.Float16 {
		l := b.op("/lm_head", "MatMul", []string{h, "lm_head.weight"})
		b.opTo("logits", "", "Cast", []string{l}, attrInt("to", int64(graph.Float)))
	} else {
		b.opTo("logits", "/lm_head", "MatMul", []string{h, "lm_head.weight"})
	}

	mp := &onnxpb.ModelProto{
		IrVersion:    proto.Int64(8),
		ProducerName: proto.String("onnxpart/internal/llamagen"),
		OpsetImport:  []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(17)}},
		Graph:        g,
	}
	return proto.Marshal(mp)
}

// causalMask builds the additive mask [batch, 1, seq, total] (float32): 0 where key k is
// visible from query row q (k ≤ past + q and attention_mask[b, k] ≠ 0), float32's minimum
// elsewhere. past is total − seq, from the shapes of attention_mask and input_ids.
func (b *builder) causalMask(scope string) string {
	seq := b.gatherDim(scope, b.op(scope, "Shape", []string{"input_ids"}), 1)
	total := b.gatherDim(scope, b.op(scope, "Shape", []string{"attention_mask"}), 1)
	past := b.op(scope, "Sub", []string{total, seq})
	one := b.scalarInt(scope, 1)
	qpos := b.op(scope, "Range", []string{past, total, one})                  // [seq]: past … total−1
	kpos := b.op(scope, "Range", []string{b.scalarInt(scope, 0), total, one}) // [total]
	causal := b.op(scope, "LessOrEqual", []string{kpos, b.unsqueeze(scope, qpos, 1)})
	pad := b.unsqueeze(scope, b.cast(scope, "attention_mask", graph.Bool), 1, 2) // [batch, 1, 1, total]
	allowed := b.op(scope, "And", []string{pad, causal})                         // [batch, 1, seq, total]
	return b.op(scope, "Where", []string{allowed, b.scalarFloat(scope, 0, graph.Float),
		b.scalarFloat(scope, -math.MaxFloat32, graph.Float)})
}

// rmsNorm is transformers' LlamaRMSNorm as exported: in float32, then weight · x in the
// model's dtype.
func (c Config) rmsNorm(b *builder, scope, x, weight string) string {
	if c.DType != graph.Float {
		x = b.cast(scope, x, graph.Float)
	}
	v := b.op(scope, "Pow", []string{x, b.scalarFloat(scope, 2, graph.Float)})
	v = b.op(scope, "ReduceMean", []string{v}, attrInts("axes", -1), attrInt("keepdims", 1))
	v = b.op(scope, "Add", []string{v, b.scalarFloat(scope, float32(c.RMSEps), graph.Float)})
	v = b.op(scope, "Sqrt", []string{v})
	v = b.op(scope, "Div", []string{b.scalarFloat(scope, 1, graph.Float), v})
	y := b.op(scope, "Mul", []string{x, v})
	if c.DType != graph.Float {
		y = b.cast(scope, y, c.DType)
	}
	return b.op(scope, "Mul", []string{weight, y})
}

// rotateHalf is cat(−x[..., d/2:], x[..., :d/2]) on the last axis of a [b, h, s, d] tensor,
// with d/2 taken from the shape as a traced x.shape[-1] // 2 is.
func (b *builder) rotateHalf(scope, x string) string {
	dim := b.gatherDim(scope, b.op(scope, "Shape", []string{x}), 3)
	half := b.unsqueeze(scope, b.op(scope, "Div", []string{dim, b.scalarInt(scope, 2)}), 0)
	axis := b.ints(scope, 3)
	x1 := b.op(scope, "Slice", []string{x, b.ints(scope, 0), half, axis})
	x2 := b.op(scope, "Slice", []string{x, half, b.ints(scope, math.MaxInt64), axis})
	return b.op(scope, "Concat", []string{b.op(scope, "Neg", []string{x2}), x1}, attrInt("axis", -1))
}

// rotary applies the rotary embedding to x [b, h, s, d] in float32: x·cos + rotate_half(x)·sin.
func (c Config) rotary(b *builder, scope, x, cos, sin string) string {
	if c.DType != graph.Float {
		x = b.cast(scope, x, graph.Float)
	}
	y := b.op(scope, "Add", []string{
		b.op(scope, "Mul", []string{x, cos}),
		b.op(scope, "Mul", []string{b.rotateHalf(scope, x), sin})})
	if c.DType != graph.Float {
		y = b.cast(scope, y, c.DType)
	}
	return y
}

// repeatKV repeats each of the KVHeads heads of x [b, kvh, t, d] Heads/KVHeads times,
// adjacent (head j of the result is head j / n_rep of x): Unsqueeze on axis 2, Expand to
// [b, kvh, n_rep, t, d], Reshape to [b, heads, t, d], with targets from x's shape.
func (c Config) repeatKV(b *builder, scope, x string) string {
	nrep := int64(c.Heads / c.KVHeads)
	if nrep == 1 {
		return x
	}
	shape := b.op(scope, "Shape", []string{x})
	var dims [4]string
	for i := range dims {
		dims[i] = b.unsqueeze(scope, b.gatherDim(scope, shape, int64(i)), 0)
	}
	ex := b.op(scope, "Concat", []string{dims[0], dims[1], b.ints(scope, nrep), dims[2], dims[3]}, attrInt("axis", 0))
	y := b.op(scope, "Expand", []string{b.unsqueeze(scope, x, 2), ex})
	rs := b.op(scope, "Concat", []string{dims[0], b.ints(scope, int64(c.Heads)), dims[2], dims[3]}, attrInt("axis", 0))
	return b.op(scope, "Reshape", []string{y, rs})
}

// layer adds decoder layer i to hidden state h [b, s, hidden] and returns its output.
func (c Config) layer(b *builder, i int, h, mask string) string {
	p := fmt.Sprintf("/model/layers.%d", i)
	wp := fmt.Sprintf("model.layers.%d.", i)
	a := p + "/self_attn"
	dt, d := c.DType, int64(c.HeadDim())

	x := c.rmsNorm(b, p+"/input_layernorm", h, wp+"input_layernorm.weight")

	// bsz, q_len = hidden_states.size()[:2]
	shape := b.op(a, "Shape", []string{x})
	bsz := b.unsqueeze(a, b.gatherDim(a, shape, 0), 0)
	qlen := b.unsqueeze(a, b.gatherDim(a, shape, 1), 0)
	heads := func(proj string, n int64) string {
		y := b.op(a+"/"+proj, "MatMul", []string{x, wp + "self_attn." + proj + ".weight"})
		target := b.op(a, "Concat", []string{bsz, qlen, b.ints(a, n), b.ints(a, d)}, attrInt("axis", 0))
		y = b.op(a, "Reshape", []string{y, target})
		return b.op(a, "Transpose", []string{y}, attrInts("perm", 0, 2, 1, 3))
	}
	q := heads("q_proj", int64(c.Heads))
	k := heads("k_proj", int64(c.KVHeads))
	v := heads("v_proj", int64(c.KVHeads))

	// cos[position_ids].unsqueeze(1): [b, 1, s, d]
	r := a + "/rotary_emb"
	cos := b.unsqueeze(r, b.op(r, "Gather", []string{"model.rotary_emb.cos_cached", "position_ids"}), 1)
	sin := b.unsqueeze(r, b.op(r, "Gather", []string{"model.rotary_emb.sin_cached", "position_ids"}), 1)
	q = c.rotary(b, a, q, cos, sin)
	k = c.rotary(b, a, k, cos, sin)

	k = b.opTo(PresentKey(i), a, "Concat", []string{PastKey(i), k}, attrInt("axis", 2))
	v = b.opTo(PresentValue(i), a, "Concat", []string{PastValue(i), v}, attrInt("axis", 2))
	k = c.repeatKV(b, a, k)
	v = c.repeatKV(b, a, v)

	kt := b.op(a, "Transpose", []string{k}, attrInts("perm", 0, 1, 3, 2))
	s := b.op(a, "MatMul", []string{q, kt})
	s = b.op(a, "Div", []string{s, b.scalarFloat(a, float32(math.Sqrt(float64(d))), dt)})
	if dt != graph.Float {
		s = b.cast(a, s, graph.Float)
	}
	s = b.op(a, "Add", []string{s, mask})
	s = b.op(a, "Softmax", []string{s}, attrInt("axis", -1))
	if dt != graph.Float {
		s = b.cast(a, s, dt)
	}
	o := b.op(a, "MatMul", []string{s, v})
	o = b.op(a, "Transpose", []string{o}, attrInts("perm", 0, 2, 1, 3))
	o = b.op(a, "Reshape", []string{o, b.op(a, "Concat", []string{bsz, qlen, b.ints(a, int64(c.Hidden))}, attrInt("axis", 0))})
	o = b.op(a+"/o_proj", "MatMul", []string{o, wp + "self_attn.o_proj.weight"})
	h = b.op(p, "Add", []string{h, o})

	x = c.rmsNorm(b, p+"/post_attention_layernorm", h, wp+"post_attention_layernorm.weight")
	m := p + "/mlp"
	gate := b.op(m+"/gate_proj", "MatMul", []string{x, wp + "mlp.gate_proj.weight"})
	act := b.op(m+"/act_fn", "Mul", []string{gate, b.op(m+"/act_fn", "Sigmoid", []string{gate})})
	up := b.op(m+"/up_proj", "MatMul", []string{x, wp + "mlp.up_proj.weight"})
	y := b.op(m+"/down_proj", "MatMul", []string{b.op(m, "Mul", []string{act, up}), wp + "mlp.down_proj.weight"})
	return b.op(p, "Add", []string{h, y})
}
