package schedule

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// chainProblem is a chain of n nodes on two devices where device 0 is the faster on every
// node and every device pays a call: the single-device plan on device 0 meets the
// critical-path bound, so it is optimal before any search runs.
func chainProblem(n int) *Problem {
	p := &Problem{Devices: []Device{{Name: "fast", CallCost: 2}, {Name: "slow", CallCost: 2}}, Congestion: true,
		Links: [][]Link{{{}, {Bandwidth: 1, Latency: 1}}, {{Bandwidth: 1, Latency: 1}, {}}}}
	for i := range n {
		p.Nodes = append(p.Nodes, Node{Name: fmt.Sprintf("n%d", i), Time: []float64{1 + float64(i%3), 3 + float64(i%5)}})
		if i > 0 {
			p.Edges = append(p.Edges, Edge{From: i - 1, To: i, Bytes: 4})
		}
	}
	return p
}

// TestStopsWhenOptimal: once the best plan meets the best bound, Solve runs no further phase
// (the coupled LP, the coupled MIP, MILP-SPLIT, the MILP) and EA and SA stop at once, in
// every method, whatever the time limit (counted in phases and iterations, not seconds).
func TestStopsWhenOptimal(t *testing.T) {
	for _, n := range []int{12, 60} { // the full MILP (≤ 40 nodes) and MILP-SPLIT
		p := chainProblem(n)
		for _, m := range []string{Auto, MILP, Split, EA, SA} {
			r, err := Solve(context.Background(), p, Options{Method: m, TimeLimit: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if !r.Optimal || r.Gap != 0 {
				t.Fatalf("%d nodes, %s: makespan %g, bound %g: not proved optimal", n, m, r.Makespan, r.LowerBound)
			}
			if r.phases != 0 || r.searchIters != 0 {
				t.Errorf("%d nodes, %s: %d phases and %d search iterations after the optimal plan was known, want none", n, m, r.phases, r.searchIters)
			}
		}
	}
	// Two parallel chains of a fork and a join on a fast and a slow device that pay calls and
	// transfers: no constructive plan meets the bounds, so the search runs.
	q := &Problem{Devices: []Device{{Name: "a", CallCost: 1}, {Name: "b", CallCost: 1}}, Congestion: true,
		Links: [][]Link{{{}, {Bandwidth: 4, Latency: 0.5}}, {{Bandwidth: 4, Latency: 0.5}, {}}}}
	q.Nodes = append(q.Nodes, Node{Name: "fork", Time: []float64{1, 1}})
	for i := range 20 {
		q.Nodes = append(q.Nodes, Node{Name: fmt.Sprintf("n%d", i), Time: []float64{1, 1.5}})
		from := len(q.Nodes) - 2
		if i%10 == 0 {
			from = 0
		}
		q.Edges = append(q.Edges, Edge{From: from, To: len(q.Nodes) - 1, Bytes: 1})
	}
	q.Nodes = append(q.Nodes, Node{Name: "join", Time: []float64{1, 1}})
	q.Edges = append(q.Edges, Edge{From: 10, To: 21, Bytes: 1}, Edge{From: 20, To: 21, Bytes: 1})
	r, err := Solve(context.Background(), q, Options{Method: SA, Iterations: 500})
	if err != nil {
		t.Fatal(err)
	}
	if r.phases != 1 || r.searchIters == 0 {
		t.Errorf("%d phases and %d iterations (makespan %g, bound %g): the search did not run", r.phases, r.searchIters, r.Makespan, r.LowerBound)
	}
}

// moduleChain is a chain of m fork–join modules (a cut node, three branches of two nodes,
// the next cut node) on a fast device and a slower one that pay calls and transfers: the
// module DP's bound lies above the critical-path and load bounds.
func moduleChain(m int) *Problem {
	p := &Problem{Devices: []Device{{Name: "fast", CallCost: 2}, {Name: "slow", CallCost: 2}}, Congestion: true,
		Links: [][]Link{{{}, {Bandwidth: 2, Latency: 1}}, {{Bandwidth: 2, Latency: 1}, {}}}}
	add := func(a, b float64) int {
		p.Nodes = append(p.Nodes, Node{Name: fmt.Sprintf("n%d", len(p.Nodes)), Time: []float64{a, b}})
		return len(p.Nodes) - 1
	}
	cut := add(1, 1.5)
	for x := range m {
		var tails []int
		for br := range 3 {
			a := add(2+float64((x+br)%3), 3+float64(br))
			b := add(1+float64(br), 2)
			p.Edges = append(p.Edges, Edge{From: cut, To: a, Bytes: 4}, Edge{From: a, To: b, Bytes: 4})
			tails = append(tails, b)
		}
		join := add(1, 1.5)
		for _, t := range tails {
			p.Edges = append(p.Edges, Edge{From: t, To: join, Bytes: 4})
		}
		cut = join
	}
	return p
}

// TestModuleDPInSearch: Options.ModuleDP gives EA and SA the module DP's bound (and its
// stitched plan as a candidate); without a deadline its result does not depend on the
// workers (the planner's seeded placements rely on that), and without the option they run
// without it.
func TestModuleDPInSearch(t *testing.T) {
	p := moduleChain(6)
	bounds := func(r *Result) map[string]float64 {
		m := map[string]float64{}
		for _, b := range r.Bounds {
			m[b.Method] = b.Value
		}
		return m
	}
	var first *Result
	for _, workers := range []int{1, 4} {
		for _, m := range []string{SA, EA} {
			r, err := Solve(context.Background(), p, Options{Method: m, Iterations: 300, Seed: 1, Workers: workers, ModuleDP: true})
			if err != nil {
				t.Fatal(err)
			}
			b := bounds(r)
			if b["module-dp"] <= max(b["critical-path"], b["load"])*(1+1e-6) {
				t.Fatalf("%s, %d workers: module-dp %g, critical path %g, load %g: want the module DP above both", m, workers, b["module-dp"], b["critical-path"], b["load"])
			}
			if first == nil {
				first = r
			} else if r.LowerBound != first.LowerBound || bounds(first)["module-dp"] != b["module-dp"] {
				t.Errorf("%s, %d workers: bound %g (module-dp %g), first run %g (%g)", m, workers, r.LowerBound, b["module-dp"], first.LowerBound, bounds(first)["module-dp"])
			}
		}
	}
	r, err := Solve(context.Background(), p, Options{Method: SA, Iterations: 300, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := bounds(r)["module-dp"]; ok {
		t.Error("SA without ModuleDP ran the module DP")
	}
}
