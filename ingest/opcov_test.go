package ingest

import (
	"math"
	"testing"

	"onnxpart/graph"
	"onnxpart/internal/ort"
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

func ocNorm() []ocCase       { return nil }
func ocMovement() []ocCase   { return nil }
func ocIndexing() []ocCase   { return nil }
func ocGenerators() []ocCase { return nil }
func ocReduce() []ocCase     { return nil }
func ocMisc() []ocCase       { return nil }
func ocRecurrent() []ocCase  { return nil }
func ocQuant() []ocCase      { return nil }
func ocControl() []ocCase    { return nil }
func ocFolding() []ocCase    { return nil }
func ocExtra() []ocCase      { return nil }

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
