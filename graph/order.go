package graph

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph/dag"
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

// kahn runs Kahn's algorithm (smallest priority first, ties by the smaller id; nil
// priorities: by id); ok is false when some nodes lie on cycles (order then holds the nodes
// that could be placed).
func (g *Graph) kahn(prio []float64) (order []int, ok bool) {
	ord := dag.MinFirst
	if prio == nil {
		ord = dag.ByID
	}
	var k dag.Kahn
	o := k.Sort(g.succRows, g.predRows, prio, ord, nil)
	order = make([]int, len(o))
	for i, v := range o {
		order[i] = int(v)
	}
	return order, len(order) == len(g.Nodes)
}

// IsTopological reports whether order is a permutation of the nodes respecting every edge.
func (g *Graph) IsTopological(order []int) bool { return dag.IsTopological(g.succRows, order) }

// Reachability answers "is there a path from u to v" in O(1) after an O(n·m/64) build. It
// stores n² bits: 10k nodes take 12.5 MB, 50k nodes 312 MB.
type Reachability struct{ r *dag.Reachability }

// Reachability computes the transitive closure (each node reaches itself).
func (g *Graph) Reachability() *Reachability {
	return &Reachability{dag.Reach(g.succRows, g.topo)}
}

// Reaches reports whether v is reachable from u (u == v counts).
func (r *Reachability) Reaches(u, v int) bool { return r.r.Reaches(u, v) }

// Comparable reports whether u and v are ordered by a path either way.
func (r *Reachability) Comparable(u, v int) bool { return r.Reaches(u, v) || r.Reaches(v, u) }

// Descendants counts the nodes reachable from u, u included.
func (r *Reachability) Descendants(u int) int {
	c := 0
	for _, x := range r.r.Row(u) {
		c += bits.OnesCount64(x)
	}
	return c
}

// Ancestors returns the nodes from which v is reachable, v excluded, ascending. O(n+m) BFS.
func (g *Graph) Ancestors(v int) []int { return dag.Walk(g.predRows, v) }

// Descendants returns the nodes reachable from v, v excluded, ascending. O(n+m) BFS.
func (g *Graph) Descendants(v int) []int { return dag.Walk(g.succRows, v) }

// CheckStageOrder verifies that a node → stage assignment is a pipeline: every tensor flows
// from a stage to the same or a later stage. stage[v] must be ≥ 0 for every node. A tensor
// that flows from a later stage to an earlier one is a *diag.Error of kind input about the
// tensor, naming its stages and the nodes at both ends.
func (g *Graph) CheckStageOrder(stage []int) error {
	if len(stage) != len(g.Nodes) {
		return diag.Input("assignment has %d entries for %d nodes", len(stage), len(g.Nodes))
	}
	for v := range g.Nodes {
		if stage[v] < 0 {
			return diag.Input("node %s has no stage", g.Nodes[v].Label()).About(diag.Node, g.Nodes[v].Label())
		}
	}
	for _, v := range g.topo {
		n := &g.Nodes[v]
		for _, t := range n.Deps() {
			p := g.Tensors[t].Producer
			if p >= 0 && stage[p] > stage[v] {
				name := g.Tensors[t].Name
				return diag.Input("tensor %q flows backwards from stage %d (node %s) to stage %d (node %s)",
					name, stage[p], g.Nodes[p].Label(), stage[v], n.Label()).About(diag.Tensor, name)
			}
		}
	}
	return nil
}

// StageCycle is the error for an assignment whose stage graph has a cycle: a *diag.Error of
// kind input about the first stage of the cycle, whose message names each edge of the cycle
// and the tensor it carries (stages[i] sends tensors[i] to stages[i+1], the last to the
// first), and whose cause is a *dag.CycleError listing the stages ("stage 0", …). emit's
// Prepare and OrderStages both return it.
func StageCycle(stages []int, tensors []string) *diag.Error {
	var b strings.Builder
	nodes := make([]string, len(stages))
	for i, s := range stages {
		nodes[i] = "stage " + strconv.Itoa(s)
		next := stages[(i+1)%len(stages)]
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "stage %d sends %q to stage %d", s, tensors[i], next)
	}
	e := diag.Input("the assignment is not a pipeline: %s; move nodes so that tensors only flow to later stages", b.String())
	if len(stages) > 0 {
		e.About(diag.Stage, strconv.Itoa(stages[0]))
	}
	return e.Wrap(&dag.CycleError{What: "the stage graph", Nodes: nodes})
}

// OrderStages checks that the stage graph of an assignment (stages as nodes, an edge where a
// tensor crosses stages) is acyclic and returns the stages in a topological order (ties:
// smaller stage number first), so that any acyclic assignment can be renumbered into a
// pipeline. A cycle is the error StageCycle returns, naming the tensors that close it.
func (g *Graph) OrderStages(stage []int) ([]int, error) {
	if len(stage) != len(g.Nodes) {
		return nil, diag.Input("assignment has %d entries for %d nodes", len(stage), len(g.Nodes))
	}
	k := 0
	for v, s := range stage {
		if s < 0 {
			return nil, diag.Input("node %s has no stage", g.Nodes[v].Label()).About(diag.Node, g.Nodes[v].Label())
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
	var edges [][2]int
	for a := range succ {
		for b := range succ[a] {
			edges = append(edges, [2]int{a, b})
		}
	}
	order, cyc := dag.Topological(dag.FromEdges(k, edges))
	if cyc == nil {
		return order, nil
	}
	tensors := make([]string, len(cyc))
	for i := range cyc {
		tensors[i] = carrier[edge{cyc[i], cyc[(i+1)%len(cyc)]}]
	}
	return nil, StageCycle(cyc, tensors)
}
