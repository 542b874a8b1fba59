package genaigen

import (
	"encoding/binary"
	"fmt"
	"math"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// builder appends nodes to a graph and records each output's type and shape, so the model
// can carry value_info as the exporters write it (or not).
type builder struct {
	g      *onnxpb.GraphProto
	count  map[string]int
	vi     []*onnxpb.ValueInfoProto
	consts map[string]string
}

func newBuilder(name string) *builder {
	return &builder{g: &onnxpb.GraphProto{Name: proto.String(name)}, count: map[string]int{}, consts: map[string]string{}}
}

// dims is a shape of int (fixed) and string (symbolic) dimensions.
type dims []any

// node adds a node named name (made unique) with the given outputs' types and shapes; outs
// holds the outputs' names ("" for name/output_k), types and shapes. It returns the outputs'
// names.
func (b *builder) node(domain, op, name string, ins []string, outs []out, attrs ...*onnxpb.AttributeProto) []string {
	if k := b.count[name]; k > 0 {
		b.count[name]++
		name = fmt.Sprintf("%s_%d", name, k)
	} else {
		b.count[name] = 1
	}
	n := &onnxpb.NodeProto{Name: proto.String(name), OpType: proto.String(op), Input: ins, Attribute: attrs}
	if domain != "" {
		n.Domain = proto.String(domain)
	}
	var names []string
	for i, o := range outs {
		nm := o.name
		if nm == "" {
			nm = fmt.Sprintf("%s/output_%d", name, i)
		}
		names = append(names, nm)
		if o.dt != 0 {
			b.vi = append(b.vi, valueInfo(nm, o.dt, o.shape...))
		}
	}
	n.Output = names
	b.g.Node = append(b.g.Node, n)
	return names
}

type out struct {
	name  string
	dt    graph.DType
	shape dims
}

// op adds a one-output node of the default domain.
func (b *builder) op(op, name string, ins []string, dt graph.DType, shape dims, attrs ...*onnxpb.AttributeProto) string {
	return b.node("", op, name, ins, []out{{dt: dt, shape: shape}}, attrs...)[0]
}

// ms adds a one-output com.microsoft node.
func (b *builder) ms(op, name string, ins []string, dt graph.DType, shape dims, attrs ...*onnxpb.AttributeProto) string {
	return b.node(msDomain, op, name, ins, []out{{dt: dt, shape: shape}}, attrs...)[0]
}

const msDomain = "com.microsoft"

func attrInt(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func attrInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func attrFloat(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
}

// init adds an initializer of raw little-endian data.
func (b *builder) init(name string, dt graph.DType, raw []byte, shape ...int64) string {
	b.g.Initializer = append(b.g.Initializer, &onnxpb.TensorProto{Name: proto.String(name),
		DataType: proto.Int32(int32(dt)), Dims: shape, RawData: raw})
	return name
}

func (b *builder) initF32(name string, v []float32, shape ...int64) string {
	return b.init(name, graph.Float, f32raw(v), shape...)
}

// constInt64 is an int64 initializer named as the builder names its shared constants
// (/model/constants/TensorProto.INT64/1D/1), added once.
func (b *builder) constInt64(scalar bool, v ...int64) string {
	kind := "1D"
	var shape []int64
	if scalar {
		kind = "0D"
	} else {
		shape = []int64{int64(len(v))}
	}
	name := fmt.Sprintf("/model/constants/TensorProto.INT64/%s/%s", kind, joinInts(v))
	if _, ok := b.consts[name]; !ok {
		raw := make([]byte, 0, 8*len(v))
		for _, x := range v {
			raw = binary.LittleEndian.AppendUint64(raw, uint64(x))
		}
		b.init(name, graph.Int64, raw, shape...)
		b.consts[name] = name
	}
	return name
}

func joinInts(v []int64) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(x)
	}
	return s
}

func f32raw(v []float32) []byte {
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	return raw
}

func valueInfo(name string, dt graph.DType, ds ...any) *onnxpb.ValueInfoProto {
	var pd []*onnxpb.TensorShapeProto_Dimension
	for _, d := range ds {
		switch d := d.(type) {
		case string:
			pd = append(pd, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: d}})
		case int:
			pd = append(pd, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d)}})
		default:
			panic(fmt.Sprintf("valueInfo: dimension %v", d))
		}
	}
	return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(dt)), Shape: &onnxpb.TensorShapeProto{Dim: pd}}}}}
}

// model wraps the graph in a ModelProto importing the default domain at opset and
// com.microsoft 1; withVI keeps the recorded value_info.
func (b *builder) model(producer string, opset int64, withVI bool) ([]byte, error) {
	if withVI {
		b.g.ValueInfo = b.vi
	}
	mp := &onnxpb.ModelProto{
		IrVersion:    proto.Int64(10),
		ProducerName: proto.String(producer),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(opset)},
			{Domain: proto.String(msDomain), Version: proto.Int64(1)}},
		Graph: b.g,
	}
	return proto.Marshal(mp)
}
