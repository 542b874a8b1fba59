package schedule_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/schedule"
)

// TestCertificatesBatched checks the batched bounds (bounds_batched.go: the pattern LP and the
// module DP of one granule, which every batched Solve computes) and the uniform-routes plan
// against the exhaustive optimum through the certificate harness, on batched instances only,
// with every method drawn as certOptions draws them; a bound that Solve discards as above a
// plan is a violation too. ONNXPART_FUZZ_CERT_BATCHED=N runs N instances instead of the short
// run's 300 (seed ONNXPART_FUZZ_CERT_SEED, default 11), e.g.
//
//	ONNXPART_FUZZ_CERT_BATCHED=100000 go test -run TestCertificatesBatched -timeout 0 ./schedule/
func TestCertificatesBatched(t *testing.T) {
	count := 300
	if testing.Short() {
		count = 100
	}
	if n, _ := strconv.Atoi(os.Getenv("ONNXPART_FUZZ_CERT_BATCHED")); n > 0 {
		count = n
	}
	seed := uint64(11)
	if s, err := strconv.ParseUint(os.Getenv("ONNXPART_FUZZ_CERT_SEED"), 10, 64); err == nil {
		seed = s
	}
	st := &certStats{}
	workers := max(2, runtimeProcs())
	next := make(chan int)
	done := make(chan struct{})
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for x := range next {
				s := randSource{rand.New(rand.NewPCG(seed, uint64(x)))}
				inst := genInstance(s, true)
				o := certOptions(s, uint64(x))
				if o.Method == schedule.Split || o.Method == schedule.MILP || o.Method == schedule.Auto {
					o.TimeLimit = min(o.TimeLimit, 500*time.Millisecond)
				}
				// A bound above a feasible plan is discarded by Solve with a fault note: here
				// it is a violation (the bound was wrong).
				noFault := func(res *schedule.Result) []string {
					var bad []string
					for _, n := range diag.NoteStrings(res.Notes) {
						if strings.Contains(n, "discarded as a fault") {
							bad = append(bad, n)
						}
					}
					return bad
				}
				for _, v := range checkInstanceWith(inst, o, st, noFault) {
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
	for range workers {
		<-done
	}
	t.Log(st)
	if st.bounds["batch-lp"] < st.batched/2 || st.tight["batch-lp"] == 0 {
		t.Errorf("batch-lp checked on %d of %d batched instances, tight on %d: too few", st.bounds["batch-lp"], st.batched, st.tight["batch-lp"])
	}
	if st.bounds["module-dp-granule"] < st.batched/20 || st.tight["module-dp-granule"] == 0 {
		t.Errorf("module-dp-granule checked on %d of %d batched instances, tight on %d: too few", st.bounds["module-dp-granule"], st.batched, st.tight["module-dp-granule"])
	}
}

// TestBatchPatternLP is an instance where the batched pattern LP proves more than the
// critical path and the load LP: two nodes in a chain, two granules, a fast device whose
// batch has a fixed cost (10 + c per node) and a slow one (12 per granule). The critical
// path lets each granule run alone on the fast device (11 + 11 = 22) and the load LP lets
// the fast device take granules at 6 each (16); the optimum is 24 (the whole batch on the
// fast device, or one granule on each), and the pattern LP proves 23.04: a granule that
// shares the fast device pays its batch's 12, one on the slow device pays 12 too, and the
// fast device's load grows with its share.
func TestBatchPatternLP(t *testing.T) {
	link := []schedule.Link{{}, {Bandwidth: 1}}
	p := &schedule.Problem{
		Batch: 2,
		Nodes: []schedule.Node{
			{Name: "a", Time: []float64{11, 12}, BatchTime: [][]float64{{11, 12}, {12, 24}}},
			{Name: "b", Time: []float64{11, 12}, BatchTime: [][]float64{{11, 12}, {12, 24}}},
		},
		Edges:   []schedule.Edge{{From: 0, To: 1}},
		Devices: []schedule.Device{{Name: "fast"}, {Name: "slow"}},
		Links:   [][]schedule.Link{link, {{Bandwidth: 1}, {}}},
	}
	ref := newRef(p).optimum()
	if !ref.feasible || !near(ref.opt, 24) {
		t.Fatalf("exhaustive optimum %v (feasible %v), want 24", ref.opt, ref.feasible)
	}
	res, err := schedule.Solve(context.Background(), p, schedule.Options{Method: schedule.HEFT})
	if err != nil {
		t.Fatal(err)
	}
	var lp, others float64
	for _, b := range res.Bounds {
		if b.Method == "batch-lp" {
			lp = b.Value
		} else {
			others = max(others, b.Value)
		}
	}
	if !near(others, 22) {
		t.Errorf("critical path and load LP give %v, want 22 (bounds %v)", others, res.Bounds)
	}
	if lp < 23.04-1e-3 || lp > ref.opt+tolOf(ref.opt) {
		t.Errorf("batch-lp = %v, want 23.04 (≤ the optimum %v; bounds %v)", lp, ref.opt, res.Bounds)
	}
}

// TestBatchGranuleModuleDP is an instance where the module DP of one granule proves the
// optimum and the other bounds do not: a fork-join (a → b, c → d) with two granules, a fast
// device whose batches cost 10 whatever their size and a slower one (20), transfers of 5.
// The whole batch on the fast device takes 40; moving a branch, or a granule, to the slow
// device costs more than it saves. Each granule passes its block {b, c, d} on the devices it uses,
// one batch at a time, so it needs 10 + 30: the granule's module DP proves 40. The critical
// path is 30 and the pattern LP, which averages the granules' paths and lets each node mix
// its splits, 34.3.
func TestBatchGranuleModuleDP(t *testing.T) {
	node := func(name string) schedule.Node {
		return schedule.Node{Name: name, Time: []float64{10, 20}, BatchTime: [][]float64{{10, 10}, {20, 20}}}
	}
	p := &schedule.Problem{
		Batch:   2,
		Nodes:   []schedule.Node{node("a"), node("b"), node("c"), node("d")},
		Edges:   []schedule.Edge{{From: 0, To: 1, Bytes: 5}, {From: 0, To: 2, Bytes: 5}, {From: 1, To: 3, Bytes: 5}, {From: 2, To: 3, Bytes: 5}},
		Devices: []schedule.Device{{Name: "fast"}, {Name: "slow"}},
		Links:   [][]schedule.Link{{{}, {Bandwidth: 1}}, {{Bandwidth: 1}, {}}},
	}
	ref := newRef(p).optimum()
	if !ref.feasible || !near(ref.opt, 40) {
		t.Fatalf("exhaustive optimum %v (feasible %v), want 40", ref.opt, ref.feasible)
	}
	res, err := schedule.Solve(context.Background(), p, schedule.Options{Method: schedule.HEFT})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bounds %v", res.Bounds)
	var dp, others float64
	for _, b := range res.Bounds {
		if b.Method == "module-dp-granule" {
			dp = b.Value
		} else {
			others = max(others, b.Value)
		}
	}
	if others > 39 {
		t.Errorf("the other bounds reach %v: the instance no longer needs the granule DP (bounds %v)", others, res.Bounds)
	}
	if dp < 40-1e-6 || dp > ref.opt+tolOf(ref.opt) {
		t.Errorf("module-dp-granule = %v, want 40 (≤ the optimum %v; bounds %v)", dp, ref.opt, res.Bounds)
	}
}
