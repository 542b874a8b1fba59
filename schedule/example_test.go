package schedule_test

import (
	"context"
	"fmt"

	"github.com/onnxpart/onnxpart/schedule"
)

// Two independent branches and a join, on a fast and a slow device joined by a link: the
// placement runs the branches in parallel when the transfer pays for itself, and the
// MILP proves the makespan optimal.
func ExampleSolve() {
	p := &schedule.Problem{
		Devices: []schedule.Device{{Name: "gpu"}, {Name: "cpu"}},
		Nodes: []schedule.Node{
			{Name: "a", Time: []float64{4, 6}},
			{Name: "b", Time: []float64{4, 6}},
			{Name: "join", Time: []float64{1, 3}},
		},
		Edges: []schedule.Edge{{From: 0, To: 2, Bytes: 1}, {From: 1, To: 2, Bytes: 1}},
		Links: [][]schedule.Link{{{}, {Bandwidth: 1}}, {{Bandwidth: 1}, {}}},
	}
	res, err := schedule.Solve(context.Background(), p, schedule.Options{Method: "milp", Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range res.Nodes {
		fmt.Printf("%s on %s\n", n.Name, p.Devices[n.Device].Name)
	}
	fmt.Println("makespan:", res.Makespan, "optimal:", res.Optimal)
	// Output:
	// a on gpu
	// b on cpu
	// join on gpu
	// makespan: 8 optimal: true
}
