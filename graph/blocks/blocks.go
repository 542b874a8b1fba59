// Package blocks finds the repeated blocks of an operator graph (transformer layers, the
// residual blocks of a ResNet stage, the layers of an MLP) from its structure alone: op
// types, how nodes connect, weight shapes. Node and tensor names are never read.
//
// What goes in: a *graph.Graph. What comes out: a Result with the blocks in pipeline order
// (each a set of nodes between two single-tensor cuts, with the tensor entering and the
// tensor leaving it), the prologue and epilogue around them, and the shared tensors that
// every block reads beside the stream (a decoder's attention mask, rotary cos/sin), each
// with the cone of nodes that computes it. Contract maps nodes to groups (one per block) so
// that a planner working on groups can only cut between blocks; Order and Boundaries give
// a topological order in which every block is contiguous and the positions in it where
// blocks begin.
//
// The algorithm, in four steps:
//
//  1. Cuts. Tensors that never have to cross a cut are left out: weights, outputs of
//     weight-only nodes (graph.Node.Static), folded constants (graph.Tensor.Value) and
//     graph inputs (a pipeline feeds these to every stage that reads them). Every node
//     gets the set of graph inputs its data depends on (the input of Shape and Size is
//     not data). The trunk is the graph input where the longest data path to an output
//     starts: input_ids, an image. The nodes are swept in a topological order keyed by
//     structure (longest-path depth, never node ids), and at each boundary between two
//     depths the live activations are examined. The boundary is a cut when one tensor s
//     is live, or when every other live tensor depends on a strict subset of s's inputs
//     and not on the trunk: these are side tensors, like a mask built from
//     attention_mask beside a hidden state that depends on input_ids, attention_mask
//     and position_ids. (A block's entering tensor depends on the trunk, so it is never
//     taken for a side tensor where the block's middle mixes in a mask or past keys.) A
//     second chance makes a boundary a cut when all live tensors but one are side
//     tensors found elsewhere, or computed only from graph inputs towards one (the steps
//     from attention_mask to an attention op's sequence lengths): that finds the cut after
//     the embedding, where the hidden state and the mask depend on different inputs. Where
//     a fused residual normalization carries the residual (ORT's SkipLayerNormalization,
//     SkipSimplifiedLayerNormalization), its normalized output and the sum it passes on
//     count as one stream tensor; so do the first layer's normalization of the embedding
//     and the embedding, when the embedding is the skip of the first fused residual: the
//     first layer's cut then looks like the others'.
//  2. Segments. A second sweep places the nodes that depend on no cut of the first as
//     late as possible (a mask or rotary table computed where it is first read) and the
//     others as early as possible. Its cuts, chained so that each cut's producer
//     descends from the previous one's (the longest such chain), split the nodes into
//     segments: a node belongs to the segment after the last cut it descends from. The
//     cones of the side tensors that depend on no cut stay in the first segment;
//     computations that depend on no cut and feed a single segment join it (a mask that
//     every layer builds for itself); weight-only nodes go with their first consumer.
//  3. Signatures. A segment's signature hashes, for every node, its op type and domain
//     and, per input slot, where the value comes from: a node of the same segment (by
//     that node's hash and output index, so the hash is independent of node order), the
//     tensor entering the segment, a weight or constant (with dtype and shape), a graph
//     input (dtype and shape) or another activation (a side tensor). Attributes and
//     activation shapes are not hashed. Two segments are equal when the sorted hashes of
//     their nodes and the producer of their outgoing tensor agree.
//  4. Runs. For every unit length u (segments per block, up to MaxUnit), maximal stretches
//     of segments with period u give runs of identical units; units that are themselves
//     repetitions of a shorter unit are skipped. A run is scored by the nodes it covers,
//     with the groups beside it that it absorbs (below). The best run is taken first
//     (ties: the larger unit, then the earlier run); where a stretch leaves a choice of
//     phase, the unit starts at the boundary tensor with the most readers (the fork of a
//     residual connection), then at its largest segment, then as early as possible. A
//     phase that gives up one unit of the stretch is taken only when it covers more nodes
//     with the groups it absorbs: where the first and the last layer differ from the others
//     by a head or a tail op, the middle layers repeat from the middle of a layer as well,
//     and only the layer-aligned phase lets the first and last layers join as blocks.
//     Further runs are taken, best first, when they do not overlap and their unit has at
//     least half the nodes of the first run's unit: ResNet's stages give one run each.
//     The first run must have units of two nodes or more and cover a tenth of the graph's
//     nodes, or there are no blocks.
//
// A unit whose pieces repeat inside it is a group of different layers (a hybrid stack: three
// linear-attention layers, then one full-attention layer, repeated): it is split where a
// segment like the unit's first begins or one like its last has just ended, when a piece so
// cut comes more than once in the unit, so that each layer is a block and the group is the
// period (Result.Unit). A post-norm encoder layer, whose two halves both end with a like
// normalization but come once each, stays one block.
//
// Blocks that differ by weight shape are different kinds (Block.Kind) but all are
// reported: the segments between two runs become one block when they hold at most twice
// the nodes of the larger neighbouring unit (else one block per unit length when that
// divides their count, else one per segment), and a group of segments next to the first
// or last run becomes a block when it holds every op of that run's unit and at most twice
// its nodes (ResNet's first block of a stage, with a projection on the shortcut). So
// ResNet-50 yields its 16 bottleneck blocks, with one kind per stage for the plain blocks
// and one per projection block.
//
// Limits: the cut test is a heuristic on data dependence, not a min-cut. Two streams that
// never merge (two towers) hide the cuts between them. The trunk must be where the
// longest path starts: a mask whose computation is deeper than a decoder layer's path from
// its input to the attention scores, or an encoder–decoder whose encoder output (read by
// every decoder layer) depends on the trunk, hides the decoder's cuts. Blocks that differ
// in attributes only (strides, a local against a global attention window read from
// different masks) count as the same kind.
package blocks

import (
	"sort"

	"github.com/onnxpart/onnxpart/graph"
)

// MaxUnit bounds the segments per block that Find tries (a decoder layer has 2, a post-LN
// encoder layer 4).
const MaxUnit = 1024

// Block is one block of the graph.
type Block struct {
	// Nodes are the block's nodes, ascending: the nodes between the cut at In and the cut
	// at Out, and the weight-only nodes whose first consumer is among them.
	Nodes []int
	// In is the tensor entering the block (the previous block's Out; for the first block a
	// cut tensor of the prologue or the graph input it reads), Out the tensor leaving it.
	In, Out int
	// InBytes and Bytes are the sizes of In and Out (-1 unknown): Bytes is what a cut after
	// the block sends besides the shared tensors.
	InBytes, Bytes int64
	// FLOPs sums the FLOPs of the block's nodes that are not weight-only.
	FLOPs int64
	// Kind numbers the block's signature by first appearance: blocks of the same kind have
	// the same ops, connections and weight shapes.
	Kind int
	// Repeated is true for the units of a run of identical blocks, false for a block between
	// or beside runs.
	Repeated bool
}

// SharedTensor is an activation that crosses a block boundary beside the boundary's stream
// tensor: one that blocks read beside the stream, computed before them (a decoder's causal
// mask, rotary cos/sin). A planner can give every stage that reads it either the tensor
// (cost: Bytes over the link) or its cone (cost: ConeFLOPs of compute).
type SharedTensor struct {
	Tensor int
	// Readers are the blocks that read the tensor, ascending (the epilogue may read it too).
	Readers []int
	// Cone are the nodes computing the tensor from graph inputs, weights and folded
	// constants, ascending (the producer included; weight-only nodes left out).
	Cone      []int
	ConeFLOPs int64
	Bytes     int64
	// InputsOnly is true when no node of the cone belongs to a block: the cone needs graph
	// inputs and weights only.
	InputsOnly bool
}

// Result is what Find returns.
type Result struct {
	// Blocks in pipeline order; empty when the graph has no repetition.
	Blocks []Block
	// Prologue are the nodes not in a block that no block node precedes (embedding, mask
	// and rotary computations, a CNN's stem), Epilogue the other nodes not in a block; both
	// ascending. Without blocks every node is in Prologue.
	Prologue, Epilogue []int
	// Shared are the activations that cross a block boundary and are not its stream
	// tensor (Block.In, Block.Out) or the residual that crosses with it (the sum a fused
	// residual normalization passes on beside its normalized output), ordered by the segment of their producer, then its
	// depth (longest path from the graph's sources), then name.
	Shared []SharedTensor
	// Unit is the number of segments between single-tensor cuts per unit of the best run
	// (2 for a decoder layer with two residual additions; 8 for a hybrid stack's group of
	// four two-segment layers, each a block); 0 without blocks.
	Unit int
	// Stream lists the tensors of every single-tensor cut found, in pipeline order; block
	// boundaries are among them.
	Stream []int
}

// Find returns the repeated blocks of g. A graph without repetition gives a Result with no
// blocks; Find never fails.
func Find(g *graph.Graph) *Result {
	a := newAnalysis(g)
	a.cuts()
	a.segments()
	a.signatures()
	return a.result()
}

// membership returns the block of every node (-1 for none) and whether a node outside the
// blocks comes after them (has a block node among its ancestors).
func membership(g *graph.Graph, blocks []Block) (blockOf []int, after []bool) {
	blockOf = make([]int, len(g.Nodes))
	for i := range blockOf {
		blockOf[i] = -1
	}
	for b, bl := range blocks {
		for _, v := range bl.Nodes {
			blockOf[v] = b
		}
	}
	after = make([]bool, len(g.Nodes))
	for _, v := range g.TopoOrder() {
		if blockOf[v] >= 0 {
			continue
		}
		for _, p := range g.Preds(v) {
			if blockOf[p] >= 0 || after[p] {
				after[v] = true
				break
			}
		}
	}
	return blockOf, after
}

// BlockOf returns the block of every node of g, -1 for the nodes outside the blocks.
func BlockOf(g *graph.Graph, blocks []Block) []int {
	blockOf, _ := membership(g, blocks)
	return blockOf
}

// Order returns a topological order of g's nodes in which the prologue comes first, then
// the nodes of each block in turn, then the epilogue. Ties go by node id.
func Order(g *graph.Graph, blocks []Block) []int {
	blockOf, after := membership(g, blocks)
	prio := make([]float64, len(g.Nodes))
	for v := range prio {
		switch {
		case blockOf[v] >= 0:
			prio[v] = float64(blockOf[v] + 1)
		case after[v]:
			prio[v] = float64(len(blocks) + 1)
		}
	}
	return g.KahnOrder(prio)
}

// Boundaries returns the cut positions at block boundaries in Order(g, blocks), ascending:
// b such that a stage starting at order[b] starts at a block or, after the last block, at
// the epilogue (the convention of emit's stage bounds). Position 0 and len(g.Nodes) are
// left out.
func Boundaries(g *graph.Graph, blocks []Block) []int {
	if len(blocks) == 0 {
		return nil
	}
	order := Order(g, blocks)
	blockOf, _ := membership(g, blocks)
	var out []int
	for i := 1; i < len(order); i++ {
		if blockOf[order[i]] != blockOf[order[i-1]] && (blockOf[order[i]] >= 0 || blockOf[order[i-1]] >= 0) {
			out = append(out, i)
		}
	}
	return out
}

// Contract maps every node of g to a group: one group per block, and every prologue and
// epilogue node in a group of its own (a planner may cut anywhere around the blocks, and
// only between blocks inside them). Groups are numbered in pipeline order, so every edge of
// g runs from a group to the same or a later one and the contracted graph is acyclic.
func Contract(g *graph.Graph, res *Result) []int {
	order := Order(g, res.Blocks)
	blockOf, _ := membership(g, res.Blocks)
	groupOf := make([]int, len(g.Nodes))
	blockGroup := make([]int, len(res.Blocks))
	for i := range blockGroup {
		blockGroup[i] = -1
	}
	next := 0
	for _, v := range order {
		b := blockOf[v]
		if b < 0 {
			groupOf[v] = next
			next++
			continue
		}
		if blockGroup[b] < 0 {
			blockGroup[b] = next
			next++
		}
		groupOf[v] = blockGroup[b]
	}
	return groupOf
}

// sortedInts returns s sorted ascending.
func sortedInts(s []int) []int {
	sort.Ints(s)
	return s
}
