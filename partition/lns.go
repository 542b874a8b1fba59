package partition

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/onnxpart/onnxpart/diag"
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
//
// Two devices only save time and change no plan. (1) A window whose sub-MIP failed is not
// solved again while its sub-MIP would be the same (lnsCache: the key is the window, U and
// the stage of every node inside it; outside the window only "fixed elsewhere" enters the
// model, see buildMIP's cconst). A skipped window would have failed again (deterministic
// sub-MIPs), so the sequence of accepted steps is the one without the cache, and the
// termination argument is untouched. (2) With several workers, the windows after the one
// being solved are solved speculatively alongside it (lnsFirst); outcomes are read in the
// sequential order and everything after the first improvement is thrown away, so the plan
// and the count of sub-MIPs (the solve cap) do not depend on the number of workers.

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

// PolishOptions set the window polish's effort; a zero field keeps its default. Wider
// windows and more nodes per sub-MIP find better plans at a cost in time that grows fast:
// the whole exact MIP is the window of all k stages.
type PolishOptions struct {
	MaxWindow int // widest window, in consecutive stages (default 4)
	MaxNodes  int // branch-and-bound nodes per sub-MIP (default 300)
	MaxSolves int // sub-MIPs in all (default 200)
}

// Validate reports a setting no polish can run with: a window under 2 stages (0 keeps the
// default) or a negative cap. Solve and Polish refuse such options.
func (o PolishOptions) Validate() error {
	switch {
	case o.MaxWindow < 0 || o.MaxWindow == 1:
		return fmt.Errorf("PolishOptions.MaxWindow %d: a window spans at least 2 stages", o.MaxWindow)
	case o.MaxNodes < 0 || o.MaxSolves < 0:
		return fmt.Errorf("PolishOptions caps %d nodes, %d sub-MIPs: must not be negative", o.MaxNodes, o.MaxSolves)
	}
	return nil
}

// lns is the polish's bounds with o's fields in place of the defaults.
func (o PolishOptions) lns() lnsOptions {
	l := defaultLNS()
	if o.MaxWindow > 0 {
		l.maxWindow = max(o.MaxWindow, l.minWindow)
	}
	if o.MaxNodes > 0 {
		l.maxNodes = o.MaxNodes
	}
	if o.MaxSolves > 0 {
		l.maxSolves = o.MaxSolves
	}
	return l
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
	o := st.opts.Polish.lns()
	var ks kahnScratch
	tried := lnsCache{}
	for o.maxSolves > 0 && ctx.Err() == nil {
		next, ok, used := e.lnsPolishCached(ctx, stage, device, o, anc, desc, tried)
		o.maxSolves -= used
		if !ok {
			break
		}
		order := c.stageOrder(next, c.kahn(make([]float64, c.n), &ks, nil), &ks)
		st.offerPlan(next, device, order, "lns")
		s2, d2, o2, v2 := e.refine(ctx, e.workers, next, device, order)
		if !(v2 < newRefiner(c, next, device).objective()*(1-1e-12)) || !slices.Equal(d2, device) {
			break
		}
		st.offerPlan(s2, d2, o2, "lns+refine")
		stage = s2
	}
	return ctx.Err() == nil
}

// Polish runs Solve's window polish (Options.NoPolish; its effort Options.Polish) alone on
// plan, a valid plan of p, and returns the best plan (plan's bounds carried over, the gap
// recomputed) and whether the polish ran to its end. Its effort is capped by work, so a
// polish that ends is a function of its inputs; one that ctx stopped depends on the clock.
// Callers that need reproducible plans solve with NoPolish and keep Polish's plan only when
// it ended.
func Polish(ctx context.Context, p *Problem, plan *Plan, o Options) (*Plan, bool, error) {
	if err := p.Validate(); err != nil {
		return nil, false, err
	}
	if plan == nil {
		return nil, false, fmt.Errorf("partition: Polish needs a plan")
	}
	if err := o.Polish.Validate(); err != nil {
		return nil, false, fmt.Errorf("partition: %w", err)
	}
	_, U, err := p.Evaluate(plan.Assignment, plan.StageDevice)
	if err != nil {
		return nil, false, err
	}
	t0 := time.Now()
	c := compile(p)
	stage := c.contract(plan.Assignment)
	o.NoPolish = false
	st := &solveState{p: p, c: c, t0: t0, opts: o, best: U, stage: stage, device: append([]int(nil), plan.StageDevice...),
		source: plan.source(), lb: plan.LowerBound, lbMethod: plan.BoundMethod,
		bounds: append([]BoundInfo(nil), plan.Bounds...), notes: append([]diag.Note(nil), plan.Notes...), evals: plan.Evaluations}
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
	return e.lnsPolishCached(ctx, stage, device, o, anc, desc, lnsCache{})
}

// lnsCache holds the windows whose sub-MIP failed, keyed by windowKey. A window's sub-MIP
// is a function of the window (a, w), the plan's value U (the model's scale and its
// variable fixings) and which nodes lie in which window stage: every other node is fixed
// outside the window, and where exactly does not enter the model (a fixed stage outside
// the window holds none of the window's nodes; buildMIP leaves out the constant cut and
// overflow terms of the blocks outside the window). The warm start and the acceptance
// threshold wmax are functions of the same data. So a window with a key in the cache would
// be solved to the same failure: it is skipped.
type lnsCache map[[2]uint64]struct{}

// windowKey hashes (a, w, U) and the stage of every node in stages a..a+w−1 (two
// independent 64-bit hashes, so a collision that skips an improving window is beyond
// reach).
func windowKey(stage []int, a, w int, U float64) [2]uint64 {
	h1, h2 := uint64(1469598103934665603), uint64(0x9e3779b97f4a7c15)
	mix := func(x uint64) {
		h1 ^= x
		h1 *= 1099511628211
		h2 += x
		h2 ^= h2 >> 29
		h2 *= 0xbf58476d1ce4e5b9
		h2 ^= h2 >> 32
	}
	mix(uint64(a))
	mix(uint64(w))
	mix(math.Float64bits(U))
	for v, s := range stage {
		if s >= a && s < a+w {
			mix(uint64(v)<<8 | uint64(s-a))
		}
	}
	return [2]uint64{h1, h2}
}

// lnsPolishCached is lnsPolish with a cache of failed windows that the caller may keep
// across calls.
func (e *engine) lnsPolishCached(ctx context.Context, stage, device []int, o lnsOptions, anc, desc []float64, tried lnsCache) ([]int, bool, int) {
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
	for solves < o.maxSolves && ctx.Err() == nil {
		cost := costs()
		U := 0.0
		for _, x := range cost {
			U = math.Max(U, x)
		}
		if !(U > 0) || math.IsInf(U, 1) {
			return stage, improved, solves
		}
		// The windows of this round, in the order they are tried: smallest size first, then
		// left to right; only hot ones (containing a most expensive stage), not in the cache.
		var cands []lnsCand
		for w := max(o.minWindow, 2); w <= min(o.maxWindow, K); w++ {
			for a := 0; a+w <= K; a++ {
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
				key := windowKey(stage, a, w, U)
				if _, ok := tried[key]; ok {
					continue
				}
				cands = append(cands, lnsCand{a: a, w: w, wmax: wmax, key: key})
			}
		}
		if len(cands) > o.maxSolves-solves {
			cands = cands[:o.maxSolves-solves]
		}
		next, i, n := e.lnsFirst(ctx, stage, device, cands, U, o, anc, desc)
		solves += n
		for j := 0; j < n; j++ {
			if j != i && tried != nil { // nil: no cache (tests)
				tried[cands[j].key] = struct{}{}
			}
		}
		if i < 0 {
			break
		}
		stage = next
		improved = true
	}
	return stage, improved, solves
}

// lnsCand is a window to solve: stages a..a+w−1, their largest cost and the cache key.
type lnsCand struct {
	a, w int
	wmax float64
	key  [2]uint64
}

// lnsFirst solves the sub-MIPs of cands in order until one improves the plan, and returns
// its plan, its index (−1 if none) and how many sub-MIPs were consumed (all of them, or
// up to and including the improving one). With several workers, the next windows are solved
// speculatively alongside: their outcomes are read strictly in order and those after the
// first improvement are discarded (and their solves interrupted), so the result is that of
// the sequential loop whatever the number of workers, and so is the count (sub-MIPs are
// deterministic: their effort is capped by nodes).
func (e *engine) lnsFirst(ctx context.Context, stage, device []int, cands []lnsCand, U float64, o lnsOptions, anc, desc []float64) ([]int, int, int) {
	type result struct {
		next []int
		ok   bool
	}
	P := max(1, e.workers)
	if P == 1 || len(cands) < 2 {
		for i, cd := range cands {
			if ctx.Err() != nil {
				return nil, -1, i
			}
			if next, ok := e.lnsWindow(ctx, stage, device, cd.a, cd.w, cd.wmax, U, o, anc, desc); ok {
				return next, i, i + 1
			}
		}
		return nil, -1, len(cands)
	}
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel (deferred calls run last first)
	defer cancel()
	results := make([]chan result, len(cands))
	for i := range results {
		results[i] = make(chan result, 1)
	}
	sem := make(chan struct{}, P)
	wg.Add(1)
	go func() { // launcher: at most P sub-MIPs in flight, in order
		defer wg.Done()
		for i, cd := range cands {
			select {
			case sem <- struct{}{}:
			case <-sctx.Done():
				return
			}
			wg.Add(1)
			go func(i int, cd lnsCand) {
				defer wg.Done()
				defer func() { <-sem }()
				next, ok := e.lnsWindow(sctx, stage, device, cd.a, cd.w, cd.wmax, U, o, anc, desc)
				results[i] <- result{next, ok}
			}(i, cd)
		}
	}()
	for i := range cands {
		if ctx.Err() != nil {
			return nil, -1, i
		}
		r := <-results[i]
		if ctx.Err() != nil { // the outcome may be the clock's
			return nil, -1, i
		}
		if r.ok {
			cancel() // the windows after i are not needed
			return r.next, i, i + 1
		}
	}
	return nil, -1, len(cands)
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
