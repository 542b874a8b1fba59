package ingest

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// ocRecorder records what the harness reports instead of failing the test.
type ocRecorder struct {
	t    *testing.T
	errs []string
}

type ocFatal struct{}

func (r *ocRecorder) Helper()         {}
func (r *ocRecorder) TempDir() string { return r.t.TempDir() }
func (r *ocRecorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *ocRecorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(ocFatal{})
}

func (r *ocRecorder) run(c ocCase) {
	defer func() {
		if e := recover(); e != nil {
			if _, ok := e.(ocFatal); !ok {
				panic(e)
			}
		}
	}()
	runOCCase(r, c)
}

func (r *ocRecorder) expect(what string) {
	r.t.Helper()
	for _, e := range r.errs {
		if strings.Contains(e, what) {
			return
		}
	}
	r.t.Errorf("harness did not report %q; it reported %q", what, r.errs)
}

// TestOpCoverageHarnessFails makes sure the harness reports wrong inference: a value_info
// that gives NonZero's data-dependent dim a wrong size (ingest adopts declared dims it cannot
// infer), and ORT results tampered with one at a time.
func TestOpCoverageHarnessFails(t *testing.T) {
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
	r := &ocRecorder{t: t}
	r.run(ocCase{name: "wrong", opset: 13, anon: []string{"nonzero"}, build: func(m *ocModel) {
		nz := m.op("NonZero", ins(m.inData(f32, []float64{1, 0, 1, 1, 0, 0}, 2, 3)))
		m.g.ValueInfo = append(m.g.ValueInfo, &onnxpb.ValueInfoProto{Name: proto.String(nz), Type: ocTensorType(i64, []any{2, 7})})
	}})
	r.expect("ORT shape [2 3], ingest [2,7]")

	// The same model without the lie passes.
	r = &ocRecorder{t: t}
	r.run(ocCase{name: "right", opset: 13, anon: []string{"nonzero"}, build: func(m *ocModel) {
		m.op("NonZero", ins(m.inData(f32, []float64{1, 0, 1, 1, 0, 0}, 2, 3)))
	}})
	if len(r.errs) > 0 {
		t.Errorf("correct model reported %q", r.errs)
	}
	// Without anon, the unknown dim is reported.
	r = &ocRecorder{t: t}
	r.run(ocCase{name: "strict", opset: 13, build: func(m *ocModel) {
		m.op("NonZero", ins(m.inData(f32, []float64{1, 0, 1, 1, 0, 0}, 2, 3)))
	}})
	r.expect("dim 1 unknown")

	// Tampered ORT results against a correct inference.
	c := ocCase{name: "fold", opset: 13, run: map[string]int64{"N": 2}, build: func(m *ocModel) {
		s := m.op("Shape", ins(m.in(f32, "N", 3)))
		m.op("Gather", ins(s, m.ints(1)))
	}}
	tamper := []struct {
		edit func(r *ocORTResult)
		want string
	}{
		{func(r *ocORTResult) { r.dt = graph.Int32 }, "ORT dtype int32"},
		{func(r *ocORTResult) { r.shape = []int64{3} }, "ORT shape [3]"},
		{func(r *ocORTResult) { r.shape = []int64{1, 1} }, "ORT shape [1 1]"},
		{func(r *ocORTResult) { r.value = []int64{4} }, "ORT value [4]"},
	}
	for _, tc := range tamper {
		r = &ocRecorder{t: t}
		cc := c
		cc.tamper = func(name string, res *ocORTResult) {
			if strings.HasPrefix(name, "gather") {
				tc.edit(res)
			}
		}
		r.run(cc)
		r.expect(tc.want)
	}
	// A symbolic dim must carry the run size of its symbol.
	r = &ocRecorder{t: t}
	cc := c
	cc.build = func(m *ocModel) { m.op("Relu", ins(m.in(f32, "N", 3))) }
	cc.tamper = func(name string, res *ocORTResult) { res.shape[0] = 7 }
	r.run(cc)
	r.expect("(N=2)")
}

// TestNestedLoopsBounded: loops nested inside loops multiply the passes inference makes over
// their bodies; the work stays bounded and the model still loads.
func TestNestedLoopsBounded(t *testing.T) {
	m := newOCModel(13)
	x := m.in(f32, 2, 3)
	var body func(depth int) *ocSub
	body = func(depth int) *ocSub {
		b := m.sub()
		b.subIn(i64)
		cin := b.subIn(bool_)
		v := b.subIn(f32, 2, 3)
		b.out(b.op("Identity", ins(cin)), bool_, []any{})
		cur := v
		for k := 0; k < 6 && depth < 5; k++ {
			inner := body(depth + 1)
			cur = b.op("Loop", ins(b.scalarI(2), "", cur), aG("body", inner.g))
		}
		b.out(b.op("Concat", ins(cur, v), aI("axis", 0)), f32, nil)
		return b
	}
	m.op("Loop", ins(m.scalarI(2), "", x), aG("body", body(0).g))
	path := t.TempDir() + "/nested.onnx"
	ocWrite(t, path, m.modelProto())
	// The work on nested bodies is capped (maxSubgraphWork); this model would take minutes
	// without the cap, so a test deadline catches its loss (no timing assertion here).
	im, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Too big to infer: the carried value that grows keeps no (wrong) shape.
	out := ocNodeOf(t, im, "Loop").Outputs[0]
	if s := im.Graph.Tensors[out].Shape; s != nil {
		t.Errorf("carried value that grows: shape %v, want unknown", s)
	}
}
