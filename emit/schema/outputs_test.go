package schema_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/verify"
)

// splitModel writes an equal-FLOPs split of m into k stages under a new directory and
// returns the directory.
func splitModel(t *testing.T, m *ingest.Model, k int, opt emit.Options) string {
	t.Helper()
	stage, err := emit.EqualFLOPs(m.Graph, k)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	a := &emit.Assignment{Stage: stage, Split: emit.SplitInfo{Method: "stages", RequestedStages: k}}
	if _, err := emit.Write(m, a, dir, opt); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readManifest(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, emit.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// loadOpts binds the corpus's symbolic batch dimension in one of two ways: left symbolic
// (the stage files keep dim_param) or bound.
func load(t *testing.T, path string, dims map[string]int64) *ingest.Model {
	t.Helper()
	m, err := ingest.Load(path, ingest.Options{Dims: dims})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestManifestsOfCorpus validates manifest.json of equal-FLOPs splits of every corpus model
// (external data, float16, symbolic and bound dimensions, transformers) into 2 and 3 stages.
func TestManifestsOfCorpus(t *testing.T) {
	for _, p := range corpusModels(t) {
		m := load(t, p, nil)
		for _, k := range []int{2, 3} {
			dir := splitModel(t, m, k, emit.Options{})
			mustValidate(t, "manifest.v1", fmt.Sprintf("%s k=%d", filepath.Base(p), k), readManifest(t, dir))
		}
		if strings.Contains(p, "dynbatch") {
			mb := load(t, p, map[string]int64{"batch": 2})
			mustValidate(t, "manifest.v1", filepath.Base(p)+" batch=2", readManifest(t, splitModel(t, mb, 3, emit.Options{})))
		}
	}
}

// TestManifestForms validates the manifest's optional parts on the repository model: one
// stage, many stages, external data files, stages on several devices, and everything a
// planner fills (objective, predictions, bounds, solver, timeline, memory).
func TestManifestForms(t *testing.T) {
	m := load(t, repoModel, nil)
	for _, k := range []int{1, 5} {
		mustValidate(t, "manifest.v1", fmt.Sprintf("k=%d", k), readManifest(t, splitModel(t, m, k, emit.Options{})))
	}
	ext := readManifest(t, splitModel(t, m, 2, emit.Options{ExternalData: emit.ExternalAlways}))
	if !strings.Contains(string(ext), `"data_file"`) {
		t.Error("ExternalAlways wrote no data_file: the case is not covered")
	}
	mustValidate(t, "manifest.v1", "external data", ext)

	stage, err := emit.EqualFLOPs(m.Graph, 3)
	if err != nil {
		t.Fatal(err)
	}
	a := &emit.Assignment{Stage: stage, Split: emit.SplitInfo{Method: "mtpp"},
		Devices: []emit.Device{{Name: "gpu0", Provider: "CUDAExecutionProvider"}, {Name: "gpu1", Provider: "CUDAExecutionProvider"}, {Name: "cpu"}}}
	l, err := emit.NewLayout(m, a, emit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	man := l.Manifest
	man.Objective = "throughput"
	for i := range man.Devices {
		man.Devices[i].Kind, man.Devices[i].MemoryBytes = "gpu", 80<<30
	}
	for i := range man.Stages {
		man.Stages[i].Predicted = &emit.StagePrediction{ComputeS: 1e-3, CommS: 2e-4, OverflowS: 0, TotalS: 1.2e-3}
	}
	man.Predicted = &emit.Predicted{BottleneckS: 1.2e-3, ThroughputPerS: 833.3, LatencyS: 3.6e-3}
	man.Bounds = &emit.Bounds{LowerBoundS: 1.1e-3, Method: "mip", Gap: 1 - 1.1/1.2,
		Computed: []emit.BoundValue{{Method: "simple", LowerBoundS: 9e-4, Seconds: 1e-6}, {Method: "mip", LowerBoundS: 1.1e-3, Seconds: 0.5}}}
	man.Solver = &emit.Solver{Algorithm: "slicegraph+brkga+refine", Seed: new(int64(1)), Seconds: 0.7}
	man.Timeline = []emit.TimelineEvent{
		{Device: "gpu0", Kind: emit.EventCompute, Label: "stage 0", Stage: 0, StartS: 0, EndS: 1e-3},
		{Device: "gpu0", Kind: emit.EventTransfer, Label: "t", Stage: 0, ToDevice: "gpu1", StartS: 1e-3, EndS: 1.2e-3},
	}
	man.Memory = []emit.DeviceMemory{{Device: "gpu0", UsedBytes: 1 << 20, CapacityBytes: 80 << 30}, {Device: "cpu", UsedBytes: 1 << 20}}
	dir := filepath.Join(t.TempDir(), "planned")
	if err := l.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	doc := readManifest(t, dir)
	mustValidate(t, "manifest.v1", "planner-filled manifest", doc)
	// The fields the planner filled are really in the document.
	for _, f := range []string{`"bottleneck_s"`, `"lower_bound_s"`, `"algorithm"`, `"timeline"`, `"memory"`, `"compute_s"`, `"memory_bytes"`, `"cuda"`} {
		if !strings.Contains(string(doc), f) {
			t.Errorf("planner-filled manifest lacks %s", f)
		}
	}
}

// TestInspectOfCorpus validates ingest.Summary of every corpus model, with and without the
// tensor list, and with a fusion summary as `inspect --fusion` prints it.
func TestInspectOfCorpus(t *testing.T) {
	rs, err := fusion.Builtin("ort-cpu")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(corpusModels(t), repoModel) {
		m := load(t, p, nil)
		for _, tensors := range []bool{false, true} {
			mustValidate(t, "inspect.v1", fmt.Sprintf("%s tensors=%v", filepath.Base(p), tensors), marshal(t, m.Summarize(tensors)))
		}
		c, err := fusion.Coarsen(m.Graph, rs)
		if err != nil {
			t.Fatal(err)
		}
		doc := marshal(t, struct {
			*ingest.Summary
			Fusion *fusion.Summary `json:"fusion,omitempty"`
		}{m.Summarize(false), fusion.Summarize(c, 10)})
		mustValidate(t, "inspect.v1", filepath.Base(p)+" with fusion", doc)
	}
}

// TestVerifyReports validates verify.Verify's reports: bit-exact and optimised runs, integer
// inputs (BERT), symbolic dimensions, and float16 boundaries (rounded reference and the
// plain comparison).
func TestVerifyReports(t *testing.T) {
	needORT(t)
	cases := []struct {
		path string
		k    int
		opt  verify.Options
	}{
		{repoModel, 3, verify.Options{}},
		{repoModel, 2, verify.Options{Optimize: true, Runs: 2, Seed: 7}},
	}
	if _, err := os.Stat(corpusDir); err == nil {
		cases = append(cases,
			struct {
				path string
				k    int
				opt  verify.Options
			}{filepath.Join(corpusDir, "resnet50_small_fp16.onnx"), 3, verify.Options{}},
			struct {
				path string
				k    int
				opt  verify.Options
			}{filepath.Join(corpusDir, "bert_base_like_small_op17.onnx"), 2, verify.Options{}},
			struct {
				path string
				k    int
				opt  verify.Options
			}{filepath.Join(corpusDir, "mobilenet_v2_small_dynbatch.onnx"), 2, verify.Options{Dims: map[string]int64{"batch": 2}}},
		)
	}
	sawRounded := false
	for _, c := range cases {
		dir := splitModel(t, load(t, c.path, nil), c.k, emit.Options{})
		rep, err := verify.Run(context.Background(), dir, c.opt)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if !rep.Pass {
			t.Errorf("%s: verification failed", c.path)
		}
		sawRounded = sawRounded || len(rep.Rounded) > 0
		mustValidate(t, "verify.v1", filepath.Base(c.path), marshal(t, rep))
	}
	if len(cases) > 2 && !sawRounded {
		t.Error("no report with float16-rounded boundaries: the case is not covered")
	}
}

// TestManifestMetadata: the fields that say what a run was: interrupted (present, true, only
// when it was), the solver's seed (only when given) and the model's path (relative to the
// manifest's directory, never absolute).
func TestManifestMetadata(t *testing.T) {
	m := load(t, repoModel, nil)
	stage, err := emit.EqualFLOPs(m.Graph, 2)
	if err != nil {
		t.Fatal(err)
	}
	l, err := emit.NewLayout(m, &emit.Assignment{Stage: stage, Split: emit.SplitInfo{Method: "mtpp"}}, emit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l.Manifest.Objective = "throughput"
	l.Manifest.Solver = &emit.Solver{Algorithm: "slicegraph+brkga+refine"} // unseeded
	l.Manifest.Interrupted = true
	dir := filepath.Join(t.TempDir(), "interrupted")
	if err := l.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	doc := readManifest(t, dir)
	mustValidate(t, "manifest.v1", "interrupted, unseeded", doc)
	if !strings.Contains(string(doc), `"interrupted": true`) || strings.Contains(string(doc), `"seed"`) {
		t.Errorf("want interrupted and no seed:\n%s", doc)
	}
	checkMutations(t, "manifest.v1", doc, []mutation{
		{what: "interrupted false", change: setField(t, "interrupted", false), where: "/interrupted"},
		{what: "interrupted as a string", change: setField(t, "interrupted", "yes"), where: "/interrupted"},
		{what: "an absolute path from the manifest", change: setField(t, "model/from_manifest", "/models/resnet50.onnx"), where: "/model/from_manifest"},
		{what: "seed as a string", change: setField(t, "solver/seed", "1"), where: "/solver/seed"},
	})
}
