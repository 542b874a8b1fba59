package partition

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestSegmentTableT7 checks the sweep's segment costs against the table of digest §9.5.
func TestSegmentTableT7(t *testing.T) {
	want := [][]float64{
		{5, 10, 14, 15, 14, 19, 16},
		{9, 13, 18, 17, 22, 19},
		{8, 13, 16, 21, 18},
		{9, 16, 21, 18},
		{9, 14, 11},
		{8, 8},
		{7},
	}
	p := digestCases()[6].p(3)
	c := compile(p)
	s := newSlicer(c, countAutomaton(c.counts))
	got := map[[2]int]float64{}
	s.onSegment = func(l, r int, cost []float64) { got[[2]int{l, r}] = cost[0] }
	s.run(toInt32([]int{0, 1, 2, 3, 4, 5, 6}), math.Inf(1))
	for l := 1; l <= 7; l++ {
		for r := l; r <= 7; r++ {
			g, ok := got[[2]int{l - 1, r}]
			if !ok || g != want[l-1][r-l] {
				t.Errorf("cost(%d..%d) = %v (seen %v), want %v", l, r, g, ok, want[l-1][r-l])
			}
		}
	}
}

// TestSweepMatchesScratch: every segment cost of the sweep equals f(S) from scratch, on
// random DAGs with multi-output tensors, parameters and overflow, and two devices.
func TestSweepMatchesScratch(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for it := 0; it < 60; it++ {
		n := 3 + rng.Intn(9)
		p := randomDAG(rng, n, 3, 0.35)
		p.Params = make([]float64, n)
		for v := range p.Params {
			p.Params[v] = float64(rng.Intn(4))
		}
		p.FastMemory = 3
		if it%2 == 1 {
			w2 := make([]float64, n)
			for v := range w2 {
				w2[v] = float64(rng.Intn(9))
			}
			p.K = 0
			p.Devices = []Device{{Name: "a", Count: 2}, {Name: "b", Count: 1, Work: w2, Bandwidth: 2, FastMemory: 5}}
		}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		c := compile(p)
		var ks kahnScratch
		prio := randomKeys(rng, c.n)
		order := c.kahn(prio, &ks, nil)
		if !c.isTopological(order) {
			t.Fatal("kahn order is not topological")
		}
		s := newSlicer(c, countAutomaton(c.counts))
		seen := 0
		s.onSegment = func(l, r int, cost []float64) {
			seen++
			var S []int
			for _, v := range order[l:r] {
				S = append(S, int(v))
			}
			for d := range c.devs {
				if want := c.blockCost(S, d); !near(cost[d], want) {
					t.Fatalf("it %d: segment [%d,%d) device %d: sweep %v, scratch %v", it, l, r, d, cost[d], want)
				}
				// and on the original problem
				var orig []int
				for _, g := range S {
					orig = append(orig, c.members[g]...)
				}
				if want := p.BlockCost(orig, d); !near(cost[d], want) {
					t.Fatalf("it %d: segment [%d,%d) device %d: sweep %v, Problem.BlockCost %v", it, l, r, d, cost[d], want)
				}
			}
		}
		s.run(order, math.Inf(1))
		if seen != c.n*(c.n+1)/2 {
			t.Fatalf("saw %d segments, want %d", seen, c.n*(c.n+1)/2)
		}
	}
}

// TestSliceDigest: SliceGraph on every topological order of T1–T7 equals brute-force
// segmentation, and the minimum over orders equals brute-force OPT (Theorem 4.3).
func TestSliceDigest(t *testing.T) {
	for _, dc := range digestCases() {
		for k, opt := range dc.opt {
			t.Run(fmt.Sprintf("%s/k=%d", dc.name, k), func(t *testing.T) {
				p := dc.p(k)
				if err := p.Validate(); err != nil {
					t.Fatal(err)
				}
				if got := bruteOPT(t, p); got != opt {
					t.Fatalf("brute-force OPT = %v, digest says %v", got, opt)
				}
				c := compile(p)
				s := newSlicer(c, countAutomaton(c.counts))
				minSlice := math.Inf(1)
				for _, ord := range allTopoOrders(p) {
					o := toInt32(ord)
					got := s.run(o, math.Inf(1))
					if want := bruteSlice(p, ord); !near(got, want) {
						t.Fatalf("order %v: DP %v, brute %v", ord, got, want)
					}
					stage, dev := s.segments(o)
					_, obj, err := p.Evaluate(c.expand(stage), dev)
					if err != nil || !near(obj, got) {
						t.Fatalf("order %v: reconstructed plan %v evaluates to %v (%v), DP said %v", ord, stage, obj, err, got)
					}
					// Pruned runs are exact below the bound.
					if v := s.run(o, got*1.0001); !near(v, got) {
						t.Fatalf("order %v: pruned DP %v, want %v", ord, v, got)
					}
					if v := s.run(o, got); !math.IsInf(v, 1) {
						t.Fatalf("order %v: DP with bound = optimum returned %v", ord, v)
					}
					minSlice = math.Min(minSlice, got)
				}
				if !near(minSlice, opt) {
					t.Fatalf("min over orders %v, OPT %v", minSlice, opt)
				}
			})
		}
	}
}

// TestSliceBadOrders: the worst cases of Lemma B.2 and Remark B.3 (digest T5, T6).
func TestSliceBadOrders(t *testing.T) {
	cases := []struct {
		name  string
		p     *Problem
		order []int
		want  float64
	}{
		{"T5 bad", digestCases()[4].p(2), []int{0, 1, 3, 2}, 2},
		{"T5 good", digestCases()[4].p(2), []int{0, 2, 1, 3}, 1},
		{"T6 bad", digestCases()[5].p(3), []int{0, 1, 2, 5, 4, 3}, 1.5},
	}
	for _, tc := range cases {
		c := compile(tc.p)
		s := newSlicer(c, countAutomaton(c.counts))
		if got := s.run(toInt32(tc.order), math.Inf(1)); !near(got, tc.want) {
			t.Errorf("%s: SliceGraph = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSliceRandom: on random small DAGs (two devices half the time) the DP equals brute-force
// segmentation of the same order, and the min over all orders equals brute-force OPT.
func TestSliceRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for it := 0; it < 40; it++ {
		n := 3 + rng.Intn(4)
		k := 2 + rng.Intn(2)
		p := randomDAG(rng, n, k, 0.4)
		hetero := it%3 == 2
		if hetero {
			w2 := make([]float64, n)
			for v := range w2 {
				w2[v] = float64(rng.Intn(8))
			}
			p.K = 0
			p.Devices = []Device{{Name: "fast", Count: k - 1}, {Name: "free", Count: 1, Work: w2, Bandwidth: math.Inf(1)}}
		}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		c := compile(p)
		s := newSlicer(c, countAutomaton(c.counts))
		minSlice := math.Inf(1)
		for _, ord := range allTopoOrders(p) {
			o := toInt32(ord)
			got := s.run(o, math.Inf(1))
			if !hetero {
				if want := bruteSlice(p, ord); !near(got, want) {
					t.Fatalf("it %d order %v: DP %v, brute %v", it, ord, got, want)
				}
			}
			stage, dev := s.segments(o)
			_, obj, err := p.Evaluate(c.expand(stage), dev)
			if err != nil || !near(obj, got) {
				t.Fatalf("it %d: plan evaluates to %v (%v), DP %v", it, obj, err, got)
			}
			minSlice = math.Min(minSlice, got)
		}
		if opt := bruteOPT(t, p); !near(minSlice, opt) {
			t.Fatalf("it %d (hetero %v): min over orders %v, OPT %v", it, hetero, minSlice, opt)
		}
	}
}

// TestManyDeviceKinds: more device kinds than the count lattice allows fall back to a chain
// whose order is searched; the plan stays valid and uses each device at most once.
func TestManyDeviceKinds(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	n := 30
	p := randomDAG(rng, n, 0, 0.15)
	p.K = 0
	for d := 0; d < 13; d++ { // 2^13 > maxCountStates
		w := make([]float64, n)
		for v := range w {
			w[v] = float64(1 + rng.Intn(5+d))
		}
		p.Devices = append(p.Devices, Device{Name: fmt.Sprintf("d%d", d), Count: 1, Work: w, Bandwidth: float64(1 + d%3)})
	}
	if countAutomaton([]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}) != nil {
		t.Fatal("the lattice should be too large")
	}
	pl, err := Solve(context.Background(), p, quick)
	if err != nil {
		t.Fatal(err)
	}
	checkPlan(t, p, pl)
}

// TestPrunedSliceExact: on larger random DAGs and orders, every pruned run (bound above the
// optimum of the order) returns that optimum exactly and a run with bound = optimum returns
// +Inf; this guards the work, pigeonhole and early-abort pruning.
func TestPrunedSliceExact(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	for it := 0; it < 40; it++ {
		n := 30 + rng.Intn(120)
		k := 2 + rng.Intn(7)
		p := randomDAG(rng, n, k, 3/float64(n))
		if it%2 == 1 {
			// Layered graphs with heavy tensors: cutting at most positions is expensive.
			p = layeredForBench(n + 100)
			p.K = k
			for i := range p.Tensors {
				p.Tensors[i].Size *= 4
			}
		}
		if it%4 == 3 {
			w2 := make([]float64, p.NumNodes())
			for v := range w2 {
				w2[v] = float64(rng.Intn(15))
			}
			p.K = 0
			p.Devices = []Device{{Name: "a", Count: k - 1}, {Name: "b", Count: 2, Work: w2, Bandwidth: 3}}
		}
		c := compile(p)
		s := newSlicer(c, countAutomaton(c.counts))
		var ks kahnScratch
		order := c.kahn(randomKeys(rng, c.n), &ks, nil)
		opt := s.run(order, math.Inf(1))
		for _, f := range []float64{1 + 1e-9, 1.01, 1.3, 2, 5} {
			if got := s.run(order, opt*f); !near(got, opt) {
				t.Fatalf("it %d (n=%d k=%d): bound %.3g·opt gives %v, want %v", it, n, k, f, got, opt)
			}
		}
		if got := s.run(order, opt); !math.IsInf(got, 1) {
			t.Fatalf("it %d: bound = opt gives %v", it, got)
		}
	}
}

// TestPrunedSliceExactLarge: the same at the size where a too eager early abort once
// misfired (layered, 10000 nodes, k = 16, bounds just above the optimum); the reference is a
// run with a looser bound.
func TestPrunedSliceExactLarge(t *testing.T) {
	p := layeredForBench(10000)
	c := compile(p)
	s := newSlicer(c, countAutomaton(c.counts))
	var ks kahnScratch
	order := c.kahn(make([]float64, c.n), &ks, nil)
	simple := c.simpleBound()
	ref := s.run(order, 2*simple)
	if math.IsInf(ref, 1) {
		t.Fatal("no slicing below twice the simple bound")
	}
	for _, b := range []float64{ref * (1 + 1e-9), 1.05 * simple, 1.2 * simple} {
		if b <= ref {
			continue
		}
		if got := s.run(order, b); !near(got, ref) {
			t.Fatalf("bound %v gives %v, want %v", b, got, ref)
		}
	}
}
