package familygen

import (
	"encoding/binary"
	"fmt"
	"math"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/seeded"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// builder appends nodes and initializers to a graph, naming tensors as PyTorch's exporter
// does (/scope/Op_output_0), with weights drawn from a seed and the tensor's name.
type builder struct {
	g     *onnxpb.GraphProto
	seed  uint64
	count map[string]int
}

func newBuilder(name string, seed uint64) *builder {
	return &builder{g: &onnxpb.GraphProto{Name: proto.String(name)}, seed: seed, count: map[string]int{}}
}

// node adds a node of op under scope with n outputs and returns their names.
func (b *builder) node(op, scope string, ins []string, n int, attrs ...*onnxpb.AttributeProto) []string {
	name := scope + "/" + op
	if k := b.count[name]; k > 0 {
		b.count[name]++
		name = fmt.Sprintf("%s_%d", name, k)
	} else {
		b.count[name] = 1
	}
	outs := make([]string, n)
	for i := range outs {
		outs[i] = fmt.Sprintf("%s_output_%d", name, i)
	}
	b.g.Node = append(b.g.Node, &onnxpb.NodeProto{Name: proto.String(name), OpType: proto.String(op),
		Input: ins, Output: outs, Attribute: attrs})
	return outs
}

// op adds a one-output node.
func (b *builder) op(op, scope string, ins []string, attrs ...*onnxpb.AttributeProto) string {
	return b.node(op, scope, ins, 1, attrs...)[0]
}

// weight adds a float32 initializer of values scale·U(−1, 1) plus offset.
func (b *builder) weight(name string, scale, offset float32, shape ...int64) string {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	r := seeded.New(b.seed, name)
	v := make([]float32, n)
	for i := range v {
		v[i] = offset + scale*r.Sym()
	}
	return b.floats(name, v, shape...)
}

func (b *builder) floats(name string, v []float32, shape ...int64) string {
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	return b.raw(name, graph.Float, raw, shape...)
}

func (b *builder) ints(name string, v []int64, shape ...int64) string {
	raw := make([]byte, 0, 8*len(v))
	for _, x := range v {
		raw = binary.LittleEndian.AppendUint64(raw, uint64(x))
	}
	return b.raw(name, graph.Int64, raw, shape...)
}

func (b *builder) bools(name string, v []bool, shape ...int64) string {
	raw := make([]byte, len(v))
	for i, x := range v {
		if x {
			raw[i] = 1
		}
	}
	return b.raw(name, graph.Bool, raw, shape...)
}

func (b *builder) raw(name string, dt graph.DType, raw []byte, shape ...int64) string {
	b.g.Initializer = append(b.g.Initializer, &onnxpb.TensorProto{Name: proto.String(name),
		DataType: proto.Int32(int32(dt)), Dims: shape, RawData: raw})
	return name
}

func (b *builder) input(name string, dt graph.DType, shape ...int64) string {
	b.g.Input = append(b.g.Input, valueInfo(name, dt, shape))
	return name
}

func (b *builder) output(name string, dt graph.DType, shape ...int64) {
	b.g.Output = append(b.g.Output, valueInfo(name, dt, shape))
}

// model wraps the graph in a ModelProto of the default domain at opset.
func (b *builder) model(opset int64) ([]byte, error) {
	return proto.Marshal(&onnxpb.ModelProto{
		IrVersion:    proto.Int64(8),
		ProducerName: proto.String("onnxpart familygen"),
		OpsetImport:  []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(opset)}},
		Graph:        b.g,
	})
}

func valueInfo(name string, dt graph.DType, shape []int64) *onnxpb.ValueInfoProto {
	var pd []*onnxpb.TensorShapeProto_Dimension
	for _, d := range shape {
		pd = append(pd, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
	}
	return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(dt)), Shape: &onnxpb.TensorShapeProto{Dim: pd}}}}}
}

func attrInt(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func attrInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func attrFloat(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
}
