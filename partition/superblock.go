package partition

import (
	"context"
	"math"
	"time"

	"github.com/onnxpart/onnxpart/diag"
)

// BoundSuperblock names the superblock-composition bound (ours, proved below).
const BoundSuperblock = "superblock"

// boundSuperblock is a bound of ours that coarsens the exact MIP instead of guessing the
// bottleneck. For a composition k = s_1 + … + s_r of the number of stages, merge the
// stages of a plan, in pipeline order, into r superblocks Q_1, …, Q_r of s_1, …, s_r
// consecutive stages, and let
//
//	LB(s) = min over plans of max_i f(Q_i)/s_i
//
// (the r-block exact MIP whose block rows read s_i·z ≥ block_i; buildMIP's span/mult).
//
// Proof that LB(s) ≤ OPT for every composition s. Take an optimal plan P_1, …, P_k (stages
// in DAG order, so every union of consecutive stages is convex and the superblocks again form
// a plan with an acyclic quotient). For a superblock Q = P_a ∪ … ∪ P_b:
// f(Q) ≤ Σ_{a≤i≤b} f(P_i), because work is additive and a tensor charged to Q (T_t meets Q
// and leaves it) meets some P_i ⊆ Q and leaves that P_i too, so it is charged to P_i as well
// (overflow, dropped by the MIP, is ≥ 0). Hence f(Q_i)/s_i ≤ max_i f(P_i) = OPT for every
// i, and this plan shows LB(s) ≤ OPT.
//
// Unlike bottleneck-guess (a minimum over guessed positions, because only one position is
// right), every composition holds for every plan, so the bound is the MAXIMUM over the
// compositions tried, and a MIP that times out still contributes its dual bound. With r = 2
// the model has n binaries and solves in seconds on REGAL-like graphs; it charges the
// communication across the cut between the two superblocks, which W/k ignores. Variable
// fixing (windows, with the spans) and the incumbent's value as target apply unchanged, and
// the best bound so far B is the floor of the bound reported: B ≤ OPT, so max(B, LB(s)) is
// still ≤ OPT (buildMIP keeps it off z's column, where it would blind branching).
func (e *engine) boundSuperblock(ctx context.Context, st *solveState, anc, desc []float64, limit time.Duration) BoundInfo {
	c := e.c
	t0 := time.Now()
	U, stage, _, _, lb := st.snapshot()
	K := c.stages()
	if K < 3 || c.hetero {
		return BoundInfo{Method: BoundSuperblock, Value: lb, Status: "skipped"}
	}
	comps := superblockCompositions(K)
	best := lb
	status := "optimal"
	for i, comp := range comps {
		left := compositionBudget(time.Until(t0.Add(limit)), comp, i == len(comps)-1)
		if left <= 0 || ctx.Err() != nil {
			status = "time-limit"
			break
		}
		r := len(comp)
		sp := mipSpec{name: BoundSuperblock, K: r, dev: make([]int, r), span: comp, mult: make([]float64, r),
			objBlock: -1, heavy: -1, target: U, zLo: best, scale: U}
		for b, s := range comp {
			sp.mult[b] = float64(s)
		}
		start := make([]int, c.n)
		for v, s := range stage {
			acc := 0
			for b, sz := range comp {
				acc += sz
				if s < acc {
					start[v] = b + 1
					break
				}
			}
		}
		out := c.solveMIP(ctx, sp, anc, desc, start, left, 0)
		if out.fault != "" {
			st.note(diag.NoteFault, "superblock %v: %s", comp, out.fault)
			continue
		}
		if !out.proved() {
			status = out.status
		}
		if out.bound > best && !math.IsInf(out.bound, 1) {
			best = out.bound
		}
	}
	return BoundInfo{Method: BoundSuperblock, Value: best, Status: status, Seconds: time.Since(t0).Seconds()}
}

// compositionBudget is the time composition comp may use when left remains and it is not
// the last one (which gets all of it): half of it, three quarters for a composition of three
// superblocks. The two-superblock ones usually finish in seconds, handing their time on; an
// equal split cut the best of them short (on a 135-node REGAL-like graph at k = 8, (4, 4)
// needs 6 s and gives 0.935 of the best plan, where an equal sixth of 30 s left it at 0.929).
// At k = 16 the balanced three-superblock composition is the strongest (5, 6, 5 on 90- and
// 137-node graphs: optimal in 16 and 23 s at 0.860 and 0.883 of the best plan, (8, 8) 0.842
// and 0.870, (4, 4, 4, 4) still open at 30 s, 0.846 and 0.874).
func compositionBudget(left time.Duration, comp []int, last bool) time.Duration {
	switch {
	case last:
		return left
	case len(comp) == 3:
		return left * 3 / 4
	}
	return left / 2
}

// superblockCompositions lists the compositions tried, most promising first: two
// superblocks (K/2, K/2), then the balanced composition into three (extra stages from the
// middle outwards), then (j, K−j) with j at three quarters, one quarter and K−1 (on
// REGAL-like graphs the heavier side first is the better of those), and the balanced
// composition into four, which is stronger in principle but seldom finishes (each into fewer
// than K superblocks); see compositionBudget for their time.
func superblockCompositions(K int) [][]int {
	balanced := func(r int) []int {
		comp := make([]int, r)
		for i := range comp {
			comp[i] = K / r
		}
		for i := 0; i < K%r; i++ {
			comp[(r-1)/2+(i+1)/2*(1-2*(i%2))]++ // extra stages from the middle outwards
		}
		return comp
	}
	out := [][]int{{K / 2, K - K/2}}
	if K > 3 {
		out = append(out, balanced(3))
	}
	seen := map[int]bool{K / 2: true}
	for _, j := range []int{(3*K + 2) / 4, K / 4, K - 1} {
		if j < 1 || j > K-1 || seen[j] {
			continue
		}
		seen[j] = true
		out = append(out, []int{j, K - j})
	}
	if K > 4 {
		out = append(out, balanced(4))
	}
	return out
}
