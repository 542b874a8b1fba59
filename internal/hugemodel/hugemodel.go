// Package hugemodel writes large ONNX models with external data for tests of onnxpart's
// memory behaviour (issue 9.3): a chain of MatMul/Add layers whose weights live in one
// sparse data file, so that a model of several GiB is created in about a second and costs
// little disk.
//
// The model is x:[1,Dim] float → (MatMul W_i → Add b_i) × Layers → y:[1,Dim]. Every W_i is
// diagonal (values in [0.5, 1)) and every b_i dense and small, so the output is finite and
// depends on every layer; the zeros off the diagonal are holes in the data file.
package hugemodel

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/onnxpb"
)

// Spec describes a model.
type Spec struct {
	Layers int
	Dim    int
	// Name is the model's base name (default "huge"): Name.onnx and Name.onnx.data.
	Name string
}

// align is the data file offset alignment of every tensor (a page, so weights can be mapped).
const align = 4096

func (s Spec) name() string {
	if s.Name == "" {
		return "huge"
	}
	return s.Name
}

// WeightBytes is the total size of the weights (the data file's logical size, padding
// aside).
func (s Spec) WeightBytes() int64 {
	d := int64(s.Dim)
	return int64(s.Layers) * (d*d + d) * 4
}

// Weight values, exposed so tests can compute the expected output.

// Diag is W_i[j][j].
func Diag(i, j int) float32 { return 0.5 + float32((i+j)%4)/8 }

// Bias is b_i[j].
func Bias(i, j int) float32 { return float32((7*j+i)%11)/16 - 0.3 }

// Write writes dir/<name>.onnx and its sparse data file dir/<name>.onnx.data and returns
// the model's path.
func Write(dir string, s Spec) (string, error) {
	if s.Layers < 1 || s.Dim < 1 {
		return "", fmt.Errorf("hugemodel: need at least one layer and one dimension, got %d×%d", s.Layers, s.Dim)
	}
	name := s.name()
	modelPath := filepath.Join(dir, name+".onnx")
	dataName := name + ".onnx.data"
	f, err := os.OpenFile(filepath.Join(dir, dataName), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return "", err
	}
	defer f.Close()

	d := int64(s.Dim)
	f32 := int32(onnxpb.TensorProto_FLOAT)
	var at int64
	place := func(size int64) int64 {
		at = (at + align - 1) / align * align
		off := at
		at += size
		return off
	}
	ext := func(tname string, off, size int64, dims ...int64) *onnxpb.TensorProto {
		return &onnxpb.TensorProto{
			Name: proto.String(tname), DataType: proto.Int32(f32), Dims: dims,
			DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(),
			ExternalData: []*onnxpb.StringStringEntryProto{
				{Key: proto.String("location"), Value: proto.String(dataName)},
				{Key: proto.String("offset"), Value: proto.String(strconv.FormatInt(off, 10))},
				{Key: proto.String("length"), Value: proto.String(strconv.FormatInt(size, 10))},
			},
		}
	}
	vi := func(n string) *onnxpb.ValueInfoProto {
		return &onnxpb.ValueInfoProto{Name: proto.String(n), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(f32), Shape: &onnxpb.TensorShapeProto{
				Dim: []*onnxpb.TensorShapeProto_Dimension{
					{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: 1}},
					{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}},
				}}}}}}
	}
	g := &onnxpb.GraphProto{Name: proto.String(name), Input: []*onnxpb.ValueInfoProto{vi("x")}}
	prev := "x"
	var four [4]byte
	bias := make([]byte, 4*d)
	for i := 0; i < s.Layers; i++ {
		wOff := place(d * d * 4)
		for j := int64(0); j < d; j++ {
			binary.LittleEndian.PutUint32(four[:], math.Float32bits(Diag(i, int(j))))
			if _, err := f.WriteAt(four[:], wOff+(j*d+j)*4); err != nil {
				return "", err
			}
		}
		bOff := place(d * 4)
		for j := range d {
			binary.LittleEndian.PutUint32(bias[4*j:], math.Float32bits(Bias(i, int(j))))
		}
		if _, err := f.WriteAt(bias, bOff); err != nil {
			return "", err
		}
		w, b := fmt.Sprintf("W%d", i), fmt.Sprintf("b%d", i)
		g.Initializer = append(g.Initializer, ext(w, wOff, d*d*4, d, d), ext(b, bOff, d*4, d))
		mm, out := fmt.Sprintf("mm%d", i), fmt.Sprintf("h%d", i)
		if i == s.Layers-1 {
			out = "y"
		}
		g.Node = append(g.Node,
			&onnxpb.NodeProto{Name: proto.String(mm), OpType: proto.String("MatMul"), Input: []string{prev, w}, Output: []string{mm}},
			&onnxpb.NodeProto{Name: proto.String(fmt.Sprintf("add%d", i)), OpType: proto.String("Add"), Input: []string{mm, b}, Output: []string{out}})
		prev = out
	}
	g.Output = []*onnxpb.ValueInfoProto{vi("y")}
	// The file's logical size covers the last tensor; everything not written is a hole.
	if err := f.Truncate(at); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	mp := &onnxpb.ModelProto{
		IrVersion:    proto.Int64(8),
		ProducerName: proto.String("onnxpart/internal/hugemodel"),
		OpsetImport:  []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(17)}},
		Graph:        g,
	}
	b, err := proto.Marshal(mp)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(modelPath, b, 0o644); err != nil {
		return "", err
	}
	return modelPath, nil
}

// Expected computes y for input x (len Dim) the way the model does, in float32.
func Expected(s Spec, x []float32) []float32 {
	y := append([]float32(nil), x...)
	for i := 0; i < s.Layers; i++ {
		for j := range y {
			p := float32(y[j] * Diag(i, j)) // rounded before the add, as MatMul then Add do
			y[j] = p + Bias(i, j)
		}
	}
	return y
}
