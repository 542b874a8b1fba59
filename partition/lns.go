package partition

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"
)

// Large-neighbourhood search with exact sub-MIPs ("window" polish).
//
// Free the nodes of a window of w consecutive stages a..a+w−1 and fix every other node in
// its stage. The stage costs outside the window do not change whatever the window's nodes
// do: a fixed stage S is charged for tensor t iff S holds some but not all of
// T_t = {producer} ∪ consumers (seed 000 Eq. (3), per-tensor form); which members of T_t
// S holds is fixed, and S cannot hold all of T_t unless it already did, because a freed node
// only ever lands in a window stage. Work and overflow of S are fixed too. So the
// neighbourhood is exactly the exact MIP of §3.1 (buildMIP, y-formulation, Eqs. (5)–(12))
// with the y variables of fixed nodes turned into constants, and the objective
// min max_{b in window} block[b]. Freed nodes stay between the stages of their fixed
// predecessors and successors (the DAG rows (8) with constants), so every plan of the
// neighbourhood has an acyclic quotient in stage order.
//
// A sub-solution is taken only when its window maximum is strictly below the incumbent's.
// Every window stage then costs less than the old window maximum and the other stages are
// unchanged, so the vector of stage costs sorted in decreasing order strictly decreases
// lexicographically and the bottleneck never increases: the search terminates. The
// sub-MIPs are warm-started with the incumbent (so they never return anything worse), and
// their effort is capped by branch-and-bound nodes, not by the clock, which keeps the
// polish deterministic for a seed (a context that ends stops it between sub-MIPs, and
// HiGHS is interrupted inside one).

// lnsOptions bound the polish.
type lnsOptions struct {
	minWindow, maxWindow int // window sizes tried, in stages
	maxFree              int // windows freeing more core nodes are skipped
	maxNodes             int // branch-and-bound nodes per sub-MIP (0: no cap)
	maxSolves            int // sub-MIPs in all
}

func defaultLNS() lnsOptions {
	return lnsOptions{minWindow: 2, maxWindow: 4, maxFree: 400, maxNodes: 300, maxSolves: 200}
}

// lnsMaxSize is the largest core-nodes × stages for which the polish runs (each sub-MIP is
// built over the whole plan; the MIP bounds use the same cap).
const lnsMaxSize = 400000

// polishIncumbent runs the window polish on the incumbent, then the refinement on what it
// gives, alternating while either improves, within one budget of sub-MIPs. It reports
// whether it ran to its end (false when ctx stopped it).
func (e *engine) polishIncumbent(ctx context.Context, st *solveState) bool {
	c := e.c
	if c.n*c.stages() > lnsMaxSize {
		return true
	}
	_, stage, device, _, _ := st.snapshot()
	anc, desc := c.reachWork()
	o := defaultLNS()
	var ks kahnScratch
	for o.maxSolves > 0 && ctx.Err() == nil {
		next, ok, used := e.lnsPolish(ctx, stage, device, o, anc, desc)
		o.maxSolves -= used
		if !ok {
			break
		}
		order := c.stageOrder(next, c.kahn(make([]float64, c.n), &ks, nil), &ks)
		st.offerPlan(next, device, order, "lns")
		s2, d2, o2, v2 := e.refine(ctx, e.workers, next, device, order)
		if !(v2 < newRefiner(c, next, device).objective()*(1-1e-12)) || !equalInts(d2, device) {
			break
		}
		st.offerPlan(s2, d2, o2, "lns+refine")
		stage = s2
	}
	return ctx.Err() == nil
}

// Polish runs Solve's window polish (Options.NoPolish) alone on plan, a valid plan of p,
// and returns the best plan (plan's bounds carried over, the gap recomputed) and whether the
// polish ran to its end. Its effort is capped by work, so a polish that ends is a function
// of its inputs; one that ctx stopped depends on the clock. Callers that need reproducible
// plans solve with NoPolish and keep Polish's plan only when it ended.
func Polish(ctx context.Context, p *Problem, plan *Plan, o Options) (*Plan, bool, error) {
	if err := p.Validate(); err != nil {
		return nil, false, err
	}
	if plan == nil {
		return nil, false, fmt.Errorf("partition: Polish needs a plan")
	}
	_, U, err := p.Evaluate(plan.Assignment, plan.StageDevice)
	if err != nil {
		return nil, false, err
	}
	t0 := time.Now()
	c := compile(p)
	stage := make([]int, c.n)
	for v, g := range c.group {
		stage[g] = plan.Assignment[v]
	}
	o.NoPolish = false
	st := &solveState{p: p, c: c, t0: t0, opts: o, best: U, stage: stage, device: append([]int(nil), plan.StageDevice...),
		source: plan.source(), lb: plan.LowerBound, lbMethod: plan.BoundMethod,
		bounds: append([]BoundInfo(nil), plan.Bounds...), notes: append([]string(nil), plan.Notes...), evals: plan.Evaluations}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	done := newEngine(c, workers).polishIncumbent(ctx, st)
	return st.plan(time.Duration(plan.Seconds*float64(time.Second)) + time.Since(t0)), done, nil
}

// lnsPolish improves (stage, device) with window sub-MIPs around the bottleneck: for window
// sizes w = minWindow..maxWindow, every window of w stages that contains a most expensive
// stage is solved; an improvement restarts from the smallest size. It stops when no window
// containing a most expensive stage improves, at the solve cap, or when ctx ends. It returns
// the (possibly unchanged) plan, whether it improved and the number of sub-MIPs solved.
func (e *engine) lnsPolish(ctx context.Context, stage, device []int, o lnsOptions, anc, desc []float64) ([]int, bool, int) {
	c := e.c
	K := len(device)
	if K < 2 || c.n < 2 {
		return stage, false, 0
	}
	stage = append([]int(nil), stage...)
	costs := func() []float64 {
		r := newRefiner(c, stage, device)
		return r.cost
	}
	improved := false
	solves := 0
	tried := map[[2]int]uint64{} // window → plan hash when it last failed
	hash := func() uint64 {
		h := uint64(1469598103934665603)
		for _, s := range stage {
			h ^= uint64(s)
			h *= 1099511628211
		}
		return h
	}
	for solves < o.maxSolves && ctx.Err() == nil {
		cost := costs()
		U := 0.0
		for _, x := range cost {
			U = math.Max(U, x)
		}
		if !(U > 0) || math.IsInf(U, 1) {
			return stage, improved, solves
		}
		found := false
		h := hash()
	sizes:
		for w := max(o.minWindow, 2); w <= min(o.maxWindow, K); w++ {
			for a := 0; a+w <= K; a++ {
				if solves >= o.maxSolves || ctx.Err() != nil {
					break sizes
				}
				hot := false
				wmax := 0.0
				free := 0
				for b := a; b < a+w; b++ {
					wmax = math.Max(wmax, cost[b])
					if cost[b] >= U*(1-1e-12) {
						hot = true
					}
				}
				if !hot {
					continue
				}
				for _, s := range stage {
					if s >= a && s < a+w {
						free++
					}
				}
				if free < 2 || free > o.maxFree {
					continue
				}
				if tried[[2]int{a, w}] == h {
					continue
				}
				solves++
				if next, ok := e.lnsWindow(ctx, stage, device, a, w, wmax, U, o, anc, desc); ok {
					stage = next
					improved, found = true, true
					break sizes
				}
				tried[[2]int{a, w}] = h
			}
		}
		if !found {
			break
		}
	}
	return stage, improved, solves
}

// lnsWindow solves the sub-MIP of stages a..a+w−1 and returns the new plan when its window
// maximum is below wmax. U is the plan's value (for the fixings of buildMIP).
func (e *engine) lnsWindow(ctx context.Context, stage, device []int, a, w int, wmax, U float64, o lnsOptions, anc, desc []float64) ([]int, bool) {
	c := e.c
	K := len(device)
	sp := c.exactSpec(device, U, 0, U)
	sp.name = "lns"
	sp.maxNodes = o.maxNodes
	sp.fixLo = make([]int, c.n)
	sp.fixHi = make([]int, c.n)
	for v, s := range stage {
		if s >= a && s < a+w {
			sp.fixLo[v], sp.fixHi[v] = a+1, a+w
		} else {
			sp.fixLo[v], sp.fixHi[v] = s+1, s+1
		}
	}
	for b := 0; b < K; b++ {
		if b < a || b >= a+w {
			sp.mult[b] = 0
		}
	}
	start := make([]int, c.n)
	for v, s := range stage {
		start[v] = s + 1
	}
	limit := time.Hour
	if d, ok := ctx.Deadline(); ok {
		limit = time.Until(d)
	}
	out := c.solveMIP(ctx, sp, anc, desc, start, limit, 1e-6)
	if out.plan == nil || out.fault != "" || !(out.value < wmax*(1-1e-9)) {
		return nil, false
	}
	next := make([]int, c.n)
	for v, b := range out.plan {
		next[v] = b - 1
	}
	// Judge the new plan by the true stage costs: its window part must beat wmax and the
	// rest must be unchanged (the argument above), or it is not taken.
	r := newRefiner(c, next, device)
	old := newRefiner(c, stage, device)
	for b := 0; b < K; b++ {
		if b >= a && b < a+w {
			if !(r.cost[b] < wmax*(1-1e-9)) {
				return nil, false
			}
		} else if math.Abs(r.cost[b]-old.cost[b]) > 1e-9*math.Max(1, old.cost[b]) {
			return nil, false
		}
	}
	if !c.validStages(next) {
		return nil, false
	}
	return next, true
}

// validStages reports whether every edge goes forward (or stays) in stage order.
func (c *core) validStages(stage []int) bool {
	for v := 0; v < c.n; v++ {
		for _, w := range c.succOf(v) {
			if stage[w] < stage[v] {
				return false
			}
		}
	}
	return true
}

// source is the phase that found the plan, read back from Algorithm ("… (best from X)").
func (pl *Plan) source() string {
	if i := strings.LastIndex(pl.Algorithm, "(best from "); i >= 0 {
		return strings.TrimSuffix(pl.Algorithm[i+len("(best from "):], ")")
	}
	return "incumbent"
}
