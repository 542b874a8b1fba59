package fusion

import "sort"

// contractDAG is a DAG under edge contraction. It keeps a topological labelling ord (distinct
// integers, u→v implies ord[u] < ord[v]) up to date, so that the cycle check of a
// contraction only searches the vertices whose labels lie between the two endpoints.
//
// Contracting u→v creates a cycle exactly when another path u⇝v exists. Every vertex on such
// a path has a label between ord[u] and ord[v], so a forward search from u pruned at ord[v]
// decides it. When the contraction is allowed, the affected window is relabelled as in
// Pearce and Kelly's dynamic topological sort (JEA 2006): the vertices of the window that
// reach v (set B) take the lowest freed labels, then the merged vertex, then the vertices u
// reaches (set A). A and B are disjoint (a common vertex would lie on a second path), no
// edge goes from A to B (it would close a second path), so the labelling stays topological.
// The cost of a merge is proportional to the part of the window that u reaches or that
// reaches v, not to the graph: linear in the worst case, a handful of vertices for the
// local merges fusion makes.
type contractDAG struct {
	out, in []map[int]struct{}
	ord     []int
	alive   []bool
	// searched counts vertices visited by cycle checks, refused the contractions refused
	// because they would close a cycle (for tests and benchmarks).
	searched, refused int
	vertices0         int // vertices before the first contraction
}

// addVertex adds a vertex with topological label ord and returns its id.
func (d *contractDAG) addVertex(ord int) int {
	d.out = append(d.out, map[int]struct{}{})
	d.in = append(d.in, map[int]struct{}{})
	d.ord = append(d.ord, ord)
	d.alive = append(d.alive, true)
	return len(d.ord) - 1
}

// addEdge adds u→v; the caller guarantees ord[u] < ord[v].
func (d *contractDAG) addEdge(u, v int) {
	if u == v {
		return
	}
	d.out[u][v] = struct{}{}
	d.in[v][u] = struct{}{}
}

func (d *contractDAG) hasEdge(u, v int) bool {
	_, ok := d.out[u][v]
	return ok
}

func keys(m map[int]struct{}) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// succs and preds return neighbour ids, ascending.
func (d *contractDAG) succs(v int) []int { return keys(d.out[v]) }
func (d *contractDAG) preds(v int) []int { return keys(d.in[v]) }

// canContract reports whether contracting the edge u→v keeps the graph acyclic, and if so
// returns the vertices of the window that u reaches (A) and that reach v (B).
func (d *contractDAG) canContract(u, v int) (a, b []int, ok bool) {
	ou, ov := d.ord[u], d.ord[v]
	seen := map[int]bool{u: true}
	stack := []int{u}
	for len(stack) > 0 {
		w := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		d.searched++
		for x := range d.out[w] {
			if x == v {
				if w != u {
					d.refused++
					return nil, nil, false
				}
				continue
			}
			if d.ord[x] < ov && !seen[x] {
				seen[x] = true
				a = append(a, x)
				stack = append(stack, x)
			}
		}
	}
	seen = map[int]bool{v: true}
	stack = []int{v}
	for len(stack) > 0 {
		w := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		d.searched++
		for x := range d.in[w] {
			if x != u && d.ord[x] > ou && !seen[x] {
				seen[x] = true
				b = append(b, x)
				stack = append(stack, x)
			}
		}
	}
	return a, b, true
}

// contract merges the edge u→v into a new vertex and returns its id, or -1 (and changes
// nothing) when another path from u to v exists. u and v die; their other edges move to the
// new vertex.
func (d *contractDAG) contract(u, v int) int {
	if !d.hasEdge(u, v) {
		panic("fusion: contract of a non-edge")
	}
	a, b, ok := d.canContract(u, v)
	if !ok {
		return -1
	}
	byOrd := func(s []int) {
		sort.Slice(s, func(i, j int) bool { return d.ord[s[i]] < d.ord[s[j]] })
	}
	byOrd(a)
	byOrd(b)
	slots := make([]int, 0, len(a)+len(b)+2)
	for _, x := range a {
		slots = append(slots, d.ord[x])
	}
	for _, x := range b {
		slots = append(slots, d.ord[x])
	}
	slots = append(slots, d.ord[u], d.ord[v])
	sort.Ints(slots)
	m := d.addVertex(0)
	i := 0
	for _, x := range b {
		d.ord[x] = slots[i]
		i++
	}
	d.ord[m] = slots[i]
	i++
	for _, x := range a {
		d.ord[x] = slots[i]
		i++
	}
	for _, old := range []int{u, v} {
		for x := range d.in[old] {
			delete(d.out[x], old)
			if x != u && x != v {
				d.addEdge(x, m)
			}
		}
		for x := range d.out[old] {
			delete(d.in[x], old)
			if x != u && x != v {
				d.addEdge(m, x)
			}
		}
		d.in[old], d.out[old] = nil, nil
		d.alive[old] = false
	}
	return m
}
