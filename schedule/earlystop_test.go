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
