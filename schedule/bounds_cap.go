package schedule

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/onnxpart/onnxpart/diag"
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
//
// The searches of one block and entry device run one per maximal vector m_1, m_2, … into the
// same tracks, and a later one looks only for leaves of vectors below none of the earlier
// m_i (capTrack.admissible). Claim: after the search of m_i, every placement P of vector
// o(P) ≤ m_i has min(best_k, open_k) ≤ LB(P) for every k ≥ o(P). Proof: P was reached (a
// leaf, recorded in every k ≥ o(P)), or pruned at a partial vector o ≤ o(P) with a bound ≥
// best at a vector ≤ o(P) (best is non-increasing in the vector order: leaf records every
// larger vector), or left in an unfinished subtree of vector ≤ o(P) whose bound went to open
// of every larger vector. So P need not be found again, and a subtree of vector o in the
// search of m_j is pruned when its bound is ≥ best_{o'} for each least vector o' with o ≤ o'
// ≤ m_j that is below no earlier m_i (at once when there is none): its other leaves are
// placements of an earlier search.
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

// exitFree, as newBlockBB's exit device, lets the exit cut run on any device, each leaf
// recorded in the track of its exit's device (blockBB.byExit).
const exitFree = -2

// capBest is the least leaf a subtree of the capped search below the current opener vector
// could improve on: with one track per exit device, the largest of theirs.
func (bb *blockBB) capBest() float64 {
	ks := bb.capAdm[bb.ct.index(bb.openers)]
	if len(ks) == 0 {
		return math.Inf(-1) // every completion is within an earlier search's budget
	}
	b := 0.0
	for _, k := range ks {
		if bb.byExit == nil {
			b = max(b, bb.ct.best[k])
			continue
		}
		for _, t := range bb.byExit {
			if t != nil {
				b = max(b, t.best[k])
			}
		}
	}
	return b
}

// admissible is, for each opener vector o ≤ m, the least vectors o' with o ≤ o' ≤ m that are
// below none of done (the maximal vectors searched before m into the same tracks); nil
// entries for the vectors not ≤ m.
func (ct *capTrack) admissible(m []int, done [][]int) [][]int {
	top := ct.index(m)
	var below []int
	for _, d := range done {
		below = append(below, ct.index(d))
	}
	fresh := func(k int) bool {
		for _, d := range below {
			if ct.geq(d, k) {
				return false
			}
		}
		return true
	}
	adm := make([][]int, ct.size)
	for o := range ct.size {
		if !ct.geq(top, o) {
			continue
		}
		var cand []int
		for k := range ct.size {
			if ct.geq(k, o) && ct.geq(top, k) && fresh(k) {
				cand = append(cand, k)
			}
		}
		least := []int{}
		for _, k := range cand {
			min := true
			for _, q := range cand {
				min = min && (q == k || !ct.geq(k, q))
			}
			if min {
				least = append(least, k)
			}
		}
		adm[o] = least
	}
	return adm
}

// capTrackOf is the track a leaf goes to: its exit device's with one track per exit device.
func (bb *blockBB) capTrackOf() *capTrack {
	if bb.byExit == nil {
		return bb.ct
	}
	return bb.byExit[bb.dev[bb.cs.exit]]
}

// capCut records an unfinished subtree in every track it could end in.
func (bb *blockBB) capCut(lb float64) {
	if bb.byExit == nil {
		bb.ct.cut(bb.openers, lb)
		return
	}
	for _, t := range bb.byExit {
		if t != nil {
			t.cut(bb.openers, lb)
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
// too large a graph: with more than two devices, above cappedMaxNodes3 unless large).
func (in *inst) cappedModuleDP(ctx context.Context, deadline time.Time, budget int64, workers, perDevice, total int, large bool) *cappedResult {
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
	if sub == nil || sub.numNodes > moduleDPMaxNodes {
		return nil
	}
	// Too large for the exact search in the time: on the problem with its chains contracted
	// (bounds_chains.go), a relaxation.
	var top *inst // the problem the chains were contracted from (nil: none)
	topOrig := orig
	if capChainsAlways || (!large && (in.numDevices > 2 || size > 16) && sub.numNodes > cappedMaxNodes3) {
		csub, corig := sub.contractChains()
		switch {
		case csub != nil && csub.numNodes <= cappedMaxNodesChains:
			capChainsRuns.Add(1)
			top, sub = sub, csub
			orig = make([]int, len(corig))
			for c, i := range corig {
				orig[c] = topOrig[i]
			}
		case !capChainsAlways:
			size := fmt.Sprintf("%d nodes", sub.numNodes)
			if csub != nil {
				size += fmt.Sprintf(" (%d with its chains contracted)", csub.numNodes)
			}
			return &cappedResult{skipped: fmt.Sprintf("the bound of the plans within the stage cap (%s) was not computed: on %d devices and %s its search needs a time limit of %g minutes or more",
				cappedBoundName, in.numDevices, size, cappedLargeLimit.Minutes())}
		}
	}
	blocks := sub.moduleBlocks()
	if len(blocks) == 0 {
		blocks = []moduleBlock{{nodes: append([]int(nil), sub.topo...), entry: -1, exit: -1, first: true}}
	}
	// The maximal opener vectors the cap allows: a block's vector is at most the total's, so
	// the vectors below none of them are never used, and one search per maximal vector m
	// (openers capped at m) finds every leaf of vector ≤ k for each k ≤ m.
	var maximal [][]int
	most := 0 // the most openers within the cap (relief, with chains contracted)
	{
		g := newCapTrack(limit)
		var ok []int
		o := make([]int, len(limit))
		for x := range g.size {
			g.vec(x, o)
			if capAllows(o, limit, perDevice, total) {
				ok = append(ok, x)
				sum := 0
				for _, c := range o {
					sum += c
				}
				most = max(most, sum)
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
	// One search per block and entry device covers every exit device (exitFree: the exit is
	// the block's last node, so the placements differ only there; each leaf goes to its exit
	// device's job).
	var jobs []*job
	var searches [][]*job
	for b, blk := range blocks {
		for _, u := range sub.devicesOf(blk.entry) {
			var group []*job
			for _, v := range sub.devicesOf(blk.exit) {
				j := &job{b: b, u: u, v: v, ct: newCapTrack(limit), exact: true}
				jobs = append(jobs, j)
				group = append(group, j)
			}
			searches = append(searches, group)
		}
	}
	// Small blocks first: they finish early and leave their share of the budget to the large.
	slices.SortStableFunc(searches, func(a, b []*job) int { return len(blocks[a[0].b].nodes) - len(blocks[b[0].b].nodes) })
	// The least vectors each search looks for, the same for every block (capTrack.admissible;
	// without capPrune every search looks for all, the plain search).
	adms := make([][][]int, len(maximal))
	{
		g := newCapTrack(limit)
		for mi, m := range maximal {
			done := maximal[:mi]
			if !capPrune {
				done = nil
			}
			adms[mi] = g.admissible(m, done)
		}
	}
	var nodes atomic.Int64
	runBudgeted(len(searches), workers, budget, func(x int, share int64) int64 {
		group := searches[x]
		j := group[0]
		// One search per maximal vector the cap allows, into the jobs' tracks.
		share = max(share, 20000)
		used := int64(0)
		for mi, m := range maximal {
			v := j.v
			if len(group) > 1 {
				v = exitFree
			}
			bb := newBlockBB(sub, &blocks[j.b], j.u, v, dpMix{w: -1})
			bb.ct = j.ct
			j.ct.run = m
			bb.capAdm = adms[mi]
			if len(group) > 1 {
				bb.byExit = make([]*capTrack, sub.numDevices)
				for _, g := range group {
					bb.byExit[g.v] = g.ct
				}
			}
			bb.initRelief(most)
			_, _, ex := bb.solve(ctx, deadline, max(share, 1000))
			for _, g := range group {
				g.exact = g.exact && ex
			}
			share -= bb.nodes
			used += bb.nodes
		}
		nodes.Add(used)
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
				val := min(j.ct.best[k], j.ct.open[k])
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
	r := &cappedResult{bound: best * (1 - 1e-9), exact: exact, nodes: nodes.Load(), chains: top != nil}
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
	if top != nil {
		sub.expandChains(func(c int) int { return dev[orig[c]] }, func(i, d int) { dev[topOrig[i]] = d })
		sub = top
	}
	home := dev[topOrig[sub.topo[0]]]
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
	skipped string // why it did not run (then the rest is zero)
	bound   float64
	exact   bool
	dev     []int
	nodes   int64 // branch-and-bound nodes searched
	chains  bool  // computed with the chains contracted (bounds_chains.go)
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
// within a third of the time left (half with a long limit: large). It is kept apart from the
// bounds of the uncapped problem (s.capBounds): the methods' plans are uncapped until result
// merges them into the cap, and a capped bound may exceed them.
func (s *solver) cappedBound() {
	if s.o.MaxStagesPerDevice <= 0 && s.o.MaxStages <= 0 {
		return
	}
	var dl time.Time
	workers, budget := s.o.Workers, int64(cappedDPBudget)
	large := false
	if !s.deadline.IsZero() {
		// A third of the time left: under a cap this is the bound that certifies the plan
		// the user gets. Given long enough, the large searches too, with the nodes the time
		// allows.
		span := time.Until(s.deadline) / 3
		large = span >= cappedLargeAfter || s.o.TimeLimit >= cappedLargeLimit
		if large || s.in.numDevices > 2 {
			// Half of the time left, and the clock alone stops it: on three devices the
			// bounds of the uncapped problem say little, and the DP's stitched placement is
			// often the better plan; a node budget shared out among the searches left the
			// largest (143 million nodes on RandWire ER) short while the others finished
			// early. Without a long limit the searches on contracted chains
			// (bounds_chains.go) stand in for the large ones (RandWire ER on
			// a100-80g,t4,cpu: 15 million nodes, 16 s of one core).
			span = time.Until(s.deadline) / 2
			budget = math.MaxInt64 / 2
		}
		dl = time.Now().Add(span)
	} else {
		// No deadline (the planner's reproducible searches): the node budget alone stops it,
		// and one worker hands the budget on in a fixed order, so the bound is reproducible.
		workers, budget = 1, cappedDPBudgetNoDeadline
	}
	t0 := time.Now()
	r := s.in.cappedModuleDP(s.ctx, dl, budget, workers, s.o.MaxStagesPerDevice, s.o.MaxStages, large)
	if r != nil && r.skipped != "" {
		why := r.skipped
		if s.deadline.IsZero() {
			why += " (the searches on work budgets, without a deadline, never run it at this size)"
		}
		s.notes = append(s.notes, diag.Notef(diag.NoteSkipped, "%s", why))
		return
	}
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
	if r.chains {
		what += ", chains contracted"
	}
	s.report("", fmt.Sprintf("capped module DP bound %.6g over the plans within the stage cap (%s)", v, what))
	if r.dev != nil {
		c := s.add(cappedBoundName, &Placement{Device: r.dev, Order: positions(s.in.bfs)}, t0, 0, "the capped module DP's placements, stitched")
		if r.chains && c.sc != nil && c.Feasible {
			// The placement that minimises the relaxation is rarely the best plan near it
			// (RandWire WS on a100-80g,t4,cpu: 1.02 ms stitched, 957 µs after 1.5 s of
			// moves, against a bound of 901 µs): region moves within the cap.
			var until time.Time
			if !s.deadline.IsZero() {
				until = time.Now().Add(time.Until(s.deadline) / 10)
			}
			s.movesFrom(cappedBoundName, c, until)
		}
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
// more, on two devices) when it has less than cappedLargeAfter: its branch and bound over
// K ≥ 3 devices takes a minute or more of one core on RandWire's 180-node blocks (RandWire WS
// on a100-80g,t4,cpu: 27 searches of 0.4 to 23 million nodes, 259 million in all, 66 s, even
// with the pruning by meeting paths), and an unfinished search leaves only its weak
// open-subtree bound. With cappedLargeAfter or more, or a time limit (Options.TimeLimit) of
// cappedLargeLimit or more, it runs on any size within half the time left; without, on the
// problem with its chains contracted (bounds_chains.go) when that has at most
// cappedMaxNodesChains nodes (RandWire ER's 309: 15 million nodes, 16 s of one core).
const (
	cappedMaxNodes3      = 60
	cappedMaxNodesChains = 400
	cappedLargeAfter     = 40 * time.Second
	cappedLargeLimit     = 2 * time.Minute
)

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
	// The packing of meeting paths (meets): outs[x] lists x's local consumers by non-free
	// edges, exit is the exit cut's local index (−1: none); lab, par and used are scratch.
	outs     [][]int
	exit     int
	lab, par []int
	used     []bool
	opened   []bool // opened[x]: the placement of x opened a stage
	mv       []int  // mv[y]: the meeting path of the last packing y is on
	frames   []*meetFrame
	cur      []int // cur[x]: the depth of the frame in force at x (−1: none)
	// closing's scratch
	idom, depth, tin, tout, lo, hi, stack []int
	kids                                  [][]int
	load, sub                             []float64
	at, head, tail                        []float64 // machineLB's scratch
}

func newCapState(bb *blockBB) *capState {
	k, n := bb.k, bb.n
	cs := &capState{pend: make([]int, k), srcAfter: make([]int, n+1), rest: make([][]float64, 1<<k),
		outs: make([][]int, n), exit: -1, lab: make([]int, n), par: make([]int, n), used: make([]bool, n), opened: make([]bool, n),
		mv: make([]int, n), frames: make([]*meetFrame, n+1), cur: make([]int, n+1),
		idom: make([]int, n+1), depth: make([]int, n+1), tin: make([]int, n+1), tout: make([]int, n+1),
		lo: make([]int, n), hi: make([]int, n), kids: make([][]int, n+1),
		load: make([]float64, k), sub: make([]float64, n*k), at: make([]float64, n), head: make([]float64, k), tail: make([]float64, k)}
	if bb.u >= 0 {
		cs.pend[bb.u] = bb.ghostSucc
	}
	for y := range n {
		if bb.blk.nodes[y] == bb.blk.exit {
			cs.exit = y
		}
		for _, ey := range bb.inE[y] {
			if ey[1] >= 0 && !bb.in.free[ey[0]] {
				cs.outs[ey[1]] = append(cs.outs[ey[1]], y)
			}
		}
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
					f = min(f, bb.in.granuleTime[bb.blk.nodes[x]][w])
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
			sum += bb.loadOf(w) - bb.relief(w)
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
//
// The leaf's placement is known, so the tail of y may be the longer of tail[y][w] (over all
// completions) and its longest path to the exit in this placement (at): along any path from
// y to the exit cut each node starts after its producer ended and its tensor arrived, and
// lasts its time, plus its call when it opens a stage (capState.opened), so T_b − end_y is
// at least the path's sum. With an exit free to run anywhere (exitFree) tail[y][w] is the
// least over the exit's devices; at is of the exit's own.
func (bb *blockBB) machineLB() float64 {
	at, head, tail := bb.cs.at, bb.cs.head, bb.cs.tail
	for y := bb.n - 1; y >= 0; y-- {
		at[y] = 0
	}
	for w := range bb.k {
		head[w], tail[w] = math.Inf(1), math.Inf(1)
	}
	// Backwards: at[y] is complete when y is reached (its consumers come later).
	for y := bb.n - 1; y >= 0; y-- {
		w := bb.dev[y]
		t := bb.in.granuleTime[bb.blk.nodes[y]][w]
		call := bb.in.callCost[w]
		head[w] = min(head[w], max(0, bb.fin[y]-t-call))
		ty := max(bb.tail[y][w], at[y])
		tail[w] = min(tail[w], ty)
		d := at[y] + t
		if bb.sure[y] {
			d += call
		}
		for _, ey := range bb.inE[y] {
			p := ey[1]
			if bb.chainIn == nil || bb.in.chains[ey[0]] == nil {
				if p >= 0 {
					at[p] = max(at[p], d+bb.in.comm(ey[0], bb.dev[p], w, 1))
				}
				continue
			}
			bb.chainLeaf(y, ey, d)
		}
	}
	lb := 0.0
	for w := range bb.k {
		if !math.IsInf(head[w], 1) {
			lb = max(lb, head[w]+bb.loadOf(w)-bb.relief(w)+tail[w])
		}
	}
	return lb
}

// chainLeaf is machineLB's part for chain edge ey of merged node y (bounds_chains.go) with
// y's path d (at[y] + t_y, its call when certain): the chain's work and calls start after
// its producer's end, ≥ pf (head of y's device), and the producer's path to the exit is ≥
// the chain's least time plus d. (The detours' heads and tails: reliefBound.)
func (bb *blockBB) chainLeaf(y int, ey [2]int, d float64) {
	cs := bb.cs
	w, p := bb.dev[y], ey[1]
	ce := bb.in.chains[ey[0]]
	pw, pf := bb.producer(ey)
	cs.head[w] = min(cs.head[w], pf)
	a1 := ce.a1[pw][w]
	if !bb.sure[y] {
		a1 += bb.in.callCost[w]
	}
	if p >= 0 {
		cs.at[p] = max(cs.at[p], d+min(ce.a0[pw][w], a1))
	}
}

// meets counts node-disjoint meeting paths among the unplaced nodes x, x+1, … (stopping
// past limit); more of them than openers left means that no completion stays within the
// cap.
//
// A meeting path is a pair of paths along non-free edges, P1 from a placed node t1 (or the
// entry cut, on u) on device d1 and P2 from a placed t2 on d2 ≠ d1, through unplaced nodes,
// both ending at the same unplaced node y; or a single such path from a placed node on d ≠ v
// to the exit cut, which runs on v. Claim: every completion has a new opener on P1 ∪ P2 less
// t1 and t2 (on P for the exit's paths). Proof: a non-source node that reads a non-free edge
// from another device opens a stage (opensStage); the nodes of P1 after t1 read a non-free
// edge from their predecessor on P1, so if none of them opens, each runs on its
// predecessor's device, and y on d1; likewise y on d2 by P2, a contradiction (and the exit
// on d ≠ v). Node-disjoint meeting paths (over their unplaced nodes) thus need distinct new
// openers, and a completion within the cap has at most Σ_w (run_w − openers_w) of them.
//
// The search is greedy (any set of disjoint meeting paths bounds the openers from below): a
// pass over the unplaced, unused nodes in topological order labels each with the device of
// its first producer (a placed one's device, an unplaced one's label; the exit starts
// labelled v) and notes that producer; a producer with another label closes a meeting path
// at that node, along the two producers' chains of noted producers (if some unused node is
// reached from two devices, or the exit from d ≠ v, the first such node in topological
// order is where the pass stops: its producers' labels are their only ones). The path's
// unplaced nodes are marked used, and the pass starts again.
func (cs *capState) meets(bb *blockBB, x, limit int) int {
	n := bb.n
	for y := x; y < n; y++ {
		cs.used[y] = false
	}
	count := 0
	for count <= limit {
		meet, from := -1, -1
	pass:
		for y := x; y < n; y++ {
			cs.lab[y] = -1
			if cs.used[y] {
				continue
			}
			if y == cs.exit && bb.v >= 0 {
				cs.lab[y], cs.par[y] = bb.v, -1
			}
			for _, ey := range bb.inE[y] {
				if bb.in.free[ey[0]] {
					continue
				}
				d, p := bb.u, ey[1]
				switch {
				case p >= x:
					if cs.used[p] || cs.lab[p] < 0 {
						continue
					}
					d = cs.lab[p]
				case p >= 0:
					d, p = bb.dev[p], -1
				}
				if d < 0 {
					continue
				}
				switch {
				case cs.lab[y] < 0:
					cs.lab[y], cs.par[y] = d, p
				case cs.lab[y] != d:
					meet, from = y, p
					break pass
				}
			}
		}
		if meet < 0 {
			break
		}
		for z := meet; z >= 0; z = cs.par[z] {
			cs.used[z], cs.mv[z] = true, count
		}
		for z := from; z >= 0; z = cs.par[z] {
			cs.used[z], cs.mv[z] = true, count
		}
		count++
	}
	return count
}

// infeasible reports whether the meeting paths among the unplaced nodes need more new
// openers than the cap leaves (see meets), or whether the search passed a meeting path of
// a tight packing (frame) without an opener on it.
//
// Tight packings: when the packing found at a node of the search has exactly as many paths
// as openers left, every completion puts exactly one new opener on each path and none
// elsewhere (each path needs one, and they are disjoint). The search below that node then
// skips a branch that opens a stage on a node off the paths, or on a path that has its
// opener (blocked), and prunes once it has placed the last node of a path without one.
func (cs *capState) infeasible(bb *blockBB, x int) bool {
	if !capPrune {
		return false
	}
	cs.cur[x] = -1
	if x > 0 {
		cs.cur[x] = cs.cur[x-1]
	}
	if f := cs.frame(x); f != nil {
		for i, l := range f.last {
			if f.sat[i] == 0 && l < x {
				return true
			}
		}
	}
	left := 0
	for w, r := range bb.ct.run {
		left += max(r-bb.openers[w], 0)
	}
	if !cs.fresh(bb, x) {
		return false // the checks made where the last opener was placed hold
	}
	c := cs.meets(bb, x, left)
	if c > left {
		return true
	}
	if c == left && c > 0 {
		f := cs.frames[x]
		if f == nil {
			f = &meetFrame{vid: make([]int, bb.n)}
			cs.frames[x] = f
		}
		f.last, f.sat = f.last[:0], f.sat[:0]
		for range c {
			f.last, f.sat = append(f.last, -1), append(f.sat, 0)
		}
		for y := x; y < bb.n; y++ {
			f.vid[y] = -1
			if cs.used[y] {
				f.vid[y] = cs.mv[y]
				f.last[cs.mv[y]] = max(f.last[cs.mv[y]], y)
			}
		}
		cs.cur[x] = x
	} else if c == 0 && left == 1 && cs.srcAfter[x] == 0 {
		if cs.closing(bb, x) >= bb.capBest() {
			return true
		}
	}
	return false
}

// closing sets the frame of a node of the search with one opener left and no meeting path
// (and no unplaced source): then every unplaced node y has one label, the device of every
// placed node that reaches it (two would make a meeting path), and its producers' devices
// are that label. Claim: a completion whose last opener is q on d has q dominate all its
// descendants (every path from a placed node to a descendant of q passes q), and d = v when
// the exit cut is q or one of them. Proof: q opens, so d ≠ label(q); if a descendant y of q
// had a path from a placed node avoiding q, that node's device is label(y) = label(q) (a
// path through q also reaches y), and the path from q on d would meet it at y: a meeting
// path with no opener left (see meets). The exit descends from q (or is q) and so runs on
// d, which must be v. The search below may then open only such nodes (blocked).
//
// Dominators: the unplaced nodes in topological order, each dominated by the nearest
// common dominator of its producers (the root for a placed producer or the entry cut); q
// dominates its descendants iff no edge leaves q's subtree of the dominator tree (its
// descendants are then within the subtree; conversely a descendant outside the subtree is
// reached by such an edge), checked by the least and largest preorder numbers of the
// edges' heads below each node.
func (cs *capState) closing(bb *blockBB, x int) float64 {
	n := bb.n
	root := n
	idom, depth := cs.idom, cs.depth
	depth[root] = 0
	for y := x; y < n; y++ {
		d := -1
		for _, ey := range bb.inE[y] {
			if bb.in.free[ey[0]] {
				continue
			}
			p := ey[1]
			if p < x {
				p = root
			}
			if d < 0 {
				d = p
				continue
			}
			for d != p {
				if depth[d] >= depth[p] {
					d = idom[d]
				} else {
					p = idom[p]
				}
			}
		}
		if d < 0 {
			d = root
		}
		idom[y], depth[y] = d, depth[d]+1
	}
	// Preorder numbers: children in topological order after their parent (a child is later
	// in topological order than its dominator), so a stack walk over the tree.
	kids := cs.kids
	for y := x; y <= n; y++ {
		kids[y] = kids[y][:0]
	}
	for y := x; y < n; y++ {
		kids[idom[y]] = append(kids[idom[y]], y)
	}
	tin, tout := cs.tin, cs.tout
	t := 0
	stack := append(cs.stack[:0], root)
	for len(stack) > 0 {
		y := stack[len(stack)-1]
		if y >= 0 {
			stack[len(stack)-1] = -1 - y
			tin[y] = t
			t++
			for i := len(kids[y]) - 1; i >= 0; i-- {
				stack = append(stack, kids[y][i])
			}
			continue
		}
		stack = stack[:len(stack)-1]
		tout[-1-y] = t - 1
	}
	cs.stack = stack
	// lo, hi: the least and largest preorder number of an edge head out of a subtree's node.
	lo, hi := cs.lo, cs.hi
	for y := n - 1; y >= x; y-- {
		lo[y], hi[y] = math.MaxInt, -1
		for _, c := range cs.outs[y] {
			lo[y], hi[y] = min(lo[y], tin[c]), max(hi[y], tin[c])
		}
		for _, c := range kids[y] {
			lo[y], hi[y] = min(lo[y], lo[c]), max(hi[y], hi[c])
		}
	}
	f := cs.frames[x]
	if f == nil {
		f = &meetFrame{vid: make([]int, n)}
		cs.frames[x] = f
	}
	f.last, f.sat = f.last[:0], append(f.sat[:0], 0)
	if f.only == nil {
		f.only = make([]int, n)
	}
	e := cs.exit
	for y := x; y < n; y++ {
		f.vid[y], f.only[y] = -1, -1
		if lo[y] >= tin[y] && hi[y] <= tout[y] {
			f.vid[y] = 0
			if e >= x && tin[y] <= tin[e] && tin[e] <= tout[y] && bb.v >= 0 {
				f.only[y] = bb.v
			}
		}
	}
	cs.cur[x] = x
	return cs.closingLB(bb, x, f)
}

// closingLB is a load bound of the completions below a closing frame (see closing): with
// no opener, every unplaced node runs on its label (its producers' device, by induction in
// topological order), so device w's load ends at F_w = its load so far + its labelled
// nodes' times; with the last opener on q on d, q's dominator subtree (which holds all its
// descendants) moves from label(q) to d, with d's call. The least over these of the
// largest load bounds every completion's LB_b.
func (cs *capState) closingLB(bb *blockBB, x int, f *meetFrame) float64 {
	n, k := bb.n, bb.k
	// The labels are meets' last pass, which found no meeting path and so labelled every
	// unplaced node with its producers' one device (−1 only without a labelled producer).
	lab := cs.lab
	for y := x; y < n; y++ {
		if lab[y] < 0 {
			return 0 // no label (cannot happen without sources): no bound
		}
	}
	load := cs.load
	for w := range k {
		load[w] = bb.loadOf(w) - bb.relief(w)
	}
	// sub[y*k+w]: y's dominator subtree's times on w.
	sub := cs.sub
	for y := n - 1; y >= x; y-- {
		i := bb.blk.nodes[y]
		load[lab[y]] += bb.in.granuleTime[i][lab[y]]
		for w := range k {
			t := bb.in.granuleTime[i][w]
			for _, c := range cs.kids[y] {
				t += sub[c*k+w]
			}
			sub[y*k+w] = t
		}
	}
	best := 0.0
	for w := range k {
		if math.IsInf(load[w], 1) {
			return 0 // a labelled node cannot run on its label: no bound here
		}
		best = max(best, load[w])
	}
	for q := x; q < n; q++ {
		if f.vid[q] < 0 {
			continue
		}
		from := lab[q]
		for d := range k {
			if d == from || (f.only[q] >= 0 && f.only[q] != d) || bb.openers[d] >= bb.ct.run[d] || math.IsInf(sub[q*k+d], 1) {
				continue
			}
			a, b := load[from]-sub[q*k+from], load[d]+sub[q*k+d]+bb.in.callCost[d]
			v := max(a, b)
			for w := range k {
				if w != from && w != d {
					v = max(v, load[w])
				}
			}
			best = min(best, v)
		}
	}
	return best * (1 - 1e-9)
}

// capChainsAlways contracts the chains for every capped module DP, whatever its size
// (tests); capChainsRuns counts the DPs run on contracted chains (tests).
var (
	capChainsAlways = false
	capChainsRuns   atomic.Int64
)

// capPrune switches the capped search's pruning by meeting paths and frames (infeasible,
// blocked); tests switch it off to compare.
var capPrune = true

// meetFrame restricts the openers below a node of the search: a tight packing of meeting
// paths (see infeasible), where vid[y] is the path of node y (−1: none), last[i] the last
// node of path i, sat[i] the openers the search put on path i since; or the nodes the last
// opener may be (closing: vid 0, only[y] the one device it may open on, −1 any).
type meetFrame struct {
	vid       []int
	last, sat []int
	only      []int
}

// frame is the tight packing in force at node x of the search (nil: none).
func (cs *capState) frame(x int) *meetFrame {
	if d := cs.cur[x]; d >= 0 {
		return cs.frames[d]
	}
	return nil
}

// blocked reports whether opening a stage on node x on device w breaks the frame in force.
func (cs *capState) blocked(x, w int) bool {
	if !capPrune {
		return false
	}
	f := cs.frame(x)
	if f == nil {
		return false
	}
	if f.vid[x] < 0 || f.sat[f.vid[x]] > 0 {
		return true
	}
	return f.only != nil && len(f.last) == 0 && f.only[x] >= 0 && f.only[x] != w
}

// opens records (sign 1) or undoes (−1) an opener on node x in the packing in force.
func (cs *capState) opens(x, sign int) {
	if f := cs.frame(x); f != nil {
		f.sat[f.vid[x]] += sign
	}
}

// fresh reports whether the placement of node x−1 opened a stage (or x is 0): with no opener
// left, the checks made there hold along the rest of the search, whose every node follows
// its producers' device.
func (cs *capState) fresh(bb *blockBB, x int) bool {
	return x == 0 || cs.opened[x-1]
}
