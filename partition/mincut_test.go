package partition

import (
	"context"
	"math"
	"math/rand"
	"testing"
	"time"
)

// chainProblem is a chain of n nodes whose tensors are much larger than the work of the
// nodes, so every minimum cut of min-block pushes flow along the whole chain (many Dinic
// phases): the case where min-block once ran past a time limit.
func chainProblem(n, k int) *Problem {
	rng := rand.New(rand.NewSource(int64(n)))
	p := &Problem{Work: make([]float64, n), K: k, Bandwidth: 1}
	for v := range p.Work {
		p.Work[v] = 0.001 + 0.01*rng.Float64()
		if v+1 < n {
			p.Tensors = append(p.Tensors, Tensor{Producer: v, Consumers: []int{v + 1}, Size: 5 + rng.Float64()})
		}
	}
	return p
}

// TestMinBlockBudget: min-block stops at its context deadline and at its work budget, and
// what it returns then is still a valid bound (≤ the full computation, ≤ OPT by brute force).
func TestMinBlockBudget(t *testing.T) {
	p := chainProblem(100000, 4)
	c := compile(p)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	v, complete := c.minBlockBound(ctx, 0, 64, 0)
	if el := time.Since(t0); el > 2*time.Second {
		t.Fatalf("min-block took %v with a 200 ms deadline", el)
	}
	if complete {
		t.Fatalf("min-block claims completion under a 200 ms deadline")
	}
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		t.Fatalf("min-block returned %v", v)
	}
	// The work budget alone (no deadline) also stops it, deterministically.
	v1, c1 := c.minBlockBound(context.Background(), 0, 64, 2_000_000)
	v2, c2 := c.minBlockBound(context.Background(), 0, 64, 2_000_000)
	if c1 || c2 || v1 != v2 {
		t.Fatalf("budgeted min-block: %v (%v), again %v (%v)", v1, c1, v2, c2)
	}
	// Stopped early, at any budget, it stays below the full bound and below OPT.
	rng := rand.New(rand.NewSource(17))
	for it := 0; it < 150; it++ {
		n := 3 + rng.Intn(5)
		k := 2 + rng.Intn(3)
		q := randomDAG(rng, n, k, 0.5)
		opt := bruteOPT(t, q)
		cq := compile(q)
		for v := 0; v < cq.n; v++ {
			if a, b := cq.singletonCost(v, 0), cq.blockCost([]int{v}, 0); !near(a, b) {
				t.Fatalf("it %d: singletonCost(%d) = %v, blockCost = %v", it, v, a, b)
			}
		}
		full, ok := cq.minBlockBound(context.Background(), 0, 1000, 0)
		if !ok || full > opt*(1+1e-9) {
			t.Fatalf("it %d: full min-block %v (complete %v), OPT %v", it, full, ok, opt)
		}
		for _, b := range []int64{1, 5, 20, 60, 200} {
			part, _ := cq.minBlockBound(context.Background(), 0, 1000, b)
			if part > full*(1+1e-9) {
				t.Fatalf("it %d: min-block with budget %d gives %v above the full %v", it, b, part, full)
			}
		}
	}
}

// TestExactIdealsClockNote: an ideal DP cut by its clock budget proves nothing and the plan
// says so in a note; a completed one offers its bound.
func TestExactIdealsClockNote(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	p := randomDAG(rng, 12, 3, 0.2)
	c := compile(p)
	newState := func() (*engine, *solveState) {
		e := newEngine(c, 1)
		st := &solveState{p: p, c: c, t0: time.Now(), opts: Options{Bounds: BoundsFast}, best: math.Inf(1)}
		for _, h := range c.startOrders() {
			if stage, dev, val := e.sliceFull(0, h.order); !math.IsInf(val, 1) {
				st.offerPlan(stage, dev, h.order, h.name)
			}
		}
		return e, st
	}
	e, st := newState()
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if e.exactIdeals(ctx, st) {
		t.Fatalf("ideal DP claims completion with an expired deadline")
	}
	if len(st.notes) != 1 || len(st.bounds) != 0 {
		t.Fatalf("notes %q, bounds %v: want one note and no bound", st.notes, st.bounds)
	}
	e, st = newState()
	if !e.exactIdeals(context.Background(), st) {
		t.Fatalf("ideal DP did not complete on 12 nodes")
	}
	if len(st.notes) != 0 || len(st.bounds) != 1 || st.bounds[0].Method != BoundIdealDP {
		t.Fatalf("notes %q, bounds %v", st.notes, st.bounds)
	}
}
