package schedule

import (
	"context"
	"fmt"
	"math"

	"github.com/onnxpart/onnxpart/internal/milp"
)

// Bound is one proved lower bound on the optimal makespan.
type Bound struct {
	Method string  `json:"method"`
	Value  float64 `json:"value"`
}

// criticalPath is the longest source-to-sink path with every node at its fastest time
// (batched: its fastest supported batch), communication ignored.
//
// Proof: precedence alone. Along any path i₁→…→i_m every plan runs i_{r+1} after i_r ends,
// so the makespan is at least Σ_r (the time i_r takes where it runs) ≥ Σ_r fast(i_r). In
// batched mode the argument follows one granule: the batches that hold it form such a chain
// (F4a, digest-003 §3.4), and each batch takes at least the fastest batch time of its node.
// This is the critical-path term of the thesis's B&B bound (digest-003 §2, LB(st, k)) and the
// head/tail bounds of the MILPs' valid inequalities.
func (in *inst) criticalPath() float64 {
	head, tail, fast := in.headTail()
	best := 0.0
	for i := range in.numNodes {
		best = math.Max(best, head[i]+fast[i]+tail[i])
	}
	return best
}

// loadBound is the LP relaxation of the devices' load: every node's L granules are split
// fractionally over the devices, each granule costing the device's best time per granule,
// and no device may be busy longer than C. Communication and precedence are ignored.
//
// Proof: a device runs one task at a time, so every plan's makespan is at least each
// device's busy time. A plan puts c_iu granules of node i on device u in one batch of time
// batchTime[i][u][c_iu] ≥ c_iu·rate[i][u] (rate = the best time per granule over the supported
// sizes), with Σ_u c_iu = L: the integral plan is a feasible point of the LP, whose optimum
// C* is therefore ≤ the makespan (the work bound of digest-003 §2, LB(st, k), made exact over
// devices by the LP; it is the device-load inequality T ≥ Σ_i p_iu·x_iu of the latency MILP,
// digest-004 §4.3, relaxed). HiGHS's dual bound is taken with a 1e-7 relative margin. The
// fallback Σ_i min_u rate·L / K is the same argument summed over the K devices.
//
// Stage calls: device u's busy time is its batches' times + c_u·(its stages), and a device
// that runs anything has at least one stage (its first task or batch opens one: a source, or
// one that reads from another device, as nothing ran on u before it), so the LP adds c_u·y_u
// with L·y_u ≥ f_iu for every i: the integral plan sets y_u = 1 exactly on the devices it
// uses, a feasible point. (The fallback leaves the calls out: smaller, still a bound.)
func (in *inst) loadBound(ctx context.Context) float64 {
	rate := make([][]float64, in.numNodes)
	for i := range in.numNodes {
		rate[i] = make([]float64, in.numDevices)
		for u := range in.numDevices {
			rate[i][u] = math.Inf(1)
			if in.latency() {
				rate[i][u] = in.granuleTime[i][u]
				continue
			}
			for c := 1; c <= in.numGranules; c++ {
				if in.sizeOK[u][c] {
					rate[i][u] = math.Min(rate[i][u], in.batchTime[i][u][c]/float64(c))
				}
			}
		}
	}
	// Stage calls: each device used pays at least one call, its first task's (batch's).
	calls := true
	// Closed form for one device; otherwise an LP.
	if in.numDevices == 1 {
		s := 0.0
		for i := range in.numNodes {
			s += rate[i][0] * float64(in.numGranules)
		}
		if calls && in.sourceCalls {
			s += in.callCost[0]
		}
		return s
	}
	m := &milp.Model{}
	// Scale to keep the coefficients near 1.
	scale := 0.0
	for i := range in.numNodes {
		for u := range in.numDevices {
			if !math.IsInf(rate[i][u], 1) {
				scale = math.Max(scale, rate[i][u])
			}
		}
	}
	for u := range in.numDevices {
		if calls {
			scale = math.Max(scale, in.callCost[u])
		}
	}
	if scale <= 0 {
		return 0
	}
	c := m.AddVar(0, milp.Inf, 1, false, "C")
	f := make([][]int, in.numNodes)
	for i := range in.numNodes {
		f[i] = make([]int, in.numDevices)
		var cols []int
		for u := range in.numDevices {
			f[i][u] = -1
			if !math.IsInf(rate[i][u], 1) {
				f[i][u] = m.AddVar(0, milp.Inf, 0, false, "")
				cols = append(cols, f[i][u])
			}
		}
		m.AddRow(float64(in.numGranules), float64(in.numGranules), cols, ones(len(cols)))
	}
	for u := range in.numDevices {
		cols, vals := []int{c}, []float64{-1}
		for i := range in.numNodes {
			if f[i][u] >= 0 && rate[i][u] > 0 {
				cols, vals = append(cols, f[i][u]), append(vals, rate[i][u]/scale)
			}
		}
		if calls && in.sourceCalls && in.callCost[u] > 0 {
			// L·y_u ≥ f_iu: u is used as soon as it runs any granule (f_iu ∈ [0, L]).
			y := m.AddVar(0, 1, 0, false, "")
			for i := range in.numNodes {
				if f[i][u] >= 0 {
					m.AddRow(0, milp.Inf, []int{y, f[i][u]}, []float64{float64(in.numGranules), -1})
				}
			}
			cols, vals = append(cols, y), append(vals, in.callCost[u]/scale)
		}
		m.AddRow(-milp.Inf, 0, cols, vals)
	}
	res, err := m.Solve(ctx, milp.Options{LP: true})
	if err != nil || res.Status != milp.Optimal || math.IsInf(res.DualBound, 0) {
		// Fall back to the trivial bound Σ_i min_u rate / K.
		s := 0.0
		for i := range in.numNodes {
			best := math.Inf(1)
			for u := range in.numDevices {
				best = math.Min(best, rate[i][u])
			}
			s += best * float64(in.numGranules)
		}
		return s / float64(in.numDevices)
	}
	// The LP optimum is exact up to HiGHS's tolerances; keep a little margin.
	return math.Max(0, res.DualBound*scale*(1-1e-7))
}

// commPathBound is the critical path with devices and transfers: est[i][u], the earliest
// node i can finish on device u when no resource is ever busy, is t(i,u) plus the latest of
// its predecessors' best arrivals min_w est[p][w] + comm(p→i, w→u). Every plan's makespan is
// at least min_u est of its last nodes. (Batched: one granule at the fastest batch time, which
// every granule's own chain must also take.)
//
// Proof: by induction in topological order, in every plan node i placed on u finishes no
// earlier than est[i][u]: it starts after each input p arrived, and p, wherever (w) it ran,
// finished no earlier than est[p][w] and its tensor took comm(p→i, w→u) ≥ 0 more (0 on the
// same device; congestion only delays it further). This is the earliest-start relaxation of
// the precedence and communication constraints (4a)–(4b) and (7) of the latency MILP
// (digest-004 §4.3, §4.6) with the disjunctive (6) and congestion (8) constraints dropped; in
// batched mode of F4a (digest-003 §3.4) for one granule, with per-granule transfer times
// comm(·, 1) ≤ comm(·, c) and batch times ≥ the fastest supported batch.
//
// Stage calls (both modes; in batched mode for the batch that holds the granule followed): a
// node i on u that reads a non-free edge from another device
// opens a stage and takes c_u more, so each such input's arrival counts c_u on top (an input
// from u itself counts none): if i opens, it ends ≥ (latest arrival) + c_u + t ≥ every
// input's term; if it does not, every non-free input came from u and its term carries no
// call. And a node of positive time t on u ends ≥ c_u + t: u's first task always opens a
// stage (it is a source, or it reads from another device), so either i is that task and pays
// c_u, or i, which occupies u, starts after that task, which ended ≥ c_u. (A task of no time
// occupies nothing and may run before the first call ends, hence d > 0.)
func (in *inst) commPathBound() float64 {
	_, best := in.commPathFin()
	return best
}

// commPathFin is commPathBound's table: fin[i][u] ≤ the end of node i in every plan that
// puts it on u (its proof), and the bound.
func (in *inst) commPathFin() ([][]float64, float64) {
	calls := true // both modes: a batch opens a stage by the same rule as a latency task
	fin := make([][]float64, in.numNodes)
	best := 0.0
	for _, i := range in.topo {
		fin[i] = make([]float64, in.numDevices)
		for u := range in.numDevices {
			d := math.Inf(1)
			if in.latency() {
				d = in.granuleTime[i][u]
			} else {
				for c := 1; c <= in.numGranules; c++ {
					if in.sizeOK[u][c] {
						d = math.Min(d, in.batchTime[i][u][c])
					}
				}
			}
			if in.pinnedGranules != nil && in.pinnedGranules[i] != nil {
				used := false
				for _, w := range in.pinnedGranules[i] {
					used = used || w == u
				}
				if !used {
					d = math.Inf(1)
				}
			}
			ready := 0.0
			for _, e := range in.inE[i] {
				p := in.problem.Edges[e].From
				arr := math.Inf(1)
				for w := range in.numDevices {
					x := fin[p][w] + in.comm(e, w, u, 1)
					if calls && w != u && !in.free[e] {
						x += in.callCost[u] // i reads from another device: it opens a stage
					}
					arr = math.Min(arr, x)
				}
				ready = math.Max(ready, arr)
			}
			fin[i][u] = ready + d
			if calls && in.sourceCalls && d > 0 {
				fin[i][u] = math.Max(fin[i][u], in.callCost[u]+d) // after u's first call
			}
		}
		if len(in.succs[i]) == 0 {
			m := math.Inf(1)
			for u := range in.numDevices {
				m = math.Min(m, fin[i][u])
			}
			best = math.Max(best, m)
		}
	}
	if math.IsInf(best, 0) {
		return fin, 0
	}
	return fin, best
}

// simpleBounds are the cheap bounds: the critical paths and the load LP. (The other proved
// bounds are the MILPs' dual bounds — a relaxation's optimum is below every plan's makespan,
// taken from HiGHS's mip_dual_bound, never an incumbent — and MILP-SPLIT's DP and recursion,
// proved in split.go's file comment, digest-003 §5.)
func (in *inst) simpleBounds(ctx context.Context) []Bound {
	return []Bound{
		{Method: "critical-path", Value: math.Max(in.criticalPath(), in.commPathBound())},
		{Method: "load", Value: in.loadBound(ctx)},
	}
}

func maxBound(bs []Bound) float64 {
	v := 0.0
	for _, b := range bs {
		v = math.Max(v, b.Value)
	}
	return v
}

// serialHorizon is a makespan no optimal plan exceeds: every node at its slowest and every
// transfer at its slowest, one after the other (a list schedule never idles with nothing
// running, so any plan's makespan is at most the sum of its durations).
//
// Proof (an upper bound, used as the MILPs' big-M horizon when no plan that fits is known, so
// that an infeasible MILP proves that no plan fits): take any plan that fits and schedule its
// tasks semi-actively in a topological order of nodes and transfers; each task starts when
// an earlier task ends (or at 0), so the makespan is at most the sum of all durations. A node
// has at most min(K, L) batches, each at most its slowest batch plus one stage call (the
// largest CallCost of a device it can run on); an edge has at most
// min(L, K²) messages, each at most comm(·, L).
func (in *inst) serialHorizon() float64 {
	h := 0.0
	for i := range in.numNodes {
		worst := 0.0
		for u := range in.numDevices {
			for c := 1; c <= in.numGranules; c++ {
				x := in.batchTime[i][u][c]
				if in.latency() {
					x = in.granuleTime[i][u]
				}
				if !math.IsInf(x, 1) {
					worst = math.Max(worst, x)
				}
			}
		}
		call := 0.0 // each batch opens at most one stage
		for u := range in.numDevices {
			if in.canRun(i, u) {
				call = math.Max(call, in.callCost[u])
			}
		}
		h += (worst + call) * float64(min(in.numDevices, in.numGranules)) // at most one batch per device
	}
	for e := range in.problem.Edges {
		worst := 0.0
		for u := range in.numDevices {
			for v := range in.numDevices {
				if d := in.comm(e, u, v, in.numGranules); !math.IsInf(d, 1) {
					worst = math.Max(worst, d)
				}
			}
		}
		h += worst * float64(min(in.numGranules, in.numDevices*in.numDevices)) // messages per edge
	}
	return h
}

// memoryProof returns a proof that no placement fits the devices' memory, or "" when these
// counting arguments prove nothing:
//
//   - some node fits on no device: in latency mode Weight + Act exceeds the capacity of every
//     device that can run it; in batched mode no split of its L granules into supported batch
//     sizes puts on every device used at most its capacity (Weight + c·Act for c granules,
//     the node alone) — a subset-sum over the devices;
//   - volume: every plan holds each node's Weight at least once and its Act once per granule,
//     so Σ_i (Weight_i + L·Act_i) ≤ Σ_u Mem_u whenever every capacity is finite.
func (in *inst) memoryProof() string {
	total, need := 0.0, 0.0
	for u := range in.numDevices {
		total += in.capacity[u]
	}
	for i := range in.numNodes {
		nd := &in.problem.Nodes[i]
		need += nd.Weight + float64(in.numGranules)*nd.Act
		// can[s]: s granules of node i can be placed on the devices seen so far.
		can := make([]bool, in.numGranules+1)
		can[0] = true
		for u := range in.numDevices {
			next := append([]bool(nil), can...)
			for c := 1; c <= in.numGranules; c++ {
				ok := in.canRun(i, u) && nd.Weight+float64(c)*nd.Act <= in.capacity[u]
				if !in.latency() {
					ok = ok && in.sizeOK[u][c] && !math.IsInf(in.batchTime[i][u][c], 1)
				}
				if !ok {
					continue
				}
				for s := 0; s+c <= in.numGranules; s++ {
					if can[s] {
						next[s+c] = true
					}
				}
			}
			can = next
		}
		if !can[in.numGranules] {
			return fmt.Sprintf("node %d (%s) fits on no device", i, nd.Name)
		}
	}
	if !math.IsInf(total, 1) && need > total*(1+1e-9) { // margin: rounding of the sums
		return fmt.Sprintf("the nodes need at least %.6g bytes, the devices hold %.6g", need, total)
	}
	return ""
}
