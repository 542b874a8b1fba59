package fusion

import (
	"sort"

	"github.com/onnxpart/onnxpart/graph"
)

// tag is a vertex's state in GCOF (seed 004, Algorithm 1).
type tag uint8

const (
	tagLeaf  tag = iota // an original node, possibly with folded views
	tagFused            // the concatenation of its children is a complete rule
	tagBound            // the concatenation is only part of a rule; released at the end
)

// work is the state of one coarsening run: the working graph H (the non-absorbed nodes, with
// an edge u→w when w reads an output of u directly or through absorbed shape arithmetic) under
// contraction, and the vertices GCOF has formed so far. Vertex ids are dag ids.
type work struct {
	g    *graph.Graph
	e    *env
	d    contractDAG
	pos  []int // node → position in g.TopoOrder
	hRd  [][]int
	hOut []bool // node produces a graph output
	// anchor maps a node to the visible node it is folded into (itself when visible);
	// anchored lists, per visible node, the nodes anchored to it.
	anchor   []int
	anchored [][]int
	vertexOf []int // node → current vertex

	members [][]int // per vertex: H nodes, in merge order
	seq     [][]int // per vertex: the visible members, in pattern order
	tags    []tag
	kids    [][2]int
	rule    []string
	key     []int // smallest topological position of a member: traversal order
	visited []bool
}

// absorbable reports whether a node's outputs are known before run time: ingest marks
// constant and weight-only nodes Static, and folds small integer tensors computed from shapes
// (Tensor.Value). Nodes with subgraphs or outside the ONNX domain are never absorbed.
func absorbable(g *graph.Graph, n *graph.Node) bool {
	if n.Subgraphs > 0 || (n.Domain != "" && n.Domain != "ai.onnx") {
		return false
	}
	if n.Static {
		return true
	}
	outs := 0
	for _, t := range n.Outputs {
		if t < 0 {
			continue
		}
		if g.Tensors[t].Value == nil {
			return false
		}
		outs++
	}
	return outs > 0
}

// newWork classifies the nodes (absorbed or in H), builds H and its dag with one vertex per
// H node, labelled by topological position.
func newWork(g *graph.Graph, rs *RuleSet) *work {
	n := len(g.Nodes)
	e := &env{g: g, op: make([]string, n), absorbed: make([]bool, n),
		constT: make([]bool, len(g.Tensors)), invisible: make([]bool, n), transparent: rs.TransparentViews}
	w := &work{g: g, e: e, pos: make([]int, n), hRd: make([][]int, n), hOut: make([]bool, n),
		anchor: make([]int, n), anchored: make([][]int, n), vertexOf: make([]int, n)}
	topo := g.TopoOrder()
	for i, v := range topo {
		w.pos[v] = i
		e.op[v] = opKey(&g.Nodes[v])
	}
	// A node is absorbed when its value is known before run time and something uses it: a
	// node in H or another absorbed node. Dead-end constants stay in H as nodes of their own.
	if rs.Absorb {
		for i := n - 1; i >= 0; i-- {
			v := topo[i]
			nd := &g.Nodes[v]
			if !absorbable(g, nd) {
				continue
			}
			for _, s := range g.Succs(v) {
				if e.absorbed[s] || !absorbable(g, &g.Nodes[s]) {
					e.absorbed[v] = true
					break
				}
			}
		}
	}
	for t := range g.Tensors {
		tt := &g.Tensors[t]
		e.constT[t] = tt.Kind == graph.Initializer || (tt.Producer >= 0 && e.absorbed[tt.Producer])
	}
	// actSrc: the H nodes whose outputs an absorbed node reads (shape arithmetic on
	// activations), looked through chains of absorbed nodes.
	actSrc := make([][]int, n)
	for _, v := range topo {
		if !e.absorbed[v] {
			continue
		}
		var s []int
		for _, p := range g.Preds(v) {
			if e.absorbed[p] {
				s = append(s, actSrc[p]...)
			} else {
				s = append(s, p)
			}
		}
		actSrc[v] = sortedUnique(s)
	}
	for _, v := range topo {
		w.anchor[v] = v
		if e.absorbed[v] {
			continue
		}
		w.anchored[v] = []int{v}
		for _, t := range g.Nodes[v].Outputs {
			if t >= 0 && g.Tensors[t].IsOutput {
				w.hOut[v] = true
			}
		}
		id := w.d.addVertex(w.pos[v])
		w.vertexOf[v] = id
		w.members = append(w.members, []int{v})
		w.seq = append(w.seq, []int{v})
		w.tags = append(w.tags, tagLeaf)
		w.kids = append(w.kids, [2]int{-1, -1})
		w.rule = append(w.rule, "")
		w.key = append(w.key, w.pos[v])
	}
	for _, v := range topo {
		if e.absorbed[v] {
			continue
		}
		var ps []int
		for _, p := range g.Preds(v) {
			if e.absorbed[p] {
				ps = append(ps, actSrc[p]...)
			} else {
				ps = append(ps, p)
			}
		}
		for _, p := range sortedUnique(ps) {
			w.hRd[p] = append(w.hRd[p], v)
			w.d.addEdge(w.vertexOf[p], w.vertexOf[v])
		}
	}
	for v := range w.hRd {
		w.hRd[v] = sortedUnique(w.hRd[v])
	}
	w.d.vertices0 = len(w.members)
	return w
}

// join records the vertex c that the dag made by contracting p→s.
func (w *work) join(p, s, c int, t tag, rule string, seq []int) {
	if c != len(w.members) {
		panic("fusion: vertex ids out of step with the dag")
	}
	mem := append(append([]int(nil), w.members[p]...), w.members[s]...)
	w.members = append(w.members, mem)
	w.seq = append(w.seq, seq)
	w.tags = append(w.tags, t)
	w.kids = append(w.kids, [2]int{p, s})
	w.rule = append(w.rule, rule)
	w.key = append(w.key, min(w.key[p], w.key[s]))
	if w.visited != nil {
		w.visited = append(w.visited, w.visited[p] || w.visited[s])
	}
	for _, v := range mem {
		w.vertexOf[v] = c
	}
}

func (w *work) exportsOutput(v int) bool {
	for _, m := range w.members[v] {
		if w.hOut[m] {
			return true
		}
	}
	return false
}

// foldViews merges each view (an op that aliases its input) into its producer's vertex when
// it is the producer's only reader, else into its only reader's vertex. A folded view is no
// step of any pattern; with transparent views, patterns see through it to the tensor it
// aliases, else a folded view breaks the connection like any other op.
func (w *work) foldViews(views []string) {
	if len(views) == 0 {
		return
	}
	isView := map[string]bool{}
	for _, v := range views {
		isView[v] = true
	}
	g, e := w.g, w.e
	topo := g.TopoOrder()
	hide := func(v, to int) {
		e.invisible[v] = true
		w.anchor[v] = to
		w.anchored[to] = append(w.anchored[to], v)
		w.anchored[v] = nil
	}
	for _, v := range topo {
		if e.absorbed[v] || !isView[e.op[v]] {
			continue
		}
		nd := &g.Nodes[v]
		if len(nd.Inputs) == 0 || nd.Inputs[0] < 0 || e.constT[nd.Inputs[0]] {
			continue
		}
		p := g.Tensors[nd.Inputs[0]].Producer
		if p < 0 {
			continue
		}
		P, V := w.vertexOf[p], w.vertexOf[v]
		if P == V || len(w.d.out[P]) != 1 || !w.d.hasEdge(P, V) || w.exportsOutput(P) {
			continue
		}
		if c := w.d.contract(P, V); c >= 0 {
			w.join(P, V, c, tagLeaf, "", w.seq[P])
			hide(v, w.anchor[p])
		}
	}
	for i := len(topo) - 1; i >= 0; i-- {
		v := topo[i]
		if e.absorbed[v] || e.invisible[v] || !isView[e.op[v]] {
			continue
		}
		V := w.vertexOf[v]
		if len(w.d.out[V]) != 1 || w.exportsOutput(V) {
			continue
		}
		D := w.d.succs(V)[0]
		if c := w.d.contract(V, D); c >= 0 {
			w.join(V, D, c, tagLeaf, "", w.seq[D])
			to := w.seq[D][0]
			for _, m := range w.anchored[v] {
				if m != v {
					e.invisible[m] = true
					w.anchor[m] = to
					w.anchored[to] = append(w.anchored[to], m)
				}
			}
			hide(v, to)
		}
	}
}

// byKey sorts vertex ids by traversal key (ties cannot occur: keys are distinct positions).
func (w *work) byKey(s []int) []int {
	sort.Slice(s, func(i, j int) bool { return w.key[s[i]] < w.key[s[j]] })
	return s
}

// gcof runs Algorithm 1 of seed 004 over the vertices: a depth-first traversal from a
// virtual root (edges to every source), which at each vertex tries its out-edges in order and
// merges pred∘succ when the concatenated type sequence is a complete rule (fuse) or part of
// one (bind), on a valid connection. Once a merge happens, the new vertex's edges (out-edges,
// then in-edges from visited vertices) are tried again, so chains keep growing. Bound
// vertices that never complete a rule are released by unbind.
func (w *work) gcof(rules []Rule) {
	if len(rules) == 0 {
		return
	}
	w.visited = make([]bool, len(w.members))
	var roots []int
	for v := range w.members {
		if w.d.alive[v] && len(w.d.in[v]) == 0 {
			roots = append(roots, v)
		}
	}
	w.byKey(roots)
	stack := make([]int, 0, len(roots))
	for i := len(roots) - 1; i >= 0; i-- {
		stack = append(stack, roots[i])
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		v = w.vertexOf[w.members[v][0]]
		if w.visited[v] {
			continue
		}
		w.visited[v] = true
		v = w.grow(v, rules)
		succ := w.byKey(w.d.succs(v))
		for i := len(succ) - 1; i >= 0; i-- {
			if !w.visited[succ[i]] {
				stack = append(stack, succ[i])
			}
		}
	}
}

// grow merges v with its neighbours while some merge applies and returns the final vertex.
func (w *work) grow(v int, rules []Rule) int {
	changed := false
	for {
		merged := -1
		for _, s := range w.byKey(w.d.succs(v)) {
			if m := w.tryMerge(v, s, rules); m >= 0 {
				merged = m
				break
			}
		}
		if merged < 0 && changed {
			for _, p := range w.byKey(w.d.preds(v)) {
				if !w.visited[p] {
					continue
				}
				if m := w.tryMerge(p, v, rules); m >= 0 {
					merged = m
					break
				}
			}
		}
		if merged < 0 {
			return v
		}
		v, changed = merged, true
	}
}

// tryMerge merges p→s when p.seq∘s.seq is a rule (is_rule) or part of one (is_sub_rule) on a
// valid connection and the contraction keeps the graph acyclic; it returns the new vertex or -1.
func (w *work) tryMerge(p, s int, rules []Rule) int {
	seq := append(append([]int(nil), w.seq[p]...), w.seq[s]...)
	union := map[int]bool{}
	for _, v := range w.members[p] {
		union[v] = true
	}
	for _, v := range w.members[s] {
		union[v] = true
	}
	for _, complete := range []bool{true, false} {
		for ri := range rules {
			r := &rules[ri]
			if !w.e.mayMatch(r, seq) {
				continue
			}
			ok := w.e.matchRule(r, seq, func(m *match) bool {
				return m.complete == complete && w.validConn(m, seq, union)
			})
			if !ok {
				continue
			}
			c := w.d.contract(p, s)
			if c < 0 {
				return -1 // merging would close a cycle through a side path
			}
			t := tagFused
			if !complete {
				t = tagBound
			}
			w.join(p, s, c, t, r.Name, seq)
			return c
		}
	}
	return -1
}

// validConn is the valid-connection rule of seed 004 (fuse direct and multi-input connections,
// never across a multi-output fan-out that other consumers read), lifted from single
// predecessors to groups so that patterns with internal forks (LayerNorm, GELU, SiLU) can
// form:
//   - complete match: only the last node (the fused kernel's output) may be read outside
//     the union or be a graph output;
//   - partial match: the last node may have outside readers (the rule continues from it);
//     any other node may only be read outside by nodes whose op a later step of the rule
//     that reads this node's step accepts (a pending reader, e.g. the Div after Sub in
//     LayerNorm), and the window must be extendable: some outside reader has the op of the
//     next step (a window that ends at the rule's last step can only grow at the front,
//     which matchRule checked one step deep).
//
// For chain rules this is exactly the paper's rule: the predecessor's only reader is the
// successor.
func (w *work) validConn(m *match, seq []int, union map[int]bool) bool {
	r := m.rule
	L := len(r.Steps)
	last := len(seq) - 1
	idx := make(map[int]int, len(seq))
	for i, v := range seq {
		idx[v] = i
	}
	for u := range union {
		ext := false
		for _, rd := range w.hRd[u] {
			if !union[rd] {
				ext = true
				break
			}
		}
		if !ext && !w.hOut[u] {
			continue
		}
		i := idx[w.anchor[u]]
		if i == last {
			continue
		}
		if m.complete || w.hOut[u] {
			return false
		}
		k := m.pos[i]
		if m.last[k] != i {
			return false // an earlier occurrence of a repeated step: nothing later reads it
		}
		for _, rd := range w.hRd[u] {
			if union[rd] {
				continue
			}
			op := w.e.op[w.anchor[rd]]
			pending := false
			for j := m.end + 1; j < L && !pending; j++ {
				if r.Steps[j].ops[op] && has(r.Steps[j].From, k) {
					pending = true
				}
			}
			if !pending {
				return false
			}
		}
	}
	if m.complete {
		return true
	}
	// Extendable: the next step (or another repetition of the last) has a candidate. A
	// window that ends at the rule's last step can only grow at the front, which the match
	// already checked one step deep.
	b := m.end
	if b == L-1 {
		return true
	}
	readersOf := func(x int, ops map[string]bool) bool {
		for _, a := range w.anchored[x] {
			for _, rd := range w.hRd[a] {
				if !union[rd] && ops[w.e.op[w.anchor[rd]]] {
					return true
				}
			}
		}
		return false
	}
	if r.Steps[b].Repeat && readersOf(seq[last], r.Steps[b].ops) {
		return true
	}
	if b+1 < L {
		for _, f := range r.Steps[b+1].From {
			if f >= m.start && readersOf(seq[m.last[f]], r.Steps[b+1].ops) {
				return true
			}
		}
	}
	return false
}

func has(s []int, x int) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// unbind releases the bound vertices: each splits into its children, recursively, until a
// fused vertex or a leaf. It returns the final groups (members ascending) with their rules.
func (w *work) unbind() (groups [][]int, rules []string) {
	var collect func(v int)
	collect = func(v int) {
		if w.tags[v] == tagBound {
			collect(w.kids[v][0])
			collect(w.kids[v][1])
			return
		}
		mem := append([]int(nil), w.members[v]...)
		sort.Ints(mem)
		groups = append(groups, mem)
		r := ""
		if w.tags[v] == tagFused {
			r = w.rule[v]
		} else if len(mem) > 1 {
			r = "views"
		}
		rules = append(rules, r)
	}
	for v := range w.members {
		if w.d.alive[v] {
			collect(v)
		}
	}
	return groups, rules
}
