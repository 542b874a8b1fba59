package schedule_test

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/schedule"
)

// TestCertificatesCoupled checks the coupled bounds (bounds_coupled.go: the coupled LP, which
// every Solve computes in latency mode, and the coupled MIP's dual bound; bounds_modules.go:
// the module DP, exercised by the generator's chains of modules, and the relaxed module DP,
// switched on for every instance with any spine node allowed; bounds_cap.go: the capped
// module DP, on the instances with a stage cap, against the capped optimum) against the
// exhaustive optimum through the certificate harness: a constructive method (cheap) with the
// coupled MIP switched on, so every instance reports both bounds and the MIP's plan as a
// candidate. ONNXPART_FUZZ_CERT_COUPLED=N runs N instances instead of the short run's 400
// (seed ONNXPART_FUZZ_CERT_SEED, default 7), e.g.
//
//	ONNXPART_FUZZ_CERT_COUPLED=100000 go test -run TestCertificatesCoupled -timeout 0 ./schedule/
func TestCertificatesCoupled(t *testing.T) {
	count := 400
	if testing.Short() {
		count = 100
	}
	if n, _ := strconv.Atoi(os.Getenv("ONNXPART_FUZZ_CERT_COUPLED")); n > 0 {
		count = n
	}
	seed := uint64(7)
	if s, err := strconv.ParseUint(os.Getenv("ONNXPART_FUZZ_CERT_SEED"), 10, 64); err == nil {
		seed = s
	}
	defer schedule.SetCoupledMIPAlways(true)()
	defer schedule.SetRelaxedModuleDPAlways(true)()
	st := runCertificatesWith(t, seed, count, max(2, runtimeProcs()), func(s source, x uint64) schedule.Options {
		o := schedule.Options{TimeLimit: 2 * time.Second, Seed: x, Workers: 1, RelGap: relGap, Iterations: 50}
		o.Method = []string{schedule.BestDevice, schedule.MET, schedule.Greedy, schedule.HEFT}[s.intn(4)]
		if x%3 != 0 && s.intn(2) == 0 {
			// The capped module DP (bounds_cap.go): a cap of 1 to 3 stages per device (instances
			// with x%3 = 0 get a cap on all stages in checkInstance, which it bounds too).
			o.MaxStagesPerDevice = 1 + s.intn(3)
		}
		return o
	})
	t.Log(st)
	if st.bounds["coupled-lp"] < st.latency/4 || st.bounds["coupled-mip"] < st.latency/4 || st.bounds["module-dp"] < st.latency/5 {
		t.Errorf("coupled-lp checked on %d, coupled-mip on %d, module-dp on %d of %d latency instances: too few", st.bounds["coupled-lp"], st.bounds["coupled-mip"], st.bounds["module-dp"], st.latency)
	}
	if st.tight["module-dp"] == 0 || st.tight["module-dp-relaxed"] == 0 || st.bounds["module-dp-relaxed"] < st.latency/10 {
		t.Errorf("the module DP's bounds were never tight, or the relaxed one too seldom checked: %v", st)
	}
	if st.bounds["module-dp-capped"] < st.latency/10 || st.tight["module-dp-capped"] == 0 {
		t.Errorf("the capped module DP was checked on %d of %d latency instances, tight on %d: too few", st.bounds["module-dp-capped"], st.latency, st.tight["module-dp-capped"])
	}
	if st.tight["coupled-mip"] == 0 {
		t.Errorf("the coupled MIP's bound was never tight: %v", st)
	}
}

// TestCertificatesCoupledPresolve is the instance on which HiGHS's presolve cut off the
// coupled MIP's optimum (seed 17, instance 4956: a dual bound of 17 for an optimum of 16;
// the MIP now runs without presolve).
func TestCertificatesCoupledPresolve(t *testing.T) {
	defer schedule.SetCoupledMIPAlways(true)()
	x := uint64(4956)
	s := randSource{rand.New(rand.NewPCG(17, x))}
	inst := genInstance(s, false)
	st := &certStats{}
	o := schedule.Options{Method: schedule.Greedy, TimeLimit: 2 * time.Second, Seed: x, Workers: 1, RelGap: relGap, Iterations: 50}
	for _, v := range checkInstance(inst, o, st) {
		t.Error(v)
	}
	if st.bounds["coupled-mip"] == 0 {
		t.Errorf("the coupled MIP's bound was not checked: %v", st)
	}
}
