package milp

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lanl/highs"
	"github.com/onnxpart/onnxpart/diag"
)

const tol = 1e-6

// knapsack is deps-go.md §1c's example: max 10a+13b+7c+8d, 5a+6b+4c+5d ≤ 10, binary;
// the optimum is 20 at [0 1 1 0] (the LP relaxation's is 21 at [0.8 1 0 0]).
func knapsack(maximize bool) *Model {
	m := &Model{Maximize: maximize}
	sign := -1.0 // minimise −profit
	if maximize {
		sign = 1
	}
	var cols []int
	for j, p := range []float64{10, 13, 7, 8} {
		cols = append(cols, m.AddBinary(sign*p, fmt.Sprintf("item %d", j)))
	}
	m.AddRow(math.Inf(-1), 10, cols, []float64{5, 6, 4, 5})
	return m
}

// multiKnapsack is a random multi-dimensional knapsack, written as a minimisation of −profit:
// n binaries, rows dense capacity rows at half the total weight, profits correlated with
// weights (which makes it hard). 2000×30 does not close its gap in seconds (deps-go.md §1c).
func multiKnapsack(n, rows int, seed uint64) *Model {
	rng := rand.New(rand.NewPCG(seed, 7))
	m := &Model{}
	w := make([][]float64, rows)
	for i := range w {
		w[i] = make([]float64, n)
	}
	cols := make([]int, n)
	for j := range n {
		total := 0.0
		for i := range rows {
			w[i][j] = float64(1 + rng.IntN(1000))
			total += w[i][j]
		}
		cols[j] = m.AddBinary(-(total/float64(rows) + float64(rng.IntN(100))), "")
	}
	for i := range rows {
		capacity := 0.0
		for _, v := range w[i] {
			capacity += v
		}
		m.AddRow(math.Inf(-1), capacity/2, cols, w[i])
	}
	return m
}

// randomKnapsack is a small 0/1 knapsack with integer data and its optimum by dynamic
// programming, to check HiGHS against.
func randomKnapsack(n int, seed uint64) (*Model, float64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	m := &Model{Maximize: true}
	weights := make([]int, n)
	profits := make([]int, n)
	cols := make([]int, n)
	coef := make([]float64, n)
	total := 0
	for j := range n {
		weights[j] = 1 + rng.IntN(60)
		profits[j] = weights[j] + rng.IntN(30)
		total += weights[j]
		cols[j] = m.AddBinary(float64(profits[j]), "")
		coef[j] = float64(weights[j])
	}
	capacity := total / 3
	m.AddRow(math.Inf(-1), float64(capacity), cols, coef)
	best := make([]int, capacity+1)
	for j := range n {
		for c := capacity; c >= weights[j]; c-- {
			best[c] = max(best[c], best[c-weights[j]]+profits[j])
		}
	}
	return m, float64(best[capacity])
}

// checkFeasible verifies x against the model's bounds, integrality and rows, and that
// objective is c·x.
func checkFeasible(t *testing.T, m *Model, x []float64, objective float64) {
	t.Helper()
	if len(x) != m.NumVars() {
		t.Fatalf("solution has %d values for %d columns", len(x), m.NumVars())
	}
	cx := 0.0
	for j, v := range x {
		if v < m.ColLo[j]-tol || v > m.ColHi[j]+tol {
			t.Fatalf("x[%d] = %v outside [%v, %v]", j, v, m.ColLo[j], m.ColHi[j])
		}
		if len(m.Integer) > 0 && m.Integer[j] && math.Abs(v-math.Round(v)) > tol {
			t.Fatalf("integer x[%d] = %v", j, v)
		}
		cx += m.Obj[j] * v
	}
	for i := range m.RowLo {
		ax := 0.0
		for k, j := range m.RowCols[i] {
			ax += m.RowVals[i][k] * x[j]
		}
		scale := 1 + math.Abs(ax)
		if ax < m.RowLo[i]-tol*scale || ax > m.RowHi[i]+tol*scale {
			t.Fatalf("row %d: %v not in [%v, %v]", i, ax, m.RowLo[i], m.RowHi[i])
		}
	}
	if math.Abs(cx-objective) > tol*(1+math.Abs(cx)) {
		t.Fatalf("objective %v but c·x = %v", objective, cx)
	}
}

// checkInvariants checks what every Result promises.
func checkInvariants(t *testing.T, m *Model, r *Result) {
	t.Helper()
	if r.HasSolution {
		checkFeasible(t, m, r.X, r.Objective)
		better := r.DualBound - r.Objective // > 0: bound beyond the incumbent when minimising
		if m.Maximize {
			better = -better
		}
		if better > tol*(1+math.Abs(r.Objective)) {
			t.Fatalf("dual bound %v beyond incumbent %v (maximize %v)", r.DualBound, r.Objective, m.Maximize)
		}
		if want := relGap(true, r.Objective, r.DualBound); r.Gap != want && !(math.IsInf(want, 1) && math.IsInf(r.Gap, 1)) {
			t.Fatalf("gap %v, want %v", r.Gap, want)
		}
	} else if !math.IsInf(r.Gap, 1) {
		t.Fatalf("gap %v without incumbent, want +Inf", r.Gap)
	}
}

func TestKnapsackOptimal(t *testing.T) {
	for _, maximize := range []bool{true, false} {
		t.Run(fmt.Sprintf("maximize=%v", maximize), func(t *testing.T) {
			m := knapsack(maximize)
			r, err := m.Solve(context.Background(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := -20.0
			if maximize {
				want = 20
			}
			if r.Status != Optimal || !r.HasSolution {
				t.Fatalf("status %v, has solution %v", r.Status, r.HasSolution)
			}
			checkInvariants(t, m, r)
			if math.Abs(r.Objective-want) > tol || math.Abs(r.DualBound-want) > tol || r.Gap > tol {
				t.Fatalf("objective %v, bound %v, gap %v; want %v", r.Objective, r.DualBound, r.Gap, want)
			}
			for j, v := range []float64{0, 1, 1, 0} {
				if math.Abs(r.X[j]-v) > tol {
					t.Fatalf("x = %v, want [0 1 1 0]", r.X)
				}
			}
		})
	}
}

func TestLPKnownOptimum(t *testing.T) {
	// max 3x + 2y  s.t.  x + y ≤ 4, x + 3y ≤ 6, 0 ≤ x ≤ 3, y ≥ 0: optimum 11 at (3, 1).
	m := &Model{Maximize: true}
	x := m.AddVar(0, 3, 3, false, "x")
	y := m.AddVar(0, math.Inf(1), 2, false, "y")
	m.AddRow(math.Inf(-1), 4, []int{x, y}, []float64{1, 1})
	m.AddRow(math.Inf(-1), 6, []int{x, y}, []float64{1, 3})
	r, err := m.Solve(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, m, r)
	if r.Status != Optimal || math.Abs(r.Objective-11) > tol || math.Abs(r.DualBound-11) > tol ||
		math.Abs(r.X[x]-3) > tol || math.Abs(r.X[y]-1) > tol {
		t.Fatalf("got %v %v bound %v x %v, want optimal 11 at (3, 1)", r.Status, r.Objective, r.DualBound, r.X)
	}

	t.Run("relaxation", func(t *testing.T) {
		m := knapsack(false)
		r, err := m.Solve(context.Background(), Options{LP: true})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != Optimal || math.Abs(r.Objective+21) > tol || math.Abs(r.DualBound+21) > tol || r.Nodes != 0 {
			t.Fatalf("got %v %v bound %v nodes %d, want optimal −21", r.Status, r.Objective, r.DualBound, r.Nodes)
		}
		if math.Abs(r.X[0]-0.8) > tol || math.Abs(r.X[1]-1) > tol {
			t.Fatalf("x = %v, want [0.8 1 0 0]", r.X)
		}
	})
}

func TestInfeasible(t *testing.T) {
	for _, lp := range []bool{false, true} {
		t.Run(fmt.Sprintf("lp=%v", lp), func(t *testing.T) {
			// a + b ≥ 3 with a, b ∈ [0, 1].
			m := &Model{}
			a := m.AddVar(0, 1, 1, !lp, "a")
			b := m.AddVar(0, 1, 1, !lp, "b")
			m.AddRow(3, math.Inf(1), []int{a, b}, []float64{1, 1})
			r, err := m.Solve(context.Background(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, m, r)
			if r.Status != Infeasible || r.HasSolution || !math.IsInf(r.DualBound, 1) || !math.IsInf(r.Objective, 1) {
				t.Fatalf("got %+v, want infeasible with bound +Inf", r)
			}
		})
	}
}

func TestInfiniteBounds(t *testing.T) {
	// min x + y with x free, y ≥ 0 integer:
	//   x + y ≥ 2.5         (+Inf upper bound)
	//   x − y ≤ 0.5         (−Inf lower bound)
	//   x + 7y free         (both infinite: must not constrain)
	//   x ≥ −10 as a row    (x's own bounds are infinite)
	// Optimum 2.5, e.g. x = 1.5, y = 1 or x = 0.5, y = 2.
	m := &Model{}
	x := m.AddVar(math.Inf(-1), math.Inf(1), 1, false, "x")
	y := m.AddVar(0, math.Inf(1), 1, true, "y")
	m.AddRow(2.5, math.Inf(1), []int{x, y}, []float64{1, 1})
	m.AddRow(math.Inf(-1), 0.5, []int{x, y}, []float64{1, -1})
	m.AddRow(math.Inf(-1), math.Inf(1), []int{x, y}, []float64{1, 7})
	m.AddRow(-10, math.Inf(1), []int{x}, []float64{1})
	r, err := m.Solve(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, m, r)
	if r.Status != Optimal || math.Abs(r.Objective-2.5) > tol {
		t.Fatalf("got %v %v x %v, want optimal 2.5", r.Status, r.Objective, r.X)
	}
}

func TestRowsAsWritten(t *testing.T) {
	t.Run("repeated columns are summed", func(t *testing.T) {
		// max x, integer, with x + x ≤ 3 (2x ≤ 3): x = 1. Keeping only one entry (as
		// lanl/highs's Nonzero lists do) would give x = 3.
		m := &Model{Maximize: true}
		x := m.AddVar(0, 10, 1, true, "x")
		m.AddRow(math.Inf(-1), 3, []int{x, x}, []float64{1, 1})
		r, err := m.Solve(context.Background(), Options{})
		if err != nil || r.Status != Optimal || r.Objective != 1 {
			t.Fatalf("got %v %v (%v), want optimal 1", r.Status, r.Objective, err)
		}
		checkInvariants(t, m, r)
	})
	t.Run("empty and cancelling rows", func(t *testing.T) {
		// Row 0 is empty, row 1 cancels to 0·x, row 2 is real: x ≤ 2.
		m := &Model{Maximize: true}
		x := m.AddVar(0, 10, 1, false, "x")
		m.AddRow(-1, 1, nil, nil)
		m.AddRow(-1, 1, []int{x, x}, []float64{1, -1})
		m.AddRow(math.Inf(-1), 2, []int{x}, []float64{1})
		r, err := m.Solve(context.Background(), Options{})
		if err != nil || r.Status != Optimal || math.Abs(r.Objective-2) > tol {
			t.Fatalf("got %v %v (%v), want optimal 2", r.Status, r.Objective, err)
		}
		// An empty row that 0 does not satisfy makes the model infeasible.
		m.AddRow(1, 2, nil, nil)
		r, err = m.Solve(context.Background(), Options{})
		if err != nil || r.Status != Infeasible {
			t.Fatalf("got %v (%v), want infeasible", r.Status, err)
		}
	})
	t.Run("no columns", func(t *testing.T) {
		m := &Model{}
		m.AddRow(-1, 1, nil, nil)
		r, err := m.Solve(context.Background(), Options{})
		if err != nil || r.Status != Optimal || !r.HasSolution || r.Objective != 0 || r.DualBound != 0 {
			t.Fatalf("got %+v (%v), want optimal 0", r, err)
		}
		m.AddRow(1, 1, nil, nil)
		if r, err = m.Solve(context.Background(), Options{}); err != nil || r.Status != Infeasible {
			t.Fatalf("got %+v (%v), want infeasible", r, err)
		}
	})
}

func TestTimeLimitKeepsIncumbentAndBound(t *testing.T) {
	m := multiKnapsack(2000, 30, 1)
	begin := time.Now()
	r, err := m.Solve(context.Background(), Options{TimeLimit: time.Second, RelGap: 1e-9})
	wall := time.Since(begin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("status %v objective %v bound %v gap %.3g nodes %d in %v", r.Status, r.Objective, r.DualBound, r.Gap, r.Nodes, wall)
	if r.Status != TimeLimit {
		t.Fatalf("status %v, want time-limit (is the instance too easy?)", r.Status)
	}
	if !r.HasSolution {
		t.Fatal("no incumbent after 1 s")
	}
	checkInvariants(t, m, r) // feasibility against the rows, DualBound ≤ Objective
	if math.IsInf(r.DualBound, 0) || !(r.Gap > 0) || math.IsInf(r.Gap, 0) {
		t.Fatalf("bound %v gap %v, want a finite bound and a positive finite gap", r.DualBound, r.Gap)
	}
	if wall > 20*time.Second {
		t.Fatalf("a 1 s limit took %v", wall)
	}
}

func TestMIPStart(t *testing.T) {
	t.Run("start is kept as incumbent", func(t *testing.T) {
		// A model with many optima: the start is an optimum other than the one HiGHS finds on
		// its own, so getting it back shows the start was used.
		m := &Model{}
		var cols []int
		var weights []float64
		for j := range 60 {
			cols = append(cols, m.AddBinary(float64(1+j%3), ""))
			weights = append(weights, float64(1+j%2))
		}
		m.AddRow(45, math.Inf(1), cols, weights)
		for i := range 10 {
			m.AddRow(math.Inf(-1), 8, cols[6*i:6*i+6], []float64{1, 1, 1, 1, 1, 1})
		}
		own, err := m.Solve(context.Background(), Options{})
		if err != nil || own.Status != Optimal {
			t.Fatalf("%v %v", own.Status, err)
		}
		// Another optimum: exclude HiGHS's own with a no-good row.
		other := *m
		var vals []float64
		ones := 0.0
		for _, v := range own.X {
			if v > 0.5 {
				vals = append(vals, -1)
				ones++
			} else {
				vals = append(vals, 1)
			}
		}
		other.AddRow(1-ones, math.Inf(1), cols, vals)
		alt, err := other.Solve(context.Background(), Options{})
		if err != nil || alt.Status != Optimal || math.Abs(alt.Objective-own.Objective) > tol {
			t.Fatalf("no alternative optimum: %v %v %v", alt.Status, alt.Objective, err)
		}
		for _, o := range []Options{{Start: alt.X}, {Start: alt.X, MaxNodes: 1, Presolve: "off"}} {
			r, err := m.Solve(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, m, r)
			if fmt.Sprint(r.X) != fmt.Sprint(alt.X) {
				t.Fatalf("options %+v: got %v, want the start %v", o, r.X, alt.X)
			}
		}
	})

	t.Run("start survives a tiny time limit", func(t *testing.T) {
		m := multiKnapsack(2000, 30, 1)
		root, err := m.Solve(context.Background(), Options{MaxNodes: 1, RelGap: 1e-9})
		if err != nil || !root.HasSolution {
			t.Fatalf("root solve: %v %v", root.Status, err)
		}
		if root.Status != SolutionLimit {
			t.Fatalf("status %v after 1 node, want limit", root.Status)
		}
		limit := 5 * time.Millisecond
		cold, _ := m.Solve(context.Background(), Options{TimeLimit: limit, RelGap: 1e-9})
		warm, err := m.Solve(context.Background(), Options{TimeLimit: limit, RelGap: 1e-9, Start: root.X})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v without start: %v %v; with start: %v %v (start %v)", limit, cold.HasSolution, cold.Objective, warm.HasSolution, warm.Objective, root.Objective)
		if !warm.HasSolution || warm.Objective > root.Objective+tol {
			t.Fatalf("with start: %v %v, want an incumbent at least as good as %v", warm.HasSolution, warm.Objective, root.Objective)
		}
		checkInvariants(t, m, warm)
	})

	t.Run("infeasible start is ignored", func(t *testing.T) {
		m := knapsack(true)
		r, err := m.Solve(context.Background(), Options{Start: []float64{1, 1, 1, 1}})
		if err != nil || r.Status != Optimal || math.Abs(r.Objective-20) > tol {
			t.Fatalf("got %v %v (%v), want optimal 20", r.Status, r.Objective, err)
		}
		checkInvariants(t, m, r)
	})
}

func TestCutoff(t *testing.T) {
	cases := []struct {
		maximize bool
		cutoff   float64
		status   Status
		bound    float64
	}{
		{false, -15, Optimal, -20}, // min −profit: −20 is better than −15
		{false, -25, Infeasible, -25},
		{true, 15, Optimal, 20},
		{true, 25, Infeasible, 25}, // nothing reaches 25: the optimum is at most 25
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("maximize=%v,cutoff=%v", c.maximize, c.cutoff), func(t *testing.T) {
			m := knapsack(c.maximize)
			r, err := m.Solve(context.Background(), Options{Cutoff: c.cutoff, HasCutoff: true})
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, m, r)
			if r.Status != c.status || math.Abs(r.DualBound-c.bound) > tol {
				t.Fatalf("got %v bound %v, want %v bound %v", r.Status, r.DualBound, c.status, c.bound)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	m := multiKnapsack(2000, 30, 2)
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		begin := time.Now()
		r, err := m.Solve(ctx, Options{RelGap: 1e-9, TimeLimit: 30 * time.Second})
		wall := time.Since(begin)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("cancelled after 200 ms: %v in %v, objective %v bound %v", r.Status, wall, r.Objective, r.DualBound)
		if r.Status != Interrupted {
			t.Fatalf("status %v, want interrupted", r.Status)
		}
		if wall > 15*time.Second {
			t.Fatalf("cancellation took %v", wall)
		}
		checkInvariants(t, m, r)
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		r, err := m.Solve(ctx, Options{RelGap: 1e-9, TimeLimit: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != TimeLimit || r.Elapsed > 15*time.Second {
			t.Fatalf("status %v after %v, want time-limit", r.Status, r.Elapsed)
		}
		checkInvariants(t, m, r)
	})
	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r, err := m.Solve(ctx, Options{})
		if err != nil || r.Status != Interrupted || r.HasSolution || !math.IsInf(r.DualBound, -1) {
			t.Fatalf("got %+v (%v), want interrupted with nothing known", r, err)
		}
	})
}

func TestConcurrentSolves(t *testing.T) {
	SetThreads(1)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 4 {
				seed := uint64(100*g + k)
				m, want := randomKnapsack(40, seed)
				opt := Options{RelGap: 1e-9, Seed: g}
				if k == 3 {
					// One cancelled hard solve per goroutine, beside the others.
					ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
					r, err := multiKnapsack(500, 10, seed).Solve(ctx, opt)
					cancel()
					if err != nil || (r.Status != TimeLimit && r.Status != Optimal) {
						errs <- fmt.Errorf("seed %d: hard solve %v %v", seed, r.Status, err)
					}
					continue
				}
				r, err := m.Solve(context.Background(), opt)
				switch {
				case err != nil:
					errs <- fmt.Errorf("seed %d: %v", seed, err)
				case r.Status != Optimal || math.Abs(r.Objective-want) > tol:
					errs <- fmt.Errorf("seed %d: %v %v, want optimal %v", seed, r.Status, r.Objective, want)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSetThreads(t *testing.T) {
	n := SetThreads(2)
	if n < 1 || SetThreads(n+1) != n {
		t.Fatalf("SetThreads(2) = %d, then SetThreads(%d) = %d: the first value must stick", n, n+1, SetThreads(n+1))
	}
	// Solves keep working with the fixed value.
	m, want := randomKnapsack(30, 5)
	r, err := m.Solve(context.Background(), Options{})
	if err != nil || math.Abs(r.Objective-want) > tol {
		t.Fatalf("got %v (%v), want %v", r.Objective, err, want)
	}
}

func TestOptionsApplied(t *testing.T) {
	m, want := randomKnapsack(60, 3)
	for _, o := range []Options{
		{Presolve: "off"},
		{Presolve: "on", PresolveRuleOff: 4096},
		{PresolveRuleOff: -1},
		{RelGap: 1e-9, AbsGap: 1e-9, Seed: 42},
	} {
		r, err := m.Solve(context.Background(), o)
		if err != nil || r.Status != Optimal || math.Abs(r.Objective-want) > tol {
			t.Fatalf("options %+v: %v %v (%v), want optimal %v", o, r.Status, r.Objective, err, want)
		}
		checkInvariants(t, m, r)
	}
	// A generous gap stops early but is reported honestly.
	big := multiKnapsack(2000, 30, 1)
	r, err := big.Solve(context.Background(), Options{RelGap: 0.05, TimeLimit: 20 * time.Second})
	if err != nil || r.Status != Optimal {
		t.Fatalf("gap 5%%: %v (%v)", r.Status, err)
	}
	checkInvariants(t, big, r)
	if r.Gap > 0.05+tol || r.DualBound > r.Objective {
		t.Fatalf("gap %v bound %v objective %v", r.Gap, r.DualBound, r.Objective)
	}
	t.Logf("stopped on gap: objective %v bound %v gap %.3g", r.Objective, r.DualBound, r.Gap)
}

func TestInvalid(t *testing.T) {
	good := func() *Model { return knapsack(true) }
	cases := map[string]struct {
		m   *Model
		opt Options
	}{
		"bad column index": {func() *Model { m := good(); m.RowCols[0][0] = 9; return m }(), Options{}},
		"short bounds":     {func() *Model { m := good(); m.ColHi = m.ColHi[:2]; return m }(), Options{}},
		"NaN coefficient":  {func() *Model { m := good(); m.RowVals[0][1] = math.NaN(); return m }(), Options{}},
		"infinite cost":    {func() *Model { m := good(); m.Obj[0] = math.Inf(1); return m }(), Options{}},
		"start length":     {good(), Options{Start: []float64{1}}},
		"presolve value":   {good(), Options{Presolve: "maybe"}},
		"negative gap":     {good(), Options{RelGap: -1}},
	}
	for name, c := range cases {
		r, err := c.m.Solve(context.Background(), c.opt)
		if err == nil || r == nil || r.Status != Error {
			t.Errorf("%s: got %v, %v; want an error", name, r, err)
		}
	}
}

func TestWriteMPS(t *testing.T) {
	m := knapsack(true)
	m.Names[3] = m.Names[2] // duplicate names must be made unique
	path := filepath.Join(t.TempDir(), "knapsack.mps")
	if err := m.WriteMPS(path); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"item_0", "item_2", "item_2_3", "MARKER"} {
		if !strings.Contains(string(text), want) {
			t.Fatalf("MPS lacks %q:\n%s", want, text)
		}
	}
	// HiGHS reads it back to the same optimum.
	raw := highs.NewRawModel()
	if err := raw.SetBoolOption("output_flag", false); err != nil {
		t.Fatal(err)
	}
	if err := raw.ReadModelFromFile(path); err != nil {
		t.Fatal(err)
	}
	sol, err := raw.Solve()
	if err != nil || sol.Status != highs.Optimal || math.Abs(sol.Objective-20) > tol {
		t.Fatalf("re-read model: %v %v (%v), want optimal 20", sol.Status, sol.Objective, err)
	}
	runtime.KeepAlive(raw) // sol uses raw's HiGHS object (deps-go.md §1d.2)
}

// TestLogGoesToStderr checks that Options.Log writes HiGHS's log to stderr and nothing to
// stdout (the CLI's stdout carries results), and that without Log nothing is written.
func TestLogGoesToStderr(t *testing.T) {
	capture := func(fd int, f func()) string {
		tmp, err := os.CreateTemp(t.TempDir(), "fd")
		if err != nil {
			t.Fatal(err)
		}
		defer tmp.Close()
		saved, err := syscall.Dup(fd)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Dup3(int(tmp.Fd()), fd, 0); err != nil {
			t.Fatal(err)
		}
		f()
		if err := syscall.Dup3(saved, fd, 0); err != nil {
			t.Fatal(err)
		}
		syscall.Close(saved)
		b, err := os.ReadFile(tmp.Name())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	solve := func(log bool) func() {
		return func() {
			if _, err := knapsack(true).Solve(context.Background(), Options{Log: log}); err != nil {
				t.Error(err)
			}
		}
	}
	var stdout string
	stderr := capture(2, func() { stdout = capture(1, solve(true)) })
	if !strings.Contains(stderr, "HiGHS") || stdout != "" {
		t.Fatalf("with Log: stderr %q, stdout %q; want the log on stderr only", stderr, stdout)
	}
	stderr = capture(2, func() { stdout = capture(1, solve(false)) })
	if stderr != "" || stdout != "" {
		t.Fatalf("without Log: stderr %q, stdout %q; want nothing", stderr, stdout)
	}
}

// TestHeaderConstants compares the hand-written constants and callback struct with HiGHS's
// headers (skipped when the headers cannot be found).
func TestHeaderConstants(t *testing.T) {
	api := readHeader(t, "interfaces/highs_c_api.h")
	found := map[string]int{}
	for _, mt := range regexp.MustCompile(`const HighsInt (kHighs\w+) = (-?\d+);`).FindAllSubmatch(api, -1) {
		v, err := strconv.Atoi(string(mt[2]))
		if err != nil {
			t.Fatal(err)
		}
		found[string(mt[1])] = v
	}
	for name, want := range headerConstants {
		if got, ok := found[name]; !ok || got != want {
			t.Errorf("%s: header has %d (found %v), shim uses %d", name, got, ok, want)
		}
	}
	cb := readHeader(t, "lp_data/HighsCallbackStruct.h")
	if !regexp.MustCompile(`\{\s*int user_interrupt;\s*double\* user_solution;\s*\} HighsCallbackDataIn;`).Match(cb) {
		t.Error("HighsCallbackDataIn is no longer {int user_interrupt; double* user_solution;}")
	}
	if !regexp.MustCompile(`typedef void \(\*HighsCCallbackType\)\(int, const char\*,\s*const HighsCallbackDataOut\*,\s*HighsCallbackDataIn\*, void\*\);`).Match(cb) {
		t.Error("HighsCCallbackType changed")
	}
}

// readHeader reads a HiGHS header from pkg-config's include directory or the project's cache.
func readHeader(t *testing.T, rel string) []byte {
	t.Helper()
	var dirs []string
	if out, err := exec.Command("pkg-config", "--variable=includedir", "highs").Output(); err == nil {
		dirs = append(dirs, filepath.Join(strings.TrimSpace(string(out)), "highs"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".cache/onnxpart/highs-1.10.0/include/highs"))
	}
	for _, dir := range dirs {
		if b, err := os.ReadFile(filepath.Join(dir, rel)); err == nil {
			return b
		}
	}
	t.Skipf("%s not found in %v", rel, dirs)
	return nil
}

func BenchmarkSolveKnapsack(b *testing.B) {
	m, want := randomKnapsack(50, 9)
	for b.Loop() {
		r, err := m.Solve(context.Background(), Options{RelGap: 1e-9})
		if err != nil || math.Abs(r.Objective-want) > tol {
			b.Fatalf("%v (%v), want %v", r.Objective, err, want)
		}
	}
}

// A malformed model or option is a defect of the caller, not of the user's input: its error
// is of kind internal (exit code 70), so that it is reported as a bug.
func TestMalformedModelIsInternal(t *testing.T) {
	for name, c := range map[string]struct {
		m   *Model
		opt Options
	}{
		"bounds":   {&Model{Obj: []float64{1}, ColLo: []float64{0}}, Options{}},
		"nan cost": {&Model{Obj: []float64{math.NaN()}, ColLo: []float64{0}, ColHi: []float64{1}}, Options{}},
		"presolve": {&Model{Obj: []float64{1}, ColLo: []float64{0}, ColHi: []float64{1}}, Options{Presolve: "maybe"}},
	} {
		_, err := c.m.Solve(context.Background(), c.opt)
		if err == nil || diag.KindOf(err) != diag.KindInternal {
			t.Errorf("%s: got %v (kind %v), want an internal error", name, err, diag.KindOf(err))
		}
	}
}
