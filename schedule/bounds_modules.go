package schedule

import (
	"context"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// moduleDP is a lower bound for latency placements by dynamic programming over the graph's
// single-channel cut nodes (cutNodes: a node on every source–sink path, no edge jumping over
// it), with an exact branch and bound over the placements of each stretch between two cuts.
//
// Let c_0 < c_1 < … < c_{B−2} be the cut nodes in topological order and block b the nodes
// after c_{b−1} up to and including c_b (block 0 starts at the sources; the last block has no
// exit cut). For a placement x, let LB_b(x) be the larger of
//
//   - the critical path of block b with x's own devices: a node j on w ends ≥ its inputs'
//     arrivals (the producer's end, plus comm(e, dev_i, w) when the edge crosses devices) +
//     c_w when j opens a stage (it reads a non-free edge from another device; opensStage) +
//     t_jw; the entry cut c_{b−1} ends at 0 (block 0: a node of time t > 0 on w also ends ≥
//     c_w + t, w's first call, the argument of commPathBound);
//   - every device's load in block b: Σ t_jw over its nodes + c_w·(its openers) (block 0:
//     at least one call on every device that runs a task of positive time there);
//   - with congestion, every device's ingress and egress loads: Σ comm over the block's edges
//     that cross into (out of) it.
//
// Claim: in every plan, T_b − T_{b−1} ≥ LB_b(x), where x is the plan's placement, T_b the end
// of c_b (T_{−1} = 0, and for the last block T is the makespan).
//
// Proof. Every node of block b is a descendant of c_{b−1} (it is after it in topological
// order, and every node is its ancestor or its descendant) and, unless b is last, an
// ancestor of c_b; every in-edge of a block-b node comes from block b or from c_{b−1} (an
// edge from earlier would jump over c_{b−1}). So every task, call and transfer of block b
// (the transfers counted are those of the edges into block-b nodes, each edge once) lies
// within [T_{b−1}, T_b]: a node starts after its inputs arrived, which is after c_{b−1}
// ended, and ends before c_b starts. Path: by induction in topological order, node j of the
// block ends ≥ T_{b−1} + (its term above), as in commPathBound's proof with the producers'
// ends measured from T_{b−1} (congestion only delays transfers; a stage opener's duration
// includes its call). In block 0, w's first task d (in the simulator's order) opens a stage,
// and a task of positive time other than d waits for w, so for d's end ≥ c_w: hence the
// first-call term. Loads: a device runs one task at a time, each stage's call is part of its
// opener's duration, distinct openers open distinct stages, so its busy time within
// [T_{b−1}, T_b] is ≥ the load above (block 0: when a task j of positive time runs on w
// there, d, an opener or a source, ran before j ended — j is d or waited for it — and
// started at ≥ 0, so w's stages within [0, T_0] are ≥ max(openers, 1); a task of time 0
// does not wait for w, hence "positive"). Congestion: a device
// sends one transfer at a time and receives one at a time (Moirai eq. (8)), each for its
// whole comm time. Each is a lower bound on T_b − T_{b−1}, hence their maximum.
//
// Summing over the blocks, the makespan T_{B−1} = Σ_b (T_b − T_{b−1}) ≥ Σ_b LB_b(x) ≥ Σ_b
// V_b(dev(c_{b−1}), dev(c_b)), where V_b(u, v) ≤ min over placements of block b with
// c_{b−1} on u and c_b on v of LB_b (it depends only on those). The DP
//
//	D_b(v) = min_u D_{b−1}(u) + V_b(u, v)
//
// minimises the sum over the cut devices, so min_v D_{B−1}(v) ≤ the makespan of every plan.
// V_b is computed by a depth-first branch and bound over the block's nodes in topological
// order (each node on each device it can run on, the exit on v): a subtree is pruned when a
// lower bound of every completion of its partial placement (the largest end + the block's
// tail from it — commTail's argument within the block —, the loads so far, and the loads so
// far plus the remaining nodes' fastest times over K devices) is ≥ the best leaf found; when
// the node budget or the time runs out, the open subtrees' partial bounds stand in for their
// leaves. So V_b = min(best leaf, open subtrees' bounds) ≤ the minimum. Memory is ignored
// (a relaxation). On a chain of small modules (GoogLeNet's inception modules, ResNet's
// blocks) each V_b is exact and the DP is the best "critical path and loads" bound of the
// whole graph with the transfers and calls of its own placement.
//
// The argmin leaves of the blocks, stitched along the DP, are also a placement to judge
// (moduleDPResult.dev).
type moduleDPResult struct {
	bound float64
	dev   []int // the stitched argmin placement (nil when some block was not searched to a leaf)
	exact bool  // every block searched to the end
}

// moduleBlock is one stretch of the DP.
type moduleBlock struct {
	nodes       []int // global nodes in topological order; with exit ≥ 0 the last is exit
	entry, exit int   // cut nodes before and ending the block (−1: none)
	first       bool  // block 0: the devices' first calls
	side        []int // indices of the side nodes attached to the block (relaxedModuleDP)
}

// sideNode is a node relaxedModuleDP deleted but keeps in the mixed bound (see there): its
// times, and its non-free edges to kept nodes (cons) and to earlier side nodes of the same
// block (from, indices into the side list).
type sideNode struct {
	time []float64
	cons []int
	from []int
}

// dpMix selects relaxedModuleDP's Pareto DP: with pareto, each block's search keeps the
// Pareto frontier of (LB_b, device w's busy time in the block, its side nodes included), and
// the DP the frontier of their sums, whose least max(Σ LB_b, Σ busy) is the bound; without,
// the plain module DP.
type dpMix struct {
	w      int
	side   []sideNode
	pareto bool
}

// front is a Pareto frontier of (LB, busy) points: sorted by LB ascending, busy descending.
type front [][2]float64

// dominated reports whether some point is ≤ (i, l) in both coordinates.
func (f front) dominated(i, l float64) bool {
	for _, p := range f {
		if p[0] <= i && p[1] <= l {
			return true
		}
	}
	return false
}

// add inserts (i, l), dropping the points it dominates.
func (f front) add(i, l float64) front {
	if f.dominated(i, l) {
		return f
	}
	out := f[:0]
	for _, p := range f {
		if !(i <= p[0] && l <= p[1]) {
			out = append(out, p)
		}
	}
	return append(out, [2]float64{i, l})
}

// prune sorts the frontier, drops dominated points and, above size points, merges
// neighbours into their componentwise minimum (a point below both: the frontier stays below
// every point it stands for).
func (f front) prune(size int) front {
	slices.SortFunc(f, func(a, b [2]float64) int {
		switch {
		case a[0] < b[0]:
			return -1
		case a[0] > b[0]:
			return 1
		case a[1] < b[1]:
			return -1
		case a[1] > b[1]:
			return 1
		}
		return 0
	})
	out := f[:0]
	for _, p := range f {
		if len(out) == 0 || p[1] < out[len(out)-1][1] {
			out = append(out, p)
		}
	}
	for len(out) > size {
		m := out[:0]
		for x := 0; x < len(out); x += 2 {
			if x+1 < len(out) {
				m = append(m, [2]float64{out[x][0], out[x+1][1]})
			} else {
				m = append(m, out[x])
			}
		}
		out = m
	}
	return out
}

// moduleBlocks splits the graph at its cut nodes; nil when there is no cut (one block) or
// the graph is too large for cutNodes' quadratic sets.
func (in *inst) moduleBlocks() []moduleBlock {
	if in.numNodes > moduleDPMaxNodes {
		return nil
	}
	cuts := in.cutNodes()
	isCut := make([]bool, in.numNodes)
	for _, c := range cuts {
		isCut[c] = true
	}
	var out []moduleBlock
	cur := moduleBlock{entry: -1, exit: -1, first: true}
	for _, i := range in.topo {
		cur.nodes = append(cur.nodes, i)
		if isCut[i] {
			cur.exit = i
			out = append(out, cur)
			cur = moduleBlock{entry: i, exit: -1}
		}
	}
	if len(cur.nodes) > 0 {
		out = append(out, cur)
	} else if len(out) > 0 {
		out[len(out)-1].exit = -1 // the graph ends with a cut node: the last block has no exit
	}
	return out
}

// moduleDPMaxNodes bounds the graphs the module DP is tried on (cutNodes keeps an ancestor
// set per node).
const moduleDPMaxNodes = 6000

// moduleDP computes the bound within deadline (zero: none) and a total budget of branch and
// bound nodes.
func (in *inst) moduleDP(ctx context.Context, deadline time.Time, budget int64, workers int) *moduleDPResult {
	return in.moduleDPMix(ctx, deadline, budget, workers, dpMix{w: -1})
}

// moduleDPMix is moduleDP with a mixed objective (relaxedModuleDP).
func (in *inst) moduleDPMix(ctx context.Context, deadline time.Time, budget int64, workers int, mix dpMix) *moduleDPResult {
	if !in.latency() || in.pinnedGranules != nil || in.numDevices < 2 {
		return nil
	}
	blocks := in.moduleBlocks()
	if len(blocks) == 0 {
		return nil
	}
	if len(mix.side) > 0 {
		// Each side node joins the block of its earliest consumer (kept, or a side node's,
		// in reverse topological order of the side list); block 0 when it has none.
		of := make([]int, in.numNodes)
		for b, blk := range blocks {
			for _, i := range blk.nodes {
				of[i] = b
			}
		}
		sb := make([]int, len(mix.side))
		for s := len(mix.side) - 1; s >= 0; s-- {
			sb[s] = -1
			for _, c := range mix.side[s].cons {
				if sb[s] < 0 || of[c] < sb[s] {
					sb[s] = of[c]
				}
			}
			for t := s + 1; t < len(mix.side); t++ {
				if slices.Contains(mix.side[t].from, s) && sb[t] >= 0 && (sb[s] < 0 || sb[t] < sb[s]) {
					sb[s] = sb[t]
				}
			}
		}
		for s := range mix.side {
			b := max(sb[s], 0)
			blocks[b].side = append(blocks[b].side, s)
		}
	}
	type job struct {
		b, u, v int
		val     float64
		dev     []int // argmin leaf (block order), nil when none
		exact   bool
		front   front // pareto
	}
	var jobs []*job
	for b, blk := range blocks {
		for _, u := range in.devicesOf(blk.entry) {
			for _, v := range in.devicesOf(blk.exit) {
				jobs = append(jobs, &job{b: b, u: u, v: v})
			}
		}
	}
	runBudgeted(len(jobs), workers, budget, func(x int, share int64) int64 {
		j := jobs[x]
		bb := newBlockBB(in, &blocks[j.b], j.u, j.v, mix)
		j.val, j.dev, j.exact = bb.solve(ctx, deadline, max(share, 20000))
		j.front = bb.front.prune(paretoSize)
		return bb.nodes
	})
	if ctx.Err() != nil {
		return nil
	}
	if mix.pareto {
		pj := make([]paretoJob, len(jobs))
		for x, j := range jobs {
			pj[x] = paretoJob{j.b, j.u, j.v, j.front, j.exact}
		}
		return paretoDP(len(blocks), pj)
	}
	// The DP over the cut devices (−1: no cut).
	type cell struct {
		v   float64
		job int
	}
	dp := make([]map[int]cell, len(blocks))
	for b := range blocks {
		dp[b] = map[int]cell{}
		for x, j := range jobs {
			if j.b != b || math.IsInf(j.val, 1) || math.IsNaN(j.val) {
				continue
			}
			prev := 0.0
			if b > 0 {
				c, ok := dp[b-1][j.u]
				if !ok {
					continue
				}
				prev = c.v
			}
			if c, ok := dp[b][j.v]; !ok || prev+j.val < c.v {
				dp[b][j.v] = cell{prev + j.val, x}
			}
		}
	}
	last := dp[len(blocks)-1]
	best, at := math.Inf(1), -1
	for _, v := range slices.Sorted(maps.Keys(last)) {
		if last[v].v < best {
			best, at = last[v].v, v
		}
	}
	if math.IsInf(best, 1) {
		return nil
	}
	// The sums are exact up to rounding: keep a little margin.
	r := &moduleDPResult{bound: best * (1 - 1e-9), exact: true}
	for _, j := range jobs {
		r.exact = r.exact && j.exact
	}
	// Stitch the argmin leaves along the DP.
	dev := make([]int, in.numNodes)
	c := last[at]
	for b := len(blocks) - 1; b >= 0; b-- {
		j := jobs[c.job]
		if j.dev == nil {
			dev = nil
			break
		}
		for x, i := range blocks[b].nodes {
			dev[i] = j.dev[x]
		}
		if b > 0 {
			c = dp[b-1][j.u]
		}
	}
	r.dev = dev
	return r
}

// blockBB is the branch and bound of one (block, entry device, exit device).
type blockBB struct {
	in    *inst
	blk   *moduleBlock
	u, v  int
	n, k  int
	calls bool // block 0 with first calls
	// mixed objective: side nodes (indices into mix.side), their devices and work, the side
	// nodes feeding each block node, and for each side node its earlier side producers
	// (positions in side)
	mix      dpMix
	side     []int
	sdev     []int
	sideWork float64 // side work (and side calls) on mix.w
	sideIn   [][]int // sideIn[x]: positions in side of the side nodes with an edge into x
	sideFrom [][]int // sideFrom[s]: positions in side of s's side producers
	front    front   // pareto: the frontier (leaves and cut subtrees' bounds)
	// per local node: its devices in the order tried, its in-edges (edge, local producer or
	// −1 for the entry cut), the block tail tail[x][w].
	order  [][]int
	inE    [][][2]int
	tail   [][]float64
	rest   []float64 // rest[x]: Σ_{y ≥ x} fastest time of y (on its allowed devices)
	ghostT float64   // the entry cut's tail (on u)
	// state
	dev            []int
	fin            []float64
	work, ingress  []float64
	egress         []float64
	openers        []int
	used           []int
	best           float64
	bestDev        []int
	open           float64 // min over the budget-cut subtrees' bounds
	nodes, budget  int64
	deadline       time.Time
	ctx            context.Context
	stopped        bool
	congestion     bool
	calls0, source []bool
	// ct, when set, caps each device's openers in the block and keeps the best leaf and the
	// open subtrees' bounds per opener vector (bounds_cap.go); best, bestDev and open are
	// then unused.
	ct *capTrack
	// byExit, when set (exit device exitFree), holds a track per exit device: each leaf goes
	// to its exit's device's track, and a subtree is pruned against the largest of theirs.
	byExit []*capTrack
	// capAdm[o]: the least opener vectors a leaf below vector o must reach to be new to the
	// tracks (capTrack.admissible); a subtree is pruned against their best leaves.
	capAdm [][]int
	// nsucc[x]: x's non-free edges to later block nodes; ghostSucc: the entry cut's.
	nsucc     []int
	ghostSucc int
	cs        *capState
}

func newBlockBB(in *inst, blk *moduleBlock, u, v int, mix dpMix) *blockBB {
	n, k := len(blk.nodes), in.numDevices
	bb := &blockBB{in: in, blk: blk, u: u, v: v, n: n, k: k, calls: blk.first && in.sourceCalls, congestion: in.problem.Congestion, mix: mix}
	local := map[int]int{}
	for x, i := range blk.nodes {
		local[i] = x
	}
	if mix.pareto {
		bb.side = blk.side
		bb.sdev = make([]int, len(bb.side))
		bb.sideIn = make([][]int, n)
		bb.sideFrom = make([][]int, len(bb.side))
		pos := map[int]int{}
		for q, s := range bb.side {
			pos[s] = q
		}
		for q, s := range bb.side {
			for _, c := range mix.side[s].cons {
				if x, ok := local[c]; ok {
					bb.sideIn[x] = append(bb.sideIn[x], q)
				}
			}
			for _, f := range mix.side[s].from {
				if r, ok := pos[f]; ok && r < q {
					bb.sideFrom[q] = append(bb.sideFrom[q], r)
				}
			}
		}
	}
	allowed := func(x, w int) bool {
		i := blk.nodes[x]
		if !in.canRun(i, w) {
			return false
		}
		return !(i == blk.exit && v >= 0 && w != v)
	}
	bb.order = make([][]int, n)
	bb.inE = make([][][2]int, n)
	bb.rest = make([]float64, n+1)
	for x, i := range blk.nodes {
		for w := range k {
			if allowed(x, w) {
				bb.order[x] = append(bb.order[x], w)
			}
		}
		slices.SortStableFunc(bb.order[x], func(a, b int) int {
			ta, tb := in.granuleTime[i][a], in.granuleTime[i][b]
			switch {
			case ta < tb:
				return -1
			case ta > tb:
				return 1
			}
			return 0
		})
		for _, e := range in.inE[i] {
			p := in.problem.Edges[e].From
			if y, ok := local[p]; ok {
				bb.inE[x] = append(bb.inE[x], [2]int{e, y})
			} else {
				bb.inE[x] = append(bb.inE[x], [2]int{e, -1}) // from the entry cut
			}
		}
	}
	for x := n - 1; x >= 0; x-- {
		f := math.Inf(1)
		for _, w := range bb.order[x] {
			f = min(f, in.granuleTime[blk.nodes[x]][w])
		}
		bb.rest[x] = bb.rest[x+1] + f
	}
	// Block tails: tail[x][w] ≤ T_b − (end of x) when x is on w (commTail within the block).
	bb.tail = make([][]float64, n)
	succ := make([][][2]int, n) // (edge, local consumer)
	var ghostOut [][2]int
	for y := range n {
		for _, ey := range bb.inE[y] {
			if ey[1] >= 0 {
				succ[ey[1]] = append(succ[ey[1]], [2]int{ey[0], y})
			} else {
				ghostOut = append(ghostOut, [2]int{ey[0], y})
			}
		}
	}
	bb.nsucc = make([]int, n)
	for x := range n {
		for _, s := range succ[x] {
			if !in.free[s[0]] {
				bb.nsucc[x]++
			}
		}
	}
	for _, s := range ghostOut {
		if !in.free[s[0]] {
			bb.ghostSucc++
		}
	}
	tailOf := func(outs [][2]int, w int) float64 {
		best := 0.0
		for _, s := range outs {
			e, y := s[0], s[1]
			m := math.Inf(1)
			for _, w2 := range bb.order[y] {
				c := in.comm(e, w, w2, 1)
				if math.IsInf(c, 1) {
					continue
				}
				if w2 != w && !in.free[e] {
					c += in.callCost[w2]
				}
				m = min(m, c+in.granuleTime[blk.nodes[y]][w2]+bb.tail[y][w2])
			}
			best = max(best, m) // +Inf: no completion puts the successor anywhere
		}
		return best
	}
	for x := n - 1; x >= 0; x-- {
		bb.tail[x] = make([]float64, k)
		for w := range k {
			bb.tail[x][w] = tailOf(succ[x], w)
		}
	}
	if u >= 0 {
		bb.ghostT = tailOf(ghostOut, u)
	}
	bb.dev = make([]int, n)
	bb.fin = make([]float64, n)
	bb.work = make([]float64, k)
	bb.ingress = make([]float64, k)
	bb.egress = make([]float64, k)
	bb.openers = make([]int, k)
	bb.used = make([]int, k)
	return bb
}

// loadOf is device w's busy time in the block so far (its tasks and its stages' calls). In
// block 0 a device that runs a task of positive time there has paid its first call by then:
// its first task d (in the simulator's order) opens a stage, and a task of positive time
// that is not d waits for w, so for d's end; a task of time 0 does not wait (and a deleted
// node of relaxedModuleDP may be d and run later), so only positive times count (used).
func (bb *blockBB) loadOf(w int) float64 {
	st := bb.openers[w]
	if bb.calls && bb.used[w] > 0 && st == 0 {
		st = 1
	}
	return bb.work[w] + bb.in.callCost[w]*float64(st)
}

// busyOf is device w's busy time in the block for the Pareto DP's sum over the blocks: its
// tasks and its openers' calls (not block 0's first call, which may be a side node's).
func (bb *blockBB) busyOf(w int) float64 {
	return bb.work[w] + bb.in.callCost[w]*float64(bb.openers[w])
}

// loadLB is the load part of the partial bound after x nodes are placed.
func (bb *blockBB) loadLB(x int) float64 {
	lb, sum := 0.0, 0.0
	for w := range bb.k {
		l := bb.loadOf(w)
		sum += l
		lb = max(lb, l)
		if bb.congestion {
			lb = max(lb, max(bb.ingress[w], bb.egress[w]))
		}
	}
	lb = max(lb, (sum+bb.rest[x])/float64(bb.k))
	if bb.cs != nil {
		lb = max(lb, bb.cs.loadLB(bb, x))
	}
	return lb
}

// solve runs the search with a node budget; it returns V (≤ the minimum of LB_b over the
// block's placements), the argmin leaf (nil when none was reached) and whether the search
// ended (V is then the minimum).
func (bb *blockBB) solve(ctx context.Context, deadline time.Time, budget int64) (float64, []int, bool) {
	bb.ctx, bb.deadline, bb.budget = ctx, deadline, budget
	bb.best, bb.open = math.Inf(1), math.Inf(1)
	if bb.ct != nil {
		bb.cs = newCapState(bb)
	}
	if math.IsInf(bb.ghostT, 1) {
		return math.Inf(1), nil, true
	}
	bb.sideDFS(0)
	v := min(bb.best, bb.open)
	return v, bb.bestDev, !bb.stopped
}

// sideDFS places side node q (they come first), then the block's nodes (dfs). A side node on
// mix.w adds its time, and the device's call when an edge from an earlier side node crosses
// into it, to w's busy time. A side node off w is placed on "any other device" (sdev −1): it
// counts as being on the device of each of its consumers that is not on w, so only the
// consumers on w open a stage for it. That admits more than the placements (a relaxation of
// the min over them, so the frontier stays below every placement's point) and leaves two
// choices per side node instead of K.
func (bb *blockBB) sideDFS(q int) {
	if q == len(bb.side) {
		bb.dfs(0, bb.ghostT)
		return
	}
	in := bb.in
	sn := &bb.mix.side[bb.side[q]]
	before := bb.sideWork
	off := false // q can run off w
	for w := range bb.k {
		if t := sn.time[w]; w != bb.mix.w && t >= 0 && !math.IsInf(t, 1) {
			off = true
		}
	}
	for _, w := range []int{bb.mix.w, -1} {
		if w >= 0 {
			if t := sn.time[w]; t < 0 || math.IsInf(t, 1) {
				continue
			}
		} else if !off {
			continue
		}
		add := 0.0
		if w == bb.mix.w {
			t := sn.time[w]
			add = t
			for _, r := range bb.sideFrom[q] {
				if bb.sdev[r] != w {
					add += in.callCost[w]
					break
				}
			}
		}
		bb.sdev[q] = w
		bb.sideWork = before + add
		bb.sideDFS(q + 1)
		bb.sideWork = before
		if bb.stopped {
			// The other devices of q are open subtrees: their side work is ≥ before.
			base := max(bb.ghostT, bb.loadLB(0))
			if bb.mix.pareto {
				bb.front = bb.front.add(base, bb.busyOf(bb.mix.w)+before)
			}
			bb.open = min(bb.open, base)
			return
		}
	}
}

// dfs places local node x; path is the largest end + tail so far.
func (bb *blockBB) dfs(x int, path float64) {
	base := max(path, bb.loadLB(x))
	lb := base
	busy := 0.0 // pareto: w's busy time so far
	if bb.mix.pareto {
		busy = bb.busyOf(bb.mix.w) + bb.sideWork
		if bb.front.dominated(base, busy) {
			return
		}
		if x == bb.n {
			bb.front = bb.front.add(base, busy)
			return
		}
	} else if bb.ct != nil {
		if lb >= bb.capBest() || bb.cs.infeasible(bb, x) {
			return
		}
		if x == bb.n {
			t := bb.capTrackOf()
			if b := t.bestOf(bb.openers); lb < b {
				if lb = max(lb, bb.machineLB()); lb < b {
					t.leaf(bb.openers, lb, bb.dev)
				}
			}
			return
		}
	} else {
		if lb >= bb.best {
			return
		}
		if x == bb.n {
			bb.best = lb
			bb.bestDev = append(bb.bestDev[:0], bb.dev...)
			return
		}
	}
	bb.nodes++
	if bb.nodes > bb.budget || (bb.nodes&1023 == 0 && (bb.ctx.Err() != nil || (!bb.deadline.IsZero() && time.Now().After(bb.deadline)))) {
		bb.budget = 0 // stop everywhere
		bb.stopped = true
		bb.open = min(bb.open, lb)
		if bb.ct != nil {
			bb.capCut(lb)
		}
		if bb.mix.pareto {
			bb.front = bb.front.add(base, busy)
		}
		return
	}
	in := bb.in
	i := bb.blk.nodes[x]
	// Capped: the devices of x's producers along non-free edges, so that a device on which x
	// would open a stage beyond the budget is skipped before its edges are priced.
	pmask := 0
	if bb.ct != nil && !in.source[i] && bb.sideIn == nil {
		for _, ey := range bb.inE[x] {
			if in.free[ey[0]] {
				continue
			}
			pw := bb.u
			if ey[1] >= 0 {
				pw = bb.dev[ey[1]]
			}
			if pw >= 0 {
				pmask |= 1 << pw
			}
		}
	}
	for _, w := range bb.order[x] {
		if pmask&^(1<<w) != 0 && bb.openers[w] >= bb.ct.run[w] {
			continue // x would open a stage on w, whose openers are spent
		}
		t := in.granuleTime[i][w]
		ready := 0.0
		opens := false
		var inSum float64
		feasible := true
		for _, ey := range bb.inE[x] {
			e, y := ey[0], ey[1]
			pw, pf := bb.u, 0.0
			if y >= 0 {
				pw, pf = bb.dev[y], bb.fin[y]
			}
			a := pf
			if pw != w && !in.free[e] {
				c := in.comm(e, pw, w, 1)
				if math.IsInf(c, 1) {
					feasible = false
					break
				}
				a += c
				opens = true
				inSum += c
			}
			ready = max(ready, a)
		}
		if !feasible {
			continue
		}
		if in.source[i] {
			opens = false // a source opens only as its device's first task (counted in used)
		}
		if bb.sideIn != nil {
			for _, q := range bb.sideIn[x] {
				// It reads a side node's tensor from another device (off w: every device but w).
				if sq := bb.sdev[q]; (sq < 0 && w == bb.mix.w) || (sq >= 0 && sq != w) {
					opens = true
				}
			}
		}
		if opens && bb.ct != nil && (bb.openers[w] >= bb.ct.run[w] || bb.cs.blocked(x, w)) {
			continue // over the device's opener cap, or off a tight packing (bounds_cap.go)
		}
		call := 0.0
		if opens {
			call = in.callCost[w]
		}
		f := ready + call + t
		if bb.calls && t > 0 {
			f = max(f, in.callCost[w]+t)
		}
		np := max(path, f+bb.tail[x][w])
		if math.IsInf(np, 1) {
			continue
		}
		// Apply.
		if bb.cs != nil {
			bb.cs.place(bb, x, w, 1)
			bb.cs.opened[x] = opens
			if opens {
				bb.cs.opens(x, 1)
			}
		}
		bb.dev[x], bb.fin[x] = w, f
		bb.work[w] += t
		if opens {
			bb.openers[w]++
		}
		if t > 0 {
			bb.used[w]++ // a task of time 0 need not wait for w's first call (see loadOf)
		}
		if bb.congestion && inSum > 0 {
			bb.ingress[w] += inSum
			for _, ey := range bb.inE[x] {
				e, y := ey[0], ey[1]
				pw := bb.u
				if y >= 0 {
					pw = bb.dev[y]
				}
				if pw != w && !in.free[e] {
					bb.egress[pw] += in.comm(e, pw, w, 1)
				}
			}
		}
		bb.dfs(x+1, np)
		// Undo.
		if bb.cs != nil {
			bb.cs.place(bb, x, w, -1)
			if opens {
				bb.cs.opens(x, -1)
			}
		}
		bb.work[w] -= t
		if opens {
			bb.openers[w]--
		}
		if t > 0 {
			bb.used[w]--
		}
		if bb.congestion && inSum > 0 {
			bb.ingress[w] -= inSum
			for _, ey := range bb.inE[x] {
				e, y := ey[0], ey[1]
				pw := bb.u
				if y >= 0 {
					pw = bb.dev[y]
				}
				if pw != w && !in.free[e] {
					bb.egress[pw] -= in.comm(e, pw, w, 1)
				}
			}
		}
		if bb.budget == 0 && bb.stopped {
			// Out of budget: the remaining siblings are open subtrees; their bound is ≥ lb
			// (pareto: their points are ≥ (base, busy); capped: their opener vectors are ≥
			// this node's).
			bb.open = min(bb.open, lb)
			if bb.ct != nil {
				bb.capCut(lb)
			}
			if bb.mix.pareto {
				bb.front = bb.front.add(base, busy)
			}
			return
		}
	}
}

// moduleDPBudget is the module DP's total branch-and-bound nodes (about a second of one core
// at most; chains of small modules need a few thousand).
const moduleDPBudget = 3_000_000

// moduleBound adds the module DP's bound (latency mode) within a tenth of the time left (its
// node budget alone without a deadline), and
// keeps its stitched placement as a candidate (s.mdpPlan, judged after the constructive
// heuristics).
func (s *solver) moduleBound() {
	var dl time.Time
	workers := s.o.Workers
	if !s.deadline.IsZero() {
		dl = time.Now().Add(time.Until(s.deadline) / 10)
	} else {
		// No deadline: the node budget alone stops it, and one worker hands the budget on
		// in a fixed order, so the bound and the stitched plan are reproducible.
		workers = 1
	}
	r := s.in.moduleDP(s.ctx, dl, moduleDPBudget, workers)
	if r != nil {
		s.addBound("module-dp", r.bound)
		s.report("", "module DP bound")
		if r.dev != nil {
			s.mdpPlan = &Placement{Device: r.dev, Order: positions(s.in.bfs)}
		}
	}
	if r == nil || !r.exact || relaxAlways {
		if r := s.in.relaxedModuleDP(s.ctx, dl, moduleDPBudget, workers); r != nil {
			s.addBound("module-dp-relaxed", r.bound)
			s.report("", "module DP bound on a sub-graph with more cut nodes")
		}
	}
}

// relaxedModuleDP is the module DP on a sub-DAG of the problem with more cut nodes: the
// nodes D incomparable with a few chosen spine nodes are deleted, and the edges R jumping
// over those spine nodes are dropped, so that each chosen node lies on every source–sink
// path of what is left (a transformer's layer boundaries, whose only obstacles are the next
// layer's mask nodes, fed from the input, and the residual edges).
//
// Proof that it bounds the original problem: restrict any plan to the kept nodes and edges.
// Every term of LB_b (moduleDP's proof) is then a lower bound in the original plan too:
// a kept node starts after its kept inputs arrived, and opens a stage (pays its call) when a
// kept non-free edge crosses into it, as it does in the original; its device is busy with it
// for its time; a device's openers in the sub-DAG are openers in the original, distinct
// stages; w's first task d in the original (kept or not) opens a stage, which gives block
// 0's first-call terms (a kept task of positive time on w is d or waited for d's end; the
// "positive" matters here: a deleted d may run after a kept task of time 0); kept
// transfers are original transfers. The interval argument holds for the
// sub-DAG's cut nodes: a kept node after c_{b−1} in the sub-DAG is its descendant there,
// hence in the original, and likewise an ancestor of c_b. The deleted nodes' work, the
// dropped edges' transfers and the calls they cause are what the relaxation gives up; the
// Pareto DP (below) gives part of the deleted work back through a device's busy time.
//
// The spine is chosen from the sink backwards (see the loop's comment); the deleted work is
// kept within relaxTotal of the total fastest work.
func (in *inst) relaxedModuleDP(ctx context.Context, deadline time.Time, budget int64, workers int) *moduleDPResult {
	if !in.latency() || in.pinnedGranules != nil || in.numDevices < 2 || in.numNodes > relaxMaxNodes {
		return nil
	}
	n := in.numNodes
	fast := make([]float64, n)
	total := 0.0
	for i := range n {
		fast[i] = math.Inf(1)
		for u := range in.numDevices {
			fast[i] = min(fast[i], in.granuleTime[i][u])
		}
		total += fast[i]
	}
	// Spine nodes from the sink backwards: a node is chosen for free when it adds nothing to
	// the deleted set (its incomparable nodes are deleted already, or it has none); once the
	// stretch since the last chosen node reaches relaxBlock nodes, the node of least added
	// work within the next relaxBlock positions is chosen, when it adds at most relaxShare of
	// the total work and the deleted set stays within relaxTotal. No chosen node is
	// incomparable with another. (A transformer's layer boundary has the later layers' mask
	// nodes as obstacles: the last layers' are deleted first, and each earlier boundary adds
	// one layer's, less than a node inside the attention, whose obstacles are its sibling
	// branches too.)
	deleted := make([]bool, n)
	chosen := make([]bool, n)
	var spine []int
	lost := 0.0
	marginal := func(a int) (float64, []int, bool) {
		extra := 0.0
		var inc []int
		for y := range n {
			if y != a && !in.reaches(y, a) && !in.reaches(a, y) {
				if chosen[y] {
					return 0, nil, false
				}
				inc = append(inc, y)
				if !deleted[y] {
					extra += fast[y]
				}
			}
		}
		return extra, inc, true
	}
	choose := func(a int, extra float64, inc []int) {
		for _, y := range inc {
			deleted[y] = true
		}
		lost += extra
		chosen[a] = true
		spine = append(spine, a)
	}
	last := n
	for x := n - 1; x >= 0; x-- {
		if x%64 == 0 && (ctx.Err() != nil || (!deadline.IsZero() && time.Now().After(deadline))) {
			return nil
		}
		a := in.topo[x]
		if deleted[a] {
			continue
		}
		extra, inc, ok := marginal(a)
		if ok && extra == 0 {
			choose(a, 0, inc)
			last = x
			continue
		}
		if last-x < relaxBlock {
			continue
		}
		bx, bExtra := -1, math.Inf(1)
		for y := x; y >= 0 && y > x-relaxBlock; y-- {
			if deleted[in.topo[y]] {
				continue
			}
			if e, _, ok := marginal(in.topo[y]); ok && e < bExtra {
				bx, bExtra = y, e
			}
		}
		if bx < 0 || bExtra > relaxShare*total || lost+bExtra > relaxTotal*total {
			continue
		}
		e, inc, _ := marginal(in.topo[bx])
		choose(in.topo[bx], e, inc)
		last, x = bx, bx
	}
	if len(spine) == 0 {
		return nil
	}
	// Edges jumping over a chosen node: from its ancestor to its descendant.
	dropped := make([]bool, len(in.problem.Edges))
	for e := range in.problem.Edges {
		ed := &in.problem.Edges[e]
		if deleted[ed.From] || deleted[ed.To] {
			dropped[e] = true
			continue
		}
		for _, a := range spine {
			if in.reaches(ed.From, a) && in.reaches(a, ed.To) {
				dropped[e] = true
				break
			}
		}
	}
	p := in.problem
	q := &Problem{Devices: p.Devices, Links: p.Links, Congestion: p.Congestion}
	local := make([]int, n)
	sidePos := make([]int, n)
	var side []sideNode
	for _, i := range in.topo {
		local[i], sidePos[i] = -1, -1
		if deleted[i] {
			sidePos[i] = len(side)
			side = append(side, sideNode{time: in.granuleTime[i]})
		}
	}
	for i := range n {
		if !deleted[i] {
			local[i] = len(q.Nodes)
			q.Nodes = append(q.Nodes, Node{Name: p.Nodes[i].Name, Time: in.granuleTime[i]})
		}
	}
	if len(q.Nodes) == 0 {
		return nil
	}
	for e, ed := range p.Edges {
		switch {
		case !dropped[e]:
			c := ed
			c.From, c.To = local[ed.From], local[ed.To]
			q.Edges = append(q.Edges, c)
		case in.free[e]:
		case deleted[ed.From] && !deleted[ed.To]:
			sn := &side[sidePos[ed.From]]
			sn.cons = append(sn.cons, local[ed.To])
		case deleted[ed.From] && deleted[ed.To]:
			sn := &side[sidePos[ed.To]]
			sn.from = append(sn.from, sidePos[ed.From])
		}
	}
	sub, err := prepare(q)
	if err != nil {
		return nil
	}
	// The plain DP on the sub-DAG, then the Pareto DPs, which give back part of the deleted
	// work: for a device w, max(Σ_b LB_b, w's busy time) ≤ the makespan (Σ_b LB_b ≤ it by
	// the interval argument, and w runs every task placed on it one at a time within
	// [0, makespan]: the kept nodes' work and their openers' calls, block by block, and the
	// deleted ("side") nodes' work and the calls of those that read a side node's tensor from
	// another device — all distinct). A kept node that reads a side node's tensor from
	// another device opens a stage: its call counts in its block (the call is part of its
	// duration, within the block's interval), wherever the side node ran. Each side node is
	// attributed to one block (its earliest consumer's; its edges to other blocks, and from
	// kept nodes, dropped: a relaxation), so (Σ_b LB_b, busy) is a sum over the blocks of
	// their (LB_b, busy_b), and the DP over the blocks' Pareto frontiers (paretoDP) reaches a
	// point below every placement's.
	// The Pareto DPs for the devices that carry the most work first (their busy time is the
	// one the deleted nodes add to), the first with most of the budget.
	mixes := []dpMix{{w: -1}}
	devs := make([]int, in.numDevices)
	work := make([]float64, in.numDevices)
	for w := range devs {
		devs[w] = w
		for i := range n {
			if !deleted[i] {
				work[w] += in.granuleTime[i][w]
			}
		}
	}
	slices.SortStableFunc(devs, func(a, b int) int { return cmpFloat(work[a], work[b]) })
	for _, w := range devs[:min(2, len(devs))] {
		mixes = append(mixes, dpMix{w: w, side: side, pareto: true})
	}
	var best *moduleDPResult
	spent := int64(0)
	for x, mix := range mixes {
		share := (budget - spent) / int64(len(mixes)-x)
		if x == 1 {
			share = (budget - spent) * 2 / 3
		}
		r := sub.moduleDPMix(ctx, deadline, share, workers, mix)
		spent += share
		if r != nil && (best == nil || r.bound > best.bound) {
			best = r
		}
		if ctx.Err() != nil || (!deadline.IsZero() && time.Now().After(deadline)) {
			break
		}
	}
	if best != nil {
		best.dev = nil // the deleted nodes have no device
	}
	return best
}

// relaxShare and relaxTotal are relaxedModuleDP's limits on the work it deletes: per spine
// node and in all, as shares of the total fastest work (variables: the harness raises them
// to exercise the relaxation on its small instances; any value keeps the bound valid).
var relaxShare, relaxTotal = 0.02, 0.12

// relaxMaxNodes bounds the graphs relaxedModuleDP is tried on: choosing the spine takes
// O(relaxBlock·n²) reachability tests.
const relaxMaxNodes = 2500

// relaxBlock is the stretch after which relaxedModuleDP pays for a spine node.
var relaxBlock = 12

// relaxAlways makes moduleBound run the relaxed DP even where the plain one is exact (the
// harness's switch, to check it on every instance).
var relaxAlways bool

// paretoSize caps the frontiers of the Pareto DP (merged neighbours stay below).
const paretoSize = 128

// paretoJob is one job of the Pareto DP.
type paretoJob struct {
	b, u, v int
	front   front
	exact   bool
}

// paretoDP is the DP of sums of the blocks' (LB_b, busy_b) frontiers over the cut devices:
// every placement's (Σ LB_b, Σ busy_b) is ≥ some point of the last frontier in both
// coordinates (each block's point is, and merged points are below what they replace), so
// the least max over those points is ≤ max(Σ LB_b, busy) of every placement — ≤ the
// makespan, both being lower bounds of it.
func paretoDP(nb int, jobs []paretoJob) *moduleDPResult {
	fr := make([]map[int]front, nb)
	exact := true
	for b := range nb {
		fr[b] = map[int]front{}
		for _, j := range jobs {
			if j.b != b || len(j.front) == 0 {
				continue
			}
			exact = exact && j.exact
			prev := front{{0, 0}}
			if b > 0 {
				var ok bool
				if prev, ok = fr[b-1][j.u]; !ok {
					continue
				}
			}
			cur := fr[b][j.v]
			for _, p := range prev {
				for _, q := range j.front {
					cur = append(cur, [2]float64{p[0] + q[0], p[1] + q[1]})
				}
			}
			fr[b][j.v] = cur.prune(4 * paretoSize)
		}
		for v, f := range fr[b] {
			fr[b][v] = f.prune(paretoSize)
		}
	}
	best := math.Inf(1)
	for _, f := range fr[nb-1] {
		for _, p := range f {
			best = min(best, max(p[0], p[1]))
		}
	}
	if math.IsInf(best, 1) {
		return nil
	}
	return &moduleDPResult{bound: best * (1 - 1e-9), exact: exact}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// runBudgeted runs jobs 0..n−1 on up to workers goroutines, in order of x: each gets as its
// share the node budget left over the jobs not yet done, and returns the nodes it used, so
// small jobs (sorted first) that end early leave their share to the larger ones. With one
// worker the shares, hence the results, are reproducible.
func runBudgeted(n, workers int, budget int64, run func(x int, share int64) (used int64)) {
	var left, next, done atomic.Int64
	left.Store(budget)
	var wg sync.WaitGroup
	for range max(1, min(workers, n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				x := int(next.Add(1) - 1)
				if x >= n {
					return
				}
				share := left.Load() / max(1, int64(n)-done.Load())
				left.Add(-run(x, share))
				done.Add(1)
			}
		}()
	}
	wg.Wait()
}
