package partition

import (
	"context"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/onnxpart/onnxpart/diag"
)

// deviceOrders lists the distinct orders of the device slots (multiset permutations), up to
// limit; nil when there are more.
func deviceOrders(counts []int, limit int) [][]int {
	var out [][]int
	K := 0
	for _, k := range counts {
		K += k
	}
	left := append([]int(nil), counts...)
	cur := make([]int, 0, K)
	var rec func() bool
	rec = func() bool {
		if len(cur) == K {
			out = append(out, append([]int(nil), cur...))
			return len(out) <= limit
		}
		for d := range left {
			if left[d] == 0 {
				continue
			}
			left[d]--
			cur = append(cur, d)
			ok := rec()
			cur = cur[:len(cur)-1]
			left[d]++
			if !ok {
				return false
			}
		}
		return true
	}
	if !rec() {
		return nil
	}
	return out
}

// mipBounds runs the MIP part of the bound hierarchy.
func (e *engine) mipBounds(ctx context.Context, st *solveState) {
	opts := st.opts
	limit := opts.MIPTimeLimit
	if limit <= 0 {
		limit = 60 * time.Second
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < limit {
		limit = time.Until(d)
	}
	c := e.c
	if c.n*c.stages() > 400000 {
		st.note(diag.NoteSkipped, "MIP bounds skipped: %d nodes × %d stages is too large", c.n, c.stages())
		return
	}
	anc, desc := c.reachWork()
	if opts.Bounds == BoundsFull && !c.hetero {
		b := e.boundBottleneck(ctx, st, limit/4)
		st.offerBound(b)
		if st.gapLocked() <= opts.Gap+1e-9 {
			return
		}
		sb := e.boundSuperblock(ctx, st, anc, desc, limit/4)
		st.offerBound(sb)
		if st.gapLocked() <= opts.Gap+1e-9 {
			return
		}
		g := e.boundGuess(ctx, st, anc, desc, limit/2, 1)
		st.offerBound(g)
		if st.gapLocked() <= opts.Gap+1e-9 {
			return
		}
	}
	b := e.boundExact(ctx, st, anc, desc, limit, e.workers)
	st.offerBound(b)
}

// exactSpec is the exact MIP over a device order.
func (c *core) exactSpec(devOrder []int, target, zLo, scale float64) mipSpec {
	K := len(devOrder)
	sp := mipSpec{name: BoundExact, K: K, dev: devOrder, span: make([]int, K), mult: make([]float64, K),
		objBlock: -1, heavy: -1, target: target, zLo: zLo, scale: scale}
	for b := range sp.span {
		sp.span[b] = 1
		sp.mult[b] = 1
	}
	return sp
}

// boundExact solves the exact MIP (seed 000 §3.1), for a heterogeneous pipeline once per
// device order, warm-started with the incumbent and with variables fixed by its value.
// par is the number of MIPs it may run at a time (boundExactProbes).
func (e *engine) boundExact(ctx context.Context, st *solveState, anc, desc []float64, limit time.Duration, par int) BoundInfo {
	c := e.c
	t0 := time.Now()
	U, stage, device, _, lb := st.snapshot()
	var orders [][]int
	if c.hetero {
		orders = deviceOrders(c.counts, 64)
		if orders == nil {
			st.note(diag.NoteSkipped, "exact MIP skipped: too many device orders")
			return BoundInfo{Method: BoundExact, Value: lb, Status: "skipped"}
		}
		// The incumbent's device order first.
		sort.SliceStable(orders, func(i, j int) bool { return slices.Equal(orders[i], device) && !slices.Equal(orders[j], device) })
	} else {
		orders = [][]int{device}
	}
	deadline := t0.Add(limit)
	bound := math.Inf(1)
	status := "optimal"
	gap := st.opts.BoundGap
	if gap <= 0 {
		gap = math.Max(st.opts.Gap, 0) // LowerBound runs with Gap −1 ("never stop early")
	}
	if !c.hetero && gap == 0 {
		return e.boundExactProbes(ctx, st, anc, desc, limit, par)
	}
	for i, devOrder := range orders {
		left := time.Until(deadline) / time.Duration(len(orders)-i)
		if left <= 0 || ctx.Err() != nil {
			bound = math.Min(bound, lb)
			status = "time-limit"
			break
		}
		// With a bound gap g, prove that no plan is below T = (1 − g)·U: fix variables for
		// value ≤ T and cut off at T (LB = T when nothing is found). Without one, warm-start
		// with the incumbent and prove it optimal.
		var start []int
		target := U * (1 - gap)
		if gap == 0 && slices.Equal(devOrder, device) {
			start = make([]int, c.n)
			for v := range start {
				start[v] = stage[v] + 1
			}
		}
		sp := c.exactSpec(devOrder, target, lb, U)
		out := c.solveMIP(ctx, sp, anc, desc, start, left, 0)
		if _, ok := e.takeExact(st, out, devOrder, U); !ok {
			return BoundInfo{Method: BoundExact, Value: lb, Status: "fault", Seconds: time.Since(t0).Seconds()}
		}
		bound = math.Min(bound, out.bound)
		if !out.proved() {
			status = out.status
		}
	}
	return BoundInfo{Method: BoundExact, Value: bound, Status: status, Seconds: time.Since(t0).Seconds()}
}

// boundBottleneck is the three-superblock MIP (seed 000 §3.2): minimise the cost of the
// middle superblock subject to its work being ≥ L (Eq. (14)). Its size does not depend on k.
func (e *engine) boundBottleneck(ctx context.Context, st *solveState, limit time.Duration) BoundInfo {
	c := e.c
	U, _, _, _, _ := st.snapshot()
	L := c.simpleBound()
	sp := mipSpec{name: BoundBottleneck, K: 3, dev: []int{0, 0, 0}, span: []int{1, 1, 1}, mult: []float64{0, 0, 0},
		objBlock: 1, heavy: 1, heavyL: L, target: math.Inf(1), zLo: 0, scale: U}
	out := c.solveMIP(ctx, sp, nil, nil, nil, limit, 0)
	return BoundInfo{Method: BoundBottleneck, Value: out.bound, Status: out.status, Seconds: out.seconds}
}

// boundGuess is bottleneck-guess (seed 000 §3.3): for each position j of a block with work
// ≥ L, a three-superblock MIP whose outer superblocks are charged their average cost; the
// bound is min_j LB_j. The k MIPs run `parallel` at a time, each with an equal share of the
// time left for the waves still to run (one MIP that times out used to take the whole
// limit, leaving the others none, so the minimum fell to the floor lb). As soon as one
// LB_j is at the floor, the minimum cannot rise above it and the others are cancelled.
func (e *engine) boundGuess(ctx context.Context, st *solveState, anc, desc []float64, limit time.Duration, parallel int) BoundInfo {
	c := e.c
	t0 := time.Now()
	U, stage, _, _, lb := st.snapshot()
	K := c.stages()
	L := c.simpleBound()
	// The incumbent's heavy block (work ≥ L) gives a warm start for its j.
	work := make([]float64, K)
	for v, s := range stage {
		work[s] += c.work[0][v]
	}
	heavyJ := -1
	for s := range work {
		if work[s] >= L*(1-1e-12) {
			heavyJ = s + 1
			break
		}
	}
	P := max(parallel, 1)
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]mipOutcome, K+1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	started := 0
	sem := make(chan struct{}, P)
	for j := 1; j <= K; j++ {
		wg.Add(1)
		go func(j int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			mu.Lock()
			waves := (K - started + P - 1) / P
			started++
			mu.Unlock()
			if gctx.Err() != nil {
				results[j] = mipOutcome{name: BoundBottleneckGuess, bound: lb, status: "cancelled"}
				return
			}
			sp := mipSpec{name: BoundBottleneckGuess, K: 3, dev: []int{0, 0, 0}, span: []int{j - 1, 1, K - j},
				mult: []float64{float64(j - 1), 1, float64(K - j)}, objBlock: -1, heavy: 1, heavyL: L,
				target: U, zLo: lb, scale: U}
			var start []int
			if j == heavyJ {
				start = make([]int, c.n)
				for v, s := range stage {
					switch {
					case s+1 < j:
						start[v] = 1
					case s+1 == j:
						start[v] = 2
					default:
						start[v] = 3
					}
				}
			}
			left := time.Until(t0.Add(limit)) / time.Duration(waves)
			results[j] = c.solveMIP(gctx, sp, anc, desc, start, left, 0)
			if results[j].bound <= lb {
				cancel()
			}
		}(j)
	}
	wg.Wait()
	bound := math.Inf(1)
	status := "optimal"
	for j := 1; j <= K; j++ {
		bound = math.Min(bound, results[j].bound)
		if !results[j].proved() {
			status = results[j].status
		}
		if results[j].fault != "" {
			st.note(diag.NoteFault, "bottleneck-guess j=%d: %s", j, results[j].fault)
		}
	}
	switch {
	case ctx.Err() != nil:
		status = "time-limit" // the caller stopped it; the bound is still valid
	case bound <= lb:
		// Some LB_j is no better than the bound already known: nothing to gain (the
		// others may have been cancelled).
		status = "no-gain"
	}
	return BoundInfo{Method: BoundBottleneckGuess, Value: bound, Status: status, Seconds: time.Since(t0).Seconds()}
}
