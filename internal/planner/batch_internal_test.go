package planner

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/profile"
)

// A batched node's time grows with the batch except for its class overhead: a convolution
// on an A100 (overhead 6 µs, profile's GPU defaults, not the 5 µs launch figure) costs
// 6 µs + inputs × (t − 6 µs), and an elementwise one 1.6 µs + inputs × (t − 1.6 µs).
func TestBatchedScalingUsesClassOverhead(t *testing.T) {
	m, err := ingest.Load(filepath.Join("..", "..", "testdata", "models", "resnet50_small.onnx"), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := hw.Resolve(context.Background(), "a100-80g", hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := m.Graph
	cm := profile.NewCostModel(c, profile.CostOptions{})
	times := [][]float64{make([]float64, len(g.Nodes))}
	overs := [][]float64{make([]float64, len(g.Nodes))}
	for v := range g.Nodes {
		times[0][v] = cm.NodeTime(g, v, 0)
		overs[0][v] = cm.NodeOverhead(g, v, 0)
	}
	const granules, per = 4, 2
	p := placementProblem(placement{c: c, g: g, devs: []int{0}, times: times, overs: overs, table: cm.Costs(g), granules: granules, per: per})
	want := map[profile.OpClass]float64{profile.ClassConv: 6e-6, profile.ClassEpilogue: 1.6e-6}
	seen := map[profile.OpClass]bool{}
	for v := range g.Nodes {
		cl := profile.ClassOn(&c.Devices[0], g, &g.Nodes[v])
		over, ok := want[cl]
		if !ok {
			continue
		}
		seen[cl] = true
		if overs[0][v] != over {
			t.Fatalf("%s (%s): overhead %g, want %g", g.Nodes[v].Label(), cl, overs[0][v], over)
		}
		tt := times[0][v]
		for k := 1; k <= granules; k++ {
			got := p.Nodes[v].BatchTime[0][k-1]
			exp := over + float64(k*per)*(tt-over)
			if math.Abs(got-exp) > 1e-12 {
				t.Fatalf("%s: %d granules of %d take %g s, want %g", g.Nodes[v].Label(), k, per, got, exp)
			}
		}
	}
	if !seen[profile.ClassConv] || !seen[profile.ClassEpilogue] {
		t.Fatalf("resnet50_small has no conv or epilogue node: %v", seen)
	}
}
