package partition

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/internal/milp"
)

// TestMILPFaults injects solver faults into every MIP that Solve runs (milp.SetTestHook) and
// checks that it degrades cleanly: no error, no panic, a valid plan no worse than the one
// found without MIPs, no lower bound above the known optimum, and a note when the exact MIP
// failed outright.
func TestMILPFaults(t *testing.T) {
	faults := []struct {
		name  string
		f     milp.Fault
		noted bool
	}{
		{"error", milp.FaultError, true},
		{"time-out without incumbent", milp.FaultTimeoutNoIncumbent, false},
		{"time-out with a weak bound", milp.FaultTimeoutWeakBound, false},
		{"infeasible", milp.FaultInfeasible, true},
		{"wrong optimum", milp.FaultWrongOptimum, true},
	}
	type instance struct {
		name string
		p    *Problem
		opt  float64
	}
	var cases []instance
	rng := rand.New(rand.NewSource(5))
	// Three instances: two on identical devices and one on an accelerator plus a CPU. (A
	// fourth, random3, a second mixed one, took 60% of the test's 90 s of CPU at its exact
	// MIPs' root cuts; the fault classes are the same on random1. random2 is the instance on
	// which a misreported optimum once passed as a bound, 51 > OPT 49.)
	for it := 0; it < 3; it++ {
		// Wide graphs: the exact DP over ideals gives up, and the exact MIP proves the optimum.
		n := 24 + rng.Intn(8)
		k := 2 + rng.Intn(2)
		p := randomDAG(rng, n, k, 0.08)
		if it%2 == 1 {
			w2 := make([]float64, n)
			for v := range w2 {
				w2[v] = float64(rng.Intn(12))
			}
			p.K = 0
			p.Devices = []Device{{Name: "acc", Count: k}, {Name: "cpu", Count: 1, Work: w2, Bandwidth: math.Inf(1)}}
		}
		// The optimum from a clean solve that proves it (the exact MIP closes the gap).
		o := quick
		o.Bounds, o.MIPTimeLimit = BoundsFast, 20*time.Second
		clean, err := Solve(context.Background(), p, o)
		if err != nil {
			t.Fatal(err)
		}
		if clean.Gap > 1e-9 {
			continue
		}
		cases = append(cases, instance{fmt.Sprintf("random%d", it), p, clean.Objective})
	}
	var total atomic.Int64
	defer func() {
		if total.Load() == 0 {
			t.Error("no MIP ran: the instances are too easy to exercise the faults")
		}
	}()
	for _, ic := range cases {
		{
			p, opt := ic.p, ic.opt
			base := quick
			base.Bounds = BoundsSimple
			base.NoPolish = true // the polish solves MIPs too
			ref, err := Solve(context.Background(), p, base)
			if err != nil {
				t.Fatal(err)
			}
			for _, fc := range faults {
				for _, effort := range []BoundEffort{BoundsFast, BoundsFull} {
					t.Run(fmt.Sprintf("%s/%s/%v", ic.name, fc.name, effort), func(t *testing.T) {
						var calls atomic.Int64
						inject := milp.FaultHook(fc.f, false)
						defer milp.SetTestHook(func(m *milp.Model, o milp.Options, solve func(milp.Options) (*milp.Result, error)) (*milp.Result, error) {
							calls.Add(1)
							total.Add(1)
							return inject(m, o, solve)
						})()
						o := quick
						o.Bounds, o.MIPTimeLimit = effort, 5*time.Second
						pl, err := Solve(context.Background(), p, o)
						if err != nil {
							t.Fatalf("Solve failed: %v", err)
						}
						// checkPlan's invariants, except that bounds marked "fault" are expected here.
						if _, obj, err := p.Evaluate(pl.Assignment, pl.StageDevice); err != nil || obj != pl.Objective {
							t.Fatalf("plan invalid (%v) or objective %v, judge %v", err, pl.Objective, obj)
						}
						if pl.LowerBound > pl.Objective*(1+1e-9) {
							t.Fatalf("lower bound %v above objective %v", pl.LowerBound, pl.Objective)
						}
						for _, b := range pl.Bounds {
							if b.Value > opt*(1+1e-9) {
								t.Fatalf("bound %+v above OPT %v", b, opt)
							}
						}
						if pl.Objective > ref.Objective*(1+1e-9) {
							t.Fatalf("objective %v worse than without MIPs (%v)", pl.Objective, ref.Objective)
						}
						if pl.LowerBound > opt*(1+1e-9) {
							t.Fatalf("bound %v (%s) above OPT %v: unproved; bounds %+v", pl.LowerBound, pl.BoundMethod, opt, pl.Bounds)
						}
						if fc.noted && calls.Load() > 0 && !strings.Contains(strings.Join(diag.NoteStrings(pl.Notes), "\n"), "fault") {
							t.Fatalf("%d MIPs failed, notes %q", calls.Load(), pl.Notes)
						}
						t.Logf("%d MIPs; objective %v (OPT %v), bound %v; notes %q", calls.Load(), pl.Objective, opt, pl.LowerBound, pl.Notes)
					})
				}
			}
		}
	}
}
