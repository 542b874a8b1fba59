package ort

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// addModel writes y = a + b for two tensors of dtype dt and shape dims (dims nil: scalars).
func addModel(t *testing.T, dt graph.DType, dims []int64) string {
	t.Helper()
	vi := func(name string) *onnxpb.ValueInfoProto {
		s := &onnxpb.TensorShapeProto{}
		for _, d := range dims {
			s.Dim = append(s.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
		}
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(dt)), Shape: s}}}}
	}
	m := &onnxpb.ModelProto{
		IrVersion:   proto.Int64(8),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: proto.Int64(17)}},
		Graph: &onnxpb.GraphProto{
			Name:   proto.String("add"),
			Input:  []*onnxpb.ValueInfoProto{vi("a"), vi("b")},
			Output: []*onnxpb.ValueInfoProto{vi("y")},
			Node:   []*onnxpb.NodeProto{{OpType: proto.String("Add"), Input: []string{"a", "b"}, Output: []string{"y"}}},
		},
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "add.onnx")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func needORT(t *testing.T) {
	t.Helper()
	if _, err := LibraryPath(); err != nil {
		t.Skip(err)
	}
}

func f32(vs ...float32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func TestRunFloat(t *testing.T) {
	needORT(t)
	s, err := NewSession(addModel(t, graph.Float, []int64{3}), []string{"a", "b"}, []string{"y"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := s.Run(map[string]*Tensor{
		"a": {DType: graph.Float, Shape: []int64{3}, Data: f32(1, 2, 3)},
		"b": {DType: graph.Float, Shape: []int64{3}, Data: f32(10, 20, 30)},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	y := out["y"]
	if y.DType != graph.Float || len(y.Shape) != 1 || y.Shape[0] != 3 || string(y.Data) != string(f32(11, 22, 33)) {
		t.Fatalf("y = %+v", y)
	}
	if y.Elements() != 3 {
		t.Errorf("Elements %d", y.Elements())
	}
}

// Scalars and float16 outputs must be preallocated from hints; the binding cannot return
// them otherwise. Without the hint the float16 run fails with a clear error.
func TestRunScalarAndFloat16(t *testing.T) {
	needORT(t)
	s, err := NewSession(addModel(t, graph.Int64, nil), []string{"a", "b"}, []string{"y"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	i64 := func(v int64) []byte { b := make([]byte, 8); binary.LittleEndian.PutUint64(b, uint64(v)); return b }
	out, err := s.Run(map[string]*Tensor{"a": {DType: graph.Int64, Data: i64(40)}, "b": {DType: graph.Int64, Data: i64(2)}},
		map[string]OutputHint{"y": {DType: graph.Int64, Shape: []int64{}}})
	if err != nil {
		t.Fatal(err)
	}
	if y := out["y"]; len(y.Shape) != 0 || int64(binary.LittleEndian.Uint64(y.Data)) != 42 {
		t.Fatalf("scalar y = %+v", y)
	}

	h, err := NewSession(addModel(t, graph.Float16, []int64{2}), []string{"a", "b"}, []string{"y"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	one, two := []byte{0x00, 0x3c}, []byte{0x00, 0x40} // 1.0, 2.0 in binary16
	feeds := map[string]*Tensor{
		"a": {DType: graph.Float16, Shape: []int64{2}, Data: append(append([]byte{}, one...), two...)},
		"b": {DType: graph.Float16, Shape: []int64{2}, Data: append(append([]byte{}, one...), one...)},
	}
	if _, err := h.Run(feeds, map[string]OutputHint{"y": {DType: graph.Float16}}); err == nil || !strings.Contains(err.Error(), "needs a known shape") {
		t.Errorf("float16 output without a shape: %v", err)
	}
	out, err = h.Run(feeds, map[string]OutputHint{"y": {DType: graph.Float16, Shape: []int64{2}}})
	if err != nil {
		t.Fatal(err)
	}
	if y := out["y"]; y.DType != graph.Float16 || string(y.Data) != string([]byte{0x00, 0x40, 0x00, 0x42}) { // 2.0, 3.0
		t.Fatalf("float16 y = %+v", y)
	}
}

func TestRunRejectsBadFeeds(t *testing.T) {
	needORT(t)
	s, err := NewSession(addModel(t, graph.Float, []int64{3}), []string{"a", "b"}, []string{"y"}, Options{Optimize: true, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Run(map[string]*Tensor{"a": {DType: graph.Float, Shape: []int64{3}, Data: f32(1, 2, 3)}}, nil); err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("missing input: %v", err)
	}
	bad := map[string]*Tensor{
		"a": {DType: graph.Float, Shape: []int64{3}, Data: f32(1, 2)},
		"b": {DType: graph.Float, Shape: []int64{3}, Data: f32(1, 2, 3)},
	}
	if _, err := s.Run(bad, nil); err == nil || !strings.Contains(err.Error(), "8 bytes for shape [3]") {
		t.Errorf("short data: %v", err)
	}
	if _, err := NewSession(filepath.Join(t.TempDir(), "none.onnx"), []string{"a"}, []string{"y"}, Options{}); err == nil {
		t.Error("a missing model loaded")
	}
	ins, outs, err := ModelIO(addModel(t, graph.Float, []int64{3}))
	if err != nil || len(ins) != 2 || len(outs) != 1 || ins[0].DType != graph.Float || ins[0].Shape[0] != 3 {
		t.Errorf("ModelIO: %+v %+v %v", ins, outs, err)
	}
}

func TestLibraryPathOverride(t *testing.T) {
	t.Setenv("ONNXPART_ORT_LIB", filepath.Join(t.TempDir(), "missing.so"))
	if _, err := LibraryPath(); err == nil || !strings.Contains(err.Error(), "ONNXPART_ORT_LIB") {
		t.Errorf("a missing override must be an error naming the variable: %v", err)
	}
}

// A prepared call gives the same outputs as Run, reads its inputs in place (a change to the
// caller's buffer shows in the next Run), writes its outputs in place, and allocates nothing
// in Go per call when every output is preallocated.
func TestPrepareMatchesRun(t *testing.T) {
	needORT(t)
	s, err := NewSession(addModel(t, graph.Float, []int64{1024}), []string{"a", "b"}, []string{"y"}, Options{Optimize: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	av, bv := make([]float32, 1024), make([]float32, 1024)
	for i := range av {
		av[i], bv[i] = float32(i)*0.5, float32(1024-i)
	}
	feeds := map[string]*Tensor{
		"a": {DType: graph.Float, Shape: []int64{1024}, Data: f32(av...)},
		"b": {DType: graph.Float, Shape: []int64{1024}, Data: f32(bv...)},
	}
	want, err := s.Run(feeds, nil)
	if err != nil {
		t.Fatal(err)
	}
	hint := map[string]OutputHint{"y": {DType: graph.Float, Shape: []int64{1024}}}
	for _, h := range []map[string]OutputHint{hint, nil} { // preallocated, then runtime-allocated
		b, err := s.Prepare(feeds, h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Output("y"); h == nil && err == nil {
			t.Error("an output of unknown shape read before any Run")
		}
		for range 2 {
			if err := b.Run(); err != nil {
				t.Fatal(err)
			}
			y, err := b.Output("y")
			if err != nil {
				t.Fatal(err)
			}
			if y.DType != graph.Float || len(y.Shape) != 1 || y.Shape[0] != 1024 || string(y.Data) != string(want["y"].Data) {
				t.Fatalf("hints %v: prepared y differs from Run's (%d bytes, shape %v)", h, len(y.Data), y.Shape)
			}
		}
		if _, err := b.Output("z"); err == nil || !strings.Contains(err.Error(), `"z"`) {
			t.Errorf("unknown output name: %v", err)
		}
		b.Close()
	}

	b, err := s.Prepare(feeds, hint)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// In place: set a[0] to 100 in the caller's buffer; y[0] = 100 + b[0] = 1124.
	binary.LittleEndian.PutUint32(feeds["a"].Data, math.Float32bits(100))
	if err := b.Run(); err != nil {
		t.Fatal(err)
	}
	y, _ := b.Output("y")
	if got := math.Float32frombits(binary.LittleEndian.Uint32(y.Data)); got != 1124 {
		t.Errorf("y[0] = %v after changing a[0] in place, want 1124", got)
	}
	if n := testing.AllocsPerRun(20, func() {
		if err := b.Run(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a prepared call with preallocated outputs allocates %v times per Run, want 0", n)
	}
}

// Prepare checks feeds as Run does; scalar and float16 outputs are preallocated from hints.
func TestPrepareScalarFloat16AndErrors(t *testing.T) {
	needORT(t)
	s, err := NewSession(addModel(t, graph.Int64, nil), []string{"a", "b"}, []string{"y"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	i64 := func(v int64) []byte { b := make([]byte, 8); binary.LittleEndian.PutUint64(b, uint64(v)); return b }
	b, err := s.Prepare(map[string]*Tensor{"a": {DType: graph.Int64, Data: i64(40)}, "b": {DType: graph.Int64, Data: i64(2)}},
		map[string]OutputHint{"y": {DType: graph.Int64, Shape: []int64{}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Run(); err != nil {
		t.Fatal(err)
	}
	if y, err := b.Output("y"); err != nil || len(y.Shape) != 0 || int64(binary.LittleEndian.Uint64(y.Data)) != 42 {
		t.Fatalf("scalar y = %+v, %v", y, err)
	}
	b.Close()

	h, err := NewSession(addModel(t, graph.Float16, []int64{2}), []string{"a", "b"}, []string{"y"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	feeds := map[string]*Tensor{
		"a": {DType: graph.Float16, Shape: []int64{2}, Data: []byte{0x00, 0x3c, 0x00, 0x40}}, // 1, 2
		"b": {DType: graph.Float16, Shape: []int64{2}, Data: []byte{0x00, 0x3c, 0x00, 0x3c}}, // 1, 1
	}
	if _, err := h.Prepare(feeds, map[string]OutputHint{"y": {DType: graph.Float16}}); err == nil || !strings.Contains(err.Error(), "needs a known shape") {
		t.Errorf("float16 output without a shape: %v", err)
	}
	b, err = h.Prepare(feeds, map[string]OutputHint{"y": {DType: graph.Float16, Shape: []int64{2}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Run(); err != nil {
		t.Fatal(err)
	}
	if y, _ := b.Output("y"); y == nil || y.DType != graph.Float16 || string(y.Data) != string([]byte{0x00, 0x40, 0x00, 0x42}) { // 2, 3
		t.Fatalf("float16 y = %+v", y)
	}
	if _, err := h.Prepare(map[string]*Tensor{"a": feeds["a"]}, nil); err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("missing input: %v", err)
	}
	short := map[string]*Tensor{"a": feeds["a"], "b": {DType: graph.Float16, Shape: []int64{2}, Data: []byte{0, 0}}}
	if _, err := h.Prepare(short, nil); err == nil || !strings.Contains(err.Error(), `input "b"`) {
		t.Errorf("short data: %v", err)
	}
	h.Close()
	if err := b.Run(); err == nil || !strings.Contains(err.Error(), "closed session") {
		t.Errorf("run after the session closed: %v", err)
	}
}

// concatModel writes a KV-cache step in miniature, for element type dt: present =
// Concat(past, x) on axis 2 and past_out = Identity(past), with past [1,2,past,4] and x
// [1,2,3,4].
func concatModel(t *testing.T, dt graph.DType) string {
	t.Helper()
	vi := func(name string, dims ...any) *onnxpb.ValueInfoProto {
		s := &onnxpb.TensorShapeProto{}
		for _, d := range dims {
			dim := &onnxpb.TensorShapeProto_Dimension{}
			switch v := d.(type) {
			case int:
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(v)}
			case string:
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: v}
			}
			s.Dim = append(s.Dim, dim)
		}
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(dt)), Shape: s}}}}
	}
	m := &onnxpb.ModelProto{
		IrVersion:   proto.Int64(8),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: proto.Int64(17)}},
		Graph: &onnxpb.GraphProto{
			Name:   proto.String("concat"),
			Input:  []*onnxpb.ValueInfoProto{vi("past", 1, 2, "past", 4), vi("x", 1, 2, 3, 4)},
			Output: []*onnxpb.ValueInfoProto{vi("present", 1, 2, "total", 4), vi("past_out", 1, 2, "past", 4)},
			Node: []*onnxpb.NodeProto{
				{OpType: proto.String("Concat"), Input: []string{"past", "x"}, Output: []string{"present"},
					Attribute: []*onnxpb.AttributeProto{{Name: proto.String("axis"), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(2)}}},
				{OpType: proto.String("Identity"), Input: []string{"past"}, Output: []string{"past_out"}},
			},
		},
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "concat.onnx")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEmptyTensors: a tensor with a 0 in its shape (the past keys of a prefill) goes in as a
// feed and comes back as an output with its shape and no data, through Run (outputs
// allocated by the runtime or preallocated from hints) and through Prepare (in place, with
// and without an I/O binding), for a native type and for float16.
func TestEmptyTensors(t *testing.T) {
	needORT(t)
	for _, dt := range []graph.DType{graph.Float, graph.Float16} {
		size := int(dt.Bits() / 8)
		s, err := NewSession(concatModel(t, dt), []string{"past", "x"}, []string{"present", "past_out"}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		x := make([]byte, 24*size)
		for i := range x {
			x[i] = byte(i%61 + 1)
		}
		feeds := map[string]*Tensor{
			"past": {DType: dt, Shape: []int64{1, 2, 0, 4}, Data: []byte{}},
			"x":    {DType: dt, Shape: []int64{1, 2, 3, 4}, Data: x},
		}
		hints := map[string]OutputHint{"present": {DType: dt, Shape: []int64{1, 2, 3, 4}}, "past_out": {DType: dt, Shape: []int64{1, 2, 0, 4}}}
		check := func(how string, present, past *Tensor) {
			t.Helper()
			if present == nil || past == nil {
				t.Fatalf("%s %s: missing outputs", dt, how)
			}
			if present.DType != dt || !sameInts(present.Shape, []int64{1, 2, 3, 4}) || string(present.Data) != string(x) {
				t.Errorf("%s %s: present %s %v, %d bytes; want x", dt, how, present.DType, present.Shape, len(present.Data))
			}
			if past.DType != dt || !sameInts(past.Shape, []int64{1, 2, 0, 4}) || past.Data == nil || len(past.Data) != 0 || past.Elements() != 0 {
				t.Errorf("%s %s: past_out %s %v, data %v; want an empty [1 2 0 4] tensor", dt, how, past.DType, past.Shape, past.Data)
			}
		}
		runs := []map[string]OutputHint{hints}
		if dt == graph.Float {
			runs = append(runs, nil) // float16 outputs must be preallocated
		}
		for _, h := range runs {
			out, err := s.Run(feeds, h)
			if err != nil {
				t.Fatalf("%s Run (hints %v): %v", dt, h != nil, err)
			}
			check(fmt.Sprintf("Run (hints %v)", h != nil), out["present"], out["past_out"])
			b, err := s.Prepare(feeds, h)
			if err != nil {
				t.Fatalf("%s Prepare (hints %v): %v", dt, h != nil, err)
			}
			for i := 0; i < 2; i++ {
				if err := b.Run(); err != nil {
					t.Fatalf("%s prepared run (hints %v): %v", dt, h != nil, err)
				}
				p, err1 := b.Output("present")
				q, err2 := b.Output("past_out")
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				check(fmt.Sprintf("prepared run %d (hints %v)", i, h != nil), p, q)
			}
			b.Close()
		}
		// A feed whose data does not fit its empty shape is still refused.
		bad := map[string]*Tensor{"past": {DType: dt, Shape: []int64{1, 2, 0, 4}, Data: make([]byte, size)}, "x": feeds["x"]}
		if _, err := s.Run(bad, hints); err == nil || !strings.Contains(err.Error(), "need 0") {
			t.Errorf("%s: data for an empty shape: %v", dt, err)
		}
		s.Close()
	}
}

func sameInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// LowMemory sessions (no arena, no memory patterns, no pre-packed weights) compute the same.
func TestLowMemorySession(t *testing.T) {
	needORT(t)
	for _, opt := range []Options{{LowMemory: true}, {LowMemory: true, Optimize: true}} {
		s, err := NewSession(addModel(t, graph.Float, []int64{3}), []string{"a", "b"}, []string{"y"}, opt)
		if err != nil {
			t.Fatalf("%+v: %v", opt, err)
		}
		out, err := s.Run(map[string]*Tensor{
			"a": {DType: graph.Float, Shape: []int64{3}, Data: f32(1, 2, 3)},
			"b": {DType: graph.Float, Shape: []int64{3}, Data: f32(10, 20, 30)},
		}, nil)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if y := out["y"]; y == nil || string(y.Data) != string(f32(11, 22, 33)) {
			t.Errorf("%+v: y = %+v", opt, y)
		}
	}
}
