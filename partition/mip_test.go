package partition

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"testing"
	"time"
)

// TestMIPDigest checks the MIP hierarchy against the values of digest §9.5, solved without
// any fixing (target +Inf), so each model's own optimum is compared; bottleneck-guess also
// through the engine (checkGuessEngine).
func TestMIPDigest(t *testing.T) {
	ctx := context.Background()
	for _, dc := range digestCases() {
		for k, opt := range dc.opt {
			t.Run(fmt.Sprintf("%s/k=%d", dc.name, k), func(t *testing.T) {
				p := dc.p(k)
				c := compile(p)
				dev := make([]int, k)
				ex := c.solveMIP(ctx, c.exactSpec(dev, math.Inf(1), 0, opt), nil, nil, nil, 20*time.Second, 0)
				if !near(ex.bound, opt) || ex.status != "optimal" {
					t.Fatalf("exact MIP bound %v (%s), OPT %v", ex.bound, ex.status, opt)
				}
				L := c.simpleBound()
				if want, ok := dc.three[k]; ok {
					sp := mipSpec{name: BoundBottleneck, K: 3, dev: []int{0, 0, 0}, span: []int{1, 1, 1}, mult: []float64{0, 0, 0},
						objBlock: 1, heavy: 1, heavyL: L, target: math.Inf(1), scale: opt}
					if got := c.solveMIP(ctx, sp, nil, nil, nil, 20*time.Second, 0).bound; !near(got, want) {
						t.Fatalf("bottleneck %v, digest %v", got, want)
					}
				}
				if want, ok := dc.guess[k]; ok {
					g := math.Inf(1)
					for j := 1; j <= k; j++ {
						sp := mipSpec{name: BoundBottleneckGuess, K: 3, dev: []int{0, 0, 0}, span: []int{j - 1, 1, k - j},
							mult: []float64{float64(j - 1), 1, float64(k - j)}, objBlock: -1, heavy: 1, heavyL: L,
							target: math.Inf(1), scale: opt}
						g = math.Min(g, c.solveMIP(ctx, sp, nil, nil, nil, 20*time.Second, 0).bound)
					}
					if !near(g, want) {
						t.Fatalf("bottleneck-guess %v, digest %v", g, want)
					}
					checkGuessEngine(t, p, want, opt)
				}
			})
		}
	}
}

// TestMIPFixingRandom: with variable fixing at the optimum as target and the optimal plan as
// warm start, the exact MIP proves the optimum; every MIP bound is ≤ OPT; hetero device
// orders included.
func TestMIPFixingRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	for it := 0; it < 12; it++ {
		n := 4 + rng.Intn(3)
		k := 2 + rng.Intn(2)
		p := randomDAG(rng, n, k, 0.4)
		if it%3 == 2 {
			w2 := make([]float64, n)
			for v := range w2 {
				w2[v] = float64(rng.Intn(12))
			}
			p.K = 0
			p.Devices = []Device{{Name: "acc", Count: k}, {Name: "cpu", Count: 1, Work: w2, Bandwidth: math.Inf(1)}}
		}
		opt := bruteOPT(t, p)
		pl, err := Solve(context.Background(), p, Options{Seed: 1, Bounds: BoundsNone, BRKGA: BRKGAOptions{Population: 10, Generations: 3}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{BoundExact, BoundBottleneck, BoundBottleneckGuess} {
			if p.Heterogeneous() && m != BoundExact {
				continue
			}
			info, better, err := LowerBound(context.Background(), p, pl, m, BoundOptions{TimeLimit: 10 * time.Second, Parallel: 2})
			if err != nil {
				t.Fatal(err)
			}
			if info.Value > opt*(1+1e-9) || info.Status == "fault" {
				t.Fatalf("it %d: %s bound %v (%s) > OPT %v", it, m, info.Value, info.Status, opt)
			}
			if m == BoundExact && !near(info.Value, opt) {
				t.Fatalf("it %d: exact MIP bound %v, OPT %v (status %s)", it, info.Value, opt, info.Status)
			}
			if better != nil {
				checkPlan(t, p, better)
			}
		}
	}
}

// checkGuessEngine runs bottleneck-guess through the engine one MIP at a time (each with its
// share of the time): it reaches at least the digest's value want and never passes OPT; with
// the floor already at the incumbent's value nothing can be gained, and the method says so
// ("no-gain") with the floor as its value.
func checkGuessEngine(t *testing.T, p *Problem, want, opt float64) {
	t.Helper()
	ctx := context.Background()
	pl, err := Solve(ctx, p, Options{Seed: 1, Bounds: BoundsNone})
	if err != nil {
		t.Fatal(err)
	}
	info, _, err := LowerBound(ctx, p, pl, BoundBottleneckGuess, BoundOptions{TimeLimit: 20 * time.Second, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if info.Value < want*(1-1e-9) || info.Value > opt*(1+1e-9) {
		t.Fatalf("engine bottleneck-guess %v (%s), digest %v, OPT %v", info.Value, info.Status, want, opt)
	}
	c := compile(p)
	if simple := c.simpleBound(); info.Value > simple*(1+1e-9) && info.Status == "no-gain" {
		t.Fatalf("engine bottleneck-guess %v above simple %v reported %q", info.Value, simple, info.Status)
	}
	stage := c.contract(pl.Assignment)
	st := &solveState{p: p, c: c, t0: time.Now(), opts: Options{Gap: -1, Bounds: BoundsFull},
		best: pl.Objective, lb: pl.Objective, stage: stage, device: pl.StageDevice, source: "incumbent"}
	anc, desc := c.reachWork()
	got := newEngine(c, 1).boundGuess(ctx, st, anc, desc, 20*time.Second, 1)
	if got.Status != "no-gain" || !near(got.Value, pl.Objective) {
		t.Fatalf("floor at the incumbent %v: bottleneck-guess %v (%s)", pl.Objective, got.Value, got.Status)
	}
}
