package planner

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/profile"
)

// pipelineSetup prices the bundled ResNet-50 on devices, as Plan does without fusion.
func pipelineSetup(t *testing.T, devices string) (*graph.Graph, *profile.Cluster, [][]float64, *profile.CostTable) {
	t.Helper()
	m, err := ingest.Load(filepath.Join("..", "..", "testdata", "models", "resnet50_small.onnx"), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := hw.Resolve(context.Background(), devices, hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := m.Graph
	cm := profile.NewCostModel(c, profile.CostOptions{})
	times := make([][]float64, len(c.Devices))
	for d := range c.Devices {
		times[d] = make([]float64, len(g.Nodes))
		for v := range g.Nodes {
			times[d][v] = cm.NodeTime(g, v, d)
		}
	}
	return g, c, times, cm.Costs(&graph.Graph{})
}

// The pipeline adapter turns the graph and its costs into partition's problem: every node's
// work and memory, every activation tensor that can cross a cut once at its link cost (no
// weight-only outputs, no graph inputs), identical devices as one kind of K stages and mixed
// ones as kinds with counts; -k above the device count plans one stage per device (a note),
// and a heterogeneous -k below it is a usage error.
func TestPipelineProblem(t *testing.T) {
	g, c, times, table := pipelineSetup(t, "4xA100-80G")
	devs := []int{0, 1, 2, 3}
	mem := make([]float64, len(g.Nodes))
	for v := range mem {
		mem[v] = float64(1000 + v)
	}
	pp, err := (&run{c: c, work: g, times: times, table: table, devs: devs, identical: true, opt: Options{MaxStages: 8}, nodeMem: mem}).pipelineProblem(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := pp.problem
	if p.K != 4 || len(pp.groups) != 1 || len(pp.groups[0]) != 4 {
		t.Fatalf("K %d, groups %v: want 4 stages on one group of 4 devices", p.K, pp.groups)
	}
	if len(pp.notes) != 1 || !strings.Contains(pp.notes[0].Msg, "Options.MaxStages = 8 on 4 devices") {
		t.Errorf("notes %q: want one saying MaxStages = 8 is planned as one stage per device", pp.notes)
	}
	for v := range g.Nodes {
		if p.Work[v] != times[0][v] || p.Params[v] != mem[v] {
			t.Fatalf("node %d: work %g params %g, want %g and %g", v, p.Work[v], p.Params[v], times[0][v], mem[v])
		}
	}
	bw := table.Bandwidth[0][1]
	latBW := table.Latency[0][1] * bw
	if p.Bandwidth != bw || pp.latBW != latBW {
		t.Fatalf("bandwidth %g, latency bytes %g: want %g, %g", p.Bandwidth, pp.latBW, bw, latBW)
	}
	want := 0
	for ti := range g.Tensors {
		tn := &g.Tensors[ti]
		if tn.Producer >= 0 && len(tn.Consumers) > 0 && !g.Nodes[tn.Producer].Static {
			want++
		}
	}
	if len(p.Tensors) != want || len(pp.tensorWork) != want {
		t.Fatalf("%d tensors (%d mapped), want %d activation tensors", len(p.Tensors), len(pp.tensorWork), want)
	}
	for i, tn := range p.Tensors {
		src := &g.Tensors[pp.tensorWork[i]]
		if tn.Name != src.Name || tn.Producer != src.Producer || math.Abs(tn.Size-(float64(src.Bytes)+latBW)) > 1e-9*tn.Size {
			t.Fatalf("tensor %s: producer %d size %g, want %d and %g bytes", tn.Name, tn.Producer, tn.Size, src.Producer, float64(src.Bytes)+latBW)
		}
	}

	// Mixed devices: one kind per product, with its count and its own work.
	g, c, times, table = pipelineSetup(t, "a100-80g,a100-80g,t4")
	pp, err = (&run{c: c, work: g, times: times, table: table, devs: []int{0, 1, 2}}).pipelineProblem(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pp.problem.Devices) != 2 || pp.problem.Devices[0].Count != 2 || pp.problem.Devices[1].Count != 1 {
		t.Fatalf("devices %+v: want A100 ×2 and T4 ×1", pp.problem.Devices)
	}
	if pp.problem.Devices[1].Work[0] != times[2][0] {
		t.Errorf("the T4 kind's work is not the T4's times")
	}
	_, err = (&run{c: c, work: g, times: times, table: table, devs: []int{0, 1, 2}, opt: Options{MaxStages: 2}}).pipelineProblem(nil)
	if diag.KindOf(err) != diag.KindUsage || !strings.Contains(err.Error(), "Options.MaxStages = 2") {
		t.Errorf("-k 2 on 3 mixed devices: %v, want a usage error naming Options.MaxStages = 2", err)
	}
}
