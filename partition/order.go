package partition

// kahnHeap is a max-heap of ready nodes keyed by priority, ties broken by the smaller node id
// so that orders are reproducible.
type kahnHeap struct {
	ids  []int32
	prio []float64
}

func (h *kahnHeap) less(a, b int32) bool { // a before b
	pa, pb := h.prio[a], h.prio[b]
	if pa != pb {
		return pa > pb
	}
	return a < b
}

func (h *kahnHeap) push(v int32) {
	h.ids = append(h.ids, v)
	i := len(h.ids) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.ids[i], h.ids[p]) {
			break
		}
		h.ids[i], h.ids[p] = h.ids[p], h.ids[i]
		i = p
	}
}

func (h *kahnHeap) pop() int32 {
	top := h.ids[0]
	last := len(h.ids) - 1
	h.ids[0] = h.ids[last]
	h.ids = h.ids[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.less(h.ids[l], h.ids[m]) {
			m = l
		}
		if r < last && h.less(h.ids[r], h.ids[m]) {
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

// kahnScratch holds the buffers of Kahn's algorithm so that repeated decodes do not allocate.
type kahnScratch struct {
	indeg []int32
	heap  kahnHeap
}

// kahn is Kahn's algorithm with node priorities (seed 000 Algorithm 3): among the nodes whose
// predecessors are all placed, the one with the highest priority comes next. It writes the
// topological order into out (len n) and returns it.
func (c *core) kahn(prio []float64, ks *kahnScratch, out []int32) []int32 {
	if cap(ks.indeg) < c.n {
		ks.indeg = make([]int32, c.n)
	}
	indeg := ks.indeg[:c.n]
	ks.heap.prio = prio
	ks.heap.ids = ks.heap.ids[:0]
	for v := 0; v < c.n; v++ {
		indeg[v] = c.predS[v+1] - c.predS[v]
		if indeg[v] == 0 {
			ks.heap.push(int32(v))
		}
	}
	out = out[:0]
	for len(ks.heap.ids) > 0 {
		v := ks.heap.pop()
		out = append(out, v)
		for _, w := range c.succOf(int(v)) {
			indeg[w]--
			if indeg[w] == 0 {
				ks.heap.push(w)
			}
		}
	}
	return out
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
	if len(order) != c.n {
		return false
	}
	pos := make([]int, c.n)
	for i := range pos {
		pos[i] = -1
	}
	for i, v := range order {
		if v < 0 || int(v) >= c.n || pos[v] >= 0 {
			return false
		}
		pos[v] = i
	}
	for v := 0; v < c.n; v++ {
		for _, w := range c.succOf(v) {
			if pos[v] > pos[w] {
				return false
			}
		}
	}
	return true
}
