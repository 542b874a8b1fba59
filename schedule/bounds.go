package schedule

import (
	"context"
	"math"

	"onnxpart/internal/milp"
)

// Bound is one proved lower bound on the optimal makespan.
type Bound struct {
	Method string  `json:"method"`
	Value  float64 `json:"value"`
}

// criticalPath is the longest source-to-sink path with every node at its fastest time
// (batched: its fastest supported batch), communication ignored.
func (in *inst) criticalPath() float64 {
	head, tail, fast := in.headTail()
	best := 0.0
	for i := range in.n {
		best = math.Max(best, head[i]+fast[i]+tail[i])
	}
	return best
}

// loadBound is the LP relaxation of the devices' load: every node's L granules are split
// fractionally over the devices, each granule costing the device's best time per granule,
// and no device may be busy longer than C. Communication and precedence are ignored.
func (in *inst) loadBound(ctx context.Context) float64 {
	rate := make([][]float64, in.n)
	for i := range in.n {
		rate[i] = make([]float64, in.k)
		for u := range in.k {
			rate[i][u] = math.Inf(1)
			if in.latency() {
				rate[i][u] = in.t[i][u]
				continue
			}
			for c := 1; c <= in.l; c++ {
				if in.sizeOK[u][c] {
					rate[i][u] = math.Min(rate[i][u], in.bt[i][u][c]/float64(c))
				}
			}
		}
	}
	// Closed form for one device; otherwise an LP.
	if in.k == 1 {
		s := 0.0
		for i := range in.n {
			s += rate[i][0] * float64(in.l)
		}
		return s
	}
	m := &milp.Model{}
	// Scale to keep the coefficients near 1.
	scale := 0.0
	for i := range in.n {
		for u := range in.k {
			if !math.IsInf(rate[i][u], 1) {
				scale = math.Max(scale, rate[i][u])
			}
		}
	}
	if scale <= 0 {
		return 0
	}
	c := m.AddVar(0, milp.Inf, 1, false, "C")
	f := make([][]int, in.n)
	for i := range in.n {
		f[i] = make([]int, in.k)
		var cols []int
		for u := range in.k {
			f[i][u] = -1
			if !math.IsInf(rate[i][u], 1) {
				f[i][u] = m.AddVar(0, milp.Inf, 0, false, "")
				cols = append(cols, f[i][u])
			}
		}
		m.AddRow(float64(in.l), float64(in.l), cols, ones(len(cols)))
	}
	for u := range in.k {
		cols, vals := []int{c}, []float64{-1}
		for i := range in.n {
			if f[i][u] >= 0 && rate[i][u] > 0 {
				cols, vals = append(cols, f[i][u]), append(vals, rate[i][u]/scale)
			}
		}
		m.AddRow(-milp.Inf, 0, cols, vals)
	}
	res, err := m.Solve(ctx, milp.Options{LP: true})
	if err != nil || res.Status != milp.Optimal || math.IsInf(res.DualBound, 0) {
		// Fall back to the trivial bound Σ_i min_u rate / K.
		s := 0.0
		for i := range in.n {
			best := math.Inf(1)
			for u := range in.k {
				best = math.Min(best, rate[i][u])
			}
			s += best * float64(in.l)
		}
		return s / float64(in.k)
	}
	// The LP optimum is exact up to HiGHS's tolerances; keep a little margin.
	return math.Max(0, res.DualBound*scale*(1-1e-7))
}

// commPathBound is the critical path with devices and transfers: est[i][u], the earliest
// node i can finish on device u when no resource is ever busy, is t(i,u) plus the latest of
// its predecessors' best arrivals min_w est[p][w] + comm(p→i, w→u). Every plan's makespan is
// at least min_u est of its last nodes. (Batched: one granule at the fastest batch time, which
// every granule's own chain must also take.)
func (in *inst) commPathBound() float64 {
	fin := make([][]float64, in.n)
	best := 0.0
	for _, i := range in.topo {
		fin[i] = make([]float64, in.k)
		for u := range in.k {
			d := math.Inf(1)
			if in.latency() {
				d = in.t[i][u]
			} else {
				for c := 1; c <= in.l; c++ {
					if in.sizeOK[u][c] {
						d = math.Min(d, in.bt[i][u][c])
					}
				}
			}
			if in.pinG != nil && in.pinG[i] != nil {
				used := false
				for _, w := range in.pinG[i] {
					used = used || w == u
				}
				if !used {
					d = math.Inf(1)
				}
			}
			ready := 0.0
			for _, e := range in.inE[i] {
				p := in.p.Edges[e].From
				arr := math.Inf(1)
				for w := range in.k {
					arr = math.Min(arr, fin[p][w]+in.comm(e, w, u, 1))
				}
				ready = math.Max(ready, arr)
			}
			fin[i][u] = ready + d
		}
		if len(in.succs[i]) == 0 {
			m := math.Inf(1)
			for u := range in.k {
				m = math.Min(m, fin[i][u])
			}
			best = math.Max(best, m)
		}
	}
	if math.IsInf(best, 0) {
		return 0
	}
	return best
}

// simpleBounds are the cheap bounds: the critical paths and the load LP.
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
func (in *inst) serialHorizon() float64 {
	h := 0.0
	for i := range in.n {
		worst := 0.0
		for u := range in.k {
			for c := 1; c <= in.l; c++ {
				x := in.bt[i][u][c]
				if in.latency() {
					x = in.t[i][u]
				}
				if !math.IsInf(x, 1) {
					worst = math.Max(worst, x)
				}
			}
		}
		h += worst * float64(min(in.k, in.l)) // at most one batch per device
	}
	for e := range in.p.Edges {
		worst := 0.0
		for u := range in.k {
			for v := range in.k {
				if d := in.comm(e, u, v, in.l); !math.IsInf(d, 1) {
					worst = math.Max(worst, d)
				}
			}
		}
		h += worst * float64(min(in.l, in.k*in.k)) // messages per edge
	}
	return h
}
