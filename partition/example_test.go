package partition_test

import (
	"context"
	"fmt"
	"math"

	"github.com/onnxpart/onnxpart/partition"
)

// A chain of four nodes with a heavy one in the middle, split into two pipeline stages. Each
// tensor costs size/B when it crosses a stage boundary (Eq. (3)); the plan comes with a proved
// lower bound.
func ExampleSolve() {
	p := &partition.Problem{
		Work: []float64{1, 4, 2, 1},
		Tensors: []partition.Tensor{
			{Producer: 0, Consumers: []int{1}, Size: 1},
			{Producer: 1, Consumers: []int{2}, Size: 1},
			{Producer: 2, Consumers: []int{3}, Size: 1},
		},
		K:         2,
		Bandwidth: 1,
	}
	plan, err := partition.Solve(context.Background(), p, partition.Options{Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("stages:", plan.Stages)
	fmt.Println("bottleneck:", plan.Objective)
	fmt.Println("proved optimal:", math.Abs(plan.LowerBound-plan.Objective) < 1e-9)
	// Output:
	// stages: [[0 1] [2 3]]
	// bottleneck: 6
	// proved optimal: true
}

// Baselines price the plans other tools would make, on the same cost model.
func ExampleBaseline() {
	p := &partition.Problem{Work: []float64{3, 1, 1, 1, 2}, K: 2, Bandwidth: math.Inf(1)}
	for i := 0; i < 4; i++ {
		p.Tensors = append(p.Tensors, partition.Tensor{Producer: i, Consumers: []int{i + 1}, Size: 1})
	}
	uniform, _ := partition.Baseline(p, "uniform")
	best, _ := partition.Solve(context.Background(), p, partition.Options{Seed: 1})
	fmt.Println("uniform layer count:", uniform.Objective)
	fmt.Println("onnxpart:", best.Objective)
	// Output:
	// uniform layer count: 5
	// onnxpart: 4
}
