package graph

import (
	"container/heap"
	"fmt"
	"math/bits"
	"sort"
)

// KahnOrder returns a topological order in which, among the nodes whose predecessors are all
// placed, the one with the smallest priority comes next (ties: smaller node ID). This is the
// order-generation step of SliceGraph (seed 000 §4). len(priority) must equal len(g.Nodes).
func (g *Graph) KahnOrder(priority []float64) []int {
	if len(priority) != len(g.Nodes) {
		panic("graph: KahnOrder needs one priority per node")
	}
	order, _ := g.kahn(priority)
	return order
}

type readyHeap struct {
	ids  []int
	prio []float64
}

func (h *readyHeap) Len() int { return len(h.ids) }
func (h *readyHeap) Less(i, j int) bool {
	a, b := h.ids[i], h.ids[j]
	if h.prio != nil && h.prio[a] != h.prio[b] {
		return h.prio[a] < h.prio[b]
	}
	return a < b
}
func (h *readyHeap) Swap(i, j int) { h.ids[i], h.ids[j] = h.ids[j], h.ids[i] }
func (h *readyHeap) Push(x any)    { h.ids = append(h.ids, x.(int)) }
func (h *readyHeap) Pop() any {
	x := h.ids[len(h.ids)-1]
	h.ids = h.ids[:len(h.ids)-1]
	return x
}

// kahn runs Kahn's algorithm; ok is false when some nodes lie on cycles (order then holds
// the nodes that could be placed).
func (g *Graph) kahn(prio []float64) (order []int, ok bool) {
	n := len(g.Nodes)
	indeg := make([]int, n)
	h := &readyHeap{prio: prio}
	for v := 0; v < n; v++ {
		indeg[v] = len(g.preds[v])
		if indeg[v] == 0 {
			h.ids = append(h.ids, v)
		}
	}
	heap.Init(h)
	order = make([]int, 0, n)
	for h.Len() > 0 {
		v := heap.Pop(h).(int)
		order = append(order, v)
		for _, w := range g.succs[v] {
			indeg[w]--
			if indeg[w] == 0 {
				heap.Push(h, w)
			}
		}
	}
	return order, len(order) == n
}

// IsTopological reports whether order is a permutation of the nodes respecting every edge.
func (g *Graph) IsTopological(order []int) bool {
	if len(order) != len(g.Nodes) {
		return false
	}
	pos := make([]int, len(g.Nodes))
	for i := range pos {
		pos[i] = -1
	}
	for i, v := range order {
		if v < 0 || v >= len(g.Nodes) || pos[v] >= 0 {
			return false
		}
		pos[v] = i
	}
	for v := range g.Nodes {
		for _, w := range g.succs[v] {
			if pos[v] > pos[w] {
				return false
			}
		}
	}
	return true
}

// Reachability answers "is there a path from u to v" in O(1) after an O(n·m/64) build. It
// stores n² bits: 10k nodes take 12.5 MB, 50k nodes 312 MB.
type Reachability struct {
	n     int
	words int
	bits  []uint64
}

// Reachability computes the transitive closure (each node reaches itself).
func (g *Graph) Reachability() *Reachability {
	n := len(g.Nodes)
	w := (n + 63) / 64
	r := &Reachability{n: n, words: w, bits: make([]uint64, n*w)}
	for i := len(g.topo) - 1; i >= 0; i-- {
		v := g.topo[i]
		row := r.bits[v*w : (v+1)*w]
		row[v/64] |= 1 << (v % 64)
		for _, s := range g.succs[v] {
			srow := r.bits[s*w : (s+1)*w]
			for k := range row {
				row[k] |= srow[k]
			}
		}
	}
	return r
}

// Reaches reports whether v is reachable from u (u == v counts).
func (r *Reachability) Reaches(u, v int) bool {
	return r.bits[u*r.words+v/64]&(1<<(v%64)) != 0
}

// Comparable reports whether u and v are ordered by a path either way.
func (r *Reachability) Comparable(u, v int) bool { return r.Reaches(u, v) || r.Reaches(v, u) }

// Descendants counts the nodes reachable from u, u included.
func (r *Reachability) Descendants(u int) int {
	c := 0
	for _, x := range r.bits[u*r.words : (u+1)*r.words] {
		c += bits.OnesCount64(x)
	}
	return c
}

// Ancestors returns the nodes from which v is reachable, v excluded, ascending. O(n+m) BFS.
func (g *Graph) Ancestors(v int) []int { return g.walk(v, g.preds) }

// Descendants returns the nodes reachable from v, v excluded, ascending. O(n+m) BFS.
func (g *Graph) Descendants(v int) []int { return g.walk(v, g.succs) }

func (g *Graph) walk(v int, adj [][]int) []int {
	seen := make([]bool, len(g.Nodes))
	stack := []int{v}
	seen[v] = true
	var out []int
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, y := range adj[x] {
			if !seen[y] {
				seen[y] = true
				out = append(out, y)
				stack = append(stack, y)
			}
		}
	}
	sort.Ints(out)
	return out
}

// StageOrderError reports an assignment in which a tensor flows from a later stage to an
// earlier one.
type StageOrderError struct {
	Tensor   string
	From, To int // producing and consuming stage
	Producer string
	Consumer string
}

// Error names the tensor, its stages and the nodes at both ends.
func (e *StageOrderError) Error() string {
	return fmt.Sprintf("tensor %q flows backwards from stage %d (node %s) to stage %d (node %s)",
		e.Tensor, e.From, e.Producer, e.To, e.Consumer)
}

// CheckStageOrder verifies that a node → stage assignment is a pipeline: every tensor flows
// from a stage to the same or a later stage. stage[v] must be ≥ 0 for every node.
func (g *Graph) CheckStageOrder(stage []int) error {
	if len(stage) != len(g.Nodes) {
		return fmt.Errorf("assignment has %d entries for %d nodes", len(stage), len(g.Nodes))
	}
	for v := range g.Nodes {
		if stage[v] < 0 {
			return fmt.Errorf("node %s has no stage", g.Nodes[v].Label())
		}
	}
	for _, v := range g.topo {
		n := &g.Nodes[v]
		for _, t := range n.Deps() {
			p := g.Tensors[t].Producer
			if p >= 0 && stage[p] > stage[v] {
				return &StageOrderError{Tensor: g.Tensors[t].Name, From: stage[p], To: stage[v],
					Producer: g.Nodes[p].Label(), Consumer: n.Label()}
			}
		}
	}
	return nil
}

// StageCycleError reports an assignment whose stage graph has a cycle; Tensors are the
// tensors carried by the edges of one cycle of stages.
type StageCycleError struct {
	Stages  []int
	Tensors []string
}

// Error lists the stages of the cycle and the tensors that close it.
func (e *StageCycleError) Error() string {
	return fmt.Sprintf("the stage graph has a cycle through stages %v, closed by tensors %v", e.Stages, e.Tensors)
}

// OrderStages checks that the stage graph of an assignment (stages as nodes, an edge where a
// tensor crosses stages) is acyclic and returns the stages in a topological order (ties:
// smaller stage number first), so that any acyclic assignment can be renumbered into a
// pipeline. It returns a *StageCycleError naming the tensors that close a cycle.
func (g *Graph) OrderStages(stage []int) ([]int, error) {
	if len(stage) != len(g.Nodes) {
		return nil, fmt.Errorf("assignment has %d entries for %d nodes", len(stage), len(g.Nodes))
	}
	k := 0
	for v, s := range stage {
		if s < 0 {
			return nil, fmt.Errorf("node %s has no stage", g.Nodes[v].Label())
		}
		if s+1 > k {
			k = s + 1
		}
	}
	type edge struct{ a, b int }
	carrier := map[edge]string{}
	succ := make([]map[int]bool, k)
	for i := range succ {
		succ[i] = map[int]bool{}
	}
	for v := range g.Nodes {
		for _, t := range g.Nodes[v].Deps() {
			p := g.Tensors[t].Producer
			if p >= 0 && stage[p] != stage[v] {
				e := edge{stage[p], stage[v]}
				if _, ok := carrier[e]; !ok {
					carrier[e] = g.Tensors[t].Name
				}
				succ[stage[p]][stage[v]] = true
			}
		}
	}
	indeg := make([]int, k)
	for a := range succ {
		for b := range succ[a] {
			indeg[b]++
		}
	}
	h := &readyHeap{}
	for s := 0; s < k; s++ {
		if indeg[s] == 0 {
			h.ids = append(h.ids, s)
		}
	}
	heap.Init(h)
	var order []int
	for h.Len() > 0 {
		s := heap.Pop(h).(int)
		order = append(order, s)
		nexts := make([]int, 0, len(succ[s]))
		for b := range succ[s] {
			nexts = append(nexts, b)
		}
		sort.Ints(nexts)
		for _, b := range nexts {
			indeg[b]--
			if indeg[b] == 0 {
				heap.Push(h, b)
			}
		}
	}
	if len(order) == k {
		return order, nil
	}
	// Find a cycle among the remaining stages by walking predecessors: a stage left over by
	// Kahn's algorithm always has a left-over predecessor.
	done := map[int]bool{}
	for _, s := range order {
		done[s] = true
	}
	pred := make([][]int, k)
	for a := range succ {
		for b := range succ[a] {
			pred[b] = append(pred[b], a)
		}
	}
	start := -1
	for s := 0; s < k; s++ {
		if !done[s] {
			start = s
			break
		}
	}
	pos := map[int]int{}
	var path []int
	for s := start; ; {
		if p, seen := pos[s]; seen {
			walked := path[p:] // each element's successor is the previous one
			cyc := make([]int, len(walked))
			for i := range walked {
				cyc[len(walked)-1-i] = walked[i]
			}
			err := &StageCycleError{Stages: cyc}
			for i := range cyc {
				a, b := cyc[i], cyc[(i+1)%len(cyc)]
				err.Tensors = append(err.Tensors, carrier[edge{a, b}])
			}
			return nil, err
		}
		pos[s] = len(path)
		path = append(path, s)
		sort.Ints(pred[s])
		next := -1
		for _, a := range pred[s] {
			if !done[a] {
				next = a
				break
			}
		}
		s = next
	}
}
