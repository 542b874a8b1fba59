package partition

import (
	"math"
	"sort"

	"github.com/onnxpart/onnxpart/graph/dag"
)

// core is the compiled form of a Problem that every algorithm works on: colocation groups
// (and the nodes forced between their members) are contracted into single nodes, tensors with
// the same producer and consumer set are merged, and adjacency is stored in flat slices.
type core struct {
	n       int
	devs    []Device
	work    [][]float64 // [device][node]
	minWork []float64   // min over devices with Count > 0
	params  []float64
	coef    []float64 // 1/B per device (0: free communication)
	memM    []float64 // fast memory per device (0: unlimited)
	memCap  []float64 // hard cap per device (+Inf: none)
	counts  []int

	// Tensors: producer, consumers (CSR), size, |T_t| = 1 + len(consumers).
	tProd  []int32
	tOrd   []bool // false: a cost-only tensor (Tensor.Unordered), no precedence
	tSize  []float64
	tCard  []int32
	tConsS []int32 // consumers of tensor t: tCons[tConsS[t]:tConsS[t+1]]
	tCons  []int32

	// Incidence: tensors whose set T_t contains node v: inc[incS[v]:incS[v+1]].
	incS []int32
	inc  []int32

	succS, succ []int32 // distinct successor nodes
	predS, pred []int32 // distinct predecessor nodes

	// group maps an original node to its core node; members lists the original nodes of a
	// core node, ascending.
	group   []int
	members [][]int
	hetero  bool

	// unordered is set when some tensor is cost-only (Tensor.Unordered): succ/pred then hold
	// the order of the ordered tensors only, and the bounds whose proofs read a cut tensor's
	// direction (comm-node, comm-k, min-block, the MIPs) are not run (see boundsSound).
	unordered bool
}

// directionalBoundsSound reports whether the bounds whose proofs follow tensors from
// producer to consumer apply: they assume every tensor orders its producer's stage before its
// consumers' (an ancestor of v is never a descendant of v), which cost-only tensors break.
func (c *core) directionalBoundsSound() bool { return !c.unordered }

func (c *core) succOf(v int) []int32 { return c.succ[c.succS[v]:c.succS[v+1]] }
func (c *core) predOf(v int) []int32 { return c.pred[c.predS[v]:c.predS[v+1]] }
func (c *core) incOf(v int) []int32  { return c.inc[c.incS[v]:c.incS[v+1]] }
func (c *core) consOf(t int) []int32 { return c.tCons[c.tConsS[t]:c.tConsS[t+1]] }

// stages is the total number of pipeline stages.
func (c *core) stages() int {
	s := 0
	for _, k := range c.counts {
		s += k
	}
	return s
}

// unionFind is a plain disjoint-set forest.
type unionFind []int

func (u unionFind) find(x int) int {
	for u[x] != x {
		u[x] = u[u[x]]
		x = u[x]
	}
	return x
}

func (u unionFind) union(a, b int) {
	a, b = u.find(a), u.find(b)
	if a == b {
		return
	}
	if a > b {
		a, b = b, a
	}
	u[b] = a
}

// compile builds the core of a validated problem.
func compile(p *Problem) *core {
	n := len(p.Work)
	uf := make(unionFind, n)
	for i := range uf {
		uf[i] = i
	}
	for _, g := range p.Colocate {
		for _, v := range g[1:] {
			uf.union(g[0], v)
		}
	}
	// Contract, then merge strongly connected components of the contracted graph: if a and c
	// share a stage and a → b → c, then stage(a) ≤ stage(b) ≤ stage(c) = stage(a), so b is
	// in that stage too. The condensation is acyclic, so one round suffices.
	for {
		root := make([]int, n)
		for v := range root {
			root[v] = uf.find(v)
		}
		adj := map[int][]int{}
		for _, t := range p.Tensors {
			if t.Unordered {
				continue
			}
			a := root[t.Producer]
			for _, cn := range t.Consumers {
				if b := root[cn]; b != a {
					adj[a] = append(adj[a], b)
				}
			}
		}
		comps := tarjan(n, root, adj)
		merged := false
		for _, comp := range comps {
			if len(comp) > 1 {
				for _, v := range comp[1:] {
					uf.union(comp[0], v)
				}
				merged = true
			}
		}
		if !merged {
			break
		}
	}
	// Dense core ids in order of each group's smallest original node.
	c := &core{group: make([]int, n)}
	id := map[int]int{}
	for v := 0; v < n; v++ {
		r := uf.find(v)
		g, ok := id[r]
		if !ok {
			g = len(c.members)
			id[r] = g
			c.members = append(c.members, nil)
		}
		c.group[v] = g
		c.members[g] = append(c.members[g], v)
	}
	c.n = len(c.members)
	c.devs = p.devices()
	c.hetero = len(c.devs) > 1
	nd := len(c.devs)
	c.work = make([][]float64, nd)
	c.coef = make([]float64, nd)
	c.memM = make([]float64, nd)
	c.memCap = make([]float64, nd)
	c.counts = make([]int, nd)
	for d, dev := range c.devs {
		w := make([]float64, c.n)
		for v := 0; v < n; v++ {
			w[c.group[v]] += dev.Work[v]
		}
		c.work[d] = w
		if !math.IsInf(dev.Bandwidth, 1) {
			c.coef[d] = 1 / dev.Bandwidth
		}
		c.memM[d] = dev.FastMemory
		c.memCap[d] = math.Inf(1)
		if dev.MemoryCap > 0 {
			c.memCap[d] = dev.MemoryCap
		}
		c.counts[d] = dev.Count
	}
	c.minWork = make([]float64, c.n)
	for v := range c.minWork {
		m := math.Inf(1)
		for d := range c.devs {
			if c.counts[d] > 0 && c.work[d][v] < m {
				m = c.work[d][v]
			}
		}
		if math.IsInf(m, 1) {
			m = 0
		}
		c.minWork[v] = m
	}
	c.params = make([]float64, c.n)
	if p.Params != nil {
		for v := 0; v < n; v++ {
			c.params[c.group[v]] += p.Params[v]
		}
	}
	// Tensors: map to groups, drop never-cut ones, merge equal (producer, consumer set).
	type tkey struct {
		prod      int
		cons      string
		unordered bool
	}
	index := map[tkey]int{}
	var consLists [][]int32
	for _, t := range p.Tensors {
		pg := c.group[t.Producer]
		var cs []int
		for _, cn := range t.Consumers {
			if g := c.group[cn]; g != pg {
				cs = append(cs, g)
			}
		}
		cs = dag.SortedUnique(cs)
		if len(cs) == 0 {
			continue
		}
		b := make([]byte, 0, 4*len(cs))
		for _, g := range cs {
			b = append(b, byte(g), byte(g>>8), byte(g>>16), byte(g>>24))
		}
		k := tkey{pg, string(b), t.Unordered}
		if ti, ok := index[k]; ok {
			c.tSize[ti] += t.Size
			continue
		}
		index[k] = len(c.tProd)
		c.tProd = append(c.tProd, int32(pg))
		c.tOrd = append(c.tOrd, !t.Unordered)
		if t.Unordered {
			c.unordered = true
		}
		c.tSize = append(c.tSize, t.Size)
		c.tCard = append(c.tCard, int32(len(cs)+1))
		l := make([]int32, len(cs))
		for i, g := range cs {
			l[i] = int32(g)
		}
		consLists = append(consLists, l)
	}
	nt := len(c.tProd)
	c.tConsS = make([]int32, nt+1)
	for t, l := range consLists {
		c.tConsS[t+1] = c.tConsS[t] + int32(len(l))
		c.tCons = append(c.tCons, l...)
	}
	// Incidence and adjacency.
	incl := make([][]int32, c.n)
	succl := make([][]int, c.n)
	predl := make([][]int, c.n)
	for t := 0; t < nt; t++ {
		pg := int(c.tProd[t])
		incl[pg] = append(incl[pg], int32(t))
		for _, g := range c.consOf(t) {
			incl[g] = append(incl[g], int32(t))
			if c.tOrd[t] {
				succl[pg] = append(succl[pg], int(g))
				predl[g] = append(predl[g], pg)
			}
		}
	}
	c.incS = make([]int32, c.n+1)
	c.succS = make([]int32, c.n+1)
	c.predS = make([]int32, c.n+1)
	for v := 0; v < c.n; v++ {
		c.inc = append(c.inc, incl[v]...)
		c.incS[v+1] = int32(len(c.inc))
		for _, w := range dag.SortedUnique(succl[v]) {
			c.succ = append(c.succ, int32(w))
		}
		c.succS[v+1] = int32(len(c.succ))
		for _, w := range dag.SortedUnique(predl[v]) {
			c.pred = append(c.pred, int32(w))
		}
		c.predS[v+1] = int32(len(c.pred))
	}
	return c
}

// tarjan returns the strongly connected components of the graph on the representatives
// root[v] with adjacency adj (iterative Tarjan). Each component is sorted.
func tarjan(n int, root []int, adj map[int][]int) [][]int {
	index := make([]int, n)
	low := make([]int, n)
	on := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var comps [][]int
	next := 0
	type frame struct{ v, i int }
	for s := 0; s < n; s++ {
		if root[s] != s || index[s] >= 0 {
			continue
		}
		call := []frame{{s, 0}}
		index[s], low[s] = next, next
		next++
		stack = append(stack, s)
		on[s] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.i < len(adj[f.v]) {
				w := adj[f.v][f.i]
				f.i++
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					on[w] = true
					call = append(call, frame{w, 0})
				} else if on[w] && index[w] < low[f.v] {
					low[f.v] = index[w]
				}
				continue
			}
			v := f.v
			call = call[:len(call)-1]
			if len(call) > 0 && low[v] < low[call[len(call)-1].v] {
				low[call[len(call)-1].v] = low[v]
			}
			if low[v] == index[v] {
				var comp []int
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					on[w] = false
					comp = append(comp, w)
					if w == v {
						break
					}
				}
				sort.Ints(comp)
				comps = append(comps, comp)
			}
		}
	}
	return comps
}

// blockCost is f(S) for the core node set S on device d, from scratch (test oracle and
// refinement checks).
func (c *core) blockCost(S []int, d int) float64 {
	in := make(map[int]bool, len(S))
	work, params := 0.0, 0.0
	for _, v := range S {
		in[v] = true
		work += c.work[d][v]
		params += c.params[v]
	}
	comm := 0.0
	for t := range c.tProd {
		some, all := in[int(c.tProd[t])], in[int(c.tProd[t])]
		for _, g := range c.consOf(t) {
			if in[int(g)] {
				some = true
			} else {
				all = false
			}
		}
		if some && !all {
			comm += c.tSize[t]
		}
	}
	return work + comm*c.coef[d] + c.overflow(d, params)
}

// overflow is Eq. (2) with peak(S) = 0 (the activation reserve is taken out of M).
func (c *core) overflow(d int, params float64) float64 {
	if c.memM[d] > 0 && params > c.memM[d] {
		return (params - c.memM[d]) * c.coef[d]
	}
	return 0
}

// expand maps a core assignment to the original nodes.
func (c *core) expand(stage []int) []int {
	out := make([]int, len(c.group))
	for v, g := range c.group {
		out[v] = stage[g]
	}
	return out
}

// contract maps an assignment of the original nodes to the core nodes (the inverse of
// expand for a plan that keeps each colocation group together).
func (c *core) contract(assignment []int) []int {
	stage := make([]int, c.n)
	for v, g := range c.group {
		stage[g] = assignment[v]
	}
	return stage
}
