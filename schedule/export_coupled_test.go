package schedule

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
