package schedule

import (
	"context"
	"fmt"
	"math"
	"slices"

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
//
// Stage calls (Device.CallCost c_v, opensStage): a task j on device v opens a stage, and its
// duration grows by c_v, when it reads a non-free edge from a node on another device, or when
// it is a source (no non-free in-edge) and the first task of v. The model prices them so:
//
//   - cross-device openers exactly: o_jv ∈ [0,1] with o_jv ≥ x_jv − x_iv for every non-free
//     in-edge (i,j) (o_jv ≥ x_jv when i cannot run on v), and j's duration is
//     Σ_v (p_jv·x_jv + c_v·o_jv) in every row that uses it (precedence (4a)–(4b), the
//     makespan, the disjunctive pairs (6));
//   - a source's call through a shifted start: a source j's S_j marks the end of its call, not
//     its beginning, so its duration stays p_jv, and S_j ≥ Σ_{v: p_jv > 0} c_v·x_jv;
//   - device loads: T ≥ Σ_i p_iu·x_iu + c_u·n_u with n_u ≥ Σ_j o_ju and n_u ≥ x_ju (every
//     device used pays at least one call: its first task always opens a stage).
//
// Lower bound (always). Map any plan's simulated schedule into the model: x from its devices,
// o_jv = 1 exactly for its cross-device openers, n_u = its stages on u, T = its makespan, and
// S_j = j's start, plus c_v when j is a source that pays a call (the first task of v). Each
// model interval [S_j, S_j + dur_j] is then the simulated interval of j, or for a paying
// source that interval less its leading call. Precedence and transfers hold (inputs are ready
// by the start, hence by the shifted start). Two tasks of positive simulated duration on one
// device never overlap in the simulator, so the disjunctive rows hold for some δ; a task of no
// processing time on v gets rows there only through −H(1 − o_jv), i.e. only while it opens a
// stage and so has a positive duration. The source row: if j is first on v, its shifted start
// is ≥ c_v; if not and p_jv > 0, j waits for the device, which first ran the call of its first
// task, so it starts ≥ c_v (with p_jv = 0 a source need not wait, hence the row's range). The
// loads: busy_u = Σ p + c_u·stages_u with stages_u ≥ Σ_j o_ju, and ≥ 1 when u is used. So the
// point is feasible with objective = the makespan, and the optimum (and HiGHS's dual bound) is
// at most the priced optimum.
//
// Where sources pay no call (inst.sourceCalls off: MILP-SPLIT's sub-problems, whose devices
// may have run earlier modules) the source rows and n_u ≥ x_ju go, and the rest is the same
// argument with the cross-device calls alone.
//
// Exact (lm.exact): no source j may sit, with c_v > 0, on a device v where it has an in-edge
// (free ones: it then waits for them) or p_jv = 0. Then the model's objective is at least the
// simulated makespan of the plan decoded from it, so at the optimum the two are equal: the
// simulator runs the tasks in the order of S (ties by topological position) and by induction
// each ends no later than in the model — a non-source's simulated duration is p + c·opens ≤
// p + c·o (o ≥ the opens by its rows); a source that the simulator makes first on v and
// charges starts at 0 (no in-edges) and ends at c_v + p_jv ≤ S_j + p_jv by the source row; any
// other task of positive duration waits only for its inputs and the device's previous task,
// which the precedence and disjunctive rows order before S_j in the model. Otherwise the model
// is a relaxation: its bound stands, and the simulator judges its plan (mipRun.relaxed).

const modelHorizon = 1000.0

type latModel struct {
	in    *inst
	m     *milp.Model
	scale float64 // model time = scale × problem time
	h     float64 // horizon in model units
	x     [][]int // x[i][u] column, −1 when fixed to 0
	o     [][]int // o[j][u]: j on u reads a non-free edge from another device (a call), −1 if none
	n     []int   // n[u]: the calls device u pays at least (load rows), −1 if none
	// exact: the model prices every call the simulator charges its decoded plans (no call can
	// fall on a source that waits for a free in-edge; see the calls comment in buildLatency).
	exact bool
	s     []int // op start
	t     int   // makespan
	q     []int // per edge: its communication task index, −1 if none
	qe    []int // per task: edge
	qs    []int // per task: start column
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
func (in *inst) buildLatency(ctx context.Context, ub, lb float64, sym symmetry, maxRows int) (*latModel, error) {
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
	lm.addCalls()

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
			c, v := lm.withDur(i, []int{lm.s[i], lm.s[j]}, []float64{1, -1})
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
		cols, vals := lm.withDur(i, []int{lm.s[i], qs}, []float64{1, -1})
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
		cols, vals := lm.withDur(i, []int{lm.s[i], lm.t}, []float64{1, -1})
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
		if lm.n[u] >= 0 {
			cols, vals = append(cols, lm.n[u]), append(vals, in.callCost[u]*sc)
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
		if maxRows > 0 && m.NumRows() > maxRows {
			return nil, errTooManyRows
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
			// A pair on u only when both may take time there: processing, or a call (o).
			pos := func(i, u int) bool { return p(i, u) > 0 || lm.o[i][u] >= 0 }
			var devs []int
			for u := range in.numDevices {
				if lm.x[a][u] >= 0 && lm.x[b][u] >= 0 && pos(a, u) && pos(b, u) {
					devs = append(devs, u)
				}
			}
			if len(devs) == 0 {
				continue
			}
			d := m.AddBinary(0, fmt.Sprintf("d_%d_%d", a, b))
			lm.opPr = append(lm.opPr, pairVar{a, b, d})
			for _, u := range devs {
				lm.disjunctive(a, b, u, d)
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
			if maxRows > 0 && m.NumRows() > maxRows {
				return nil, errTooManyRows
			}
			e1 := in.problem.Edges[lm.qe[q1]]
			for q2 := q1 + 1; q2 < nq; q2++ {
				e2 := in.problem.Edges[lm.qe[q2]]
				// q1 = a→b precedes q2 = c→d in the augmented graph iff b = c or b reaches c.
				if e1.To == e2.From || in.reaches(e1.To, e2.From) || e2.To == e1.From || in.reaches(e2.To, e1.From) {
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

// addCalls adds the call columns o and n and the source rows (see the file comment).
func (lm *latModel) addCalls() {
	in, m, sc := lm.in, lm.m, lm.scale
	lm.o = make([][]int, in.numNodes)
	lm.n = make([]int, in.numDevices)
	lm.exact = true
	for i := range in.numNodes {
		lm.o[i] = make([]int, in.numDevices)
		for u := range in.numDevices {
			lm.o[i][u] = -1
		}
		if in.source[i] {
			if !in.sourceCalls {
				continue // sources pay no call here (split's sub-problems)
			}
			var cols []int
			var vals []float64
			for u := range in.numDevices {
				if lm.x[i][u] < 0 || in.callCost[u] <= 0 {
					continue
				}
				if len(in.inE[i]) > 0 || in.granuleTime[i][u] <= 0 {
					lm.exact = false // the source may wait for a free input, or take no time
				}
				if in.granuleTime[i][u] > 0 {
					cols, vals = append(cols, lm.x[i][u]), append(vals, -in.callCost[u]*sc)
				}
			}
			if len(cols) > 0 {
				m.AddRow(0, milp.Inf, append(cols, lm.s[i]), append(vals, 1)) // S_j ≥ Σ c_v·x_jv
			}
			continue
		}
		for u := range in.numDevices {
			if lm.x[i][u] < 0 || in.callCost[u] <= 0 {
				continue
			}
			lm.o[i][u] = m.AddVar(0, 1, 0, false, fmt.Sprintf("o_%d_%d", i, u))
			for _, e := range in.inE[i] {
				if in.free[e] {
					continue
				}
				from := in.problem.Edges[e].From
				if c := lm.x[from][u]; c >= 0 {
					m.AddRow(0, milp.Inf, []int{lm.o[i][u], lm.x[i][u], c}, []float64{1, -1, 1}) // o ≥ x_jv − x_iv
				} else {
					m.AddRow(0, milp.Inf, []int{lm.o[i][u], lm.x[i][u]}, []float64{1, -1}) // o ≥ x_jv
				}
			}
		}
	}
	for u := range in.numDevices {
		lm.n[u] = -1
		if in.callCost[u] <= 0 {
			continue
		}
		var ocols []int
		for i := range in.numNodes {
			if lm.x[i][u] < 0 {
				continue
			}
			if lm.n[u] < 0 {
				lm.n[u] = m.AddVar(0, float64(in.numNodes), 0, false, fmt.Sprintf("n_%d", u))
			}
			if in.sourceCalls {
				m.AddRow(0, milp.Inf, []int{lm.n[u], lm.x[i][u]}, []float64{1, -1}) // n_u ≥ x_iu
			}
			if lm.o[i][u] >= 0 {
				ocols = append(ocols, lm.o[i][u])
			}
		}
		if len(ocols) > 1 {
			vals := make([]float64, len(ocols)+1)
			for x := range ocols {
				vals[x] = -1
			}
			vals[len(ocols)] = 1
			m.AddRow(0, milp.Inf, append(ocols, lm.n[u]), vals) // n_u ≥ Σ_j o_ju
		}
	}
}

// withDur appends node i's duration Σ_u (p_iu·x_iu + c_u·o_iu) (model units) to a row.
func (lm *latModel) withDur(i int, cols []int, vals []float64) ([]int, []float64) {
	in, sc := lm.in, lm.scale
	for u, c := range lm.x[i] {
		if c < 0 {
			continue
		}
		if d := in.granuleTime[i][u] * sc; d != 0 {
			cols, vals = append(cols, c), append(vals, d)
		}
		if o := lm.o[i][u]; o >= 0 {
			cols, vals = append(cols, o), append(vals, in.callCost[u]*sc)
		}
	}
	return cols, vals
}

// disjunctive adds eq. (6) for nodes a and b on device u with order binary d (δ = 1: b after
// a), a duration that includes a's (b's) call o, and — for a side of no processing time on u,
// whose only duration is its call — a bracket that holds the row off unless that side opens a
// stage (−H(1 − o)):
//
//	δ = 1: S_b ≥ S_a + p_a·x_a + c·o_a − H(1−δ) − H(2 − x_a − x_b) − Σ_zero H(1 − o)
//	δ = 0: S_a ≥ S_b + p_b·x_b + c·o_b − Hδ     − H(2 − x_a − x_b) − Σ_zero H(1 − o)
func (lm *latModel) disjunctive(a, b, u, d int) {
	in, m, H, sc := lm.in, lm.m, lm.h, lm.scale
	for _, after := range []bool{true, false} {
		first, second := a, b // second ≥ first + dur(first)
		if !after {
			first, second = b, a
		}
		coef := map[int]float64{}
		coef[lm.s[second]] += 1
		coef[lm.s[first]] -= 1
		coef[lm.x[first][u]] -= in.granuleTime[first][u] * sc
		if o := lm.o[first][u]; o >= 0 {
			coef[o] -= in.callCost[u] * sc
		}
		coef[lm.x[a][u]] -= H
		coef[lm.x[b][u]] -= H
		lo := -2 * H
		if after {
			coef[d] -= H
			lo -= H
		} else {
			coef[d] += H
		}
		for _, i := range []int{a, b} {
			if in.granuleTime[i][u] <= 0 {
				coef[lm.o[i][u]] -= H // pos() guarantees the column
				lo -= H
			}
		}
		cols := make([]int, 0, len(coef))
		for c := range coef {
			cols = append(cols, c)
		}
		slices.Sort(cols)
		vals := make([]float64, len(cols))
		for x, c := range cols {
			vals[x] = coef[c]
		}
		m.AddRow(lo, milp.Inf, cols, vals)
	}
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
