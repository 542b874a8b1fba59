package ingest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// bindingModel is a small model with the input kinds real exports have: an input whose dims
// are all unnamed (audio [?,?]), one mixing fixed, unnamed and named dims, and an output dim
// that only the output declares (Paddle2ONNX's p2o.DynamicDimension.N), which inference
// derives.
func bindingModel(t *testing.T) string {
	m := newOCModel(13)
	audio := m.in(f32, "", "")
	state := m.in(f32, 2, "", 128)
	tokens := m.in(i64, "batch", "seq")
	feat := m.op("MatMul", ins(m.op("Unsqueeze", ins(audio, m.ints(0))), m.weight(f32, 1, 16, 128)))
	m.op("Add", ins(feat, state))
	y := m.op("Gather", ins(m.weight(f32, 10, 8), tokens))
	m.g.Output = append(m.g.Output, &onnxpb.ValueInfoProto{Name: proto.String(y),
		Type: ocTensorType(f32, []any{"batch", "p2o.DynamicDimension.4", 8})})
	// The unnamed dims above were declared as dim_param "", which is no name at all.
	for _, vi := range m.g.Input {
		for _, d := range vi.Type.GetTensorType().GetShape().GetDim() {
			if p, ok := d.Value.(*onnxpb.TensorShapeProto_Dimension_DimParam); ok && p.DimParam == "" {
				d.Value = nil
			}
		}
	}
	path := filepath.Join(t.TempDir(), "bind.onnx")
	ocWrite(t, path, m.modelProto())
	return path
}

func TestBindInputs(t *testing.T) {
	path := bindingModel(t)
	audio, state, tokens := "in_1", "in_2", "in_3"

	m, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Only the inputs' named dims are asked for; the output-only one is derived.
	if fmt.Sprint(m.SymbolicDims) != "[batch seq]" {
		t.Errorf("SymbolicDims %v, want [batch seq]", m.SymbolicDims)
	}
	want := fmt.Sprintf("[%s [?,?] %s [2,?,128] %s [batch,seq]]", audio, state, tokens)
	if fmt.Sprint(m.UnboundInputs()) != want {
		t.Errorf("UnboundInputs %v, want %s", m.UnboundInputs(), want)
	}
	if err := m.RequireInputSizes(); !isUsage(err) || !strings.Contains(err.Error(), `Options.InputShapes["`) || !strings.Contains(err.Error(), `Options.Dims["batch"] = SIZE`) || strings.Contains(err.Error(), "--") {
		t.Errorf("RequireInputSizes: %v, want a usage error pointing at Options.Dims and InputShapes", err)
	}
	m.names = diag.Names{"Dims": "--dim", "InputShapes": "--input-shape"} // the command's flags
	if err := m.RequireInputSizes(); !isUsage(err) || !strings.Contains(err.Error(), "--input-shape") || !strings.Contains(err.Error(), "--dim batch=SIZE,seq=SIZE") {
		t.Errorf("RequireInputSizes with the flags' names: %v, want a usage error pointing at --dim and --input-shape", err)
	}

	m, err = Load(path, Options{Dims: map[string]int64{"batch": 2, "seq": 5},
		InputShapes: map[string][]int64{audio: {3, 16}, state: {2, 1, 128}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RequireInputSizes(); err != nil {
		t.Errorf("every input bound, yet: %v", err)
	}
	// A size for the output-only dim that agrees with inference (a manifest restating the
	// plan's sizes) is accepted.
	if _, err := Load(path, Options{Dims: map[string]int64{"batch": 2, "seq": 5, "p2o.DynamicDimension.4": 5},
		InputShapes: map[string][]int64{audio: {3, 16}, state: {2, 1, 128}}}); err != nil {
		t.Errorf("a derived dim restated at its derived size: %v", err)
	}
	for name, shape := range map[string]string{"add_": "[2,3,128]", "gather_": "[2,5,8]"} {
		if s := ocTensorNamed(t, m, name).Shape.String(); s != shape {
			t.Errorf("%s: shape %s, want %s", name, s, shape)
		}
	}
	if len(m.SymbolicDims) != 0 {
		t.Errorf("SymbolicDims %v after binding", m.SymbolicDims)
	}

	// --input-shape binds the dim_params it covers: batch and seq from tokens' shape.
	m, err = Load(path, Options{InputShapes: map[string][]int64{tokens: {3, 7}}})
	if err != nil {
		t.Fatal(err)
	}
	if s := ocTensorNamed(t, m, "gather_").Shape.String(); s != "[3,7,8]" {
		t.Errorf("tokens=3x7: Gather output %s, want [3,7,8]", s)
	}
	if fmt.Sprint(m.Dims()) != "map[batch:3 seq:7]" {
		t.Errorf("Dims() %v, want the dim_params --input-shape bound", m.Dims())
	}
	if fmt.Sprint(m.InputShapes()) != "map[in_3:[3 7]]" {
		t.Errorf("InputShapes() %v", m.InputShapes())
	}

	for _, c := range []struct {
		opt  Options
		want string
	}{
		{Options{Dims: map[string]int64{"p2o.DynamicDimension.4": 3}}, "only outputs or value_info carry it"},
		{Options{Dims: map[string]int64{"batch": 2, "seq": 5, "p2o.DynamicDimension.4": 4}}, "inference derives it from the input sizes as 5"},
		{Options{Dims: map[string]int64{"bach": 3}}, `no symbolic dimension "bach" (it has: batch, seq)`},
		{Options{InputShapes: map[string][]int64{"nosuch": {1}}}, `no input "nosuch"`},
		{Options{InputShapes: map[string][]int64{state: {2, 128}}}, "has rank 3 ([2,?,128]), not 2"},
		{Options{InputShapes: map[string][]int64{state: {3, 1, 128}}}, "dimension 0 of input \"in_2\" is fixed at 2"},
		{Options{Dims: map[string]int64{"batch": 2}, InputShapes: map[string][]int64{tokens: {4, 1}}}, `is "batch", which Options.Dims["batch"] sets to 2`},
	} {
		_, err := Load(path, c.opt)
		if !isUsage(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a usage error containing %q", c.opt, err, c.want)
		}
	}
}

// An input size that breaks a node (here a pooling window larger than its input, and shapes
// that do not broadcast) is an error at plan time that names the node.
func TestRequireInputSizesShapeErrors(t *testing.T) {
	m := newOCModel(13)
	x := m.in(f32, 1, 2, "H", "W")
	p := m.op("MaxPool", ins(x), aIs("kernel_shape", 3, 3))
	m.op("Add", ins(p, m.weight(f32, 1, 2, 4, 4)))
	path := filepath.Join(t.TempDir(), "pool.onnx")
	ocWrite(t, path, m.modelProto())

	im, err := Load(path, Options{Dims: map[string]int64{"H": 6, "W": 6}})
	if err != nil {
		t.Fatal(err)
	}
	if err := im.RequireInputSizes(); err != nil {
		t.Fatalf("6x6 fits: %v", err)
	}
	im, err = Load(path, Options{Dims: map[string]int64{"H": 1, "W": 6}})
	if err != nil {
		t.Fatal(err)
	}
	err = im.RequireInputSizes()
	if !isInput(err) || !strings.Contains(err.Error(), "maxpool_") || !strings.Contains(err.Error(), "larger than the padded input") {
		t.Errorf("H=1: %v, want an error naming the MaxPool", err)
	}
	im, err = Load(path, Options{Dims: map[string]int64{"H": 7, "W": 7}})
	if err != nil {
		t.Fatal(err)
	}
	err = im.RequireInputSizes()
	if !isInput(err) || !strings.Contains(err.Error(), "add_") || !strings.Contains(err.Error(), "not broadcastable") {
		t.Errorf("7x7: %v, want an error naming the Add", err)
	}
}
