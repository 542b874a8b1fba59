package triton

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/feeds"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/internal/testmodel"
	"github.com/onnxpart/onnxpart/verify"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

func tsym(n string) graph.Dim          { return graph.Symbolic(n) }
func tdim(v int64) graph.Dim           { return graph.Static(v) }
func tshape(d ...graph.Dim) emit.Shape { return emit.Shape(d) }

// tritonEncoder is a 3-stage encoder: symbolic batch, int64/bool/fp16/fp32 tensors, a
// tensor sent from stage 0 to stages 1 and 2, a model output produced mid-pipeline, a
// scalar output, and a TensorRT stage.
func tritonEncoder() *emit.Manifest {
	ids := emit.TensorRef{Name: "input_ids", DType: "int64", Shape: tshape(tsym("batch"), tdim(128)), Bytes: -1, Stage: -1, ModelInput: true}
	mask := emit.TensorRef{Name: "attention_mask", DType: "bool", Shape: tshape(tsym("batch"), tdim(128)), Bytes: -1, Stage: -1, ModelInput: true}
	emb := emit.TensorRef{Name: "/emb/Add_output_0", DType: "float16", Shape: tshape(tsym("batch"), tdim(128), tdim(64)), Bytes: -1, Stage: 0, Consumers: []int{1, 2}}
	enc := emit.TensorRef{Name: "/enc/layers.3/Add_1_output_0", DType: "float16", Shape: tshape(tsym("batch"), tdim(128), tdim(64)), Bytes: -1, Stage: 1, Consumers: []int{2}}
	pooled := emit.TensorRef{Name: "pooled", DType: "float32", Shape: tshape(tsym("batch"), tdim(64)), Bytes: -1, Stage: 1, ModelOutput: true}
	logits := emit.TensorRef{Name: "logits", DType: "float32", Shape: tshape(tsym("batch"), tdim(2)), Bytes: -1, Stage: 2, ModelOutput: true}
	count := emit.TensorRef{Name: "n_tokens", DType: "int64", Shape: emit.Shape{}, Bytes: 8, Stage: 2, ModelOutput: true}
	in := func(r emit.TensorRef) emit.TensorRef { r.Consumers, r.ModelOutput = nil, false; return r }
	return &emit.Manifest{
		Format: emit.Format,
		Model: emit.ModelInfo{File: "encoder.v2.onnx", Inputs: []emit.TensorRef{ids, mask}, Outputs: []emit.TensorRef{pooled, logits, count},
			SymbolicDims: []string{"batch"}},
		Devices: []emit.DeviceInfo{{Name: "gpu0", Provider: "CUDAExecutionProvider"}, {Name: "gpu1", Provider: "CUDAExecutionProvider"},
			{Name: "gpu2", Provider: "TensorrtExecutionProvider"}},
		Stages: []emit.Stage{
			{Index: 0, Device: "gpu0", Provider: "CUDAExecutionProvider", File: "stage0.onnx", Inputs: []emit.TensorRef{ids}, Outputs: []emit.TensorRef{emb}},
			{Index: 1, Device: "gpu1", Provider: "CUDAExecutionProvider", File: "stage1.onnx", DataFile: "stage1.onnx.data",
				Inputs: []emit.TensorRef{in(emb), mask}, Outputs: []emit.TensorRef{enc, pooled}},
			{Index: 2, Device: "gpu2", Provider: "TensorrtExecutionProvider", File: "stage2.onnx",
				Inputs: []emit.TensorRef{in(emb), in(enc)}, Outputs: []emit.TensorRef{logits, count}},
		},
	}
}

// tritonOddNames is a CPU (OpenVINO) + CUDA split of a model with an awkward file name and
// tensor names holding quotes, backslashes, slashes, a tab and non-ASCII letters.
func tritonOddNames() *emit.Manifest {
	img := emit.TensorRef{Name: "image", DType: "uint8", Shape: tshape(tdim(1), tdim(224), tdim(224), tdim(3)), Bytes: 150528, Stage: -1, ModelInput: true}
	feat := emit.TensorRef{Name: "feat \"a\"\\b\tc", DType: "float32", Shape: tshape(tdim(1), tdim(1000)), Bytes: 4000, Stage: 0, Consumers: []int{1}}
	prob := emit.TensorRef{Name: "prob/ñ·π", DType: "float64", Shape: tshape(tdim(1), tdim(1000)), Bytes: 8000, Stage: 1, ModelOutput: true}
	featIn := feat
	featIn.Consumers = nil
	return &emit.Manifest{
		Format: emit.Format,
		Model:  emit.ModelInfo{File: "my \"odd\" model.onnx", Inputs: []emit.TensorRef{img}, Outputs: []emit.TensorRef{prob}},
		Stages: []emit.Stage{
			{Index: 0, Device: "cpu", Provider: "OpenVINOExecutionProvider", File: "stage0.onnx", Inputs: []emit.TensorRef{img}, Outputs: []emit.TensorRef{feat}},
			{Index: 1, Device: "cuda:1", Provider: "CUDAExecutionProvider", File: "stage1.onnx", Inputs: []emit.TensorRef{featIn}, Outputs: []emit.TensorRef{prob}},
		},
	}
}

// tritonUnnumbered has GPU devices whose names do not give an index: one is given by
// Options.GPUs, the other takes its rank.
func tritonUnnumbered() *emit.Manifest {
	m := tritonOddNames()
	m.Model.File = "plain.onnx"
	m.Stages[0].Device, m.Stages[0].Provider = "a100-x", "CUDAExecutionProvider"
	m.Stages[1].Device = "h100"
	return m
}

// tritonBatched is a 2-stage classifier planned at batch 8 (--dim batch=8) whose stage
// files keep the symbolic batch: every tensor leads with it, so Triton batches.
func tritonBatched() *emit.Manifest {
	img := emit.TensorRef{Name: "input", DType: "float32", Shape: tshape(tsym("batch"), tdim(3), tdim(224), tdim(224)), Bytes: 4816896, Stage: -1, ModelInput: true}
	feat := emit.TensorRef{Name: "/features/Relu_output_0", DType: "float32", Shape: tshape(tsym("batch"), tdim(32), tdim(112), tdim(112)), Bytes: 12845056, Stage: 0, Consumers: []int{1}}
	out := emit.TensorRef{Name: "output", DType: "float32", Shape: tshape(tsym("batch"), tdim(125)), Bytes: 4000, Stage: 1, ModelOutput: true}
	featIn := feat
	featIn.Consumers = nil
	return &emit.Manifest{
		Format: emit.Format,
		Model: emit.ModelInfo{File: "mobilenet_v2_small_dynbatch.onnx", Inputs: []emit.TensorRef{img}, Outputs: []emit.TensorRef{out},
			Dims: map[string]int64{"batch": 8}, SymbolicDims: []string{"batch"}},
		Stages: []emit.Stage{
			{Index: 0, Device: "gpu0", Provider: "CUDAExecutionProvider", File: "stage0.onnx", Inputs: []emit.TensorRef{img}, Outputs: []emit.TensorRef{feat}},
			{Index: 1, Device: "gpu1", Provider: "CUDAExecutionProvider", File: "stage1.onnx", Inputs: []emit.TensorRef{featIn}, Outputs: []emit.TensorRef{out}},
		},
	}
}

var tritonCases = []struct {
	name string
	m    func() *emit.Manifest
	opt  Options
}{
	{"encoder", tritonEncoder, Options{}},
	{"odd_names", tritonOddNames, Options{}},
	{"named_gpus", tritonUnnumbered, Options{Name: "served name", GPUs: map[string]int{"a100-x": 3}}},
	{"batched", tritonBatched, Options{}},
}

// A leading symbolic batch becomes max_batch_size (the bound size, or MaxBatch), dims
// without it, and dynamic batching on every stage model; anything that cannot batch so
// stays unbatched, or is refused when MaxBatch asks for batching.
func TestTritonBatch(t *testing.T) {
	configs := func(m *emit.Manifest, opt Options) []*tritonConfig {
		t.Helper()
		models, err := Models(m, opt)
		if err != nil {
			t.Fatal(err)
		}
		var out []*tritonConfig
		all := map[string]*tritonConfig{}
		for _, tm := range models {
			c := parseTritonConfig(t, tm.Config)
			out = append(out, c)
			all[tm.Name] = c
		}
		checkTritonRepo(t, all)
		return out
	}
	cs := configs(tritonBatched(), Options{})
	for i, c := range cs {
		if c.maxBatch != 8 || c.dynamic != (c.platform != "ensemble") {
			t.Errorf("model %d (%s): max_batch_size %d, dynamic batching %v", i, c.platform, c.maxBatch, c.dynamic)
		}
	}
	if got := cs[0].inputs["input"].dims; got != "3,224,224" {
		t.Errorf("stage 0 input dims %s, want the batch left out", got)
	}
	if got := cs[2].outputs["output"].dims; got != "125" {
		t.Errorf("ensemble output dims %s, want the batch left out", got)
	}
	if cs := configs(tritonBatched(), Options{MaxBatch: 64}); cs[1].maxBatch != 64 || cs[2].maxBatch != 64 {
		t.Errorf("MaxBatch 64 gave max_batch_size %d, %d", cs[1].maxBatch, cs[2].maxBatch)
	}

	// The repository checker catches a step that batches less than the ensemble, or not
	// at all.
	models, err := Models(tritonBatched(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ old, new, want string }{
		{"max_batch_size: 8", "max_batch_size: 4", "allows batches of 8, but step model mobilenet_v2_small_dynbatch_stage1 only 4"},
		{"dynamic_batching { }\n", "", "batches without dynamic_batching"},
	} {
		rec := &recorder{TB: t}
		all := map[string]*tritonConfig{}
		for _, tm := range models {
			cfg := string(tm.Config)
			if tm.Stage == 1 {
				cfg = strings.Replace(cfg, c.old, c.new, 1)
			}
			all[tm.Name] = parseTritonConfig(t, []byte(cfg))
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			checkTritonRepo(rec, all)
		}()
		<-done
		if !strings.Contains(strings.Join(rec.errs, "\n"), c.want) {
			t.Errorf("checker said %q, want %q", rec.errs, c.want)
		}
	}

	// Not batched: frozen dims, a dim nothing sized, a leading dim that is not a batch by
	// name, a stage tensor without the batch in front.
	frozen := tritonBatched()
	for _, refs := range [][]emit.TensorRef{frozen.Model.Inputs, frozen.Model.Outputs, frozen.Stages[0].Inputs, frozen.Stages[0].Outputs, frozen.Stages[1].Inputs, frozen.Stages[1].Outputs} {
		for i := range refs {
			refs[i].Shape = append(emit.Shape{tdim(8)}, refs[i].Shape[1:]...)
		}
	}
	frozen.Model.SymbolicDims = nil
	unsized := tritonBatched()
	unsized.Model.Dims = nil
	seq := tritonBatched()
	seq.Model.Dims = map[string]int64{"batch": 8}
	for _, refs := range [][]emit.TensorRef{seq.Model.Inputs, seq.Model.Outputs, seq.Stages[0].Inputs, seq.Stages[0].Outputs, seq.Stages[1].Inputs, seq.Stages[1].Outputs} {
		for i := range refs {
			refs[i].Shape = append(emit.Shape{tsym("seq")}, refs[i].Shape[1:]...)
		}
	}
	seq.Model.Dims = map[string]int64{"seq": 8}
	flat := tritonBatched()
	flat.Stages[0].Outputs[0].Shape = tshape(tsym("batch*32"), tdim(112), tdim(112))
	flat.Stages[1].Inputs[0].Shape = flat.Stages[0].Outputs[0].Shape
	for name, m := range map[string]*emit.Manifest{"frozen": frozen, "unsized": unsized, "seq": seq, "flattened": flat, "encoder": tritonEncoder()} {
		for _, c := range configs(m, Options{}) {
			if c.maxBatch != 0 || c.dynamic {
				t.Errorf("%s: %s has max_batch_size %d, dynamic batching %v; want no batching", name, c.name, c.maxBatch, c.dynamic)
			}
		}
	}
	if got := configs(frozen, Options{})[0].inputs["input"].dims; got != "8,3,224,224" {
		t.Errorf("frozen input dims %s", got)
	}
	if got := configs(unsized, Options{})[0].inputs["input"].dims; got != "-1,3,224,224" {
		t.Errorf("unsized input dims %s", got)
	}
	// MaxBatch asserts the leading dim is a batch, and is refused where it cannot be.
	if cs := configs(seq, Options{MaxBatch: 2}); cs[0].maxBatch != 2 || cs[0].inputs["input"].dims != "3,224,224" {
		t.Errorf("seq with MaxBatch 2: %d %+v", cs[0].maxBatch, cs[0].inputs["input"])
	}
	for _, c := range []struct {
		m    *emit.Manifest
		max  int
		want string
	}{
		{frozen, 8, "no leading symbolic dimension"},
		{flat, 8, `stage 0 output "/features/Relu_output_0" has shape [batch*32,112,112], which does not lead with the batch dimension batch`},
		{tritonEncoder(), 4, `model output "n_tokens" has shape [], which does not lead`},
		{tritonBatched(), -1, "want a size from 1"},
	} {
		_, err := Models(c.m, Options{MaxBatch: c.max})
		var te *diag.Error
		if !errors.As(err, &te) || te.Kind != diag.KindInput || !strings.HasPrefix(err.Error(), "triton: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("MaxBatch %d: %v, want a Error saying %q", c.max, err, c.want)
		}
	}
}

// TestTritonGolden compares every config.pbtxt with testdata/golden/triton/<case>/<model>/
// config.pbtxt (go test ./emit -run TestTritonGolden -update rewrites them), parses each
// against Triton's schema and checks the ensemble's wiring.
func TestTritonGolden(t *testing.T) {
	for _, c := range tritonCases {
		t.Run(c.name, func(t *testing.T) {
			models, err := Models(c.m(), c.opt)
			if err != nil {
				t.Fatal(err)
			}
			configs := map[string]*tritonConfig{}
			dir := filepath.Join("testdata", "golden", "triton", c.name)
			if *updateGolden {
				os.RemoveAll(dir)
			}
			for _, tm := range models {
				configs[tm.Name] = parseTritonConfig(t, tm.Config)
				golden := filepath.Join(dir, tm.Name, "config.pbtxt")
				if *updateGolden {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, tm.Config, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if !bytes.Equal(tm.Config, want) {
					t.Errorf("%s differs from %s:\n%s", tm.Name, golden, lineDiff(string(want), string(tm.Config)))
				}
			}
			if !*updateGolden {
				// No stale golden models.
				ents, _ := os.ReadDir(dir)
				for _, e := range ents {
					if _, ok := configs[e.Name()]; !ok {
						t.Errorf("stale golden model %s", filepath.Join(dir, e.Name()))
					}
				}
			}
			checkTritonRepo(t, configs)
		})
	}
}

// lineDiff shows the first differing lines of two texts.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 8; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl + "\n")
			shown++
		}
	}
	return b.String()
}

// The details a reader of the goldens would check by eye, asserted directly.
func TestTritonStageSettings(t *testing.T) {
	models, err := Models(tritonEncoder(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tm := range models {
		names = append(names, tm.Name)
	}
	if got := strings.Join(names, " "); got != "encoder_v2_stage0 encoder_v2_stage1 encoder_v2_stage2 encoder_v2" {
		t.Errorf("model names %q", got)
	}
	cfg := func(i int) *tritonConfig { return parseTritonConfig(t, models[i].Config) }
	for i, gpu := range []string{"0", "1", "2"} {
		c := cfg(i)
		if !strings.Contains(string(models[i].Config), "kind: KIND_GPU\n") || !strings.Contains(string(models[i].Config), "gpus: [ "+gpu+" ]") {
			t.Errorf("stage %d is not pinned to GPU %s:\n%s", i, gpu, models[i].Config)
		}
		if c.platform != "onnxruntime_onnx" {
			t.Errorf("stage %d platform %q", i, c.platform)
		}
	}
	if !strings.Contains(string(models[2].Config), `gpu_execution_accelerator [`) || strings.Contains(string(models[1].Config), "execution_accelerators") {
		t.Error("only the TensorRT stage should ask for the tensorrt accelerator")
	}
	c0 := cfg(0)
	if got := c0.inputs["input_ids"]; got.dtype != "TYPE_INT64" || got.dims != "-1,128" {
		t.Errorf("input_ids: %+v", got)
	}
	if got := cfg(1).inputs["attention_mask"]; got.dtype != "TYPE_BOOL" {
		t.Errorf("attention_mask: %+v", got)
	}
	if got := c0.outputs["/emb/Add_output_0"]; got.dtype != "TYPE_FP16" || got.dims != "-1,128,64" {
		t.Errorf("/emb/Add_output_0: %+v", got)
	}
	if got := cfg(2).outputs["n_tokens"]; got.dims != "1" || got.reshape != "[]" {
		t.Errorf("scalar output: %+v, want dims [1] reshaped to []", got)
	}
	if got := cfg(3).outputs["n_tokens"]; got.dims != "1" || got.reshape != "" {
		t.Errorf("scalar ensemble output: %+v, want dims [1] as clients see it", got)
	}
	ens := cfg(3)
	if ens.platform != "ensemble" || len(ens.steps()) != 3 {
		t.Fatalf("ensemble: platform %q, %d steps", ens.platform, len(ens.steps()))
	}
	if got := strings.Join(ens.outOrder, ","); got != "pooled,logits,n_tokens" {
		t.Errorf("ensemble outputs %s", got)
	}
	st := ens.steps()[2]
	if st.in["/emb/Add_output_0"] != "/emb/Add_output_0" || st.version != -1 {
		t.Errorf("stage 2 step: %+v", st)
	}

	odd, err := Models(tritonOddNames(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if odd[0].Name != "my__odd__model_stage0" || odd[2].Name != "my__odd__model" {
		t.Errorf("sanitised names %q, %q", odd[0].Name, odd[2].Name)
	}
	s0, s1 := string(odd[0].Config), string(odd[1].Config)
	if !strings.Contains(s0, "kind: KIND_CPU") || strings.Contains(s0, "gpus") || !strings.Contains(s0, "cpu_execution_accelerator") {
		t.Errorf("OpenVINO stage:\n%s", s0)
	}
	if !strings.Contains(s1, "gpus: [ 1 ]") {
		t.Errorf("cuda:1 is not GPU 1:\n%s", s1)
	}
	if c := parseTritonConfig(t, odd[0].Config); c.outOrder[0] != "feat \"a\"\\b\tc" {
		t.Errorf("quoted name reads back as %q", c.outOrder[0])
	}
	named, err := Models(tritonUnnumbered(), Options{GPUs: map[string]int{"a100-x": 3}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(named[0].Config), "gpus: [ 3 ]") || !strings.Contains(string(named[1].Config), "gpus: [ 1 ]") {
		t.Errorf("explicit GPU 3 and rank 1 expected:\n%s\n%s", named[0].Config, named[1].Config)
	}
}

func TestGPUIndices(t *testing.T) {
	mk := func(devs ...string) *emit.Manifest {
		m := &emit.Manifest{}
		for i, d := range devs {
			m.Stages = append(m.Stages, emit.Stage{Index: i, Device: d, Provider: "CUDAExecutionProvider"})
		}
		return m
	}
	for _, c := range []struct {
		devs     []string
		explicit map[string]int
		want     map[string]int
	}{
		{[]string{"gpu2", "gpu0", "gpu2"}, nil, map[string]int{"gpu2": 2, "gpu0": 0}},
		{[]string{"cuda:1", "cuda:3"}, nil, map[string]int{"cuda:1": 1, "cuda:3": 3}},
		{[]string{"a0", "b0"}, nil, map[string]int{"a0": 0, "b0": 1}}, // same number: ranks
		{[]string{"x", "gpu7"}, nil, map[string]int{"x": 0, "gpu7": 1}},
		{[]string{"h100", "a100"}, nil, map[string]int{"h100": 0, "a100": 1}}, // products, not indices
		{[]string{"GPU#2", "device-0"}, nil, map[string]int{"GPU#2": 2, "device-0": 0}},
		{[]string{"x", "y"}, map[string]int{"y": 5}, map[string]int{"x": 0, "y": 5}},
	} {
		got := gpuIndices(mk(c.devs...), c.explicit)
		if len(got) != len(c.want) {
			t.Errorf("%v: %v, want %v", c.devs, got, c.want)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%v: %v, want %v", c.devs, got, c.want)
			}
		}
	}
	// CPU stages take no GPU.
	m := mk("gpu1", "cpu")
	m.Stages[1].Provider = "CPUExecutionProvider"
	if got := gpuIndices(m, nil); len(got) != 1 || got["gpu1"] != 1 {
		t.Errorf("with a CPU stage: %v", got)
	}
}

func TestTritonNames(t *testing.T) {
	for in, want := range map[string]string{"resnet50": "resnet50", "a.b c": "a_b_c", "": "onnxpart", "..": "onnxpart",
		"--x": "x", "ñ": "onnxpart", "bert-base_v2": "bert-base_v2"} {
		if got := tritonName(in); got != want {
			t.Errorf("tritonName(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{`a"b`: `"a\"b"`, `a\b`: `"a\\b"`, "a\nb": `"a\nb"`, "a\x01b": `"a\001b"`,
		"ñ": `"ñ"`, "a\xffb": `"a\377b"`} {
		if got := pbQuote(in); got != want {
			t.Errorf("pbQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestTritonRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(m *emit.Manifest)
		want string
	}{
		{"provider", func(m *emit.Manifest) { m.Stages[1].Provider = "DmlExecutionProvider" }, "execution provider DmlExecutionProvider has no Triton"},
		{"unknown rank", func(m *emit.Manifest) { m.Stages[0].Outputs[0].Shape = nil }, `tensor "/emb/Add_output_0" has no inferred shape`},
		{"dtype", func(m *emit.Manifest) { m.Model.Inputs[0].DType = "complex64" }, "element type complex64"},
		{"pass-through", func(m *emit.Manifest) {
			in := m.Model.Inputs[1]
			m.Model.Outputs = append(m.Model.Outputs, in)
			m.Stages[2].Inputs = append(m.Stages[2].Inputs, in)
			m.Stages[2].Outputs = append(m.Stages[2].Outputs, in)
		}, `model output "attention_mask" is also a model input`},
		{"dangling input", func(m *emit.Manifest) { m.Stages[0].Inputs[0].Name = "nowhere" }, `stage 0 reads "nowhere"`},
		{"unproduced output", func(m *emit.Manifest) { m.Model.Outputs[0].Name = "ghost" }, `model output "ghost" is produced by no stage`},
	} {
		m := tritonEncoder()
		c.edit(m)
		_, err := Models(m, Options{})
		var te *diag.Error
		if !errors.As(err, &te) || te.Kind != diag.KindInput || !strings.HasPrefix(err.Error(), "triton: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want a Error with %q", c.name, err, c.want)
		}
	}
	// A model input no stage reads is left out of the ensemble (Triton refuses unmapped
	// ensemble inputs).
	m := tritonEncoder()
	m.Model.Inputs = append(m.Model.Inputs, emit.TensorRef{Name: "unused", DType: "float32", Shape: emit.Shape{tdim(1)}, Stage: -1, ModelInput: true})
	models, err := Models(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ens := parseTritonConfig(t, models[len(models)-1].Config); len(ens.inputs) != 2 || ens.inputs["unused"].dtype != "" {
		t.Errorf("ensemble inputs %v, want input_ids and attention_mask", ens.inOrder)
	}
	if _, err := Models(&emit.Manifest{}, Options{}); err == nil {
		t.Error("a manifest without stages gave a repository")
	}
}

// fakeStages writes stand-in stage files for a hand-built manifest.
func fakeStages(t *testing.T, m *emit.Manifest) string {
	t.Helper()
	dir := t.TempDir()
	for _, st := range m.Stages {
		if err := os.WriteFile(filepath.Join(dir, st.File), []byte("model "+st.File), 0o644); err != nil {
			t.Fatal(err)
		}
		if st.DataFile != "" {
			if err := os.WriteFile(filepath.Join(dir, st.DataFile), []byte("weights "+st.DataFile), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func TestWriteTritonLayout(t *testing.T) {
	m := tritonEncoder()
	stages := fakeStages(t, m)
	for _, copyFiles := range []bool{false, true} {
		repo := filepath.Join(t.TempDir(), "out", "triton")
		if err := Write(m, stages, repo, Options{Copy: copyFiles}); err != nil {
			t.Fatal(err)
		}
		var files []string
		filepath.WalkDir(repo, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(repo, p)
			if d.IsDir() {
				rel += "/"
			}
			files = append(files, rel)
			return nil
		})
		sort.Strings(files)
		want := []string{"./", "encoder_v2/", "encoder_v2/1/", "encoder_v2/config.pbtxt",
			"encoder_v2_stage0/", "encoder_v2_stage0/1/", "encoder_v2_stage0/1/model.onnx", "encoder_v2_stage0/config.pbtxt",
			"encoder_v2_stage1/", "encoder_v2_stage1/1/", "encoder_v2_stage1/1/model.onnx", "encoder_v2_stage1/1/stage1.onnx.data", "encoder_v2_stage1/config.pbtxt",
			"encoder_v2_stage2/", "encoder_v2_stage2/1/", "encoder_v2_stage2/1/model.onnx", "encoder_v2_stage2/config.pbtxt"}
		if strings.Join(files, "\n") != strings.Join(want, "\n") {
			t.Errorf("repository holds\n%s\nwant\n%s", strings.Join(files, "\n"), strings.Join(want, "\n"))
		}
		got, _ := os.ReadFile(filepath.Join(repo, "encoder_v2_stage1", "1", "stage1.onnx.data"))
		if string(got) != "weights stage1.onnx.data" {
			t.Errorf("data file holds %q", got)
		}
		a, _ := os.Stat(filepath.Join(stages, "stage2.onnx"))
		b, _ := os.Stat(filepath.Join(repo, "encoder_v2_stage2", "1", "model.onnx"))
		if os.SameFile(a, b) == copyFiles {
			t.Errorf("Copy=%v: model.onnx shares the stage file: %v", copyFiles, os.SameFile(a, b))
		}
		// Nothing but the repository is left beside it.
		ents, _ := os.ReadDir(filepath.Dir(repo))
		if len(ents) != 1 {
			t.Errorf("%d entries beside the repository", len(ents))
		}
		// An existing repository is refused, and replaced with Force.
		err := Write(m, stages, repo, Options{})
		if diag.KindOf(err) != diag.KindInput || !strings.Contains(err.Error(), "already exists (use Options.Force") {
			t.Errorf("existing repository: %v", err)
		}
		os.WriteFile(filepath.Join(repo, "stray"), nil, 0o644)
		if err := Write(m, stages, repo, Options{Force: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(repo, "stray")); err == nil {
			t.Error("Force kept the old repository's files")
		}
	}
}

func TestWriteTritonFailures(t *testing.T) {
	m := tritonEncoder()
	stages := fakeStages(t, m)
	os.Remove(filepath.Join(stages, "stage2.onnx"))
	repo := filepath.Join(t.TempDir(), "triton")
	if err := Write(m, stages, repo, Options{}); err == nil || !strings.Contains(err.Error(), "stage2.onnx") {
		t.Errorf("missing stage file: %v", err)
	}
	if _, err := os.Stat(repo); err == nil {
		t.Error("a failed write left a repository")
	}
	m = tritonEncoder()
	m.Stages[0].File = "../stage0.onnx"
	if err := Write(m, fakeStages(t, tritonEncoder()), repo, Options{}); err == nil || !strings.Contains(err.Error(), "not a plain file name") {
		t.Errorf("path in the manifest: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Dir(repo))
	if len(ents) != 0 {
		t.Errorf("failed writes left %d entries", len(ents))
	}
}

// TestTritonCorpus writes the repository of a real split (with external data) and checks it
// the way Triton would use it: every config parses against the schema and matches what
// ONNX Runtime reads from the model file (names, element types, dims), the files are the
// stages' bytes, and running the steps as the ensemble wires them reproduces the model's
// outputs bit for bit.
func TestTritonCorpus(t *testing.T) {
	model := filepath.Join(testmodel.CorpusDir, "external", "resnet50_small_ext.onnx")
	if _, err := os.Stat(model); err != nil {
		t.Skip("model corpus not found at " + testmodel.CorpusDir)
	}
	m, err := ingest.Load(model, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stages, err := emit.EqualFLOPs(m.Graph, 3)
	if err != nil {
		t.Fatal(err)
	}
	a := &emit.Assignment{Stage: stages, Devices: []emit.Device{{Name: "gpu0", Provider: "CUDAExecutionProvider"},
		{Name: "gpu1", Provider: "CUDAExecutionProvider"}, {Name: "cpu", Provider: "CPUExecutionProvider"}}}
	out := filepath.Join(t.TempDir(), "out")
	man, err := emit.Write(m, a, out, emit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(out, Dir)
	if err := Write(man, out, repo, Options{}); err != nil {
		t.Fatal(err)
	}
	configs := map[string]*tritonConfig{}
	ents, err := os.ReadDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(repo, e.Name(), "config.pbtxt"))
		if err != nil {
			t.Fatal(err)
		}
		configs[e.Name()] = parseTritonConfig(t, b)
	}
	ensemble := checkTritonRepo(t, configs)
	if ensemble != "resnet50_small_ext" {
		t.Errorf("ensemble %q", ensemble)
	}
	for i, st := range man.Stages {
		dir := filepath.Join(repo, "resnet50_small_ext_stage"+strconv.Itoa(i), "1")
		if sum := fileSHA(t, filepath.Join(dir, "model.onnx")); sum != st.SHA256 {
			t.Errorf("stage %d: model.onnx is not the stage file", i)
		}
		if st.DataFile == "" || fileSHA(t, filepath.Join(dir, st.DataFile)) != st.DataSHA256 {
			t.Errorf("stage %d: data file %q missing or different", i, st.DataFile)
		}
	}
	if !strings.Contains(string(mustRead(t, filepath.Join(repo, "resnet50_small_ext_stage2", "config.pbtxt"))), "kind: KIND_CPU") {
		t.Error("the CPU stage is not on KIND_CPU")
	}

	needORT(t)
	for i := range man.Stages {
		name := "resnet50_small_ext_stage" + strconv.Itoa(i)
		c := configs[name]
		ins, outs, err := ort.ModelIO(filepath.Join(repo, name, "1", "model.onnx"))
		if err != nil {
			t.Fatal(err)
		}
		for _, side := range []struct {
			what string
			io   []ort.IOInfo
			decl map[string]tritonTensor
		}{{"input", ins, c.inputs}, {"output", outs, c.outputs}} {
			if len(side.io) != len(side.decl) {
				t.Errorf("%s: ONNX Runtime sees %d %ss, the config declares %d", name, len(side.io), side.what, len(side.decl))
			}
			for _, io := range side.io {
				d, ok := side.decl[io.Name]
				want := tritonTensor{dtype: tritonTypes[io.DType.String()], dims: joinDims(io.Shape)}
				if len(io.Shape) == 0 {
					want.reshape = "[]"
				}
				if !ok || d != want {
					t.Errorf("%s %s %q: config %+v, model %+v", name, side.what, io.Name, d, want)
				}
			}
		}
	}
	// Run the ensemble as Triton's scheduler would and compare with the whole model.
	feeds, err := feeds.Random(m.Graph, 1, verify.DefaultMaxTensorBytes, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var inNames, outNames []string
	for _, r := range man.Model.Inputs {
		inNames = append(inNames, r.Name)
	}
	for _, r := range man.Model.Outputs {
		outNames = append(outNames, r.Name)
	}
	ref, err := ort.NewSession(model, inNames, outNames, ort.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	want, err := ref.Run(feeds, nil)
	if err != nil {
		t.Fatal(err)
	}
	pool := map[string]*ort.Tensor{}
	for k, v := range feeds {
		pool[k] = v
	}
	for _, step := range configs[ensemble].steps() {
		c := configs[step.model]
		s, err := ort.NewSession(filepath.Join(repo, step.model, "1", "model.onnx"), c.inOrder, c.outOrder, ort.Options{})
		if err != nil {
			t.Fatal(err)
		}
		in := map[string]*ort.Tensor{}
		for mt, et := range step.in {
			in[mt] = pool[et]
		}
		res, err := s.Run(in, nil)
		s.Close()
		if err != nil {
			t.Fatalf("step %s: %v", step.model, err)
		}
		for mt, et := range step.out {
			pool[et] = res[mt]
		}
	}
	for _, n := range outNames {
		if got := pool[n]; got == nil || !bytes.Equal(got.Data, want[n].Data) {
			t.Errorf("ensemble output %q differs from the model's", n)
		}
	}
}

func joinDims(s []int64) string {
	if len(s) == 0 {
		return "1"
	}
	parts := make([]string, len(s))
	for i, d := range s {
		if d < 0 {
			parts[i] = "-1"
		} else {
			parts[i] = strconv.FormatInt(d, 10)
		}
	}
	return strings.Join(parts, ",")
}

func fileSHA(t *testing.T, p string) string {
	t.Helper()
	sum := sha256.Sum256(mustRead(t, p))
	return hex.EncodeToString(sum[:])
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
