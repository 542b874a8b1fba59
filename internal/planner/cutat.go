package planner

import (
	"fmt"
	"time"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/graph/blocks"
)

// AutoBlockSlack is the throughput CutAuto gives up for block-boundary cuts: the block plan
// is kept when its objective is within this fraction above the best plan cutting anywhere.
const AutoBlockSlack = 0.05

// blockColocation groups the work graph's nodes by the block of their members (blockOf per
// node of g, -1 outside any block): the nodes of one block share a stage. A fused kernel
// whose members span blocks joins them (the fusion already ties them to one stage).
func blockColocation(g, work *graph.Graph, coarse *fusion.Grouping, blockOf []int, nBlocks int) [][]int {
	uf := make([]int, nBlocks)
	for i := range uf {
		uf[i] = i
	}
	var find func(int) int
	find = func(x int) int {
		for uf[x] != x {
			uf[x] = uf[uf[x]]
			x = uf[x]
		}
		return x
	}
	workBlock := make([]int, len(work.Nodes))
	for w := range workBlock {
		workBlock[w] = -1
	}
	for v := range g.Nodes {
		b := blockOf[v]
		if b < 0 {
			continue
		}
		w := v
		if coarse != nil {
			w = coarse.GroupOf[v]
		}
		if w < 0 {
			continue
		}
		if workBlock[w] < 0 {
			workBlock[w] = b
		} else if a, c := find(workBlock[w]), find(b); a != c {
			uf[max(a, c)] = min(a, c)
		}
	}
	groups := map[int][]int{}
	var roots []int
	for w, b := range workBlock {
		if b < 0 {
			continue
		}
		r := find(b)
		if _, ok := groups[r]; !ok {
			roots = append(roots, r)
		}
		groups[r] = append(groups[r], w)
	}
	var out [][]int
	for _, r := range roots {
		if len(groups[r]) > 1 {
			out = append(out, groups[r])
		}
	}
	return out
}

// planThroughputCuts runs planThroughput with the cut restriction of Options.CutAt: with
// block cuts it plans twice, anywhere and at block boundaries (each with half the time),
// keeps the block plan as CutAt asks, and certifies it with the bound of the unrestricted
// problem, the one that holds for every plan.
func (p *run) planThroughputCuts() (*solution, error) {
	opt := p.opt
	mode := opt.CutAt // one of the Cut words (options)
	if mode == "" {
		mode = CutAuto
	}
	if mode == CutAuto && len(p.pairs) == 0 { // a model without state
		mode = CutAny
	}
	whole := cuts{timeLimit: opt.TimeLimit, progress: opt.Progress}
	if mode == CutAny {
		return p.planThroughput(p.ctx, whole)
	}
	blockOf, nBlocks, desc := findBlocks(p.g, p.blocks)
	if nBlocks < 2 {
		sol, err := p.planThroughput(p.ctx, whole)
		if err == nil && mode == CutBlocks { // the note comes before the solver's
			sol.notes = append([]diag.Note{diag.Notef(diag.NoteSkipped, "%s: the model has no repeated blocks; cuts fall anywhere", opt.say("CutAt", string(CutBlocks))).About(diag.Option, opt.name("CutAt"))}, sol.notes...)
		}
		return sol, err
	}
	half := whole
	if opt.TimeLimit > 0 {
		half.timeLimit = max(opt.TimeLimit/2, time.Millisecond)
	}
	// The two solves report progress apart: each phase is named for its cuts.
	if opt.Progress != nil {
		half.progress = func(pr Progress) { pr.Phase = "cuts anywhere: " + pr.Phase; opt.Progress(pr) }
	}
	sAny, errAny := p.planThroughput(p.ctx, half)
	blocked := half
	blocked.colocate = blockColocation(p.g, p.work, p.coarse, blockOf, nBlocks)
	if opt.Progress != nil {
		blocked.progress = func(pr Progress) { pr.Phase = "cuts between blocks: " + pr.Phase; opt.Progress(pr) }
	}
	sBlk, errBlk := p.planThroughput(p.ctx, blocked)
	switch {
	case errAny != nil && errBlk != nil:
		return nil, errAny
	case errBlk != nil:
		sAny.notes = append(sAny.notes, diag.Notef(diag.NoteFault, "cuts anywhere: no plan cutting only between the %s was found (%v)", desc, errBlk))
		return sAny, nil
	case errAny != nil:
		// Without the unrestricted plan there is no bound that holds for every plan.
		sBlk.lower, sBlk.bounds, sBlk.boundMethod = 0, nil, ""
		sBlk.notes = append(sBlk.notes, diag.Notef(diag.NoteFault, "cuts between the %s; the plan cutting anywhere failed (%v), so no bound covers every plan", desc, errAny))
		return sBlk, nil
	}
	cost := sBlk.upper/sAny.upper - 1
	if mode == CutAuto && cost > AutoBlockSlack {
		sAny.notes = append(sAny.notes, diag.Notef(diag.NoteApprox, "cuts anywhere: cutting only between the %s would be %.1f%% slower (%s against %s per %s); %s asks for it anyway",
			desc, 100*cost, durText(sBlk.upper), durText(sAny.upper), unit(sAny), opt.say("CutAt", string(CutBlocks))))
		return sAny, nil
	}
	blkLower := sBlk.lower
	sBlk.bounds, sBlk.boundMethod, sBlk.lower = sAny.bounds, sAny.boundMethod, min(sAny.lower, sBlk.upper)
	why := opt.say("CutAt", string(CutBlocks))
	if mode == CutAuto {
		why = fmt.Sprintf("a model with state: the default for decoders when it costs at most %.0f%%", 100*AutoBlockSlack)
	}
	sBlk.notes = append(sBlk.notes, diag.Notef(diag.NoteApprox, "cuts only between the %s (%s): %s, %s the best plan cutting anywhere found (%s); among block-boundary plans it is within %.1f%% of the best possible (bound %s); the certificate is the bound over every plan; %s lifts the restriction",
		desc, why, durText(sBlk.upper), slower(cost), durText(sAny.upper), 100*max(0, 1-blkLower/sBlk.upper), durText(blkLower), opt.say("CutAt", string(CutAny))))
	return sBlk, nil
}

func slower(cost float64) string {
	switch {
	case cost > 1e-9:
		return fmt.Sprintf("%.1f%% slower than", 100*cost)
	case cost < -1e-9:
		return fmt.Sprintf("%.1f%% faster than", -100*cost)
	}
	return "as fast as"
}

func unit(s *solution) string {
	if len(s.workload) > 0 {
		return "request"
	}
	return "inference"
}

// durText writes seconds in the largest unit that keeps a leading digit.
func durText(s float64) string {
	switch {
	case s >= 1:
		return fmt.Sprintf("%.3gs", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.3gms", s*1e3)
	}
	return fmt.Sprintf("%.3gµs", s*1e6)
}

// findBlocks finds g's repeated blocks (graph/blocks): the block of each node (-1 outside
// any), their number, and a description for notes.
func findBlocks(g *graph.Graph, res *blocks.Result) (blockOf []int, n int, desc string) {
	if res == nil || len(res.Blocks) < 2 {
		return nil, 0, ""
	}
	blockOf = make([]int, len(g.Nodes))
	for v := range blockOf {
		blockOf[v] = -1
	}
	repeated := 0
	for b, bl := range res.Blocks {
		for _, v := range bl.Nodes {
			blockOf[v] = b
		}
		if bl.Repeated {
			repeated++
		}
	}
	desc = fmt.Sprintf("%d blocks", len(res.Blocks))
	if repeated > 0 && repeated < len(res.Blocks) {
		desc = fmt.Sprintf("%d blocks (%d repeated)", len(res.Blocks), repeated)
	}
	return blockOf, len(res.Blocks), desc
}
