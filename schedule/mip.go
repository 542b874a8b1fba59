package schedule

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/onnxpart/onnxpart/internal/milp"
)

// mipOptions control one MILP solve.
type mipOptions struct {
	timeLimit time.Duration
	relGap    float64
	symmetry  string
	seed      int
	log       bool
	maxRows   int // above this many rows HiGHS is not called (0: no limit), and the model not built past them
}

// errTooManyRows stops a model's build past mipOptions.maxRows.
var errTooManyRows = errors.New("schedule: the MILP has more rows than its limit")

// mipRun is the outcome of one MILP solve, in problem units, after the simulator re-judged
// the decoded plan.
type mipRun struct {
	pl      *Placement // decoded and simulated plan (nil without incumbent or on a fault)
	sc      *Schedule
	obj     float64 // the solver's incumbent objective (problem units; +Inf without one)
	bound   float64 // proved lower bound (problem units; 0 when nothing was proved)
	status  milp.Status
	optimal bool   // the plan is proved optimal (within the gap asked for)
	fault   string // non-empty when the decoded plan contradicts the model
	vars    int
	rows    int
	nodes   int64
	elapsed time.Duration
	// relaxed: the model is a relaxation (batched with congestion; either model with a call it
	// cannot place exactly, latModel.exact and batchModel.exact): obj is not a plan's value.
	relaxed bool
	// infeasible: HiGHS proved the model infeasible with the serial horizon, so no plan fits.
	infeasible bool
	startSet   bool
	build      time.Duration // building the model and its start
	skipped    string        // why HiGHS was not called (the time left could not cover the model's setup, or maxRows)
	tooLarge   bool          // skipped for maxRows
}

// setupPerNonzero is a conservative estimate of the work per nonzero that no time limit
// interrupts: passing the model to HiGHS, the MIP start, presolve and the set-up of the MIP
// solver (measured on the 2-core machine: a batched RandWire model of 11.2 M nonzeros took
// 3.4 s with a 1 s limit, and 7.9 s with a 3.4 s one; 0.93 M nonzeros took 1.34 s with 1 s).
// The overrun past HiGHS's time limit is of the same order (about 3 s on that model, whatever
// the limit), so HiGHS's own limit ends one estimate before the deadline, and a solve is
// skipped when the time left is under 1.5 estimates.
const setupPerNonzero = 400 * time.Nanosecond

// crossCheckNonzeros: MILPs with at most this many nonzeros are solved twice (see
// solveMILP).
const crossCheckNonzeros = 20000

// crossCheck keeps what two solves of one model both prove: the smaller dual bound, the
// better incumbent, Infeasible only when both say so, Optimal only when the incumbent is
// within relGap of the smaller bound.
func crossCheck(a, b *milp.Result, relGap float64) *milp.Result {
	out := *a
	if b.HasSolution && (!out.HasSolution || b.Objective < out.Objective) {
		out.HasSolution, out.X, out.Objective = true, b.X, b.Objective
	}
	if math.IsNaN(a.DualBound) || math.IsNaN(b.DualBound) {
		out.DualBound = math.Inf(-1)
	} else {
		out.DualBound = math.Min(a.DualBound, b.DualBound)
	}
	out.Nodes += b.Nodes
	out.Elapsed += b.Elapsed
	switch {
	case a.Status == milp.Infeasible && b.Status == milp.Infeasible:
		out.Status = milp.Infeasible
	case out.HasSolution && !math.IsInf(out.DualBound, 0):
		out.Gap = 0
		if d := out.Objective - out.DualBound; d > 0 {
			out.Gap = d / math.Max(math.Abs(out.Objective), 1e-300)
		}
		out.Status = milp.TimeLimit // nothing more proved than the bound
		if out.Gap <= relGap {
			out.Status = milp.Optimal
		}
	default:
		out.Status, out.Gap = milp.TimeLimit, math.Inf(1)
	}
	return &out
}

// setupEstimate is the estimated uninterruptible set-up time of m.
func setupEstimate(m *milp.Model) time.Duration {
	return time.Duration(nonzeros(m)) * setupPerNonzero
}

// nonzeros is the number of nonzeros of m's rows.
func nonzeros(m *milp.Model) int {
	nnz := 0
	for _, r := range m.RowCols {
		nnz += len(r)
	}
	return nnz
}

// tolerance is the slack allowed between the simulated makespan and the MILP objective: the
// solver's feasibility and integrality tolerances times the big-M, relative to the horizon.
func tolerance(ub float64) float64 { return 1e-4*ub + 1e-9 }

// solveMILP builds the latency or batched model with horizon = start's makespan, warm-starts
// it from start, solves it and re-judges the decoded plan with the simulator.
func (in *inst) solveMILP(ctx context.Context, start *Placement, lb float64, o mipOptions) (*mipRun, error) {
	// A start that is invalid (a transfer without a route) or overflows memory is no plan:
	// the MILP then searches for one from scratch.
	startSc, err := in.simulate(start)
	feasibleStart := err == nil && startSc.Feasible
	ub := math.Inf(1)
	if feasibleStart {
		ub = startSc.Makespan
	}
	run := &mipRun{obj: math.Inf(1)}
	if !feasibleStart {
		// No plan that fits is known: the horizon is the serial bound, valid for every plan.
		// When it is 0 every plan takes no time, and any positive horizon holds them all.
		ub = in.serialHorizon()
		if ub <= 0 {
			ub = 1
		}
	}
	if ub <= 0 {
		// Every task takes no time: the start, which fits, is optimal.
		run.pl, run.sc, run.obj, run.optimal, run.status = start, startSc, 0, true, milp.Optimal
		return run, nil
	}
	if feasibleStart && lb >= ub*(1-1e-9) {
		run.pl, run.sc, run.obj, run.bound, run.optimal, run.status = start, startSc, ub, lb, true, milp.Optimal
		return run, nil
	}
	built := time.Now()
	stopped := func(err error) (*mipRun, error) {
		if errors.Is(err, errTooManyRows) {
			run.status, run.bound, run.tooLarge = milp.TimeLimit, lb, true
			run.skipped = fmt.Sprintf("not solved: more than %d rows", o.maxRows)
			return run, nil
		}
		if ctx.Err() != nil && err == ctx.Err() {
			run.status, run.bound = milp.TimeLimit, lb
			if !errors.Is(err, context.DeadlineExceeded) {
				run.status = milp.Interrupted
			}
			return run, nil // like a solve stopped by the time limit without an incumbent
		}
		return nil, err
	}
	sym := in.symmetryOf(o.symmetry)
	var model *milp.Model
	var startVec []float64
	var decode func(x []float64) *Placement
	var scale float64
	if in.latency() {
		lm, err := in.buildLatency(ctx, ub, lb, sym, o.maxRows)
		if err != nil {
			return stopped(err)
		}
		model, scale = lm.m, lm.scale
		run.relaxed = !lm.exact
		if feasibleStart {
			canon := sym.canonical(in, start)
			if csc, err := in.simulate(canon); err == nil && csc.Makespan <= ub*(1+1e-12) {
				startVec = lm.startVector(canon, csc)
			}
		}
		decode = lm.decode
	} else {
		bm, err := in.buildBatched(ctx, ub, lb, sym, o.maxRows)
		if err != nil {
			return stopped(err)
		}
		model, scale = bm.m, bm.scale
		run.relaxed = in.problem.Congestion || !bm.exact
		if feasibleStart {
			canon := sym.canonical(in, start)
			if bm.first >= 0 {
				canon = granuleCanonical(canon, bm.first)
			}
			if csc, err := in.simulate(canon); err == nil && csc.Makespan <= ub*(1+1e-12) {
				startVec = bm.startVector(canon, csc)
			}
		}
		decode = bm.decode
	}
	run.vars, run.rows = model.NumVars(), model.NumRows()
	run.startSet = startVec != nil
	relGap := o.relGap
	if relGap == 0 {
		relGap = 1e-4
	}
	run.build = time.Since(built)
	if o.maxRows > 0 && run.rows > o.maxRows {
		return stopped(errTooManyRows) // rows added after the builder's last check
	}
	// HiGHS cannot be interrupted while it sets the model up: with too little time left, do
	// not start; otherwise stop its search early enough for the tail to fit.
	limit := o.timeLimit
	if d, ok := ctx.Deadline(); ok && (limit == 0 || time.Until(d) < limit) {
		limit = max(time.Until(d), time.Nanosecond)
	}
	if limit > 0 {
		est := setupEstimate(model)
		if limit < est*3/2 {
			run.status, run.bound = milp.TimeLimit, lb
			run.skipped = fmt.Sprintf("not solved: %d columns and %d rows need about %.1f s of set-up that HiGHS cannot interrupt, %.1f s were left",
				run.vars, run.rows, est.Seconds(), limit.Seconds())
			return run, nil
		}
		limit -= est
	}
	// HiGHS 1.10 sometimes proves a false "optimal" (or infeasible) on these big-M models:
	// the certificate harness found a 6-node latency model whose dual bound is 19 with the
	// optimum 18 with presolve, for every seed (testdata/highs-presolve-false-optimal.mps),
	// and a 4-node one whose bound is 5.25 with the optimum 4.75 without presolve for about
	// 1% of the seeds. Small models are therefore solved twice, with and without presolve
	// and with different seeds, and only what both prove is kept: the smaller dual bound,
	// infeasibility only when both find it, the better incumbent.
	opts := milp.Options{TimeLimit: limit, RelGap: relGap, Seed: o.seed, Start: startVec, Log: o.log}
	began := time.Now()
	res, err := model.Solve(ctx, opts)
	if err != nil {
		return nil, err
	}
	if nonzeros(model) <= crossCheckNonzeros && ctx.Err() == nil &&
		(res.Status == milp.Optimal || res.Status == milp.Infeasible) {
		o2 := opts
		o2.Presolve, o2.Seed = "off", o.seed+7919
		if limit > 0 {
			o2.TimeLimit = max(limit-time.Since(began), time.Millisecond)
		}
		res2, err := model.Solve(ctx, o2)
		if err != nil {
			return nil, err
		}
		res = crossCheck(res, res2, relGap)
	}
	run.status, run.nodes, run.elapsed = res.Status, res.Nodes, res.Elapsed
	if !math.IsInf(res.DualBound, 0) && !math.IsNaN(res.DualBound) {
		run.bound = math.Max(lb, res.DualBound/scale)
	} else {
		run.bound = lb
	}
	if res.Status == milp.Infeasible {
		if feasibleStart {
			run.fault = "the MILP claims infeasibility although the start plan is feasible"
			run.bound = lb
		} else {
			// The horizon is the serial bound, valid for every plan, and the model is exact
			// (or a relaxation, batched with congestion) in memory and routes: a proof.
			run.fault = "no plan fits in memory (the MILP is infeasible)"
			run.infeasible = true
		}
		return run, nil
	}
	if run.bound > ub+tolerance(ub) && feasibleStart {
		run.fault = fmt.Sprintf("dual bound %.6g exceeds the start plan's makespan %.6g", run.bound, ub)
		run.bound = lb
		return run, nil
	}
	if !res.HasSolution {
		return run, nil
	}
	run.obj = res.Objective / scale
	pl := decode(res.X)
	sc, err := in.simulate(pl)
	if err != nil {
		run.fault = fmt.Sprintf("decoded plan is invalid: %v", err)
		return run, nil
	}
	if !sc.Feasible {
		run.fault = fmt.Sprintf("decoded plan overflows memory by %.4g bytes", sc.Overflow)
		return run, nil
	}
	if !run.relaxed && sc.Makespan > run.obj+tolerance(ub) {
		run.fault = fmt.Sprintf("simulated makespan %.6g exceeds the MILP objective %.6g", sc.Makespan, run.obj)
		return run, nil
	}
	if sc.Makespan < run.bound-tolerance(ub) {
		run.fault = fmt.Sprintf("simulated makespan %.6g is below the MILP dual bound %.6g", sc.Makespan, run.bound)
		run.bound = lb
		return run, nil
	}
	run.pl, run.sc = pl, sc
	run.optimal = res.Status == milp.Optimal && !run.relaxed && res.Gap <= relGap*(1+1e-9)
	if run.relaxed && sc.Makespan <= run.bound+tolerance(ub) {
		run.optimal = true
	}
	return run, nil
}

// startVector turns a simulated latency plan into a full assignment of the model's columns.
func (lm *latModel) startVector(pl *Placement, sc *Schedule) []float64 {
	in, sc0 := lm.in, lm.scale
	x := make([]float64, lm.m.NumVars())
	clamp := func(col int, v float64) {
		x[col] = math.Min(math.Max(v, lm.m.ColLo[col]), lm.m.ColHi[col])
	}
	start := make([]float64, in.numNodes)
	end := make([]float64, in.numNodes)
	for _, t := range sc.Tasks {
		start[t.Node], end[t.Node] = t.Start, t.End
		if in.source[t.Node] {
			start[t.Node] += t.Call // the model's start of a source follows its call
		}
	}
	calls := make([]float64, in.numDevices)
	for i := range in.numNodes {
		u := pl.Device[i]
		x[lm.x[i][u]] = 1
		clamp(lm.s[i], start[i]*sc0)
		if o := lm.o[i][u]; o >= 0 && in.opensStage(i, u, pl.Device, false) {
			x[o] = 1
			calls[u]++
		}
	}
	for u, c := range lm.n {
		if c >= 0 {
			used := false
			for i := range in.numNodes {
				used = used || pl.Device[i] == u
			}
			if used {
				calls[u] = max(calls[u], 1)
			}
			clamp(c, calls[u])
		}
	}
	clamp(lm.t, sc.Makespan*sc0)
	trS := make([]float64, len(in.problem.Edges))
	trE := make([]float64, len(in.problem.Edges))
	for e := range trS {
		trS[e] = math.NaN()
	}
	for _, tr := range sc.Transfers {
		trS[tr.Edge], trE[tr.Edge] = tr.Start, tr.End
	}
	for qi, e := range lm.qe {
		ed := in.problem.Edges[e]
		a, b := pl.Device[ed.From], pl.Device[ed.To]
		if math.IsNaN(trS[e]) {
			clamp(lm.qs[qi], end[ed.From]*sc0)
			trS[e], trE[e] = end[ed.From], end[ed.From]
		} else {
			clamp(lm.qs[qi], trS[e]*sc0)
		}
		for _, lk := range lm.qu[qi] {
			if lk.a == a && lk.b == b {
				x[lk.col] = 1
			}
		}
	}
	for _, pr := range lm.opPr {
		if pl.Device[pr.i] == pl.Device[pr.j] && end[pr.i] <= start[pr.j]+1e-12 {
			x[pr.col] = 1
		}
	}
	for _, pr := range lm.comPr {
		e1, e2 := lm.qe[pr.i], lm.qe[pr.j]
		if trE[e1] <= trS[e2]+1e-12 {
			x[pr.col] = 1
		}
	}
	return x
}

func (lm *latModel) decode(x []float64) *Placement {
	in := lm.in
	pl := &Placement{Device: make([]int, in.numNodes), Order: make([]float64, in.numNodes), EdgeOrder: make([]float64, len(in.problem.Edges))}
	for i := range in.numNodes {
		best, bv := -1, -1.0
		for u, c := range lm.x[i] {
			if c >= 0 && x[c] > bv {
				best, bv = u, x[c]
			}
		}
		pl.Device[i] = best
		pl.Order[i] = x[lm.s[i]] / lm.scale
	}
	for e := range in.problem.Edges {
		if qi := lm.q[e]; qi >= 0 {
			pl.EdgeOrder[e] = x[lm.qs[qi]] / lm.scale
		} else {
			pl.EdgeOrder[e] = pl.Order[in.problem.Edges[e].To]
		}
	}
	return pl
}

func (bm *batchModel) startVector(pl *Placement, sc *Schedule) []float64 {
	in, sc0 := bm.in, bm.scale
	x := make([]float64, bm.m.NumVars())
	clamp := func(col int, v float64) {
		x[col] = math.Min(math.Max(v, bm.m.ColLo[col]), bm.m.ColHi[col])
	}
	st := make([][]float64, in.numNodes)
	en := make([][]float64, in.numNodes)
	cnt := make([][]int, in.numNodes)
	for i := range in.numNodes {
		st[i] = make([]float64, in.numDevices)
		en[i] = make([]float64, in.numDevices)
		cnt[i] = make([]int, in.numDevices)
		for l, u := range pl.Granules[i] {
			x[bm.x[i][u][l]] = 1
			cnt[i][u]++
		}
	}
	calls := make([]float64, in.numDevices)
	for _, t := range sc.Tasks {
		st[t.Node][t.Device], en[t.Node][t.Device] = t.Start, t.End
		if in.source[t.Node] {
			st[t.Node][t.Device] += t.Call // the model's start of a source follows its call
		} else if o := bm.o[t.Node][t.Device]; o >= 0 && t.Call > 0 {
			x[o] = 1
			calls[t.Device]++
		}
	}
	for i := range in.numNodes {
		for u := range in.numDevices {
			if bm.s[i][u] < 0 {
				continue
			}
			if c := cnt[i][u]; c > 0 {
				x[bm.b[i][u][c]] = 1
				clamp(bm.s[i][u], st[i][u]*sc0)
				if in.sourceCalls {
					calls[u] = max(calls[u], 1)
				}
			} else {
				clamp(bm.s[i][u], 0)
			}
		}
	}
	for u, c := range bm.n {
		if c >= 0 {
			clamp(c, calls[u])
		}
	}
	clamp(bm.c, sc.Makespan*sc0)
	for _, pr := range bm.pairs {
		if cnt[pr.i][pr.u] > 0 && cnt[pr.j][pr.u] > 0 && en[pr.i][pr.u] <= st[pr.j][pr.u]+1e-12 {
			x[pr.col] = 1
		}
	}
	return x
}

func (bm *batchModel) decode(x []float64) *Placement {
	in := bm.in
	pl := &Placement{Granules: make([][]int, in.numNodes), BatchOrder: make([][]float64, in.numNodes)}
	for i := range in.numNodes {
		pl.Granules[i] = make([]int, in.numGranules)
		pl.BatchOrder[i] = make([]float64, in.numDevices)
		for l := range in.numGranules {
			best, bv := -1, -1.0
			for u := range in.numDevices {
				if c := bm.x[i][u][l]; c >= 0 && x[c] > bv {
					best, bv = u, x[c]
				}
			}
			pl.Granules[i][l] = best
		}
		for u := range in.numDevices {
			if c := bm.s[i][u]; c >= 0 {
				pl.BatchOrder[i][u] = x[c] / bm.scale
			}
		}
	}
	return pl
}
