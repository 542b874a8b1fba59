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
	// sure[x]: x's own call is certain (it reads a crossing ordinary edge; machineLB's
	// paths). With chains contracted (bounds_chains.go): chainIn[x], the positions of x's
	// chain edges in inE[x] (nil: none).
	sure    []bool
	chainIn [][]int
	// relief (with chains contracted): relT is the most openers a block can have under the
	// cap (the length of the lists); noRelief switches it off (a leaf's own bound); top[w],
	// top2[w] the largest work of the chains staying on w whose detour takes one opener off
	// w, or one off w and one on it (chainModes), descending; topSave[x] w's lists before x
	// was placed; stays, the rel* and leafTop* slices reliefLeaves' scratch.
	relT              int
	noRelief          bool
	relVec            []int
	stays             []stayChain
	relHead           []float64
	relTail           []float64
	relLoad           []float64
	relPf, relTy      []float64
	top               [][]float64
	top2              [][]float64
	leafTop, leafTop2 [][]float64
	topSave           [][]float64
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
				if in.chains != nil && in.chains[e] != nil {
					c = in.chains[e].lo(w, w2, in.callCost[w2]) // bounds_chains.go
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
	if in.chains != nil {
		// Merged nodes (bounds_chains.go): their chain edges' positions in inE.
		bb.chainIn = make([][]int, n)
		for x := range n {
			for pos, ey := range bb.inE[x] {
				if in.chains[ey[0]] != nil {
					bb.chainIn[x] = append(bb.chainIn[x], pos)
				}
			}
		}
	}
	bb.sure = make([]bool, n)
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
		l := bb.loadOf(w) - bb.relief(w)
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
			if bb.top != nil {
				bb.reliefLeaves(t, path)
				return
			}
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
		bb.stopAt(lb, base, busy)
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
	chained := bb.chained(x)
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
				inSum += c
				if chained && in.chains[e] != nil {
					continue // a chain edge: its arrival and call depend on its mode (chainModes)
				}
				a += c
				opens = true
			}
			if !chained || in.chains[e] == nil {
				ready = max(ready, a)
			}
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
		if chained {
			if bb.chainModes(x, w, t, ready, opens, inSum, path) {
				bb.stopAt(lb, base, busy)
				return
			}
			continue
		}
		if opens && bb.ct != nil && (bb.openers[w] >= bb.ct.run[w] || bb.cs.blocked(x, w)) {
			continue // over the device's opener cap, or off a tight packing (bounds_cap.go)
		}
		call := 0.0
		if opens {
			call = in.callCost[w]
		}
		if bb.step(x, w, t, ready+call+t, 0, opens, opens, inSum, path) {
			bb.stopAt(lb, base, busy)
			return
		}
	}
}

// stopAt records, once the budget or the time ran out below a node of bound lb, its
// unsearched siblings as open subtrees: their bound is ≥ lb (pareto: their points are ≥
// (base, busy); capped: their opener vectors are ≥ this node's).
func (bb *blockBB) stopAt(lb, base, busy float64) {
	bb.open = min(bb.open, lb)
	if bb.ct != nil {
		bb.capCut(lb)
	}
	if bb.mix.pareto {
		bb.front = bb.front.add(base, busy)
	}
}

// step places local node x on w, ending at f (before block 0's first-call term), with extra
// work on w besides its time t (straight chains), opening a stage there when opens (sure:
// the node's own call is certain, machineLB's paths), and inSum of transfers into w; it
// searches below and undoes. It reports whether the search stopped (budget or time).
func (bb *blockBB) step(x, w int, t, f, extra float64, opens, sure bool, inSum, path float64) bool {
	in := bb.in
	if bb.calls && t > 0 {
		f = max(f, in.callCost[w]+t)
	}
	np := max(path, f+bb.tail[x][w])
	if math.IsInf(np, 1) {
		return false
	}
	// Apply.
	if bb.cs != nil {
		bb.cs.place(bb, x, w, 1)
		bb.cs.opened[x] = opens
		if opens {
			bb.cs.opens(x, 1)
		}
	}
	bb.sure[x] = sure
	bb.dev[x], bb.fin[x] = w, f
	bb.work[w] += t + extra
	if opens {
		bb.openers[w]++
	}
	if t > 0 {
		// A task of time 0 need not wait for w's first call (see loadOf); nor need a
		// staying chain's, which a detour may run elsewhere (relief).
		bb.used[w]++
	}
	if bb.congestion && inSum > 0 {
		bb.ingress[w] += inSum
		bb.egressOf(x, w, 1)
	}
	bb.dfs(x+1, np)
	// Undo.
	if bb.cs != nil {
		bb.cs.place(bb, x, w, -1)
		if opens {
			bb.cs.opens(x, -1)
		}
	}
	bb.work[w] -= t + extra
	if opens {
		bb.openers[w]--
	}
	if t > 0 {
		bb.used[w]--
	}
	if bb.congestion && inSum > 0 {
		bb.ingress[w] -= inSum
		bb.egressOf(x, w, -1)
	}
	return bb.budget == 0 && bb.stopped
}

// egressOf adds (sign 1) or removes (−1) the transfers of x's crossing in-edges, x on w, to
// their producers' egress.
func (bb *blockBB) egressOf(x, w, sign int) {
	in := bb.in
	for _, ey := range bb.inE[x] {
		e, y := ey[0], ey[1]
		pw := bb.u
		if y >= 0 {
			pw = bb.dev[y]
		}
		if pw != w && !in.free[e] {
			bb.egress[pw] += float64(sign) * in.comm(e, pw, w, 1)
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

// chainModes places merged node x (bounds_chains.go) on w: its chains from w stay (their
// work counts on w, and as relief), those from elsewhere switch. ready and crossO are its
// ordinary in-edges' latest arrival and whether one crosses; inSum its crossing in-edges'
// transfers. It reports whether the search stopped.
func (bb *blockBB) chainModes(x, w int, t, ready float64, crossO bool, inSum, path float64) bool {
	in := bb.in
	// r0: the latest arrival with no chain ending off w (no call unless an ordinary edge
	// crosses); r1: with some (then x's call); extra: the staying chains' work on w.
	r0, r1, extra, cross := ready, ready, 0.0, false
	for _, pos := range bb.chainIn[x] {
		ey := bb.inE[x][pos]
		ce := in.chains[ey[0]]
		pw, pf := bb.producer(ey)
		r0, r1 = max(r0, pf+ce.a0[pw][w]), max(r1, pf+min(ce.a0[pw][w], ce.a1[pw][w]))
		if pw != w {
			cross = true
		} else {
			extra += ce.straight[w]
		}
	}
	opens := crossO || cross
	if opens && (bb.openers[w] >= bb.ct.run[w] || bb.cs.blocked(x, w)) {
		return false
	}
	if math.IsInf(extra, 1) {
		return false // some staying chain has a node that cannot run on w
	}
	call := bb.in.callCost[w]
	f := r0 + t
	if crossO {
		f += call
	}
	f = min(f, r1+call+t)
	if math.IsInf(f, 1) || math.IsNaN(f) {
		return false
	}
	if bb.top == nil {
		return bb.step(x, w, t, f, extra, opens, crossO, inSum, path)
	}
	// The staying chains' work joins w's largest (relief): a detour of the one chain staying
	// into x when x does not open takes two openers the placement does not count (its first
	// node off w, and the node that returns to w), any other one (x opens, or another chain
	// may return to x first) takes at least one.
	save := bb.topSave[x]
	copy(save[:bb.relT], bb.top[w])
	copy(save[bb.relT:], bb.top2[w])
	stay := bb.staying(x, w)
	cb := bb.capBest()
	for _, pos := range bb.chainIn[x] {
		ey := bb.inE[x][pos]
		pw, pf := bb.producer(ey)
		if pw != w {
			continue
		}
		// A detour's path: x ends no earlier than by its chain's least detour, and the block
		// then takes x's tail; a leaf no better than a best it could improve on is never
		// recorded, so such a chain gives no relief.
		if pf+bb.in.chains[ey[0]].detour[w]+t+bb.tail[x][w] >= cb {
			continue
		}
		if stay == 1 && !opens {
			insertDesc(bb.top2[w], in.chains[ey[0]].straight[w])
		} else {
			insertDesc(bb.top[w], in.chains[ey[0]].straight[w])
		}
	}
	stop := bb.step(x, w, t, f, extra, opens, crossO, inSum, path)
	copy(bb.top[w], save[:bb.relT])
	copy(bb.top2[w], save[bb.relT:])
	return stop
}

// insertDesc inserts v into the descending list l, dropping its last.
func insertDesc(l []float64, v float64) {
	for i := range l {
		if v > l[i] {
			copy(l[i+1:], l[i:])
			l[i] = v
			return
		}
	}
}

// initRelief sets up the relief of a search on a problem with contracted chains: at most t
// openers in a block under the cap.
func (bb *blockBB) initRelief(t int) {
	if bb.chainIn == nil || t <= 0 {
		return
	}
	bb.relT, bb.relVec = t, make([]int, bb.k)
	bb.relHead, bb.relTail, bb.relLoad = make([]float64, bb.k), make([]float64, bb.k), make([]float64, bb.k)
	bb.relPf, bb.relTy = make([]float64, bb.k), make([]float64, bb.k)
	bb.top, bb.top2 = make([][]float64, bb.k), make([][]float64, bb.k)
	bb.leafTop, bb.leafTop2 = make([][]float64, bb.k), make([][]float64, bb.k)
	for w := range bb.top {
		bb.top[w], bb.top2[w] = make([]float64, t), make([]float64, t)
		bb.leafTop[w], bb.leafTop2[w] = make([]float64, t), make([]float64, t)
	}
	bb.topSave = make([][]float64, bb.n)
	for x := range bb.topSave {
		if bb.chainIn[x] != nil {
			bb.topSave[x] = make([]float64, 2*t)
		}
	}
}

// relief is what detours could take off w's work (bounds_chains.go) in the leaves below: the
// most of the chains staying on w so far that the openers the search has left allow.
func (bb *blockBB) relief(w int) float64 {
	if bb.top == nil || bb.noRelief {
		return 0 // inlined: the searches without contracted chains pay only this test
	}
	return bb.reliefOn(w)
}

// reliefOn is relief's work on a search with contracted chains.
func (bb *blockBB) reliefOn(w int) float64 {
	// The openers left on w and on the other devices (a detour's first node off w).
	a, b := 0, 0
	for e, o := range bb.openers {
		if e == w {
			b = max(bb.ct.run[e]-o, 0)
		} else {
			a += max(bb.ct.run[e]-o, 0)
		}
	}
	return reliefOf(bb.top[w], bb.top2[w], a, b)
}

// reliefOf is the most work detours take off a device from the lists one and two
// (descending: the chains whose detours take an opener off the device, and one off it and
// one on it), with a openers off the device and b on it: the best of j₂ ≤ min(a, b) of two's
// and a − j₂ of one's.
func reliefOf(one, two []float64, a, b int) float64 {
	best, y := 0.0, 0.0
	for j2 := 0; j2 <= min(a, b, len(two)); j2++ {
		if j2 > 0 {
			y += two[j2-1]
		}
		x := 0.0
		for i := range min(a-j2, len(one)) {
			x += one[i]
		}
		best = max(best, x+y)
	}
	return best
}

// left is the openers the search's budget leaves beyond the current ones.
func (bb *blockBB) left() int {
	d := 0
	for w, o := range bb.openers {
		d += max(bb.ct.run[w]-o, 0)
	}
	return d
}

// reliefLeaves records a leaf of the search on contracted chains (bounds_chains.go): for d
// = 0, 1, … up to the openers left, a bound of the placements that detour some of its
// staying chains with d openers it does not count, at every opener vector o + δ within the
// budget with |δ| = d.
//
// Such a placement's bound is ≥ max(P_j) over its detoured chains j, P_j = pf_j + the
// chain's least detour (chainEdge.detour) + t_x + x's tail (the block tail or its path in
// this placement, machineLB's at): x ends no earlier, and the block lasts x's tail more. Its
// loads lose at most the detoured chains' work (relief over the chains detoured, each
// taking one or two openers: chainModes) and gain a call for each opener δ adds (every one
// a stage of a detour), its paths are this leaf's (the chains' least times stand for them),
// and its one-machine terms hold for each device's own tasks in their window, less that
// work, and for all its tasks in the window widened to the chains' producers' ends and
// consumers' tails (a detour's nodes may run on any device), with the calls. Taking the
// chains in order of P, each prefix up to P_j bounds every detour set whose largest P is
// P_j.
func (bb *blockBB) reliefLeaves(t *capTrack, path float64) {
	in, cs, k := bb.in, bb.cs, bb.k
	bb.noRelief = true
	base := max(path, bb.loadLB(bb.n), bb.machineLB())
	bb.noRelief = false
	o := bb.openers
	if base < t.bestOf(o) {
		t.leaf(o, base, bb.dev) // and at every vector above: detours only lower it
	}
	congest := 0.0
	if bb.congestion {
		for w := range k {
			congest = max(congest, bb.ingress[w], bb.egress[w])
		}
	}
	// The vectors above o within the budget: their records, the largest a detour could
	// improve on.
	kv := append(bb.relVec[:0], o...)
	top := 0.0
	var each func(w int, f func())
	each = func(w int, f func()) {
		if w == k {
			f()
			return
		}
		for c := o[w]; c <= bb.ct.run[w]; c++ {
			kv[w] = c
			each(w+1, f)
		}
		kv[w] = o[w]
	}
	each(0, func() { top = max(top, min(t.bestOf(kv), base)) })
	if top <= max(path, congest) {
		return
	}
	// The staying chains whose detour's bound is below it.
	ch := bb.stays[:0]
	for x := range bb.n {
		if !bb.chained(x) {
			continue
		}
		w := bb.dev[x]
		stay := bb.staying(x, w)
		ty := max(bb.tail[x][w], cs.at[x])
		tx := in.granuleTime[bb.blk.nodes[x]][w]
		for _, pos := range bb.chainIn[x] {
			ey := bb.inE[x][pos]
			pw, pf := bb.producer(ey)
			if pw != w {
				continue
			}
			ce := in.chains[ey[0]]
			if p := pf + ce.detour[w] + tx + ty; p < top {
				ch = append(ch, stayChain{p: p, s: ce.straight[w], pf: pf, ty: ty, w: w, two: stay == 1 && !cs.opened[x]})
			}
		}
	}
	bb.stays = ch
	if len(ch) == 0 {
		return
	}
	slices.SortFunc(ch, func(a, b stayChain) int { return cmpFloat(a.p, b.p) })
	head, tail := bb.relHead, bb.relTail
	copy(head, cs.head)
	copy(tail, cs.tail)
	load := bb.relLoad
	sum := 0.0
	for w := range k {
		load[w] = bb.loadOf(w)
		sum += load[w]
	}
	floor := max(path, congest, ch[0].p) // no detour's bound is below it
	each(0, func() {
		b := t.bestOf(kv)
		if floor >= b {
			return
		}
		if v := bb.reliefBound(base, path, congest, sum, load, head, tail, kv); v < b {
			t.leaf(kv, v, bb.dev)
		}
	})
}

// reliefBound is reliefLeaves' bound at opener vector kv ≥ the leaf's: the least over the
// prefixes of its staying chains (by P) of the bound with their detours, the openers kv
// leaves beyond the leaf's.
func (bb *blockBB) reliefBound(base, path, congest, sum float64, load, head, tail []float64, kv []int) float64 {
	k := bb.k
	best := base
	free := false
	for w := range k {
		free = free || kv[w] > bb.openers[w]
	}
	if !free || len(bb.stays) == 0 {
		return best
	}
	one, two := bb.leafTop, bb.leafTop2
	minPf, minTy := bb.relPf, bb.relTy
	for w := range k {
		clear(one[w])
		clear(two[w])
		minPf[w], minTy[w] = math.Inf(1), math.Inf(1)
	}
	for _, c := range bb.stays {
		if c.p >= best {
			break
		}
		if c.two {
			insertDesc(two[c.w], c.s)
		} else {
			insertDesc(one[c.w], c.s)
		}
		for e := range k {
			if e != c.w { // the chain's nodes may run on e, not on w where they were
				minPf[e], minTy[e] = min(minPf[e], c.pf), min(minTy[e], c.ty)
			}
		}
		v := max(c.p, path, congest)
		rsum := 0.0
		for w := range k {
			a := 0
			for e := range k {
				if e != w {
					a += kv[e] - bb.openers[e]
				}
			}
			r := reliefOf(one[w], two[w], a, kv[w]-bb.openers[w])
			// The openers kv adds on w are the detours' own stages there: each pays w's call.
			c := bb.in.callCost[w] * float64(kv[w]-bb.openers[w])
			rsum += r - c
			v = max(v, load[w]-r+c)
			// machineLB's terms: w's own tasks keep their window, less the detoured chains'
			// work; with the detours' tasks (and their calls), which may run on w from their
			// producer's end to their consumer's tail, the window widens.
			if !math.IsInf(head[w], 1) && !math.IsInf(tail[w], 1) {
				v = max(v, head[w]+load[w]-r+tail[w])
			}
			if h, tl := min(head[w], minPf[w]), min(tail[w], minTy[w]); !math.IsInf(h, 1) && !math.IsInf(tl, 1) {
				v = max(v, h+load[w]-r+c+tl)
			}
		}
		v = max(v, (sum-rsum+bb.rest[bb.n])/float64(k))
		best = min(best, v)
	}
	return best
}

// chained reports whether local node x is a merged node with chain edges (bounds_chains.go).
func (bb *blockBB) chained(x int) bool { return bb.chainIn != nil && bb.chainIn[x] != nil }

// stayChain is a chain staying on w at a leaf (reliefLeaves): its detour's bound p, its
// work s, its producer's end pf, its consumer's tail ty, and whether its detour takes two
// openers.
type stayChain struct {
	p, s, pf, ty float64
	w            int
	two          bool
}

// producer is the device and end of the producer of in-edge ey of a block node (the entry
// cut: u, ending at 0).
func (bb *blockBB) producer(ey [2]int) (int, float64) {
	if ey[1] >= 0 {
		return bb.dev[ey[1]], bb.fin[ey[1]]
	}
	return bb.u, 0
}

// staying counts merged node x's chain edges from w (bounds_chains.go).
func (bb *blockBB) staying(x, w int) int {
	n := 0
	for _, pos := range bb.chainIn[x] {
		if pw, _ := bb.producer(bb.inE[x][pos]); pw == w {
			n++
		}
	}
	return n
}
