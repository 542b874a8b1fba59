package partition

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/onnxpart/onnxpart/internal/milp"
)

// reachWork returns, for every core node v, the smallest possible work of its ancestors plus
// itself (anc) and of its descendants plus itself (desc), or nil when n is too large for the
// O(n²/64) bit sets.
func (c *core) reachWork() (anc, desc []float64) {
	if c.n > 30000 {
		return nil, nil
	}
	var ks kahnScratch
	order := c.kahn(make([]float64, c.n), &ks, make([]int32, 0, c.n))
	words := (c.n + 63) / 64
	sum := func(row []uint64) float64 {
		s := 0.0
		for wi, x := range row {
			for x != 0 {
				b := bits.TrailingZeros64(x)
				s += c.minWork[wi*64+b]
				x &= x - 1
			}
		}
		return s
	}
	set := make([]uint64, c.n*words)
	anc = make([]float64, c.n)
	for _, v := range order {
		row := set[int(v)*words : int(v+1)*words]
		row[v/64] |= 1 << (uint(v) % 64)
		for _, p := range c.predOf(int(v)) {
			prow := set[int(p)*words : int(p+1)*words]
			for i := range row {
				row[i] |= prow[i]
			}
		}
		anc[v] = sum(row)
	}
	for i := range set {
		set[i] = 0
	}
	desc = make([]float64, c.n)
	for i := len(order) - 1; i >= 0; i-- {
		v := order[i]
		row := set[int(v)*words : int(v+1)*words]
		row[v/64] |= 1 << (uint(v) % 64)
		for _, s := range c.succOf(int(v)) {
			srow := set[int(s)*words : int(s+1)*words]
			for i := range row {
				row[i] |= srow[i]
			}
		}
		desc[v] = sum(row)
	}
	return anc, desc
}

// lin is an affine expression cst + Σ vals·cols over model columns.
type lin struct {
	cst  float64
	cols []int
	vals []float64
}

func (e *lin) add(col int, val float64) {
	if val == 0 {
		return
	}
	e.cols = append(e.cols, col)
	e.vals = append(e.vals, val)
}

// maxVal is the largest value of e with every column in [0, 1].
func (e *lin) maxVal() float64 {
	m := e.cst
	for _, v := range e.vals {
		if v > 0 {
			m += v
		}
	}
	return m
}

// mipSpec describes one model of the MIP hierarchy. All of them use the y-formulation of
// seed 000 §3.1 with x eliminated (digest §3.2.1): y[v][b] = 1 iff v lies in model block ≤ b,
// X(v,b) = y[v][b] − y[v][b−1]; y binary, the cut variables c[t][b] and the bottleneck z
// continuous.
type mipSpec struct {
	name string
	K    int       // model blocks
	dev  []int     // device of each model block
	span []int     // how many pipeline stages each model block stands for (superblocks)
	mult []float64 // row mult[b]·z ≥ block[b] (0: no row)
	// objBlock ≥ 0 minimises block[objBlock] itself (the three-superblock bound) instead of z.
	objBlock int
	// heavy ≥ 0 adds Eq. (14): work(block[heavy]) ≥ heavyL.
	heavy  int
	heavyL float64
	// target T > 0 fixes variables valid for every plan of value ≤ T (see windows).
	target float64
	zLo    float64 // a valid lower bound on the objective: the floor of the bound reported (not z's column bound, see buildMIP)
	scale  float64
	// fixLo/fixHi, when set, confine core node v to model blocks fixLo[v]..fixHi[v] (1-based):
	// the large-neighbourhood sub-MIPs of lns.go fix every node outside their window.
	fixLo, fixHi []int
	// maxNodes caps branch and bound (0: none); a deterministic effort limit.
	maxNodes int
}

// blockMIP is a built model with the maps needed to decode and warm-start it.
type blockMIP struct {
	spec   mipSpec
	c      *core
	m      *milp.Model
	ycol   [][]int  // ycol[v][b], b = 0..K; −1 when constant
	yval   [][]int8 // constant value when ycol = −1
	ccol   map[[2]int]int
	blocks []lin    // block cost expressions (scaled)
	ovf    [][2]int // overflow column and its defining row
	z      int
	// infeasible is set when the fixings alone prove that no plan has value ≤ target.
	infeasible bool
}

// windows computes, for each node, the model blocks it may occupy in a plan of value ≤ T.
// If v lies in model block ≤ b, all its ancestors lie in the first span(1..b) pipeline stages,
// each of cost ≤ T, so work(anc(v) ∪ {v}) ≤ span(1..b)·T; symmetrically for descendants and
// the stages after b (highs-mtpp.md, "variable fixing"). Superblocks standing for zero
// stages (bottleneck-guess with j = 1 or j = k) must be empty.
func (m *blockMIP) windows(anc, desc []float64) (lo, hi []int) {
	c, s := m.c, m.spec
	K := s.K
	lo = make([]int, c.n)
	hi = make([]int, c.n)
	before := make([]int, K+1)
	for b := 1; b <= K; b++ {
		before[b] = before[b-1] + s.span[b-1]
	}
	total := before[K]
	T := s.target * (1 + 1e-9)
	for v := 0; v < c.n; v++ {
		lo[v], hi[v] = 1, K
		for lo[v] < K && s.span[lo[v]-1] == 0 {
			lo[v]++
		}
		for hi[v] > 1 && s.span[hi[v]-1] == 0 {
			hi[v]--
		}
		if anc == nil || !(T > 0) || math.IsInf(T, 1) {
			continue
		}
		for lo[v] < K && anc[v] > float64(before[lo[v]])*T {
			lo[v]++
		}
		for hi[v] > 1 && desc[v] > float64(total-before[hi[v]-1])*T {
			hi[v]--
		}
	}
	if s.fixLo != nil {
		for v := 0; v < c.n; v++ {
			lo[v] = max(lo[v], s.fixLo[v])
			hi[v] = min(hi[v], s.fixHi[v])
		}
	}
	// Propagate along edges: lo non-decreasing and hi non-increasing in DAG order.
	var ks kahnScratch
	order := c.kahn(make([]float64, c.n), &ks, make([]int32, 0, c.n))
	for _, v := range order {
		for _, w := range c.succOf(int(v)) {
			if lo[w] < lo[v] {
				lo[w] = lo[v]
			}
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		v := order[i]
		for _, w := range c.succOf(int(v)) {
			if hi[v] > hi[w] {
				hi[v] = hi[w]
			}
		}
	}
	return lo, hi
}

// buildMIP builds the model for spec; anc/desc come from reachWork.
func (c *core) buildMIP(spec mipSpec, anc, desc []float64) *blockMIP {
	K := spec.K
	m := &blockMIP{spec: spec, c: c, m: &milp.Model{}, ccol: map[[2]int]int{}}
	lo, hi := m.windows(anc, desc)
	for v := 0; v < c.n; v++ {
		if lo[v] > hi[v] {
			m.infeasible = true
			return m
		}
	}
	mod := m.m
	sc := spec.scale
	// Columns.
	if spec.objBlock < 0 {
		// zLo is only the floor of the bound reported, not z's lower bound: with z ≥ zLo above
		// the LP's value the objective is flat at zLo wherever the LP is below it, so
		// branching gets no signal from it (pseudocosts stay zero) and nothing is pruned by
		// bound until the LP passes zLo. The probes (probe.go) suffer most, their zLo being
		// just below their target: on regal-1 at k = 8 a probe at 0.863 of the best plan
		// took 15.6 s with z ≥ 0.855 of it and 7.9 s with z ≥ 0; regal-45 at T = 3150,
		// 76 s with z ≥ 3078 and 45 s with z ≥ 0. The exact bound (60 s, one core) on the
		// eight weakest REGAL-like graphs at k = 8 (1, 4, 11, 24, 30, 40, 44, 45): equal
		// or higher on all eight, geometric mean 0.8799 → 0.8870 of Solve's plan.
		m.z = mod.AddVar(0, milp.Inf, 1, false, "z")
	} else {
		m.z = -1
	}
	m.ycol = make([][]int, c.n)
	m.yval = make([][]int8, c.n)
	for v := 0; v < c.n; v++ {
		m.ycol[v] = make([]int, K+1)
		m.yval[v] = make([]int8, K+1)
		for b := 0; b <= K; b++ {
			m.ycol[v][b] = -1
			switch {
			case b < lo[v]:
				m.yval[v][b] = 0
			case b >= hi[v]:
				m.yval[v][b] = 1
			default:
				m.ycol[v][b] = mod.AddBinary(0, fmt.Sprintf("y_%d_%d", v, b))
			}
		}
	}
	// y(v,b) as an expression added into e with factor f.
	addY := func(e *lin, v, b int, f float64) {
		if col := m.ycol[v][b]; col >= 0 {
			e.add(col, f)
		} else {
			e.cst += f * float64(m.yval[v][b])
		}
	}
	addX := func(e *lin, v, b int, f float64) {
		addY(e, v, b, f)
		addY(e, v, b-1, -f)
	}
	// Monotonicity: y[v][b−1] ≤ y[v][b].
	for v := 0; v < c.n; v++ {
		for b := 1; b < K; b++ {
			a, bb := m.ycol[v][b-1], m.ycol[v][b]
			if a >= 0 && bb >= 0 {
				mod.AddRow(0, milp.Inf, []int{bb, a}, []float64{1, -1})
			}
		}
	}
	// DAG rows (8): y[u][b] ≥ y[w][b] for u → w.
	for u := 0; u < c.n; u++ {
		for _, w := range c.succOf(u) {
			for b := 1; b < K; b++ {
				var e lin
				addY(&e, u, b, 1)
				addY(&e, int(w), b, -1)
				if len(e.cols) == 0 {
					continue
				}
				if e.cst >= 0 && len(e.cols) == 1 && e.vals[0] > 0 {
					continue
				}
				mod.AddRow(-e.cst, milp.Inf, e.cols, e.vals)
			}
		}
	}
	// Cut rows (9)/(10), one cut variable per tensor and block.
	cutCol := func(t, b int) int {
		k := [2]int{t, b}
		if col, ok := m.ccol[k]; ok {
			return col
		}
		col := mod.AddVar(0, 1, 0, false, fmt.Sprintf("c_%d_%d", t, b))
		m.ccol[k] = col
		return col
	}
	// A sub-MIP of lns.go fixes most nodes: a cut term without columns is a constant, kept
	// out of the model (cconst) so that the model does not depend on where the fixed nodes
	// outside its window lie.
	cconst := map[[2]int]bool{}
	// addCut adds c[t][b] ≥ rhs. plain is the textbook form of the same condition: when its
	// largest value is ≤ 0 the term is never charged (and rhs ≤ 0 follows from the DAG rows
	// even in the LP); when it has no columns it is a constant of the sub-MIP.
	addCut := func(t, b int, plain, rhs lin) {
		if plain.maxVal() <= 1e-12 {
			return
		}
		if spec.fixLo != nil && len(plain.cols) == 0 {
			cconst[[2]int{t, b}] = true
			return
		}
		col := cutCol(t, b)
		cols := append([]int{col}, rhs.cols...)
		vals := []float64{1}
		for _, v := range rhs.vals {
			vals = append(vals, -v)
		}
		mod.AddRow(rhs.cst, milp.Inf, cols, vals)
	}
	for t := range c.tProd {
		u := int(c.tProd[t])
		for _, w32 := range c.consOf(t) {
			w := int(w32)
			for b := 1; b <= K; b++ {
				// Because the DAG rows keep u in a block ≤ w's, "u before b and w in b"
				// is X(w,b) − X(u,b) ≥ 1 and "u in b and w after b" is X(u,b) − X(w,b) ≥ 1
				// at integer points. These rows are tighter than the textbook
				// y(u,b−1) + X(w,b) − 1 and X(u,b) − y(w,b) (Eqs. (9)/(10)) by 1 − y(u,b)
				// and y(w,b−1) respectively, and equal to them at integer points.
				if b >= 2 { // input: u before b and w in b
					var plain, e lin
					addY(&plain, u, b-1, 1)
					addX(&plain, w, b, 1)
					plain.cst--
					addX(&e, w, b, 1)
					addX(&e, u, b, -1)
					addCut(t, b, plain, e)
				}
				if b <= K-1 { // output: u in b and w after b
					var plain, e lin
					addX(&plain, u, b, 1)
					addY(&plain, w, b, -1)
					addX(&e, u, b, 1)
					addX(&e, w, b, -1)
					addCut(t, b, plain, e)
				}
			}
		}
	}
	// Block cost expressions (7), scaled.
	m.blocks = make([]lin, K)
	for b := 1; b <= K; b++ {
		d := spec.dev[b-1]
		e := &m.blocks[b-1]
		for v := 0; v < c.n; v++ {
			if w := c.work[d][v]; w != 0 && b >= lo[v] && b <= hi[v] {
				addX(e, v, b, w/sc)
			}
		}
		if coef := c.coef[d]; coef > 0 {
			for t := range c.tProd {
				if col, ok := m.ccol[[2]int{t, b}]; ok {
					if v := coef * c.tSize[t] / sc; v > 1e-12 {
						e.add(col, v)
					}
				} else if cconst[[2]int{t, b}] {
					if v := coef * c.tSize[t] / sc; v > 1e-12 {
						e.cst += v
					}
				}
			}
		}
		// Overflow (2) with peak = 0, and hard memory caps, for single-stage blocks.
		if spec.span[b-1] == 1 {
			var pe lin
			for v := 0; v < c.n; v++ {
				if p := c.params[v]; p != 0 && b >= lo[v] && b <= hi[v] {
					addX(&pe, v, b, p)
				}
			}
			if spec.fixLo != nil && len(pe.cols) == 0 {
				// Constant (see cconst): the incumbent, a valid plan, meets the cap.
				if M := c.memM[d]; M > 0 && c.coef[d] > 0 && pe.cst > M {
					e.cst += c.coef[d] / sc * (pe.cst - M)
				}
			} else if len(pe.cols) > 0 || pe.cst != 0 {
				if cp := c.memCap[d]; !math.IsInf(cp, 1) && pe.maxVal() > cp {
					mod.AddRow(math.Inf(-1), cp-pe.cst, pe.cols, pe.vals)
				}
				if M := c.memM[d]; M > 0 && c.coef[d] > 0 && pe.maxVal() > M {
					ovf := mod.AddVar(0, milp.Inf, 0, false, fmt.Sprintf("ovf_%d", b))
					// ovf ≥ coef·(params − M)/scale
					cols := []int{ovf}
					vals := []float64{1}
					f := c.coef[d] / sc
					for i, col := range pe.cols {
						cols = append(cols, col)
						vals = append(vals, -pe.vals[i]*f)
					}
					row := mod.AddRow((pe.cst-M)*f, milp.Inf, cols, vals)
					m.ovf = append(m.ovf, [2]int{ovf, row})
					e.add(ovf, 1)
				}
			}
		}
	}
	// Bottleneck rows (6) or the block objective.
	for b := 0; b < K; b++ {
		e := m.blocks[b]
		if spec.objBlock == b {
			for i, col := range e.cols {
				mod.Obj[col] += e.vals[i]
			}
			continue
		}
		if spec.mult[b] == 0 || m.z < 0 {
			continue
		}
		cols := append([]int{m.z}, e.cols...)
		vals := []float64{spec.mult[b]}
		for _, v := range e.vals {
			vals = append(vals, -v)
		}
		mod.AddRow(e.cst, milp.Inf, cols, vals)
	}
	// Eq. (14): the middle block carries work ≥ L.
	if spec.heavy >= 0 {
		var e lin
		b := spec.heavy + 1
		d := spec.dev[spec.heavy]
		for v := 0; v < c.n; v++ {
			if w := c.work[d][v]; w != 0 && b >= lo[v] && b <= hi[v] {
				addX(&e, v, b, w/sc)
			}
		}
		if e.maxVal() < spec.heavyL/sc*(1-1e-9) {
			m.infeasible = true
			return m
		}
		if len(e.cols) > 0 {
			mod.AddRow(spec.heavyL/sc*(1-1e-9)-e.cst, milp.Inf, e.cols, e.vals)
		}
	}
	return m
}

// start returns a MIP start from a plan's model-block assignment (1-based blocks), or nil if
// the plan violates the fixings.
func (m *blockMIP) start(block []int) []float64 {
	x := make([]float64, m.m.NumVars())
	K := m.spec.K
	for v := 0; v < m.c.n; v++ {
		for b := 0; b <= K; b++ {
			val := 0.0
			if block[v] <= b {
				val = 1
			}
			if col := m.ycol[v][b]; col >= 0 {
				x[col] = val
			} else if float64(m.yval[v][b]) != val {
				return nil
			}
		}
	}
	c := m.c
	for k, col := range m.ccol {
		t, b := k[0], k[1]
		in, all := block[c.tProd[t]] == b, block[c.tProd[t]] == b
		for _, g := range c.consOf(t) {
			if block[g] == b {
				in = true
			} else {
				all = false
			}
		}
		if in && !all {
			x[col] = 1
		}
	}
	// Overflow columns from their defining rows, then z from the block rows.
	for _, or := range m.ovf {
		col, row := or[0], or[1]
		val := m.m.RowLo[row]
		for k := 1; k < len(m.m.RowCols[row]); k++ {
			val -= m.m.RowVals[row][k] * x[m.m.RowCols[row][k]]
		}
		x[col] = math.Max(0, val)
	}
	if m.z >= 0 {
		z := 0.0
		for b := range m.blocks {
			e := m.blocks[b]
			val := e.cst
			for i, col := range e.cols {
				val += e.vals[i] * x[col]
			}
			if m.spec.mult[b] > 0 {
				z = math.Max(z, val/m.spec.mult[b])
			}
		}
		x[m.z] = math.Max(z, m.m.ColLo[m.z])
	}
	return x
}

// decode reads the model-block of every node from a solution.
func (m *blockMIP) decode(x []float64) []int {
	K := m.spec.K
	block := make([]int, m.c.n)
	for v := range block {
		block[v] = K
		for b := 1; b < K; b++ {
			y := float64(m.yval[v][b])
			if col := m.ycol[v][b]; col >= 0 {
				y = x[col]
			}
			if y > 0.5 {
				block[v] = b
				break
			}
		}
	}
	return block
}

// mipOutcome is what one MIP contributed.
type mipOutcome struct {
	name    string
	bound   float64 // valid lower bound on OPT (already min'ed with the target)
	status  string
	seconds float64
	plan    []int // decoded stage per core node (0-based pipeline positions), when a solution exists
	value   float64
	vars    int
	rows    int
	fault   string
}

// proved reports whether the outcome proves its bound: an optimum, or nothing below the target.
func (o mipOutcome) proved() bool {
	return o.status == "optimal" || o.status == "infeasible" || o.status == "fixings-infeasible"
}

// failed reports a solver error or a caught solver fault (the bound is then only zLo).
func (o mipOutcome) failed() bool {
	return o.fault != "" || o.status == "error" || o.status == "fault"
}

// solveMIP builds and solves spec, returning a valid lower bound: min(target, dual bound),
// or target when the fixings or the cutoff prove that no plan of value below target exists.
func (c *core) solveMIP(ctx context.Context, spec mipSpec, anc, desc []float64, start []int, limit time.Duration, relGap float64) mipOutcome {
	t0 := time.Now()
	out := mipOutcome{name: spec.name, bound: spec.zLo}
	m := c.buildMIP(spec, anc, desc)
	target := spec.target
	if math.IsInf(target, 1) || target <= 0 {
		target = math.Inf(1)
	}
	if m.infeasible {
		out.bound = math.Max(spec.zLo, target)
		if math.IsInf(out.bound, 1) {
			out.bound = spec.zLo
		}
		out.status = "fixings-infeasible"
		out.seconds = time.Since(t0).Seconds()
		return out
	}
	out.vars, out.rows = m.m.NumVars(), m.m.NumRows()
	if limit <= 0 {
		out.status = "time-limit"
		out.seconds = time.Since(t0).Seconds()
		return out
	}
	opt := milp.Options{TimeLimit: limit, RelGap: relGap, Seed: 1, MaxNodes: spec.maxNodes}
	if relGap <= 0 {
		opt.RelGap = 1e-9
		opt.AbsGap = 1e-12
	}
	if start != nil {
		opt.Start = m.start(start)
	}
	if !math.IsInf(target, 1) && opt.Start == nil {
		opt.Cutoff = target / spec.scale * (1 + 1e-9)
		opt.HasCutoff = true
	}
	res, err := m.m.Solve(ctx, opt)
	out.seconds = time.Since(t0).Seconds()
	if err != nil || res == nil {
		out.status = "error"
		if err != nil {
			out.fault = err.Error()
		}
		return out
	}
	out.status = res.Status.String()
	dual := res.DualBound * spec.scale
	switch {
	case res.Status == milp.Infeasible && opt.HasCutoff:
		dual = target // nothing better than the cutoff: the target is a bound
	case res.Status == milp.Infeasible || res.Status == milp.Error:
		// Every MTPP model has a feasible plan (one stage), so "infeasible" without a cutoff
		// is a solver fault: it proves nothing.
		out.status = "fault"
		out.fault = "HiGHS reported " + res.Status.String() + " for a model that has feasible plans"
		out.bound = spec.zLo
		return out
	}
	if math.IsNaN(dual) || math.IsInf(dual, -1) {
		dual = math.Inf(-1)
	}
	if res.HasSolution && len(res.X) == m.m.NumVars() {
		// The reported objective must be the incumbent's value (highs-mtpp.md: a presolve
		// fault can return a wrong "optimal"); a mismatch makes the dual bound unproved.
		val := 0.0
		for j, cst := range m.m.Obj {
			val += cst * res.X[j]
		}
		if math.Abs(val-res.Objective) > 1e-6*math.Max(1, math.Abs(val)) {
			out.status = "fault"
			out.fault = fmt.Sprintf("HiGHS reported objective %.9g but its solution is worth %.9g: the bound is not proved", res.Objective*spec.scale, val*spec.scale)
			out.bound = spec.zLo
			return out
		}
	}
	b := math.Min(dual, target)
	out.bound = math.Max(spec.zLo, b)
	if res.HasSolution {
		out.plan = m.decode(res.X)
		out.value = res.Objective * spec.scale
	}
	return out
}
