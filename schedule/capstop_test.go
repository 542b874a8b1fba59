package schedule_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/schedule"
	"github.com/onnxpart/onnxpart/schedule/instances"
)

// TestCappedBoundStopsSearch: when a plan within the stage cap meets the capped bound
// (module-dp-capped), auto stops there. Before, only the uncapped bounds could stop it, and on
// these RandWire stacks (T4+A100, 2 stages per device) the full MILP then ran to the time
// limit after the plan was proved optimal; its candidate is the sign (no timing here).
func TestCappedBoundStopsSearch(t *testing.T) {
	for _, seed := range []uint64{1, 3, 4} {
		p := gpuStack(t, instances.StackConfig{Model: instances.ER, N: 10, Modules: 3, Channels: 1, Seed: seed})
		res, err := schedule.Solve(context.Background(), p, schedule.Options{TimeLimit: 10 * time.Second, MaxStagesPerDevice: 2})
		if err != nil {
			t.Fatal(err)
		}
		var methods []string
		for _, c := range res.Candidates {
			methods = append(methods, c.Method)
		}
		capped := 0.0
		for _, b := range res.Bounds {
			if schedule.CappedBound(b.Method) {
				capped = max(capped, b.Value)
			}
		}
		if !res.Optimal || capped < res.Makespan*(1-1e-4) {
			t.Fatalf("seed %d: makespan %g, capped bound %g, optimal %v: the capped bound no longer closes this plan", seed, res.Makespan, capped, res.Optimal)
		}
		if slices.Contains(methods, schedule.MILP) || slices.Contains(methods, schedule.Split) {
			t.Errorf("seed %d: candidates %v: the search went on after a plan within the cap met the capped bound", seed, methods)
		}
	}
}
