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
//     at least one call on every device it uses: its first task opens a stage);
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
// includes its call). In block 0, w's first task opens a stage and every task of w starts
// after it began, hence the first-call term. Loads: a device runs one task at a time, each
// stage's call is part of its opener's duration, distinct openers open distinct stages, so
// its busy time within [T_{b−1}, T_b] is ≥ the load above (block 0: w's first task opens a
// stage, an opener or a source, so its stages are ≥ max(openers, 1)). Congestion: a device
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
	if !in.latency() || in.pinnedGranules != nil || in.numDevices < 2 {
		return nil
	}
	blocks := in.moduleBlocks()
	if len(blocks) == 0 {
		return nil
	}
	devsOf := func(c int) []int {
		if c < 0 {
			return []int{-1}
		}
		var d []int
		for u := range in.numDevices {
			if in.canRun(c, u) {
				d = append(d, u)
			}
		}
		return d
	}
	type job struct {
		b, u, v int
		val     float64
		dev     []int // argmin leaf (block order), nil when none
		exact   bool
	}
	var jobs []*job
	for b, blk := range blocks {
		for _, u := range devsOf(blk.entry) {
			for _, v := range devsOf(blk.exit) {
				jobs = append(jobs, &job{b: b, u: u, v: v})
			}
		}
	}
	// Each job gets the budget left over the jobs left; small blocks finish early and leave
	// theirs to the larger ones.
	var left atomic.Int64
	left.Store(budget)
	var next atomic.Int64
	var done atomic.Int64
	var wg sync.WaitGroup
	for range max(1, min(workers, len(jobs))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				x := int(next.Add(1) - 1)
				if x >= len(jobs) {
					return
				}
				j := jobs[x]
				share := left.Load() / max(1, int64(len(jobs))-done.Load())
				bb := newBlockBB(in, &blocks[j.b], j.u, j.v)
				j.val, j.dev, j.exact = bb.solve(ctx, deadline, max(share, 1000))
				left.Add(-bb.nodes)
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
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
}

func newBlockBB(in *inst, blk *moduleBlock, u, v int) *blockBB {
	n, k := len(blk.nodes), in.numDevices
	bb := &blockBB{in: in, blk: blk, u: u, v: v, n: n, k: k, calls: blk.first && in.sourceCalls, congestion: in.problem.Congestion}
	local := map[int]int{}
	for x, i := range blk.nodes {
		local[i] = x
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
			f = math.Min(f, in.granuleTime[blk.nodes[x]][w])
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
				m = math.Min(m, c+in.granuleTime[blk.nodes[y]][w2]+bb.tail[y][w2])
			}
			best = math.Max(best, m) // +Inf: no completion puts the successor anywhere
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

// loadLB is the load part of the partial bound after x nodes are placed.
func (bb *blockBB) loadLB(x int) float64 {
	in := bb.in
	lb, sum := 0.0, 0.0
	for w := range bb.k {
		st := bb.openers[w]
		if bb.calls && bb.used[w] > 0 && st == 0 {
			st = 1
		}
		l := bb.work[w] + in.callCost[w]*float64(st)
		sum += l
		lb = math.Max(lb, l)
		if bb.congestion {
			lb = math.Max(lb, math.Max(bb.ingress[w], bb.egress[w]))
		}
	}
	return math.Max(lb, (sum+bb.rest[x])/float64(bb.k))
}

// solve runs the search with a node budget; it returns V (≤ the minimum of LB_b over the
// block's placements), the argmin leaf (nil when none was reached) and whether the search
// ended (V is then the minimum).
func (bb *blockBB) solve(ctx context.Context, deadline time.Time, budget int64) (float64, []int, bool) {
	bb.ctx, bb.deadline, bb.budget = ctx, deadline, budget
	bb.best, bb.open = math.Inf(1), math.Inf(1)
	if math.IsInf(bb.ghostT, 1) {
		return math.Inf(1), nil, true
	}
	bb.dfs(0, bb.ghostT)
	v := math.Min(bb.best, bb.open)
	return v, bb.bestDev, !bb.stopped
}

// dfs places local node x; path is the largest end + tail so far.
func (bb *blockBB) dfs(x int, path float64) {
	lb := math.Max(path, bb.loadLB(x))
	if lb >= bb.best {
		return
	}
	if x == bb.n {
		bb.best = lb
		bb.bestDev = append(bb.bestDev[:0], bb.dev...)
		return
	}
	bb.nodes++
	if bb.nodes > bb.budget || (bb.nodes&1023 == 0 && (bb.ctx.Err() != nil || (!bb.deadline.IsZero() && time.Now().After(bb.deadline)))) {
		bb.budget = 0 // stop everywhere
		bb.stopped = true
		bb.open = math.Min(bb.open, lb)
		return
	}
	in := bb.in
	i := bb.blk.nodes[x]
	for _, w := range bb.order[x] {
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
			ready = math.Max(ready, a)
		}
		if !feasible {
			continue
		}
		if in.source[i] {
			opens = false // a source opens only as its device's first task (counted in used)
		}
		call := 0.0
		if opens {
			call = in.callCost[w]
		}
		f := ready + call + t
		if bb.calls && t > 0 {
			f = math.Max(f, in.callCost[w]+t)
		}
		np := math.Max(path, f+bb.tail[x][w])
		if math.IsInf(np, 1) {
			continue
		}
		// Apply.
		bb.dev[x], bb.fin[x] = w, f
		bb.work[w] += t
		if opens {
			bb.openers[w]++
		}
		bb.used[w]++
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
		bb.work[w] -= t
		if opens {
			bb.openers[w]--
		}
		bb.used[w]--
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
			// Out of budget: the remaining siblings are open subtrees; their bound is ≥ lb.
			bb.open = math.Min(bb.open, lb)
			return
		}
	}
}

// moduleDPBudget is the module DP's total branch-and-bound nodes (about a second of one core
// at most; chains of small modules need a few thousand).
const moduleDPBudget = 3_000_000

// moduleBound adds the module DP's bound (latency mode) within a tenth of the time left, and
// keeps its stitched placement as a candidate (s.mdpPlan, judged after the constructive
// heuristics).
func (s *solver) moduleBound() {
	var dl time.Time
	if !s.deadline.IsZero() {
		dl = time.Now().Add(time.Until(s.deadline) / 10)
	}
	r := s.in.moduleDP(s.ctx, dl, moduleDPBudget, s.o.Workers)
	if r == nil {
		return
	}
	s.addBound("module-dp", r.bound)
	s.report("", "module DP bound")
	if r.dev != nil {
		s.mdpPlan = &Placement{Device: r.dev, Order: positions(s.in.bfs)}
	}
}
