package schedule

// SetCoupledMIPAlways switches the coupled MIP on for the constructive methods (tests only).
func SetCoupledMIPAlways(on bool) (restore func()) {
	old := coupledMIPAlways
	coupledMIPAlways = on
	return func() { coupledMIPAlways = old }
}
