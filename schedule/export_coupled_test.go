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

// CappedDPChains is CappedDP on the problem with its chains contracted (bounds_chains.go),
// whatever its size, with the pruning on; ok is false when it has no chain to contract.
func CappedDPChains(p *Problem, perDevice int, budget int64) (bound float64, exact, ok bool) {
	in, err := prepare(p)
	if err != nil {
		return 0, false, false
	}
	old := capChainsAlways
	capChainsAlways = true
	defer func() { capChainsAlways = old }()
	r := in.cappedModuleDP(context.Background(), time.Time{}, budget, 1, perDevice, 0, false)
	if r == nil || !r.chains {
		return 0, false, false
	}
	return r.bound, r.exact, true
}

// CappedChainsRuns is the number of capped module DPs run on contracted chains so far.
func CappedChainsRuns() int64 { return capChainsRuns.Load() }

// SetCappedChainsAlways makes the capped module DP contract the chains (bounds_chains.go) of
// every problem, whatever its size (tests only).
func SetCappedChainsAlways(on bool) (restore func()) {
	old := capChainsAlways
	capChainsAlways = on
	return func() { capChainsAlways = old }
}

// SetSplitMaxRows sets the row limit of MILP-SPLIT's sub-MILPs (tests only).
func SetSplitMaxRows(n int) (restore func()) {
	old := splitMaxRows
	splitMaxRows = n
	return func() { splitMaxRows = old }
}
