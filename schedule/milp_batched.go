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
// Stage calls (Device.CallCost) are left out of this model: a batch's priced duration is its
// batch time plus at most one call, so every plan's priced makespan is at least its makespan
// here and the optimum (and dual bound) stays a lower bound; with calls the model is used as
// a relaxation (mipRun.relaxed) and the simulator prices its plan. The calls enter the bounds
// (bounds.go) and every heuristic through the simulator.

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
	first int // the node whose granules are ordered
}

type batchPair struct{ i, j, u, col int }

func (in *inst) buildBatched(ctx context.Context, ub, lb float64, sym symmetry) (*batchModel, error) {
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
			// F3 with the tail: s + D + tail·y ≤ C
			dc, dv := dur(i, u, tail[i]*sc)
			m.AddRow(-milp.Inf, 0, append([]int{bm.s[i][u], bm.c}, dc...), append([]float64{1, -1}, dv...))
		}
	}
	// Device loads.
	for u := range in.numDevices {
		cols, vals := []int{bm.c}, []float64{-1}
		for i := range in.numNodes {
			dc, dv := dur(i, u, 0)
			cols, vals = append(cols, dc...), append(vals, dv...)
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
