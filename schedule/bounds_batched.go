package schedule

import (
	"context"
	"math"
	"time"

	"github.com/onnxpart/onnxpart/internal/milp"
)

// batchPatternLP is the coupled bound of batched mode: an LP over each node's split of the
// batch (its pattern: how many granules each device takes), which prices a device's batch at
// its real batch time — a fixed kernel overhead is paid once per batch, not per granule as
// the load LP's best rate lets it — and couples the devices' loads with the path of the
// average granule, on which a granule pays its own batch's time on every node it passes.
//
// Let P_i be node i's patterns: count vectors (c_u) with Σ_u c_u = L, each c_u > 0 a size
// device u supports with a finite batch time, and Weight_i + c_u·Act_i within u's capacity
// (splitsOf, less those that cannot fit alone). bt_u(c) = batchTime[i][u][c], 0 for c = 0.
//
//	minimise T subject to
//	  Σ_{p ∈ P_i} z_ip = 1,  z ≥ 0                                            (a split per node)
//	  T ≥ Σ_i Σ_p z_ip·bt_iu(p_u) + c_u·n_u,  n_u ≥ y_u,  y_u ≥ Σ_{p: p_u > 0} z_ip,
//	      n_u ≥ Σ_j o_ju                                                      (device loads)
//	  Σ_v f_euv = Σ_p z_ip·p_u,  Σ_u f_euv = Σ_p z_jp·p_v,  f ≥ 0   for every non-free edge
//	      e = (i,j) (f_euv: the granules that pass e from u to v; f_euv = 0 without a route)
//	  o_jv ≥ Σ_{u≠v} f_euv / L                                                (j opens on v)
//	  C_i ≥ Σ_p z_ip·Σ_u p_u·(bt_iu(p_u) + c_u·[bt_iu(p_u) > 0]) / L           (first call)
//	  C_j ≥ C_i + Σ_p z_jp·Σ_v p_v·bt_jv(p_v) / L
//	        + Σ_{u≠v} f_euv·(comm(e,u,v,1) + c_v) / L       for every edge (free: no f term)
//	  T ≥ C_i
//	  Σ_i Σ_p z_ip·(Weight_i·[p_u > 0] + p_u·Act_i) ≤ Mem_u                    (memory)
//	  with congestion: T ≥ Σ_e Σ_{u≠v} f_euv·r_euv (into v), T ≥ Σ_e Σ_{v≠u} f_euv·r_euv (out
//	      of u), r_euv = Latency/L + Bytes/Bandwidth of the route (explicit times: Time[u][v])
//
// (c_u is the call cost; the first-call term and y_u only where sources pay calls,
// inst.sourceCalls.)
//
// Proof. Take any plan that fits memory and its simulated schedule, of makespan M. Set z_ip =
// 1 for node i's own split, f_euv = the number of granules l with g_il = u and g_jl = v, y_u =
// 1 when u runs a batch, o_jv = 1 when j's batch on v opens a stage by reading a non-free
// edge from another device, n_u = u's stages, T = M, and C_i = the average over the granules l
// of the end of the batch that holds l (E_il: the end of (i, g_il)). The split and flow rows
// hold by construction (f counts each granule of i on u once, by where it goes on j). The
// edge rows follow the granule: for every l, E_jl ≥ E_il + [l crosses]·(comm(e,u,v,1) + c_v)
// + bt_jv(c) where (j, v) holds l in a batch of c: (j, v) starts after l's input arrived
// (placeBatch: the producer's end, plus the transfer when it crosses, which takes comm(e,u,v,
// m) ≥ comm(e,u,v,1) for a message of m ≥ 1 granules and congestion only delays it), and a
// batch that reads a crossing non-free edge opens a stage and pays c_v (a non-source: its
// call is always paid). Averaged over the L granules this is the edge row. The first-call
// row: a batch of positive time on u ends ≥ c_u + its time — u's first batch (in the
// simulator's order) opens a stage, being a source or reading from another device, and
// pays c_u when sources pay calls; a later batch of positive time waits for u, so for the
// first batch's end, ≥ c_u (commPathBound's argument) —, so E_il ≥ c_u·[bt > 0] + bt; averaged.
// T ≥ C_i: every E_il ≤ M. Loads: u runs one batch of positive time at a time within [0, M],
// each stage's call is part of its opener's duration, so bt sums + c_u·stages ≤ M; stages ≥
// 1 when u runs anything (its first batch opens one; y_u ≥ z_ip for the one pattern of each
// node) and ≥ Σ_j o_ju (distinct openers open distinct stages), and o_jv = 1 ≥ Σ_{u≠v}
// f_euv/L whenever some granule crosses e into v (at most L do), 0 = the sum otherwise.
// Memory: the plan fits (every node's Weight on each device it uses, Act per granule).
// Congestion: each message of m granules on e from u to v occupies u's egress and v's
// ingress for comm(e,u,v,m) = Latency + m·Bytes/Bandwidth ≥ m·r_euv (m ≤ L; explicit times:
// m·Time), one at a time. So the plan's point is feasible with T = M, and the LP optimum —
// HiGHS's dual bound, with a 1e-6 relative margin for its tolerances — is ≤ every plan's
// makespan. A bound of the problem without a stage cap, it bounds the capped plans too.
//
// What it adds to the critical path and the load LP: the critical path lets every granule
// run at the fastest batch (batch of one on the fastest device) while the load LP lets the
// fastest device take the whole batch at its per-granule rate; a plan can have both only if
// that device takes every granule in one batch, whose time then lies on every granule's
// path. Here a granule's path carries its own batch's time, so the fast device's load and
// the path grow together with the share it takes, and the slower devices' share pays their
// slower kernels on the average path. The z_ip are the Dantzig–Wolfe patterns of the
// per-node split (the LP relaxation of the batched MILP's F2 rows convexifies a kernel's
// fixed overhead away; the patterns keep it).
func (in *inst) batchPatternLP(ctx context.Context, limit time.Duration) float64 {
	if in.latency() || in.pinnedGranules != nil {
		return 0
	}
	n, k, L := in.numNodes, in.numDevices, in.numGranules
	fl := float64(L)
	pats := make([][][]int, n)
	cols := 0
	for i := range n {
		nd := &in.problem.Nodes[i]
		for _, p := range in.splitsOf(i, batchLPMaxCols+1) {
			fits := true
			for u, c := range p {
				if c > 0 && nd.Weight+float64(c)*nd.Act > in.capacity[u] {
					fits = false
				}
			}
			if fits {
				pats[i] = append(pats[i], p)
			}
		}
		if len(pats[i]) == 0 {
			return 0 // no split fits: memoryProof's case, nothing to bound
		}
		cols += len(pats[i])
		if cols > batchLPMaxCols {
			return 0
		}
	}
	calls := in.sourceCalls
	// Scale: model time = problem time / scale.
	scale := 0.0
	for i := range n {
		for u := range k {
			for c := 1; c <= L; c++ {
				if x := in.batchTime[i][u][c]; !math.IsInf(x, 1) {
					scale = math.Max(scale, x)
				}
			}
		}
	}
	for u := range k {
		scale = math.Max(scale, in.callCost[u])
	}
	for e := range in.problem.Edges {
		for u := range k {
			for v := range k {
				if x := in.comm(e, u, v, 1); !math.IsInf(x, 1) {
					scale = math.Max(scale, x)
				}
			}
		}
	}
	if scale <= 0 {
		return 0
	}
	m := &milp.Model{}
	t := m.AddVar(0, milp.Inf, 1, false, "T")
	z := make([][]int, n)
	cvar := make([]int, n)
	for i := range n {
		z[i] = make([]int, len(pats[i]))
		for x := range pats[i] {
			z[i][x] = m.AddVar(0, 1, 0, false, "")
		}
		m.AddRow(1, 1, z[i], ones(len(z[i])))
		cvar[i] = m.AddVar(0, milp.Inf, 0, false, "")
		m.AddRow(0, milp.Inf, []int{t, cvar[i]}, []float64{1, -1})
		// First call: C_i ≥ Σ_p z_ip·Σ_u p_u·(bt + c_u·[bt > 0]) / L.
		rc, rv := []int{cvar[i]}, []float64{1}
		for x, p := range pats[i] {
			s := 0.0
			for u, c := range p {
				if c == 0 {
					continue
				}
				d := in.batchTime[i][u][c]
				if calls && d > 0 {
					d += in.callCost[u]
				}
				s += float64(c) * d / fl
			}
			if s > 0 {
				rc, rv = append(rc, z[i][x]), append(rv, -s/scale)
			}
		}
		if len(rc) > 1 {
			m.AddRow(0, milp.Inf, rc, rv)
		}
	}
	// avgOf appends −Σ_p z_jp·(the average granule's batch time of j) to a row.
	avgOf := func(j int, rc []int, rv []float64) ([]int, []float64) {
		for x, p := range pats[j] {
			s := 0.0
			for v, c := range p {
				if c > 0 {
					s += float64(c) * in.batchTime[j][v][c] / fl
				}
			}
			if s > 0 {
				rc, rv = append(rc, z[j][x]), append(rv, -s/scale)
			}
		}
		return rc, rv
	}
	// shareRow adds Σ_x flows = Σ_p z_ip·p_u (the granules of i on u).
	shareRow := func(i, u int, flows []int) {
		rc, rv := append([]int(nil), flows...), ones(len(flows))
		for x, p := range pats[i] {
			if p[u] > 0 {
				rc, rv = append(rc, z[i][x]), append(rv, -float64(p[u]))
			}
		}
		m.AddRow(0, 0, rc, rv)
	}
	// o[j][v]: j's batch on v opens a stage by a crossing (−1 where no call is priced).
	o := make([][]int, n)
	for j := range n {
		o[j] = make([]int, k)
		for v := range k {
			o[j][v] = -1
			if !in.source[j] && in.callCost[v] > 0 {
				o[j][v] = m.AddVar(0, 1, 0, false, "")
			}
		}
	}
	ingress := make([][]int, k) // congestion: flow columns into v and their rates
	ingressR := make([][]float64, k)
	egress := make([][]int, k)
	egressR := make([][]float64, k)
	for e := range in.problem.Edges {
		ed := &in.problem.Edges[e]
		i, j := ed.From, ed.To
		rc, rv := []int{cvar[j], cvar[i]}, []float64{1, -1}
		rc, rv = avgOf(j, rc, rv)
		if !in.free[e] {
			f := make([][]int, k)
			for u := range k {
				f[u] = make([]int, k)
				for v := range k {
					hi := float64(L)
					cm := in.comm(e, u, v, 1)
					if math.IsInf(cm, 1) {
						hi = 0 // no route: no granule passes e from u to v
					}
					f[u][v] = m.AddVar(0, hi, 0, false, "")
					if u == v || hi == 0 {
						continue
					}
					if w := cm + in.callCost[v]; w > 0 {
						rc, rv = append(rc, f[u][v]), append(rv, -w/(fl*scale))
					}
					if in.problem.Congestion {
						r := 0.0
						if ed.Time != nil {
							r = ed.Time[u][v]
						} else if bw := in.routeBW[u][v]; bw > 0 {
							r = in.routeLat[u][v]/fl + ed.Bytes/bw
						}
						if r > 0 {
							ingress[v], ingressR[v] = append(ingress[v], f[u][v]), append(ingressR[v], r)
							egress[u], egressR[u] = append(egress[u], f[u][v]), append(egressR[u], r)
						}
					}
				}
			}
			for u := range k {
				shareRow(i, u, f[u])
				col := make([]int, k)
				for v := range k {
					col[v] = f[v][u]
				}
				shareRow(j, u, col)
			}
			for v := range k {
				if o[j][v] < 0 {
					continue
				}
				oc, ov := []int{o[j][v]}, []float64{fl}
				for u := range k {
					if u != v {
						oc, ov = append(oc, f[u][v]), append(ov, -1)
					}
				}
				m.AddRow(0, milp.Inf, oc, ov)
			}
		}
		m.AddRow(0, milp.Inf, rc, rv)
	}
	if in.problem.Congestion {
		for u := range k {
			for _, port := range []struct {
				cols []int
				r    []float64
			}{{ingress[u], ingressR[u]}, {egress[u], egressR[u]}} {
				if len(port.cols) == 0 {
					continue
				}
				rc, rv := []int{t}, []float64{1}
				for x, c := range port.cols {
					rc, rv = append(rc, c), append(rv, -port.r[x]/scale)
				}
				m.AddRow(0, milp.Inf, rc, rv)
			}
		}
	}
	// Loads and memory.
	for u := range k {
		rc, rv := []int{t}, []float64{1}
		for i := range n {
			for x, p := range pats[i] {
				if c := p[u]; c > 0 && in.batchTime[i][u][c] > 0 {
					rc, rv = append(rc, z[i][x]), append(rv, -in.batchTime[i][u][c]/scale)
				}
			}
		}
		if in.callCost[u] > 0 {
			nu := m.AddVar(0, milp.Inf, 0, false, "")
			rc, rv = append(rc, nu), append(rv, -in.callCost[u]/scale)
			sc, sv := []int{nu}, []float64{1}
			for j := range n {
				if o[j][u] >= 0 {
					sc, sv = append(sc, o[j][u]), append(sv, -1)
				}
			}
			m.AddRow(0, milp.Inf, sc, sv)
			if calls {
				y := m.AddVar(0, 1, 0, false, "")
				m.AddRow(0, milp.Inf, []int{nu, y}, []float64{1, -1})
				for i := range n {
					yc, yv := []int{y}, []float64{1}
					for x, p := range pats[i] {
						if p[u] > 0 {
							yc, yv = append(yc, z[i][x]), append(yv, -1)
						}
					}
					if len(yc) > 1 {
						m.AddRow(0, milp.Inf, yc, yv)
					}
				}
			}
		}
		m.AddRow(0, milp.Inf, rc, rv)
		if !math.IsInf(in.capacity[u], 1) {
			var mc []int
			var mv []float64
			for i := range n {
				nd := &in.problem.Nodes[i]
				for x, p := range pats[i] {
					if c := p[u]; c > 0 {
						if need := nd.Weight + float64(c)*nd.Act; need > 0 {
							mc, mv = append(mc, z[i][x]), append(mv, need/in.capacity[u])
						}
					}
				}
			}
			if len(mc) > 0 {
				m.AddRow(-milp.Inf, 1, mc, mv)
			}
		}
	}
	res, err := m.Solve(ctx, milp.Options{LP: true, TimeLimit: limit})
	if err != nil || res.Status != milp.Optimal || math.IsInf(res.DualBound, 0) || math.IsNaN(res.DualBound) {
		return 0
	}
	return math.Max(0, res.DualBound*scale*(1-1e-6))
}

// batchLPMaxCols bounds the patterns batchPatternLP enumerates (Σ_i |P_i|): C(L+K−1, K−1)
// per node at most, 165 for 8 granules on 4 devices (GoogLeNet's 81 nodes: 13,365, about a
// second; RandWire WS's 550 nodes, 90,750, are skipped).
const batchLPMaxCols = 20_000

// batchLPNoDeadline is the pattern LP's time limit when the solve has none (the planner's
// reproducible searches): a safety net, which the pattern cap keeps out of reach.
const batchLPNoDeadline = 10 * time.Second

// batchBound adds the module DP's bound of the granule instance (granuleInstance) and
// batchPatternLP's bound (batched mode): the DP within a tenth of the time left, the LP
// within a fifth (a few hundred ms to a second on a 4-device batch of 8).
func (s *solver) batchBound() {
	limit := batchLPNoDeadline
	if !s.deadline.IsZero() {
		limit = time.Until(s.deadline) / 5
		if limit <= 0 {
			return
		}
	}
	if g := s.in.granuleInstance(); g != nil {
		var dl time.Time
		if !s.deadline.IsZero() {
			dl = time.Now().Add(time.Until(s.deadline) / 10)
		}
		if r := g.moduleDP(s.ctx, dl, moduleDPBudget, s.o.Workers); r != nil {
			s.addBound("module-dp-granule", r.bound)
			s.report("", "module DP bound of one granule")
			if r.dev != nil {
				// Every granule on the granule DP's stitched placement: a candidate plan.
				gr := make([][]int, s.in.numNodes)
				for i, u := range r.dev {
					gr[i] = make([]int, s.in.numGranules)
					for l := range gr[i] {
						gr[i][l] = u
					}
				}
				s.mdpPlan = &Placement{Granules: gr}
			}
		}
	}
	if b := s.in.batchPatternLP(s.ctx, limit); b > 0 {
		s.addBound("batch-lp", b)
		s.report("", "batched pattern LP bound")
	}
}

// granuleInstance is the latency problem one granule of a batched problem sees: every node
// at its least batch time on each device (min over the supported sizes c of batchTime[c]),
// the same edges, links, calls and congestion, no memory limit; nil in latency mode, with
// pinned granules, or when the batched problem is malformed for it.
//
// Claim: every latency-mode bound of this instance that holds for the simulator's latency
// schedules through the argument below bounds the batched problem too; the module DP's does
// (module-dp-granule). Proof: take any batched plan and any granule l, and let x_j = g_jl, the
// device of the batch that holds l at node j: a placement of the granule instance. The
// batches holding l behave as the tasks of that placement do in moduleDP's proof. A batch
// (j, v) holding l starts after l's input from each predecessor arrived — the batch holding
// l there ended, plus the transfer when it crosses devices (a message of m ≥ 1 granules
// takes comm(e,u,v,m) ≥ comm(e,u,v,1); congestion only delays it) — and lasts ≥ the least
// batch time of j on v, plus v's call when it reads l's non-free input from another device
// (the batch then opens a stage, placeBatch). Batches holding l on one device are distinct
// tasks, run one at a time, and l's messages on distinct edges are distinct messages, each
// holding its sender's egress and its receiver's ingress for ≥ comm(·,1). Between
// single-channel cut nodes (moduleDP's blocks, which depend on the graph only) every batch
// holding l in block b lies within [E_{b−1,l}, E_{b,l}], E_{b,l} the end of c_b's batch
// holding l (its ancestors in the block end before c_b's starts, and its descendants start
// after c_{b−1}'s ends; the last block ends by the makespan M). Block 0's first calls: u's
// first batch in the simulator's order opens a stage and pays its call (it is a source or
// reads from another device); a batch of positive time on u that holds l is that batch or
// waits for it, so the call lies in [0, E_{0,l}] and a batch of positive least time on u
// ends ≥ c_u + its time. So LB_b(x) ≤ E_{b,l} − E_{b−1,l} term by term, Σ_b ≤ M, and the
// DP's minimum over placements is ≤ M. (Memory: the instance has none, a relaxation.)
func (in *inst) granuleInstance() *inst {
	if in.latency() || in.pinnedGranules != nil {
		return nil
	}
	p := in.problem
	q := &Problem{Edges: p.Edges, Links: p.Links, Congestion: p.Congestion, Nodes: make([]Node, in.numNodes), Devices: make([]Device, in.numDevices)}
	for u, d := range p.Devices {
		q.Devices[u] = Device{Name: d.Name, CallCost: d.CallCost}
	}
	for i := range in.numNodes {
		t := make([]float64, in.numDevices)
		for u := range in.numDevices {
			t[u] = math.Inf(1)
			for c := 1; c <= in.numGranules; c++ {
				if in.sizeOK[u][c] {
					t[u] = math.Min(t[u], in.batchTime[i][u][c])
				}
			}
		}
		q.Nodes[i] = Node{Name: p.Nodes[i].Name, Time: t}
	}
	g, err := prepare(q)
	if err != nil {
		return nil
	}
	g.sourceCalls = in.sourceCalls
	return g
}
