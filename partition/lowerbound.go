package partition

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"time"
)

// BoundOptions control LowerBound.
type BoundOptions struct {
	// TimeLimit caps the method (all k MIPs of bottleneck-guess together); 0: 60 s.
	TimeLimit time.Duration
	// Gap lets the exact MIP stop once it proves that no plan is below (1 − Gap)·incumbent.
	Gap float64
	// Parallel is the number of concurrent MIPs of bottleneck-guess, and of the exact bound
	// (two: the warm-started MIP beside the probes); 0: GOMAXPROCS.
	Parallel int
}

// BoundMethods lists the methods LowerBound accepts, cheapest first.
var BoundMethods = []string{BoundSimple, BoundNode, BoundMinBlock, BoundCut, BoundBottleneck, BoundBottleneckGuess, BoundSuperblock, BoundExact, BoundIdealDP}

// LowerBound computes one lower-bound method on p. incumbent must be a valid plan of p (from
// Solve, say): the MIPs use its value to fix variables and as a cut-off, and the exact MIP
// is warm-started with it. A MIP that times out contributes its dual bound. The returned
// plan is non-nil when a method found a better plan than the incumbent (exact MIP, ideal
// DP). The bound is never above the incumbent's value; a solver whose bound would be is
// reported with Status "fault" and Value 0.
func LowerBound(ctx context.Context, p *Problem, incumbent *Plan, method string, o BoundOptions) (BoundInfo, *Plan, error) {
	if err := p.Validate(); err != nil {
		return BoundInfo{}, nil, err
	}
	if incumbent == nil {
		return BoundInfo{}, nil, fmt.Errorf("partition: LowerBound needs an incumbent plan")
	}
	_, U, err := p.Evaluate(incumbent.Assignment, incumbent.StageDevice)
	if err != nil {
		return BoundInfo{}, nil, err
	}
	c := compile(p)
	if !c.directionalBoundsSound() && method != BoundSimple && method != BoundIdealDP {
		return BoundInfo{}, nil, fmt.Errorf("partition: %s is not proved for problems with cost-only (unordered) tensors, such as training graphs; use %s or %s", method, BoundSimple, BoundIdealDP)
	}
	stage := c.contract(incumbent.Assignment)
	limit := o.TimeLimit
	if limit <= 0 {
		limit = 60 * time.Second
	}
	st := &solveState{p: p, c: c, t0: time.Now(), opts: Options{Gap: -1, BoundGap: o.Gap, Bounds: BoundsFull},
		best: U, stage: stage, device: append([]int(nil), incumbent.StageDevice...), source: "incumbent"}
	e := newEngine(c, 1)
	simple := c.simpleBound()
	st.lb = simple
	par := o.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	t0 := time.Now()
	var info BoundInfo
	switch method {
	case BoundSimple:
		info = BoundInfo{Method: method, Value: simple, Status: "proved"}
	case BoundNode:
		info = BoundInfo{Method: method, Value: c.nodeBound(), Status: "proved"}
	case BoundMinBlock:
		mctx, cancel := context.WithTimeout(ctx, limit)
		mb, complete := c.minBlockBound(mctx, c.nodeBound(), 64, minBlockOps)
		cancel()
		info = BoundInfo{Method: method, Value: mb * (1 - 1e-12), Status: "proved"}
		if !complete {
			info.Status = "partial"
		}
	case BoundCut:
		base := math.Max(simple, c.nodeBound())
		info = BoundInfo{Method: method, Value: c.cutBound(base), Status: "proved"}
	case BoundIdealDP:
		cctx, cancel := context.WithTimeout(ctx, limit)
		val, s2, d2, ok := c.idealDP(cctx, e.a, U, 100000, 2000000)
		stopped := cctx.Err() != nil
		cancel()
		if !ok {
			// Nothing is proved by an unfinished DP: "time-limit" when the clock cut it,
			// "gave-up" when the DAG has too many ideals.
			info = BoundInfo{Method: method, Value: 0, Status: "gave-up"}
			if stopped {
				info.Status = "time-limit"
			}
			break
		}
		if !math.IsInf(val, 1) {
			st.offerPlan(s2, d2, nil, BoundIdealDP)
		} else {
			val = U
		}
		info = BoundInfo{Method: method, Value: val, Status: "optimal"}
	case BoundBottleneck, BoundBottleneckGuess:
		if c.hetero {
			return BoundInfo{}, nil, fmt.Errorf("partition: %s is defined for homogeneous pipelines only", method)
		}
		if method == BoundBottleneck {
			info = e.boundBottleneck(ctx, st, limit)
		} else {
			anc, desc := c.reachWork()
			info = e.boundGuess(ctx, st, anc, desc, limit, par)
		}
	case BoundSuperblock:
		if c.hetero {
			return BoundInfo{}, nil, fmt.Errorf("partition: %s is defined for homogeneous pipelines only", method)
		}
		anc, desc := c.reachWork()
		info = e.boundSuperblock(ctx, st, anc, desc, limit)
	case BoundExact:
		anc, desc := c.reachWork()
		info = e.boundExact(ctx, st, anc, desc, limit, par)
	default:
		return BoundInfo{}, nil, fmt.Errorf("partition: unknown bound method %q", method)
	}
	info.Seconds = time.Since(t0).Seconds()
	if info.Value > st.best*(1+mipTol)+1e-12 {
		info.Status = "fault"
		info.Value = 0
	}
	info.Value = math.Min(info.Value, st.best)
	var better *Plan
	if st.best < U {
		better = st.plan(time.Since(t0))
		better.LowerBound, better.BoundMethod = 0, ""
		better.Gap = 1
	}
	return info, better, nil
}
