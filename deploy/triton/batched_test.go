package triton

import (
	"context"
	"encoding/binary"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	hw "github.com/onnxpart/onnxpart/devices"

	"github.com/onnxpart/onnxpart"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/feeds"
	"github.com/onnxpart/onnxpart/internal/ort"
)

// TestTritonBatchedPlan (issue 40): `--devices 2xT4 --batch 8 --emit triton` wrote triton/
// and route1/triton/, both with models named <model>_stage0: they collided in one server and
// nothing split the batch. Now the output tree holds one repository whose model names are
// unique, every config parses against Triton's ModelConfig schema, every ensemble (the one
// that takes the whole batch, and each route's) is wired as Triton's loader wants, and the
// ensemble's steps — split, every route's stages, concat — run in ONNX Runtime give each
// input's output of the unmodified model.
func TestTritonBatchedPlan(t *testing.T) {
	model := filepath.Join("..", "..", "testdata", "models", "resnet50_small.onnx")
	m, err := ingest.Load(model, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := hw.Resolve(context.Background(), "2xT4", hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := onnxpart.Plan(context.Background(), m, c, onnxpart.Options{Batch: 8, Seed: 3, Reproducible: true, TimeLimit: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Batch == nil || len(r.Batch.Routes) < 2 {
		t.Fatalf("want a plan of several routes, got %+v", r.Batch)
	}
	extras := func(dir string, man *emit.Manifest) error { return Write(man, dir, filepath.Join(dir, Dir), Options{}) }
	l, err := onnxpart.Prepare(m, r, emit.Options{Extras: extras}, 3)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := l.WriteDir(out); err != nil {
		t.Fatal(err)
	}
	// One repository in the whole tree, names unique.
	var repos []string
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == Dir {
			repos = append(repos, p)
		}
		return nil
	})
	if len(repos) != 1 || repos[0] != filepath.Join(out, Dir) {
		t.Fatalf("Triton repositories %v: want one, in the top directory (route repositories repeat the model names)", repos)
	}
	repo := repos[0]
	configs := map[string]*tritonConfig{}
	ents, err := os.ReadDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		configs[e.Name()] = parseTritonConfig(t, mustRead(t, filepath.Join(repo, e.Name(), "config.pbtxt")))
	}
	var ensembles []string
	for name, c := range configs {
		if c.name != name {
			t.Errorf("model directory %q holds config named %q", name, c.name)
		}
		if c.platform == "ensemble" {
			ensembles = append(ensembles, name)
			checkEnsemble(t, configs, name)
		}
	}
	if len(ensembles) != len(r.Batch.Routes)+1 {
		t.Errorf("ensembles %v: want the whole batch's and one per route", ensembles)
	}
	top := configs["resnet50_small"]
	if top == nil || top.platform != "ensemble" || top.inputs["input"].dims != "8,3,224,224" {
		t.Fatalf("the ensemble resnet50_small: %+v", top)
	}
	// Every route's stage files are in the repository under their own names.
	for ri := range r.Batch.Routes {
		man, err := emit.ReadManifest(filepath.Join(out, onnxpart.RouteDir(ri)))
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range man.Stages {
			f := filepath.Join(repo, "resnet50_small_route"+itoa(ri)+"_stage"+itoa(st.Index), "1", "model.onnx")
			if fileSHA(t, f) != st.SHA256 {
				t.Errorf("route %d stage %d: %s is not the stage file", ri, st.Index, f)
			}
		}
	}
	if err := ort.Init(); err != nil {
		t.Logf("ONNX Runtime not available (%v): the ensemble is not run", err)
		return
	}
	runEnsemble(t, model, repo, configs, "resnet50_small", 8)
}

func itoa(i int) string { return strconv.Itoa(i) }

// runEnsemble runs ensemble name's steps in ONNX Runtime (each step's model.onnx, in an
// order its inputs allow) on n random inputs at once, and compares every output's slice per
// input with the model run on that input alone.
func runEnsemble(t *testing.T, model, repo string, configs map[string]*tritonConfig, name string, n int) {
	ins, outs, err := ort.ModelIO(model)
	if err != nil {
		t.Fatal(err)
	}
	one, values, err := feeds.Batch(59, ins, n) // per input; ensemble tensors
	if err != nil {
		t.Fatal(err)
	}
	var inNames, outNames []string
	for _, in := range ins {
		inNames = append(inNames, in.Name)
	}
	for _, o := range outs {
		outNames = append(outNames, o.Name)
	}
	steps := configs[name].steps()
	done := make([]bool, len(steps))
	for progress := true; progress; {
		progress = false
		for i, s := range steps {
			ready := !done[i]
			for _, et := range s.in {
				ready = ready && values[et] != nil
			}
			if !ready {
				continue
			}
			done[i], progress = true, true
			feeds := map[string]*ort.Tensor{}
			var sin, sout []string
			for mt, et := range s.in {
				feeds[mt] = values[et]
				sin = append(sin, mt)
			}
			for mt := range s.out {
				sout = append(sout, mt)
			}
			sess, err := ort.NewSession(filepath.Join(repo, s.model, "1", "model.onnx"), sin, sout, ort.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := sess.Run(feeds, nil)
			sess.Close()
			if err != nil {
				t.Fatalf("step %s: %v", s.model, err)
			}
			for mt, et := range s.out {
				values[et] = got[mt]
			}
		}
	}
	ref, err := ort.NewSession(model, inNames, outNames, ort.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	for k := range n {
		want, err := ref.Run(one[k], nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outNames {
			w, g := want[o], values[o]
			if g == nil || g.Shape[0] != int64(n) || g.DType != graph.Float {
				t.Fatalf("ensemble output %s: %+v", o, g)
			}
			size := len(w.Data)
			for j := 0; j < size; j += 4 {
				a := math.Float32frombits(binary.LittleEndian.Uint32(w.Data[j:]))
				b := math.Float32frombits(binary.LittleEndian.Uint32(g.Data[k*size+j:]))
				if math.Abs(float64(a-b)) > 1e-4*(1+math.Abs(float64(a))) {
					t.Fatalf("output %s, input %d: ensemble %g, model %g", o, k, b, a)
				}
			}
		}
	}
}

// TestTritonEveryObjective: for a pipeline, a latency placement and a batched plan of the
// same model, the output tree holds exactly one Triton repository, with unique model names,
// every config valid against the ModelConfig schema and every ensemble wired as Triton's
// loader wants; the client calls the model's name in each.
func TestTritonEveryObjective(t *testing.T) {
	model := filepath.Join("..", "..", "testdata", "models", "resnet50_small.onnx")
	m, err := ingest.Load(model, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, devices string
		opt           onnxpart.Options
	}{
		{"pipeline", "2xT4", onnxpart.Options{}},
		{"latency", "a100-80g,t4,cpu", onnxpart.Options{StagesPerDevice: onnxpart.NoStageCap}},
		{"batched", "a100-80g,t4,t4", onnxpart.Options{Batch: 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := hw.Resolve(context.Background(), tc.devices, hw.Options{})
			if err != nil {
				t.Fatal(err)
			}
			o := tc.opt
			o.Seed, o.Reproducible, o.TimeLimit = 3, true, 20*time.Second
			r, err := onnxpart.Plan(context.Background(), m, c, o)
			if err != nil {
				t.Fatal(err)
			}
			extras := func(dir string, man *emit.Manifest) error { return Write(man, dir, filepath.Join(dir, Dir), Options{}) }
			l, err := onnxpart.Prepare(m, r, emit.Options{Extras: extras}, 3)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out")
			if err := l.WriteDir(out); err != nil {
				t.Fatal(err)
			}
			var repos []string
			filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() && d.Name() == Dir {
					repos = append(repos, p)
				}
				return nil
			})
			if len(repos) != 1 {
				t.Fatalf("Triton repositories %v, want one", repos)
			}
			configs := map[string]*tritonConfig{}
			ents, err := os.ReadDir(repos[0])
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				configs[e.Name()] = parseTritonConfig(t, mustRead(t, filepath.Join(repos[0], e.Name(), "config.pbtxt")))
			}
			if configs["resnet50_small"] == nil || configs["resnet50_small"].platform != "ensemble" {
				t.Fatalf("no ensemble named after the model among %d models", len(configs))
			}
			for name, c := range configs {
				if c.name != name {
					t.Errorf("model directory %q holds config named %q", name, c.name)
				}
				if c.platform == "ensemble" {
					checkEnsemble(t, configs, name)
				}
			}
			t.Logf("%d stages, %d models", len(r.Stages), len(configs))
		})
	}
}
