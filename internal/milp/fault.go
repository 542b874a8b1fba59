package milp

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
)

// Fault injection, for tests only.
//
// Callers of Solve must degrade cleanly when HiGHS fails or stops early: keep their heuristic
// plan, claim no bound that was not proved, never panic. Those paths are hard to reach with
// real models, so a test can install a Hook that rewrites what Solve returns. Production code
// never installs one; the cost of the mechanism is one atomic pointer load and a nil check per
// Solve.

// Hook stands between Solve and the solver: Solve(ctx, opt) returns hook(m, opt, solve), where
// solve runs the real solve (on Solve's context) with the options it is given. A hook may call
// solve with other options (a node limit, to return quickly), call it several times, or not
// at all, and return any result and error. It runs on the goroutine that called Solve,
// possibly on several at once.
type Hook func(m *Model, opt Options, solve func(Options) (*Result, error)) (*Result, error)

var testHook atomic.Pointer[Hook]

// SetTestHook installs h for every later Solve in the process (nil removes it) and returns a
// function that restores the previous hook. TEST-ONLY: it is global, so tests that use it must
// not run in parallel with other solving tests of the same package.
func SetTestHook(h Hook) (restore func()) {
	var p *Hook
	if h != nil {
		p = &h
	}
	old := testHook.Swap(p)
	return func() { testHook.Store(old) }
}

// Fault kinds that FaultHook injects.
type Fault int

const (
	// FaultError: HiGHS failed (Status Error, no incumbent, nothing proved, a non-nil error).
	FaultError Fault = iota + 1
	// FaultTimeoutNoIncumbent: the time limit passed before any incumbent or bound (Status
	// TimeLimit, no incumbent, no bound, no error), as when presolve or the root LP of a large
	// model eats the whole limit.
	FaultTimeoutNoIncumbent
	// FaultTimeoutWeakBound: the time limit passed with the solve's incumbent (the warm start,
	// say) kept but only a weak bound proved (Status TimeLimit; DualBound at |objective|, at
	// least 1, on the far side of the incumbent: 0 for a positive makespan; no bound without
	// an incumbent).
	FaultTimeoutWeakBound
	// FaultInfeasible: HiGHS claims the model infeasible (a solver fault on models that have
	// feasible points; Status Infeasible, DualBound +Inf when minimising).
	FaultInfeasible
	// FaultWrongOptimum: HiGHS claims optimality with a wrong value, as a presolve bug can
	// (highs-mtpp.md): the incumbent X is kept but Objective and DualBound are set beyond its
	// true value (by |value|, at least 1), so the bound is unproved and the objective does not
	// match X. Callers must catch it by re-evaluating X or comparing the bound with a known
	// plan. (Solve's contract, DualBound never beyond Objective, still holds.)
	FaultWrongOptimum
)

// ErrInjected is the error FaultError injects.
var ErrInjected = errors.New("milp: injected solver fault (test hook)")

// FaultHook returns a Hook that injects fault into every MIP solve (LPs, and models where opt.LP
// is set, are solved normally unless lps is true). Faults without an incumbent skip the solve;
// the others solve with a node limit of 1 (to return quickly with the warm start or a root
// heuristic's incumbent) and rewrite the result. TEST-ONLY.
func FaultHook(fault Fault, lps bool) Hook {
	return func(m *Model, opt Options, solve func(Options) (*Result, error)) (*Result, error) {
		if !lps && !m.isMIP(opt) {
			return solve(opt)
		}
		res := &Result{}
		switch fault {
		case FaultTimeoutWeakBound, FaultWrongOptimum:
			if m.isMIP(opt) {
				opt.MaxNodes = 1
			}
			var err error
			if res, err = solve(opt); err != nil {
				return res, err
			}
		}
		return Inject(fault, m, res), errOf(fault)
	}
}

func errOf(f Fault) error {
	if f == FaultError {
		return ErrInjected
	}
	return nil
}

// Inject returns a copy of res as it would be after fault (see the Fault kinds). TEST-ONLY.
func Inject(fault Fault, m *Model, res *Result) *Result {
	s := 1.0
	if m.Maximize {
		s = -1
	}
	out := &Result{Elapsed: res.Elapsed, Nodes: res.Nodes, Objective: s * math.Inf(1), DualBound: -s * math.Inf(1), Gap: math.Inf(1)}
	switch fault {
	case FaultError:
		out.Status = Error
	case FaultTimeoutNoIncumbent:
		out.Status = TimeLimit
	case FaultTimeoutWeakBound:
		out.Status = TimeLimit
		if res.HasSolution {
			out.HasSolution, out.X, out.Objective = true, append([]float64(nil), res.X...), res.Objective
			out.DualBound = res.Objective - s*math.Max(math.Abs(res.Objective), 1)
		}
		out.Gap = relGap(out.HasSolution, out.Objective, out.DualBound)
	case FaultInfeasible:
		out.Status = Infeasible
		out.DualBound = s * math.Inf(1)
	case FaultWrongOptimum:
		out.Status = Optimal
		if res.HasSolution {
			wrong := res.Objective + s*math.Max(math.Abs(res.Objective), 1)
			out.HasSolution, out.X, out.Objective, out.DualBound, out.Gap = true, append([]float64(nil), res.X...), wrong, wrong, 0
		}
	default:
		return res
	}
	return out
}

// hooked is Solve's entry: the test hook when one is installed, else the solve.
func (m *Model) hooked(ctx context.Context, opt Options) (*Result, error) {
	if h := testHook.Load(); h != nil {
		return (*h)(m, opt, func(o Options) (*Result, error) { return m.solve(ctx, o) })
	}
	return m.solve(ctx, opt)
}
