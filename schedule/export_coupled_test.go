package schedule

// SetCoupledMIPAlways switches the coupled MIP on for the constructive methods (tests only).
func SetCoupledMIPAlways(on bool) (restore func()) {
	old := coupledMIPAlways
	coupledMIPAlways = on
	return func() { coupledMIPAlways = old }
}

// SetRunToLimit makes Solve run every phase even once its plan meets its bound (tests only).
func SetRunToLimit(on bool) (restore func()) {
	old := runToLimit
	runToLimit = on
	return func() { runToLimit = old }
}
