package ingest

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// windowCase is one randomly drawn convolution or pool over a small input.
type windowCase struct {
	op                       string
	in, kernel, strides, dil []int64
	pads                     []int64 // nil: attribute absent
	autoPad                  string  // "" : attribute absent
	ceil                     bool
	indices                  bool    // MaxPool's second output
	outPad                   []int64 // ConvTranspose's output_padding
	outShape                 []int64 // ConvTranspose's output_shape
}

func (w windowCase) String() string {
	s := fmt.Sprintf("%s in=%v k=%v s=%v d=%v", w.op, w.in, w.kernel, w.strides, w.dil)
	if w.pads != nil {
		s += fmt.Sprintf(" pads=%v", w.pads)
	}
	if w.autoPad != "" {
		s += " auto_pad=" + w.autoPad
	}
	if w.ceil {
		s += " ceil_mode=1"
	}
	if w.indices {
		s += " with indices"
	}
	if w.outPad != nil {
		s += fmt.Sprintf(" output_padding=%v", w.outPad)
	}
	if w.outShape != nil {
		s += fmt.Sprintf(" output_shape=%v", w.outShape)
	}
	return s
}

// drawWindowCase draws attributes the way exporters combine them, small inputs included
// (windows larger than the input, pads as large as the kernel, strides above the kernel).
func drawWindowCase(rng *rand.Rand) windowCase {
	w := windowCase{op: []string{"Conv", "MaxPool", "AveragePool", "ConvTranspose"}[rng.Intn(4)]}
	nsp := 1 + rng.Intn(2)
	for i := 0; i < nsp; i++ {
		w.in = append(w.in, int64(1+rng.Intn(9)))
		w.kernel = append(w.kernel, int64(1+rng.Intn(4)))
		w.strides = append(w.strides, int64(1+rng.Intn(3)))
		d := int64(1)
		if rng.Intn(3) == 0 {
			d = int64(2 + rng.Intn(2))
		}
		w.dil = append(w.dil, d)
	}
	switch r := rng.Intn(10); {
	case r < 6:
		w.pads = make([]int64, 2*nsp)
		for i := range w.pads {
			w.pads[i] = int64(rng.Intn(int(w.kernel[i%nsp]) + 1))
		}
	case r < 7:
		w.autoPad = "VALID"
	case r < 8:
		w.autoPad = "SAME_UPPER"
	case r < 9:
		w.autoPad = "SAME_LOWER"
	}
	w.ceil = strings.HasSuffix(w.op, "Pool") && rng.Intn(2) == 0
	w.indices = w.op == "MaxPool" && rng.Intn(3) == 0
	if w.op == "ConvTranspose" && rng.Intn(2) == 0 {
		for i := 0; i < nsp; i++ {
			w.outPad = append(w.outPad, int64(rng.Intn(int(max(w.strides[i], w.dil[i])))))
		}
	}
	if w.op == "ConvTranspose" && rng.Intn(4) == 0 {
		for i := 0; i < nsp; i++ {
			w.outShape = append(w.outShape, int64(1+rng.Intn(24)))
		}
	}
	return w
}

// model builds the case as a one-node model at opset 19 (pool dilations need it).
func (w windowCase) model() *ocModel {
	m := newOCModel(19)
	dims := []any{1, 2}
	for _, d := range w.in {
		dims = append(dims, d)
	}
	x := m.in(f32, dims...)
	attrs := []*onnxpb.AttributeProto{aIs("kernel_shape", w.kernel...), aIs("strides", w.strides...), aIs("dilations", w.dil...)}
	if w.pads != nil {
		attrs = append(attrs, aIs("pads", w.pads...))
	}
	if w.autoPad != "" {
		attrs = append(attrs, aS("auto_pad", w.autoPad))
	}
	if w.ceil {
		attrs = append(attrs, aI("ceil_mode", 1))
	}
	inputs := []string{x}
	switch w.op {
	case "Conv":
		inputs = append(inputs, m.weight(f32, append([]int64{3, 2}, w.kernel...)...))
	case "ConvTranspose":
		inputs = append(inputs, m.weight(f32, append([]int64{2, 3}, w.kernel...)...))
		if w.outPad != nil {
			attrs = append(attrs, aIs("output_padding", w.outPad...))
		}
		if w.outShape != nil {
			attrs = append(attrs, aIs("output_shape", w.outShape...))
		}
	}
	n := 1
	if w.indices {
		n = 2
	}
	y := m.opN(w.op, inputs, n, attrs...)[0]
	m.g.Output = append(m.g.Output, &onnxpb.ValueInfoProto{Name: &y, Type: ocTensorType(f32, nil)})
	return m
}

// TestWindowSizesMatchONNXRuntime draws random Conv, ConvTranspose, MaxPool and AveragePool
// nodes over small inputs and compares the output shape inference gives with the one ONNX Runtime produces.
// Where ORT refuses the node (a window larger than its padded input, pads not smaller than
// a pool's kernel, a dilated SAME convolution), inference must report an error naming it.
func TestWindowSizesMatchONNXRuntime(t *testing.T) {
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
	rng := rand.New(rand.NewSource(29))
	n := 600
	if testing.Short() {
		n = 150
	}
	dir := t.TempDir()
	ran, rejected, bad := 0, 0, 0
	for i := 0; i < n; i++ {
		w := drawWindowCase(rng)
		m := w.model()
		path := filepath.Join(dir, fmt.Sprintf("w%d.onnx", i))
		ocWrite(t, path, m.modelProto())
		im, err := Load(path, Options{})
		if err != nil {
			t.Fatalf("%v: ingest: %v", w, err)
		}
		y := m.g.Node[0].Output[0]
		id, _ := im.Graph.TensorByName(y)
		got := im.Graph.Tensors[id].Shape
		want, ortErr := ortWindowShape(path, m, y)
		fail := func(format string, a ...any) {
			bad++
			if bad <= 20 {
				t.Errorf("%v: %s", w, fmt.Sprintf(format, a...))
			}
		}
		if ortErr != nil {
			rejected++
			if len(im.Warnings) == 0 {
				fail("ORT refuses the node (%v), inference gives %v without an error", ortErr, got)
			} else if !strings.Contains(im.Warnings[0], m.g.Node[0].GetName()) {
				fail("the inference error %q does not name the node %s", im.Warnings[0], m.g.Node[0].GetName())
			}
			continue
		}
		ran++
		if len(im.Warnings) > 0 {
			fail("ORT gives %v, inference reports %q", want, im.Warnings)
		} else if !graph.ShapeOf(want...).Equal(got) {
			fail("ORT gives %v, inference %v", want, got)
		}
	}
	t.Logf("%d cases: %d run in ORT, %d refused by it, %d mismatches", n, ran, rejected, bad)
	if ran < n/2 || rejected < n/20 {
		t.Errorf("the draw is unbalanced: %d run, %d refused of %d", ran, rejected, n)
	}
}

// ortWindowShape runs the one-node model in ORT and returns its output's shape, or ORT's
// error when it refuses the model.
func ortWindowShape(path string, m *ocModel, out string) ([]int64, error) {
	x := m.g.Input[0].GetName()
	f := m.feeds[x]
	var dims []int64
	n := int64(1)
	for _, d := range f.dims {
		v, _ := d.(int64)
		if i, ok := d.(int); ok {
			v = int64(i)
		}
		dims = append(dims, v)
		n *= v
	}
	s, err := ort.NewSession(path, []string{x}, []string{out}, ort.Options{})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	res, err := s.Run(map[string]*ort.Tensor{x: {DType: f32, Shape: dims, Data: make([]byte, 4*n)}}, nil)
	if err != nil {
		return nil, err
	}
	return res[out].Shape, nil
}

// TestResizeSizesMatchONNXRuntime draws Resize nodes with random scales (float32 products
// that land just below or above an integer included) or sizes with every
// keep_aspect_ratio_policy, and compares the output shape with ONNX Runtime's.
func TestResizeSizesMatchONNXRuntime(t *testing.T) {
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
	rng := rand.New(rand.NewSource(30))
	scales := []float64{0.5, 0.75, 1, 1.5, 2, 2.3, 3.7, 0.33, 0.1, 1.1, 0.3, 0.7, 1.25, 1 / 3.0, 2 / 3.0}
	dir := t.TempDir()
	bad := 0
	for i := 0; i < 300; i++ {
		m := newOCModel(18)
		in := []any{1, 2}
		for j := 0; j < 2; j++ {
			in = append(in, 1+rng.Intn(12))
		}
		x := m.in(f32, in...)
		var attrs []*onnxpb.AttributeProto
		desc := fmt.Sprintf("in=%v", in)
		var y string
		if rng.Intn(2) == 0 {
			sc := []float64{1, 1, scales[rng.Intn(len(scales))], scales[rng.Intn(len(scales))]}
			desc += fmt.Sprintf(" scales=%v", sc)
			y = m.op("Resize", ins(x, "", m.init(f32, []int64{4}, sc)), attrs...)
		} else {
			sz := []int64{1, 2, int64(1 + rng.Intn(20)), int64(1 + rng.Intn(20))}
			policy := []string{"stretch", "not_larger", "not_smaller"}[rng.Intn(3)]
			desc += fmt.Sprintf(" sizes=%v policy=%s", sz, policy)
			y = m.op("Resize", ins(x, "", "", m.ints(sz...)), aS("keep_aspect_ratio_policy", policy))
		}
		m.g.Output = append(m.g.Output, &onnxpb.ValueInfoProto{Name: &y, Type: ocTensorType(f32, nil)})
		path := filepath.Join(dir, fmt.Sprintf("r%d.onnx", i))
		ocWrite(t, path, m.modelProto())
		im, err := Load(path, Options{})
		if err != nil {
			t.Fatalf("%s: ingest: %v", desc, err)
		}
		id, _ := im.Graph.TensorByName(y)
		got := im.Graph.Tensors[id].Shape
		want, err := ortWindowShape(path, m, y)
		if err != nil {
			t.Fatalf("%s: ORT: %v", desc, err)
		}
		if !graph.ShapeOf(want...).Equal(got) {
			if bad++; bad <= 10 {
				t.Errorf("%s: ORT gives %v, inference %v", desc, want, got)
			}
		}
	}
}

// TestWindowOutSmallInputs pins the sizes ONNX Runtime gives where floor division went wrong
// (the PaddleOCR recogniser's AveragePool at width 1, MobileNet's MaxPool at ≤ 16×16) and
// the windows it refuses; with ORT present, each row is checked against it too.
func TestWindowOutSmallInputs(t *testing.T) {
	haveORT := true
	if _, err := ort.LibraryPath(); err != nil {
		haveORT = false
	}
	for _, c := range []struct {
		w    windowCase
		want string // the output's spatial sizes, or "error"
	}{
		{windowCase{op: "AveragePool", in: []int64{1, 1}, kernel: []int64{1, 2}, strides: []int64{1, 2}, dil: []int64{1, 1}}, "[1,2,1,1]"},
		{windowCase{op: "AveragePool", in: []int64{1, 3}, kernel: []int64{2, 2}, strides: []int64{2, 2}, dil: []int64{1, 1}, pads: []int64{0, 0, 0, 0}}, "[1,2,1,1]"},
		{windowCase{op: "AveragePool", in: []int64{1, 1}, kernel: []int64{2, 2}, strides: []int64{2, 2}, dil: []int64{1, 1}, ceil: true}, "[1,2,1,1]"},
		{windowCase{op: "MaxPool", in: []int64{1, 1}, kernel: []int64{3, 3}, strides: []int64{2, 2}, dil: []int64{1, 1}, pads: []int64{1, 1, 1, 1}}, "[1,2,1,1]"},
		{windowCase{op: "MaxPool", in: []int64{7, 7}, kernel: []int64{3, 3}, strides: []int64{2, 2}, dil: []int64{1, 1}, ceil: true}, "[1,2,3,3]"},
		{windowCase{op: "AveragePool", in: []int64{2, 2}, kernel: []int64{7, 7}, strides: []int64{1, 1}, dil: []int64{1, 1}}, "error"},
		{windowCase{op: "Conv", in: []int64{2, 2}, kernel: []int64{3, 3}, strides: []int64{2, 2}, dil: []int64{1, 1}}, "error"},
		{windowCase{op: "Conv", in: []int64{2, 2}, kernel: []int64{3, 3}, strides: []int64{2, 2}, dil: []int64{1, 1}, pads: []int64{1, 1, 1, 1}}, "[1,3,1,1]"},
	} {
		m := c.w.model()
		path := filepath.Join(t.TempDir(), "w.onnx")
		ocWrite(t, path, m.modelProto())
		im, err := Load(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		y := m.g.Node[0].Output[0]
		id, _ := im.Graph.TensorByName(y)
		got := im.Graph.Tensors[id].Shape.String()
		if len(im.ShapeErrors) > 0 {
			got = "error"
		}
		if got != c.want {
			t.Errorf("%v: inference %s (%v), want %s", c.w, got, im.ShapeErrors, c.want)
		}
		if haveORT {
			want, err := ortWindowShape(path, m, y)
			if ortGot := graph.ShapeOf(want...).String(); err == nil && ortGot != c.want || err != nil && c.want != "error" {
				t.Errorf("%v: ORT gives %v (%v), the table %s", c.w, want, err, c.want)
			}
		}
	}
}
