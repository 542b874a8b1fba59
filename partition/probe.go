package partition

import (
	"context"
	"math"
	"time"
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
func (e *engine) boundExactProbes(ctx context.Context, st *solveState, anc, desc []float64, limit time.Duration) BoundInfo {
	c := e.c
	t0 := time.Now()
	deadline := t0.Add(limit)
	U, stage, device, _, lb := st.snapshot()
	info := func(v float64, status string) BoundInfo {
		return BoundInfo{Method: BoundExact, Value: v, Status: status, Seconds: time.Since(t0).Seconds()}
	}
	lo, status := lb, "time-limit"
	if exactWarmShare > 0 {
		start := make([]int, c.n)
		for v := range start {
			start[v] = stage[v] + 1
		}
		out := c.solveMIP(ctx, c.exactSpec(device, U, lb, U), anc, desc, start, limit/exactWarmShare, 0)
		if _, ok := e.takeExact(st, out, device, U); !ok {
			return info(lb, "fault")
		}
		if out.failed() {
			// A solver that fails on the warm-started model is not asked to prove
			// infeasibility, which nothing could check.
			return info(lb, out.status)
		}
		lo, status = math.Max(lb, out.bound), out.status
		if out.proved() {
			return info(lo, "optimal")
		}
	}
	f := 0.3
	const minProbe = 100 * time.Millisecond
	for ctx.Err() == nil {
		hi, _, _, _, _ := st.snapshot()
		if lo >= hi*(1-1e-9) {
			return info(lo, "optimal")
		}
		left := time.Until(deadline)
		if left < minProbe {
			break
		}
		T := lo + f*(hi-lo)
		if hi-T <= 1e-6*hi {
			T = hi * (1 - 1e-9)
		}
		out := c.solveMIP(ctx, c.exactSpec(device, T, lo, U), anc, desc, nil, left, 0)
		val, ok := e.takeExact(st, out, device, U)
		if !ok || out.failed() {
			break // the bound proved so far stands; the note says why it stopped
		}
		lo = math.Max(lo, out.bound)
		if !out.proved() {
			status = out.status
			break
		}
		if out.plan != nil && val <= T*(1+1e-9) {
			// The optimum itself (below T: a plan above T may come back from outside the
			// fixings, and then proves only that nothing is below T). Its bound is the
			// plan's value up to HiGHS's tolerance on the scaled model (as offerBound clamps
			// a bound just above a plan).
			if out.bound >= val-1e-6*U {
				lo = math.Max(lo, val)
			}
			return info(lo, "optimal")
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
	return info(lo, status)
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
		st.note("solver fault in the exact MIP (%s: %s); it contributes only the bounds proved without it", out.status, out.fault)
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
		st.note("solver fault: the exact MIP's plan (objective %.10g) recomputes to %.10g (%v); its bound is discarded", out.value, val, err)
		return val, false
	}
	st.offerPlan(pstage, devOrder, nil, "exact-mip")
	return val, true
}
