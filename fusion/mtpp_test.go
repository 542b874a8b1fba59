package fusion_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/partition"
)

// A nominal accelerator for the MTPP comparison (profile's calibrated roofline was not yet
// available): 14 TFLOP/s, 900 GB/s memory, 5 µs per kernel launch, 12 GB/s links. Times in
// microseconds, bytes per microsecond.
const (
	peakFLOPsPerUS = 14e6
	memBytesPerUS  = 900e3
	launchUS       = 5
	linkBytesPerUS = 12e3
	mtppStages     = 4
)

// kernelTime is the roofline time of one kernel with the node's cost fields.
func kernelTime(n *graph.Node) float64 {
	bytes := float64(n.InputBytes + n.ParamBytes + n.OutputBytes)
	return math.Max(float64(n.FLOPs)/peakFLOPsPerUS, bytes/memBytesPerUS) + launchUS
}

// problemOf turns a graph into an MTPP instance: work per node (0 for the nodes in skip,
// which the backend folds before run time), parameter bytes, and every tensor a node
// produces (tensors of skipped nodes are constants each stage holds: no transfers).
func problemOf(g *graph.Graph, work []float64, skip []bool) *partition.Problem {
	p := &partition.Problem{Name: g.Name, Work: work, Params: make([]float64, len(g.Nodes)),
		K: mtppStages, Bandwidth: linkBytesPerUS}
	for v := range g.Nodes {
		p.Params[v] = float64(g.Nodes[v].ParamBytes)
	}
	for t := range g.Tensors {
		tt := &g.Tensors[t]
		if tt.Producer < 0 || len(tt.Consumers) == 0 || (skip != nil && skip[tt.Producer]) {
			continue
		}
		p.Tensors = append(p.Tensors, partition.Tensor{Name: tt.Name, Producer: tt.Producer,
			Consumers: tt.Consumers, Size: float64(max(tt.Bytes, 0))})
	}
	return p
}

// reality prices plans on the original nodes the way the backend runs them: a group whose
// kernel nodes a plan keeps in one stage runs as the fused kernel (charged to its first
// kernel node), a group the plan splits runs its nodes unfused; absorbed nodes are folded.
func reality(c *fusion.Grouping, stage []int) *partition.Problem {
	g := c.Orig
	work := make([]float64, len(g.Nodes))
	for i, grp := range c.Groups {
		var kernel []int
		for _, v := range grp {
			if !c.Absorbed[v] {
				kernel = append(kernel, v)
			}
		}
		intact := true
		for _, v := range kernel {
			intact = intact && stage[v] == stage[kernel[0]]
		}
		if intact {
			work[kernel[0]] = kernelTime(&c.Graph.Nodes[i])
			continue
		}
		for _, v := range kernel {
			work[v] = kernelTime(&g.Nodes[v])
		}
	}
	return problemOf(g, work, c.Absorbed)
}

// TestMTPPWithCoarsening compares the MTPP solver (partition.Solve, BRKGA + refinement,
// simple bounds, k = 4) on every corpus model with and without coarsening by ort-cuda: solve
// time, and the plans' bottleneck priced as the backend runs them. It is a measurement, not
// a unit test: it runs with ONNXPART_MTPP=1 (make bench-fusion).
func TestMTPPWithCoarsening(t *testing.T) {
	if os.Getenv("ONNXPART_MTPP") != "1" {
		t.Skip("set ONNXPART_MTPP=1 to run the MTPP comparison")
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "shared", "models", "*.onnx"))
	if len(files) == 0 {
		t.Skip("model corpus not found")
	}
	set := os.Getenv("ONNXPART_MTPP_RULES")
	if set == "" {
		set = "ort-cuda"
	}
	rs, err := fusion.Builtin(set)
	if err != nil {
		t.Fatal(err)
	}
	opts := partition.Options{Seed: 1, Bounds: partition.BoundsSimple, Workers: 1}
	var b strings.Builder
	fmt.Fprintf(&b, "\nMTPP, k=%d, rule set %s (times in µs of the nominal device)\n", mtppStages, set)
	fmt.Fprintf(&b, "| model | nodes | solve s | plan (real) | coarse nodes | solve s | plan (real) | solve time | bottleneck |\n")
	fmt.Fprintf(&b, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	var sumT0, sumT1 float64
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".onnx")
		if strings.Contains(name, "dynbatch") || strings.Contains(name, "fp16") {
			continue // the same graphs as their plain versions
		}
		m, err := ingest.Load(f, ingest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		g := m.Graph
		c, err := fusion.Coarsen(g, rs)
		if err != nil {
			t.Fatal(err)
		}
		// Without coarsening: every node priced unfused, constants folded.
		work := make([]float64, len(g.Nodes))
		for v := range g.Nodes {
			if !c.Absorbed[v] {
				work[v] = kernelTime(&g.Nodes[v])
			}
		}
		start := time.Now()
		p0, err := partition.Solve(context.Background(), problemOf(g, work, c.Absorbed), opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t0 := time.Since(start).Seconds()
		// With coarsening: the coarse graph priced as fused kernels.
		cw := make([]float64, len(c.Graph.Nodes))
		for i := range cw {
			cw[i] = kernelTime(&c.Graph.Nodes[i])
		}
		start = time.Now()
		p1, err := partition.Solve(context.Background(), problemOf(c.Graph, cw, nil), opts)
		if err != nil {
			t.Fatalf("%s coarse: %v", name, err)
		}
		t1 := time.Since(start).Seconds()
		exp, err := c.Expand(p1.Assignment)
		if err != nil {
			t.Fatal(err)
		}
		_, real0, err := reality(c, p0.Assignment).Evaluate(p0.Assignment, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, real1, err := reality(c, exp).Evaluate(exp, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Pricing the expanded coarse plan as the backend runs it must give what the solver
		// saw on the coarse graph: every group is intact.
		if math.Abs(real1-p1.Objective) > 1e-6*math.Max(1, p1.Objective) {
			t.Errorf("%s: coarse plan %.3f on the coarse graph, %.3f expanded", name, p1.Objective, real1)
		}
		sumT0 += t0
		sumT1 += t1
		fmt.Fprintf(&b, "| %s | %d | %.2f | %.1f | %d | %.2f | %.1f | %+.0f%% | %+.1f%% |\n", name, len(g.Nodes), t0, real0,
			len(c.Graph.Nodes), t1, real1, 100*(t1/t0-1), 100*(real1/real0-1))
	}
	fmt.Fprintf(&b, "total solve time: %.1f s without coarsening, %.1f s with (%+.0f%%)\n", sumT0, sumT1, 100*(sumT1/sumT0-1))
	t.Log(b.String())
}
