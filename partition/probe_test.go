package partition

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/internal/milp"
)

// TestExactProbes runs the exact bound by probes alone (no warm-started MIP first), from the
// worst incumbent there is (every node in the first stage), on random DAGs with brute-force
// optima: the ascending probes must reach the optimum exactly, say so, never go above it,
// and hand back an optimal plan.
func TestExactProbes(t *testing.T) {
	defer func(s time.Duration) { exactWarmShare = s }(exactWarmShare)
	exactWarmShare = 0
	probeCheck(t, 33, 1)
}

// TestExactConcurrent runs the warm-started exact MIP and the probes side by side (two
// MIPs at a time) with the same checks.
func TestExactConcurrent(t *testing.T) {
	probeCheck(t, 34, 2)
	// The same with a warm-started MIP that finds nothing (a time-out after 50 ms): the
	// probes must reach the optimum on their own and end the bound.
	defer milp.SetTestHook(func(m *milp.Model, o milp.Options, solve func(milp.Options) (*milp.Result, error)) (*milp.Result, error) {
		if o.Start == nil {
			return solve(o)
		}
		time.Sleep(50 * time.Millisecond)
		return milp.Inject(milp.FaultTimeoutNoIncumbent, m, &milp.Result{}), nil
	})()
	probeCheck(t, 35, 2)
}

func probeCheck(t *testing.T, seed int64, par int) {
	rng := rand.New(rand.NewSource(seed))
	probed := 0
	for it := 0; it < 16; it++ {
		n := 5 + rng.Intn(3)
		k := 2 + rng.Intn(3)
		p := randomDAG(rng, n, k, 0.35)
		opt := bruteOPT(t, p)
		one := make([]int, n)
		_, U, err := p.Evaluate(one, nil)
		if err != nil {
			t.Fatal(err)
		}
		pl := &Plan{Objective: U, Assignment: one, StageDevice: make([]int, k)}
		info, better, err := LowerBound(context.Background(), p, pl, BoundExact, BoundOptions{TimeLimit: 20 * time.Second, Parallel: par})
		if err != nil {
			t.Fatal(err)
		}
		if info.Value > opt*(1+1e-9) {
			t.Fatalf("it %d: probes proved %v > OPT %v", it, info.Value, opt)
		}
		if !near(info.Value, opt) || info.Status != "optimal" {
			t.Fatalf("it %d: probes reached %v (%s), OPT %v, incumbent %v", it, info.Value, info.Status, opt, U)
		}
		if U > opt*(1+1e-9) {
			probed++
			if better == nil || !near(better.Objective, opt) {
				t.Fatalf("it %d: no optimal plan back (%+v), OPT %v", it, better, opt)
			}
			checkPlan(t, p, better)
		}
	}
	if probed < 8 {
		t.Fatalf("only %d instances where the incumbent was not optimal", probed)
	}
}
