package instances

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/onnxpart/onnxpart/partition"
)

var benchDir = filepath.Join("..", "..", "..", "shared", "benchmarks", "dnn-partitioning")

func TestLoadDNN(t *testing.T) {
	path := filepath.Join(benchDir, "OperatorGraphs", "bert_l-3_inference.json")
	if _, err := os.Stat(path); err != nil {
		t.Skip("dnn-partitioning benchmark not present:", err)
	}
	d, err := LoadDNN(path, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := d.Problem
	if p.NumNodes() != 235 || len(d.IDs) != 235 || p.K != 3 || len(p.Devices) != 0 {
		t.Fatalf("nodes %d, k %d, devices %d", p.NumNodes(), p.K, len(p.Devices))
	}
	// 128 colour classes over 235 nodes: the groups with more than one member.
	members := 0
	for _, g := range p.Colocate {
		members += len(g)
	}
	if got := 235 - members + len(p.Colocate); got != 128 {
		t.Fatalf("%d colocation classes, want 128", got)
	}
	d2, err := LoadDNN(path, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(d2.Problem.Devices) != 2 || d2.Problem.Devices[1].Count != 1 || !math.IsInf(d2.Problem.Devices[1].Bandwidth, 1) {
		t.Fatalf("with-CPU devices %+v", d2.Problem.Devices)
	}
	if _, err := LoadDNN(filepath.Join(benchDir, "README.md"), 2, 0); err == nil {
		t.Fatal("README accepted as an instance")
	}
}

// TestDNNOptima solves the cheap cells of the README table (layer graphs) and checks the
// objective and the certificate; the full table is `make bench-partition`.
func TestDNNOptima(t *testing.T) {
	if _, err := os.Stat(benchDir); err != nil {
		t.Skip("dnn-partitioning benchmark not present")
	}
	for _, r := range DNNReferences {
		if r.Instance != "LayerGraphs/bert24_inference.json" && !(r.Instance == "LayerGraphs/resnet50_inference.json" && r.K == 4) {
			continue
		}
		for _, cpus := range []int{0, 1} {
			d, err := LoadDNN(filepath.Join(benchDir, r.Instance), r.K, cpus)
			if err != nil {
				t.Fatal(err)
			}
			pl, err := partition.Solve(context.Background(), d.Problem, partition.Options{Seed: 1, Bounds: partition.BoundsSimple,
				BRKGA: partition.BRKGAOptions{Population: 20, Generations: 5}})
			if err != nil {
				t.Fatal(err)
			}
			want := r.NoCPU
			if cpus > 0 {
				want = r.WithCPU
			}
			if !MatchesReference(pl.Objective, want) {
				t.Errorf("%s k=%d cpus=%d: objective %.10g, optimum %.10g", r.Instance, r.K, cpus, pl.Objective, want)
			}
			for _, b := range pl.Bounds {
				if b.Status == "fault" || b.Value > pl.Objective*(1+1e-9) {
					t.Errorf("%s k=%d cpus=%d: bound %+v above the objective %v", r.Instance, r.K, cpus, b, pl.Objective)
				}
			}
			if pl.Gap > 1e-6 {
				t.Errorf("%s k=%d cpus=%d: gap %v (bound %v by %s)", r.Instance, r.K, cpus, pl.Gap, pl.LowerBound, pl.BoundMethod)
			}
		}
	}
}

func TestMatchesReference(t *testing.T) {
	if !MatchesReference(33.7746660001, 33.774666) || MatchesReference(33.7747, 33.774666) {
		t.Fatal("9-digit comparison wrong")
	}
}

func TestRegalGenerator(t *testing.T) {
	a := Regal(7, 4, RegalOptions{})
	b := Regal(7, 4, RegalOptions{})
	if a.Name != b.Name || len(a.Work) != len(b.Work) || a.Work[3] != b.Work[3] {
		t.Fatal("generator is not deterministic")
	}
	if n := len(a.Work); n < 50 || n > 200 {
		t.Fatalf("%d nodes", n)
	}
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	// Work ≥ in + out tensor sizes (r is clipped at 0).
	in := make([]float64, len(a.Work))
	out := make([]float64, len(a.Work))
	for _, tn := range a.Tensors {
		out[tn.Producer] = tn.Size
		for _, c := range tn.Consumers {
			in[c] += tn.Size
		}
	}
	for v := range a.Work {
		if a.Work[v] < in[v]+out[v]-1e-9 && out[v] > 0 {
			t.Fatalf("node %d work %v < in %v + out %v", v, a.Work[v], in[v], out[v])
		}
	}
	l := Layered(1, 500, 32, 16)
	if err := l.Validate(); err != nil || l.NumNodes() != 500 {
		t.Fatalf("layered: %v", err)
	}
}
