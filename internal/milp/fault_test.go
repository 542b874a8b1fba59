package milp

import (
	"context"
	"errors"
	"math"
	"testing"
)

func TestFaultHook(t *testing.T) {
	ctx := context.Background()
	for _, maximize := range []bool{false, true} {
		m := knapsack(maximize)
		s := 1.0
		if maximize {
			s = -1
		}
		clean, err := m.Solve(ctx, Options{})
		if err != nil || clean.Status != Optimal {
			t.Fatalf("clean solve: %v %v", clean.Status, err)
		}
		for _, f := range []Fault{FaultError, FaultTimeoutNoIncumbent, FaultTimeoutWeakBound, FaultInfeasible, FaultWrongOptimum} {
			restore := SetTestHook(FaultHook(f, false))
			r, err := m.Solve(ctx, Options{})
			lp, lpErr := m.Solve(ctx, Options{LP: true}) // LPs are left alone
			restore()
			if lpErr != nil || lp.Status != Optimal {
				t.Fatalf("fault %d: the LP was touched: %v %v", f, lp.Status, lpErr)
			}
			if (f == FaultError) != errors.Is(err, ErrInjected) {
				t.Fatalf("fault %d: error %v", f, err)
			}
			switch f {
			case FaultError:
				if r.Status != Error || r.HasSolution || !math.IsInf(s*r.DualBound, -1) {
					t.Fatalf("error fault: %+v", r)
				}
			case FaultTimeoutNoIncumbent:
				if r.Status != TimeLimit || r.HasSolution || !math.IsInf(s*r.DualBound, -1) || !math.IsInf(r.Gap, 1) {
					t.Fatalf("time-out fault: %+v", r)
				}
			case FaultTimeoutWeakBound:
				if r.Status != TimeLimit || !r.HasSolution || s*r.Objective < s*clean.Objective-tol || s*r.DualBound > s*clean.Objective {
					t.Fatalf("weak-bound fault: %+v", r)
				}
				checkInvariants(t, m, r)
			case FaultInfeasible:
				if r.Status != Infeasible || r.HasSolution {
					t.Fatalf("infeasible fault: %+v", r)
				}
			case FaultWrongOptimum:
				if r.Status != Optimal || !r.HasSolution || s*r.DualBound <= s*clean.Objective || r.DualBound != r.Objective {
					t.Fatalf("wrong-optimum fault: %+v", r)
				}
			}
		}
		// Restored: a clean solve again.
		r, err := m.Solve(ctx, Options{})
		if err != nil || r.Status != Optimal || r.Objective != clean.Objective {
			t.Fatalf("after restore: %v %v", r.Status, err)
		}
	}
}

func TestSetTestHookNests(t *testing.T) {
	calls := 0
	outer := SetTestHook(func(m *Model, opt Options, solve func(Options) (*Result, error)) (*Result, error) {
		calls++
		return solve(opt)
	})
	inner := SetTestHook(FaultHook(FaultError, true))
	if _, err := knapsack(false).Solve(context.Background(), Options{}); !errors.Is(err, ErrInjected) {
		t.Fatalf("inner hook not applied: %v", err)
	}
	inner()
	if _, err := knapsack(false).Solve(context.Background(), Options{}); err != nil || calls != 1 {
		t.Fatalf("outer hook not restored: %v, %d calls", err, calls)
	}
	outer()
	if testHook.Load() != nil {
		t.Fatal("hook left installed")
	}
}
