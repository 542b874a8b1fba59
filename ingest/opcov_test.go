package ingest

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// TestOpCoverage checks ingest's shape inference against ONNX Runtime on small models
// covering the common standard operators (see opcov_harness_test.go for how).
func TestOpCoverage(t *testing.T) {
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
	var cases []ocCase
	for _, group := range [][]ocCase{ocElementwise(), ocLinear(), ocConvPool(), ocNorm(), ocMovement(),
		ocIndexing(), ocGenerators(), ocReduce(), ocMisc(), ocRecurrent(), ocQuant(), ocControl(), ocFolding(), ocExtra()} {
		cases = append(cases, group...)
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate case name %s", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) { runOCCase(t, c) })
	}
}

const (
	f32   = graph.Float
	f16   = graph.Float16
	f64   = graph.Double
	i64   = graph.Int64
	i32   = graph.Int32
	i8    = graph.Int8
	u8    = graph.Uint8
	u32   = graph.Uint32
	bool_ = graph.Bool
)

// ins is shorthand for an input list.
func ins(names ...string) []string { return names }

func ocElementwise() []ocCase {
	unary := []string{"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Erf", "Exp", "Log", "Sqrt", "Neg", "Abs",
		"Reciprocal", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
		"Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softplus", "Softsign", "Elu", "Selu", "Celu",
		"HardSigmoid", "HardSwish", "Mish", "ThresholdedRelu", "Shrink", "Softmax", "LogSoftmax",
		"Hardmax", "Identity"}
	cases := []ocCase{
		{name: "Unary", opset: 18, run: map[string]int64{"N": 2}, build: func(m *ocModel) {
			x := m.in(f32, "N", 3, 4)
			for _, op := range unary {
				m.op(op, ins(x))
			}
			m.op("IsNaN", ins(x))
			m.op("IsInf", ins(x))
			m.op("LRN", ins(m.in(f32, 1, 4, 3, 3)), aI("size", 3))
			m.op("Not", ins(m.in(bool_, "N", 2)))
			m.op("BitwiseNot", ins(m.in(i32, 2, "N")))
			m.op("Relu", ins(m.in(i32, 5))) // Relu-14 accepts integers
			m.op("Abs", ins(m.in(i64, 5)))
			m.op("Neg", ins(m.in(i8, 5)))
			m.op("Sign", ins(m.in(i64, 5)))
		}},
		{name: "UnaryFP16", opset: 13, build: func(m *ocModel) {
			x := m.in(f16, 2, 3)
			for _, op := range []string{"Relu", "Sigmoid", "Tanh", "Exp", "Sqrt", "Abs", "Neg", "Softmax", "LeakyRelu"} {
				m.op(op, ins(x))
			}
		}},
		{name: "Gelu20", opset: 20, build: func(m *ocModel) {
			x := m.in(f32, 2, 3)
			m.op("Gelu", ins(x))
			m.op("Gelu", ins(x), aS("approximate", "tanh"))
		}},
		{name: "Softmax11Axis", opset: 11, build: func(m *ocModel) {
			x := m.in(f32, 2, 3, 4)
			m.op("Softmax", ins(x))
			m.op("Softmax", ins(x), aI("axis", 0))
			m.op("LogSoftmax", ins(x), aI("axis", -1))
			m.op("Hardmax", ins(x), aI("axis", 2))
		}},
		{name: "Softmax13Axis", opset: 13, build: func(m *ocModel) {
			x := m.in(f32, 2, 3, 4)
			m.op("Softmax", ins(x), aI("axis", 1))
			m.op("LogSoftmax", ins(x), aI("axis", 0))
		}},
		{name: "PRelu", opset: 16, build: func(m *ocModel) {
			x := m.in(f32, 2, 3, 4, 4)
			m.op("PRelu", ins(x, m.weight(f32, 3, 1, 1)))
			m.op("PRelu", ins(x, m.weight(f32, 1)))
			m.op("PRelu", ins(x, m.weight(f32, 4)))
		}},
	}
	// Binary arithmetic with broadcasting: equal shapes, rank mismatch, size-1 dims on both
	// sides, scalars, and symbolic dims.
	type bc struct {
		name string
		a, b []any
	}
	shapes := []bc{
		{"Same", []any{2, 3}, []any{2, 3}},
		{"RankMismatch", []any{2, 3, 4}, []any{4}},
		{"Ones", []any{2, 1, 4}, []any{3, 1}},
		{"Scalar", []any{}, []any{2, 3}},
		{"One", []any{1}, []any{2, 3}},
		{"SymOne", []any{"N", 1}, []any{1, 5}},
		{"SymSame", []any{"N", 3}, []any{"N", 1}},
		{"SymKnown", []any{1, "N"}, []any{4, 1}},
		{"SymRank", []any{"N", 2, 3}, []any{3}},
	}
	for _, s := range shapes {
		cases = append(cases, ocCase{name: "Binary" + s.name, opset: 14, run: map[string]int64{"N": 3}, build: func(m *ocModel) {
			a, b := m.in(f32, s.a...), m.in(f32, s.b...)
			for _, op := range []string{"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"} {
				m.op(op, ins(a, b))
			}
			m.op("Mod", ins(a, b), aI("fmod", 1))
			ia, ib := m.in(i64, s.a...), m.in(i64, s.b...)
			m.op("Add", ins(ia, ib))
			m.op("Mod", ins(ia, m.op("Add", ins(ib, m.scalarI(5)))))
			ba, bb := m.in(bool_, s.a...), m.in(bool_, s.b...)
			m.op("And", ins(ba, bb))
			m.op("Or", ins(ba, bb))
			m.op("Xor", ins(ba, bb))
			m.op("Where", ins(ba, a, b))
			ua, ub := m.in(u32, s.a...), m.in(u32, s.b...)
			m.op("BitShift", ins(ua, ub), aS("direction", "LEFT"))
		}})
	}
	cases = append(cases,
		ocCase{name: "Variadic", opset: 13, build: func(m *ocModel) {
			a, b, c := m.in(f32, 3, 1), m.in(f32, 2, 1, 4), m.in(f32, 1)
			m.op("Sum", ins(a, b, c))
			m.op("Mean", ins(a, b, c))
			m.op("Max", ins(a, b, c))
			m.op("Min", ins(a))
			m.op("Sum", ins(b))
		}},
		ocCase{name: "PowMixed", opset: 15, build: func(m *ocModel) {
			m.op("Pow", ins(m.in(f32, 2, 3), m.in(i64, 3)))
			m.op("Pow", ins(m.in(i64, 2, 3), m.in(f32, 1)))
		}},
		ocCase{name: "Bitwise18", opset: 18, build: func(m *ocModel) {
			a, b := m.in(i32, 2, 3), m.in(i32, 3)
			m.op("BitwiseAnd", ins(a, b))
			m.op("BitwiseOr", ins(a, b))
			m.op("BitwiseXor", ins(b, a))
		}},
		ocCase{name: "WhereBcast", opset: 16, run: map[string]int64{"N": 2}, build: func(m *ocModel) {
			m.op("Where", ins(m.in(bool_, "N", 1, 4), m.in(f32, 3, 1), m.in(f32)))
			m.op("Where", ins(m.in(bool_), m.in(i64, 2), m.in(i64, 3, 1)))
		}},
		ocCase{name: "Cast", opset: 19, build: func(m *ocModel) {
			x := m.in(f32, 2, 3)
			for _, to := range []graph.DType{i64, i32, f16, f64, u8, i8, bool_, f32, graph.Uint16, graph.Int16, graph.BFloat16} {
				m.op("Cast", ins(x), aI("to", int64(to)))
			}
			m.op("Cast", ins(m.in(i64, 4)), aI("to", int64(f32)))
			m.op("Cast", ins(m.in(bool_, 4)), aI("to", int64(i32)))
		}},
		ocCase{name: "Cast6", opset: 6, build: func(m *ocModel) {
			m.op("Cast", ins(m.in(f32, 2, 3)), aI("to", int64(i64)))
		}},
		ocCase{name: "CastLike", opset: 15, build: func(m *ocModel) {
			m.op("CastLike", ins(m.in(f32, 2, 3), m.in(i64, 1)))
			m.op("CastLike", ins(m.in(i32, 4), m.in(f16, 2, 2)))
		}},
		ocCase{name: "Clip6", opset: 6, build: func(m *ocModel) {
			m.op("Clip", ins(m.in(f32, 2, 3)), aF("min", -0.5), aF("max", 0.5))
			m.op("Clip", ins(m.in(f32, 4)))
		}},
		ocCase{name: "Clip11", opset: 11, build: func(m *ocModel) {
			x := m.in(f32, 2, 3)
			m.op("Clip", ins(x, m.scalarF(-0.5), m.scalarF(0.5)))
			m.op("Clip", ins(x, "", m.scalarF(0.5)))
			m.op("Clip", ins(x, m.scalarF(0)))
			m.op("Clip", ins(x))
		}},
		ocCase{name: "Clip13Int", opset: 13, build: func(m *ocModel) {
			m.op("Clip", ins(m.in(i64, 5), m.scalarI(0), m.scalarI(1)))
		}},
	)
	return cases
}

var _ = math.MaxInt64

func ocLinear() []ocCase {
	return []ocCase{
		{name: "Gemm", opset: 13, run: map[string]int64{"M": 3}, build: func(m *ocModel) {
			a, at := m.in(f32, 3, 4), m.in(f32, 4, 3)
			b, bt := m.weight(f32, 4, 5), m.weight(f32, 5, 4)
			m.op("Gemm", ins(a, b, m.weight(f32, 5)))
			m.op("Gemm", ins(at, b, m.weight(f32, 1)), aI("transA", 1))
			m.op("Gemm", ins(a, bt, m.weight(f32, 3, 1)), aI("transB", 1))
			m.op("Gemm", ins(at, bt, m.scalarF(2)), aI("transA", 1), aI("transB", 1), aF("alpha", 0.5), aF("beta", 2))
			m.op("Gemm", ins(a, b, m.weight(f32, 3, 5)))
			m.op("Gemm", ins(a, b))
			m.op("Gemm", ins(m.in(f32, "M", 4), b, m.weight(f32, 1, 5)))
		}},
		{name: "Gemm9", opset: 9, build: func(m *ocModel) {
			m.op("Gemm", ins(m.in(f32, 2, 4), m.weight(f32, 4, 5), m.weight(f32, 5)))
		}},
		{name: "MatMul", opset: 13, run: map[string]int64{"N": 2, "S": 3}, build: func(m *ocModel) {
			v3 := m.in(f32, 3)
			m.op("MatMul", ins(v3, m.in(f32, 3)))
			m.op("MatMul", ins(v3, m.in(f32, 2, 3, 4)))
			m.op("MatMul", ins(m.in(f32, 2, 5, 3), v3))
			m.op("MatMul", ins(m.in(f32, 2, 1, 3, 4), m.in(f32, 5, 4, 6)))
			m.op("MatMul", ins(m.in(f32, "N", "S", 4), m.weight(f32, 4, 5)))
			m.op("MatMul", ins(m.in(f32, "N", 1, 3), m.in(f32, 1, 2, 3, 4)))
			m.op("MatMul", ins(m.in(f32, 3, 4), m.in(f32, 4, 2)))
			m.op("MatMul", ins(m.in(i32, 3, 4), m.in(i32, 4)))
			m.op("MatMul", ins(m.in(i64, 2, 3, 4), m.in(i64, 4, 2)))
		}},
		{name: "MatMulInteger", opset: 10, build: func(m *ocModel) {
			a, b := m.in(u8, 2, 3), m.in(u8, 3, 4)
			m.op("MatMulInteger", ins(a, b))
			m.op("MatMulInteger", ins(a, b, m.init(u8, []int64{}, []float64{3}), m.init(u8, []int64{4}, []float64{1, 2, 3, 4})))
			m.op("MatMulInteger", ins(m.in(u8, 5, 2, 3), m.in(i8, 3, 4)))
			m.op("MatMulInteger", ins(m.in(u8, 3), m.in(u8, 2, 3, 4)))
		}},
	}
}

func ocConvPool() []ocCase {
	return []ocCase{
		{name: "Conv2D", opset: 11, build: func(m *ocModel) {
			x := m.in(f32, 1, 4, 7, 7)
			w := m.weight(f32, 6, 4, 3, 3)
			m.op("Conv", ins(x, w))
			m.op("Conv", ins(x, w, m.weight(f32, 6)), aIs("pads", 1, 1, 1, 1), aIs("strides", 2, 2))
			m.op("Conv", ins(x, w), aIs("dilations", 2, 2), aIs("pads", 0, 1, 2, 0))
			m.op("Conv", ins(x, w), aIs("dilations", 2, 1), aIs("strides", 3, 2), aIs("kernel_shape", 3, 3))
			m.op("Conv", ins(x, m.weight(f32, 6, 2, 3, 3)), aI("group", 2), aIs("pads", 1, 1, 1, 1))
			m.op("Conv", ins(x, m.weight(f32, 4, 1, 3, 3)), aI("group", 4), aIs("strides", 2, 2))
			m.op("Conv", ins(x, m.weight(f32, 2, 4, 1, 1)))
			m.op("Conv", ins(x, m.weight(f32, 2, 4, 2, 4)), aIs("strides", 1, 3))
		}},
		{name: "ConvAutoPad", opset: 11, build: func(m *ocModel) {
			x := m.in(f32, 2, 3, 7, 8)
			for _, ap := range []string{"SAME_UPPER", "SAME_LOWER", "VALID"} {
				for _, st := range []int64{1, 2, 3} {
					m.op("Conv", ins(x, m.weight(f32, 4, 3, 3, 2)), aS("auto_pad", ap), aIs("strides", st, st))
				}
			}
			m.op("Conv", ins(x, m.weight(f32, 4, 3, 3, 3)), aS("auto_pad", "VALID"), aIs("strides", 2, 1), aIs("dilations", 2, 2))
		}},
		{name: "ConvSameDilated", opset: 11, ortRejects: "Dilation not supported for AutoPadType::SAME_UPPER", build: func(m *ocModel) {
			m.op("Conv", ins(m.in(f32, 2, 3, 7, 8), m.weight(f32, 4, 3, 3, 3)), aS("auto_pad", "SAME_UPPER"), aIs("dilations", 2, 2))
		}, check: func(t ocT, m *Model) {
			if len(m.ShapeErrors) != 1 || !strings.Contains(m.ShapeErrors[0], "node conv_") || !strings.Contains(m.ShapeErrors[0], "dilations") {
				t.Errorf("inference errors %q, want one naming the Conv and its dilations", m.ShapeErrors)
			}
		}},
		{name: "Conv1D3D", opset: 11, build: func(m *ocModel) {
			m.op("Conv", ins(m.in(f32, 2, 3, 10), m.weight(f32, 4, 3, 3)), aIs("strides", 2), aIs("pads", 1, 2))
			m.op("Conv", ins(m.in(f32, 2, 3, 10), m.weight(f32, 4, 3, 3)), aS("auto_pad", "SAME_UPPER"), aIs("strides", 3))
			m.op("Conv", ins(m.in(f32, 1, 2, 5, 6, 7), m.weight(f32, 3, 2, 2, 3, 3)), aIs("strides", 1, 2, 2), aIs("pads", 0, 1, 1, 1, 0, 1))
		}},
		{name: "ConvSymbolic", opset: 11, run: map[string]int64{"N": 2, "H": 9, "W": 6},
			build: func(m *ocModel) {
				x := m.in(f32, "N", 3, "H", "W")
				m.op("Conv", ins(x, m.weight(f32, 8, 3, 1, 1)))
				m.op("Conv", ins(x, m.weight(f32, 8, 3, 3, 3)), aIs("pads", 1, 1, 1, 1))
				m.op("Conv", ins(x, m.weight(f32, 8, 3, 3, 5)), aIs("pads", 0, 1, 2, 3), aIs("dilations", 1, 1))
				m.op("Conv", ins(x, m.weight(f32, 8, 3, 3, 3)), aS("auto_pad", "SAME_UPPER"))
				m.loose(m.op("Conv", ins(x, m.weight(f32, 8, 3, 3, 3)), aIs("strides", 2, 2), aIs("pads", 1, 1, 1, 1)))
				m.loose(m.op("Conv", ins(x, m.weight(f32, 8, 3, 3, 3))))
			}},
		{name: "ConvBound", opset: 11, bind: map[string]int64{"N": 2, "H": 9, "W": 6}, build: func(m *ocModel) {
			x := m.in(f32, "N", 3, "H", "W")
			m.op("Conv", ins(x, m.weight(f32, 8, 3, 3, 3)), aIs("strides", 2, 2), aIs("pads", 1, 1, 1, 1))
		}},
		{name: "ConvInteger", opset: 10, build: func(m *ocModel) {
			x := m.in(u8, 1, 2, 5, 5)
			m.op("ConvInteger", ins(x, m.weight(u8, 3, 2, 3, 3)))
			m.op("ConvInteger", ins(x, m.weight(u8, 3, 2, 3, 3), m.init(u8, []int64{}, []float64{1})), aIs("pads", 1, 1, 1, 1), aIs("strides", 2, 2))
		}},
		{name: "ConvTranspose", opset: 11, build: func(m *ocModel) {
			x := m.in(f32, 1, 2, 3, 4)
			w := m.weight(f32, 2, 3, 3, 3)
			m.op("ConvTranspose", ins(x, w))
			m.op("ConvTranspose", ins(x, w, m.weight(f32, 3)), aIs("strides", 2, 2))
			m.op("ConvTranspose", ins(x, w), aIs("strides", 2, 2), aIs("pads", 1, 1, 1, 1))
			m.op("ConvTranspose", ins(x, w), aIs("strides", 2, 3), aIs("pads", 1, 0, 1, 2), aIs("output_padding", 1, 2))
			m.op("ConvTranspose", ins(x, w), aIs("strides", 2, 2), aIs("output_shape", 6, 9))
			m.op("ConvTranspose", ins(x, w), aIs("strides", 2, 2), aIs("output_shape", 7, 8), aIs("output_padding", 0, 0))
			m.op("ConvTranspose", ins(x, w), aIs("dilations", 2, 2))
			m.op("ConvTranspose", ins(x, m.weight(f32, 2, 2, 3, 3)), aI("group", 2), aIs("strides", 2, 1))
			for _, ap := range []string{"SAME_UPPER", "SAME_LOWER", "VALID"} {
				m.op("ConvTranspose", ins(x, w), aS("auto_pad", ap), aIs("strides", 2, 2))
				m.op("ConvTranspose", ins(x, m.weight(f32, 2, 3, 2, 5)), aS("auto_pad", ap), aIs("strides", 3, 1))
			}
		}},
		{name: "ConvTranspose1D3D", opset: 11, build: func(m *ocModel) {
			m.op("ConvTranspose", ins(m.in(f32, 2, 3, 5), m.weight(f32, 3, 2, 4)), aIs("strides", 3), aIs("output_padding", 1))
			m.op("ConvTranspose", ins(m.in(f32, 1, 2, 2, 3, 2), m.weight(f32, 2, 1, 2, 2, 2)), aIs("strides", 2, 1, 2), aIs("pads", 0, 1, 0, 0, 0, 1))
		}},
		{name: "ConvTransposeSymbolic", opset: 11, run: map[string]int64{"N": 2, "H": 3}, build: func(m *ocModel) {
			x := m.in(f32, "N", 2, "H", 4)
			m.op("ConvTranspose", ins(x, m.weight(f32, 2, 3, 1, 1)))
			m.op("ConvTranspose", ins(x, m.weight(f32, 2, 3, 3, 3)), aIs("pads", 1, 1, 1, 1))
			m.loose(m.op("ConvTranspose", ins(x, m.weight(f32, 2, 3, 3, 3)), aIs("strides", 2, 2)))
		}},
		{name: "MaxPool", opset: 12, build: func(m *ocModel) {
			x := m.in(f32, 1, 3, 7, 6)
			m.opN("MaxPool", ins(x), 2, aIs("kernel_shape", 3, 3), aIs("strides", 2, 2), aIs("pads", 1, 1, 1, 1))
			m.opN("MaxPool", ins(x), 2, aIs("kernel_shape", 2, 2), aI("ceil_mode", 1), aIs("strides", 2, 2))
			m.opN("MaxPool", ins(x), 2, aIs("kernel_shape", 3, 2), aI("ceil_mode", 1), aIs("strides", 2, 3), aIs("pads", 1, 0, 1, 1))
			m.opN("MaxPool", ins(m.in(f32, 1, 2, 6, 4)), 2, aIs("kernel_shape", 2, 2), aI("ceil_mode", 1), aIs("strides", 2, 2), aIs("pads", 0, 0, 1, 1))
			m.opN("MaxPool", ins(m.in(f32, 1, 2, 5, 4)), 2, aIs("kernel_shape", 2, 2), aI("ceil_mode", 1), aIs("strides", 3, 3), aIs("pads", 1, 1, 1, 1))
			m.opN("MaxPool", ins(x), 2, aIs("kernel_shape", 2, 2), aIs("dilations", 2, 2), aIs("strides", 1, 1))
			m.opN("MaxPool", ins(x), 2, aIs("kernel_shape", 2, 2), aIs("dilations", 2, 2), aI("ceil_mode", 1), aIs("strides", 2, 2))
			m.opN("MaxPool", ins(x), 2, aIs("kernel_shape", 3, 3), aI("storage_order", 1))
			m.op("MaxPool", ins(x), aIs("kernel_shape", 3, 3))
			for _, ap := range []string{"SAME_UPPER", "SAME_LOWER", "VALID"} {
				m.opN("MaxPool", ins(x), 2, aIs("kernel_shape", 3, 2), aS("auto_pad", ap), aIs("strides", 2, 2))
			}
		}},
		{name: "MaxPool1D3D", opset: 12, build: func(m *ocModel) {
			m.opN("MaxPool", ins(m.in(f32, 2, 3, 9)), 2, aIs("kernel_shape", 3), aIs("strides", 2))
			m.opN("MaxPool", ins(m.in(f32, 1, 2, 4, 5, 6)), 2, aIs("kernel_shape", 2, 2, 3), aIs("strides", 2, 1, 2), aI("ceil_mode", 1))
			m.op("MaxPool", ins(m.in(u8, 1, 2, 5, 5)), aIs("kernel_shape", 2, 2))
		}},
		{name: "MaxPool8", opset: 8, build: func(m *ocModel) {
			m.opN("MaxPool", ins(m.in(f32, 1, 3, 7, 6)), 2, aIs("kernel_shape", 3, 3), aIs("strides", 2, 2))
		}},
		{name: "AveragePool", opset: 11, build: func(m *ocModel) {
			x := m.in(f32, 1, 3, 7, 6)
			m.op("AveragePool", ins(x), aIs("kernel_shape", 3, 3), aIs("strides", 2, 2), aIs("pads", 1, 1, 1, 1))
			m.op("AveragePool", ins(x), aIs("kernel_shape", 3, 3), aIs("strides", 2, 2), aIs("pads", 1, 1, 1, 1), aI("count_include_pad", 1))
			m.op("AveragePool", ins(x), aIs("kernel_shape", 2, 2), aI("ceil_mode", 1), aIs("strides", 2, 2))
			m.op("AveragePool", ins(m.in(f32, 1, 2, 6, 4)), aIs("kernel_shape", 2, 2), aI("ceil_mode", 1), aIs("strides", 2, 2), aIs("pads", 0, 0, 1, 1))
			m.op("AveragePool", ins(m.in(f32, 1, 2, 5, 4)), aIs("kernel_shape", 2, 2), aI("ceil_mode", 1), aIs("strides", 3, 3), aIs("pads", 1, 1, 1, 1), aI("count_include_pad", 1))
			for _, ap := range []string{"SAME_UPPER", "SAME_LOWER", "VALID"} {
				m.op("AveragePool", ins(x), aIs("kernel_shape", 3, 2), aS("auto_pad", ap), aIs("strides", 2, 2))
			}
			m.op("AveragePool", ins(m.in(f32, 1, 2, 8)), aIs("kernel_shape", 3), aIs("strides", 2))
			m.op("AveragePool", ins(m.in(f32, 1, 2, 4, 5, 6)), aIs("kernel_shape", 2, 2, 2))
		}},
		{name: "AveragePool19", opset: 19, build: func(m *ocModel) {
			x := m.in(f32, 1, 3, 9, 8)
			m.op("AveragePool", ins(x), aIs("kernel_shape", 2, 2), aIs("dilations", 2, 2))
			m.op("AveragePool", ins(x), aIs("kernel_shape", 3, 2), aIs("dilations", 2, 3), aI("ceil_mode", 1), aIs("strides", 2, 2))
		}},
		{name: "LpPool", opset: 18, build: func(m *ocModel) {
			x := m.in(f32, 1, 3, 7, 6)
			m.op("LpPool", ins(x), aIs("kernel_shape", 3, 3), aIs("strides", 2, 2), aIs("pads", 1, 1, 1, 1))
			m.op("LpPool", ins(x), aIs("kernel_shape", 2, 2), aI("p", 3), aI("ceil_mode", 1), aIs("strides", 2, 2))
			m.op("LpPool", ins(x), aIs("kernel_shape", 2, 2), aIs("dilations", 2, 2))
		}},
		{name: "PoolSymbolic", opset: 12, run: map[string]int64{"N": 2, "H": 9}, build: func(m *ocModel) {
			x := m.in(f32, "N", 3, "H", 8)
			m.opN("MaxPool", ins(x), 2, aIs("kernel_shape", 3, 3), aIs("pads", 1, 1, 1, 1))
			m.loose(m.opN("MaxPool", ins(x), 2, aIs("kernel_shape", 3, 3), aIs("strides", 2, 2))...)
			m.op("AveragePool", ins(x), aIs("kernel_shape", 3, 3), aS("auto_pad", "SAME_UPPER"))
		}},
		{name: "GlobalPool", opset: 13, run: map[string]int64{"N": 2}, build: func(m *ocModel) {
			for _, x := range []string{m.in(f32, 2, 3, 5), m.in(f32, "N", 3, 4, 5), m.in(f32, 1, 2, 3, 4, 5)} {
				m.op("GlobalAveragePool", ins(x))
				m.op("GlobalMaxPool", ins(x))
				m.op("GlobalLpPool", ins(x))
			}
		}},
	}
}

func ocNorm() []ocCase {
	return []ocCase{
		{name: "BatchNorm", opset: 15, run: map[string]int64{"N": 2}, build: func(m *ocModel) {
			x := m.in(f32, "N", 3, 4, 4)
			p := func() []string {
				return ins(m.weight(f32, 3), m.weight(f32, 3), m.weight(f32, 3), m.init(f32, []int64{3}, []float64{1, 2, 3}))
			}
			m.op("BatchNormalization", append(ins(x), p()...))
			m.op("BatchNormalization", append(ins(m.in(f32, 2, 3)), p()...))
			m.op("BatchNormalization", append(ins(m.in(f32, 2, 3, 5)), p()...), aF("epsilon", 1e-3))
		}},
		{name: "BatchNormTraining", opset: 15, build: func(m *ocModel) {
			x := m.in(f32, 2, 3, 4, 4)
			m.opN("BatchNormalization", ins(x, m.weight(f32, 3), m.weight(f32, 3), m.weight(f32, 3), m.init(f32, []int64{3}, []float64{1, 2, 3})), 3,
				aI("training_mode", 1))
		}},
		{name: "BatchNorm9", opset: 9, build: func(m *ocModel) {
			m.op("BatchNormalization", ins(m.in(f32, 2, 3, 4), m.weight(f32, 3), m.weight(f32, 3), m.weight(f32, 3), m.init(f32, []int64{3}, []float64{1, 2, 3})))
		}},
		{name: "LayerNorm", opset: 17, run: map[string]int64{"N": 2}, build: func(m *ocModel) {
			x := m.in(f32, "N", 3, 4)
			m.opN("LayerNormalization", ins(x, m.weight(f32, 4), m.weight(f32, 4)), 3)
			m.opN("LayerNormalization", ins(x, m.weight(f32, 3, 4)), 3, aI("axis", -2))
			m.opN("LayerNormalization", ins(x, m.weight(f32, 3, 4)), 3, aI("axis", 1))
			m.opN("LayerNormalization", ins(x, m.weight(f32, 4)), 3, aI("axis", 2), aF("epsilon", 1e-3))
			m.opN("LayerNormalization", ins(x, m.weight(f32, 4)), 2)
			m.op("LayerNormalization", ins(x, m.weight(f32, 4)))
			m.opN("LayerNormalization", ins(x, m.weight(f32, 4)), 3, aI("axis", 0))
			y := m.opN("LayerNormalization", ins(x, m.weight(f32, 4)), 3)
			m.skipOut(1)
			_ = y
		}},
		{name: "LayerNormFP16", opset: 17, build: func(m *ocModel) {
			x := m.in(f16, 2, 3, 4)
			m.opN("LayerNormalization", ins(x, m.weight(f16, 4), m.weight(f16, 4)), 3)
		}},
		{name: "LayerNormDouble", opset: 17, build: func(m *ocModel) {
			m.opN("LayerNormalization", ins(m.in(f64, 2, 4), m.weight(f64, 4)), 3)
		}},
		{name: "InstanceNorm", opset: 6, build: func(m *ocModel) {
			m.op("InstanceNormalization", ins(m.in(f32, 2, 3, 4, 5), m.weight(f32, 3), m.weight(f32, 3)))
			m.op("InstanceNormalization", ins(m.in(f32, 2, 3, 4), m.weight(f32, 3), m.weight(f32, 3)))
		}},
		{name: "GroupNorm21", opset: 21, build: func(m *ocModel) {
			m.op("GroupNormalization", ins(m.in(f32, 2, 4, 3, 3), m.weight(f32, 4), m.weight(f32, 4)), aI("num_groups", 2))
		}},
		{name: "LpMVN", opset: 13, build: func(m *ocModel) {
			x := m.in(f32, 2, 3, 4, 5)
			m.op("LpNormalization", ins(x), aI("axis", 1), aI("p", 1))
			m.op("LpNormalization", ins(x))
			m.op("MeanVarianceNormalization", ins(x))
			m.op("MeanVarianceNormalization", ins(x), aIs("axes", 1))
		}},
		{name: "RMSNorm23", opset: 23, build: func(m *ocModel) {
			x := m.in(f32, 2, 3, 4)
			m.op("RMSNormalization", ins(x, m.weight(f32, 4)))
			m.op("RMSNormalization", ins(x, m.weight(f32, 3, 4)), aI("axis", 1))
		}},
	}
}

func ocMovement() []ocCase {
	return []ocCase{
		{name: "Reshape", opset: 14, run: map[string]int64{"N": 2}, build: func(m *ocModel) {
			x := m.in(f32, 2, 3, 4)
			m.op("Reshape", ins(x, m.ints(0, -1)))
			m.op("Reshape", ins(x, m.ints(-1)))
			m.op("Reshape", ins(x, m.ints(4, 0, 2)))
			m.op("Reshape", ins(x, m.ints(1, -1, 1, 4)))
			m.op("Reshape", ins(x, m.ints(2, 12)), aI("allowzero", 1))
			m.op("Reshape", ins(x, m.ints(4, 0, -1)), aI("allowzero", 0))
			s := m.in(f32, "N", 3, 4)
			m.op("Reshape", ins(s, m.ints(0, -1)))
			m.op("Reshape", ins(s, m.ints(0, 2, -1, 2)))
			m.op("Reshape", ins(s, m.ints(-1, 12)))
			m.loose(m.op("Reshape", ins(s, m.ints(-1, 4))))
			m.loose(m.op("Reshape", ins(s, m.ints(6, -1))))
			m.loose(m.op("Reshape", ins(x, m.inData(i64, []float64{0, 4, -1}, 3))))
			z := m.op("Slice", ins(x, m.ints(0), m.ints(0), m.ints(1)))
			m.op("Reshape", ins(z, m.ints(0, 4, 3)), aI("allowzero", 1))
			m.op("Reshape", ins(z, m.ints(2, 0, 6)))
		}},
		{name: "ReshapeZeroAndInfer", opset: 14, ortRejects: "Product cannot be 0 in combination with -1", build: func(m *ocModel) {
			z := m.op("Slice", ins(m.in(f32, 2, 3, 4), m.ints(0), m.ints(0), m.ints(1)))
			m.op("Reshape", ins(z, m.ints(0, -1)), aI("allowzero", 1))
		}},
		{name: "Reshape5", opset: 5, build: func(m *ocModel) {
			m.op("Reshape", ins(m.in(f32, 2, 3, 4), m.ints(0, -1)))
		}},
		{name: "Flatten", opset: 13, run: map[string]int64{"N": 2}, build: func(m *ocModel) {
			x := m.in(f32, 2, 3, 4)
			for _, a := range []int64{0, 1, 2, 3, -1, -3} {
				m.op("Flatten", ins(x), aI("axis", a))
			}
			m.op("Flatten", ins(x))
			s := m.in(f32, "N", 3, 4)
			m.op("Flatten", ins(s))
			m.loose(m.op("Flatten", ins(s), aI("axis", 0)))
			m.loose(m.op("Flatten", ins(s), aI("axis", 2)))
			m.op("Flatten", ins(s), aI("axis", 1))
			m.op("Flatten", ins(m.in(f32, 2, 3, "N")), aI("axis", 2))
			m.op("Flatten", ins(m.in(f32, 5)), aI("axis", 0))
		}},
		{name: "Flatten9", opset: 9, build: func(m *ocModel) {
			m.op("Flatten", ins(m.in(f32, 2, 3, 4)), aI("axis", 0))
		}},
		{name: "Transpose", opset: 13, run: map[string]int64{"N": 2}, build: func(m *ocModel) {
			x := m.in(f32, 2, 3, 4, "N")
			m.op("Transpose", ins(x))
			m.op("Transpose", ins(x), aIs("perm", 0, 2, 3, 1))
			m.op("Transpose", ins(m.in(f32, 5)))
			m.op("Transpose", ins(m.in(f32)))
		}},
		{name: "Concat", opset: 13, run: map[string]int64{"N": 2}, build: func(m *ocModel) {
			a, b := m.in(f32, 2, 3, 4), m.in(f32, 2, 5, 4)
			m.op("Concat", ins(a, b, a), aI("axis", 1))
			m.op("Concat", ins(a, b), aI("axis", -2))
			m.op("Concat", ins(a, a), aI("axis", 0))
			m.op("Concat", ins(a), aI("axis", 2))
			m.op("Concat", ins(m.in(f32, "N", 3), m.in(f32, "N", 2)), aI("axis", 1))
			m.loose(m.op("Concat", ins(m.in(f32, "N", 3), m.in(f32, 2, 3)), aI("axis", 0)))
			m.loose(m.op("Concat", ins(m.in(f32, "N", 3), m.in(f32, "N", 3)), aI("axis", 0)))
		}},
		{name: "Split11", opset: 11, build: func(m *ocModel) {
			x := m.in(f32, 6, 4)
			m.opN("Split", ins(x), 2)
			m.opN("Split", ins(x), 3, aIs("split", 1, 2, 3))
			m.opN("Split", ins(x), 2, aI("axis", -1), aIs("split", 3, 1))
			m.opN("Split", ins(x), 1)
		}},
		{name: "Split13", opset: 13, build: func(m *ocModel) {
			x := m.in(f32, 6, 4)
			m.opN("Split", ins(x), 3)
			m.opN("Split", ins(x, m.ints(1, 5)), 2)
			m.opN("Split", ins(x, m.ints(1, 1, 2)), 3, aI("axis", 1))
			m.opN("Split", ins(x, m.ints(0, 6)), 2)
		}},
		{name: "Split18", opset: 18, run: map[string]int64{"N": 4}, build: func(m *ocModel) {
			x := m.in(f32, 7, 4)
			m.opN("Split", ins(x), 3, aI("num_outputs", 3))
			m.opN("Split", ins(x), 4, aI("num_outputs", 4))
			m.opN("Split", ins(x), 2, aI("num_outputs", 2), aI("axis", 1))
			m.opN("Split", ins(m.in(f32, 5, 2)), 3, aI("num_outputs", 3))
			m.opN("Split", ins(x, m.ints(2, 5)), 2)
		}},
		{name: "SplitSymbolic", opset: 18, run: map[string]int64{"N": 4}, build: func(m *ocModel) {
			m.loose(m.opN("Split", ins(m.in(f32, 2, "N")), 2, aI("num_outputs", 2), aI("axis", 1))...)
			m.opN("Split", ins(m.in(f32, "N", 4)), 2, aI("num_outputs", 2), aI("axis", 1))
		}},
		{name: "Squeeze11", opset: 11, build: func(m *ocModel) {
			x := m.in(f32, 1, 3, 1, 4)
			m.op("Squeeze", ins(x))
			m.op("Squeeze", ins(x), aIs("axes", 0))
			m.op("Squeeze", ins(x), aIs("axes", -2, 0))
			m.op("Unsqueeze", ins(x), aIs("axes", 0))
			m.op("Unsqueeze", ins(x), aIs("axes", -1, 1))
			m.op("Unsqueeze", ins(m.in(f32)), aIs("axes", 0, 1))
		}},
		{name: "Squeeze13", opset: 13, run: map[string]int64{"N": 3}, build: func(m *ocModel) {
			x := m.in(f32, 1, 3, 1, 4)
			m.op("Squeeze", ins(x))
			m.op("Squeeze", ins(x, m.ints(0)))
			m.op("Squeeze", ins(x, m.ints(-2, 0)))
			m.op("Unsqueeze", ins(x, m.ints(0)))
			m.op("Unsqueeze", ins(x, m.ints(-1, 1)))
			m.op("Unsqueeze", ins(x, m.ints(5, 0)))
			m.op("Unsqueeze", ins(m.in(f32), m.ints(0)))
			m.op("Unsqueeze", ins(m.in(i64, 2), m.ints(-1)))
			m.op("Unsqueeze", ins(m.in(i64, 2), m.scalarI(0)))
			s := m.in(f32, "N", 1, 4)
			m.op("Squeeze", ins(s, m.ints(1)))
			m.op("Unsqueeze", ins(s, m.ints(1)))
		}},
		{name: "SqueezeSymbolic", opset: 13, run: map[string]int64{"N": 3}, anon: []string{"squeeze"}, build: func(m *ocModel) {
			m.op("Squeeze", ins(m.in(f32, "N", 1, 4)))
		}},
		{name: "Expand", opset: 13, run: map[string]int64{"N": 3}, build: func(m *ocModel) {
			x := m.in(f32, 3, 1)
			m.op("Expand", ins(x, m.ints(2, 1, 4)))
			m.op("Expand", ins(x, m.ints(3, 4)))
			m.op("Expand", ins(x, m.ints(1, 4)))
			m.op("Expand", ins(x, m.ints(4)))
			m.op("Expand", ins(x, m.ints(1)))
			m.op("Expand", ins(m.in(f32, 2, 3), m.ints(3)))
			m.op("Expand", ins(m.in(f32), m.ints(2, 2)))
			m.op("Expand", ins(m.in(f32, "N", 1), m.ints(1, 5)))
			m.op("Expand", ins(m.in(f32, 1, 1), m.ints(3, 1, 1)))
			m.loose(m.op("Expand", ins(x, m.inData(i64, []float64{3, 2}, 2))))
		}},
		{name: "Tile", opset: 13, build: func(m *ocModel) {
			x := m.in(f32, 2, 3)
			m.op("Tile", ins(x, m.ints(2, 3)))
			m.op("Tile", ins(x, m.ints(1, 1)))
			m.op("Tile", ins(x, m.ints(0, 2)))
			m.op("Tile", ins(m.in(i64, 3), m.ints(4)))
		}},
		{name: "Pad2", opset: 10, build: func(m *ocModel) {
			x := m.in(f32, 2, 3, 4)
			m.op("Pad", ins(x), aIs("pads", 0, 1, 2, 1, 0, 3))
			m.op("Pad", ins(x), aIs("pads", 0, 0, 1, 0, 0, 1), aS("mode", "reflect"))
			m.op("Pad", ins(x), aIs("pads", 0, -1, 0, 0, -1, 1), aF("value", 2))
		}},
		{name: "Pad11", opset: 11, build: func(m *ocModel) {
			x := m.in(f32, 2, 3, 4)
			m.op("Pad", ins(x, m.ints(0, 1, 2, 1, 0, 3)))
			m.op("Pad", ins(x, m.ints(0, 1, 2, 1, 0, 3), m.scalarF(1)))
			m.op("Pad", ins(x, m.ints(0, 0, 1, 0, 0, 1)), aS("mode", "edge"))
			m.op("Pad", ins(x, m.ints(0, -1, 0, 0, -1, 1)))
			m.op("Pad", ins(x, m.ints(0, 0, 2, 0, 0, 1)), aS("mode", "reflect"))
			m.loose(m.op("Pad", ins(x, m.in(i64, 6))))
		}},
		{name: "Pad18", opset: 18, build: func(m *ocModel) {
			x := m.in(f32, 2, 3, 4)
			m.op("Pad", ins(x, m.ints(1, 2, 3, 4), "", m.ints(0, 2)))
			m.op("Pad", ins(x, m.ints(1, 2), m.scalarF(0), m.ints(-2)))
			m.op("Pad", ins(x, m.ints(1, 2, 3, 4, 5, 6)))
		}},
		{name: "Pad19Wrap", opset: 19, build: func(m *ocModel) {
			m.op("Pad", ins(m.in(f32, 2, 3, 4), m.ints(0, 1, 2, 0, 2, 1)), aS("mode", "wrap"))
		}},
		{name: "DepthToSpace", opset: 13, build: func(m *ocModel) {
			x := m.in(f32, 1, 8, 2, 3)
			m.op("DepthToSpace", ins(x), aI("blocksize", 2))
			m.op("DepthToSpace", ins(x), aI("blocksize", 2), aS("mode", "CRD"))
			m.op("SpaceToDepth", ins(m.in(f32, 2, 3, 4, 6)), aI("blocksize", 2))
		}},
	}
}

func ocIndexing() []ocCase {
	maxI := int64(math.MaxInt64)
	minI := int64(math.MinInt64)
	return []ocCase{
		{name: "Slice9", opset: 9, build: func(m *ocModel) {
			x := m.in(f32, 5, 6, 7)
			m.op("Slice", ins(x), aIs("starts", 1, 0), aIs("ends", 3, 100))
			m.op("Slice", ins(x), aIs("starts", -3), aIs("ends", -1), aIs("axes", 2))
			m.op("Slice", ins(x), aIs("starts", 2), aIs("ends", maxI), aIs("axes", 1))
			m.op("Slice", ins(x), aIs("starts", 4, 1), aIs("ends", 2, 5), aIs("axes", 0, 2))
		}},
		{name: "Slice10", opset: 10, build: func(m *ocModel) {
			x := m.in(f32, 5, 6, 7)
			m.op("Slice", ins(x, m.ints(1, 0), m.ints(3, 100)))
			m.op("Slice", ins(x, m.ints(-1), m.ints(minI), m.ints(2), m.ints(-3)))
		}},
		{name: "Slice13", opset: 13, run: map[string]int64{"N": 5}, build: func(m *ocModel) {
			x := m.in(f32, 5, 6, 7)
			m.op("Slice", ins(x, m.ints(1, 0), m.ints(3, 100)))
			m.op("Slice", ins(x, m.ints(-3), m.ints(-1), m.ints(2)))
			m.op("Slice", ins(x, m.ints(2), m.ints(maxI), m.ints(1)))
			m.op("Slice", ins(x, m.ints(-1), m.ints(minI), m.ints(0), m.ints(-1)))
			m.op("Slice", ins(x, m.ints(-1), m.ints(-100), m.ints(1), m.ints(-2)))
			m.op("Slice", ins(x, m.ints(10), m.ints(0), m.ints(2), m.ints(-3)))
			m.op("Slice", ins(x, m.ints(0, 1), m.ints(maxI, 5), m.ints(-1, 0), m.ints(3, 2)))
			m.op("Slice", ins(x, m.ints(4), m.ints(2), m.ints(1)))
			m.op("Slice", ins(x, m.ints(-100), m.ints(100), m.ints(0), m.ints(2)))
			m.op("Slice", ins(x, m.ints(1), m.ints(1), m.ints(0)))
			m.op("Slice", ins(x, m.init(i32, []int64{1}, []float64{1}), m.init(i32, []int64{1}, []float64{-1})))
			s := m.in(f32, "N", 6)
			m.op("Slice", ins(s, m.ints(0), m.ints(maxI), m.ints(0)))
			m.op("Slice", ins(s, m.ints(1), m.ints(3), m.ints(1)))
			m.op("Slice", ins(s, m.ints(0), m.ints(int64(math.MaxInt32)), m.ints(0)))
			m.loose(m.op("Slice", ins(s, m.ints(1), m.ints(maxI), m.ints(0))))
			m.loose(m.op("Slice", ins(s, m.ints(0), m.ints(-1), m.ints(0))))
			m.loose(m.op("Slice", ins(x, m.in(i64, 1), m.ints(3), m.ints(1))))
			m.loose(m.op("Slice", ins(x, m.in(i64, 1), m.in(i64, 1), m.ints(1), m.ints(1))))
		}},
		{name: "Gather", opset: 13, run: map[string]int64{"N": 3}, build: func(m *ocModel) {
			x := m.in(f32, 5, 6, 7)
			m.op("Gather", ins(x, m.ints(0, 4, -1)))
			m.op("Gather", ins(x, m.scalarI(-2)), aI("axis", 1))
			m.op("Gather", ins(x, m.init(i32, []int64{2, 2}, []float64{0, 1, -1, 2})), aI("axis", -1))
			m.op("Gather", ins(x, m.in(i64, "N", 2)), aI("axis", 2))
			m.op("Gather", ins(m.in(f32, 4), m.scalarI(3)))
			m.op("Gather", ins(m.in(i64, 4), m.ints(-1, 0)))
		}},
		{name: "GatherElements", opset: 13, build: func(m *ocModel) {
			x := m.in(f32, 3, 4)
			m.op("GatherElements", ins(x, m.init(i64, []int64{2, 4}, []float64{0, 1, 2, -1, 1, 0, 0, 2})))
			m.op("GatherElements", ins(x, m.init(i64, []int64{3, 2}, []float64{0, 1, 2, -1, 1, 0})), aI("axis", 1))
		}},
		{name: "GatherND", opset: 13, build: func(m *ocModel) {
			x := m.in(f32, 2, 3, 4)
			m.op("GatherND", ins(x, m.init(i64, []int64{2, 1}, []float64{0, 1})))
			m.op("GatherND", ins(x, m.init(i64, []int64{2, 3}, []float64{0, 1, 2, 1, 2, 3})))
			m.op("GatherND", ins(x, m.init(i64, []int64{2, 1, 2}, []float64{0, 1, 1, 2})))
			m.op("GatherND", ins(x, m.init(i64, []int64{2, 1}, []float64{1, 2})), aI("batch_dims", 1))
			m.op("GatherND", ins(x, m.init(i64, []int64{2, 2}, []float64{1, 2, 0, 3})), aI("batch_dims", 1))
			m.op("GatherND", ins(x, m.init(i64, []int64{2, 3, 1}, []float64{1, 2, 0, 3, 1, 0})), aI("batch_dims", 2))
		}},
		{name: "Scatter", opset: 18, build: func(m *ocModel) {
			x := m.in(f32, 3, 4)
			m.op("ScatterElements", ins(x, m.init(i64, []int64{1, 2}, []float64{1, 2}), m.weight(f32, 1, 2)), aI("axis", 1))
			m.op("ScatterElements", ins(x, m.init(i64, []int64{1, 2}, []float64{1, 2}), m.weight(f32, 1, 2)), aS("reduction", "add"))
			m.op("ScatterND", ins(x, m.init(i64, []int64{2, 1}, []float64{0, 2}), m.weight(f32, 2, 4)))
			m.op("ScatterND", ins(x, m.init(i64, []int64{1, 2}, []float64{0, 2}), m.weight(f32, 1)), aS("reduction", "mul"))
		}},
		{name: "Scatter9", opset: 9, build: func(m *ocModel) {
			m.op("Scatter", ins(m.in(f32, 3, 4), m.init(i64, []int64{1, 2}, []float64{1, 2}), m.weight(f32, 1, 2)), aI("axis", 1))
		}},
		{name: "OneHot", opset: 11, build: func(m *ocModel) {
			idx := m.inData(i64, []float64{0, 2, -1, 1, 0, 3}, 2, 3)
			vals := m.init(f32, []int64{2}, []float64{0, 1})
			m.op("OneHot", ins(idx, m.scalarI(5), vals))
			m.op("OneHot", ins(idx, m.ints(4), vals), aI("axis", 0))
			m.op("OneHot", ins(idx, m.ints(4), m.init(i64, []int64{2}, []float64{0, 1})), aI("axis", 1))
			m.op("OneHot", ins(m.inData(i32, []float64{1, 2}, 2), m.init(f32, []int64{}, []float64{3}), m.init(f32, []int64{2}, []float64{0, 1})))
			m.op("OneHot", ins(m.inData(f32, []float64{1, 2}, 2), m.init(f32, []int64{}, []float64{3}), m.init(f32, []int64{2}, []float64{0, 1})))
			m.loose(m.op("OneHot", ins(idx, m.inData(i64, []float64{6}, 1), vals)))
		}},
		{name: "TriluCumSum", opset: 14, build: func(m *ocModel) {
			x := m.in(f32, 2, 3, 4)
			m.op("Trilu", ins(x))
			m.op("Trilu", ins(x, m.scalarI(-1)), aI("upper", 0))
			m.op("CumSum", ins(x, m.scalarI(1)))
			m.op("CumSum", ins(m.in(i64, 5), m.init(i32, []int64{}, []float64{0})), aI("exclusive", 1), aI("reverse", 1))
		}},
		{name: "ReverseSequence", opset: 10, build: func(m *ocModel) {
			m.op("ReverseSequence", ins(m.in(f32, 4, 2, 3), m.init(i64, []int64{2}, []float64{1, 3})))
			m.op("ReverseSequence", ins(m.in(f32, 2, 4, 3), m.init(i64, []int64{2}, []float64{1, 3})), aI("batch_axis", 0), aI("time_axis", 1))
		}},
		{name: "Compress", opset: 11, anon: []string{"compress"}, build: func(m *ocModel) {
			x := m.in(f32, 3, 4)
			m.op("Compress", ins(x, m.inData(bool_, []float64{1, 0, 1}, 3)), aI("axis", 0))
			m.op("Compress", ins(x, m.inData(bool_, []float64{1, 0, 1, 1, 0}, 5)))
			m.op("Compress", ins(x, m.inData(bool_, []float64{0, 1}, 2)), aI("axis", -1))
		}},
		{name: "NonZero", opset: 13, anon: []string{"nonzero"}, build: func(m *ocModel) {
			m.op("NonZero", ins(m.inData(f32, []float64{1, 0, 2, 0, 0, 3}, 2, 3)))
			m.op("NonZero", ins(m.inData(i64, []float64{1, 0, 2}, 3)))
			m.op("NonZero", ins(m.inData(bool_, []float64{1}, 1, 1, 1)))
			m.op("NonZero", ins(m.inData(i32, []float64{0, 0}, 2)))
			nz := m.op("NonZero", ins(m.inData(f32, []float64{1, 0, 2, 0, 0, 3}, 2, 3)))
			m.loose(m.op("Transpose", ins(nz)))
			m.loose(m.op("Shape", ins(nz)))
			m.op("Size", ins(nz))
		}},
		{name: "TopK", opset: 11, build: func(m *ocModel) {
			x := m.in(f32, 3, 5)
			m.opN("TopK", ins(x, m.ints(2)), 2)
			m.opN("TopK", ins(x, m.ints(3)), 2, aI("axis", 0), aI("largest", 0))
			m.opN("TopK", ins(x, m.ints(5)), 2, aI("axis", -1), aI("sorted", 0))
			m.loose(m.opN("TopK", ins(x, m.inData(i64, []float64{1}, 1)), 2)...)
		}},
		{name: "TopK1", opset: 9, build: func(m *ocModel) {
			m.opN("TopK", ins(m.in(f32, 3, 5)), 2, aI("k", 2))
		}},
		{name: "TopK10", opset: 10, build: func(m *ocModel) {
			m.opN("TopK", ins(m.in(f32, 3, 5), m.ints(2)), 2, aI("axis", 0))
		}},
		{name: "ArgMax", opset: 13, build: func(m *ocModel) {
			x := m.in(f32, 3, 4, 5)
			m.op("ArgMax", ins(x))
			m.op("ArgMax", ins(x), aI("axis", -1), aI("keepdims", 0))
			m.op("ArgMin", ins(x), aI("axis", 1), aI("select_last_index", 1))
			m.op("ArgMin", ins(m.in(i32, 4)), aI("keepdims", 0))
		}},
	}
}

func ocGenerators() []ocCase {
	return []ocCase{
		{name: "Shape15", opset: 15, run: map[string]int64{"N": 2}, build: func(m *ocModel) {
			x := m.in(f32, "N", 3, 4, 5)
			m.op("Shape", ins(x))
			m.op("Shape", ins(x), aI("start", 1))
			m.op("Shape", ins(x), aI("start", -2))
			m.op("Shape", ins(x), aI("end", -1))
			m.op("Shape", ins(x), aI("start", 1), aI("end", 3))
			m.op("Shape", ins(x), aI("start", -10), aI("end", 10))
			m.op("Shape", ins(x), aI("start", 3), aI("end", 1))
			m.op("Shape", ins(m.in(f32)))
			m.op("Size", ins(x))
			m.op("Size", ins(m.in(f32, 2, 3)))
			m.op("Size", ins(m.in(f32)))
		}},
		{name: "ConstantOfShape", opset: 20, build: func(m *ocModel) {
			m.op("ConstantOfShape", ins(m.ints(2, 3)))
			m.op("ConstantOfShape", ins(m.ints(4)), aT("value", ocTensor(i64, []int64{1}, []float64{7})))
			m.op("ConstantOfShape", ins(m.ints(2, 0)), aT("value", ocTensor(i32, []int64{1}, []float64{7})))
			m.op("ConstantOfShape", ins(m.init(i64, []int64{0}, nil)), aT("value", ocTensor(f16, []int64{1}, []float64{1})))
			m.op("ConstantOfShape", ins(m.op("Shape", ins(m.in(f32, 3, 2)))), aT("value", ocTensor(bool_, []int64{1}, []float64{1})))
			m.loose(m.op("ConstantOfShape", ins(m.inData(i64, []float64{2, 5}, 2))))
		}},
		{name: "Constant", opset: 13, build: func(m *ocModel) {
			m.op("Constant", nil, aT("value", ocTensor(f32, []int64{2, 3}, make([]float64, 6))))
			m.op("Constant", nil, aT("value", ocTensor(i64, []int64{}, []float64{5})))
			m.op("Constant", nil, aF("value_float", 1.5))
			m.op("Constant", nil, aFs("value_floats", 1, 2, 3))
			m.op("Constant", nil, aI("value_int", 4))
			m.op("Constant", nil, aIs("value_ints", 4, -5))
			m.op("Constant", nil, aS("value_string", "x"))
			m.op("Constant", nil, aSs("value_strings", "x", "y", "z"))
			st := &onnxpb.SparseTensorProto{Dims: []int64{3, 4},
				Values:  ocTensor(f32, []int64{2}, []float64{1, 2}),
				Indices: ocTensor(i64, []int64{2}, []float64{1, 7})}
			m.op("Constant", nil, &onnxpb.AttributeProto{Name: proto.String("sparse_value"), Type: onnxpb.AttributeProto_SPARSE_TENSOR.Enum(), SparseTensor: st})
		}},
		{name: "Constant9", opset: 9, build: func(m *ocModel) {
			m.op("Constant", nil, aT("value", ocTensor(f32, []int64{2, 3}, make([]float64, 6))))
			m.op("Constant", nil, aT("value", ocTensor(i32, []int64{3}, []float64{1, 2, 3})))
		}},
		{name: "Range", opset: 11, build: func(m *ocModel) {
			m.op("Range", ins(m.scalarI(0), m.scalarI(10), m.scalarI(3)))
			m.op("Range", ins(m.scalarI(10), m.scalarI(-2), m.scalarI(-4)))
			m.op("Range", ins(m.scalarI(5), m.scalarI(5), m.scalarI(1)))
			m.op("Range", ins(m.scalarI(5), m.scalarI(1), m.scalarI(1)))
			m.op("Range", ins(m.init(i32, []int64{}, []float64{1}), m.init(i32, []int64{}, []float64{8}), m.init(i32, []int64{}, []float64{2})))
			m.op("Range", ins(m.scalarF(0), m.scalarF(1), m.scalarF(0.3)))
			m.op("Range", ins(m.scalarF(1), m.scalarF(-1.5), m.scalarF(-0.5)))
			m.op("Range", ins(m.init(f64, []int64{}, []float64{0.5}), m.init(f64, []int64{}, []float64{2.6}), m.init(f64, []int64{}, []float64{0.7})))
			m.loose(m.op("Range", ins(m.scalarI(0), m.inData(i64, []float64{4}), m.scalarI(1))))
		}},
		{name: "EyeLikeRandom", opset: 15, build: func(m *ocModel) {
			x := m.in(f32, 3, 4)
			m.op("EyeLike", ins(x))
			m.op("EyeLike", ins(x), aI("k", 1), aI("dtype", int64(i64)))
			m.op("RandomNormalLike", ins(x))
			m.op("RandomUniformLike", ins(x), aI("dtype", int64(f64)))
			m.op("RandomNormal", nil, aIs("shape", 2, 5))
			m.op("RandomUniform", nil, aIs("shape", 3), aI("dtype", int64(f64)))
			m.op("Bernoulli", ins(m.op("RandomUniformLike", ins(x))))
			m.op("Multinomial", ins(m.in(f32, 2, 4)), aI("sample_size", 3))
		}},
	}
}

func ocReduce() []ocCase {
	reduces := []string{"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
		"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}
	var cases []ocCase
	for _, opset := range []int64{11, 13, 18} {
		cases = append(cases, ocCase{name: "Reduce" + string(rune('0'+opset/10)) + string(rune('0'+opset%10)), opset: opset, run: map[string]int64{"N": 2},
			build: func(m *ocModel) {
				x := m.in(f32, "N", 3, 4)
				for _, op := range reduces {
					axesInput := opset >= 18 || (op == "ReduceSum" && opset >= 13)
					axes := func(a ...int64) []string {
						if axesInput {
							return ins(x, m.ints(a...))
						}
						return ins(x)
					}
					attr := func(a ...int64) []*onnxpb.AttributeProto {
						if axesInput {
							return nil
						}
						return []*onnxpb.AttributeProto{aIs("axes", a...)}
					}
					m.op(op, ins(x))
					m.op(op, ins(x), aI("keepdims", 0))
					m.op(op, axes(1), attr(1)...)
					m.op(op, axes(-1, 0), append(attr(-1, 0), aI("keepdims", 0))...)
					m.op(op, axes(2), append(attr(2), aI("keepdims", 0))...)
					if axesInput {
						m.op(op, ins(x, m.init(i64, []int64{0}, nil)))
						m.op(op, ins(x, m.init(i64, []int64{0}, nil)), aI("noop_with_empty_axes", 1))
						m.op(op, ins(x, ""), aI("noop_with_empty_axes", 1), aI("keepdims", 0))
						m.op(op, ins(x), aI("noop_with_empty_axes", 0), aI("keepdims", 0))
						m.loose(m.op(op, ins(x, m.inData(i64, []float64{1}, 1))))
					}
				}
				m.op("ReduceSum", ins(m.in(i64, 3)), aI("keepdims", 0))
				m.op("ReduceMax", ins(m.in(i32, 2, 3)), aI("keepdims", 1))
			}})
	}
	cases = append(cases, ocCase{name: "ReduceFold", opset: 13, run: map[string]int64{"N": 2}, build: func(m *ocModel) {
		s := m.op("Shape", ins(m.in(f32, 2, 3, 4)))
		m.op("ReduceProd", ins(s), aI("keepdims", 0))
		m.op("ReduceSum", ins(s))
		m.op("ReduceMax", ins(s), aIs("axes", 0))
		m.op("ReduceMin", ins(s), aIs("axes", 0), aI("keepdims", 0))
		m.op("ReduceProd", ins(m.op("Shape", ins(m.in(f32, "N", 3)))), aI("keepdims", 0))
	}})
	return cases
}

func ocMisc() []ocCase {
	fl := func(m *ocModel, v ...float64) string { return m.init(f32, []int64{int64(len(v))}, v) }
	empty := func(m *ocModel) string { return m.init(f32, []int64{0}, nil) }
	return []ocCase{
		{name: "Resize10", opset: 10, build: func(m *ocModel) {
			x := m.in(f32, 1, 2, 3, 5)
			m.op("Resize", ins(x, fl(m, 1, 1, 2, 2.5)))
			m.op("Resize", ins(x, fl(m, 1, 1, 0.7, 0.5)), aS("mode", "linear"))
		}},
		{name: "Resize11", opset: 11, build: func(m *ocModel) {
			x := m.in(f32, 1, 2, 3, 5)
			m.op("Resize", ins(x, empty(m), fl(m, 1, 1, 1.5, 0.5)))
			m.op("Resize", ins(x, empty(m), fl(m, 1, 1, 2.6, 1.7)), aS("mode", "linear"))
			m.op("Resize", ins(x, empty(m), empty(m), m.ints(1, 2, 7, 4)))
			m.op("Resize", ins(x, fl(m, 0, 0, 0, 0, 1, 1, 1, 1), fl(m, 1, 1, 2, 2)), aS("coordinate_transformation_mode", "tf_crop_and_resize"))
		}},
		{name: "Resize13", opset: 13, run: map[string]int64{"N": 2}, build: func(m *ocModel) {
			x := m.in(f32, "N", 2, 3, 5)
			m.op("Resize", ins(x, "", fl(m, 1, 1, 2, 3)))
			m.op("Resize", ins(x, "", fl(m, 1, 1, 0.7, 0.3)), aS("mode", "cubic"))
			m.op("Resize", ins(m.in(f32, 1, 2, 3, 5), "", "", m.ints(1, 2, 4, 4)))
			m.op("Resize", ins(m.in(f32, 2, 4), "", fl(m, 1.5, 2)))
			m.loose(m.op("Resize", ins(x, "", "", m.inData(i64, []float64{2, 2, 4, 4}, 4))))
		}},
		{name: "Resize18", opset: 18, build: func(m *ocModel) {
			x := m.in(f32, 1, 2, 3, 5)
			m.op("Resize", ins(x, "", fl(m, 2, 0.6)), aIs("axes", 2, 3))
			m.op("Resize", ins(x, "", fl(m, 2)), aIs("axes", -1))
			m.op("Resize", ins(x, "", "", m.ints(6, 4)), aIs("axes", 2, 3))
			m.op("Resize", ins(x, "", "", m.ints(5, 5)), aIs("axes", 2, 3), aS("keep_aspect_ratio_policy", "not_larger"))
			m.op("Resize", ins(x, "", "", m.ints(5, 5)), aIs("axes", 2, 3), aS("keep_aspect_ratio_policy", "not_smaller"))
			m.op("Resize", ins(x, "", "", m.ints(1, 2, 4, 4)), aS("keep_aspect_ratio_policy", "not_larger"))
			m.op("Resize", ins(x, "", "", m.ints(1, 2, 4, 4)), aS("keep_aspect_ratio_policy", "not_smaller"))
			m.op("Resize", ins(x, "", "", m.ints(7)), aIs("axes", 3), aS("keep_aspect_ratio_policy", "not_larger"))
		}},
		{name: "Resize19", opset: 19, build: func(m *ocModel) {
			x := m.in(f32, 1, 2, 6, 5)
			m.op("Resize", ins(x, "", fl(m, 1, 1, 0.5, 0.5)), aS("mode", "linear"), aI("antialias", 1))
			m.op("Resize", ins(x, "", fl(m, 1, 1, 2, 2)), aS("coordinate_transformation_mode", "half_pixel_symmetric"))
		}},
		{name: "Upsample7", opset: 7, build: func(m *ocModel) {
			m.op("Upsample", ins(m.in(f32, 1, 2, 3, 5)), aFs("scales", 1, 1, 2, 3))
			m.op("Upsample", ins(m.in(f32, 1, 2, 3, 5)), aFs("scales", 1, 1, 2, 2), aS("mode", "linear"))
		}},
		{name: "Upsample9", opset: 9, build: func(m *ocModel) {
			m.op("Upsample", ins(m.in(f32, 1, 2, 3, 5), fl(m, 1, 1, 2, 1.5)))
		}},
		{name: "Einsum", opset: 12, build: func(m *ocModel) {
			a, b := m.in(f32, 3, 4), m.in(f32, 4, 5)
			m.op("Einsum", ins(a, b), aS("equation", "ij,jk->ik"))
			m.op("Einsum", ins(a, b), aS("equation", "ij,jk"))
			m.op("Einsum", ins(m.in(f32, 2, 3, 4), m.in(f32, 2, 4, 5)), aS("equation", "bij,bjk->bik"))
			m.op("Einsum", ins(m.in(f32, 2, 1, 3, 4), m.in(f32, 1, 5, 4, 6)), aS("equation", "...ij,...jk->...ik"))
			m.op("Einsum", ins(m.in(f32, 2, 1, 3, 4), m.in(f32, 2, 5, 4, 6)), aS("equation", "...ij,...jk"))
			m.op("Einsum", ins(m.in(f32, 3, 3)), aS("equation", "ii->i"))
			m.op("Einsum", ins(m.in(f32, 2, 3, 3)), aS("equation", "...ii->...i"))
			m.op("Einsum", ins(a), aS("equation", "ij->"))
			m.op("Einsum", ins(a), aS("equation", "ji"))
			m.op("Einsum", ins(a), aS("equation", "ij->ji"))
			m.op("Einsum", ins(m.in(f32, 3), m.in(f32, 5)), aS("equation", "i,j->ij"))
			m.op("Einsum", ins(a, m.in(f32, 3, 4)), aS("equation", "ij,ij"))
			m.op("Einsum", ins(a, m.in(f32, 3, 4)), aS("equation", "ij,ij->i"))
			m.op("Einsum", ins(m.in(f32, 2, 4, 3, 8), m.in(f32, 2, 4, 5, 8)), aS("equation", "bhid,bhjd->bhij"))
			m.op("Einsum", ins(m.in(f32, 2, 3, 4)), aS("equation", "b i j -> b j i"))
			m.op("Einsum", ins(m.in(f32, 2, 3, 4), m.in(f32, 4)), aS("equation", "...j,j->..."))
			m.op("Einsum", ins(m.in(f32, 2, 3), m.in(f32, 3, 4), m.in(f32, 4, 5)), aS("equation", "ab,bc,cd->ad"))
			m.op("Einsum", ins(m.in(f32, 4, 2, 3), m.in(f32, 3)), aS("equation", "k...j,j"))
		}},
		{name: "EinsumEllipsisRanks", opset: 12, ortRejects: "Ellipsis represents incompatible dimensions", build: func(m *ocModel) {
			m.op("Einsum", ins(m.in(f32, 2, 1, 3, 4), m.in(f32, 5, 4, 6)), aS("equation", "...ij,...jk->...ik"))
		}},
		{name: "Dropout7", opset: 7, build: func(m *ocModel) {
			m.opN("Dropout", ins(m.in(f32, 2, 3)), 2)
		}},
		{name: "Dropout10", opset: 10, build: func(m *ocModel) {
			m.opN("Dropout", ins(m.in(f32, 2, 3)), 2, aF("ratio", 0.3))
		}},
		{name: "Dropout13", opset: 13, build: func(m *ocModel) {
			x := m.in(f32, 2, 3)
			m.opN("Dropout", ins(x), 2)
			m.opN("Dropout", ins(x, m.scalarF(0.2)), 2)
			m.opN("Dropout", ins(x, m.scalarF(0.2), m.init(bool_, []int64{}, []float64{1})), 2)
			m.op("Dropout", ins(m.in(f16, 4)))
		}},
		{name: "DepthSpaceSymbolic", opset: 13, run: map[string]int64{"N": 2, "H": 3}, build: func(m *ocModel) {
			x := m.in(f32, "N", 8, "H", 2)
			m.loose(m.op("DepthToSpace", ins(x), aI("blocksize", 2)))
			m.loose(m.op("SpaceToDepth", ins(m.in(f32, "N", 2, 4, 6)), aI("blocksize", 2)))
		}},
	}
}

func ocRecurrent() []ocCase {
	type rc struct {
		op    string
		gates int64
	}
	var cases []ocCase
	for _, r := range []rc{{"RNN", 1}, {"GRU", 3}, {"LSTM", 4}} {
		nout := 2
		if r.op == "LSTM" {
			nout = 3
		}
		const seq, batch, in, hid = 5, 2, 3, 4
		cases = append(cases,
			ocCase{name: r.op, opset: 14, build: func(m *ocModel) {
				x := m.in(f32, seq, batch, in)
				for _, dir := range []string{"forward", "reverse", "bidirectional"} {
					d := int64(1)
					if dir == "bidirectional" {
						d = 2
					}
					w, rr := m.weight(f32, d, r.gates*hid, in), m.weight(f32, d, r.gates*hid, hid)
					m.opN(r.op, ins(x, w, rr), nout, aI("hidden_size", hid), aS("direction", dir))
					bias := m.weight(f32, d, 2*r.gates*hid)
					lens := m.init(i32, []int64{batch}, []float64{5, 3})
					h0 := m.weight(f32, d, batch, hid)
					inputs := ins(x, w, rr, bias, lens, h0)
					if r.op == "LSTM" {
						inputs = append(inputs, m.weight(f32, d, batch, hid), m.weight(f32, d, 3*hid))
					}
					m.opN(r.op, inputs, nout, aI("hidden_size", hid), aS("direction", dir))
				}
				// Only some outputs.
				m.opN(r.op, ins(x, m.weight(f32, 1, r.gates*hid, in), m.weight(f32, 1, r.gates*hid, hid)), 2, aI("hidden_size", hid))
				m.skipOut(0)
				m.opN(r.op, ins(x, m.weight(f32, 1, r.gates*hid, in), m.weight(f32, 1, r.gates*hid, hid)), 1, aI("hidden_size", hid))
			}},
			ocCase{name: r.op + "Layout1", opset: 14, ortRejects: "Batchwise recurrent operations (layout == 1) are not supported", build: func(m *ocModel) {
				xb := m.in(f32, batch, seq, in)
				m.opN(r.op, ins(xb, m.weight(f32, 2, r.gates*hid, in), m.weight(f32, 2, r.gates*hid, hid)), nout,
					aI("hidden_size", hid), aS("direction", "bidirectional"), aI("layout", 1))
			}},
			ocCase{name: r.op + "7", opset: 7, run: map[string]int64{"S": 4, "B": 3}, build: func(m *ocModel) {
				x := m.in(f32, "S", "B", in)
				m.opN(r.op, ins(x, m.weight(f32, 1, r.gates*hid, in), m.weight(f32, 1, r.gates*hid, hid)), nout, aI("hidden_size", hid))
			}},
		)
	}
	// Dims X leaves unknown come from the other inputs: batch from initial_h (X's batch
	// symbolic) or sequence_lens, and all but seq when X's rank is unknown.
	cases = append(cases, ocCase{name: "RecurrentDimsFromOtherInputs", opset: 14, run: map[string]int64{"B": 2},
		anon: []string{"rnn"}, build: func(m *ocModel) {
			const in, hid = 3, 4
			x := m.in(f32, 5, "B", in)
			m.opN("LSTM", ins(x, m.weight(f32, 1, 4*hid, in), m.weight(f32, 1, 4*hid, hid), "", "", m.weight(f32, 1, 2, hid)), 3,
				aI("hidden_size", hid))
			lens := m.init(i32, []int64{2}, []float64{5, 3})
			m.opN("GRU", ins(x, m.weight(f32, 1, 3*hid, in), m.weight(f32, 1, 3*hid, hid), "", lens), 2, aI("hidden_size", hid))
			xu := m.inUnranked(f32, 5, 2, in)
			m.opN("RNN", ins(xu, m.weight(f32, 1, hid, in), m.weight(f32, 1, hid, hid), "", "", m.weight(f32, 1, 2, hid)), 2,
				aI("hidden_size", hid))
		}, check: func(t ocT, m *Model) {
			for prefix, want := range map[string]string{"lstm": "[5,1,2,4] [1,2,4] [1,2,4]", "gru": "[5,1,2,4] [1,2,4]", "rnn": "[?,1,2,4] [1,2,4]"} {
				n := ocNodeOf(t, m, strings.ToUpper(prefix))
				var got []string
				for _, o := range n.Outputs {
					got = append(got, m.Graph.Tensors[o].Shape.String())
				}
				if strings.Join(got, " ") != want {
					t.Errorf("%s outputs %v, want %s", n.OpType, got, want)
				}
			}
		}})
	cases = append(cases, ocCase{name: "GRULinearBeforeReset", opset: 14, build: func(m *ocModel) {
		m.opN("GRU", ins(m.in(f32, 5, 2, 3), m.weight(f32, 1, 12, 3), m.weight(f32, 1, 12, 4)), 2, aI("hidden_size", 4), aI("linear_before_reset", 1))
	}})
	return cases
}

func ocQuant() []ocCase {
	return []ocCase{
		{name: "Quant10", opset: 10, build: func(m *ocModel) {
			x := m.in(f32, 2, 3)
			m.op("QuantizeLinear", ins(x, m.scalarF(0.1)))
			m.op("QuantizeLinear", ins(x, m.scalarF(0.1), m.init(i8, []int64{}, []float64{1})))
			m.op("DequantizeLinear", ins(m.in(u8, 2, 3), m.scalarF(0.1), m.init(u8, []int64{}, []float64{3})))
			m.op("DequantizeLinear", ins(m.in(i32, 4), m.scalarF(0.1)))
		}},
		{name: "Quant13", opset: 13, build: func(m *ocModel) {
			x := m.in(f32, 2, 3, 4)
			m.op("QuantizeLinear", ins(x, m.weight(f32, 3), m.init(u8, []int64{3}, []float64{1, 2, 3})))
			m.op("QuantizeLinear", ins(x, m.weight(f32, 4), m.init(i8, []int64{4}, []float64{1, 2, 3, 4})), aI("axis", -1))
			m.op("DequantizeLinear", ins(m.in(i8, 2, 3, 4), m.weight(f32, 3), m.init(i8, []int64{3}, []float64{1, 2, 3})))
			m.op("DequantizeLinear", ins(m.in(u8, 2, 3, 4), m.weight(f32, 2)), aI("axis", 0))
		}},
		{name: "Quant19", opset: 19, build: func(m *ocModel) {
			x := m.in(f16, 2, 3)
			m.op("QuantizeLinear", ins(x, m.init(f16, []int64{}, []float64{0.5})))
			m.op("QuantizeLinear", ins(m.in(f32, 2, 3), m.scalarF(0.5), m.init(i8, []int64{}, []float64{0})))
			m.op("DequantizeLinear", ins(m.in(u8, 2, 3), m.init(f16, []int64{}, []float64{0.5})))
			m.op("DequantizeLinear", ins(m.in(i8, 2, 3), m.scalarF(0.5)))
		}},
		{name: "Quant21", opset: 21, build: func(m *ocModel) {
			x := m.in(f32, 2, 4)
			m.op("QuantizeLinear", ins(x, m.weight(f32, 2, 2)), aI("block_size", 2), aI("axis", 1))
			m.op("QuantizeLinear", ins(x, m.scalarF(0.5)), aI("output_dtype", int64(i8)))
			m.op("QuantizeLinear", ins(x, m.scalarF(0.5), m.init(graph.Uint16, []int64{}, []float64{0})))
			m.op("QuantizeLinear", ins(x, m.scalarF(0.5), m.init(graph.Int16, []int64{}, []float64{0})))
			m.op("DequantizeLinear", ins(m.in(i8, 2, 4), m.weight(f32, 2, 2)), aI("block_size", 2), aI("axis", 1))
			m.op("DequantizeLinear", ins(m.in(graph.Int16, 2, 4), m.scalarF(0.5)))
		}},
		// ORT 1.30 fails at run time on a DequantizeLinear whose output_dtype differs from its
		// scale's type (it writes floats into the fp16 output).
		{name: "DequantOutputDtype", opset: 23, ortRejects: "MutableData", build: func(m *ocModel) {
			m.op("DequantizeLinear", ins(m.in(u8, 2, 4), m.scalarF(0.5)), aI("output_dtype", int64(f16)))
		}, check: func(t ocT, m *Model) {
			if dt := ocTensorNamed(t, m, "dequantizelinear").DType; dt != f16 {
				t.Errorf("DequantizeLinear output_dtype float16: inferred %s", dt)
			}
		}},
		{name: "Quant23", opset: 23, build: func(m *ocModel) {
			m.op("DequantizeLinear", ins(m.in(u8, 2, 4), m.scalarF(0.5)), aI("output_dtype", int64(f32)))
			m.op("DequantizeLinear", ins(m.in(i8, 2, 4), m.init(f16, []int64{}, []float64{0.5})))
			m.op("QuantizeLinear", ins(m.in(f32, 2, 4), m.scalarF(0.5)), aI("output_dtype", int64(u8)))
			m.op("QuantizeLinear", ins(m.in(f32, 2, 4), m.scalarF(0.5), m.init(i8, []int64{}, []float64{0})), aI("output_dtype", int64(i8)))
		}},
		{name: "DynamicQuantize", opset: 11, run: map[string]int64{"N": 3}, build: func(m *ocModel) {
			m.opN("DynamicQuantizeLinear", ins(m.in(f32, "N", 4)), 3)
			m.opN("DynamicQuantizeLinear", ins(m.in(f32, 5)), 3)
		}},
		{name: "QLinear", opset: 10, build: func(m *ocModel) {
			sa, za := m.scalarF(0.1), m.init(u8, []int64{}, []float64{2})
			m.op("QLinearMatMul", ins(m.in(u8, 2, 3, 4), sa, za, m.weight(u8, 4, 5), sa, za, sa, za))
			m.op("QLinearMatMul", ins(m.in(i8, 3, 4), sa, m.init(i8, []int64{}, []float64{0}), m.weight(i8, 4, 5), sa, m.init(i8, []int64{}, []float64{0}), sa, m.init(i8, []int64{}, []float64{0})))
			m.op("QLinearConv", ins(m.in(u8, 1, 2, 5, 5), sa, za, m.weight(u8, 3, 2, 3, 3), sa, za, sa, za), aIs("pads", 1, 1, 1, 1), aIs("strides", 2, 2))
			m.op("QLinearConv", ins(m.in(u8, 1, 2, 5, 5), sa, za, m.weight(u8, 3, 2, 3, 3), sa, za, sa, za, m.weight(i32, 3)))
		}},
	}
}

// ocCaptured checks that the first node of op captures the tensors named (by prefix).
func ocCaptured(op string, prefixes ...string) func(t ocT, m *Model) {
	return func(t ocT, m *Model) {
		n := ocNodeOf(t, m, op)
		deps := map[int]bool{}
		for _, d := range n.Deps() {
			deps[d] = true
		}
		for _, p := range prefixes {
			id := ocTensorNamed(t, m, p).ID
			found := false
			for _, c := range n.Captures {
				found = found || c == id
			}
			if !found || !deps[id] {
				t.Errorf("%s does not capture %s (captures %v)", op, p, n.Captures)
			}
			cons := m.Graph.Tensors[id].Consumers
			isCons := false
			for _, c := range cons {
				isCons = isCons || c == n.ID
			}
			if !isCons {
				t.Errorf("%s is not a consumer of %s", op, p)
			}
		}
	}
}

func ocControl() []ocCase {
	return []ocCase{
		// If whose branches read outer-scope tensors, with and without declared shapes.
		{name: "IfCapture", opset: 13, check: ocCaptured("If", "relu", "w_"), build: func(m *ocModel) {
			x := m.in(f32, 2, 3)
			r := m.op("Relu", ins(x))
			w := m.weight(f32, 3)
			th := m.sub()
			a := th.op("Add", ins(r, w))
			th.out(a, f32, []any{2, 3})
			el := m.sub()
			b := el.op("Mul", ins(r, w))
			el.out(b, f32, []any{2, 3})
			m.op("If", ins(m.inData(bool_, []float64{1})), aG("then_branch", th.g), aG("else_branch", el.g))
		}},
		{name: "IfUndeclared", opset: 13, check: ocCaptured("If", "relu"), build: func(m *ocModel) {
			x := m.in(f32, 2, 3)
			r := m.op("Relu", ins(x))
			th := m.sub()
			th.out(th.op("Sigmoid", ins(r)), f32, nil)
			th.out(th.op("Shape", ins(r)), i64, nil)
			el := m.sub()
			el.out(el.op("Tanh", ins(r)), f32, nil)
			el.out(el.op("Shape", ins(el.op("Transpose", ins(r)))), i64, nil)
			m.opN("If", ins(m.inData(bool_, []float64{0})), 2, aG("then_branch", th.g), aG("else_branch", el.g))
		}},
		{name: "IfDifferentShapes", opset: 13, anon: []string{"if"}, build: func(m *ocModel) {
			x := m.in(f32, 2, 3)
			th := m.sub()
			th.out(th.op("Identity", ins(x)), f32, nil)
			el := m.sub()
			el.out(el.op("Transpose", ins(x)), f32, nil)
			m.op("If", ins(m.inData(bool_, []float64{1})), aG("then_branch", th.g), aG("else_branch", el.g))
		}},
		// A for-loop (constant trip count, cond kept true): a carried value, a scan output, and
		// a capture from the outer graph.
		{name: "LoopCapture", opset: 13, check: ocCaptured("Loop", "relu"), build: func(m *ocModel) {
			x := m.in(f32, 2, 3)
			r := m.op("Relu", ins(x))
			body := m.sub()
			body.subIn(i64)
			cin := body.subIn(bool_)
			v := body.subIn(f32, 2, 3)
			cout := body.op("Identity", ins(cin))
			vout := body.op("Add", ins(v, r))
			scan := body.op("ReduceMax", ins(vout), aIs("axes", 1), aI("keepdims", 0))
			body.out(cout, bool_, []any{})
			body.out(vout, f32, []any{2, 3})
			body.out(scan, f32, []any{2})
			m.opN("Loop", ins(m.scalarI(4), m.init(bool_, []int64{}, []float64{1}), x), 2, aG("body", body.g))
		}},
		{name: "LoopNoCond", opset: 13, build: func(m *ocModel) {
			x := m.in(f32, 2, 3)
			body := m.sub()
			body.subIn(i64)
			cin := body.subIn(bool_)
			v := body.subIn(f32, 2, 3)
			body.out(body.op("Identity", ins(cin)), bool_, []any{})
			vout := body.op("Neg", ins(v))
			body.out(vout, f32, []any{2, 3})
			body.out(body.op("Identity", ins(vout)), f32, []any{2, 3})
			m.opN("Loop", ins(m.scalarI(3), "", x), 2, aG("body", body.g))
		}},
		// A while-loop: the trip count depends on run-time data, so the scan output's first dim
		// is unknown.
		{name: "LoopWhile", opset: 13, anon: []string{"loop"}, build: func(m *ocModel) {
			x := m.in(f32, 2, 3)
			body := m.sub()
			it := body.subIn(i64)
			body.subIn(bool_)
			v := body.subIn(f32, 2, 3)
			body.out(body.op("Less", ins(it, body.scalarI(2))), bool_, []any{})
			body.out(body.op("Identity", ins(v)), f32, []any{2, 3})
			body.out(body.op("Identity", ins(it)), i64, []any{})
			m.opN("Loop", ins("", m.inData(bool_, []float64{1}), x), 2, aG("body", body.g))
		}},
		// A loop-carried value that grows each iteration: its final shape is not the initial one.
		{name: "LoopGrowing", opset: 13, anon: []string{"loop"}, build: func(m *ocModel) {
			x := m.in(f32, 1, 3)
			body := m.sub()
			body.subIn(i64)
			cin := body.subIn(bool_)
			v := body.subIn(f32, 1, 3)
			body.out(body.op("Identity", ins(cin)), bool_, []any{})
			body.out(body.op("Concat", ins(v, v), aI("axis", 0)), f32, nil)
			m.op("Loop", ins(m.scalarI(3), m.init(bool_, []int64{}, []float64{1}), x), aG("body", body.g))
		}},
		// A condition known before run time selects the branch, values included.
		{name: "IfConstCond", opset: 13, build: func(m *ocModel) {
			x := m.in(f32, 2, 3)
			th := m.sub()
			th.out(th.op("Shape", ins(x)), i64, nil)
			el := m.sub()
			el.out(el.op("Shape", ins(el.op("Flatten", ins(x), aI("axis", 0)))), i64, nil)
			cond := m.op("Greater", ins(m.op("Size", ins(x)), m.scalarI(3)))
			r := m.op("If", ins(cond), aG("then_branch", th.g), aG("else_branch", el.g))
			m.op("Reshape", ins(m.in(f32, 6), r))
		}},
		{name: "Scan", opset: 11, run: map[string]int64{"T": 5}, build: func(m *ocModel) {
			body := m.sub()
			st := body.subIn(f32, 3)
			xs := body.subIn(f32, 3)
			next := body.op("Add", ins(st, xs))
			body.out(next, f32, []any{3})
			body.out(body.op("Unsqueeze", ins(next), aIs("axes", 0)), f32, nil)
			m.opN("Scan", ins(m.in(f32, 3), m.in(f32, 3, "T")), 2, aG("body", body.g), aI("num_scan_inputs", 1),
				aIs("scan_input_axes", 1), aIs("scan_output_axes", -1))
			body2 := m.sub()
			xs2 := body2.subIn(f32, 3)
			body2.out(body2.op("Neg", ins(xs2)), f32, nil)
			m.op("Scan", ins(m.in(f32, 4, 3)), aG("body", body2.g), aI("num_scan_inputs", 1), aIs("scan_input_directions", 1))
		}},
		// An If nested in a Loop body reads a tensor of the main graph: the Loop captures it.
		{name: "NestedCapture", opset: 13, check: ocCaptured("Loop", "relu"), build: func(m *ocModel) {
			x := m.in(f32, 2, 3)
			r := m.op("Relu", ins(x))
			body := m.sub()
			body.subIn(i64)
			cin := body.subIn(bool_)
			v := body.subIn(f32, 2, 3)
			th := body.sub()
			th.out(th.op("Add", ins(v, r)), f32, []any{2, 3})
			el := body.sub()
			el.out(el.op("Sub", ins(v, r)), f32, []any{2, 3})
			body.out(body.op("Identity", ins(cin)), bool_, []any{})
			body.out(body.op("If", ins(cin), aG("then_branch", th.g), aG("else_branch", el.g)), f32, []any{2, 3})
			m.op("Loop", ins(m.scalarI(2), m.init(bool_, []int64{}, []float64{1}), x), aG("body", body.g))
		}},
	}
}

// ocChains builds the shape-computation patterns exporters emit, on x of shape [N, S, 64].
// loose marks the sizes that are arithmetic on unknown dims (S·64, S/2) when N and S are
// unbound: they cannot be named.
func ocChains(m *ocModel, loose func(names ...string) string) {
	x := m.in(f32, "N", "S", 64)
	s := m.op("Shape", ins(x))
	// Shape→Gather→Unsqueeze→Concat→Reshape (split heads).
	n := m.op("Gather", ins(s, m.scalarI(0)))
	sq := m.op("Gather", ins(s, m.scalarI(1)))
	target := m.op("Concat", ins(m.op("Unsqueeze", ins(n, m.ints(0))), m.op("Unsqueeze", ins(sq, m.ints(0))), m.ints(4, -1)), aI("axis", 0))
	heads := m.op("Transpose", ins(m.op("Reshape", ins(x, target))), aIs("perm", 0, 2, 1, 3))
	// ... and back: [N, S, 64] from the same values.
	back := m.op("Concat", ins(m.op("Unsqueeze", ins(n, m.ints(0))), m.op("Unsqueeze", ins(sq, m.ints(0))), m.ints(64)), aI("axis", 0))
	m.op("Reshape", ins(m.op("Transpose", ins(heads), aIs("perm", 0, 2, 1, 3)), back))
	// Shape→Slice→Concat→Expand.
	lead := m.op("Slice", ins(s, m.ints(0), m.ints(2)))
	m.op("Expand", ins(m.weight(f32, 64), m.op("Concat", ins(lead, m.ints(64)), aI("axis", 0))))
	m.op("Expand", ins(m.weight(f32, 1, 1), m.op("Concat", ins(lead, m.ints(1)), aI("axis", 0))))
	// Range over a folded size: positions [S], a causal mask [S, S].
	pos := m.op("Range", ins(m.scalarI(0), sq, m.scalarI(1)))
	row := m.op("Unsqueeze", ins(pos, m.ints(0)))
	col := m.op("Unsqueeze", ins(pos, m.ints(1)))
	mask := m.op("LessOrEqual", ins(row, col))
	m.op("Where", ins(mask, m.scalarF(0), m.scalarF(-1e9)))
	m.op("Gather", ins(m.weight(f32, 128, 8), pos))
	// ConstantOfShape and Size, arithmetic on dims (S·64, S/2 through floats).
	m.op("ConstantOfShape", ins(s))
	m.op("Size", ins(x))
	flat := m.op("Mul", ins(sq, m.scalarI(64)))
	loose(m.op("Reshape", ins(x, m.op("Concat", ins(m.op("Unsqueeze", ins(n, m.ints(0))), m.op("Unsqueeze", ins(flat, m.ints(0)))), aI("axis", 0)))))
	half := m.op("Cast", ins(m.op("Floor", ins(m.op("Div", ins(m.op("Cast", ins(sq), aI("to", int64(f32))), m.scalarF(2)))))), aI("to", int64(i64)))
	loose(m.op("Slice", ins(x, m.op("Unsqueeze", ins(half, m.ints(0))), m.ints(math.MaxInt64), m.ints(1))))
	// Shape of a Shape, Equal on shapes, Where choosing dims.
	m.op("Shape", ins(s))
	eq := m.op("Equal", ins(s, m.ints(1, 1, 64)))
	loose(m.op("Reshape", ins(x, m.op("Where", ins(eq, m.ints(1, 1, 64), s)))))
	m.op("Tile", ins(x, m.op("Concat", ins(m.ints(1), m.op("Div", ins(m.ints(2), m.ints(2))), m.ints(2)), aI("axis", 0))))
}

func ocFolding() []ocCase {
	return []ocCase{
		// Folding of small integer values, negative operands included (the harness compares
		// every folded value with ORT's).
		{name: "IntFold", opset: 14, build: func(m *ocModel) {
			a, b := m.ints(-7, 7, -7, 7, 0), m.ints(2, -2, -2, 2, 3)
			for _, op := range []string{"Add", "Sub", "Mul", "Div", "Mod", "Max", "Min", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"} {
				m.op(op, ins(a, b))
			}
			m.op("Mod", ins(a, b), aI("fmod", 1))
			m.op("Mod", ins(m.init(i32, []int64{3}, []float64{-5, 5, 4}), m.init(i32, []int64{1}, []float64{-3})))
			m.op("Neg", ins(a))
			m.op("Abs", ins(a))
			m.op("Sign", ins(a))
			m.op("Relu", ins(m.op("Cast", ins(a), aI("to", int64(i32)))))
			m.op("Max", ins(a, b, m.scalarI(1)))
			m.op("Where", ins(m.op("Less", ins(a, b)), a, b))
			m.op("Cast", ins(m.init(f32, []int64{4}, []float64{2.7, -2.7, 0.5, -0.5})), aI("to", int64(i64)))
			m.op("Cast", ins(m.init(f32, []int64{3}, []float64{2.5, 0, -1})), aI("to", int64(bool_)))
			m.op("Cast", ins(a), aI("to", int64(bool_)))
			m.op("Cast", ins(a), aI("to", int64(i32)))
			m.op("Cast", ins(m.op("Round", ins(m.init(f32, []int64{4}, []float64{2.5, 3.5, -2.5, 1.4})))), aI("to", int64(i64)))
			m.op("Cast", ins(m.op("Ceil", ins(m.op("Div", ins(m.init(f32, []int64{2}, []float64{7, -7}), m.scalarF(2)))))), aI("to", int64(i64)))
			m.op("ReduceSum", ins(a), aI("keepdims", 0))
			m.op("ReduceProd", ins(b))
			m.op("ReduceMin", ins(a))
			m.op("Gather", ins(a, m.ints(-1, 0, 2)))
			m.op("Slice", ins(a, m.ints(-1), m.ints(math.MinInt64), m.ints(0), m.ints(-2)))
			m.op("Slice", ins(a, m.ints(1), m.ints(math.MaxInt64)))
			m.op("Concat", ins(a, b, m.op("Squeeze", ins(m.op("Unsqueeze", ins(a, m.ints(0))), m.ints(0)))), aI("axis", 0))
			m.op("Not", ins(m.op("Equal", ins(a, b))))
			m.op("And", ins(m.op("Less", ins(a, b)), m.op("Greater", ins(a, m.scalarI(-10)))))
			m.op("Expand", ins(m.ints(3), m.ints(2, 2)))
			m.op("Tile", ins(m.ints(1, 2), m.ints(2)))
			m.op("ConstantOfShape", ins(m.ints(3)), aT("value", ocTensor(i64, []int64{1}, []float64{-4})))
			m.op("Reshape", ins(a, m.ints(5, 1)))
			m.op("Identity", ins(b))
			m.op("Size", ins(a))
			m.op("Range", ins(m.scalarI(-3), m.scalarI(4), m.scalarI(2)))
		}},
		// Inputs of unknown rank: whatever inference claims must still hold.
		{name: "Unranked", opset: 13, build: func(m *ocModel) {
			x := m.inUnranked(f32, 2, 3, 4)
			for _, op := range []string{"Relu", "Shape", "Size", "Flatten", "Softmax", "Transpose", "Squeeze", "NonZero", "GlobalAveragePool"} {
				m.loose(m.op(op, ins(x)))
			}
			m.loose(m.op("Concat", ins(x, m.in(f32, 2, 3, 5)), aI("axis", -1)))
			m.loose(m.op("MatMul", ins(x, m.weight(f32, 4, 6))))
			m.loose(m.op("Reshape", ins(x, m.ints(4, -1))))
			m.loose(m.op("Unsqueeze", ins(x, m.ints(0))))
			m.loose(m.op("ReduceMax", ins(x), aI("keepdims", 0)))
			m.loose(m.op("ReduceMax", ins(x), aIs("axes", 1)))
			m.loose(m.op("Gather", ins(x, m.scalarI(0))))
			m.loose(m.op("Slice", ins(x, m.ints(0), m.ints(1))))
			m.loose(m.op("Add", ins(x, m.in(f32, 4))))
			m.loose(m.op("Expand", ins(x, m.ints(2, 1, 1))))
			m.loose(m.op("Tile", ins(x, m.ints(1, 2, 1))))
			m.loose(m.op("Pad", ins(x, m.ints(0, 0, 1, 0, 0, 1))))
			m.loose(m.op("Conv", ins(x, m.weight(f32, 2, 3, 1))))
			m.loose(m.opN("Split", ins(x), 2, aI("axis", 2))...)
			m.loose(m.opN("TopK", ins(x, m.ints(1)), 2)...)
			m.loose(m.op("ArgMax", ins(x)))
			m.loose(m.op("Cast", ins(x), aI("to", int64(i64))))
			m.loose(m.op("Resize", ins(x, "", m.init(f32, []int64{3}, []float64{1, 1, 2}))))
			m.loose(m.op("Einsum", ins(x), aS("equation", "abc->cb")))
			m.loose(m.op("Where", ins(m.loose(m.op("Greater", ins(x, m.scalarF(0)))), x, m.scalarF(0))))
		}},
		// Tensors with a zero-size dimension.
		{name: "Empty", opset: 13, build: func(m *ocModel) {
			x := m.in(f32, 2, 3)
			z := m.op("Slice", ins(x, m.ints(0), m.ints(0), m.ints(1))) // [2,0]
			m.op("Concat", ins(z, x), aI("axis", 1))
			m.op("Reshape", ins(z, m.ints(-1)))
			m.op("Reshape", ins(z, m.ints(0, -1)))
			m.op("Size", ins(z))
			m.op("Shape", ins(z))
			m.op("MatMul", ins(z, m.op("Slice", ins(m.in(f32, 3, 4), m.ints(0), m.ints(0), m.ints(0)))))
			m.op("ReduceSum", ins(z, m.ints(1)))
			m.op("Relu", ins(z))
			m.op("Add", ins(z, m.in(f32, 1, 1)))
			m.op("Transpose", ins(z))
			m.op("Gather", ins(x, m.init(i64, []int64{0}, nil)), aI("axis", 1))
			m.op("Unsqueeze", ins(z, m.ints(0)))
			m.op("Expand", ins(m.in(f32, 1, 1), m.ints(0, 4)))
			m.op("ConstantOfShape", ins(m.ints(0, 3)))
			m.op("Range", ins(m.scalarI(3), m.scalarI(3), m.scalarI(1)))
			m.op("Tile", ins(x, m.ints(0, 1)))
			m.op("Pad", ins(z, m.ints(0, 1, 0, 1)))
			m.op("Flatten", ins(z))
		}},
		{name: "ChainsBound", opset: 13, bind: map[string]int64{"N": 2, "S": 6}, build: func(m *ocModel) {
			ocChains(m, func(names ...string) string { return names[0] })
		}},
		{name: "ChainsUnbound", opset: 13, run: map[string]int64{"N": 2, "S": 6}, build: func(m *ocModel) {
			ocChains(m, m.loose)
		}},
	}
}

// ocExtra covers less common operators that ORT implements.
func ocExtra() []ocCase {
	return []ocCase{
		{name: "AffineGrid", opset: 20, build: func(m *ocModel) {
			m.op("AffineGrid", ins(m.in(f32, 2, 2, 3), m.ints(2, 3, 4, 5)))
			m.op("AffineGrid", ins(m.in(f32, 2, 3, 4), m.ints(2, 3, 4, 5, 6)), aI("align_corners", 1))
		}},
		{name: "CenterCropPad", opset: 18, build: func(m *ocModel) {
			x := m.in(f32, 4, 5, 3)
			m.op("CenterCropPad", ins(x, m.ints(6, 2, 3)))
			m.op("CenterCropPad", ins(x, m.ints(2, 7)), aIs("axes", 0, -2))
		}},
		{name: "GridSample", opset: 16, build: func(m *ocModel) {
			m.op("GridSample", ins(m.in(f32, 2, 3, 5, 6), m.in(f32, 2, 4, 7, 2)))
		}},
		{name: "GridSample20", opset: 20, build: func(m *ocModel) {
			m.op("GridSample", ins(m.in(f32, 2, 3, 5, 6), m.in(f32, 2, 4, 7, 2)), aS("mode", "linear"))
			m.op("GridSample", ins(m.in(f32, 1, 2, 3, 4, 5), m.in(f32, 1, 6, 7, 8, 3)))
		}},
		{name: "Col2Im", opset: 18, build: func(m *ocModel) {
			m.op("Col2Im", ins(m.in(f32, 1, 2*2*3, 9), m.ints(4, 5), m.ints(2, 3)))
			m.op("Col2Im", ins(m.in(f32, 2, 3*2*2, 4), m.ints(5, 5), m.ints(2, 2)), aIs("strides", 2, 2), aIs("pads", 0, 0, 0, 0), aIs("dilations", 2, 2))
		}},
		{name: "STFT", opset: 17, build: func(m *ocModel) {
			sig := m.in(f32, 2, 64, 1)
			m.op("STFT", ins(sig, m.scalarI(8), m.op("HannWindow", ins(m.scalarI(16)))))
			m.op("STFT", ins(sig, m.scalarI(8), "", m.scalarI(16)), aI("onesided", 0))
			m.op("STFT", ins(m.in(f32, 1, 50, 2), m.scalarI(10), m.weight(f32, 20)), aI("onesided", 0))
		}},
		{name: "DFT17", opset: 17, build: func(m *ocModel) {
			x := m.in(f32, 2, 10, 1)
			m.op("DFT", ins(x))
			m.op("DFT", ins(x), aI("onesided", 1))
			m.op("DFT", ins(x, m.scalarI(16)))
			m.op("DFT", ins(m.in(f32, 2, 10, 2)), aI("inverse", 1))
			m.op("DFT", ins(m.in(f32, 3, 4, 6, 1)), aI("axis", 2), aI("onesided", 1))
		}},
		{name: "DFT20", opset: 20, build: func(m *ocModel) {
			x := m.in(f32, 2, 10, 1)
			m.op("DFT", ins(x))
			m.op("DFT", ins(x, m.scalarI(16)))
			m.op("DFT", ins(m.in(f32, 3, 4, 6, 1), "", m.scalarI(2)), aI("onesided", 1))
			m.op("DFT", ins(m.in(f32, 3, 4, 6, 2), m.scalarI(5), m.scalarI(-3)))
		}},
		{name: "Windows", opset: 17, build: func(m *ocModel) {
			m.op("HannWindow", ins(m.scalarI(10)))
			m.op("HammingWindow", ins(m.scalarI(7)), aI("periodic", 0))
			m.op("BlackmanWindow", ins(m.init(i32, []int64{}, []float64{5})), aI("output_datatype", int64(f64)))
			m.op("MelWeightMatrix", ins(m.scalarI(8), m.scalarI(64), m.scalarI(16000), m.scalarF(0), m.scalarF(8000)))
		}},
		{name: "MaxUnpool", opset: 11, build: func(m *ocModel) {
			y := m.opN("MaxPool", ins(m.in(f32, 1, 2, 6, 7)), 2, aIs("kernel_shape", 2, 2), aIs("strides", 2, 2))
			m.op("MaxUnpool", ins(y[0], y[1], m.ints(1, 2, 6, 7)), aIs("kernel_shape", 2, 2), aIs("strides", 2, 2))
			y = m.opN("MaxPool", ins(m.in(f32, 1, 2, 6, 6)), 2, aIs("kernel_shape", 2, 2), aIs("strides", 2, 2))
			m.op("MaxUnpool", ins(y[0], y[1]), aIs("kernel_shape", 2, 2), aIs("strides", 2, 2))
			y = m.opN("MaxPool", ins(m.in(f32, 1, 1, 4, 4)), 2, aIs("kernel_shape", 2, 2), aIs("strides", 2, 2))
			m.op("MaxUnpool", ins(y[0], y[1]), aIs("kernel_shape", 3, 3), aIs("strides", 2, 2), aIs("pads", 1, 0, 0, 1))
		}},
		{name: "RoiAlign", opset: 16, build: func(m *ocModel) {
			x := m.in(f32, 2, 3, 8, 8)
			rois := m.init(f32, []int64{4, 4}, []float64{0, 0, 3, 3, 1, 1, 4, 4, 0, 0, 7, 7, 2, 2, 5, 5})
			bi := m.init(i64, []int64{4}, []float64{0, 1, 0, 1})
			m.op("RoiAlign", ins(x, rois, bi))
			m.op("RoiAlign", ins(x, rois, bi), aI("output_height", 3), aI("output_width", 2))
			m.op("MaxRoiPool", ins(x, m.init(f32, []int64{2, 5}, []float64{0, 0, 0, 3, 3, 1, 1, 1, 4, 4})), aIs("pooled_shape", 2, 3))
		}},
		{name: "Unique", opset: 11, anon: []string{"unique"}, build: func(m *ocModel) {
			m.opN("Unique", ins(m.inData(f32, []float64{1, 2, 2, 3, 1, 5}, 2, 3)), 4)
			m.opN("Unique", ins(m.inData(f32, []float64{1, 2, 1, 2, 3, 5}, 3, 2)), 4, aI("axis", 0))
			m.opN("Unique", ins(m.inData(i64, []float64{4, 4, 1}, 3)), 2, aI("sorted", 0))
		}},
		{name: "Det", opset: 11, build: func(m *ocModel) {
			m.op("Det", ins(m.in(f32, 3, 3)))
			m.op("Det", ins(m.in(f32, 2, 4, 3, 3)))
		}},
		{name: "NonMaxSuppression", opset: 11, anon: []string{"nonmaxsuppression"}, build: func(m *ocModel) {
			boxes := m.init(f32, []int64{1, 3, 4}, []float64{0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, 5, 1, 6})
			scores := m.init(f32, []int64{1, 1, 3}, []float64{0.9, 0.8, 0.7})
			m.op("NonMaxSuppression", ins(boxes, scores, m.ints(3), m.init(f32, []int64{1}, []float64{0.5})))
			m.op("NonMaxSuppression", ins(m.in(f32, 2, 5, 4), m.in(f32, 2, 3, 5)))
		}},
		{name: "Losses", opset: 13, build: func(m *ocModel) {
			sc := m.in(f32, 3, 5, 2)
			lab := m.inData(i64, []float64{0, 1, 2, 3, 4, 0}, 3, 2)
			m.opN("SoftmaxCrossEntropyLoss", ins(sc, lab), 2)
			m.opN("SoftmaxCrossEntropyLoss", ins(sc, lab, m.weight(f32, 5)), 2, aS("reduction", "none"))
			m.op("SoftmaxCrossEntropyLoss", ins(sc, lab), aS("reduction", "sum"))
			m.op("NegativeLogLikelihoodLoss", ins(sc, lab))
			m.op("NegativeLogLikelihoodLoss", ins(sc, lab), aS("reduction", "none"))
			m.op("NegativeLogLikelihoodLoss", ins(m.in(f32, 3, 5), m.inData(i64, []float64{0, 1, 2}, 3)), aS("reduction", "none"))
		}},
		{name: "DeformConv", opset: 19, build: func(m *ocModel) {
			x := m.in(f32, 1, 2, 5, 5)
			m.op("DeformConv", ins(x, m.weight(f32, 3, 2, 3, 3), m.in(f32, 1, 18, 3, 3)))
			m.op("DeformConv", ins(x, m.weight(f32, 3, 2, 3, 3), m.in(f32, 1, 18, 3, 3), m.weight(f32, 3)), aIs("pads", 1, 1, 1, 1), aIs("strides", 2, 2))
		}},
		{name: "Attention23", opset: 23, build: func(m *ocModel) {
			q, k, v := m.in(f32, 2, 4, 5, 8), m.in(f32, 2, 4, 6, 8), m.in(f32, 2, 4, 6, 7)
			m.op("Attention", ins(q, k, v))
			m.opN("Attention", ins(q, k, v, "", m.in(f32, 2, 4, 3, 8), m.in(f32, 2, 4, 3, 7)), 4)
			m.op("Attention", ins(m.in(f32, 2, 5, 32), m.in(f32, 2, 6, 16), m.in(f32, 2, 6, 12)), aI("q_num_heads", 4), aI("kv_num_heads", 2))
			m.op("Attention", ins(q, m.in(f32, 2, 2, 6, 8), m.in(f32, 2, 2, 6, 7)), aI("is_causal", 1))
		}},
		{name: "RotaryEmbedding23", opset: 23, build: func(m *ocModel) {
			pos := m.inData(i64, []float64{0, 1, 2, 0, 1, 2}, 2, 3)
			m.op("RotaryEmbedding", ins(m.in(f32, 2, 4, 3, 8), m.weight(f32, 16, 4), m.weight(f32, 16, 4), pos))
			m.op("RotaryEmbedding", ins(m.in(f32, 2, 3, 32), m.weight(f32, 16, 4), m.weight(f32, 16, 4), pos), aI("num_heads", 4))
		}},
		{name: "TensorScatter24", opset: 24, build: func(m *ocModel) {
			m.op("TensorScatter", ins(m.in(f32, 2, 3, 8, 4), m.in(f32, 2, 3, 1, 4), m.inData(i64, []float64{0, 2}, 2)))
			m.op("Swish", ins(m.in(f32, 2, 3)))
		}},
		{name: "Sequences", opset: 14, build: func(m *ocModel) {
			a, b := m.in(f32, 2, 3), m.in(f32, 2, 3)
			seq := m.op("SequenceConstruct", ins(a, b))
			m.op("SequenceAt", ins(seq, m.scalarI(1)))
			m.op("SequenceLength", ins(seq))
			m.op("ConcatFromSequence", ins(seq), aI("axis", 0))
			m.op("ConcatFromSequence", ins(seq), aI("axis", -1), aI("new_axis", 1))
			sp := m.op("SplitToSequence", ins(m.in(f32, 6, 4), m.ints(1, 5)))
			m.op("SequenceLength", ins(sp))
			m.loose(m.op("SequenceAt", ins(sp, m.scalarI(-1))))
			sp2 := m.op("SplitToSequence", ins(m.in(f32, 6, 4)), aI("axis", 1), aI("keepdims", 0))
			m.op("SequenceAt", ins(sp2, m.scalarI(0)))
			m.op("SequenceLength", ins(sp2))
			ins2 := m.op("SequenceInsert", ins(seq, m.in(f32, 2, 3)))
			m.op("SequenceLength", ins(ins2))
			m.op("SequenceLength", ins(m.op("SequenceErase", ins(ins2, m.scalarI(0)))))
			m.op("SequenceLength", ins(m.op("SequenceEmpty", nil)))
			m.op("SequenceAt", ins(m.op("Identity", ins(seq)), m.scalarI(0)))
		}},
		{name: "Optional", opset: 18, build: func(m *ocModel) {
			x := m.in(f32, 2, 3)
			o := m.op("Optional", ins(x))
			m.op("OptionalHasElement", ins(o))
			m.op("OptionalGetElement", ins(o))
			m.op("OptionalGetElement", ins(x))
		}},
		{name: "Microsoft", opset: 17, build: func(m *ocModel) {
			m.opsets["com.microsoft"] = 1
			x := m.in(f32, 2, 3, 8)
			ms := func(op string, inputs []string, n int, attrs ...*onnxpb.AttributeProto) []string {
				return m.opD("com.microsoft", op, inputs, n, attrs...)
			}
			ms("FusedMatMul", ins(x, m.weight(f32, 8, 5)), 1)
			ms("FusedMatMul", ins(x, m.in(f32, 2, 4, 3)), 1, aI("transA", 1), aI("transB", 1))
			ms("Gelu", ins(x), 1)
			ms("FastGelu", ins(x, m.weight(f32, 8)), 1)
			ms("BiasGelu", ins(x, m.weight(f32, 8)), 1)
			ms("QuickGelu", ins(x), 1)
			ms("SkipLayerNormalization", ins(x, m.in(f32, 2, 3, 8), m.weight(f32, 8), m.weight(f32, 8), m.weight(f32, 8)), 4)
			ms("SkipSimplifiedLayerNormalization", ins(x, m.in(f32, 2, 3, 8), m.weight(f32, 8)), 4)
			ms("FusedGemm", ins(m.in(f32, 3, 4), m.weight(f32, 4, 5), m.weight(f32, 5)), 1, aS("activation", "Relu"))
			ms("FusedConv", ins(m.in(f32, 1, 2, 5, 5), m.weight(f32, 3, 2, 3, 3)), 1, aS("activation", "Relu"), aIs("pads", 1, 1, 1, 1))
			ms("FusedConv", ins(m.in(f32, 1, 2, 5, 5), m.weight(f32, 3, 2, 3, 3)), 1, aS("activation", "Relu"), aIs("strides", 2, 2))
			m.opN("SimplifiedLayerNormalization", ins(x, m.weight(f32, 8)), 2)
			m.opN("SimplifiedLayerNormalization", ins(x, m.weight(f32, 3, 8)), 2, aI("axis", 1))
			ms("SkipLayerNormalization", ins(x, m.in(f32, 2, 3, 8), m.weight(f32, 8)), 1)
			ms("SkipLayerNormalization", ins(m.in(f16, 2, 3, 8), m.in(f16, 2, 3, 8), m.weight(f16, 8), m.weight(f16, 8)), 4)
		}},
		{name: "Strings", opset: 20, build: func(m *ocModel) {
			s := m.op("Cast", ins(m.in(f32, 2, 3)), aI("to", int64(graph.String)))
			m.op("StringNormalizer", ins(m.op("Reshape", ins(s, m.ints(-1)))), aS("case_change_action", "UPPER"), aS("locale", "C"))
			m.op("RegexFullMatch", ins(s), aS("pattern", "1.*"))
			m.op("StringConcat", ins(s, s))
			m.loose(m.opN("StringSplit", ins(s), 2, aS("delimiter", "."))...)
		}},
	}
}
