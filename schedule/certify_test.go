package schedule_test

// The certificate harness (issue 33): random small instances solved by Solve with a method
// drawn at random and by the exhaustive reference (certify_ref_test.go), and the properties
// every certificate must keep:
//
//   - lower bound ≤ exhaustive optimum ≤ reported objective (every bound in Result.Bounds
//     and every candidate's own bound too);
//   - "optimal" only when the objective is the exhaustive optimum (within the MILP gap);
//   - an *InfeasibleError only when the exhaustive search finds no plan; a plan only when
//     it finds one;
//   - the reported objective is the makespan of the returned schedule, which is a valid
//     schedule of the returned placement (certify_verify_test.go).
//
// TestCertificates runs a few thousand instances in the normal `go test`;
// ONNXPART_FUZZ_CERT=N runs N more (a long run), and FuzzCertificates drives the generator
// with the fuzzer's bytes.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"onnxpart/schedule"
)

var verbose = os.Getenv("ONNXPART_FUZZ_CERT_VERBOSE") != ""

// slowInstance: instances that take longer are logged.
const slowInstance = 500 * time.Millisecond

// relGap is the MILPs' default stopping gap in the harness: "optimal" means within
// Options.RelGap.
const relGap = 1e-6

// tolOf is the slack of a comparison with the optimum: the MILPs' feasibility tolerances
// relative to their horizon.
func tolOf(x float64) float64 { return 1e-6 * math.Max(1, math.Abs(x)) }

// certOptions draws the method and its limits.
func certOptions(s source, seed uint64) schedule.Options {
	o := schedule.Options{TimeLimit: 3 * time.Second, Seed: seed, Workers: 1, RelGap: relGap, Iterations: 200}
	switch m := s.intn(12); {
	case m < 4:
		o.Method = schedule.Auto
	case m < 6:
		o.Method = schedule.MILP
	case m < 8:
		o.Method = schedule.Split
		o.ModuleSize = 1 + s.intn(3)
		o.MaxChannels = 1 + s.intn(4)
		o.TimeLimit = 250 * time.Millisecond // its final annealing runs on the clock
	case m == 8:
		o.Method = schedule.EA
	case m == 9:
		o.Method = schedule.SA
	default:
		o.Method = []string{schedule.BestDevice, schedule.MET, schedule.Greedy, schedule.HEFT}[s.intn(4)]
	}
	switch s.intn(10) {
	case 0: // stopped early: time-limit paths (skipped solves, dual bounds of unfinished MILPs)
		o.TimeLimit = time.Duration(1+s.intn(30)) * time.Millisecond
	case 1: // a coarse gap: "optimal" then means within it
		o.RelGap = []float64{1e-3, 0.05, 0.2}[s.intn(3)]
	}
	if o.Method == schedule.MILP || o.Method == schedule.Auto {
		switch s.intn(3) {
		case 1:
			o.Symmetry = schedule.SymmetryNone
		case 2:
			o.Symmetry = schedule.SymmetryTime
		}
	}
	return o
}

// certStats counts what the harness saw.
type certStats struct {
	mu                                          sync.Mutex
	instances, latency, batched                 int
	invalid, infeasible, noPlan, optimal, plans int
	violations                                  []string
}

func (st *certStats) String() string {
	return fmt.Sprintf("%d instances (%d latency, %d batched): %d plans (%d proved optimal), %d proved infeasible, %d no plan within the limits, %d rejected as invalid; %d violations",
		st.instances, st.latency, st.batched, st.plans, st.optimal, st.infeasible, st.noPlan, st.invalid, len(st.violations))
}

// checkInstance solves one instance and returns the violations of the properties.
func checkInstance(x *instance, o schedule.Options, st *certStats) []string {
	p := x.p
	var bad []string
	fail := func(f string, args ...any) {
		bad = append(bad, fmt.Sprintf("[%s; method %s] ", x, o.Method)+fmt.Sprintf(f, args...))
	}
	defer func() {
		st.mu.Lock()
		st.instances++
		if p.Batch > 1 {
			st.batched++
		} else {
			st.latency++
		}
		st.violations = append(st.violations, bad...)
		st.mu.Unlock()
	}()
	if err := p.Validate(); err != nil {
		st.mu.Lock()
		st.invalid++
		st.mu.Unlock()
		return nil
	}
	ref := newRef(p).optimum()
	res, err := schedule.Solve(context.Background(), p, o)
	if err != nil {
		var ie *schedule.InfeasibleError
		var ne *schedule.NoPlanError
		switch {
		case errors.As(err, &ie):
			st.mu.Lock()
			st.infeasible++
			st.mu.Unlock()
			if ref.feasible {
				fail("claims infeasible (%v) but the exhaustive optimum is %g", err, ref.opt)
			}
		case errors.As(err, &ne):
			st.mu.Lock()
			st.noPlan++
			st.mu.Unlock()
			if verbose {
				fmt.Printf("no plan: %s, method %s, exhaustive feasible %v: %v\n", x, o.Method, ref.feasible, err)
			}
		default:
			fail("unexpected error: %v", err)
		}
		return bad
	}
	st.mu.Lock()
	st.plans++
	if res.Optimal {
		st.optimal++
	}
	st.mu.Unlock()
	r := newRef(p)
	if !res.Schedule.Feasible {
		// A constructive method may hand back its plan although it overflows memory; it
		// certifies nothing then.
		if res.Optimal {
			fail("a plan that overflows memory is called optimal")
		}
	} else {
		if _, err := r.verifyPlan(res); err != nil {
			fail("the returned plan does not check: %v", err)
		}
		if !ref.feasible {
			fail("returns a plan (makespan %g) where the exhaustive search finds none", res.Makespan)
			return bad
		}
		if res.Makespan < ref.opt-tolOf(ref.opt) {
			fail("objective %g below the exhaustive optimum %g", res.Makespan, ref.opt)
		}
		// Optimal means gap = 1 − bound/objective ≤ RelGap, so objective·(1 − RelGap) ≤ optimum.
		if res.Optimal && res.Makespan*(1-o.RelGap) > ref.opt+tolOf(ref.opt) {
			fail("claims optimal with objective %g, the exhaustive optimum is %g", res.Makespan, ref.opt)
		}
	}
	if !ref.feasible {
		return bad
	}
	if res.LowerBound > ref.opt+tolOf(ref.opt) {
		fail("lower bound %g above the exhaustive optimum %g (bounds %v)", res.LowerBound, ref.opt, res.Bounds)
	}
	for _, b := range res.Bounds {
		if b.Value > ref.opt+tolOf(ref.opt) {
			fail("bound %s = %g above the exhaustive optimum %g", b.Method, b.Value, ref.opt)
		}
	}
	for _, c := range res.Candidates {
		if c.Bound > ref.opt+tolOf(ref.opt) {
			fail("candidate %s's bound %g above the exhaustive optimum %g", c.Method, c.Bound, ref.opt)
		}
	}
	if res.Makespan > 0 && !near(res.Gap, math.Max(0, 1-res.LowerBound/res.Makespan)) {
		fail("gap %g, bound %g, makespan %g", res.Gap, res.LowerBound, res.Makespan)
	}
	return bad
}

// runCertificates checks count instances drawn from seed, on workers goroutines.
func runCertificates(t *testing.T, seed uint64, count, workers int) *certStats {
	st := &certStats{}
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for x := range next {
				s := randSource{rand.New(rand.NewPCG(seed, uint64(x)))}
				inst := genInstance(s, x%3 == 2)
				o := certOptions(s, uint64(x))
				t0 := time.Now()
				vs := checkInstance(inst, o, st)
				if d := time.Since(t0); d > slowInstance {
					t.Logf("instance %d (seed %d, %s, method %s) took %v", x, seed, inst, o.Method, d)
				}
				for _, v := range vs {
					t.Errorf("instance %d (seed %d): %s", x, seed, v)
				}
			}
		}()
	}
	for x := range count {
		if t.Failed() && len(st.violations) > 20 {
			break
		}
		next <- x
	}
	close(next)
	wg.Wait()
	return st
}

// TestCertificates is the short run (part of every `go test`).
func TestCertificates(t *testing.T) {
	count := 1500
	if testing.Short() {
		count = 300
	}
	st := runCertificates(t, 1, count, 2)
	t.Log(st)
}

// TestCertificatesLong is the long run: ONNXPART_FUZZ_CERT=N instances (seed
// ONNXPART_FUZZ_CERT_SEED, default 2), e.g.
//
//	ONNXPART_FUZZ_CERT=30000 go test -run TestCertificatesLong -timeout 0 ./schedule/
func TestCertificatesLong(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ONNXPART_FUZZ_CERT"))
	if n <= 0 {
		t.Skip("set ONNXPART_FUZZ_CERT=N to check N more instances")
	}
	seed := uint64(2)
	if s, err := strconv.ParseUint(os.Getenv("ONNXPART_FUZZ_CERT_SEED"), 10, 64); err == nil {
		seed = s
	}
	st := runCertificates(t, seed, n, max(2, runtimeProcs()))
	t.Log(st)
}

// FuzzCertificates drives the generator and the method choice with the fuzzer's bytes.
func FuzzCertificates(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{1, 3, 2, 7, 9, 4, 0, 0, 1, 5})
	f.Add([]byte{7, 2, 2, 1, 1, 0, 3, 3, 90, 90, 12, 40, 3, 3, 3, 8, 8})
	f.Add([]byte{200, 1, 0, 2, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		s := &byteSource{b: b[1:]}
		inst := genInstance(s, b[0]%3 == 2)
		o := certOptions(s, uint64(b[0]))
		st := &certStats{}
		for _, v := range checkInstance(inst, o, st) {
			t.Error(v)
		}
	})
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
