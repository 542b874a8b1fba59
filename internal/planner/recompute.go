package planner

import (
	"math"
	"slices"

	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/graph/blocks"
)

// Tensors every block reads (a decoder's causal mask, its rotary cos/sin) are computed from
// graph inputs before the first block. A pipeline stage that reads one either receives it
// over the link or computes its cone itself (graph/blocks.SharedTensor); chooseRecompute
// picks the cheaper per tensor, on the work graph, and the chosen cones are recomputed in
// every stage that reads them (emit.Assignment.Recompute).
//
// Pricing stays certified: the partition problem leaves the chosen cones' tensors out (no
// transfer) and counts each cone's time once, at the stage it is assigned, which is at most
// what any plan pays for it (every reading stage computes it, or receives it and its
// producer's stage computes it), so the bounds hold; the plan's stages are then repriced with
// the cone time of every stage that computes it again (recomputeExtra).

// recomputeInput is what chooseRecompute weighs.
type recomputeInput struct {
	g, work *graph.Graph        // the model graph and the work graph planned
	coarse  *fusion.Grouping    // the work graph's groups (nil: work is g)
	blocks  *blocks.Result      // the model's blocks and the tensors they share
	times   []float64           // per work node, on the first device
	size    func(t int) float64 // the weighted bytes of a work tensor
	bw      float64             // the link's bandwidth
	state   []graph.StatePair   // state inputs, which live on one stage
}

// chooseRecompute returns the work nodes to recompute (nil for none) and the model graph's
// nodes they hold.
func chooseRecompute(in recomputeInput) (workRe []bool, fine []bool) {
	g, work, coarse, res, times, size, bw, state := in.g, in.work, in.coarse, in.blocks, in.times, in.size, in.bw, in.state
	if res == nil || len(res.Blocks) < 2 || len(times) != len(work.Nodes) || len(res.Shared) == 0 {
		return nil, nil
	}
	toWork := func(v int) int {
		if coarse == nil {
			return v
		}
		return coarse.GroupOf[v]
	}
	// Input-derived nodes: computed from the inputs (other than state, which lives on one
	// stage) and weights alone.
	isState := map[int]bool{}
	for _, p := range state {
		isState[p.In] = true
	}
	derived := g.InputDerived(isState)
	// A work node can be recomputed when all its members are input-derived (or weight-only).
	whole := make([]bool, len(work.Nodes))
	for w := range whole {
		whole[w] = true
	}
	for v := range g.Nodes {
		if w := toWork(v); w >= 0 && !g.Nodes[v].Static && !derived[v] {
			whole[w] = false
		}
	}
	workRe = make([]bool, len(work.Nodes))
	chosen := false
	for _, sh := range res.Shared {
		prod := g.Tensors[sh.Tensor].Producer
		wt, found := work.TensorByName(g.Tensors[sh.Tensor].Name)
		if prod < 0 || !derived[prod] || !found {
			continue
		}
		// The cone: the work nodes of the producer's input-derived ancestors.
		var cone []int
		nodes, ok := g.InputCone(prod, isState)
		for _, v := range nodes {
			w := toWork(v)
			if w < 0 || !whole[w] {
				ok = false
				break
			}
			if !slices.Contains(cone, w) {
				cone = append(cone, w)
			}
		}
		if !ok || len(cone) == 0 {
			continue
		}
		t := 0.0
		for _, w := range cone {
			t += times[w]
		}
		send := math.Inf(1)
		if bw > 0 && !math.IsInf(bw, 1) {
			send = size(wt) / bw
		}
		if t < send {
			for _, w := range cone {
				workRe[w] = true
			}
			chosen = true
		}
	}
	if !chosen {
		return nil, nil
	}
	fine = make([]bool, len(g.Nodes))
	for v := range g.Nodes {
		if w := toWork(v); w >= 0 && workRe[w] && !g.Nodes[v].Static {
			fine[v] = true
		}
	}
	return workRe, fine
}

// recomputeExtra is the time stage s adds by computing again the recomputed work nodes it
// needs and is not assigned: those feeding a node of s that is not recomputed, and their
// recomputed predecessors. time gives a work node's time on the stage's device.
func recomputeExtra(work *graph.Graph, re []bool, stage []int, s int, time func(w int) float64) float64 {
	if re == nil {
		return 0
	}
	need := map[int]bool{}
	var stack []int
	for w := range work.Nodes {
		if stage[w] != s || re[w] {
			continue
		}
		for _, p := range work.Preds(w) {
			if re[p] && !need[p] {
				need[p] = true
				stack = append(stack, p)
			}
		}
	}
	for len(stack) > 0 {
		w := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range work.Preds(w) {
			if re[p] && !need[p] {
				need[p] = true
				stack = append(stack, p)
			}
		}
	}
	extra := 0.0
	for w := range need {
		if stage[w] != s {
			extra += time(w)
		}
	}
	return extra
}
