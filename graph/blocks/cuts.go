package blocks

import (
	"math/bits"
	"sort"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
)

// analysis holds the state of one Find.
type analysis struct {
	g    *graph.Graph
	topo []int
	// static marks weight-only nodes; active is its negation.
	static []bool
	// inputIdx is the index of a graph input among g.Inputs, -1 for other tensors.
	inputIdx []int
	// words per data-dependence set; dset holds one set of graph inputs per node.
	words int
	dset  []uint64
	// trunk holds the graph inputs where the longest data path starts (input_ids, an
	// image): a tensor depending on one is never a side tensor.
	trunk []uint64
	depth []int
	// part0 marks the cones of the side tensors, which stay in the prologue.
	part0 []bool

	// The chain of cuts: stream tensors and their producers; cutIdx[v] is v's index in it
	// or -1.
	stream   []int
	producer []int
	cutIdx   []int

	// level[v] is v's segment; segments run 0..len(stream).
	level []int
	seg   []segment

	runs    []run
	primary run // the first run taken
}

// segment is the set of nodes between two consecutive cuts.
type segment struct {
	nodes   []int // active nodes, ascending
	statics []int // weight-only nodes going with them
	in, out int   // tensors entering and leaving, -1 for none
	sig     uint64
	ops     map[string]int
	flops   int64
}

func newAnalysis(g *graph.Graph) *analysis {
	n := len(g.Nodes)
	a := &analysis{g: g, topo: g.TopoOrder(), static: make([]bool, n), inputIdx: make([]int, len(g.Tensors)),
		depth: make([]int, n), part0: make([]bool, n), cutIdx: make([]int, n), level: make([]int, n),
	}
	for i := range a.inputIdx {
		a.inputIdx[i] = -1
	}
	for i, t := range g.Inputs {
		a.inputIdx[t] = i
	}
	// Weight-only nodes: graph.Node.Static, or (for graphs not built by ingest) nodes of the
	// default domain reading only initializers and outputs of such nodes.
	for _, v := range a.topo {
		nd := &g.Nodes[v]
		st := nd.Static
		if !st && (nd.Domain == "" || nd.Domain == "ai.onnx") && !random[nd.OpType] {
			st = true
			for _, t := range nd.Deps() {
				if !a.isWeight(t) {
					st = false
					break
				}
			}
		}
		a.static[v] = st
	}
	a.words = (len(g.Inputs) + 63) / 64
	a.dset = make([]uint64, n*a.words)
	for _, v := range a.topo {
		if a.static[v] {
			continue
		}
		nd := &g.Nodes[v]
		d := 0
		for _, p := range g.Preds(v) {
			if !a.static[p] && a.depth[p]+1 > d {
				d = a.depth[p] + 1
			}
		}
		a.depth[v] = d
		if shapeOnly(nd) {
			continue
		}
		row := a.set(v)
		for _, t := range nd.Deps() {
			switch {
			case a.inputIdx[t] >= 0:
				row[a.inputIdx[t]/64] |= 1 << (uint(a.inputIdx[t]) % 64)
			case a.carried(t):
				for k, w := range a.set(g.Tensors[t].Producer) {
					row[k] |= w
				}
			}
		}
	}
	// The trunk: the graph inputs at the start of the longest data path to an output. The
	// residual stream runs through every block, while a mask or rotary table joins it
	// inside the first one.
	height := make([]int, n)
	for i := len(a.topo) - 1; i >= 0; i-- {
		v := a.topo[i]
		if a.static[v] || shapeOnly(&g.Nodes[v]) {
			continue
		}
		for _, t := range g.Nodes[v].Deps() {
			if a.carried(t) && !sideInput(&g.Nodes[v], t) {
				p := g.Tensors[t].Producer
				height[p] = max(height[p], height[v]+1)
			}
		}
	}
	a.trunk = make([]uint64, a.words)
	inputHeight := make([]int, len(g.Inputs))
	top := 0
	for v := range g.Nodes {
		if a.static[v] || shapeOnly(&g.Nodes[v]) {
			continue
		}
		for _, t := range g.Nodes[v].Deps() {
			if i := a.inputIdx[t]; i >= 0 && !sideInput(&g.Nodes[v], t) {
				inputHeight[i] = max(inputHeight[i], height[v]+1)
				top = max(top, inputHeight[i])
			}
		}
	}
	for i, h := range inputHeight {
		if h == top && top > 0 {
			a.trunk[i/64] |= 1 << (uint(i) % 64)
		}
	}
	return a
}

// sideOf reports whether tensor t can be a side tensor beside a stream whose data depends on
// the graph inputs ds: t depends on a strict subset of them, and on no trunk input.
func (a *analysis) sideOf(t int, ds []uint64) bool {
	if cs := a.g.Tensors[t].Consumers; len(cs) > 0 {
		// read only where an attention op takes a mask or lengths (EmbedLayerNormalization's
		// mask_index): a side tensor by the ops' semantics, whatever it depends on
		all := true
		for _, c := range cs {
			all = all && sideInput(&a.g.Nodes[c], t)
		}
		if all {
			return true
		}
	}
	dt := a.set(a.g.Tensors[t].Producer)
	for k := range dt {
		if dt[k]&a.trunk[k] != 0 {
			return false
		}
	}
	return strictSubset(dt, ds)
}

var random = map[string]bool{
	optype.RandomNormal: true, optype.RandomUniform: true, optype.RandomNormalLike: true,
	optype.RandomUniformLike: true, optype.Multinomial: true, optype.Bernoulli: true,
}

// shapeOnly reports whether a node reads only the shape of its input (Shape, Size), so that
// its output carries no data of it.
func shapeOnly(nd *graph.Node) bool {
	return (nd.Domain == "" || nd.Domain == "ai.onnx") && (nd.OpType == optype.Shape || nd.OpType == optype.Size)
}

func (a *analysis) set(v int) []uint64 { return a.dset[v*a.words : (v+1)*a.words] }

// isWeight reports whether t is an initializer or the output of a weight-only node.
func (a *analysis) isWeight(t int) bool {
	tn := &a.g.Tensors[t]
	return tn.Kind == graph.Initializer || tn.Producer >= 0 && a.static[tn.Producer]
}

// carried reports whether t is an activation that must cross a cut placed between its
// producer and a consumer: not a weight, a folded constant or a graph input.
func (a *analysis) carried(t int) bool {
	tn := &a.g.Tensors[t]
	return tn.Kind == graph.Activation && tn.Producer >= 0 && !a.static[tn.Producer] && tn.Value == nil
}

// strictSubset reports whether data set x is a strict subset of y.
func strictSubset(x, y []uint64) bool {
	eq := true
	for k := range x {
		if x[k]&^y[k] != 0 {
			return false
		}
		if x[k] != y[k] {
			eq = false
		}
	}
	return !eq
}

func popcount(x []uint64) int {
	c := 0
	for _, w := range x {
		c += bits.OnesCount64(w)
	}
	return c
}

// cut is a boundary of a sweep where one stream tensor is live beside side tensors.
type cut struct {
	stream int
	side   []int
}

// sweep visits the active nodes in the order of key (a topological key: it grows along
// every edge) and tests each boundary between two key values. hint marks side tensors known
// from elsewhere, for the second chance.
func (a *analysis) sweep(key []int, hint []bool) []cut {
	g := a.g
	var keys []int
	for v := range g.Nodes {
		if !a.static[v] {
			keys = append(keys, key[v])
		}
	}
	sort.Ints(keys)
	uniq := keys[:0]
	for i, k := range keys {
		if i == 0 || k != keys[i-1] {
			uniq = append(uniq, k)
		}
	}
	rank := func(k int) int { return sort.SearchInts(uniq, k) }
	nb := len(uniq) - 1 // boundaries: after uniq[b], b < nb
	if nb <= 0 {
		return nil
	}
	starts := make([][]int, nb)
	ends := make([][]int, nb+1)
	for t := range g.Tensors {
		if !a.carried(t) {
			continue
		}
		s := rank(key[g.Tensors[t].Producer])
		e := s
		for _, c := range g.Tensors[t].Consumers {
			if r := rank(key[c]); r > e {
				e = r
			}
		}
		if e > s {
			starts[s] = append(starts[s], t)
			ends[e] = append(ends[e], t)
		}
	}
	// Rule 1: one stream whose inputs strictly contain every other live tensor's, which
	// depend on no trunk input.
	rule1 := func(live []int) (s int, side []int) {
		if len(live) == 1 {
			return live[0], nil
		}
		best := -1
		for _, t := range live {
			c := popcount(a.set(g.Tensors[t].Producer))
			// of a fused residual's two outputs, the normalized one (output 0) is the stream
			// of a residual pair, the normalized member is the stream
			if c > best || c == best && pairHead(g, t, s) {
				s, best = t, c
			}
		}
		ds := a.set(g.Tensors[s].Producer)
		for _, t := range live {
			if t == s {
				continue
			}
			if pairHead(g, s, t) {
				continue // the other half of a residual pair: it crosses with s
			}
			if !a.sideOf(t, ds) {
				return -1, nil
			}
			side = append(side, t)
		}
		return s, sortedInts(side)
	}
	// A first pass with rule 1 alone collects side tensors for the second chance.
	hint2 := make([]bool, len(g.Tensors))
	if hint != nil {
		copy(hint2, hint)
	}
	a.live(nb, starts, ends, func(b int, live []int) {
		if s, side := rule1(live); s >= 0 {
			for _, t := range side {
				hint2[t] = true
			}
		}
	})
	a.closeSide(hint2)
	var out []cut
	a.live(nb, starts, ends, func(b int, live []int) {
		s, side := rule1(live)
		if s < 0 {
			// Second chance: all live tensors but one (or one residual pair) are known
			// side tensors.
			side = nil
			var rest []int
			for _, t := range live {
				if hint2[t] {
					side = append(side, t)
					continue
				}
				rest = append(rest, t)
			}
			switch {
			case len(rest) == 1:
				s = rest[0]
			case len(rest) == 2 && pairHead(g, rest[0], rest[1]):
				s = rest[0]
			case len(rest) == 2 && pairHead(g, rest[1], rest[0]):
				s = rest[1]
			default:
				return
			}
			side = sortedInts(side)
		}
		out = append(out, cut{s, side})
	})
	return out
}

// closeSide adds to the side tensors in hint the carried tensors they are computed from that
// depend on no trunk input: the steps from attention_mask to the lengths an attention op
// reads (ReduceSum, Sub, Cast) are side tensors too where they are live beside the stream,
// though they are never live beside a stream that has read the mask.
func (a *analysis) closeSide(hint []bool) {
	g := a.g
	var stack []int
	for t, h := range hint {
		if h {
			stack = append(stack, t)
		}
	}
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		p := g.Tensors[t].Producer
		if p < 0 || shapeOnly(&g.Nodes[p]) {
			continue
		}
		for _, u := range g.Nodes[p].Deps() {
			if hint[u] || !a.carried(u) || a.onTrunk(g.Tensors[u].Producer) {
				continue
			}
			hint[u] = true
			stack = append(stack, u)
		}
	}
}

// onTrunk reports whether node v's data depends on a trunk input.
func (a *analysis) onTrunk(v int) bool {
	for k, w := range a.set(v) {
		if w&a.trunk[k] != 0 {
			return true
		}
	}
	return false
}

// live calls f at every boundary with the tensors live there (in no particular order).
func (a *analysis) live(nb int, starts, ends [][]int, f func(b int, live []int)) {
	var set []int
	pos := map[int]int{}
	for b := 0; b < nb; b++ {
		for _, t := range ends[b] {
			i := pos[t]
			last := set[len(set)-1]
			set[i] = last
			pos[last] = i
			set = set[:len(set)-1]
			delete(pos, t)
		}
		for _, t := range starts[b] {
			pos[t] = len(set)
			set = append(set, t)
		}
		if len(set) > 0 {
			f(b, set)
		}
	}
}

// cuts runs both sweeps, keeps the chain of cuts and gives every node its segment.
func (a *analysis) cuts() {
	g := a.g
	n := len(g.Nodes)
	// First sweep: by depth.
	first := a.sweep(a.depth, nil)
	hint := make([]bool, len(g.Tensors))
	isCut1 := make([]bool, n)
	for _, c := range first {
		isCut1[g.Tensors[c.stream].Producer] = true
		for _, t := range c.side {
			hint[t] = true
		}
	}
	// dd: the node depends on data of a cut producer of the first sweep.
	dd := make([]bool, n)
	for _, v := range a.topo {
		if a.static[v] || shapeOnly(&g.Nodes[v]) {
			continue
		}
		for _, t := range g.Nodes[v].Deps() {
			if a.carried(t) {
				if p := g.Tensors[t].Producer; isCut1[p] || dd[p] {
					dd[v] = true
					break
				}
			}
		}
	}
	// Part 0: the data cones of the side tensors that no node depending on a cut (through
	// any edge) belongs to, with their ancestors over every edge. It stays in the prologue.
	bad := make([]bool, n)
	for _, v := range a.topo {
		bad[v] = dd[v]
		for _, p := range g.Preds(v) {
			bad[v] = bad[v] || bad[p]
		}
	}
	region := make([]bool, n)
	for t := range g.Tensors {
		if !hint[t] {
			continue
		}
		if cone, ok := a.cone(g.Tensors[t].Producer, coneData, func(v int) bool { return !bad[v] }); ok {
			for _, v := range cone {
				region[v] = true
			}
		}
	}
	var stack []int
	for v := range g.Nodes {
		if region[v] && !a.part0[v] {
			a.part0[v] = true
			stack = append(stack[:0], v)
			for len(stack) > 0 {
				x := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				for _, p := range g.Preds(x) {
					if !a.static[p] && !a.part0[p] {
						a.part0[p] = true
						stack = append(stack, p)
					}
				}
			}
		}
	}
	// Second sweep: nodes depending on cut data as early as possible, the others as late as
	// possible (a mask or rotary table computed where it is first read).
	key := make([]int, n)
	for i := len(a.topo) - 1; i >= 0; i-- {
		v := a.topo[i]
		switch {
		case a.static[v]:
		case dd[v]:
			key[v] = a.depth[v]
		default:
			key[v] = a.depth[v]
			late := -1
			for _, c := range g.Succs(v) {
				if !a.static[c] && (late < 0 || key[c]-1 < late) {
					late = key[c] - 1
				}
			}
			key[v] = max(key[v], late)
		}
	}
	second := a.sweep(key, hint)
	// Candidates for the chain: the first cut of every stream tensor and producer.
	seenT := map[int]bool{}
	cand := map[int]cut{} // by producer
	for _, c := range second {
		p := g.Tensors[c.stream].Producer
		if _, ok := cand[p]; !ok && !seenT[c.stream] {
			cand[p] = c
		}
		seenT[c.stream] = true
	}
	order := make([]int, 0, n)
	for _, v := range a.topo {
		if !a.static[v] {
			order = append(order, v)
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return key[order[i]] < key[order[j]] })
	a.chain(order, cand)
	for v := range a.cutIdx {
		a.cutIdx[v] = -1
	}
	for j, p := range a.producer {
		a.cutIdx[p] = j
	}
	for _, v := range order {
		lvl := 0
		if !a.part0[v] {
			for _, p := range g.Preds(v) {
				if a.static[p] {
					continue
				}
				l := a.level[p]
				if a.cutIdx[p] >= 0 {
					l = a.cutIdx[p] + 1
				}
				lvl = max(lvl, l)
			}
		}
		a.level[v] = lvl
	}
	// A node that depends on no cut's data and feeds one segment only joins that segment
	// (a mask that every layer builds for itself from attention_mask).
	for i := len(order) - 1; i >= 0; i-- {
		v := order[i]
		if dd[v] || a.cutIdx[v] >= 0 {
			continue
		}
		to := -1
		for _, c := range g.Succs(v) {
			if a.static[c] {
				continue
			}
			if to >= 0 && a.level[c] != to {
				to = -1
				break
			}
			to = a.level[c]
		}
		if to > a.level[v] {
			a.level[v] = to
		}
	}
	// Weight-only nodes go with their first consumer.
	for i := len(a.topo) - 1; i >= 0; i-- {
		v := a.topo[i]
		if !a.static[v] {
			continue
		}
		lvl := -1
		for _, c := range g.Succs(v) {
			if lvl < 0 || a.level[c] < lvl {
				lvl = a.level[c]
			}
		}
		a.level[v] = max(lvl, 0)
	}
}

// chain keeps the longest sequence of candidate cuts (by producer) in which each producer
// descends from the previous one, found in one pass over order (a topological order); ties
// go to the candidate later in order, the one closest to the next cut. A chain member inside
// part 0 other than the first drops the members before it, so that part 0 stays segment 0.
func (a *analysis) chain(order []int, cand map[int]cut) {
	g := a.g
	pos := make([]int, len(g.Nodes))
	for i, v := range order {
		pos[v] = i
	}
	// For every node: the longest chain of candidates reaching it and the candidate ending it.
	length := make([]int, len(g.Nodes))
	last := make([]int, len(g.Nodes))
	prev := make([]int, len(g.Nodes))
	best := -1
	better := func(l1, c1, l2, c2 int) bool { // is (l1, c1) better than (l2, c2)?
		if l1 != l2 {
			return l1 > l2
		}
		return c2 < 0 || c1 >= 0 && pos[c1] > pos[c2]
	}
	for _, v := range order {
		l, c := 0, -1
		for _, p := range g.Preds(v) {
			if a.static[p] {
				continue
			}
			if better(length[p], last[p], l, c) {
				l, c = length[p], last[p]
			}
		}
		if _, ok := cand[v]; ok {
			prev[v] = c
			l, c = l+1, v
			if best < 0 || better(l, c, length[best], best) {
				best = v
			}
		}
		length[v], last[v] = l, c
	}
	var chain []int
	for c := best; c >= 0; c = prev[c] {
		chain = append(chain, c)
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	for j := len(chain) - 1; j > 0; j-- {
		if a.part0[chain[j]] {
			chain = chain[j:]
			break
		}
	}
	a.producer = chain
	for _, p := range chain {
		a.stream = append(a.stream, cand[p].stream)
	}
}

// Walks of cone.
const (
	coneCarried = iota // edges carrying activations (not folded constants)
	coneData           // as coneCarried, without the input of Shape and Size
)

// cone returns node v and its ancestors among active nodes, ascending, walking the edges
// that mode allows. It stops with ok false when keep refuses a node; nil keep accepts all.
func (a *analysis) cone(v int, mode int, keep func(int) bool) (cone []int, ok bool) {
	g := a.g
	seen := map[int]bool{v: true}
	stack := []int{v}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if keep != nil && !keep(x) {
			return nil, false
		}
		cone = append(cone, x)
		if mode == coneData && shapeOnly(&g.Nodes[x]) {
			continue
		}
		for _, t := range g.Nodes[x].Deps() {
			p := g.Tensors[t].Producer
			if p < 0 || a.static[p] || seen[p] || !a.carried(t) {
				continue
			}
			seen[p] = true
			stack = append(stack, p)
		}
	}
	return sortedInts(cone), true
}

// residualOps are ONNX Runtime's fused residual normalizations: output 0 is the normalized
// sum, output 3 the sum itself (input + skip + bias), which the next layer's one takes as
// its skip. Exporters that fuse the residual this way (ORT's transformer optimizer, GenAI's
// model builder) have no single tensor between layers: the two outputs of one such node
// cross the boundary together, and count as one cut.
var residualOps = map[string]bool{optype.SkipLayerNormalization: true, optype.SkipSimplifiedLayerNormalization: true}

// normOps are the normalizations that start such a chain: the first layer of a pre-norm
// model normalizes the embedding with one of them, and the embedding is the skip of the
// first fused residual.
var normOps = map[string]bool{optype.SimplifiedLayerNormalization: true, optype.LayerNormalization: true, optype.RMSNormalization: true}

// pairHead reports whether t is the stream member of a residual pair {s, t}, the two
// tensors that carry a pre-norm model's residual stream between layers where a fused
// residual normalization carries it (residualOps):
//   - t and s are outputs 0 and 3 of one fused residual normalization;
//   - or t is the output of a normalization (normOps) of s, and s is the skip input of a
//     fused residual normalization: the first layer's head, which normalizes the embedding
//     before the chain begins. Its cut then matches the later layers' cuts.
func pairHead(g *graph.Graph, t, s int) bool {
	if t < 0 || s < 0 {
		return false
	}
	p := g.Tensors[t].Producer
	if p < 0 {
		return false
	}
	n := &g.Nodes[p]
	if p == g.Tensors[s].Producer {
		return n.Domain == "com.microsoft" && residualOps[n.OpType] && n.Outputs[0] == t
	}
	if !normOps[n.OpType] || len(n.Inputs) == 0 || n.Inputs[0] != s || n.Outputs[0] != t {
		return false
	}
	for _, c := range g.Tensors[s].Consumers {
		k := &g.Nodes[c]
		if k.Domain == "com.microsoft" && residualOps[k.OpType] && len(k.Inputs) > 1 && k.Inputs[1] == s {
			return true
		}
	}
	return false
}

// attentionSide lists, for ONNX Runtime's attention contrib ops, the input slots that are
// not the stream by the op's semantics: sequence lengths, masks, biases, rotary tables and
// positions. A mask computed in a few steps from attention_mask (the model builder's
// ReduceSum, Sub, Cast into GroupQueryAttention's seqlens_k) may reach the op by a path
// longer than the embedding's; the trunk is where the stream starts, not the mask.
var attentionSide = map[string]map[int]bool{
	optype.GroupQueryAttention: {5: true, 6: true, 7: true, 8: true, 9: true, 10: true},
	optype.MultiHeadAttention:  {4: true, 5: true},
	optype.Attention:           {3: true, 5: true},
	optype.RotaryEmbedding:     {1: true, 2: true, 3: true},
}

// sideInput reports whether node n reads t only in side slots (attentionSide).
func sideInput(n *graph.Node, t int) bool {
	slots, ok := attentionSide[n.OpType]
	if !ok || n.Domain != "com.microsoft" {
		return false
	}
	found := false
	for i, in := range n.Inputs {
		if in == t {
			if !slots[i] {
				return false
			}
			found = true
		}
	}
	return found
}
