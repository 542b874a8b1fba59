// Package dag is onnxpart's one toolkit for directed acyclic graphs on dense node ids
// 0..n−1: adjacency in compressed sparse rows, Kahn's algorithm with priorities and a stable
// tie-break, reachability, and cycle extraction with the one CycleError every package reports.
//
// The operator graph (package graph), the fusion coarsening, the partition and schedule
// solvers and the emitter all order, check and walk their DAGs with it. Hot loops (Kahn in
// the order search decodes thousands of chromosomes) reuse a Kahn value's buffers and do not
// allocate.
package dag

import (
	"fmt"
	"sort"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
)

// CSR is adjacency in compressed sparse rows: the neighbours of v are Adj[Off[v]:Off[v+1]].
// len(Off) = n+1.
type CSR struct {
	Off []int32
	Adj []int32
}

// N is the number of nodes.
func (a CSR) N() int {
	if len(a.Off) == 0 {
		return 0
	}
	return len(a.Off) - 1
}

// Of returns the neighbours of v.
func (a CSR) Of(v int) []int32 { return a.Adj[a.Off[v]:a.Off[v+1]] }

// FromLists builds a CSR from per-node neighbour lists, keeping their order.
func FromLists(lists [][]int) CSR {
	a := CSR{Off: make([]int32, len(lists)+1)}
	for v, l := range lists {
		for _, w := range l {
			a.Adj = append(a.Adj, int32(w))
		}
		a.Off[v+1] = int32(len(a.Adj))
	}
	return a
}

// FromEdges builds the successor CSR of n nodes from edges u → v, each list sorted and
// without repetitions (self-loops kept: they are cycles).
func FromEdges(n int, edges [][2]int) CSR {
	lists := make([][]int, n)
	for _, e := range edges {
		lists[e[0]] = append(lists[e[0]], e[1])
	}
	for v := range lists {
		lists[v] = SortedUnique(lists[v])
	}
	return FromLists(lists)
}

// Reverse returns the transposed adjacency (predecessors from successors), each list sorted.
func (a CSR) Reverse() CSR {
	n := a.N()
	r := CSR{Off: make([]int32, n+1), Adj: make([]int32, len(a.Adj))}
	for _, w := range a.Adj {
		r.Off[w+1]++
	}
	for v := 0; v < n; v++ {
		r.Off[v+1] += r.Off[v]
	}
	next := append([]int32(nil), r.Off[:n]...)
	for v := 0; v < n; v++ { // v ascending: every list comes out sorted
		for _, w := range a.Of(v) {
			r.Adj[next[w]] = int32(v)
			next[w]++
		}
	}
	return r
}

// SortedUnique sorts s in place and drops repetitions.
func SortedUnique(s []int) []int {
	if len(s) < 2 {
		return s
	}
	sort.Ints(s)
	j := 1
	for i := 1; i < len(s); i++ {
		if s[i] != s[j-1] {
			s[j] = s[i]
			j++
		}
	}
	return s[:j]
}

// Order selects which ready node Kahn's algorithm places next.
type Order int

const (
	// ByID places the smallest node id first (priorities are ignored).
	ByID Order = iota
	// MinFirst places the smallest priority first, ties by the smaller id.
	MinFirst
	// MaxFirst places the largest priority first, ties by the smaller id.
	MaxFirst
)

// ready is a binary heap of ready nodes.
type ready struct {
	ids  []int32
	prio []float64
	ord  Order
	less func(a, b int32) bool // when set, the order (SortFunc); prio and ord are ignored
}

func (h *ready) before(a, b int32) bool {
	if h.less != nil {
		return h.less(a, b)
	}
	if h.ord != ByID {
		pa, pb := h.prio[a], h.prio[b]
		if pa != pb {
			if h.ord == MaxFirst {
				return pa > pb
			}
			return pa < pb
		}
	}
	return a < b
}

func (h *ready) push(v int32) {
	h.ids = append(h.ids, v)
	i := len(h.ids) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.before(h.ids[i], h.ids[p]) {
			break
		}
		h.ids[i], h.ids[p] = h.ids[p], h.ids[i]
		i = p
	}
}

func (h *ready) pop() int32 {
	top := h.ids[0]
	last := len(h.ids) - 1
	h.ids[0] = h.ids[last]
	h.ids = h.ids[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.before(h.ids[l], h.ids[m]) {
			m = l
		}
		if r < last && h.before(h.ids[r], h.ids[m]) {
			m = r
		}
		if m == i {
			break
		}
		h.ids[i], h.ids[m] = h.ids[m], h.ids[i]
		i = m
	}
	return top
}

// Kahn runs Kahn's algorithm with priorities. Its buffers are reused from call to call, so a
// Kahn value must not be shared between goroutines.
type Kahn struct {
	indeg []int32
	heap  ready
}

// Sort appends to out (truncated first) a topological order of the DAG with successors succ
// and predecessors pred: among the nodes whose predecessors are all placed, the one ord
// prefers comes next (prio has one entry per node; nil with ByID). The order is complete
// (len n) exactly when the graph is acyclic; otherwise it holds the nodes not on or after a
// cycle.
func (k *Kahn) Sort(succ, pred CSR, prio []float64, ord Order, out []int32) []int32 {
	k.heap.prio, k.heap.ord, k.heap.less = prio, ord, nil
	return k.sort(succ, pred, out)
}

// SortFunc is Sort with the choice among ready nodes made by a comparison: the ready node v
// with less(v, w) for every other ready w comes next. less must be a strict weak order that
// breaks every tie (two distinct nodes never compare equal) for the order to be determined.
func (k *Kahn) SortFunc(succ, pred CSR, less func(a, b int32) bool, out []int32) []int32 {
	k.heap.prio, k.heap.ord, k.heap.less = nil, ByID, less
	return k.sort(succ, pred, out)
}

func (k *Kahn) sort(succ, pred CSR, out []int32) []int32 {
	n := succ.N()
	if cap(k.indeg) < n {
		k.indeg = make([]int32, n)
	}
	indeg := k.indeg[:n]
	k.heap.ids = k.heap.ids[:0]
	for v := 0; v < n; v++ {
		indeg[v] = pred.Off[v+1] - pred.Off[v]
		if indeg[v] == 0 {
			k.heap.push(int32(v))
		}
	}
	out = out[:0]
	for len(k.heap.ids) > 0 {
		v := k.heap.pop()
		out = append(out, v)
		for _, w := range succ.Of(int(v)) {
			indeg[w]--
			if indeg[w] == 0 {
				k.heap.push(w)
			}
		}
	}
	return out
}

// Topological returns the ByID topological order of the DAG with successors succ, or a
// cycle (nodes in dependency order) when there is none.
func Topological(succ CSR) (order []int, cycle []int) {
	var k Kahn
	o := k.Sort(succ, succ.Reverse(), nil, ByID, nil)
	if len(o) < succ.N() {
		return nil, FindCycle(succ)
	}
	order = make([]int, len(o))
	for i, v := range o {
		order[i] = int(v)
	}
	return order, nil
}

// IsTopological reports whether order is a permutation of the nodes in which every edge of
// succ runs forward.
func IsTopological(succ CSR, order []int) bool {
	n := succ.N()
	if len(order) != n {
		return false
	}
	pos := make([]int, n)
	for i := range pos {
		pos[i] = -1
	}
	for i, v := range order {
		if v < 0 || v >= n || pos[v] >= 0 {
			return false
		}
		pos[v] = i
	}
	for v := 0; v < n; v++ {
		for _, w := range succ.Of(v) {
			if pos[v] >= pos[w] {
				return false
			}
		}
	}
	return true
}

// FindCycle returns the nodes of one cycle of succ in dependency order (each node's
// successor is the next, the last's the first), starting from its smallest id, or nil when
// the graph is acyclic. The search is iterative and starts from the smallest node id, so the
// answer is reproducible.
func FindCycle(succ CSR) []int {
	n := succ.N()
	state := make([]uint8, n) // 0 new, 1 on the stack, 2 done
	parent := make([]int, n)
	type frame struct{ v, i int }
	for s := 0; s < n; s++ {
		if state[s] != 0 {
			continue
		}
		stack := []frame{{s, 0}}
		state[s] = 1
		parent[s] = -1
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			nb := succ.Of(f.v)
			if f.i < len(nb) {
				w := int(nb[f.i])
				f.i++
				switch state[w] {
				case 0:
					state[w] = 1
					parent[w] = f.v
					stack = append(stack, frame{w, 0})
				case 1:
					cyc := []int{}
					for x := f.v; x != w; x = parent[x] {
						cyc = append(cyc, x)
					}
					cyc = append(cyc, w)
					for i, j := 0, len(cyc)-1; i < j; i, j = i+1, j-1 {
						cyc[i], cyc[j] = cyc[j], cyc[i]
					}
					// Start from the cycle's smallest id, so that messages are stable.
					first := 0
					for i := range cyc {
						if cyc[i] < cyc[first] {
							first = i
						}
					}
					return append(cyc[first:], cyc[:first]...)
				}
				continue
			}
			state[f.v] = 2
			stack = stack[:len(stack)-1]
		}
	}
	return nil
}

// CycleError reports that a graph that must be a DAG has a cycle. Nodes names the nodes of
// one cycle in dependency order; What says which graph ("the graph", "the placement's edges").
type CycleError struct {
	What  string
	Nodes []string
}

// Error lists the cycle, "the graph has a cycle: a -> b -> a".
func (e *CycleError) Error() string {
	what := e.What
	if what == "" {
		what = "the graph"
	}
	if len(e.Nodes) == 0 {
		return what + " has a cycle"
	}
	return fmt.Sprintf("%s has a cycle: %s -> %s", what, strings.Join(e.Nodes, " -> "), e.Nodes[0])
}

// DiagKind is diag.KindInput: a graph that must be a DAG and is not is bad input (the model,
// a placement's edges). The packages that return a CycleError from their public API wrap it
// in a *diag.Error of that kind.
func (e *CycleError) DiagKind() diag.Kind { return diag.KindInput }

// NewCycleError names the nodes of cycle with name.
func NewCycleError(what string, cycle []int, name func(int) string) *CycleError {
	e := &CycleError{What: what, Nodes: make([]string, len(cycle))}
	for i, v := range cycle {
		e.Nodes[i] = name(v)
	}
	return e
}

// Reachability answers "does u reach v" in O(1) after an O(n·(n+m)/64) precomputation with
// one bit set per node.
type Reachability struct {
	words int
	bits  []uint64
}

// Reach computes the reachability of the DAG with successors succ (u reaches itself).
// order must be a topological order of succ.
func Reach(succ CSR, order []int) *Reachability {
	n := succ.N()
	w := (n + 63) / 64
	r := &Reachability{words: w, bits: make([]uint64, n*w)}
	for i := len(order) - 1; i >= 0; i-- {
		u := order[i]
		row := r.bits[u*w : (u+1)*w]
		row[u/64] |= 1 << (uint(u) % 64)
		for _, v := range succ.Of(u) {
			vr := r.bits[int(v)*w : (int(v)+1)*w]
			for k := range row {
				row[k] |= vr[k]
			}
		}
	}
	return r
}

// Reaches reports whether there is a path from u to v (u reaches itself).
func (r *Reachability) Reaches(u, v int) bool {
	return r.bits[u*r.words+v/64]&(1<<(uint(v)%64)) != 0
}

// Row returns the bit row of the nodes u reaches (do not modify).
func (r *Reachability) Row(u int) []uint64 { return r.bits[u*r.words : (u+1)*r.words] }

// Walk returns the nodes reachable from v through adj (v excluded), ascending.
func Walk(adj CSR, v int) []int {
	seen := make([]bool, adj.N())
	seen[v] = true
	stack := []int{v}
	var out []int
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, w := range adj.Of(x) {
			if !seen[w] {
				seen[w] = true
				out = append(out, int(w))
				stack = append(stack, int(w))
			}
		}
	}
	sort.Ints(out)
	return out
}
