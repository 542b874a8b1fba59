package ingest

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// TestDataPropagation checks, against ONNX Runtime (see opcov_harness_test.go), that small
// integer tensors keep their values through the element-moving ops at any rank, and that
// exporter patterns built from them fold into shapes.
func TestDataPropagation(t *testing.T) {
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
	for _, c := range dataPropCases() {
		t.Run(c.name, func(t *testing.T) { runOCCase(t, c) })
	}
}

// fpadPattern is PyTorch's export of F.pad(x, (0, pw, 0, ph)) that pads the last two axes of
// x up to multiples of 8 (as image models do before a patch embedding): the pads are a
// Concat of the last-axis-first pairs, turned into ONNX's begin…end order by Reshape[-1,2] →
// Slice(step −1) → Transpose → Reshape[-1] → Cast.
func fpadPattern(m *ocModel, x string) string {
	s := m.op("Shape", ins(x))
	padTo := func(axis int64) string { // (8 − d mod 8) mod 8, as a 1-D tensor
		d := m.op("Gather", ins(s, m.scalarI(axis)))
		p := m.op("Mod", ins(m.op("Sub", ins(m.scalarI(8), m.op("Mod", ins(d, m.scalarI(8))))), m.scalarI(8)))
		return m.op("Unsqueeze", ins(p, m.ints(0)))
	}
	pairs := m.op("Concat", ins(m.ints(0), padTo(3), m.ints(0), padTo(2)), aI("axis", 0))
	full := m.op("Concat", ins(pairs, m.op("ConstantOfShape", ins(m.ints(4)), aT("value", ocTensor(i64, []int64{1}, []float64{0})))), aI("axis", 0))
	rows := m.op("Reshape", ins(full, m.ints(-1, 2)))
	rev := m.op("Slice", ins(rows, m.ints(-1), m.ints(math.MinInt64+1), m.ints(0), m.ints(-1)))
	cols := m.op("Transpose", ins(rev), aIs("perm", 1, 0))
	pads := m.op("Cast", ins(m.op("Reshape", ins(cols, m.ints(-1)))), aI("to", int64(i64)))
	return m.op("Pad", ins(x, pads))
}

func dataPropCases() []ocCase {
	return []ocCase{
		{name: "FPadStatic", opset: 13, build: func(m *ocModel) {
			fpadPattern(m, m.in(f32, 1, 3, 13, 21))
		}},
		{name: "FPadBound", opset: 13, bind: map[string]int64{"H": 30, "W": 17}, build: func(m *ocModel) {
			fpadPattern(m, m.in(f32, 1, 3, "H", "W"))
		}},
		{name: "FPadOpset18", opset: 18, build: func(m *ocModel) {
			fpadPattern(m, m.in(f32, 2, 1, 8, 3))
		}},
		// The same pattern inside nested If branches (as a voice-activity model has it): the
		// branches' Pads, and so the Ifs' outputs, have known shapes.
		{name: "FPadInIf", opset: 13, build: func(m *ocModel) {
			x := m.in(f32, 1, 3, 13, 21)
			inner := m.sub()
			inner.out(fpadPattern(inner.ocModel, x), f32, nil)
			innerElse := m.sub()
			innerElse.out(innerElse.op("Pad", ins(x, innerElse.ints(0, 0, 0, 0, 0, 0, 3, 3))), f32, nil)
			th := m.sub()
			th.out(th.op("If", ins(m.inData(bool_, []float64{1})), aG("then_branch", inner.g), aG("else_branch", innerElse.g)), f32, nil)
			el := m.sub()
			el.out(fpadPattern(el.ocModel, x), f32, nil)
			m.op("If", ins(m.inData(bool_, []float64{0})), aG("then_branch", th.g), aG("else_branch", el.g))
		}},
		// Every element-moving op on 2-D and 3-D integer values taken from a shape.
		{name: "Rank2Values", opset: 13, build: func(m *ocModel) {
			s := m.op("Shape", ins(m.in(f32, 2, 3, 4, 5, 6, 7)))
			v := m.op("Reshape", ins(s, m.ints(2, 3))) // [[2,3,4],[5,6,7]]
			v3 := m.op("Reshape", ins(s, m.ints(3, 1, 2)))
			m.op("Transpose", ins(v))
			m.op("Transpose", ins(v3), aIs("perm", 2, 0, 1))
			m.op("Slice", ins(v, m.ints(-1, 2), m.ints(math.MinInt64, -100), m.ints(0, 1), m.ints(-1, -2)))
			m.op("Slice", ins(v3, m.ints(1), m.ints(math.MaxInt64), m.ints(-1)))
			m.op("Gather", ins(v, m.ints(2, 0)), aI("axis", 1))
			m.op("Gather", ins(v, m.init(i64, []int64{2, 2}, []float64{0, -1, 1, 0})))
			m.op("Gather", ins(v3, m.scalarI(-1)), aI("axis", 2))
			m.op("Gather", ins(v3, m.scalarI(1)), aI("axis", 0))
			m.op("Gather", ins(v3, m.init(i64, []int64{2, 1}, []float64{0, -1})), aI("axis", 1))
			m.op("Gather", ins(v, m.scalarI(1)))
			m.op("GatherElements", ins(v, m.init(i64, []int64{2, 2}, []float64{2, 0, -1, 1})), aI("axis", 1))
			m.op("GatherElements", ins(v, m.init(i64, []int64{1, 3}, []float64{1, 0, 1})))
			m.op("Concat", ins(v, v), aI("axis", 1))
			m.op("Concat", ins(v3, v3, v3), aI("axis", -1))
			m.opN("Split", ins(v, m.ints(1, 2)), 2, aI("axis", 1))
			m.opN("Split", ins(v3), 3)
			m.op("Tile", ins(v, m.ints(2, 2)))
			m.op("Flatten", ins(v3), aI("axis", 2))
			m.op("ReduceSum", ins(v, m.ints(1)), aI("keepdims", 0))
			m.op("ReduceSum", ins(v3, m.ints(0, 2)))
			m.op("ReduceProd", ins(v), aI("keepdims", 0))
			m.op("ReduceProd", ins(v3), aIs("axes", 1))
			m.op("Max", ins(v, m.ints(4, 4, 4), m.scalarI(3)))
			m.op("Min", ins(v, m.init(i64, []int64{2, 1}, []float64{3, 6})))
			m.op("Equal", ins(v, m.op("Reshape", ins(m.op("Transpose", ins(v)), m.ints(2, 3)))))
			m.op("Where", ins(m.op("Greater", ins(v, m.scalarI(4))), v, m.ints(0, 1, 2)))
			m.op("Expand", ins(v, m.ints(2, 2, 3)))
			m.op("Mul", ins(m.op("Neg", ins(v)), m.op("Abs", ins(m.op("Sub", ins(m.scalarI(3), v))))))
			m.op("Div", ins(v, m.init(i64, []int64{2, 1}, []float64{2, -3})))
			m.op("Cast", ins(m.op("Transpose", ins(v))), aI("to", int64(i32)))
			m.op("Reshape", ins(m.in(f32, 7, 6, 5, 4, 3, 2), m.op("ReduceProd", ins(v), aIs("axes", 0), aI("keepdims", 0)))) // [10,18,28]
		}},
		// Symbolic dims keep their names through the same ops: the shapes built from them
		// (ConstantOfShape, Expand, Reshape) are compared with ORT's at run sizes.
		{name: "SymbolicValues", opset: 13, run: map[string]int64{"B": 2, "S": 5}, build: func(m *ocModel) {
			x := m.in(f32, "B", "S", 4)
			s := m.op("Shape", ins(x))
			v := m.op("Reshape", ins(m.op("Concat", ins(s, m.ints(1)), aI("axis", 0)), m.ints(2, 2))) // [[B,S],[4,1]]
			cols := m.op("Transpose", ins(v))                                                         // [[B,4],[S,1]]
			m.op("ConstantOfShape", ins(m.op("Reshape", ins(cols, m.ints(-1)))))
			m.op("ConstantOfShape", ins(m.op("Reshape", ins(m.op("Gather", ins(v, m.ints(1, 0)), aI("axis", 1)), m.ints(-1)))))
			m.op("Expand", ins(m.weight(f32, 1), m.op("Slice", ins(m.op("Reshape", ins(v, m.ints(-1))), m.ints(-3), m.ints(math.MinInt64), m.ints(0), m.ints(-2)))))
			m.op("ConstantOfShape", ins(m.op("ReduceProd", ins(v), aIs("axes", 1), aI("keepdims", 0)))) // [B*S, 4]
			m.op("ConstantOfShape", ins(m.op("ReduceSum", ins(m.op("Mul", ins(v, m.init(i64, []int64{2, 2}, []float64{1, 0, 0, 0}))), m.ints(0)), aI("keepdims", 0))))
			row := m.op("Slice", ins(v, m.ints(0), m.ints(1)))
			bs := m.op("Reshape", ins(m.op("Max", ins(row, row, m.op("Min", ins(row, row, row)))), m.ints(-1)))
			m.op("Reshape", ins(x, m.op("Concat", ins(bs, m.ints(4)), aI("axis", 0))))
			m.op("ConstantOfShape", ins(m.op("Reshape", ins(m.op("Tile", ins(m.op("Slice", ins(v, m.ints(0), m.ints(1))), m.ints(1, 2))), m.ints(-1)))))
			outs := m.opN("Split", ins(m.op("Reshape", ins(v, m.ints(-1))), m.ints(1, 3)), 2)
			m.op("Expand", ins(m.weight(f32, 1), outs[0]))
			m.op("ConstantOfShape", ins(m.op("Where", ins(m.op("Equal", ins(outs[0], outs[0])), outs[0], m.ints(3)))))
		}},
		// Symbolic dims through arithmetic: a KV cache (past + seq), merged axes (B*S), a
		// doubled batch; the harness evaluates every expression at the run sizes.
		{name: "SymbolicExpressions", opset: 13, run: map[string]int64{"B": 2, "past": 3, "seq": 4}, build: symbolicExpressions,
			check: func(t ocT, m *Model) {
				for prefix, want := range map[string]string{"concat_": "[B,2,past + seq,8]", "matmul_": "[B,2,seq,past + seq]",
					"add_": "[B,2,seq,past + seq]", "reshape_": "[B*seq,2,8]", "tile_": "[2*B,2,seq,8]", "range_": "[past + seq - 1]",
					"slice_": "[B,2,seq - 1,8]", "conv_": "[B,3,seq - 2,8]", "maxpool_": "[B,2,past + seq,8]",
					"convtranspose_": "[B,1,seq + 4,9]", "pad_": "[B,2,seq + 4,8]"} {
					if s := ocTensorNamed(t, m, prefix).Shape.String(); s != want {
						t.Errorf("%s*: shape %s, want %s", prefix, s, want)
					}
				}
			}},
		{name: "SymbolicExpressionsBound", opset: 13, bind: map[string]int64{"B": 2, "past": 3, "seq": 4}, build: symbolicExpressions,
			check: func(t ocT, m *Model) {
				if s := ocTensorNamed(t, m, "add_").Shape.String(); s != "[2,2,4,7]" {
					t.Errorf("bound: attention scores %s, want [2,2,4,7]", s)
				}
			}},
	}
}

func symbolicExpressions(m *ocModel) {
	past, q := m.in(f32, "B", 2, "past", 8), m.in(f32, "B", 2, "seq", 8)
	k := m.op("Concat", ins(past, q), aI("axis", 2))
	scores := m.op("MatMul", ins(q, m.op("Transpose", ins(k), aIs("perm", 0, 1, 3, 2))))
	s := m.op("Shape", ins(k))
	total := m.op("Gather", ins(s, m.scalarI(2))) // past + seq
	b := m.op("Gather", ins(s, m.scalarI(0)))
	mask := m.op("ConstantOfShape", ins(m.op("Concat", ins(m.op("Unsqueeze", ins(b, m.ints(0))), m.ints(1, 1), m.op("Unsqueeze", ins(total, m.ints(0)))), aI("axis", 0))))
	m.op("Add", ins(scores, mask))
	// [B, 2, seq, 8] → [B*seq, 2, 8] through arithmetic on the shape's values.
	qs := m.op("Shape", ins(q))
	bs := m.op("Mul", ins(m.op("Gather", ins(qs, m.ints(0))), m.op("Gather", ins(qs, m.ints(2)))))
	m.op("Reshape", ins(m.op("Transpose", ins(q), aIs("perm", 0, 2, 1, 3)), m.op("Concat", ins(bs, m.ints(2, 8)), aI("axis", 0))))
	m.op("Tile", ins(q, m.ints(2, 1, 1, 1)))
	m.op("Range", ins(m.scalarI(1), total, m.scalarI(1)))
	// 2*B / 2 is B again; seq − seq is 0.
	twoB := m.op("Mul", ins(b, m.scalarI(2)))
	m.op("Expand", ins(m.weight(f32, 1), m.op("Unsqueeze", ins(m.op("Div", ins(twoB, m.scalarI(2))), m.ints(0)))))
	m.op("ConstantOfShape", ins(m.op("Concat", ins(m.op("Sub", ins(m.op("Gather", ins(qs, m.ints(2))), m.op("Gather", ins(qs, m.ints(2))))), m.ints(3)), aI("axis", 0))))
	// Slices of symbolic axes: x[:, :, 1:], x[:, :, -2:], x[:, :, :-1], k[:, :, past:past + seq].
	m.op("Slice", ins(q, m.ints(1), m.ints(math.MaxInt64), m.ints(2)))
	m.op("Slice", ins(k, m.ints(-2), m.ints(math.MaxInt64), m.ints(2)))
	m.op("Slice", ins(q, m.ints(0), m.ints(-1), m.ints(-2)))
	pastLen := m.op("Unsqueeze", ins(m.op("Gather", ins(m.op("Shape", ins(past)), m.scalarI(2))), m.ints(0)))
	m.op("Slice", ins(k, pastLen, m.op("Unsqueeze", ins(total, m.ints(0))), m.ints(2), m.ints(1)))
	// Windows with stride 1 and pads over a symbolic axis.
	m.op("Conv", ins(q, m.weight(f32, 3, 2, 3, 1)))
	m.op("MaxPool", ins(k), aIs("kernel_shape", 2, 3), aIs("pads", 0, 1, 1, 1))
	m.op("ConvTranspose", ins(q, m.weight(f32, 2, 1, 3, 2)), aIs("dilations", 2, 1))
	m.op("Pad", ins(q, m.ints(0, 0, 1, 0, 0, 0, 3, 0)))
}

// TestDataPropagationMutated loads the data-propagation models with their integer constants
// (indices, axes, perms, starts, ends, steps, repeats, shapes) replaced at random: inference
// must report what is wrong as an error or a warning, never panic or index out of range.
func TestDataPropagationMutated(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	dir := t.TempDir()
	interesting := []int64{-3, -2, -1, 0, 1, 2, 3, 4, 7, math.MaxInt64, math.MinInt64, math.MaxInt32}
	n := 0
	for _, c := range dataPropCases() {
		base := newOCModel(c.opset)
		c.build(base)
		for iter := 0; iter < 150; iter++ {
			mp := proto.Clone(base.modelProto()).(*onnxpb.ModelProto)
			for _, init := range mp.Graph.Initializer {
				if init.GetDataType() != int32(graph.Int64) || rng.Intn(3) != 0 {
					continue
				}
				for i := 0; i+8 <= len(init.RawData); i += 8 {
					binary.LittleEndian.PutUint64(init.RawData[i:], uint64(interesting[rng.Intn(len(interesting))]))
				}
			}
			for _, nd := range mp.Graph.Node {
				for _, a := range nd.Attribute {
					if len(a.Ints) > 0 && rng.Intn(4) == 0 {
						a.Ints[rng.Intn(len(a.Ints))] = interesting[rng.Intn(6)]
					}
					if a.I != nil && rng.Intn(4) == 0 {
						a.I = proto.Int64(interesting[rng.Intn(6)])
					}
				}
			}
			b, err := proto.Marshal(mp)
			if err != nil {
				t.Fatal(err)
			}
			func() {
				defer func() {
					if r := recover(); r != nil {
						path := filepath.Join(dir, fmt.Sprintf("%s_%d.onnx", c.name, iter))
						os.WriteFile(path, b, 0o644)
						t.Fatalf("%s, mutation %d (%s): panic: %v\n%s", c.name, iter, path, r, debug.Stack())
					}
				}()
				_, err := loadBytes(filepath.Join(dir, "m.onnx"), b, Options{Dims: c.bind})
				if err != nil && !isInput(err) && !isUsage(err) {
					t.Errorf("%s, mutation %d: error of type %T: %v", c.name, iter, err, err)
				}
			}()
			n++
		}
	}
	t.Logf("%d mutated models", n)
}
