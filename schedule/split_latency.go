package schedule

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"
)

// The latency DP of MILP-SPLIT (seed 003 §3.3.1) with pruning.
//
// Every (block, entry device u, exit device v) is a job. All jobs first get a plan from the
// constructive heuristics and a cheap lower bound. Then, repeatedly, the DP over the jobs'
// plans gives the best stitched makespan UB and the DP over their bounds gives, for every job,
// the least makespan of any stitched plan through it (prefix bound + its bound + suffix
// bound); the job with the smallest such value that is not yet solved, and could still beat
// UB, gets its MILP. Jobs that cannot beat UB are never solved — their cheap bounds keep the
// final DP bound valid — so the time goes to the (u, v) pairs that matter.

type blockJob struct {
	b, u, v int // block, entry device (−1: none), exit device (−1: free, or chosen by a chain)
	chain   bool
	sp      *subProblem // single-module job: the pinned module
	pl      *Placement  // single-module job: the sub plan
	sc      *Schedule
	mk, lb  float64
	// free is a bound of the block without the memory share (the cheap bounds, which ignore
	// memory): lb comes from sub-solves under the share, a restriction, and bounds only the
	// plans that respect it.
	free    float64
	exact   bool
	tried   bool
	exitDev int
	// chain job: its plan in global terms
	dev    map[int]int
	start  map[int]float64
	estart map[int]float64
	err    error
}

func (in *inst) splitLatency(ctx context.Context, ms *moduleSet, o splitOptions, deadline time.Time, share func([]int) []float64, out *splitOutcome) error {
	blocks := ms.blocks()
	B := len(blocks)
	out.blocks = B
	cutIn := make([]int, B)
	cutOut := make([]int, B)
	var jobs []*blockJob
	exits := make([][]int, B) // possible exit devices of block b (for the bound DP)
	for b, blk := range blocks {
		cutIn[b], cutOut[b] = -1, -1
		if b > 0 {
			cutIn[b] = cutOut[b-1]
		}
		if b < B-1 {
			cutOut[b] = ms.cut[blk[len(blk)-1]]
		}
		exits[b] = in.devicesOf(cutOut[b])
		for _, u := range in.devicesOf(cutIn[b]) {
			if len(blk) > 1 {
				jobs = append(jobs, &blockJob{b: b, u: u, v: -1, chain: true, mk: math.Inf(1)})
				continue
			}
			for _, v := range exits[b] {
				jobs = append(jobs, &blockJob{b: b, u: u, v: v, mk: math.Inf(1), exitDev: v})
			}
		}
	}
	// The first block's sources pay their first calls as in the problem (makeSub drops
	// them: a device may have run an earlier module) when the block's work runs before
	// every other node's: see firstBlockFirst.
	firstCalls := len(blocks[0]) == 1 && in.firstBlockFirst(ms.modules[blocks[0][0]], cutOut[0])
	// Phase 1: heuristics and cheap bounds for single-module jobs; chains solved in full
	// within a share of the time proportional to their modules.
	chainMods, allMods := 0, 0
	for _, blk := range blocks {
		allMods += len(blk)
		if len(blk) > 1 {
			chainMods += len(blk)
		}
	}
	phase1 := deadline
	if !deadline.IsZero() && chainMods > 0 {
		phase1 = time.Now().Add(time.Duration(float64(time.Until(deadline)) * float64(chainMods) / float64(allMods)))
	}
	var mu sync.Mutex
	var solves int
	pool(ctx, len(jobs), o.workers, phase1, func(ctx context.Context, x int, limit time.Duration) {
		j := jobs[x]
		if j.chain {
			in.runChain(ctx, ms, blocks[j.b], j, cutIn[j.b], cutOut[j.b], limit, share, o)
			mu.Lock()
			solves += len(blocks[j.b])
			mu.Unlock()
			return
		}
		m := blocks[j.b][0]
		ghosts := map[int]int{}
		if j.u >= 0 {
			ghosts[cutIn[j.b]] = j.u
		}
		exitNode := -1
		if j.v >= 0 {
			exitNode = cutOut[j.b]
		}
		sp, err := in.makeSub(ms.modules[m], ghosts, nil, exitNode, j.v, share(ms.modules[m]))
		if err != nil {
			j.err = err
			return
		}
		if j.b == 0 && firstCalls {
			sp.in.sourceCalls = in.sourceCalls
		}
		j.sp = sp
		r := sp.prepare(ctx)
		j.pl, j.sc, j.mk, j.lb, j.exact, j.err = r.pl, r.sc, r.mk, r.bound, r.optimal, r.err
		j.free = r.cheap
	})
	if o.progress != nil {
		o.progress(fmt.Sprintf("split: %d blocks, %d jobs prepared", B, len(jobs)))
	}

	// The DPs. val(j) is the job's makespan (plan DP) or bound (bound DP); a job leads from
	// its entry device to its exit (the chosen exit for plans; every exit for bounds of chains).
	type cell struct {
		v   float64
		job int
	}
	// With memory shared among modules, a sub-solve's bound holds only for the plans that
	// respect the shares; the final bound DP (valid for every plan) then uses free.
	shared := false
	for _, blk := range blocks {
		for _, m := range blk {
			shared = shared || share(ms.modules[m]) != nil
		}
	}
	finalBound := false
	forward := func(useBound bool) []map[int]cell {
		f := make([]map[int]cell, B)
		for b := range B {
			f[b] = map[int]cell{}
		}
		for b := range B {
			for x, j := range jobs {
				if j.b != b {
					continue
				}
				val := j.mk
				if useBound {
					val = j.lb
					if finalBound && shared {
						val = math.Min(j.lb, j.free)
					}
				}
				if !useBound && (j.err != nil || math.IsInf(val, 1)) {
					continue
				}
				prev := 0.0
				if b > 0 {
					c, ok := f[b-1][j.u]
					if !ok {
						continue
					}
					prev = c.v
				}
				outs := []int{j.exitDev}
				if cutOut[b] < 0 {
					outs = []int{-1}
				} else if useBound && j.chain {
					outs = exits[b]
				}
				for _, v := range outs {
					if c, ok := f[b][v]; !ok || prev+val < c.v || (prev+val == c.v && x < c.job) {
						f[b][v] = cell{prev + val, x}
					}
				}
			}
		}
		return f
	}
	backward := func() []map[int]float64 { // g[b][u]: least bound from block b entered at u
		g := make([]map[int]float64, B+1)
		g[B] = map[int]float64{-1: 0}
		for b := B - 1; b >= 0; b-- {
			g[b] = map[int]float64{}
			for _, j := range jobs {
				if j.b != b {
					continue
				}
				outs := []int{j.exitDev}
				if cutOut[b] < 0 {
					outs = []int{-1}
				} else if j.chain {
					outs = exits[b]
				}
				for _, v := range outs {
					rest, ok := g[b+1][v]
					if b == B-1 {
						rest, ok = 0, true
					}
					if !ok {
						continue
					}
					if c, ok := g[b][j.u]; !ok || j.lb+rest < c {
						g[b][j.u] = j.lb + rest
					}
				}
			}
		}
		return g
	}
	total := func(f []map[int]cell) float64 {
		if c, ok := f[B-1][-1]; ok {
			return c.v
		}
		return math.Inf(1)
	}
	gap := o.relGap
	if gap == 0 {
		gap = 1e-4
	}
	// next picks the most promising job to solve, under mu.
	var running int
	next := func() (*blockJob, time.Duration) {
		if ctx.Err() != nil || (!deadline.IsZero() && !time.Now().Before(deadline)) {
			return nil, 0
		}
		ub := total(forward(false))
		if o.met != nil && o.met(ub) {
			return nil, 0 // the stitched plan meets the caller's bound
		}
		f := forward(true)
		g := backward()
		type cand struct {
			x       int
			through float64
		}
		var cands []cand
		for x, j := range jobs {
			if j.chain || j.exact || j.tried || j.sp == nil {
				continue
			}
			pre := 0.0
			if j.b > 0 {
				c, ok := f[j.b-1][j.u]
				if !ok {
					continue
				}
				pre = c.v
			}
			post, ok := g[j.b+1][j.v]
			if j.b == B-1 {
				post, ok = 0, true
			}
			if !ok {
				continue
			}
			th := pre + j.lb + post
			if th < ub*(1-gap) {
				cands = append(cands, cand{x, th})
			}
		}
		if len(cands) == 0 {
			return nil, 0
		}
		sort.Slice(cands, func(a, b int) bool {
			if cands[a].through != cands[b].through {
				return cands[a].through < cands[b].through
			}
			return cands[a].x < cands[b].x
		})
		j := jobs[cands[0].x]
		j.tried = true
		limit := time.Duration(math.MaxInt64)
		if !deadline.IsZero() {
			rem := time.Until(deadline)
			limit = min(rem, time.Duration(2*float64(rem)*float64(o.workers)/float64(max(o.workers, len(cands)+running))))
		}
		running++
		return j, limit
	}
	var wg sync.WaitGroup
	for range max(1, o.workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				j, limit := next()
				mu.Unlock()
				if j == nil {
					return
				}
				r := j.sp.improve(ctx, j.pl, j.mk, j.lb, limit, o)
				mu.Lock()
				running--
				solves++
				if r.pl != nil && r.mk < j.mk {
					j.pl, j.sc, j.mk = r.pl, r.sc, r.mk
				}
				j.lb = math.Max(j.lb, math.Min(r.bound, j.mk))
				j.exact = r.optimal || j.lb >= j.mk*(1-gap)
				if o.progress != nil {
					o.progress(fmt.Sprintf("split: %d sub-solves, stitched %.6g", solves, total(forward(false))))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	out.solves = solves

	f := forward(false)
	final, ok := f[B-1][-1]
	if !ok {
		for _, j := range jobs {
			if j.err != nil {
				return fmt.Errorf("schedule: split found no plan: block %d: %v", j.b+1, j.err)
			}
		}
		return fmt.Errorf("schedule: split found no plan")
	}
	chosen := make([]int, B)
	for b, c := B-1, final; b >= 0; b-- {
		chosen[b] = c.job
		if b > 0 {
			c = f[b-1][jobs[c.job].u]
		}
	}
	pl := &Placement{Device: make([]int, in.numNodes), Order: make([]float64, in.numNodes), EdgeOrder: make([]float64, len(in.problem.Edges))}
	for e := range pl.EdgeOrder {
		pl.EdgeOrder[e] = math.NaN()
	}
	offset := 0.0
	allExact := true
	for b := range B {
		j := jobs[chosen[b]]
		dev, start, estart := j.global()
		for i, u := range dev {
			pl.Device[i] = u
			pl.Order[i] = offset + start[i]
		}
		for e, ed := range in.problem.Edges {
			if _, mine := dev[ed.To]; mine {
				if s, ok := estart[edgeKey(ed.From, ed.To)]; ok {
					pl.EdgeOrder[e] = offset + s
				}
			}
		}
		offset += j.mk
		allExact = allExact && j.exact && !j.chain
	}
	for e, ed := range in.problem.Edges {
		if math.IsNaN(pl.EdgeOrder[e]) {
			pl.EdgeOrder[e] = pl.Order[ed.To]
		}
	}
	sc, err := in.simulate(pl)
	if err != nil {
		return fmt.Errorf("schedule: split stitched an invalid plan: %w", err)
	}
	alt := &Placement{Device: pl.Device, Order: pl.Order}
	if sc2, err := in.simulate(alt); err == nil && sc2.Makespan < sc.Makespan {
		pl, sc = alt, sc2
	}
	out.pl, out.sc = pl, sc
	finalBound = true
	if lb := total(forward(true)); !math.IsInf(lb, 1) {
		out.bound, out.boundBy = math.Min(lb, sc.Makespan), "split-dp"
	}
	out.optimal = allExact && out.bound >= sc.Makespan*(1-gap)
	return nil
}

// global maps a job's plan to global nodes: device, start and transfer starts.
func (j *blockJob) global() (map[int]int, map[int]float64, map[int]float64) {
	if j.chain {
		return j.dev, j.start, j.estart
	}
	dev := map[int]int{}
	start := map[int]float64{}
	estart := map[int]float64{}
	sp := j.sp
	for si := sp.ghosts; si < sp.real; si++ {
		dev[sp.global[si]] = j.pl.Device[si]
	}
	for _, t := range j.sc.Tasks {
		if t.Node >= sp.ghosts && t.Node < sp.real {
			start[sp.global[t.Node]] = t.Start
		}
	}
	for _, tr := range j.sc.Transfers {
		estart[edgeKey(sp.global[tr.From], sp.global[tr.To])] = tr.Start
	}
	return dev, start, estart
}

// runChain solves a block of several modules for entry device j.u (see chain).
func (in *inst) runChain(ctx context.Context, ms *moduleSet, blk []int, j *blockJob, cutIn, cutOut int, limit time.Duration, share func([]int) []float64, o splitOptions) {
	entry := map[int]int{}
	if j.u >= 0 {
		entry[cutIn] = j.u
	}
	cr, err := in.chain(ctx, ms, blk, entry, limit, share, o)
	if err != nil {
		j.err = err
		return
	}
	j.dev, j.start, j.estart, j.mk = cr.dev, cr.start, cr.estart, cr.mk
	if cutOut >= 0 {
		j.exitDev = cr.dev[cutOut]
	}
	// A bound for the block entered at u, whatever its exit: its cheap bounds.
	if sp, err := in.makeSub(cr.nodes, entry, nil, -1, -1, nil); err == nil {
		j.lb = maxBound(sp.in.simpleBounds(ctx))
		j.free = j.lb
	}
}

// firstBlockFirst reports whether, in every schedule, the nodes of the first block (nodes,
// with exit node cut, −1 when the block is the whole graph) run before all other nodes: every
// node of the block is cut or one of its ancestors, and every other node is a descendant of
// cut. Then the first task of every device the block uses is the block's, so a source of the
// block that is its device's first task in the block's sub-schedule pays its call in the
// problem too: the sub-problem may price it (sourceCalls) and its bounds stay bounds of the
// block's part of every plan.
func (in *inst) firstBlockFirst(nodes []int, cut int) bool {
	if cut < 0 {
		return len(nodes) == in.numNodes
	}
	mine := make([]bool, in.numNodes)
	for _, i := range nodes {
		mine[i] = true
		if i != cut && !in.reaches(i, cut) {
			return false
		}
	}
	for i := range in.numNodes {
		if !mine[i] && !in.reaches(cut, i) {
			return false
		}
	}
	return true
}
