package schedule

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// cappedModuleDP is a lower bound on the makespan of the latency plans within a stage cap
// (Options.MaxStagesPerDevice, and Options.MaxStages): the module DP (bounds_modules.go) with
// a budget of stage openers per device, on the non-free sub-DAG.
//
// Stages. In the simulator a device's stages are its tasks that open one (opensStage): the
// non-sources that read a non-free edge from another device ("openers"), and its first task
// when that is a source. The very first task of a schedule has no predecessor at all, so it
// is a source and the first task of its device d: d has openers_d + 1 stages. A plan within
// a cap of C_w stages on device w (and of C stages in all) therefore has openers_w ≤ C_w on
// every w, openers_d ≤ C_d − 1 on some device d, and Σ_w openers_w ≤ C − 1.
//
// Sub-DAG. The bound is computed on the problem restricted to the nodes with a non-free edge
// and to the non-free edges (free edges are dependencies without a transfer, from weight-only
// nodes in the planner's problems). Restricting a plan to them keeps every term of LB_b
// valid, as relaxedModuleDP's proof shows for any sub-DAG (a kept node starts after its kept
// inputs, opens a stage when a kept non-free edge crosses into it, as it does in the plan; w's
// first task, kept or not, opens a stage; a device's openers in the sub-DAG are openers in
// the plan), and it keeps the openers' budget: the openers of the restricted plan are
// openers of the plan, and the restriction drops no non-free edge, so they are exactly the
// plan's openers among the kept nodes. Dropping the isolated nodes (all of a weight-only
// node's edges are free) is what gives the cut nodes back: each weight node is a source, and
// a source other than the input puts no node on every source–sink path.
//
// Claim: let o_b ∈ ℕ^K be the openers per device of block b under a plan x within the cap,
// V_b(u, v, k) ≤ min of LB_b over the block's placements with the entry cut on u, the exit
// on v and at most k_w openers on every w. Then the makespan of x is ≥ Σ_b LB_b(x) ≥ Σ_b
// V_b(dev(c_{b−1}), dev(c_b), o_b), with Σ_b o_b = o(x) satisfying the budget above.
//
// Proof: the first inequality is the module DP's claim (every plan, capped or not); the
// second holds term by term, since block b's restriction of x is one of the placements V_b
// minimises over (its openers in block b are o_b: a block node opens when a non-free edge
// from another device reaches it, from the block or from the entry cut, and no edge reaches
// it from elsewhere). The DP
//
//	D_b(v, o) = min over u and k ≤ o of D_{b−1}(u, o − k) + V_b(u, v, k)
//
// (o, k vectors of openers up to the per-device budget) is ≤ Σ_b V_b(…, o_b) at o = o(x), v
// = dev(c_{B−1}), and the bound is the least D_{B−1}(v, o) over the vectors o that the cap
// allows (above). V_b is computed by one branch and bound per (u, v), the module DP's, in
// which a node may open a stage on w only while w's openers in the block are below the budget
// (K·cap per device at most), and which keeps, per opener vector k, the least leaf of vector
// ≤ k and the least bound of the subtrees it could not finish with vector ≤ k (best, open):
// V_b(u, v, k) = min(best_k, open_k). A subtree of vector o is pruned when its bound is ≥
// best_o, the least leaf it could improve on (best_k ≤ best_o for every k ≥ o, since leaves
// of vector ≤ o are ≤ k). Memory is ignored (a relaxation).
type capTrack struct {
	limit      []int // per device: the opener budget (the grid of vectors)
	run        []int // the budget of the search under way (≤ limit)
	stride     []int // mixed radix of an opener vector
	size       int
	best, open []float64
	bestDev    [][]int // per vector: the leaf of best (nil: none)
}

func newCapTrack(limit []int) *capTrack {
	ct := &capTrack{limit: limit, run: limit, stride: make([]int, len(limit)), size: 1}
	for w, l := range limit {
		ct.stride[w] = ct.size
		ct.size *= l + 1
	}
	ct.best = make([]float64, ct.size)
	ct.bestDev = make([][]int, ct.size)
	ct.open = make([]float64, ct.size)
	for x := range ct.best {
		ct.best[x], ct.open[x] = math.Inf(1), math.Inf(1)
	}
	return ct
}

func (ct *capTrack) index(o []int) int {
	x := 0
	for w, c := range o {
		x += c * ct.stride[w]
	}
	return x
}

// vec decodes index x into o.
func (ct *capTrack) vec(x int, o []int) {
	for w := range ct.limit {
		o[w] = x / ct.stride[w] % (ct.limit[w] + 1)
	}
}

// geq reports whether vector index a is ≥ vector index b componentwise.
func (ct *capTrack) geq(a, b int) bool {
	for w, l := range ct.limit {
		if a/ct.stride[w]%(l+1) < b/ct.stride[w]%(l+1) {
			return false
		}
	}
	return true
}

func (ct *capTrack) bestOf(o []int) float64 { return ct.best[ct.index(o)] }

// leaf records a leaf of vector o and placement dev: it is a placement within every budget
// k ≥ o.
func (ct *capTrack) leaf(o []int, v float64, dev []int) {
	at := ct.index(o)
	for k := range ct.size {
		if v < ct.best[k] && ct.geq(k, at) {
			ct.best[k] = v
			ct.bestDev[k] = append(ct.bestDev[k][:0], dev...)
		}
	}
}

// cut records an unfinished subtree whose placements have vectors ≥ o and bounds ≥ v.
func (ct *capTrack) cut(o []int, v float64) {
	at := ct.index(o)
	for k := range ct.size {
		if v < ct.open[k] && ct.geq(k, at) {
			ct.open[k] = v
		}
	}
}

// capTrackMax bounds the opener vectors tracked per block ((cap+1)^K).
const capTrackMax = 81

// nonFreeSub returns the problem restricted to the nodes with a non-free edge and to the
// non-free edges, and the original index of each kept node; nil when nothing is dropped
// (in itself) or nothing is left.
func (in *inst) nonFreeSub() (*inst, []int) {
	p := in.problem
	keep := make([]int, in.numNodes)
	for i := range keep {
		keep[i] = -1
	}
	var orig []int
	for i := range in.numNodes {
		has := false
		for _, e := range in.inE[i] {
			has = has || !in.free[e]
		}
		for _, e := range in.outE[i] {
			has = has || !in.free[e]
		}
		if has {
			keep[i] = len(orig)
			orig = append(orig, i)
		}
	}
	dropEdges := false
	for e := range p.Edges {
		dropEdges = dropEdges || in.free[e]
	}
	if len(orig) == in.numNodes && !dropEdges {
		return in, orig
	}
	if len(orig) == 0 {
		return nil, nil
	}
	sub := &Problem{Devices: p.Devices, Links: p.Links, Congestion: p.Congestion, GranuleSize: p.GranuleSize}
	for _, i := range orig {
		sub.Nodes = append(sub.Nodes, p.Nodes[i])
	}
	for e, ed := range p.Edges {
		if in.free[e] {
			continue
		}
		c := ed
		c.From, c.To = keep[ed.From], keep[ed.To]
		sub.Edges = append(sub.Edges, c)
	}
	s, err := prepare(sub)
	if err != nil {
		return nil, nil
	}
	s.sourceCalls = in.sourceCalls
	return s, orig
}

// capLimits is the per-device opener budget of a cap of perDevice stages per device and
// total stages in all (0: none): min(perDevice, total − 1) on each device, clipped at 0
// from below; nil when neither caps.
func capLimits(k, perDevice, total int) []int {
	if perDevice <= 0 && total <= 0 {
		return nil
	}
	l := make([]int, k)
	for w := range l {
		c := math.MaxInt
		if perDevice > 0 {
			c = perDevice
		}
		if total > 0 {
			c = min(c, total-1)
		}
		l[w] = max(c, 0)
	}
	return l
}

// cappedModuleDP computes the bound of plans within perDevice stages per device and total
// stages in all (0: no such cap) within deadline and a total budget of branch-and-bound
// nodes; nil when it does not apply (no cap, batched, one device, too many opener vectors,
// too large a graph).
func (in *inst) cappedModuleDP(ctx context.Context, deadline time.Time, budget int64, workers, perDevice, total int) *cappedResult {
	if !in.latency() || in.pinnedGranules != nil || in.numDevices < 2 {
		return nil
	}
	limit := capLimits(in.numDevices, perDevice, total)
	if limit == nil {
		return nil
	}
	size := 1
	for _, l := range limit {
		size *= l + 1
	}
	if size > capTrackMax {
		return nil
	}
	sub, orig := in.nonFreeSub()
	if sub == nil || sub.numNodes > moduleDPMaxNodes || ((in.numDevices > 2 || size > 16) && sub.numNodes > cappedMaxNodes3) {
		return nil
	}
	blocks := sub.moduleBlocks()
	if len(blocks) == 0 {
		blocks = []moduleBlock{{nodes: append([]int(nil), sub.topo...), entry: -1, exit: -1, first: true}}
	}
	// The maximal opener vectors the cap allows: a block's vector is at most the total's, so
	// the vectors below none of them are never used, and one search per maximal vector m
	// (openers capped at m) finds every leaf of vector ≤ k for each k ≤ m.
	var maximal [][]int
	{
		g := newCapTrack(limit)
		var ok []int
		o := make([]int, len(limit))
		for x := range g.size {
			g.vec(x, o)
			if capAllows(o, limit, perDevice, total) {
				ok = append(ok, x)
			}
		}
		for _, x := range ok {
			top := true
			for _, y := range ok {
				top = top && (y == x || !g.geq(y, x))
			}
			if top {
				m := make([]int, len(limit))
				g.vec(x, m)
				maximal = append(maximal, m)
			}
		}
	}
	type job struct {
		b, u, v int
		ct      *capTrack
		exact   bool
	}
	var jobs []*job
	for b, blk := range blocks {
		for _, u := range sub.devicesOf(blk.entry) {
			for _, v := range sub.devicesOf(blk.exit) {
				jobs = append(jobs, &job{b: b, u: u, v: v})
			}
		}
	}
	// Small blocks first: they finish early and leave their share of the budget to the large.
	slices.SortStableFunc(jobs, func(a, b *job) int { return len(blocks[a.b].nodes) - len(blocks[b.b].nodes) })
	runBudgeted(len(jobs), workers, budget, func(x int, share int64) int64 {
		j := jobs[x]
		// One search per maximal vector the cap allows, into one track.
		j.ct, j.exact = newCapTrack(limit), true
		share = max(share, 20000)
		used := int64(0)
		for _, m := range maximal {
			bb := newBlockBB(sub, &blocks[j.b], j.u, j.v, dpMix{w: -1})
			bb.ct = j.ct
			j.ct.run = m
			_, _, ex := bb.solve(ctx, deadline, max(share, 1000))
			j.exact = j.exact && ex
			share -= bb.nodes
			used += bb.nodes
		}
		return used
	})
	if ctx.Err() != nil {
		return nil
	}
	// The DP over (cut device, opener vector); the pseudo-device −1 stands for "no cut".
	// Each cell keeps how it was reached (the job, its vector, the previous cell) to stitch
	// the blocks' argmin leaves.
	ct := newCapTrack(limit)
	inf := math.Inf(1)
	type key struct{ v, o int }
	type cell struct {
		val  float64
		job  *job
		k    int
		prev key
	}
	dps := make([]map[key]cell, len(blocks))
	exact := true
	for b := range blocks {
		nd := map[key]cell{}
		for _, j := range jobs {
			if j.b != b {
				continue
			}
			exact = exact && j.exact
			for k := range ct.size {
				val := math.Min(j.ct.best[k], j.ct.open[k])
				if math.IsInf(val, 1) || math.IsNaN(val) {
					continue
				}
				if b == 0 {
					if c, seen := nd[key{j.v, k}]; !seen || val < c.val {
						nd[key{j.v, k}] = cell{val, j, k, key{}}
					}
					continue
				}
				for o := range ct.size {
					prev, seen := dps[b-1][key{j.u, o}]
					if !seen {
						continue
					}
					sum, okSum := addVec(ct, o, k)
					if !okSum {
						continue
					}
					if c, seen := nd[key{j.v, sum}]; !seen || prev.val+val < c.val {
						nd[key{j.v, sum}] = cell{prev.val + val, j, k, key{j.u, o}}
					}
				}
			}
		}
		dps[b] = nd
	}
	best, at := inf, key{}
	o := make([]int, len(limit))
	for kv, c := range dps[len(blocks)-1] {
		ct.vec(kv.o, o)
		if !capAllows(o, limit, perDevice, total) {
			continue
		}
		if c.val < best || (c.val == best && (kv.v < at.v || (kv.v == at.v && kv.o < at.o))) {
			best, at = c.val, kv
		}
	}
	if math.IsInf(best, 1) {
		return nil
	}
	// The sums are exact up to rounding: keep a little margin.
	r := &cappedResult{bound: best * (1 - 1e-9), exact: exact}
	// Stitch the argmin leaves; the dropped nodes go where the sub-DAG's first node runs.
	dev := make([]int, in.numNodes)
	for i := range dev {
		dev[i] = -1
	}
	for b := len(blocks) - 1; b >= 0; b-- {
		c := dps[b][at]
		leaf := c.job.ct.bestDev[c.k]
		if leaf == nil || c.job.ct.best[c.k] > c.job.ct.open[c.k] {
			return r // an open subtree decided this block: no leaf stands for it
		}
		for x, i := range blocks[b].nodes {
			dev[orig[i]] = leaf[x]
		}
		at = c.prev
	}
	home := dev[orig[sub.topo[0]]]
	for i := range dev {
		if dev[i] < 0 {
			dev[i] = home
			if !in.canRun(i, home) {
				dev[i] = in.devicesOf(i)[0]
			}
		}
	}
	r.dev = dev
	return r
}

// cappedResult is the capped module DP's answer: the bound, whether every block was searched
// to the end, and the stitched argmin placement (nil when an open subtree decided a block).
type cappedResult struct {
	bound float64
	exact bool
	dev   []int
}

// addVec is the index of the sum of the vectors at a and b, false when it exceeds the budget.
func addVec(ct *capTrack, a, b int) (int, bool) {
	x := 0
	for w, l := range ct.limit {
		c := a/ct.stride[w]%(l+1) + b/ct.stride[w]%(l+1)
		if c > l {
			return 0, false
		}
		x += c * ct.stride[w]
	}
	return x, true
}

// capAllows reports whether opener vector o is possible within the cap (see cappedModuleDP):
// some device has a stage besides its openers (the first task's), so with a per-device cap
// some o_d ≤ C_d − 1, and with a total cap Σ o ≤ C − 1.
func capAllows(o, limit []int, perDevice, total int) bool {
	sum := 0
	for _, c := range o {
		sum += c
	}
	if total > 0 && sum > total-1 {
		return false
	}
	if perDevice > 0 {
		some := false
		for _, c := range o {
			some = some || c <= perDevice-1
		}
		return some
	}
	return true
}

// cappedBoundName names the bound in Result.Bounds (and the manifest's bounds): it bounds
// the plans within the stage cap only.
const cappedBoundName = "module-dp-capped"

// CappedBound reports whether the bound method named is a bound of the plans within the
// stage caps only (Options.MaxStages, MaxStagesPerDevice), not of the uncapped problem.
func CappedBound(method string) bool { return strings.HasSuffix(method, "-capped") }

// cappedBound adds the capped module DP's bound when a stage cap is set (latency mode),
// within a third of the time left. It is kept apart from the bounds of the uncapped
// problem (s.capBounds): the methods' plans are uncapped until result merges them into the
// cap, and a capped bound may exceed them.
func (s *solver) cappedBound() {
	if s.o.MaxStagesPerDevice <= 0 && s.o.MaxStages <= 0 {
		return
	}
	var dl time.Time
	workers, budget := s.o.Workers, int64(cappedDPBudget)
	if !s.deadline.IsZero() {
		// A third of the time left: under a cap this is the bound that certifies the plan
		// the user gets.
		dl = time.Now().Add(time.Until(s.deadline) / 3)
	} else {
		// No deadline (the planner's reproducible searches): the node budget alone stops it,
		// and one worker hands the budget on in a fixed order, so the bound is reproducible.
		workers, budget = 1, cappedDPBudgetNoDeadline
	}
	t0 := time.Now()
	r := s.in.cappedModuleDP(s.ctx, dl, budget, workers, s.o.MaxStagesPerDevice, s.o.MaxStages)
	if r == nil || r.bound <= 0 || math.IsInf(r.bound, 0) || math.IsNaN(r.bound) {
		return
	}
	v, exact := r.bound, r.exact
	s.mu.Lock()
	s.capBounds = append(s.capBounds, Bound{Method: cappedBoundName, Value: v})
	s.mu.Unlock()
	what := "searched to the end"
	if !exact {
		what = "budget spent"
	}
	s.report("", fmt.Sprintf("capped module DP bound %.6g over the plans within the stage cap (%s)", v, what))
	if r.dev != nil {
		s.add(cappedBoundName, &Placement{Device: r.dev, Order: positions(s.in.bfs)}, t0, 0, "the capped module DP's placements, stitched")
	}
}

// cappedDPBudget is the capped module DP's total branch-and-bound nodes (RandWire WS on two
// devices needs about 20 million, 4 s of one core); cappedDPBudgetNoDeadline its budget
// without a deadline.
const (
	cappedDPBudget           = 60_000_000
	cappedDPBudgetNoDeadline = 30_000_000
)

// cappedMaxNodes3 bounds the sub-DAGs the capped module DP is tried on with more than two
// devices or more than 16 opener vectors (a cap of 4 or more stages per device, or -k 5 and
// more, on two devices): its branch and bound over K ≥ 3 devices does not end on RandWire's
// 180-node blocks within a budget (88 million nodes for one block), and an unfinished search
// leaves only its weak open-subtree bound after a third of the time.
const cappedMaxNodes3 = 60

// shownBound is the bound a progress report shows: the best bound, a capped one included
// while it is not above the best plan so far (whose makespan, before the merge into the cap,
// may be below the capped optimum). Called with s.mu held.
func (s *solver) shownBound() float64 {
	lb := maxBound(s.bounds)
	if c := maxBound(s.capBounds); c > lb && c <= s.best {
		lb = c
	}
	return lb
}

// capState strengthens the capped branch and bound's load bound with the devices that can
// take no more node. Device w is closed when its openers reached the budget, no placed node
// on w has a non-free edge to an unplaced node (pend[w] = 0; the entry cut counts as placed
// on u) and no unplaced node is a source. Then no unplaced node y can run on w: y is not a
// source, so it has a non-free in-edge; if one comes from a device other than w, y would
// open a stage on w, over the budget; otherwise all its producers run on w, and none is
// placed (pend[w] = 0), so the earliest unplaced producer of the chain back from y would be
// a source or have a placed producer on w, both excluded. The remaining work then goes to
// the open devices: the busiest of them ends ≥ (Σ_{open w} load_w + Σ_{unplaced y} min over
// open w of t_yw) / #open; with no open device and nodes left, no completion exists (+Inf).
type capState struct {
	pend     []int
	srcAfter []int       // srcAfter[x]: sources among the block nodes x, x+1, …
	rest     [][]float64 // rest[mask][x]: Σ_{y ≥ x} min over the devices in mask of t_y (+Inf: none)
}

func newCapState(bb *blockBB) *capState {
	k, n := bb.k, bb.n
	cs := &capState{pend: make([]int, k), srcAfter: make([]int, n+1), rest: make([][]float64, 1<<k)}
	if bb.u >= 0 {
		cs.pend[bb.u] = bb.ghostSucc
	}
	for x := n - 1; x >= 0; x-- {
		cs.srcAfter[x] = cs.srcAfter[x+1]
		if bb.in.source[bb.blk.nodes[x]] {
			cs.srcAfter[x]++
		}
	}
	for m := range cs.rest {
		r := make([]float64, n+1)
		for x := n - 1; x >= 0; x-- {
			f := math.Inf(1)
			for _, w := range bb.order[x] {
				if m&(1<<w) != 0 {
					f = math.Min(f, bb.in.granuleTime[bb.blk.nodes[x]][w])
				}
			}
			r[x] = r[x+1] + f
		}
		cs.rest[m] = r
	}
	return cs
}

// place records (sign 1) or undoes (sign −1) local node x on device w in pend.
func (cs *capState) place(bb *blockBB, x, w, sign int) {
	cs.pend[w] += sign * bb.nsucc[x]
	for _, ey := range bb.inE[x] {
		if bb.in.free[ey[0]] {
			continue
		}
		pw := bb.u
		if ey[1] >= 0 {
			pw = bb.dev[ey[1]]
		}
		if pw >= 0 {
			cs.pend[pw] -= sign
		}
	}
}

// loadLB is the open devices' bound after x nodes are placed.
func (cs *capState) loadLB(bb *blockBB, x int) float64 {
	if x >= bb.n {
		return 0
	}
	mask, cnt := 0, 0
	sum := 0.0
	for w := range bb.k {
		if bb.openers[w] < bb.ct.run[w] || cs.pend[w] > 0 || cs.srcAfter[x] > 0 {
			mask |= 1 << w
			cnt++
			sum += bb.loadOf(w)
		}
	}
	if cnt == 0 {
		return math.Inf(1)
	}
	return (sum + cs.rest[mask][x]) / float64(cnt)
}

// machineLB is a leaf's one-machine bound (the capped search's leaves): for each device w
// with tasks in the block, head_w + load_w + tail_w, where head_w = min over its tasks y of
// fin_y − t_yw − c_w and tail_w = min over them of tail[y][w].
//
// Proof (T_{b−1} = 0, as the leaf's ends fin are measured): task y on w ends ≥ fin_y (the
// path part of LB_b) and lasts t_yw plus at most w's call, so it starts ≥ fin_y − t_yw − c_w ≥
// head_w; w runs its tasks one at a time, for load_w in all (loadOf: their times and calls),
// so the last of them to end, ℓ, ends ≥ head_w + load_w, and T_b ≥ end_ℓ + tail[ℓ][w] (the
// block tail) ≥ head_w + load_w + tail_w. Tasks of duration 0, which need not wait for w,
// only lower the minima.
func (bb *blockBB) machineLB() float64 {
	lb := 0.0
	for w := range bb.k {
		head, tail, any := math.Inf(1), math.Inf(1), false
		for y := range bb.n {
			if bb.dev[y] != w {
				continue
			}
			any = true
			head = math.Min(head, math.Max(0, bb.fin[y]-bb.in.granuleTime[bb.blk.nodes[y]][w]-bb.in.callCost[w]))
			tail = math.Min(tail, bb.tail[y][w])
		}
		if any {
			lb = math.Max(lb, head+bb.loadOf(w)+tail)
		}
	}
	return lb
}
