package milp

import (
	"context"
	"math"
)

// readResult fills res from HiGHS's state after Highs_run, whatever run returned: the model
// status, the incumbent, its objective and the dual bound are read directly, so that a solve
// stopped by a limit keeps them (lanl/highs v1.0.0 drops them, deps-go.md §1d).
func (m *Model) readResult(ctx context.Context, in *instance, res *Result, opt Options, mip bool) {
	ms := in.modelStatus()
	res.Status = mapStatus(ctx, ms, opt.HasCutoff)

	if ps, ok := in.intInfo("primal_solution_status"); ok && ps == solutionStatusFeasible {
		if x := in.primal(m.NumVars()); x != nil {
			if obj, ok := in.floatInfo("objective_function_value"); ok && !math.IsNaN(obj) && !math.IsInf(obj, 0) {
				res.HasSolution, res.X, res.Objective = true, x, obj
			}
		}
	}
	if mip {
		if nodes, ok := in.int64Info("mip_node_count"); ok && nodes > 0 {
			res.Nodes = nodes
		}
	}

	// Work in "minimisation space": s·value, where s = −1 when maximising, so that a dual bound
	// is a lower bound and smaller is better.
	s := 1.0
	if m.Maximize {
		s = -1
	}
	bound := math.Inf(-1) // s·DualBound: nothing proved yet
	switch {
	case res.Status == Infeasible && opt.HasCutoff:
		// Nothing is better than the cutoff (HiGHS searched only below it).
		bound = s * opt.Cutoff
	case res.Status == Infeasible:
		bound = math.Inf(1)
	case res.Status == Unbounded:
	case mip:
		if db, ok := in.floatInfo("mip_dual_bound"); ok && !math.IsNaN(db) {
			bound = s * db
		}
	case res.Status == Optimal && res.HasSolution:
		// An LP solved to optimality: primal and dual objectives agree within tolerances.
		bound = s * res.Objective
	}
	if mip && opt.HasCutoff && res.Status != Infeasible {
		// Solutions no better than the cutoff were pruned, so the bound HiGHS proved holds
		// only for the part below the cutoff: the optimum is at least min(bound, cutoff).
		bound = math.Min(bound, s*opt.Cutoff)
	}
	if res.HasSolution {
		// The incumbent is itself a bound on the optimum; HiGHS's tolerances can leave its
		// dual bound slightly beyond it.
		bound = math.Min(bound, s*res.Objective)
	}
	res.DualBound = s * bound
	res.Gap = relGap(res.HasSolution, res.Objective, res.DualBound)
}

// relGap is HiGHS's relative gap |primal − dual| / |primal| (0 when both are 0), +Inf without
// an incumbent or without a finite bound.
func relGap(hasSolution bool, objective, bound float64) float64 {
	if !hasSolution || math.IsInf(bound, 0) {
		return math.Inf(1)
	}
	const eps = 1e-9 // HiGHS's snap-to-zero in HighsMipSolverData::limitsToGap
	if math.Abs(objective) <= eps {
		objective = 0
	}
	if math.Abs(bound) <= eps {
		bound = 0
	}
	if objective == 0 {
		if bound == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Abs(objective-bound) / math.Abs(objective)
}

// mapStatus translates a kHighsModelStatus.
func mapStatus(ctx context.Context, ms int, hasCutoff bool) Status {
	switch ms {
	case modelStatusOptimal:
		return Optimal
	case modelStatusInfeasible:
		return Infeasible
	case modelStatusUnbounded, modelStatusUnboundedOrInfeasible:
		return Unbounded
	case modelStatusTimeLimit:
		return TimeLimit
	case modelStatusInterrupt:
		return stoppedStatus(ctx)
	case modelStatusObjectiveBound:
		if hasCutoff {
			// The LP's dual objective passed the cutoff: nothing better than it exists.
			return Infeasible
		}
		return SolutionLimit
	case modelStatusObjectiveTarget, modelStatusIterationLimit, modelStatusSolutionLimit:
		return SolutionLimit
	case modelStatusUnknown:
		return StatusUnknown
	default: // not set, load/model/presolve/solve/postsolve error, and "model empty" (handled before)
		return Error
	}
}

// solveEmpty answers a model without columns: every row must hold 0.
func (m *Model) solveEmpty(res *Result) {
	for i := range m.RowLo {
		if m.RowLo[i] > 0 || m.RowHi[i] < 0 {
			res.Status = Infeasible
			s := 1.0
			if m.Maximize {
				s = -1
			}
			res.DualBound = s * math.Inf(1)
			return
		}
	}
	res.Status, res.HasSolution, res.X, res.Objective, res.DualBound, res.Gap = Optimal, true, []float64{}, 0, 0, 0
}

// cutoffOption converts Options.Cutoff into HiGHS's objective_bound. HiGHS's MIP solver
// compares objective_bound with its internal objective, which is negated when maximising (as
// HighsMipSolverData::limitsToBounds shows); the dual simplex uses it only when minimising.
func cutoffOption(cutoff float64, maximize bool) float64 {
	if maximize {
		return -cutoff
	}
	return cutoff
}
