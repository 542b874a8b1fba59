package fromgraph

import (
	"context"
	"math"
	"os"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/profile"
	"github.com/onnxpart/onnxpart/schedule"
)

func load(t *testing.T, spec string) (*ingest.Model, *profile.CostModel) {
	t.Helper()
	path := "../../testdata/models/resnet50_small.onnx"
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no test model: %v", err)
	}
	m, err := ingest.Load(path, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := profile.Resolve(context.Background(), spec, profile.Options{Host: profile.HostOptions{NoBench: true, NoCache: true}})
	if err != nil {
		t.Fatal(err)
	}
	return m, profile.NewCostModel(cl, profile.CostOptions{})
}

func TestProblemFromGraph(t *testing.T) {
	m, cm := load(t, "a100-80g,t4")
	g := m.Graph
	p, nodeOf, err := Problem(g, cm, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Devices) != 2 || len(p.Nodes) == 0 || len(nodeOf) != len(p.Nodes) {
		t.Fatalf("%d devices, %d nodes, %d mapped", len(p.Devices), len(p.Nodes), len(nodeOf))
	}
	for i, v := range nodeOf {
		if g.Nodes[v].Static {
			t.Fatalf("static node %s in the problem", g.Nodes[v].Name)
		}
		for u := range p.Devices {
			want := cm.NodeTime(g, v, u) * 1e3
			if math.Abs(p.Nodes[i].Time[u]-want) > 1e-9*math.Max(1, want) {
				t.Fatalf("node %s on %d: %v ms, cost model %v ms", p.Nodes[i].Name, u, p.Nodes[i].Time[u], want)
			}
		}
	}
	// A transfer over the problem's links takes what the cost model says.
	checked := 0
	for _, e := range p.Edges[:min(5, len(p.Edges))] {
		sc, err := schedule.Simulate(p, &schedule.Placement{Device: onDevice1(len(p.Nodes), e.To)})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range sc.Transfers {
			checked++
			want := cm.TransferTime(int64(p.Edges[tr.Edge].Bytes), tr.Src, tr.Dst) * 1e3
			if got := tr.End - tr.Start; math.Abs(got-want) > 1e-6*math.Max(1, want) {
				t.Fatalf("transfer %v ms, cost model %v ms", got, want)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no transfer checked")
	}
	r, err := schedule.Solve(context.Background(), p, schedule.Options{Method: schedule.HEFT})
	if err != nil {
		t.Fatal(err)
	}
	dev := Devices(g, nodeOf, r)
	for v := range g.Nodes {
		if (dev[v] < 0) != g.Nodes[v].Static {
			t.Fatalf("node %s: device %d, static %v", g.Nodes[v].Name, dev[v], g.Nodes[v].Static)
		}
	}
}

// onDevice1 puts node x on device 1 and everything else on device 0.
func onDevice1(n, x int) []int {
	d := make([]int, n)
	d[x] = 1
	return d
}

func TestBatchedFromGraph(t *testing.T) {
	m, cm := load(t, "a100-80g,t4")
	p, _, err := Problem(m.Graph, cm, Options{Batch: 16})
	if err != nil {
		t.Fatal(err)
	}
	if p.Batch != 4 || p.GranuleSize != 4 {
		t.Fatalf("batch %d × %d", p.Batch, p.GranuleSize)
	}
	for _, nd := range p.Nodes {
		for u := range nd.BatchTime {
			for c := 1; c < 4; c++ {
				if nd.BatchTime[u][c] < nd.BatchTime[u][c-1] {
					t.Fatalf("%s: batch times decrease: %v", nd.Name, nd.BatchTime[u])
				}
			}
		}
	}
	r, err := schedule.Solve(context.Background(), p, schedule.Options{Method: schedule.Greedy, TimeLimit: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Throughput <= 0 {
		t.Fatalf("throughput %v", r.Throughput)
	}
	if _, _, err := Problem(m.Graph, cm, Options{Batch: 10}); err == nil {
		t.Error("batch 10 in 4 granules: no error")
	}
}
