package partition

import (
	"context"
	"math"
	"time"

	"github.com/onnxpart/onnxpart/diag"
)

// boundExactProbes is the exact MIP bound of a homogeneous pipeline when no bound gap is
// asked for: first the exact MIP warm-started with the incumbent (value U) for a third of
// the time, which proves easy instances optimal and often finds better plans; then, when it
// has not, probes at rising targets T between the best bound lo and the best plan.
//
// A probe at T is the exact MIP (seed 000 §3.1, Eqs. (5)–(12)) with the variables fixed by T
// instead of U (windows: a node whose ancestors or descendants carry more work than the stages
// around it can hold at T cannot sit there) and cut off at T (HiGHS's objective_bound). Every
// plan of value ≤ T survives the fixings and the cut-off, so
//   - "infeasible" proves that no plan is below T: lo = T, and the next probe goes higher;
//   - a plan of value ≤ T is a new incumbent and, with status optimal, the optimum (a plan
//     above T may also come back, from outside the fixings: it proves only lo = T);
//   - a time-out still proves min(dual bound, T).
//
// The fixings at T < U are much tighter than at U, and a probe needs no incumbent. Most of a
// probe's time is HiGHS's root (cuts, restarts; it then closes in a few nodes), and it grows
// as T nears the optimum: on a 72-node REGAL-like graph at k = 8 (best plan 3351.6) probes at
// 3000, 3078 and 3150 prove infeasible in 14.5, 20.8 and 30 s, while the warm-started MIP's
// dual bound is at 2943 after 60 s. So the targets rise from lo by a fraction f of hi − lo
// (0.3 at first), doubled (up to 0.6) after a probe that took under a quarter of the time
// left and halved otherwise; each probe may use all the time left, since one that fails
// ends the climb anyway.
//
// With par ≥ 2 the warm-started MIP and the climb run side by side, each for the
// whole time (exactConcurrent).
func (e *engine) boundExactProbes(ctx context.Context, st *solveState, anc, desc []float64, limit time.Duration, par int) BoundInfo {
	t0 := time.Now()
	deadline := t0.Add(limit)
	_, _, _, _, lb := st.snapshot()
	info := func(v float64, status string) BoundInfo {
		return BoundInfo{Method: BoundExact, Value: v, Status: status, Seconds: time.Since(t0).Seconds()}
	}
	if exactWarmShare == 0 {
		lo, status := e.exactClimb(ctx, st, anc, desc, lb, deadline)
		if status == "" {
			status = "fault"
		}
		return info(lo, status)
	}
	if par >= 2 {
		lo, status := e.exactConcurrent(ctx, st, anc, desc, lb, limit)
		return info(lo, status)
	}
	out, ok := e.exactWarm(ctx, st, anc, desc, limit/exactWarmShare)
	if !ok {
		return info(lb, "fault")
	}
	if out.failed() {
		// A solver that fails on the warm-started model is not asked to prove
		// infeasibility, which nothing could check.
		return info(lb, out.status)
	}
	lo := math.Max(lb, out.bound)
	if out.proved() {
		return info(lo, "optimal")
	}
	lo, status := e.exactClimb(ctx, st, anc, desc, lo, deadline)
	if status == "" {
		status = out.status
	}
	return info(lo, status)
}

// exactConcurrent runs the warm-started exact MIP and the climb side by side, each for
// the whole time (both single-threaded HiGHS instances). Plans the
// warm-started MIP finds lower the climb's hi at once; whichever proves the optimum stops the
// other. A failing warm-started MIP discards the climb's bounds too, as in the sequential
// order, where the climb never starts after one (a fault injected into every MIP makes the
// probes "prove" anything).
func (e *engine) exactConcurrent(ctx context.Context, st *solveState, anc, desc []float64, lb float64, limit time.Duration) (float64, string) {
	t0 := time.Now()
	wctx, wcancel := context.WithCancel(ctx)
	cctx, ccancel := context.WithCancel(ctx)
	defer wcancel()
	defer ccancel()
	var out mipOutcome
	var ok bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		out, ok = e.exactWarm(wctx, st, anc, desc, limit)
		if !ok || out.failed() || out.proved() {
			ccancel()
		}
	}()
	lo, status := e.exactClimb(cctx, st, anc, desc, lb, t0.Add(limit))
	if status == "optimal" {
		// The climb's "infeasible" answers are trusted once the warm-started MIP has run
		// as long as it would have before any probe in the sequential order, or ended,
		// without a fault: never sooner than that order would have said "optimal".
		if vet := limit/exactWarmShare - time.Since(t0); vet > 0 {
			select {
			case <-done:
			case <-time.After(vet):
			}
		}
		wcancel()
	}
	<-done
	switch {
	case !ok:
		return lb, "fault"
	case out.failed():
		return lb, out.status
	case out.proved():
		return math.Max(lb, out.bound), "optimal"
	}
	lo = math.Max(lo, out.bound)
	switch {
	case status == "optimal":
	case ctx.Err() != nil:
		status = "interrupted"
	case status == "":
		status = out.status // a probe failed (noted): the warm-started MIP's own status
	}
	return lo, status
}

// exactWarm is the exact MIP warm-started with the incumbent and its variables fixed by the
// incumbent's value; ok is false when its plan fails the check of takeExact.
func (e *engine) exactWarm(ctx context.Context, st *solveState, anc, desc []float64, limit time.Duration) (mipOutcome, bool) {
	c := e.c
	U, stage, device, _, lb := st.snapshot()
	start := make([]int, c.n)
	for v := range start {
		start[v] = stage[v] + 1
	}
	out := c.solveMIP(ctx, c.exactSpec(device, U, lb, U), anc, desc, start, limit, 0)
	_, ok := e.takeExact(st, out, device, U)
	return out, ok
}

// exactClimb probes at rising targets from the proved bound lo until deadline (see
// boundExactProbes). It returns the bound proved and "optimal" when it reached the best
// plan, otherwise the status of the probe that the time limit stopped, "time-limit" when the
// time ran out between probes, "interrupted", or "" after a solver fault (noted).
func (e *engine) exactClimb(ctx context.Context, st *solveState, anc, desc []float64, lo float64, deadline time.Time) (float64, string) {
	c := e.c
	U, _, device, _, _ := st.snapshot()
	f := 0.3
	const minProbe = 100 * time.Millisecond
	status := ""
	for ctx.Err() == nil {
		hi, _, _, _, _ := st.snapshot()
		if lo >= hi*(1-1e-9) {
			return lo, "optimal"
		}
		left := time.Until(deadline)
		if left < minProbe {
			status = "time-limit"
			break
		}
		T := lo + f*(hi-lo)
		if hi-T <= 1e-6*hi {
			T = hi * (1 - 1e-9)
		}
		out := c.solveMIP(ctx, c.exactSpec(device, T, lo, U), anc, desc, nil, left, 0)
		val, ok := e.takeExact(st, out, device, U)
		if !ok || out.failed() {
			// The bound proved so far stands; the note says why it stopped.
			return lo, ""
		}
		lo = math.Max(lo, out.bound)
		if !out.proved() {
			return lo, out.status
		}
		if out.plan != nil && val <= T*(1+1e-9) {
			// The optimum itself (below T: a plan above T may come back from outside the
			// fixings, and then proves only that nothing is below T). Its bound is the
			// plan's value up to HiGHS's tolerance on the scaled model (as offerBound clamps
			// a bound just above a plan).
			if out.bound >= val-1e-6*U {
				lo = math.Max(lo, val)
			}
			return lo, "optimal"
		}
		// Nothing below T. Probes cost more the closer T is to the optimum: take bigger
		// steps while they are cheap, smaller ones once a probe took a good part of the
		// time left.
		if out.seconds < left.Seconds()/4 {
			f = math.Min(2*f, 0.6)
		} else {
			f /= 2
		}
	}
	if ctx.Err() != nil {
		status = "interrupted"
	}
	return lo, status
}

// exactWarmShare: the warm-started exact MIP gets 1/exactWarmShare of the time (0: none, for
// tests of the probes alone).
var exactWarmShare time.Duration = 3

// takeExact checks an exact-MIP outcome: a solver fault is noted; a plan is recomputed and
// offered. It returns the plan's recomputed value (NaN without a plan), and false when the
// plan does not recompute to the MIP's value (its bound is then not to be trusted either).
// scale is the model's objective scale: HiGHS's tolerances apply to the scaled values.
func (e *engine) takeExact(st *solveState, out mipOutcome, devOrder []int, scale float64) (float64, bool) {
	c := e.c
	if out.failed() {
		st.note(diag.NoteFault, "solver fault in the exact MIP (%s: %s); it contributes only the bounds proved without it", out.status, out.fault)
	}
	if out.plan == nil {
		return math.NaN(), true
	}
	pstage := make([]int, c.n)
	for v, b := range out.plan {
		pstage[v] = b - 1
	}
	_, val, err := st.p.Evaluate(c.expand(pstage), devOrder)
	if err != nil || math.Abs(val-out.value) > 1e-6*math.Max(1, math.Max(math.Abs(val), scale)) {
		st.note(diag.NoteFault, "solver fault: the exact MIP's plan (objective %.10g) recomputes to %.10g (%v); its bound is discarded", out.value, val, err)
		return val, false
	}
	st.offerPlan(pstage, devOrder, nil, "exact-mip")
	return val, true
}
