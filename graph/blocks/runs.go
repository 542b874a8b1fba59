package blocks

import (
	"encoding/binary"
	"hash"
	"hash/fnv"
	"sort"

	"github.com/onnxpart/onnxpart/graph"
)

// segments groups the nodes by level and sets each segment's boundary tensors.
func (a *analysis) segments() {
	g := a.g
	m := len(a.stream)
	a.seg = make([]segment, m+1)
	for v := range g.Nodes {
		s := &a.seg[a.level[v]]
		if a.static[v] {
			s.statics = append(s.statics, v)
			continue
		}
		s.nodes = append(s.nodes, v)
		s.flops += max(g.Nodes[v].FLOPs, 0)
	}
	for j := range a.seg {
		s := &a.seg[j]
		s.in, s.out = -1, -1
		if j > 0 {
			s.in = a.stream[j-1]
		}
		if j < m {
			s.out = a.stream[j]
		}
	}
	// The first segment's entering tensor is the one graph input its nodes read as data; the
	// last one's leaving tensor the one graph output it produces.
	ins := map[int]bool{}
	for _, v := range a.seg[0].nodes {
		if !shapeOnly(&g.Nodes[v]) {
			for _, t := range g.Nodes[v].Deps() {
				if a.inputIdx[t] >= 0 {
					ins[t] = true
				}
			}
		}
	}
	for t := range ins {
		if len(ins) == 1 {
			a.seg[0].in = t
		}
	}
	var outs []int
	for _, v := range a.seg[m].nodes {
		for _, t := range g.Nodes[v].Outputs {
			if t >= 0 && g.Tensors[t].IsOutput {
				outs = append(outs, t)
			}
		}
	}
	if len(outs) == 1 {
		a.seg[m].out = outs[0]
	}
}

// put writes x into h.
func put(h hash.Hash64, x uint64) {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], x)
	h.Write(buf[:])
}

// signatures hashes every node and segment (see the package comment).
func (a *analysis) signatures() {
	g := a.g
	nodeHash := make([]uint64, len(g.Nodes))
	shape := func(h hash.Hash64, t int) {
		tn := &g.Tensors[t]
		put(h, uint64(tn.DType))
		if tn.Shape == nil {
			put(h, ^uint64(0))
			return
		}
		put(h, uint64(len(tn.Shape)))
		for _, d := range tn.Shape {
			put(h, uint64(d.Value))
			h.Write([]byte(d.Param))
			h.Write([]byte{0})
		}
	}
	const (
		tagNone = iota + 1
		tagIn
		tagLocal
		tagWeight
		tagConst
		tagInput
		tagOther
	)
	for _, v := range a.topo {
		if a.static[v] {
			continue
		}
		nd := &g.Nodes[v]
		s := &a.seg[a.level[v]]
		h := fnv.New64a()
		h.Write([]byte(nd.Domain))
		h.Write([]byte{0})
		h.Write([]byte(nd.OpType))
		h.Write([]byte{0})
		slots := append(append([]int(nil), nd.Inputs...), nd.Captures...)
		put(h, uint64(len(nd.Inputs)))
		for _, t := range slots {
			if t < 0 {
				put(h, tagNone)
				continue
			}
			tn := &g.Tensors[t]
			p := tn.Producer
			switch {
			case t == s.in:
				put(h, tagIn)
			case p >= 0 && !a.static[p] && a.level[p] == a.level[v]:
				put(h, tagLocal)
				put(h, nodeHash[p])
				put(h, uint64(outputIndex(g, t)))
			case a.isWeight(t):
				put(h, tagWeight)
				shape(h, t)
			case tn.Value != nil:
				put(h, tagConst)
				shape(h, t)
			case tn.Kind == graph.Input:
				put(h, tagInput)
				shape(h, t)
			default:
				put(h, tagOther)
				shape(h, t)
			}
		}
		nodeHash[v] = h.Sum64()
	}
	for j := range a.seg {
		s := &a.seg[j]
		hashes := make([]uint64, len(s.nodes))
		s.ops = map[string]int{}
		for i, v := range s.nodes {
			hashes[i] = nodeHash[v]
			s.ops[opName(&g.Nodes[v])]++
		}
		sort.Slice(hashes, func(i, k int) bool { return hashes[i] < hashes[k] })
		h := fnv.New64a()
		for _, x := range hashes {
			put(h, x)
		}
		if s.in >= 0 {
			put(h, 1)
		} else {
			put(h, 0)
		}
		if s.out >= 0 {
			p := g.Tensors[s.out].Producer
			put(h, nodeHash[p])
			put(h, uint64(outputIndex(g, s.out)))
		} else {
			put(h, 0)
		}
		s.sig = h.Sum64()
	}
}

// outputIndex is the slot of tensor t among the outputs of its producer.
func outputIndex(g *graph.Graph, t int) int {
	p := &g.Nodes[g.Tensors[t].Producer]
	for i, o := range p.Outputs {
		if o == t {
			return i
		}
	}
	return -1
}

func opName(nd *graph.Node) string {
	if nd.Domain == "" || nd.Domain == "ai.onnx" {
		return nd.OpType
	}
	return nd.Domain + "." + nd.OpType
}

// run is a sequence of count identical units of unit consecutive segments from start.
type run struct {
	start, unit, count int
	nodes              int // active nodes covered, with the groups extend adds
	unitNodes          int
}

func (r run) end() int { return r.start + r.unit*r.count }

// findRuns picks the runs of identical units (see the package comment).
func (a *analysis) findRuns() {
	seg := a.seg
	n := len(seg)
	prefix := make([]int, n+1)
	total := 0
	for j := range seg {
		prefix[j+1] = prefix[j] + len(seg[j].nodes)
		total += len(seg[j].nodes)
	}
	fanout := func(j int) int {
		if seg[j].in < 0 {
			return 0
		}
		return len(a.g.Tensors[seg[j].in].Consumers)
	}
	var cands []run
	for u := 1; u <= n/2 && u <= MaxUnit; u++ {
		for j := 0; j+u < n; {
			if seg[j].sig != seg[j+u].sig {
				j++
				continue
			}
			a0 := j
			for j+u < n && seg[j].sig == seg[j+u].sig {
				j++
			}
			length := j - a0 + u // segments a0 .. j+u-1 have period u
			if length/u < 2 || !primitive(seg[a0:a0+u]) {
				continue
			}
			var best run
			bestFan, bestFirst := -1, -1
			// Every phase: one that gives up a unit of the stretch may let extend absorb a
			// first and a last layer that differ from the others by their head or tail op
			// (a builder decoder's SimplifiedLayerNormalization before the Skip chain).
			for o := 0; o < u && (length-o)/u >= 2; o++ {
				r := run{start: a0 + o, unit: u, count: (length - o) / u}
				r.unitNodes = prefix[r.start+u] - prefix[r.start]
				from, to := a.extend(r)
				r.nodes = prefix[to] - prefix[from]
				f, first := fanout(r.start), len(seg[r.start].nodes)
				if o > length%u {
					// beyond the stretch's slack only when it covers more
					if r.nodes > best.nodes {
						best, bestFan, bestFirst = r, f, first
					}
					continue
				}
				if r.nodes > best.nodes || r.nodes == best.nodes && (f > bestFan || f == bestFan && first > bestFirst) {
					best, bestFan, bestFirst = r, f, first
				}
			}
			cands = append(cands, best)
		}
	}
	sort.SliceStable(cands, func(i, k int) bool {
		x, y := cands[i], cands[k]
		if x.nodes != y.nodes {
			return x.nodes > y.nodes
		}
		if x.unit != y.unit {
			return x.unit > y.unit
		}
		return x.start < y.start
	})
	if len(cands) == 0 || cands[0].unitNodes < 2 || cands[0].nodes*10 < total {
		return
	}
	a.primary = cands[0]
	a.runs = []run{cands[0]}
	for _, c := range cands[1:] {
		if c.unitNodes*2 < cands[0].unitNodes {
			continue
		}
		ok := true
		for _, r := range a.runs {
			if c.start < r.end() && r.start < c.end() {
				ok = false
				break
			}
		}
		if ok {
			a.runs = append(a.runs, c)
		}
	}
	sort.Slice(a.runs, func(i, k int) bool { return a.runs[i].start < a.runs[k].start })
}

// primitive reports whether the signatures of s are not a repetition of a shorter sequence.
func primitive(s []segment) bool {
	n := len(s)
	for p := 1; p < n; p++ {
		if n%p != 0 {
			continue
		}
		rep := true
		for i := p; i < n; i++ {
			if s[i].sig != s[i-p].sig {
				rep = false
				break
			}
		}
		if rep {
			return false
		}
	}
	return true
}

// span is a block as a range of segments.
type span struct {
	from, to int // segments from .. to-1
	repeated bool
}

// spans turns the runs into blocks: their units, the segments between runs (one block when
// they hold at most twice the nodes of the larger neighbouring unit, else one per unit
// length when that divides, else one per segment), and groups beside the first and last
// run that hold every op of its unit.
func (a *analysis) spans() []span {
	if len(a.runs) == 0 {
		return nil
	}
	var out []span
	for i, r := range a.runs {
		if i > 0 {
			prev := a.runs[i-1]
			gap := r.start - prev.end()
			nodes := 0
			for s := prev.end(); s < r.start; s++ {
				nodes += len(a.seg[s].nodes)
			}
			step := 1
			switch {
			case gap > 0 && nodes <= 2*max(prev.unitNodes, r.unitNodes):
				step = gap
			case prev.unit == r.unit && gap%r.unit == 0:
				step = r.unit
			}
			for s := prev.end(); s < r.start; s += step {
				out = append(out, span{s, s + step, false})
			}
		}
		for k := 0; k < r.count; k++ {
			s := r.start + k*r.unit
			out = append(out, span{s, s + r.unit, true})
		}
	}
	first, last := a.runs[0], a.runs[len(a.runs)-1]
	from, _ := a.extend(first)
	_, to := a.extend(last)
	var before []span
	for s := from; s < first.start; s += first.unit {
		before = append(before, span{s, s + first.unit, false})
	}
	for s := last.end(); s < to; s += last.unit {
		out = append(out, span{s, s + last.unit, false})
	}
	out = append(before, out...)
	// Layers inside a unit: a hybrid stack's unit is a group of different layers.
	var split []span
	for _, sp := range out {
		r := a.runOf(sp)
		if r == nil {
			split = append(split, sp)
			continue
		}
		at := sp.from
		for _, k := range a.layerStarts(*r) {
			split = append(split, span{at, sp.from + k, sp.repeated})
			at = sp.from + k
		}
		split = append(split, span{at, sp.to, sp.repeated})
	}
	return split
}

// runOf returns the run whose units (or the groups extend absorbed beside it, which have
// its unit's length) span sp is, or nil for a span between runs.
func (a *analysis) runOf(sp span) *run {
	for i := range a.runs {
		r := &a.runs[i]
		if sp.to-sp.from != r.unit {
			continue
		}
		from, to := a.extend(*r)
		if sp.from >= from && sp.to <= to && (sp.from-r.start)%r.unit == 0 {
			return r
		}
	}
	return nil
}

// layerStarts returns the offsets inside a unit of run r where a layer begins, besides 0:
// where a segment like the unit's first begins, or one like its last has just ended. A
// decoder layer's unit (attention, MLP) has none; a hybrid stack's unit of three
// linear-attention layers and one full-attention layer [L M L M L M A M] has 2, 4 and 6,
// whichever layer the unit starts with, when its MLP segments are alike.
func (a *analysis) layerStarts(r run) []int {
	u := r.unit
	first, last := a.seg[r.start].sig, a.seg[r.start+u-1].sig
	var out []int
	for k := 1; k < u; k++ {
		if a.seg[r.start+k].sig == first || a.seg[r.start+k-1].sig == last {
			out = append(out, k)
		}
	}
	// Only a unit whose pieces repeat inside it is a group of layers: a post-norm encoder
	// layer's attention and MLP halves both end with a like normalization, but each comes
	// once.
	seen := map[string]bool{}
	repeats := false
	at := 0
	for _, k := range append(append([]int(nil), out...), u) {
		var key []byte
		for s := r.start + at; s < r.start+k; s++ {
			key = binary.LittleEndian.AppendUint64(key, a.seg[s].sig)
		}
		repeats = repeats || seen[string(key)]
		seen[string(key)] = true
		at = k
	}
	if !repeats {
		return nil
	}
	return out
}

// extend returns the segments from .. to-1 that run r covers once the groups of r.unit
// segments beside it that absorbs accepts are added, one after the other, on both sides.
func (a *analysis) extend(r run) (from, to int) {
	from, to = r.start, r.end()
	for from-r.unit >= 0 && a.absorbs(r, from-r.unit, from) {
		from -= r.unit
	}
	for to+r.unit <= len(a.seg) && a.absorbs(r, to, to+r.unit) {
		to += r.unit
	}
	return from, to
}

// absorbs reports whether segments from..to-1 make a block beside run r: they have boundary
// tensors on both sides, every op of r's unit and at most twice its nodes.
func (a *analysis) absorbs(r run, from, to int) bool {
	if a.seg[from].in < 0 || a.seg[to-1].out < 0 {
		return false
	}
	have := map[string]int{}
	nodes := 0
	for s := from; s < to; s++ {
		for op, c := range a.seg[s].ops {
			have[op] += c
		}
		nodes += len(a.seg[s].nodes)
	}
	if nodes > 2*r.unitNodes {
		return false
	}
	for s := r.start; s < r.start+r.unit; s++ {
		for op, c := range a.seg[s].ops {
			if have[op] < c {
				return false
			}
			have[op] -= c
		}
	}
	return true
}

// result assembles the Result.
func (a *analysis) result() *Result {
	g := a.g
	a.findRuns()
	res := &Result{Stream: append([]int(nil), a.stream...)}
	spans := a.spans()
	kinds := map[string]int{}
	blockOfSeg := make([]int, len(a.seg))
	for i := range blockOfSeg {
		blockOfSeg[i] = -1
	}
	for b, sp := range spans {
		bl := Block{In: a.seg[sp.from].in, Out: a.seg[sp.to-1].out, InBytes: -1, Bytes: -1, Repeated: sp.repeated}
		var key []byte
		for s := sp.from; s < sp.to; s++ {
			blockOfSeg[s] = b
			bl.Nodes = append(bl.Nodes, a.seg[s].nodes...)
			bl.Nodes = append(bl.Nodes, a.seg[s].statics...)
			bl.FLOPs += a.seg[s].flops
			var buf [8]byte
			binary.LittleEndian.PutUint64(buf[:], a.seg[s].sig)
			key = append(key, buf[:]...)
		}
		sort.Ints(bl.Nodes)
		k, ok := kinds[string(key)]
		if !ok {
			k = len(kinds)
			kinds[string(key)] = k
		}
		bl.Kind = k
		if bl.In >= 0 {
			bl.InBytes = g.Tensors[bl.In].Bytes
		}
		if bl.Out >= 0 {
			bl.Bytes = g.Tensors[bl.Out].Bytes
		}
		res.Blocks = append(res.Blocks, bl)
	}
	if len(spans) > 0 {
		res.Unit = a.primary.unit
	}
	blockOf, after := membership(g, res.Blocks)
	for v := range g.Nodes {
		switch {
		case blockOf[v] >= 0:
		case after[v]:
			res.Epilogue = append(res.Epilogue, v)
		default:
			res.Prologue = append(res.Prologue, v)
		}
	}
	// Shared tensors: activations crossing a block boundary whose stream they are not.
	rank := func(v int) int {
		switch {
		case blockOf[v] >= 0:
			return blockOf[v] + 1
		case after[v]:
			return len(res.Blocks) + 1
		}
		return 0
	}
	stream := func(k int) int { // the tensor of boundary k, after rank k
		if k == 0 {
			return res.Blocks[0].In
		}
		return res.Blocks[k-1].Out
	}
	for t := range g.Tensors {
		if len(res.Blocks) == 0 || !a.carried(t) {
			continue
		}
		p := g.Tensors[t].Producer
		from, to := rank(p), rank(p)
		var readers []int
		for _, c := range g.Tensors[t].Consumers {
			to = max(to, rank(c))
			if b := blockOf[c]; b >= 0 {
				readers = append(readers, b)
			}
		}
		if to-from < 1 || to-from == 1 && (stream(from) == t || pairHead(g, stream(from), t)) {
			continue
		}
		cone, _ := a.cone(p, coneCarried, nil)
		st := SharedTensor{Tensor: t, Readers: uniqueSorted(readers), Cone: cone, Bytes: g.Tensors[t].Bytes, InputsOnly: true}
		for _, v := range cone {
			st.ConeFLOPs += max(g.Nodes[v].FLOPs, 0)
			if blockOf[v] >= 0 {
				st.InputsOnly = false
			}
		}
		res.Shared = append(res.Shared, st)
	}
	sort.SliceStable(res.Shared, func(i, k int) bool {
		x, y := g.Tensors[res.Shared[i].Tensor].Producer, g.Tensors[res.Shared[k].Tensor].Producer
		if a.level[x] != a.level[y] {
			return a.level[x] < a.level[y]
		}
		if a.depth[x] != a.depth[y] {
			return a.depth[x] < a.depth[y]
		}
		return g.Tensors[res.Shared[i].Tensor].Name < g.Tensors[res.Shared[k].Tensor].Name
	})
	return res
}

func uniqueSorted(s []int) []int {
	sort.Ints(s)
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}
