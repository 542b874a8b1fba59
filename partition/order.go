package partition

import "github.com/onnxpart/onnxpart/graph/dag"

// kahnScratch holds the buffers of Kahn's algorithm so that repeated decodes do not allocate.
type kahnScratch = dag.Kahn

// succCSR and predCSR view the core's adjacency as graph/dag rows (no copy).
func (c *core) succCSR() dag.CSR { return dag.CSR{Off: c.succS, Adj: c.succ} }
func (c *core) predCSR() dag.CSR { return dag.CSR{Off: c.predS, Adj: c.pred} }

// kahn is Kahn's algorithm with node priorities (seed 000 Algorithm 3): among the nodes whose
// predecessors are all placed, the one with the highest priority comes next (ties: the
// smaller id). It writes the topological order into out and returns it.
func (c *core) kahn(prio []float64, ks *kahnScratch, out []int32) []int32 {
	return ks.Sort(c.succCSR(), c.predCSR(), prio, dag.MaxFirst, out)
}

// priorityOf returns priorities that make kahn reproduce the topological order (seed 000
// §4.1: x_v = (n − pos(v))/n under a max-heap).
func priorityOf(order []int32) []float64 {
	n := len(order)
	x := make([]float64, n)
	for i, v := range order {
		x[v] = float64(n-i) / float64(n)
	}
	return x
}

// isTopological reports whether order is a permutation of the core nodes respecting every edge.
func (c *core) isTopological(order []int32) bool {
	o := make([]int, len(order))
	for i, v := range order {
		o[i] = int(v)
	}
	return dag.IsTopological(c.succCSR(), o)
}
