package ingest

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"onnxpart/graph"
	"onnxpart/internal/onnxpb"
	"onnxpart/internal/ort"
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
