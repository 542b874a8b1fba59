package schedule_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/onnxpart/onnxpart/schedule"
	"github.com/onnxpart/onnxpart/schedule/instances"
)

// benchStack is a RandWire ER(0.2) stack on seed 003's CPU/T4/A100 platform (the instances of
// make bench-schedule): modules × (nodes + aggregation) nodes; batch > 1 plans a batch of
// that many inputs in 4 granules. A stage call of 20 µs on every device makes every stage
// priced, as the product's problems are.
func benchStack(b *testing.B, nodes, modules, batch int) *schedule.Problem {
	b.Helper()
	s, err := instances.NewStack(instances.StackConfig{Model: instances.ER, P: 0.2, N: nodes, Modules: modules, Channels: 2, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	cc := instances.ThesisCosts()
	cc.Seed = 1
	if batch > 1 {
		cc.Batch, cc.Granules = batch, 4
	}
	p, err := s.Problem(instances.ThesisPlatform(), cc)
	if err != nil {
		b.Fatal(err)
	}
	for u := range p.Devices {
		p.Devices[u].CallCost = 0.02 // ms
	}
	return p
}

// BenchmarkSimulate times the list-scheduling simulator every method's plan goes through
// (one HEFT placement, simulated again per iteration): the inner loop of EA and SA.
func BenchmarkSimulate(b *testing.B) {
	for _, c := range []struct{ nodes, modules, batch int }{{10, 5, 1}, {32, 10, 1}, {10, 5, 8}} {
		p := benchStack(b, c.nodes, c.modules, c.batch)
		res, err := schedule.Solve(context.Background(), p, schedule.Options{Method: schedule.HEFT, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("nodes=%d/batch=%d", len(p.Nodes), c.batch), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := schedule.Simulate(p, res.Placement); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSolve times whole solves: the list heuristics, SA on a fixed evaluation budget,
// and the latency MILP with its bounds on a small stack (a deterministic amount of work
// each; the MILP's time is HiGHS's).
func BenchmarkSolve(b *testing.B) {
	for _, c := range []struct {
		method                string
		nodes, modules, batch int
		iters                 int
	}{
		{schedule.HEFT, 32, 10, 1, 0},
		{schedule.Greedy, 10, 5, 8, 0},
		{schedule.SA, 10, 5, 1, 2000},
		{schedule.MILP, 4, 2, 1, 0},
	} {
		p := benchStack(b, c.nodes, c.modules, c.batch)
		b.Run(fmt.Sprintf("%s/nodes=%d/batch=%d", c.method, len(p.Nodes), c.batch), func(b *testing.B) {
			for b.Loop() {
				if _, err := schedule.Solve(context.Background(), p, schedule.Options{Method: c.method, Seed: 1, Iterations: c.iters}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
