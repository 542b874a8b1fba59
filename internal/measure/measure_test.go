package measure

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/profile"
)

func corpusModel(t *testing.T, name string) (string, *graph.Graph) {
	t.Helper()
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
	p, _ := filepath.Abs(filepath.Join("..", "..", "..", "shared", "models", name))
	m, err := ingest.Load(p, ingest.Options{})
	if err != nil {
		t.Skip(err)
	}
	return p, m.Graph
}

// Every kernel of the graph ONNX Runtime runs maps to original nodes, except kernels that
// only read graph inputs (an input reorder or cast), and every convolution is covered.
func TestMapKernelsCorpus(t *testing.T) {
	for _, name := range []string{"squeezenet1_1_small.onnx", "resnet50_small_fp16.onnx", "bert_base_like_small.onnx"} {
		t.Run(name, func(t *testing.T) {
			p, g := corpusModel(t, name)
			out := filepath.Join(t.TempDir(), "opt.onnx")
			if err := ort.Init(); err != nil {
				t.Skip(err)
			}
			if err := saveOptimized(p, out, g, MeasureOptions{Threads: 1}); err != nil {
				t.Fatal(err)
			}
			opt, err := readOptNodes(out)
			if err != nil {
				t.Fatal(err)
			}
			km := MapKernels(g, opt)
			inputs := map[string]bool{}
			for _, id := range g.Inputs {
				inputs[g.Tensors[id].Name] = true
			}
			covered := map[int]bool{}
			for _, n := range opt {
				ids := km.Nodes[n.Name]
				for _, v := range ids {
					covered[v] = true
				}
				if len(ids) > 0 {
					continue
				}
				for _, in := range n.Inputs {
					if id, ok := g.TensorByName(in); ok && g.Tensors[id].Producer >= 0 {
						t.Errorf("kernel %s (%s) reads %s but maps to nothing", n.Name, n.Op, in)
					}
				}
			}
			for v := range g.Nodes {
				if c := profile.ClassOf(g, &g.Nodes[v]); (c == profile.ClassConv || c == profile.ClassMatMul) && !covered[v] {
					t.Errorf("%s (%s) is computed by no kernel", g.Nodes[v].Label(), g.Nodes[v].OpType)
				}
			}
		})
	}
}

func TestMeasureORT(t *testing.T) {
	p, g := corpusModel(t, "squeezenet1_1_small.onnx")
	m, err := MeasureORT(context.Background(), p, g, MeasureOptions{Runs: 6, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Node) != len(g.Nodes) || m.Runs != 6 || m.Optimized == 0 || !(m.Call > 0) || !(m.NodeSum > 0) {
		t.Fatalf("measurement %+v", m)
	}
	if m.Unmapped != 0 {
		t.Errorf("unmapped kernel time %g", m.Unmapped)
	}
	for v := range g.Nodes {
		n := &g.Nodes[v]
		if n.OpType == "Conv" && !(m.Node[v] > 0) {
			t.Errorf("%s: no time", n.Label())
		}
		if n.Static && m.Node[v] != 0 {
			t.Errorf("static %s: %g", n.Label(), m.Node[v])
		}
	}
	h, err := devices.ProbeHost(context.Background(), devices.HostOptions{NoBench: true})
	if err != nil {
		t.Fatal(err)
	}
	d := devices.HostDevice(h, "cpu", 1)
	cal := profile.Calibrate(&d, []profile.Sample{{Graph: g, Measured: m}})
	if _, ok := cal.Classes[profile.ClassConv]; !ok {
		t.Errorf("no conv fit: %+v", cal)
	}
	cm := profile.NewCostModel(oneDevice(d), profile.CostOptions{Measured: [][]float64{m.NodeTimes()}})
	for v := range g.Nodes {
		if cm.NodeTime(g, v, 0) != m.Node[v] {
			t.Fatalf("measured node times not used")
		}
	}
}
