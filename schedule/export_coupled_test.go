package schedule

import (
	"context"
	"time"
)

// SetCoupledMIPAlways switches the coupled MIP on for the constructive methods (tests only).
func SetCoupledMIPAlways(on bool) (restore func()) {
	old := coupledMIPAlways
	coupledMIPAlways = on
	return func() { coupledMIPAlways = old }
}

// SetRelaxedModuleDPAlways runs the relaxed module DP on every instance, choosing spine nodes
// whatever their obstacles cost (tests only): any choice keeps the bound valid.
func SetRelaxedModuleDPAlways(on bool) (restore func()) {
	old := [4]any{relaxAlways, relaxShare, relaxTotal, relaxBlock}
	relaxAlways = on
	if on {
		relaxShare, relaxTotal, relaxBlock = 1, 1, 1
	}
	return func() {
		relaxAlways = old[0].(bool)
		relaxShare, relaxTotal, relaxBlock = old[1].(float64), old[2].(float64), old[3].(int)
	}
}

// SetRunToLimit makes Solve run every phase even once its plan meets its bound (tests only).
func SetRunToLimit(on bool) (restore func()) {
	old := runToLimit
	runToLimit = on
	return func() { runToLimit = old }
}

// CappedDP runs the capped module DP of p within perDevice stages per device and a budget of
// branch-and-bound nodes, with or without the pruning by meeting paths (tests only): its
// bound, whether every block's search ended, and the nodes it took.
func CappedDP(p *Problem, perDevice int, budget int64, prune bool) (bound float64, exact bool, nodes int64) {
	in, err := prepare(p)
	if err != nil {
		return 0, false, 0
	}
	old := capPrune
	capPrune = prune
	defer func() { capPrune = old }()
	r := in.cappedModuleDP(context.Background(), time.Time{}, budget, 1, perDevice, 0, true)
	if r == nil {
		return 0, false, 0
	}
	return r.bound, r.exact, r.nodes
}

// SetSplitMaxRows sets the row limit of MILP-SPLIT's sub-MILPs (tests only).
func SetSplitMaxRows(n int) (restore func()) {
	old := splitMaxRows
	splitMaxRows = n
	return func() { splitMaxRows = old }
}
