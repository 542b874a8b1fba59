package schedule

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/onnxpart/onnxpart/internal/milp"
)

// The batched-throughput MILP of seed 003 §3.2 in digest-003's formulation F (§3.4):
//
//	x[i,u,l] ∈ {0,1}  granule l of node i runs on device u          (3.1)/F1: Σ_u x = 1
//	b[i,u,c] ∈ {0,1}  node i's batch on u has c granules           F2: Σ_l x[i,u,l] = Σ_c c·b[i,u,c], Σ_c b ≤ 1
//	s[i,u]            start of node i's batch on u; C the makespan  (3.2)/F3: s + D ≤ C, D = Σ_c t[i,u,c]·b[i,u,c]
//	F4a (per input, with the duration the printed (3.3) omits):
//	    s[i,u] + D[i,u] + c_e(u,v) ≤ s[j,v] + M(2 − x[i,u,l] − x[j,v,l])   ∀ (i,j)=e, u, v, l
//	F5 (3.8): batches on one device do not overlap (every pair: under per-input semantics
//	    comparable nodes may still collide when their batches share no granule)
//	F6 (3.7): Σ_i Act_i·Σ_l x[i,u,l] + Weight_i·Σ_c b[i,u,c] ≤ Mem_u
//	F7: no route from u to v ⇒ x[i,u,l] + x[j,v,l] ≤ 1
//
// c_e(u,v) is one granule's transfer (granules move concurrently: the thesis's model, exact
// for Problem.Congestion = false; with congestion the model is a relaxation, so its bound is
// still valid and its plan is re-timed by the simulator). The SOS-style F2 replaces the big-M
// linearisation (3.5)–(3.6). Granules are interchangeable, so the first node's granules are
// ordered by device; identical devices are ordered by the symmetry criterion.
//
// Stage calls (Device.CallCost c_v; the simulator's batched rule, placeBatch): node j's batch
// on device v opens a stage, and its duration grows by c_v, when one of its granules reads a
// non-free edge from a granule of the predecessor on another device, or when j is a source (no
// non-free in-edge) and the batch is v's first. The model prices them as the latency MILP does
// (milp_latency.go), per granule:
//
//   - cross-device openers exactly: o[j,v] ∈ [0,1] for a non-source j with
//     o[j,v] ≥ x[j,v,l] − x[i,v,l] for every non-free in-edge (i,j) and granule l (o ≥ x[j,v,l]
//     when i cannot run on v), and the batch's duration is D[j,v] + c_v·o[j,v] in every row
//     that uses it: F3, F4a (as the producer's duration) and F5;
//   - a source's call through a shifted start: s[j,v] marks the end of its call, so its
//     duration stays D[j,v], and s[j,v] ≥ c_v·Σ_{c: t[j,v,c] > 0} b[j,v,c];
//   - device loads: C ≥ Σ_i D[i,u] + c_u·n_u with n_u ≥ Σ_j o[j,u] and n_u ≥ Σ_c b[j,u,c]
//     for every j (a device used pays at least one call: its first batch always opens a stage,
//     being a source, or reading a granule whose producer's batch on u would be earlier).
//
// Lower bound (always). Map any plan's simulated schedule into the model: x and b from its
// granule maps, o[j,v] = 1 exactly for its cross-device openers (the rows force no more: a
// batch that opens none has x[i,v,l] = 1 wherever x[j,v,l] = 1 on its non-free in-edges), n_u
// = its stages on u, C = its makespan, s[j,v] = the batch's start, plus c_v for a source batch
// that pays its call (v's first). Each model interval [s, s + D + c·o] is then the simulated
// interval of the batch, or for a paying source that interval less its leading call. F3 and
// F4a hold (inputs are ready by the start, hence by the shifted start; the model's ends are
// the simulated ends). F5 holds for the simulated order: two batches of positive simulated
// duration on one device never overlap, and a row is enforced only when both batches have a
// size of positive time (a batch of zero time whose call makes it occupy the device is simply
// not constrained: weaker, not wrong). The source row: first on v, the shifted start is ≥ c_v;
// not first with t > 0, the batch waits for the device, whose first batch ran a call first
// (with t = 0 a source need not wait, hence only the sizes of positive time). The loads:
// busy_u = Σ t + c_u·stages_u ≤ makespan, stages_u ≥ Σ_j o[j,u] and ≥ 1 when u is used. So
// the point is feasible with objective = the makespan, and the optimum (and HiGHS's dual
// bound) is at most the priced optimum. Where sources pay no call (inst.sourceCalls off:
// MILP-SPLIT's sub-problems) the source rows and n_u ≥ Σ_c b go; the rest is the same argument.
//
// Exact (bm.exact; with Problem.Congestion the model is a relaxation anyway): no source j may
// sit, with c_v > 0, on a device v where it has an in-edge (a free one: it then waits for it)
// or a size of zero time, and no non-source batch with a possible call may take a size of zero
// time (its call makes it occupy the device, which F5 does not see). Then, as in the latency
// model, the simulator run in the order of s (BatchOrder) ends each batch no later than the
// model: a non-source's priced duration is t + c·opens ≤ D + c·o, a paying source starts at 0
// and ends at c_v + t ≤ s + D by its source row, and every other wait is ordered by F4a and
// F5. Otherwise the model is a relaxation: its bound stands and the simulator judges its plan
// (mipRun.relaxed). The calls also enter the bounds (bounds.go) and every heuristic through
// the simulator.

type batchModel struct {
	in    *inst
	m     *milp.Model
	scale float64
	h     float64
	x     [][][]int // x[i][u][l], −1 when u cannot run i
	b     [][][]int // b[i][u][c], −1 when unsupported
	s     [][]int   // s[i][u]
	c     int
	pairs []batchPair
	first int     // the node whose granules are ordered
	o     [][]int // o[j][v]: j's batch on v reads a non-free granule from another device (a call), −1 if none
	n     []int   // n[u]: the calls device u pays at least (load rows), −1 if none
	// exact: the model prices every call the simulator charges its decoded plans (see the
	// calls comment above); without congestion its optimum is then a plan's makespan.
	exact bool
}

type batchPair struct{ i, j, u, col int }

func (in *inst) buildBatched(ctx context.Context, ub, lb float64, sym symmetry, maxRows int) (*batchModel, error) {
	if !(ub > 0) || math.IsInf(ub, 0) {
		return nil, fmt.Errorf("schedule: batched MILP needs a finite positive horizon, got %v", ub)
	}
	bm := &batchModel{in: in, m: &milp.Model{}, scale: modelHorizon / ub, h: modelHorizon}
	m, sc, H, L := bm.m, bm.scale, bm.h, in.numGranules
	head, tail, fast := in.headTail()
	maxc := 0.0
	for e := range in.problem.Edges {
		for u := range in.numDevices {
			for v := range in.numDevices {
				if d := in.comm(e, u, v, 1); !math.IsInf(d, 1) {
					maxc = math.Max(maxc, d*sc)
				}
			}
		}
	}
	M := H + maxc
	bm.x = make([][][]int, in.numNodes)
	bm.b = make([][][]int, in.numNodes)
	bm.s = make([][]int, in.numNodes)
	for i := range in.numNodes {
		nd := &in.problem.Nodes[i]
		bm.x[i] = make([][]int, in.numDevices)
		bm.b[i] = make([][]int, in.numDevices)
		bm.s[i] = make([]int, in.numDevices)
		for u := range in.numDevices {
			bm.b[i][u] = make([]int, L+1)
			bm.x[i][u] = make([]int, L)
			any := false
			for c := 0; c <= L; c++ {
				bm.b[i][u][c] = -1
				if c > 0 && in.sizeOK[u][c] && !math.IsInf(in.batchTime[i][u][c], 1) && nd.Weight+float64(c)*nd.Act <= in.capacity[u] {
					bm.b[i][u][c] = m.AddBinary(0, fmt.Sprintf("b_%d_%d_%d", i, u, c))
					any = true
				}
			}
			for l := range L {
				bm.x[i][u][l] = -1
				if any {
					bm.x[i][u][l] = m.AddBinary(0, fmt.Sprintf("x_%d_%d_%d", i, u, l))
				}
			}
			bm.s[i][u] = -1
			if any {
				hi := math.Max(H-(tail[i]+fast[i])*sc, head[i]*sc)
				bm.s[i][u] = m.AddVar(head[i]*sc, hi, 0, false, fmt.Sprintf("s_%d_%d", i, u))
			}
		}
	}
	for i, g := range in.pinnedGranules {
		for l, pu := range g {
			for u := range in.numDevices {
				if c := bm.x[i][u][l]; c >= 0 && u != pu {
					m.ColHi[c] = 0
				} else if c >= 0 {
					m.ColLo[c] = 1
				}
			}
		}
	}
	bm.c = m.AddVar(math.Min(lb*sc, H), H, 1, false, "C")
	bm.addCalls()
	// dur returns the columns and coefficients of D[i,u] (plus extra·y[i,u]).
	dur := func(i, u int, extra float64) ([]int, []float64) {
		var cols []int
		var vals []float64
		for c := 1; c <= L; c++ {
			if col := bm.b[i][u][c]; col >= 0 {
				cols, vals = append(cols, col), append(vals, in.batchTime[i][u][c]*sc+extra)
			}
		}
		return cols, vals
	}
	// call appends the batch's call c_u·o[i,u] to a row (nothing without an opener column).
	call := func(i, u int, cols []int, vals []float64, sign float64) ([]int, []float64) {
		if o := bm.o[i][u]; o >= 0 {
			cols, vals = append(cols, o), append(vals, sign*in.callCost[u]*sc)
		}
		return cols, vals
	}
	for i := range in.numNodes {
		for l := range L { // F1
			var cols []int
			for u := range in.numDevices {
				if c := bm.x[i][u][l]; c >= 0 {
					cols = append(cols, c)
				}
			}
			if len(cols) == 0 {
				return nil, invalid("node %d (%s) fits on no device", i, in.problem.Nodes[i].Name)
			}
			m.AddRow(1, 1, cols, ones(len(cols)))
		}
		for u := range in.numDevices {
			if bm.s[i][u] < 0 {
				continue
			}
			// F2
			var cols []int
			var vals []float64
			var ycols []int
			for l := range L {
				cols, vals = append(cols, bm.x[i][u][l]), append(vals, 1)
			}
			for c := 1; c <= L; c++ {
				if col := bm.b[i][u][c]; col >= 0 {
					cols, vals = append(cols, col), append(vals, -float64(c))
					ycols = append(ycols, col)
				}
			}
			m.AddRow(0, 0, cols, vals)
			m.AddRow(-milp.Inf, 1, ycols, ones(len(ycols)))
			// F3 with the tail: s + D + c·o + tail·y ≤ C
			dc, dv := dur(i, u, tail[i]*sc)
			dc, dv = call(i, u, dc, dv, 1)
			m.AddRow(-milp.Inf, 0, append([]int{bm.s[i][u], bm.c}, dc...), append([]float64{1, -1}, dv...))
		}
	}
	// Device loads, with the calls: C ≥ Σ_i D[i,u] + c_u·n_u.
	for u := range in.numDevices {
		cols, vals := []int{bm.c}, []float64{-1}
		for i := range in.numNodes {
			dc, dv := dur(i, u, 0)
			cols, vals = append(cols, dc...), append(vals, dv...)
		}
		if bm.n[u] >= 0 {
			cols, vals = append(cols, bm.n[u]), append(vals, in.callCost[u]*sc)
		}
		if len(cols) > 1 {
			m.AddRow(-milp.Inf, 0, cols, vals)
		}
	}
	// F4a and F7.
	for e, ed := range in.problem.Edges {
		i, j := ed.From, ed.To
		for u := range in.numDevices {
			if bm.s[i][u] < 0 {
				continue
			}
			dc, dv := dur(i, u, 0)
			dc, dv = call(i, u, dc, dv, 1)
			for v := range in.numDevices {
				if bm.s[j][v] < 0 {
					continue
				}
				d := in.comm(e, u, v, 1)
				for l := range L {
					xi, xj := bm.x[i][u][l], bm.x[j][v][l]
					if math.IsInf(d, 1) {
						m.AddRow(-milp.Inf, 1, []int{xi, xj}, []float64{1, 1})
						continue
					}
					// s_iu + D_iu + d − s_jv + M·x_iul + M·x_jvl ≤ 2M
					cols := append([]int{bm.s[i][u], bm.s[j][v], xi, xj}, dc...)
					vals := append([]float64{1, -1, M, M}, dv...)
					m.AddRow(-milp.Inf, 2*M-d*sc, cols, vals)
				}
			}
		}
	}
	// F5: non-overlap on each device, for pairs whose windows intersect.
	for a := range in.numNodes {
		if err := ctx.Err(); err != nil {
			return nil, err // the time is up: building the rest would only overshoot it
		}
		if maxRows > 0 && m.NumRows() > maxRows {
			return nil, errTooManyRows
		}
		for bb := a + 1; bb < in.numNodes; bb++ {
			sa, fa := head[a]*sc, H-tail[a]*sc
			sb, fb := head[bb]*sc, H-tail[bb]*sc
			if fa <= sb+1e-9 || fb <= sa+1e-9 {
				continue
			}
			for u := range in.numDevices {
				if bm.s[a][u] < 0 || bm.s[bb][u] < 0 {
					continue
				}
				d := m.AddBinary(0, fmt.Sprintf("d_%d_%d_%d", a, bb, u))
				bm.pairs = append(bm.pairs, batchPair{a, bb, u, d})
				ya, yav := dur(a, u, 0)
				yb, ybv := dur(bb, u, 0)
				// y terms: −H·y_a − H·y_b, y = Σ_c b over the sizes c of positive duration: a
				// batch that takes no time occupies no device (the simulator's semantics), so
				// it may fall inside another batch. D terms from dur with the same columns.
				occ := func(d float64) float64 {
					if d > 0 {
						return H
					}
					return 0
				}
				// δ = 1: b after a.  s_b ≥ s_a + D_a − H(1−δ) − H(2 − y_a − y_b)
				cols := []int{bm.s[bb][u], bm.s[a][u], d}
				vals := []float64{1, -1, -H}
				for x, c := range ya {
					cols, vals = append(cols, c), append(vals, -yav[x]-occ(yav[x]))
				}
				for x, c := range yb {
					cols, vals = append(cols, c), append(vals, -occ(ybv[x]))
				}
				cols, vals = call(a, u, cols, vals, -1)
				m.AddRow(-3*H, milp.Inf, cols, vals)
				// δ = 0: a after b.  s_a ≥ s_b + D_b − Hδ − H(2 − y_a − y_b)
				cols = []int{bm.s[a][u], bm.s[bb][u], d}
				vals = []float64{1, -1, H}
				for x, c := range yb {
					cols, vals = append(cols, c), append(vals, -ybv[x]-occ(ybv[x]))
				}
				for x, c := range ya {
					cols, vals = append(cols, c), append(vals, -occ(yav[x]))
				}
				cols, vals = call(bb, u, cols, vals, -1)
				m.AddRow(-2*H, milp.Inf, cols, vals)
			}
		}
	}
	// F6 memory, only where it can bind.
	for u := range in.numDevices {
		if math.IsInf(in.capacity[u], 1) {
			continue
		}
		var cols []int
		var vals []float64
		total, big := 0.0, 0.0
		for i := range in.numNodes {
			if bm.s[i][u] < 0 {
				continue
			}
			nd := &in.problem.Nodes[i]
			for l := range L {
				if nd.Act > 0 {
					cols, vals = append(cols, bm.x[i][u][l]), append(vals, nd.Act)
				}
			}
			for c := 1; c <= L; c++ {
				if col := bm.b[i][u][c]; col >= 0 && nd.Weight > 0 {
					cols, vals = append(cols, col), append(vals, nd.Weight)
				}
			}
			total += nd.Weight + float64(L)*nd.Act
			big = math.Max(big, math.Max(nd.Weight, nd.Act))
		}
		if total > in.capacity[u] && big > 0 {
			for x := range vals {
				vals[x] /= big
			}
			m.AddRow(-milp.Inf, in.capacity[u]/big, cols, vals)
		}
	}
	// Granule symmetry: the first node's granules in non-decreasing device order.
	// (Pinned granule maps break the symmetry; then there are none.)
	bm.first = -1
	if in.pinnedGranules == nil {
		bm.first = in.topo[0]
	}
	for l := 0; bm.first >= 0 && l+1 < L; l++ {
		var cols []int
		var vals []float64
		for u := range in.numDevices {
			if c := bm.x[bm.first][u][l]; c >= 0 && u > 0 {
				cols, vals = append(cols, c), append(vals, float64(u))
			}
			if c := bm.x[bm.first][u][l+1]; c >= 0 && u > 0 {
				cols, vals = append(cols, c), append(vals, -float64(u))
			}
		}
		if len(cols) > 0 {
			m.AddRow(-milp.Inf, 0, cols, vals)
		}
	}
	sym.rowsMulti(m, in, func(i, u int) []int {
		if sym.kind == SymmetryTime {
			var out []int
			for c := 1; c <= L; c++ {
				if col := bm.b[i][u][c]; col >= 0 {
					out = append(out, col)
				}
			}
			return out
		}
		if bm.s[i][u] < 0 {
			return nil
		}
		return bm.x[i][u]
	}, func(i, u, pos int) float64 {
		// pos indexes the b columns that exist, in size order.
		x := 0
		for c := 1; c <= L; c++ {
			if bm.b[i][u][c] >= 0 {
				if x == pos {
					return in.batchTime[i][u][c] * sc
				}
				x++
			}
		}
		return 0
	})
	return bm, nil
}

// addCalls adds the call columns o and n and the source rows (see the calls comment above).
func (bm *batchModel) addCalls() {
	in, m, sc, L := bm.in, bm.m, bm.scale, bm.in.numGranules
	bm.o = make([][]int, in.numNodes)
	bm.n = make([]int, in.numDevices)
	bm.exact = true
	for j := range in.numNodes {
		bm.o[j] = make([]int, in.numDevices)
		for v := range in.numDevices {
			bm.o[j][v] = -1
			if bm.s[j][v] < 0 || in.callCost[v] <= 0 {
				continue
			}
			var pos []int // b columns of the sizes of positive time
			zero := false
			for c := 1; c <= L; c++ {
				if col := bm.b[j][v][c]; col >= 0 {
					if in.batchTime[j][v][c] > 0 {
						pos = append(pos, col)
					} else {
						zero = true
					}
				}
			}
			if in.source[j] {
				if !in.sourceCalls {
					continue // sources pay no call here (split's sub-problems)
				}
				if len(in.inE[j]) > 0 || zero {
					bm.exact = false // the source may wait for a free input, or take no time
				}
				if len(pos) > 0 {
					// s[j,v] ≥ c_v·Σ_{c: t > 0} b[j,v,c]
					vals := []float64{1}
					for range pos {
						vals = append(vals, -in.callCost[v]*sc)
					}
					m.AddRow(0, milp.Inf, append([]int{bm.s[j][v]}, pos...), vals)
				}
				continue
			}
			if zero {
				bm.exact = false // a zero-time batch that opens a stage occupies v: F5 misses it
			}
			o := m.AddVar(0, 1, 0, false, fmt.Sprintf("o_%d_%d", j, v))
			bm.o[j][v] = o
			for _, e := range in.inE[j] {
				if in.free[e] {
					continue
				}
				i := in.problem.Edges[e].From
				for l := range L {
					if xi := bm.x[i][v][l]; xi >= 0 {
						m.AddRow(0, milp.Inf, []int{o, bm.x[j][v][l], xi}, []float64{1, -1, 1}) // o ≥ x[j,v,l] − x[i,v,l]
					} else {
						m.AddRow(0, milp.Inf, []int{o, bm.x[j][v][l]}, []float64{1, -1}) // o ≥ x[j,v,l]
					}
				}
			}
		}
	}
	for u := range in.numDevices {
		bm.n[u] = -1
		if in.callCost[u] <= 0 {
			continue
		}
		var ocols []int
		for i := range in.numNodes {
			if bm.s[i][u] < 0 {
				continue
			}
			if bm.n[u] < 0 {
				bm.n[u] = m.AddVar(0, float64(in.numNodes), 0, false, fmt.Sprintf("n_%d", u))
			}
			if in.sourceCalls {
				// n_u ≥ Σ_c b[i,u,c]: u used by i's batch
				cols, vals := []int{bm.n[u]}, []float64{1}
				for c := 1; c <= L; c++ {
					if col := bm.b[i][u][c]; col >= 0 {
						cols, vals = append(cols, col), append(vals, -1)
					}
				}
				m.AddRow(0, milp.Inf, cols, vals)
			}
			if bm.o[i][u] >= 0 {
				ocols = append(ocols, bm.o[i][u])
			}
		}
		if len(ocols) > 0 {
			vals := make([]float64, len(ocols)+1)
			for x := range ocols {
				vals[x] = -1
			}
			vals[len(ocols)] = 1
			m.AddRow(0, milp.Inf, append(ocols, bm.n[u]), vals) // n_u ≥ Σ_j o[j,u]
		}
	}
}

func ones(n int) []float64 {
	v := make([]float64, n)
	for x := range v {
		v[x] = 1
	}
	return v
}

// granuleCanonical permutes the granule labels of every node at once so that the first
// node's granules are in non-decreasing device order (the MILP's granule symmetry rows).
func granuleCanonical(pl *Placement, first int) *Placement {
	g0 := pl.Granules[first]
	perm := make([]int, len(g0))
	for l := range perm {
		perm[l] = l
	}
	sort.SliceStable(perm, func(a, b int) bool { return g0[perm[a]] < g0[perm[b]] })
	out := pl.Clone()
	for i := range out.Granules {
		for l := range perm {
			out.Granules[i][l] = pl.Granules[i][perm[l]]
		}
	}
	return out
}
