package schedule_test

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/schedule"
)

// TestCertificatesCappedChains checks the capped module DP on the problems with their chains
// contracted (bounds_chains.go: chain edges with their straight, switch and detour times,
// relief at the leaves), forced on every instance with a stage cap whatever its size, against
// the exhaustive capped optimum through the certificate harness (TestCertificatesCoupled's
// set-up: a constructive method with the coupled bounds on). ONNXPART_FUZZ_CERT_CHAINS=N
// runs N instances instead of the short run's 400 (seed ONNXPART_FUZZ_CERT_SEED, default
// 11), e.g.
//
//	ONNXPART_FUZZ_CERT_CHAINS=100000 go test -run TestCertificatesCappedChains -timeout 0 ./schedule/
func TestCertificatesCappedChains(t *testing.T) {
	count := 400
	if testing.Short() {
		count = 100
	}
	if n, _ := strconv.Atoi(os.Getenv("ONNXPART_FUZZ_CERT_CHAINS")); n > 0 {
		count = n
	}
	seed := uint64(11)
	if s, err := strconv.ParseUint(os.Getenv("ONNXPART_FUZZ_CERT_SEED"), 10, 64); err == nil {
		seed = s
	}
	defer schedule.SetCoupledMIPAlways(true)()
	defer schedule.SetCappedChainsAlways(true)()
	before := schedule.CappedChainsRuns()
	st := runCertificatesWith(t, seed, count, max(2, runtimeProcs()), chainsOptions)
	runs := schedule.CappedChainsRuns() - before
	t.Log(st)
	t.Logf("%d capped module DPs on contracted chains", runs)
	if st.bounds["module-dp-capped"] < st.latency/5 || st.tight["module-dp-capped"] == 0 {
		t.Errorf("the capped module DP was checked on %d of %d latency instances, tight on %d: too few", st.bounds["module-dp-capped"], st.latency, st.tight["module-dp-capped"])
	}
	if runs < int64(st.latency/10) {
		t.Errorf("only %d of %d latency instances had chains to contract", runs, st.latency)
	}
}

// chainsOptions are TestCertificatesCappedChains' options for instance x.
func chainsOptions(s source, x uint64) schedule.Options {
	o := schedule.Options{TimeLimit: 2 * time.Second, Seed: x, Workers: 1, RelGap: relGap, Iterations: 50}
	o.Method = []string{schedule.BestDevice, schedule.MET, schedule.Greedy, schedule.HEFT}[s.intn(4)]
	if x%3 != 0 {
		o.MaxStagesPerDevice = 1 + s.intn(3) // x%3 = 0: a cap on all stages (checkInstance)
	}
	return o
}

// TestCertificatesCappedChainsFound are the instances of TestCertificatesCappedChains' stream
// (seed 11) on which a first version's contracted bound exceeded the capped optimum: a chain
// node that cannot run on a device (its chain cannot stay there; chain nodes now run
// everywhere).
func TestCertificatesCappedChainsFound(t *testing.T) {
	defer schedule.SetCoupledMIPAlways(true)()
	defer schedule.SetCappedChainsAlways(true)()
	for _, x := range []int{2098, 49054, 58380, 65866, 67911, 74824, 80836} {
		s := randSource{rand.New(rand.NewPCG(11, uint64(x)))}
		inst := genInstance(s, x%3 == 2)
		o := chainsOptions(s, uint64(x))
		for _, v := range checkInstance(inst, o, &certStats{}) {
			t.Errorf("instance %d: %s", x, v)
		}
	}
}
