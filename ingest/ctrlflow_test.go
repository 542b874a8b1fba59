package ingest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
)

// TestControlFlowCosts: If costs its costlier branch (with a note), Loop its body times a
// known trip count (once, with a note, when the count is unknown), Scan its body times the
// scanned length, and control flow nested in a body multiplies through.
func TestControlFlowCosts(t *testing.T) {
	const mm = 2 * 4 * 16 * 16 // MatMul [4,16]x[16,16]
	type want struct {
		flops int64
		note  string // a substring of a warning, "" for none
	}
	cases := []struct {
		name  string
		build func(m *ocModel)
		want  want
	}{
		{"If", func(m *ocModel) {
			x := m.in(f32, 4, 16)
			w := m.weight(f32, 16, 16)
			th := m.sub()
			th.out(th.op("MatMul", ins(th.op("MatMul", ins(x, w)), w)), f32, nil) // 2 MatMuls
			el := m.sub()
			el.out(el.op("Relu", ins(x)), f32, nil) // 64 FLOPs
			m.op("If", ins(m.in(bool_)), aG("then_branch", th.g), aG("else_branch", el.g))
		}, want{2 * mm, fmt.Sprintf("costlier branch: then_branch %d FLOPs, else_branch 64 FLOPs", 2*mm)}},
		{"LoopKnownTrips", func(m *ocModel) {
			x := m.in(f32, 4, 16)
			w := m.weight(f32, 16, 16)
			body := m.sub()
			body.subIn(i64)
			cin := body.subIn(bool_)
			v := body.subIn(f32, 4, 16)
			body.out(body.op("Identity", ins(cin)), bool_, []any{})
			body.out(body.op("MatMul", ins(v, w)), f32, []any{4, 16})
			m.op("Loop", ins(m.scalarI(5), m.init(bool_, []int64{}, []float64{1}), x), aG("body", body.g))
		}, want{5 * mm, ""}},
		{"LoopUnknownTrips", func(m *ocModel) {
			x := m.in(f32, 4, 16)
			w := m.weight(f32, 16, 16)
			body := m.sub()
			body.subIn(i64)
			cin := body.subIn(bool_)
			v := body.subIn(f32, 4, 16)
			body.out(body.op("Identity", ins(cin)), bool_, []any{})
			body.out(body.op("MatMul", ins(v, w)), f32, []any{4, 16})
			m.op("Loop", ins(m.in(i64), m.init(bool_, []int64{}, []float64{1}), x), aG("body", body.g))
		}, want{mm, fmt.Sprintf("trip count unknown, its body (%d FLOPs) counted once", mm)}},
		{"Scan", func(m *ocModel) {
			w := m.weight(f32, 16, 16)
			body := m.sub()
			st := body.subIn(f32, 4, 16)
			xs := body.subIn(f32, 4, 16)
			next := body.op("MatMul", ins(body.op("Add", ins(st, xs)), w)) // 64 + mm
			body.out(next, f32, []any{4, 16})
			body.out(body.op("Identity", ins(next)), f32, nil)
			m.opN("Scan", ins(m.in(f32, 4, 16), m.in(f32, 7, 4, 16)), 2, aG("body", body.g), aI("num_scan_inputs", 1))
		}, want{7 * (mm + 64), ""}},
		{"IfInLoop", func(m *ocModel) {
			x := m.in(f32, 4, 16)
			w := m.weight(f32, 16, 16)
			body := m.sub()
			body.subIn(i64)
			cin := body.subIn(bool_)
			v := body.subIn(f32, 4, 16)
			th := body.sub()
			th.out(th.op("MatMul", ins(v, w)), f32, []any{4, 16})
			el := body.sub()
			el.out(el.op("Neg", ins(v)), f32, []any{4, 16})
			body.out(body.op("Identity", ins(cin)), bool_, []any{})
			body.out(body.op("If", ins(cin), aG("then_branch", th.g), aG("else_branch", el.g)), f32, []any{4, 16})
			m.op("Loop", ins(m.scalarI(3), m.init(bool_, []int64{}, []float64{1}), x), aG("body", body.g))
		}, want{3 * mm, ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newOCModel(13)
			tc.build(m)
			p := filepath.Join(t.TempDir(), "m.onnx")
			ocWrite(t, p, m.modelProto())
			md, err := Load(p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got int64
			for _, n := range md.Graph.Nodes {
				if n.Subgraphs > 0 {
					got += n.FLOPs
				}
			}
			if got != tc.want.flops {
				t.Errorf("control-flow FLOPs %d, want %d", got, tc.want.flops)
			}
			if tc.want.note != "" && !strings.Contains(strings.Join(diag.NoteStrings(md.Notes), "\n"), tc.want.note) {
				t.Errorf("no note %q among the notes %q", tc.want.note, md.Notes)
			}
			if tc.want.note == "" && strings.Contains(strings.Join(diag.NoteStrings(md.Notes), "\n"), "counted once") {
				t.Errorf("unexpected note: %q", md.Notes)
			}
			if md.Graph.TotalFLOPs() < tc.want.flops {
				t.Errorf("TotalFLOPs %d < %d", md.Graph.TotalFLOPs(), tc.want.flops)
			}
		})
	}
}

// TestSubgraphWeightsAreParams: weights stored inside If branches (an initializer in one, a
// Constant in the other, as spox and some PyTorch exports write them) count in the model's
// params, the If node's ParamBytes and the partitioner's problem.
func TestSubgraphWeightsAreParams(t *testing.T) {
	m := newOCModel(13)
	x := m.in(f32, 4, 16)
	th := m.sub()
	w := th.weight(f32, 16, 16) // an initializer of the branch
	th.out(th.op("MatMul", ins(x, w)), f32, nil)
	el := m.sub()
	c := el.opD("", "Constant", nil, 1, aT("value", ocTensor(f32, []int64{16, 16}, make([]float64, 256))))[0]
	el.out(el.op("MatMul", ins(x, c)), f32, nil)
	m.op("If", ins(m.in(bool_)), aG("then_branch", th.g), aG("else_branch", el.g))
	p := filepath.Join(t.TempDir(), "m.onnx")
	ocWrite(t, p, m.modelProto())
	md, err := Load(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const want = 2 * 4 * 16 * 16
	if got := md.Summarize(false); got.Params != 2*16*16 || got.ParamsBytes != want {
		t.Errorf("summary: params %d (%d B), want %d (%d B)", got.Params, got.ParamsBytes, 2*16*16, want)
	}
	if got := md.Graph.ParamBytes(); got != want {
		t.Errorf("graph.ParamBytes = %d, want %d", got, want)
	}
	for _, n := range md.Graph.Nodes {
		if n.OpType == "If" && (n.ParamBytes != want || n.SubgraphParamBytes != want) {
			t.Errorf("If node: ParamBytes %d, SubgraphParamBytes %d, want %d", n.ParamBytes, n.SubgraphParamBytes, want)
		}
	}
}

// TestRequireKnownShapes: a model whose node outputs are mostly unknown although its inputs are
// bound (an op shape inference does not know feeds the rest) is refused with the node named;
// a model with known shapes passes.
func TestRequireKnownShapes(t *testing.T) {
	build := func(unknownOp bool) *Model {
		m := newOCModel(13)
		x := m.in(f32, 4, 16)
		if unknownOp {
			x = m.opD("com.example", "Mystery", ins(x), 1)[0]
		}
		for i := 0; i < 4; i++ {
			x = m.op("Relu", ins(x))
		}
		p := filepath.Join(t.TempDir(), "m.onnx")
		mp := m.modelProto()
		ocWrite(t, p, mp)
		md, err := Load(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return md
	}
	if err := build(false).RequireKnownShapes(); err != nil {
		t.Errorf("known shapes refused: %v", err)
	}
	unknown := build(true)
	if err := unknown.RequireKnownShapes(); err == nil || strings.Contains(err.Error(), "--") {
		t.Errorf("unknown shapes: %v, want an error naming no flag", err)
	}
	unknown.names = diag.Names{"AllowUnknownShapes": "--allow-unknown-shapes"} // the command's way past
	err := unknown.RequireKnownShapes()
	if !isUsage(err) {
		t.Fatalf("unknown shapes: got %v, want a usage *diag.Error", err)
	}
	for _, want := range []string{"5 of 5 nodes", "(Mystery)", "com.example.Mystery", "--allow-unknown-shapes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// loadOC writes an ocModel and loads it.
func loadOC(t *testing.T, m *ocModel) *Model {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.onnx")
	ocWrite(t, p, m.modelProto())
	md, err := Load(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// TestIfBranchThatCannotRun: when an If's condition is not known before run time but one
// branch cannot run with the shapes inference found (a node it computes an output with has a
// shape error), a run that succeeds takes the other branch, so the If's outputs are that
// branch's, with a warning. This holds through nested Ifs whose condition is known (a value
// folded from shapes, as in silero_vad v5's 8 kHz branch), not for a failing node whose result
// nothing reads. An If whose branch taken, or both branches, cannot run is a shape
// error of the main graph.
func TestIfBranchThatCannotRun(t *testing.T) {
	type want struct {
		shape       string // of the If's output 0
		warning     string // a substring of a warning, "" for none about the If
		shapeErrors string // a substring of the shape errors, "" for none
	}
	cases := []struct {
		name  string
		build func(m *ocModel)
		want  want
	}{
		{"ElseFails", func(m *ocModel) {
			x := m.in(f32, 2, 3)
			th := m.sub()
			th.out(th.op("Relu", ins(x)), f32, nil)
			el := m.sub()
			el.out(el.op("MatMul", ins(x, el.weight(f32, 4, 3))), f32, nil) // inner dims 3 and 4
			m.op("If", ins(m.in(bool_)), aG("then_branch", th.g), aG("else_branch", el.g))
		}, want{"[2,3]", "else_branch cannot run with these shapes; the outputs are then_branch's", ""}},
		{"ThenFails", func(m *ocModel) {
			x := m.in(f32, 2, 3)
			th := m.sub()
			th.out(th.op("Relu", ins(th.op("Add", ins(x, th.weight(f32, 4, 3))))), f32, nil) // [2,3] + [4,3]
			el := m.sub()
			el.out(el.op("Reshape", ins(x, m.ints(3, 2))), f32, nil)
			m.op("If", ins(m.in(bool_)), aG("then_branch", th.g), aG("else_branch", el.g))
		}, want{"[3,2]", "then_branch cannot run with these shapes; the outputs are else_branch's", ""}},
		{"NestedKnownCondition", func(m *ocModel) {
			// then: an LSTM on x [5,2,3]; else: an If on a known condition whose branch taken
			// runs the LSTM on x unsqueezed to rank 4, which cannot run.
			x := m.in(f32, 5, 2, 3)
			w, r := m.weight(f32, 1, 16, 3), m.weight(f32, 1, 16, 4)
			th := m.sub()
			th.out(th.opN("LSTM", ins(x, w, r), 2, aI("hidden_size", 4))[1], f32, nil)
			inner := m.sub()
			inner.out(inner.opN("LSTM", ins(inner.op("Unsqueeze", ins(x, m.ints(0))), w, r), 2, aI("hidden_size", 4))[1], f32, nil)
			innerEl := m.sub()
			innerEl.out(innerEl.op("Identity", ins(x)), f32, nil)
			el := m.sub()
			el.out(el.op("If", ins(m.init(bool_, []int64{}, []float64{1})), aG("then_branch", inner.g), aG("else_branch", innerEl.g)), f32, nil)
			m.op("If", ins(m.in(bool_)), aG("then_branch", th.g), aG("else_branch", el.g))
		}, want{"[1,2,4]", "else_branch cannot run with these shapes; the outputs are then_branch's", ""}},
		{"DeadFailingNode", func(m *ocModel) {
			x := m.in(f32, 2, 3)
			th := m.sub()
			th.out(th.op("Relu", ins(x)), f32, nil)
			el := m.sub()
			el.op("MatMul", ins(x, el.weight(f32, 4, 3))) // fails, but no output reads it
			el.out(el.op("Reshape", ins(x, m.ints(3, 2))), f32, nil)
			m.op("If", ins(m.in(bool_)), aG("then_branch", th.g), aG("else_branch", el.g))
		}, want{"[?,?]", "", ""}},
		{"BothFail", func(m *ocModel) {
			x := m.in(f32, 2, 3)
			th := m.sub()
			th.out(th.op("MatMul", ins(x, th.weight(f32, 4, 3))), f32, nil)
			el := m.sub()
			el.out(el.op("Add", ins(x, el.weight(f32, 4, 3))), f32, nil)
			m.op("If", ins(m.in(bool_)), aG("then_branch", th.g), aG("else_branch", el.g))
		}, want{"unknown", "", "neither branch can run with these shapes"}},
		{"TakenBranchFails", func(m *ocModel) {
			x := m.in(f32, 2, 3)
			th := m.sub()
			th.out(th.op("Relu", ins(x)), f32, nil)
			el := m.sub()
			el.out(el.op("MatMul", ins(x, el.weight(f32, 4, 3))), f32, nil)
			m.op("If", ins(m.init(bool_, []int64{}, []float64{0})), aG("then_branch", th.g), aG("else_branch", el.g))
		}, want{"unknown", "", "the else_branch it takes cannot run with these shapes"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newOCModel(13)
			tc.build(m)
			md := loadOC(t, m)
			var out *graph.Tensor
			for i := range md.Graph.Nodes {
				if n := &md.Graph.Nodes[i]; n.OpType == "If" {
					out = &md.Graph.Tensors[n.Outputs[0]]
				}
			}
			if got := out.Shape.String(); got != tc.want.shape {
				t.Errorf("If output shape %s, want %s", got, tc.want.shape)
			}
			warnings := strings.Join(md.Warnings, "\n")
			if tc.want.warning != "" && !strings.Contains(warnings, tc.want.warning) {
				t.Errorf("no warning %q among %q", tc.want.warning, md.Warnings)
			}
			if tc.want.warning == "" && strings.Contains(warnings, "cannot run with these shapes; the outputs") {
				t.Errorf("unexpected warning: %q", md.Warnings)
			}
			errs := strings.Join(md.ShapeErrors, "\n")
			if tc.want.shapeErrors == "" && errs != "" || !strings.Contains(errs, tc.want.shapeErrors) {
				t.Errorf("shape errors %q, want %q", md.ShapeErrors, tc.want.shapeErrors)
			}
		})
	}
}
