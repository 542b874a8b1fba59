package schedule

import (
	"context"
	"fmt"
	"math"

	"github.com/onnxpart/onnxpart/internal/milp"
)

// The latency MILP of Moirai (seed 004 §III-D, digest-004 §4), generalised to our cost model.
// Every edge that may need a transfer becomes a communication task q with its own start S_q;
// its duration is Σ_{a≠b} pc_q(a,b)·u_qab where u_qab ≥ x_ia + x_jb − 1 picks the link (eq. (7)).
// Operators on one device do not overlap (eq. (6)), only for pairs not ordered by reachability;
// with congestion, transfers leaving (entering) one device do not overlap (eq. (8)), only for
// pairs not ordered in the augmented graph. Memory is eq. (5). Big-M is the horizon H = the
// best heuristic's makespan (digest-004 §4.8), and times are scaled so that H = 1000.
//
// Valid inequalities added on top (they cut no schedule of makespan ≤ H): S_i ≥ head_i and
// T ≥ C_i + tail_i (critical paths with the fastest times), T ≥ each device's busy time, T ≥
// each device's egress and ingress time under congestion, and T ≥ a proved lower bound.

const modelHorizon = 1000.0

type latModel struct {
	in    *inst
	m     *milp.Model
	scale float64 // model time = scale × problem time
	h     float64 // horizon in model units
	x     [][]int // x[i][u] column, −1 when fixed to 0
	s     []int   // op start
	t     int     // makespan
	q     []int   // per edge: its communication task index, −1 if none
	qe    []int   // per task: edge
	qs    []int   // per task: start column
	// per task: the link columns u_qab with their durations (model units)
	qu    [][]linkVar
	opPr  []pairVar
	comPr []pairVar
}

type linkVar struct {
	a, b, col int
	d         float64
}

type pairVar struct{ i, j, col int }

// headTail returns, per node, the longest path of fastest times before it (head) and after
// it (tail), and the fastest time itself (batched: the fastest batch of any supported size).
func (in *inst) headTail() (head, tail, fast []float64) {
	head = make([]float64, in.numNodes)
	tail = make([]float64, in.numNodes)
	fast = make([]float64, in.numNodes)
	for i := range in.numNodes {
		fast[i] = math.Inf(1)
		for u := range in.numDevices {
			if in.latency() {
				fast[i] = math.Min(fast[i], in.granuleTime[i][u])
				continue
			}
			for c := 1; c <= in.numGranules; c++ {
				if in.sizeOK[u][c] {
					fast[i] = math.Min(fast[i], in.batchTime[i][u][c])
				}
			}
		}
	}
	for _, i := range in.topo {
		for _, j := range in.succs[i] {
			head[j] = math.Max(head[j], head[i]+fast[i])
		}
	}
	for x := in.numNodes - 1; x >= 0; x-- {
		i := in.topo[x]
		for _, j := range in.succs[i] {
			tail[i] = math.Max(tail[i], tail[j]+fast[j])
		}
	}
	return head, tail, fast
}

// buildLatency builds the model for horizon ub (problem units; the makespan of a known
// feasible plan) and lower bound lb.
func (in *inst) buildLatency(ctx context.Context, ub, lb float64, sym symmetry) (*latModel, error) {
	if !(ub > 0) || math.IsInf(ub, 0) {
		return nil, fmt.Errorf("schedule: latency MILP needs a finite positive horizon, got %v", ub)
	}
	lm := &latModel{in: in, m: &milp.Model{}, scale: modelHorizon / ub, h: modelHorizon}
	m := lm.m
	sc := lm.scale
	H := lm.h
	head, tail, fast := in.headTail()
	p := func(i, u int) float64 { return in.granuleTime[i][u] * sc }

	lm.x = make([][]int, in.numNodes)
	for i := range in.numNodes {
		lm.x[i] = make([]int, in.numDevices)
		var cols []int
		var vals []float64
		for u := range in.numDevices {
			lm.x[i][u] = -1
			if !in.canRun(i, u) || in.problem.Nodes[i].Weight+in.problem.Nodes[i].Act > in.capacity[u] {
				continue
			}
			lm.x[i][u] = m.AddBinary(0, fmt.Sprintf("x_%d_%d", i, u))
			cols = append(cols, lm.x[i][u])
			vals = append(vals, 1)
		}
		if len(cols) == 0 {
			return nil, invalid("node %d (%s) fits on no device", i, in.problem.Nodes[i].Name)
		}
		m.AddRow(1, 1, cols, vals) // eq. (4c)
	}
	lm.s = make([]int, in.numNodes)
	for i := range in.numNodes {
		hi := math.Max(H-(tail[i]+fast[i])*sc, head[i]*sc)
		lm.s[i] = m.AddVar(head[i]*sc, hi, 0, false, fmt.Sprintf("S_%d", i))
	}
	lm.t = m.AddVar(math.Min(lb*sc, H), H, 1, false, "T")

	// Communication tasks, eq. (7).
	lm.q = make([]int, len(in.problem.Edges))
	for e, ed := range in.problem.Edges {
		lm.q[e] = -1
		i, j := ed.From, ed.To
		var links []linkVar
		for a := range in.numDevices {
			if lm.x[i][a] < 0 {
				continue
			}
			for b := range in.numDevices {
				if a == b || lm.x[j][b] < 0 {
					continue
				}
				d := in.comm(e, a, b, 1)
				if math.IsInf(d, 1) {
					m.AddRow(-milp.Inf, 1, []int{lm.x[i][a], lm.x[j][b]}, []float64{1, 1}) // no route
					continue
				}
				if d > 0 {
					links = append(links, linkVar{a: a, b: b, d: d * sc})
				}
			}
		}
		if len(links) == 0 {
			// Precedence without transfer, eq. (4a)+(4b).
			c, v := filterCols(append([]int{lm.s[i], lm.s[j]}, lm.x[i]...), append([]float64{1, -1}, scaledRow(in.granuleTime[i], sc, lm.x[i])...))
			m.AddRow(-milp.Inf, 0, c, v)
			continue
		}
		qi := len(lm.qe)
		lm.q[e] = qi
		lm.qe = append(lm.qe, e)
		lo := (head[i] + fast[i]) * sc
		qs := m.AddVar(lo, math.Max(H-(tail[j]+fast[j])*sc, lo), 0, false, fmt.Sprintf("Sq_%d", e))
		lm.qs = append(lm.qs, qs)
		for x := range links {
			lk := &links[x]
			lk.col = m.AddVar(0, 1, 0, false, fmt.Sprintf("u_%d_%d_%d", e, lk.a, lk.b))
			// u ≥ x_ia + x_jb − 1
			m.AddRow(-1, milp.Inf, []int{lk.col, lm.x[i][lk.a], lm.x[j][lk.b]}, []float64{1, -1, -1})
		}
		lm.qu = append(lm.qu, links)
		// C_i ≤ S_q (4a)
		cols, vals := filterCols(append([]int{lm.s[i], qs}, lm.x[i]...), append([]float64{1, -1}, scaledRow(in.granuleTime[i], sc, lm.x[i])...))
		m.AddRow(-milp.Inf, 0, cols, vals)
		// C_q ≤ S_j
		cols, vals = []int{qs, lm.s[j]}, []float64{1, -1}
		for _, lk := range links {
			cols = append(cols, lk.col)
			vals = append(vals, lk.d)
		}
		m.AddRow(-milp.Inf, 0, cols, vals)
	}

	// Makespan with tails, device loads.
	for i := range in.numNodes {
		cols, vals := filterCols(append([]int{lm.s[i], lm.t}, lm.x[i]...), append([]float64{1, -1}, scaledRow(in.granuleTime[i], sc, lm.x[i])...))
		m.AddRow(-milp.Inf, -tail[i]*sc, cols, vals)
	}
	for u := range in.numDevices {
		cols, vals := []int{lm.t}, []float64{-1}
		for i := range in.numNodes {
			if lm.x[i][u] >= 0 && p(i, u) > 0 {
				cols = append(cols, lm.x[i][u])
				vals = append(vals, p(i, u))
			}
		}
		if len(cols) > 1 {
			m.AddRow(-milp.Inf, 0, cols, vals)
		}
	}
	if in.problem.Congestion {
		for u := range in.numDevices {
			egC, egV := []int{lm.t}, []float64{-1}
			inC, inV := []int{lm.t}, []float64{-1}
			for qi := range lm.qe {
				for _, lk := range lm.qu[qi] {
					if lk.a == u {
						egC, egV = append(egC, lk.col), append(egV, lk.d)
					}
					if lk.b == u {
						inC, inV = append(inC, lk.col), append(inV, lk.d)
					}
				}
			}
			if len(egC) > 1 {
				m.AddRow(-milp.Inf, 0, egC, egV)
			}
			if len(inC) > 1 {
				m.AddRow(-milp.Inf, 0, inC, inV)
			}
		}
	}

	// Memory, eq. (5): only rows that can bind.
	for u := range in.numDevices {
		if math.IsInf(in.capacity[u], 1) {
			continue
		}
		var cols []int
		var vals []float64
		total, big := 0.0, 0.0
		for i := range in.numNodes {
			if lm.x[i][u] < 0 {
				continue
			}
			w := in.problem.Nodes[i].Weight + in.problem.Nodes[i].Act
			if w > 0 {
				cols, vals = append(cols, lm.x[i][u]), append(vals, w)
				total += w
				big = math.Max(big, w)
			}
		}
		if total > in.capacity[u] {
			for x := range vals {
				vals[x] /= big
			}
			m.AddRow(-milp.Inf, in.capacity[u]/big, cols, vals)
		}
	}

	// Eq. (6): operators on one device do not overlap, for incomparable pairs whose time
	// windows [head, H − tail] intersect.
	win := func(i int) (float64, float64) { return head[i] * sc, H - tail[i]*sc }
	for a := range in.numNodes {
		if err := ctx.Err(); err != nil {
			return nil, err // the time is up: building the rest would only overshoot it
		}
		for b := a + 1; b < in.numNodes; b++ {
			if in.comparable(a, b) {
				continue
			}
			sa, fa := win(a)
			sb, fb := win(b)
			if fa <= sb+1e-9 || fb <= sa+1e-9 {
				continue
			}
			var devs []int
			for u := range in.numDevices {
				if lm.x[a][u] >= 0 && lm.x[b][u] >= 0 && p(a, u) > 0 && p(b, u) > 0 {
					devs = append(devs, u)
				}
			}
			if len(devs) == 0 {
				continue
			}
			d := m.AddBinary(0, fmt.Sprintf("d_%d_%d", a, b))
			lm.opPr = append(lm.opPr, pairVar{a, b, d})
			for _, u := range devs {
				xa, xb := lm.x[a][u], lm.x[b][u]
				// δ = 1: b after a.  S_b ≥ S_a + p_a − H(1−δ) − H(2 − x_a − x_b)
				m.AddRow(-3*H, milp.Inf, []int{lm.s[b], lm.s[a], xa, d, xb}, []float64{1, -1, -p(a, u) - H, -H, -H})
				// δ = 0: a after b.  S_a ≥ S_b + p_b − Hδ − H(2 − x_a − x_b)
				m.AddRow(-2*H, milp.Inf, []int{lm.s[a], lm.s[b], xb, d, xa}, []float64{1, -1, -p(b, u) - H, H, -H})
			}
		}
	}

	// Eq. (8): congestion, per-device egress and ingress.
	if in.problem.Congestion {
		nq := len(lm.qe)
		qwin := func(qi int) (float64, float64) {
			ed := in.problem.Edges[lm.qe[qi]]
			return (head[ed.From] + fast[ed.From]) * sc, H - (tail[ed.To]+fast[ed.To])*sc
		}
		for q1 := range nq {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			e1 := in.problem.Edges[lm.qe[q1]]
			for q2 := q1 + 1; q2 < nq; q2++ {
				e2 := in.problem.Edges[lm.qe[q2]]
				// q1 = a→b precedes q2 = c→d in the augmented graph iff b = c or b reaches c.
				if e1.To == e2.From || in.reach[e1.To].has(e2.From) || e2.To == e1.From || in.reach[e2.To].has(e1.From) {
					continue
				}
				s1, f1 := qwin(q1)
				s2, f2 := qwin(q2)
				if f1 <= s2+1e-9 || f2 <= s1+1e-9 {
					continue
				}
				d := -1
				for k := range in.numDevices {
					for _, egress := range []bool{true, false} {
						var l1, l2 []linkVar
						for _, lk := range lm.qu[q1] {
							if (egress && lk.a == k) || (!egress && lk.b == k) {
								l1 = append(l1, lk)
							}
						}
						for _, lk := range lm.qu[q2] {
							if (egress && lk.a == k) || (!egress && lk.b == k) {
								l2 = append(l2, lk)
							}
						}
						if len(l1) == 0 || len(l2) == 0 {
							continue
						}
						if d < 0 {
							d = m.AddBinary(0, fmt.Sprintf("dq_%d_%d", lm.qe[q1], lm.qe[q2]))
							lm.comPr = append(lm.comPr, pairVar{q1, q2, d})
						}
						// Bracket E = x_on1 + x_on2 − x_off1 − x_off2 − 2: 0 iff both transfers
						// use k on this side, ≤ −1 otherwise.
						on1, off1 := e1.From, e1.To
						on2, off2 := e2.From, e2.To
						if !egress {
							on1, off1, on2, off2 = off1, on1, off2, on2
						}
						if lm.zeroLink(q1, k, egress) || lm.zeroLink(q2, k, egress) {
							// A transfer may take no time on some pair of devices through k
							// (explicit times with a zero): it then holds no port, as in the
							// simulator. The bracket becomes E = Σ u(q1 on k) + Σ u(q2 on k) − 2
							// over the links of positive duration, 0 iff both take time on k.
							cols := []int{lm.qs[q2], lm.qs[q1], d}
							vals := []float64{1, -1, -H}
							for _, lk := range l1 {
								cols, vals = append(cols, lk.col), append(vals, -lk.d-H)
							}
							for _, lk := range l2 {
								cols, vals = append(cols, lk.col), append(vals, -H)
							}
							m.AddRow(-3*H, milp.Inf, cols, vals)
							cols = []int{lm.qs[q1], lm.qs[q2], d}
							vals = []float64{1, -1, H}
							for _, lk := range l2 {
								cols, vals = append(cols, lk.col), append(vals, -lk.d-H)
							}
							for _, lk := range l1 {
								cols, vals = append(cols, lk.col), append(vals, -H)
							}
							m.AddRow(-2*H, milp.Inf, cols, vals)
							continue
						}
						bcols := []int{lm.x[on1][k], lm.x[on2][k]}
						bvals := []float64{-H, -H}
						if c := lm.x[off1][k]; c >= 0 {
							bcols, bvals = append(bcols, c), append(bvals, H)
						}
						if c := lm.x[off2][k]; c >= 0 {
							bcols, bvals = append(bcols, c), append(bvals, H)
						}
						// δ = 1: q2 after q1.  S_q2 ≥ S_q1 + dur_q1 − H(1−δ) + H·E
						cols := []int{lm.qs[q2], lm.qs[q1], d}
						vals := []float64{1, -1, -H}
						for _, lk := range l1 {
							cols, vals = append(cols, lk.col), append(vals, -lk.d)
						}
						m.AddRow(-3*H, milp.Inf, append(cols, bcols...), append(vals, bvals...))
						// δ = 0: q1 after q2.  S_q1 ≥ S_q2 + dur_q2 − Hδ + H·E
						cols = []int{lm.qs[q1], lm.qs[q2], d}
						vals = []float64{1, -1, H}
						for _, lk := range l2 {
							cols, vals = append(cols, lk.col), append(vals, -lk.d)
						}
						m.AddRow(-2*H, milp.Inf, append(cols, bcols...), append(vals, bvals...))
					}
				}
			}
		}
	}
	sym.rows(m, in, func(i, u int) int { return lm.x[i][u] }, func(i, u int) float64 { return p(i, u) })
	return lm, nil
}

// zeroLink reports whether communication task qi may cross between devices with k as its
// sender (egress) or receiver (ingress) in no time: such a transfer holds no port.
func (lm *latModel) zeroLink(qi, k int, egress bool) bool {
	in := lm.in
	e := lm.qe[qi]
	ed := in.problem.Edges[e]
	for o := range in.numDevices {
		a, b := k, o
		if !egress {
			a, b = o, k
		}
		if a == b || lm.x[ed.From][a] < 0 || lm.x[ed.To][b] < 0 {
			continue
		}
		if in.comm(e, a, b, 1) == 0 {
			return true
		}
	}
	return false
}

// scaledRow returns t[u]·sc for the columns of x that exist (filterCols drops the rest).
func scaledRow(t []float64, sc float64, x []int) []float64 {
	out := make([]float64, len(x))
	for u, c := range x {
		if c >= 0 {
			out[u] = t[u] * sc
		}
	}
	return out
}

// filterCols drops entries whose column is −1.
func filterCols(cols []int, vals []float64) ([]int, []float64) {
	var c []int
	var v []float64
	for x := range cols {
		if cols[x] >= 0 {
			c = append(c, cols[x])
			v = append(v, vals[x])
		}
	}
	return c, v
}
