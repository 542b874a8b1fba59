package schedule

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"
)

// diamond is s → {a, b} → t on two devices with calls of 2 and transfers of 1, s and t on
// d0 only: without a cap the branches run in parallel (optimum 20: b on d1 reads from s, t
// on d0 reads from b, two openers), within one stage per device at most one node may read
// from the other device, so b (or a) on d1 is out, and the best plan is everything on d0:
// 2 + 1 + 10 + 10 + 1 = 24.
func diamond() *Problem {
	tr := [][]float64{{0, 1}, {1, 0}}
	node := func(name string, t float64) Node { return Node{Name: name, Time: []float64{t, t}} }
	return &Problem{
		Nodes:   []Node{{Name: "s", Time: []float64{1, math.Inf(1)}}, node("a", 10), node("b", 10), {Name: "t", Time: []float64{1, math.Inf(1)}}},
		Edges:   []Edge{{From: 0, To: 1, Time: tr}, {From: 0, To: 2, Time: tr}, {From: 1, To: 3, Time: tr}, {From: 2, To: 3, Time: tr}},
		Devices: []Device{{Name: "d0", CallCost: 2}, {Name: "d1", CallCost: 2}},
	}
}

// TestCappedBoundKnown checks the capped module DP on an instance whose capped optimum (24)
// is above every bound of the uncapped problem (whose optimum is 20): the plan within one
// stage per device must be proved optimal by module-dp-capped, and that bound must equal 24.
func TestCappedBoundKnown(t *testing.T) {
	p := diamond()
	in, err := prepare(p)
	if err != nil {
		t.Fatal(err)
	}
	r1 := in.cappedModuleDP(context.Background(), time.Time{}, 1_000_000, 1, 1, 0, false)
	if r1 == nil || !r1.exact || math.Abs(r1.bound-24) > 1e-6 {
		t.Fatalf("capped module DP: %+v, want 24", r1)
	}
	// Its stitched placement is the capped optimum: everything on d0.
	for i, u := range r1.dev {
		if u != 0 {
			t.Errorf("stitched placement %v: node %d on d%d", r1.dev, i, u)
		}
	}
	// Two stages per device allow the parallel plan: the bound must not exceed its 20.
	if r2 := in.cappedModuleDP(context.Background(), time.Time{}, 1_000_000, 1, 2, 0, false); r2 == nil || r2.bound > 20+1e-9 {
		t.Fatalf("capped module DP at 2 stages per device: %+v, above the plan of 20", r2)
	}
	r, err := Solve(context.Background(), p, Options{MaxStagesPerDevice: 1, TimeLimit: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var capped *Bound
	for x := range r.Bounds {
		if r.Bounds[x].Method == cappedBoundName {
			capped = &r.Bounds[x]
		} else if r.Bounds[x].Value > 20+1e-9 {
			t.Errorf("uncapped bound %v above the uncapped optimum 20", r.Bounds[x])
		}
	}
	if capped == nil || math.Abs(capped.Value-24) > 1e-6 {
		t.Fatalf("bounds %v: want %s = 24", r.Bounds, cappedBoundName)
	}
	if math.Abs(r.Makespan-24) > 1e-9 || !r.Optimal {
		t.Errorf("capped plan %v (optimal %v), want 24 proved optimal", r.Makespan, r.Optimal)
	}

	u, err := Solve(context.Background(), p, Options{TimeLimit: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range u.Bounds {
		if CappedBound(b.Method) {
			t.Errorf("capped bound %v without a cap", b)
		}
	}
	if math.Abs(u.Makespan-20) > 1e-9 {
		t.Errorf("uncapped plan %v, want 20", u.Makespan)
	}
}

// TestCappedSkipped: on more than two devices above cappedMaxNodes3 nodes the capped module
// DP runs only with a long time limit (large), or on the problem with its chains contracted
// (bounds_chains.go) when that has at most cappedMaxNodesChains nodes. A ladder (every node
// reads its two predecessors) has no chain node: it says why it skipped, and given the time
// it runs (TestCappedSkipNoted: Solve passes the reason on).
func TestCappedSkipped(t *testing.T) {
	const n = cappedMaxNodes3 + 10
	tr := [][]float64{{0, 1, 1}, {1, 0, 1}, {1, 1, 0}}
	p := &Problem{Devices: []Device{{Name: "a", CallCost: 2}, {Name: "b", CallCost: 2}, {Name: "c", CallCost: 2}}}
	for i := range n {
		p.Nodes = append(p.Nodes, Node{Name: fmt.Sprint("n", i), Time: []float64{1 + float64(i%3), 2, 3 - float64(i%2)}})
		for _, d := range []int{1, 2} {
			if i >= d {
				p.Edges = append(p.Edges, Edge{From: i - d, To: i, Time: tr})
			}
		}
	}
	in, err := prepare(p)
	if err != nil {
		t.Fatal(err)
	}
	if r := in.cappedModuleDP(context.Background(), time.Time{}, 1_000_000, 1, 2, 0, false); r == nil || r.skipped == "" || r.bound != 0 {
		t.Fatalf("capped module DP on %d nodes and 3 devices, not large: %+v, want skipped", n, r)
	}
	if r := in.cappedModuleDP(context.Background(), time.Time{}, 50_000_000, 1, 2, 0, true); r == nil || r.skipped != "" || r.bound <= 0 {
		t.Fatalf("capped module DP given the time: %+v, want a bound", r)
	}
}

// TestCappedChainsContracted: the same size as a chain (every node but the ends a chain
// node) runs on the contracted problem without a long limit, and its bound is at most the
// exact search's (a relaxation of it: bounds_chains.go) and positive.
func TestCappedChainsContracted(t *testing.T) {
	const n = cappedMaxNodes3 + 10
	tr := [][]float64{{0, 1, 1}, {1, 0, 1}, {1, 1, 0}}
	p := &Problem{Devices: []Device{{Name: "a", CallCost: 2}, {Name: "b", CallCost: 2}, {Name: "c", CallCost: 2}}}
	for i := range n {
		p.Nodes = append(p.Nodes, Node{Name: fmt.Sprint("n", i), Time: []float64{1 + float64(i%3), 2, 3 - float64(i%2)}})
		if i > 0 {
			p.Edges = append(p.Edges, Edge{From: i - 1, To: i, Time: tr})
		}
	}
	in, err := prepare(p)
	if err != nil {
		t.Fatal(err)
	}
	r := in.cappedModuleDP(context.Background(), time.Time{}, 1_000_000, 1, 2, 0, false)
	if r == nil || r.skipped != "" || !r.chains || !r.exact || r.bound <= 0 {
		t.Fatalf("capped module DP on %d nodes and 3 devices, not large: %+v, want a bound on the contracted chains", n, r)
	}
	x := in.cappedModuleDP(context.Background(), time.Time{}, 50_000_000, 1, 2, 0, true)
	if x == nil || x.chains || !x.exact {
		t.Fatalf("the exact search: %+v", x)
	}
	if r.bound > x.bound*(1+1e-9) {
		t.Errorf("contracted bound %.9g above the exact search's %.9g", r.bound, x.bound)
	}
	t.Logf("contracted %.6g, exact %.6g", r.bound, x.bound)
}
