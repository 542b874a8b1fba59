package partition

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// quick are Solve options small enough for unit tests.
var quick = Options{Seed: 1, Workers: 2, Bounds: BoundsSimple, BRKGA: BRKGAOptions{Population: 24, Generations: 12}}

// checkPlan verifies the invariants every plan must satisfy: it evaluates without error (so
// every tensor flows forward: acyclic quotient in stage order), Objective is the judge's
// value, stages match the assignment, and the bound does not exceed the objective.
func checkPlan(t *testing.T, p *Problem, pl *Plan) {
	t.Helper()
	_, obj, err := p.Evaluate(pl.Assignment, pl.StageDevice)
	if err != nil {
		t.Fatalf("plan is invalid: %v", err)
	}
	if obj != pl.Objective {
		t.Fatalf("plan objective %v, judge says %v", pl.Objective, obj)
	}
	if pl.LowerBound > pl.Objective*(1+1e-9) {
		t.Fatalf("lower bound %v above objective %v", pl.LowerBound, pl.Objective)
	}
	// Solve clamps nothing silently: a bound above the plan would be reported as a fault.
	for _, b := range pl.Bounds {
		if b.Status == "fault" || b.Value > pl.Objective*(1+1e-9) {
			t.Fatalf("bound %+v above the objective %v (notes %v)", b, pl.Objective, pl.Notes)
		}
	}
	for s, nodes := range pl.Stages {
		for _, v := range nodes {
			if pl.Assignment[v] != s {
				t.Fatalf("node %d listed in stage %d but assigned %d", v, s, pl.Assignment[v])
			}
		}
	}
	if len(pl.Stages) != p.NumStages() || len(pl.StageDevice) != p.NumStages() {
		t.Fatalf("%d stages / %d devices for %d stages", len(pl.Stages), len(pl.StageDevice), p.NumStages())
	}
}

func TestSolveDigest(t *testing.T) {
	for _, dc := range digestCases() {
		for k, opt := range dc.opt {
			t.Run(fmt.Sprintf("%s/k=%d", dc.name, k), func(t *testing.T) {
				p := dc.p(k)
				pl, err := Solve(context.Background(), p, quick)
				if err != nil {
					t.Fatal(err)
				}
				checkPlan(t, p, pl)
				if !near(pl.Objective, opt) {
					t.Fatalf("objective %v, OPT %v", pl.Objective, opt)
				}
				if pl.LowerBound > opt*(1+1e-9) {
					t.Fatalf("bound %v above OPT %v", pl.LowerBound, opt)
				}
			})
		}
	}
}

// TestRefineLemmaB2: the worst case of Lemma B.2 (seed 000 §B): slicing the bad order costs
// k·OPT, and the refinement reaches OPT = 1.
func TestRefineLemmaB2(t *testing.T) {
	for _, k := range []int{2, 3, 4} {
		p, bad := lemmaB2(k)
		c := compile(p)
		e := newEngine(c, 1)
		stage, dev, val := e.sliceFull(0, toInt32(bad))
		if !near(val, float64(k)) {
			t.Fatalf("k=%d: slicing the bad order gives %v, want k·OPT = %d", k, val, k)
		}
		s2, d2, _, _ := e.refine(context.Background(), 1, stage, dev, toInt32(bad))
		_, obj, err := p.Evaluate(c.expand(s2), d2)
		if err != nil || !near(obj, 1) {
			t.Fatalf("k=%d: refined plan %v costs %v (%v), want OPT = 1", k, s2, obj, err)
		}
	}
}

// TestSolveRandomBrute: on random small DAGs (homogeneous and with two devices, one of them
// communication-free with count 1) Solve finds the brute-force optimum, every bound is ≤ it,
// and the plan is valid.
func TestSolveRandomBrute(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for it := 0; it < 30; it++ {
		n := 4 + rng.Intn(4)
		k := 2 + rng.Intn(2)
		p := randomDAG(rng, n, k, 0.35)
		if it%3 == 1 {
			w2 := make([]float64, n)
			for v := range w2 {
				w2[v] = float64(rng.Intn(12))
			}
			p.K = 0
			p.Devices = []Device{{Name: "acc", Count: k}, {Name: "cpu", Count: 1, Work: w2, Bandwidth: math.Inf(1)}}
		}
		if it%4 == 3 && n >= 4 {
			p.Colocate = [][]int{{0, n - 1}}
		}
		opt := bruteOPT(t, p)
		pl, err := Solve(context.Background(), p, quick)
		if err != nil {
			t.Fatal(err)
		}
		checkPlan(t, p, pl)
		if !near(pl.Objective, opt) {
			t.Fatalf("it %d: objective %v, brute-force OPT %v", it, pl.Objective, opt)
		}
		for _, b := range pl.Bounds {
			if b.Value > opt*(1+1e-9) {
				t.Fatalf("it %d: bound %s = %v above OPT %v", it, b.Method, b.Value, opt)
			}
		}
	}
}

// TestCombinatorialBoundsBelowOPT checks the proofs of the combinatorial bounds on many
// random DAGs against brute force (a bound above OPT would be a counterexample), and that
// min-block dominates the node bound.
func TestCombinatorialBoundsBelowOPT(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for it := 0; it < 300; it++ {
		n := 3 + rng.Intn(5)
		k := 2 + rng.Intn(3)
		p := randomDAG(rng, n, k, 0.45)
		opt := bruteOPT(t, p)
		c := compile(p)
		node := c.nodeBound()
		mb, _ := c.minBlockBound(context.Background(), 0, 1000, 0)
		if mb < node*(1-1e-9) {
			t.Fatalf("it %d: min-block %v below the node bound %v", it, mb, node)
		}
		for name, b := range map[string]float64{"simple": c.simpleBound(), "node": node, "min-block": mb,
			"cut": c.cutBound(math.Max(node, c.simpleBound()))} {
			if b > opt*(1+1e-9) {
				t.Fatalf("it %d: %s bound %v > OPT %v", it, name, b, opt)
			}
		}
	}
}

// TestIdealDPRandom: the DP over ideals is exact (with and without a bound).
func TestIdealDPRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for it := 0; it < 40; it++ {
		n := 3 + rng.Intn(5)
		k := 2 + rng.Intn(3)
		p := randomDAG(rng, n, k, 0.4)
		opt := bruteOPT(t, p)
		c := compile(p)
		a := countAutomaton(c.counts)
		val, stage, dev, ok := c.idealDP(context.Background(), a, math.Inf(1), 1<<20, 1<<24)
		if !ok || !near(val, opt) {
			t.Fatalf("it %d: ideal DP %v (ok %v), OPT %v", it, val, ok, opt)
		}
		if _, obj, err := p.Evaluate(c.expand(stage), dev); err != nil || !near(obj, opt) {
			t.Fatalf("it %d: DP plan evaluates to %v (%v)", it, obj, err)
		}
		// With the optimum as bound nothing is strictly below it.
		if v, _, _, ok := c.idealDP(context.Background(), a, opt, 1<<20, 1<<24); !ok || !math.IsInf(v, 1) {
			t.Fatalf("it %d: bounded DP returned %v", it, v)
		}
	}
}

// TestDeterminism: the same seed gives the same plan whatever the number of workers.
func TestDeterminism(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	p := randomDAG(rng, 60, 4, 0.06)
	var first *Plan
	for _, w := range []int{1, 3} {
		o := quick
		o.Workers = w
		o.Bounds = BoundsNone
		// Small polish sub-MIPs exercise the same path (each is capped by branch-and-bound
		// nodes, so deterministic); the default caps took 45 s of CPU per solve here.
		o.Polish = PolishOptions{MaxNodes: 20, MaxSolves: 8}
		pl, err := Solve(context.Background(), p, o)
		if err != nil {
			t.Fatal(err)
		}
		checkPlan(t, p, pl)
		if first == nil {
			first = pl
			continue
		}
		if pl.Objective != first.Objective || fmt.Sprint(pl.Assignment) != fmt.Sprint(first.Assignment) {
			t.Fatalf("workers=%d: objective %v, plan differs from workers=1 (%v)", w, pl.Objective, first.Objective)
		}
	}
}

// TestCancelledSolveReturnsPlan: a cancelled context still yields the best plan so far.
func TestCancelledSolveReturnsPlan(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	p := randomDAG(rng, 40, 3, 0.1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	pl, err := Solve(ctx, p, quick)
	if err != nil {
		t.Fatal(err)
	}
	checkPlan(t, p, pl)
}

func TestValidateErrors(t *testing.T) {
	cyc := edgeProblem([]float64{1, 1}, []float64{1, 1}, [][2]int{{0, 1}, {1, 0}}, 2)
	var ce *CycleError
	if err := cyc.Validate(); err == nil || !asCycle(err, &ce) || len(ce.Nodes) != 2 {
		t.Fatalf("cycle not reported: %v", err)
	}
	bad := edgeProblem([]float64{1, -1}, nil, nil, 2)
	if err := bad.Validate(); err == nil {
		t.Fatal("negative work accepted")
	}
	noB := &Problem{Work: []float64{1}, K: 1}
	if err := noB.Validate(); err == nil {
		t.Fatal("zero bandwidth accepted")
	}
	capped := edgeProblem([]float64{1, 1}, nil, nil, 2)
	capped.Params = []float64{5, 5}
	capped.MemoryCap = 4
	if _, err := Solve(context.Background(), capped, quick); err == nil {
		t.Fatal("a plan was returned although no stage can hold a node")
	}
}

func asCycle(err error, ce **CycleError) bool {
	c, ok := err.(*CycleError)
	if ok {
		*ce = c
	}
	return ok
}

// TestEvaluateRejects: backward tensors, split colocation groups, over-used devices.
func TestEvaluateRejects(t *testing.T) {
	p := edgeProblem([]float64{1, 1, 1}, []float64{1, 1, 0}, [][2]int{{0, 1}, {1, 2}}, 2)
	if _, _, err := p.Evaluate([]int{1, 0, 1}, nil); err == nil {
		t.Fatal("backward tensor accepted")
	}
	p.Colocate = [][]int{{0, 2}}
	if _, _, err := p.Evaluate([]int{0, 1, 1}, nil); err == nil {
		t.Fatal("split colocation group accepted")
	}
	p.Colocate = nil
	p.K = 0
	p.Devices = []Device{{Name: "a", Count: 1}, {Name: "b", Count: 1}}
	if _, _, err := p.Evaluate([]int{0, 0, 1}, []int{0, 0}); err == nil {
		t.Fatal("device used twice with count 1 accepted")
	}
}

// TestOverflow: Eq. (2) with peak = 0 and the hard cap.
func TestOverflow(t *testing.T) {
	p := edgeProblem([]float64{1, 1}, []float64{3, 0}, [][2]int{{0, 1}}, 2)
	p.Params = []float64{4, 6}
	p.FastMemory = 5
	p.Bandwidth = 2
	costs, obj, err := p.Evaluate([]int{0, 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// One stage: work 2, no cut, overflow (10−5)/2.
	if costs[0].Overflow != 2.5 || obj != 4.5 {
		t.Fatalf("costs %+v obj %v", costs[0], obj)
	}
	costs, obj, _ = p.Evaluate([]int{0, 1}, nil)
	// Split: each stage pays the tensor 3/2; stage 1 overflows (6−5)/2.
	if costs[0].Total != 2.5 || costs[1].Total != 3 || obj != 3 {
		t.Fatalf("split costs %+v obj %v", costs, obj)
	}
}

func TestBaselines(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	p := randomDAG(rng, 30, 3, 0.12)
	p.Params = make([]float64, 30)
	for v := range p.Params {
		p.Params[v] = float64(rng.Intn(10))
	}
	best, err := Solve(context.Background(), p, quick)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range Baselines {
		pl, err := Baseline(p, b)
		if err != nil {
			t.Fatal(err)
		}
		checkPlan(t, p, pl)
		if pl.Objective < best.Objective*(1-1e-9) && best.Gap > 0 {
			t.Logf("%s beats the solver: %v < %v", b, pl.Objective, best.Objective)
		}
	}
	// Uniform on a chain of 6 nodes, k = 3: two nodes per stage.
	chain := edgeProblem([]float64{1, 1, 1, 1, 1, 1}, []float64{1, 1, 1, 1, 1, 0}, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}}, 3)
	pl, _ := Baseline(chain, BaselineUniform)
	if fmt.Sprint(pl.Stages) != "[[0 1] [2 3] [4 5]]" {
		t.Fatalf("uniform stages %v", pl.Stages)
	}
	// Time-balanced: weights 4,1,1,1,1 into 2 → {4},{1,1,1,1}.
	tw := edgeProblem([]float64{4, 1, 1, 1, 1}, nil, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}}, 2)
	pl, _ = Baseline(tw, BaselineTime)
	if fmt.Sprint(pl.Stages) != "[[0] [1 2 3 4]]" {
		t.Fatalf("time-balanced stages %v", pl.Stages)
	}
	if _, err := Baseline(tw, "nope"); err == nil {
		t.Fatal("unknown baseline accepted")
	}
}

func BenchmarkSliceGraph(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			p := layeredForBench(n)
			c := compile(p)
			e := newEngine(c, 1)
			var ks kahnScratch
			order := c.kahn(make([]float64, c.n), &ks, nil)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e.slice(0, order, math.Inf(1))
			}
		})
	}
}

// BenchmarkBRKGADecode measures one chromosome decode (Kahn + pruned SliceGraph) at the
// bound a BRKGA generation uses; b.N decodes per op give evaluations per second.
func BenchmarkBRKGADecode(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			p := layeredForBench(n)
			c := compile(p)
			e := newEngine(c, 1)
			rng := rand.New(rand.NewSource(1))
			var ks kahnScratch
			base := e.slice(0, c.kahn(make([]float64, c.n), &ks, nil), math.Inf(1))
			keys := make([][]float64, 16)
			for i := range keys {
				keys[i] = randomKeys(rng, c.n)
			}
			out := make([]int32, 0, c.n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				order := c.kahn(keys[i%len(keys)], &ks, out[:0])
				e.slicers[0].run(order, 1.5*base)
			}
		})
	}
}

func layeredForBench(n int) *Problem {
	rng := rand.New(rand.NewSource(1))
	width := 32
	p := &Problem{Work: make([]float64, n), K: 16, Bandwidth: 1}
	cons := make([][]int, n)
	for v := 0; v < n; v++ {
		p.Work[v] = 1 + 9*rng.Float64()
		if layer := v / width; layer > 0 {
			for i := 0; i < 1+rng.Intn(3); i++ {
				u := (layer-1)*width + rng.Intn(width)
				cons[u] = append(cons[u], v)
			}
		}
	}
	for u := range cons {
		if len(cons[u]) > 0 {
			p.Tensors = append(p.Tensors, Tensor{Producer: u, Consumers: cons[u], Size: 0.5 + 2.5*rng.Float64()})
		}
	}
	return p
}
