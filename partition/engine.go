package partition

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"time"

	"github.com/onnxpart/onnxpart/diag"
)

// engine owns the per-worker scratch of the slicing DP.
type engine struct {
	c       *core
	a       *automaton
	slicers []*slicer
	kahns   []kahnScratch
	orders  [][]int32
	workers int
	lower   float64 // start of the bound deepening
	// maxIdeals caps the ideals enumerated by one pair re-split.
	maxIdeals int
}

func newEngine(c *core, workers int) *engine {
	a := countAutomaton(c.counts)
	if a == nil {
		// Too many device kinds for the count lattice: fix the device order (stages of each
		// device kept together, in the order given).
		var order []int
		for d, k := range c.counts {
			for i := 0; i < k; i++ {
				order = append(order, d)
			}
		}
		a = chainAutomaton(order)
	}
	e := &engine{c: c, a: a, workers: workers, lower: c.simpleBound(), maxIdeals: 20000}
	// One slicer per worker plus one for the search goroutine's own reconstructions.
	for i := 0; i <= workers; i++ {
		e.slicers = append(e.slicers, newSlicer(c, a))
		e.kahns = append(e.kahns, kahnScratch{})
		e.orders = append(e.orders, make([]int32, 0, c.n))
	}
	return e
}

// slice returns the optimal slicing value of order below bound (+Inf if none); with an
// infinite bound it deepens a finite one from the simple lower bound, which keeps the
// pruned sweep fast while staying exact.
func (e *engine) slice(w int, order []int32, bound float64) float64 {
	s := e.slicers[w]
	if !math.IsInf(bound, 1) {
		return s.run(order, bound)
	}
	b := e.lower * 1.05
	if b <= 0 {
		b = 1e-300
	}
	for i := 0; i < 64; i++ {
		if v := s.run(order, b); !math.IsInf(v, 1) {
			return v
		}
		b *= 1.6
		if b > 1e300 {
			break
		}
	}
	return s.run(order, math.Inf(1))
}

// sliceFull slices order with worker w's slicer and reconstructs the plan.
func (e *engine) sliceFull(w int, order []int32) (stage, device []int, val float64) {
	val = e.slice(w, order, math.Inf(1))
	if math.IsInf(val, 1) {
		return nil, nil, val
	}
	stage, device = e.slicers[w].segments(order)
	return stage, device, val
}

// refine improves (stage, device) by node moves and re-slicing the induced order, until
// neither helps. It returns the refined plan, an order whose slicing gives it, and its value
// as computed by the refiner.
func (e *engine) refine(ctx context.Context, w int, stage, device []int, order []int32) ([]int, []int, []int32, float64) {
	c := e.c
	var ks kahnScratch
	rs := newResplitter(c, e.maxIdeals)
	val := math.Inf(1)
	for iter := 0; iter < 50 && ctx.Err() == nil; iter++ {
		r := newRefiner(c, stage, device)
		moved := r.run(ctx, 20*c.n+100) > 0
		cur := r.stage
		// Exact re-splits of adjacent stage pairs (several nodes crossing at once).
		split := false
		for a := 0; a+1 < len(device) && ctx.Err() == nil; a++ {
			if rs.pair(cur, device, a) {
				split = true
			} else if c.n <= 5000 && rs.flowPair(cur, device, a, order) {
				split = true
			}
		}
		val = newRefiner(c, cur, device).objective()
		next := c.stageOrder(cur, order, &ks)
		// Re-slice the order induced by the refined plan; accept only strict improvement.
		if v := e.slicers[w].run(next, val*(1-1e-12)); !math.IsInf(v, 1) {
			stage, device = e.slicers[w].segments(next)
			order = next
			val = v
			continue
		}
		stage = cur
		order = next
		if !moved && !split {
			break
		}
	}
	return stage, device, order, val
}

// improveDeviceOrder is the heuristic device-order search used when the count lattice is too
// large (many device kinds): adjacent transpositions of the stage devices, each judged by
// slicing the incumbent's order over the new chain, until none improves. The engine then
// searches node orders over the best chain.
func (e *engine) improveDeviceOrder(ctx context.Context, st *solveState) {
	c := e.c
	best, stage, _, order, _ := st.snapshot()
	var ks kahnScratch
	if len(order) != c.n {
		order = c.stageOrder(stage, c.kahn(make([]float64, c.n), &ks, nil), &ks)
	}
	cur := append([]int(nil), e.a.order...)
	changed := true
	for changed && ctx.Err() == nil {
		changed = false
		for i := 0; i+1 < len(cur); i++ {
			if cur[i] == cur[i+1] {
				continue
			}
			cand := append([]int(nil), cur...)
			cand[i], cand[i+1] = cand[i+1], cand[i]
			s := newSlicer(c, chainAutomaton(cand))
			if v := s.run(order, best*(1-1e-12)); !math.IsInf(v, 1) {
				cs, dev := s.segments(order)
				st.offerPlan(cs, dev, order, "device-order")
				best, cur, changed = v, cand, true
			}
		}
	}
	if !slices.Equal(cur, e.a.order) {
		e.a = chainAutomaton(cur)
		for i := range e.slicers {
			e.slicers[i] = newSlicer(c, e.a)
		}
	}
}

// exactIdeals runs the ideal DP with the incumbent as bound; when it completes, the
// incumbent (or the DP's better plan) is optimal. It has a clock budget (30% of the time
// left, 5 s without a time limit); a DP cut by it proves nothing, and the plan says so in a
// note (a DP cut by its size caps is the normal outcome on wide graphs and is not noted).
func (e *engine) exactIdeals(ctx context.Context, st *solveState) bool {
	c := e.c
	if c.n > 2000 {
		return false
	}
	budget := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		budget = time.Until(d) * 3 / 10
	}
	dctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	t0 := time.Now()
	U, _, _, _, _ := st.snapshot()
	val, stage, dev, ok := c.idealDP(dctx, e.a, U, 100000, 2000000)
	if !ok {
		// A cancelled parent (gap reached, caller gave up) needs no note; a deadline does.
		if errors.Is(dctx.Err(), context.DeadlineExceeded) && !errors.Is(ctx.Err(), context.Canceled) {
			st.note(diag.NoteCapped, "%s: stopped by its time budget after %.2f s (budget %.2f s) before completing; it proves nothing, the other bounds apply", BoundIdealDP, time.Since(t0).Seconds(), budget.Seconds())
		}
		return false
	}
	if !math.IsInf(val, 1) {
		st.offerPlan(stage, dev, nil, BoundIdealDP)
	} else {
		val = U
	}
	if st.opts.Bounds != BoundsNone {
		st.offerBound(BoundInfo{Method: BoundIdealDP, Value: val, Status: "optimal", Seconds: time.Since(t0).Seconds()})
	}
	return true
}

// noPlan says that no plan was found within the limits, while nothing proved that none exists
// (compare infeasible, which is a proof): a *diag.Error of kind no-plan naming what was tried
// (also one note each).
func noPlan(tried []string) *diag.Error {
	e := diag.NoPlan("partition: no plan found within the limits (infeasibility not proved); tried %s", strings.Join(tried, "; "))
	for _, t := range tried {
		e.Note("tried %s", t)
	}
	return e
}

// findFirstPlan runs when no start order slices into a plan that fits the memory caps. It
// returns an infeasible error only with a proof, a no-plan error when the search found nothing
// and proved nothing, and nil once st holds a plan. The proofs:
//   - a contracted node (a colocation group) whose parameters exceed the largest cap of every
//     usable device fits no stage;
//   - the parameters of all nodes exceed Σ_d count_d · cap_d: every node lies in one stage;
//   - the exact DP over ideals with no bound (U = +Inf) enumerates every plan of the model,
//     so when it completes without a plan there is none.
func (e *engine) findFirstPlan(ctx context.Context, st *solveState, rng *rand.Rand) error {
	c := e.c
	if reason := c.memoryInfeasible(st.p); reason != "" {
		return infeasible("%s", reason)
	}
	tried := []string{fmt.Sprintf("%d start orders", len(c.startOrders()))}
	budget := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		budget = time.Until(d) / 2
	}
	dctx, cancel := context.WithTimeout(ctx, budget)
	val, stage, dev, ok := c.idealDP(dctx, e.a, math.Inf(1), 100000, 2000000)
	cancel()
	switch {
	case ok && math.IsInf(val, 1):
		return infeasible("no plan satisfies the memory caps (proved by the exact DP over every chain of ideals)")
	case ok:
		st.offerPlan(stage, dev, nil, BoundIdealDP)
		return nil
	case ctx.Err() != nil:
		tried = append(tried, "the exact DP over ideals (stopped by the time limit)")
	default:
		tried = append(tried, "the exact DP over ideals (too many ideals)")
	}
	sctx, scancel := context.WithTimeout(ctx, budget)
	e.search(sctx, st, rng, e.workers, st.opts.BRKGA)
	scancel()
	if best, _, _, _, _ := st.snapshot(); !math.IsInf(best, 1) {
		return nil
	}
	tried = append(tried, "the order search")
	return noPlan(tried)
}

// memoryInfeasible returns why no plan can meet the memory caps by a counting argument, or "".
func (c *core) memoryInfeasible(p *Problem) string {
	maxCap, total := 0.0, 0.0
	for d, k := range c.counts {
		if k > 0 {
			maxCap = math.Max(maxCap, c.memCap[d])
			total += float64(k) * c.memCap[d]
		}
	}
	sum := 0.0
	for v := 0; v < c.n; v++ {
		sum += c.params[v]
		if c.params[v] > maxCap*(1+1e-12) {
			names := make([]string, 0, len(c.members[v]))
			for _, m := range c.members[v] {
				names = append(names, p.label(m))
			}
			what := "node " + names[0]
			if len(names) > 1 {
				what = "the nodes that must share a stage (" + strings.Join(names, ", ") + ")"
			}
			return fmt.Sprintf("%s hold %.6g parameter bytes, above the largest memory cap %.6g", what, c.params[v], maxCap)
		}
	}
	if sum > total*(1+1e-12) {
		return fmt.Sprintf("the nodes hold %.6g parameter bytes, above the %.6g that all stages together may hold", sum, total)
	}
	return ""
}

// refineIncumbent refines the current best plan and offers the result.
func (e *engine) refineIncumbent(ctx context.Context, st *solveState, phase string) {
	_, stage, device, order, _ := st.snapshot()
	if len(order) != e.c.n {
		var ks kahnScratch
		order = e.c.stageOrder(stage, e.c.kahn(make([]float64, e.c.n), &ks, nil), &ks)
	}
	s2, d2, o2, _ := e.refine(ctx, e.workers, stage, device, order)
	st.offerPlan(s2, d2, o2, phase)
}

// search runs the order search chosen in the options.
func (e *engine) search(ctx context.Context, st *solveState, rng *rand.Rand, workers int, bo BRKGAOptions) {
	opts := st.opts
	bo = bo.withDefaults()
	n := e.c.n
	var seeds [][]float64
	for _, h := range e.c.startOrders() {
		seeds = append(seeds, priorityOf(h.order))
	}
	if _, _, _, order, _ := st.snapshot(); len(order) == n {
		seeds = append([][]float64{priorityOf(order)}, seeds...)
	}
	stop := func() bool { return st.gapLocked() <= opts.Gap+1e-9 }
	best, _, _, _, _ := st.snapshot()
	sliceDec := &decoder{workers: workers, fitness: func(w int, keys []float64, bound float64) float64 {
		order := e.c.kahn(keys, &e.kahns[w], e.orders[w][:0])
		if math.IsInf(bound, 1) {
			// First generation: anything beyond 1.5× the incumbent cannot matter.
			if v := e.slicers[w].run(order, 1.5*best); !math.IsInf(v, 1) {
				return v
			}
			return math.Inf(1)
		}
		return e.slicers[w].run(order, bound)
	}}
	own := e.workers // the search goroutine's own slicer
	onBest := func(keys []float64, value float64) ([]float64, float64) {
		order := e.c.kahn(keys, &e.kahns[own], make([]int32, 0, n))
		stage, dev, val := e.sliceFull(own, order)
		if math.IsInf(val, 1) {
			return nil, 0
		}
		st.offerPlan(stage, dev, order, "brkga")
		if opts.NoRefine {
			return nil, 0
		}
		s2, d2, o2, v2 := e.refine(ctx, own, stage, dev, order)
		if v2 < val*(1-1e-12) {
			st.offerPlan(s2, d2, o2, "brkga+refine")
			return priorityOf(o2), e.slicers[own].run(o2, math.Inf(1))
		}
		return nil, 0
	}
	count := func(r brkgaResult) {
		st.mu.Lock()
		st.evals += int64(r.evals)
		st.mu.Unlock()
	}
	switch opts.Search {
	case SearchRandom:
		// random-T: T i.i.d. priority vectors, decoded in batches with the incumbent as bound.
		T := bo.Population * bo.Generations
		batch := 4 * e.workers
		keys := make([][]float64, batch)
		fit := make([]float64, batch)
		idx := make([]int, batch)
		for i := range idx {
			idx[i] = i
		}
		for done := 0; done < T && ctx.Err() == nil && !stop(); done += batch {
			m := batch
			if T-done < m {
				m = T - done
			}
			for i := 0; i < m; i++ {
				keys[i] = randomKeys(rng, n)
			}
			b, _, _, _, _ := st.snapshot()
			dec := &decoder{workers: workers, fitness: func(w int, k []float64, _ float64) float64 {
				order := e.c.kahn(k, &e.kahns[w], e.orders[w][:0])
				return e.slicers[w].run(order, b*(1-1e-12))
			}}
			dec.evalAll(ctx, keys, idx[:m], fit, b)
			st.mu.Lock()
			st.evals += int64(m)
			st.mu.Unlock()
			for i := 0; i < m; i++ {
				if fit[i] < b {
					onBest(keys[i], fit[i])
					b, _, _, _, _ = st.snapshot()
				}
			}
		}
	case SearchMLA, SearchMLAWeighted:
		weighted := opts.Search == SearchMLAWeighted
		pos := make([][]int32, e.workers)
		for i := range pos {
			pos[i] = make([]int32, n)
		}
		mla := &decoder{workers: workers, fitness: func(w int, keys []float64, _ float64) float64 {
			order := e.c.kahn(keys, &e.kahns[w], e.orders[w][:0])
			return e.c.mlaCost(order, pos[w], weighted)
		}}
		r := brkga(ctx, n, bo, rng, mla, seeds, nil, stop)
		count(r)
		if r.keys != nil {
			onBest(r.keys, 0)
		}
	default:
		r := brkga(ctx, n, bo, rng, sliceDec, seeds, onBest, stop)
		count(r)
	}
}
