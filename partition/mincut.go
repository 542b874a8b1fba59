package partition

import (
	"context"
	"math"
	"sort"
)

// flowNet is a small Dinic max-flow network (float capacities).
type flowNet struct {
	head  []int32
	next  []int32
	to    []int32
	cap   []float64
	level []int32
	iter  []int32
	queue []int32
	// Optional limits: the flow stops (stopped = true) when ctx ends or when more than
	// budget arcs have been scanned (budget ≤ 0: no cap). The flow found so far is still a
	// feasible flow, so its value is a lower bound on the minimum cut.
	ctx     context.Context
	budget  int64
	ops     int64
	stopped bool
}

// halt counts n arc scans and says whether the limits are reached (checked every 4096).
func (f *flowNet) halt(n int64) bool {
	if f.stopped {
		return true
	}
	before := f.ops
	f.ops += n
	if f.ops>>12 == before>>12 {
		return false
	}
	if (f.budget > 0 && f.ops > f.budget) || (f.ctx != nil && f.ctx.Err() != nil) {
		f.stopped = true
	}
	return f.stopped
}

func newFlowNet(nodes int) *flowNet {
	f := &flowNet{head: make([]int32, nodes), level: make([]int32, nodes), iter: make([]int32, nodes)}
	for i := range f.head {
		f.head[i] = -1
	}
	return f
}

func (f *flowNet) addEdge(a, b int, c float64) {
	f.to = append(f.to, int32(b))
	f.cap = append(f.cap, c)
	f.next = append(f.next, f.head[a])
	f.head[a] = int32(len(f.to) - 1)
	f.to = append(f.to, int32(a))
	f.cap = append(f.cap, 0)
	f.next = append(f.next, f.head[b])
	f.head[b] = int32(len(f.to) - 1)
}

func (f *flowNet) bfs(s, t int) bool {
	// A phase costs O(nodes) to reset even when it explores little: count that too.
	if f.halt(int64(2 * len(f.level))) {
		return false
	}
	for i := range f.level {
		f.level[i] = -1
	}
	f.level[s] = 0
	f.queue = append(f.queue[:0], int32(s))
	for i := 0; i < len(f.queue); i++ {
		v := f.queue[i]
		if f.halt(1) {
			return false
		}
		for e := f.head[v]; e >= 0; e = f.next[e] {
			f.ops++
			if f.cap[e] > 1e-15 && f.level[f.to[e]] < 0 {
				f.level[f.to[e]] = f.level[v] + 1
				f.queue = append(f.queue, f.to[e])
			}
		}
	}
	return f.level[t] >= 0
}

func (f *flowNet) dfs(v, t int, pushed float64) float64 {
	if v == t {
		return pushed
	}
	for ; f.iter[v] >= 0; f.iter[v] = f.next[f.iter[v]] {
		if f.halt(1) {
			return 0
		}
		e := f.iter[v]
		w := f.to[e]
		if f.cap[e] <= 1e-15 || f.level[w] != f.level[v]+1 {
			continue
		}
		if d := f.dfs(int(w), t, math.Min(pushed, f.cap[e])); d > 0 {
			f.cap[e] -= d
			f.cap[e^1] += d
			return d
		}
	}
	return 0
}

// maxFlow returns the value of a maximum s–t flow (= the minimum cut). When the limits
// stop it (f.stopped), it returns the value of the feasible flow found so far, which is at
// most the minimum cut.
func (f *flowNet) maxFlow(s, t int) float64 {
	total := 0.0
	for !f.stopped && f.bfs(s, t) {
		copy(f.iter, f.head)
		for !f.stopped {
			d := f.dfs(s, t, math.Inf(1))
			if d <= 0 {
				break
			}
			total += d
		}
	}
	return total
}

// minBlockBound is max_v min_{S ∋ v} f_d(S) (minimised over usable devices d too), a bound
// that dominates nodeBound: every block S of every plan contains some node v, so
// OPT ≥ max_v min_{S∋v} f(S) (dropping overflow, which is ≥ 0).
//
// For fixed v and d, min_{S∋v} [work_d(S) + coef_d·Σ_{t split by S} size(t)] is a minimum
// s–t cut (Lawler's hyperedge gadget): source → v with infinite capacity, node x → sink
// with capacity work_d(x) (paid when x is on the source side, i.e. in S), and for each
// tensor t two auxiliary nodes a_t → b_t of capacity coef_d·size(t) with m → a_t and
// b_t → m of infinite capacity for every member m of T_t. A cut separating members of T_t
// must cut a_t → b_t once; a cut keeping T_t on one side need not. Nodes are processed in
// decreasing order of f({v}), an upper bound on their min cut, and skipped once that is
// below the best bound found, so only a few cuts are computed. maxCuts caps their number.
//
// The work is limited: it stops when ctx ends or after budget arc scans in total (≤ 0: no
// cap; the flows on long chains need many Dinic phases). It then returns the best value so
// far with complete = false. That value is still a valid bound: each finished cut is one, and
// the value of a flow stopped early is that of a feasible flow, hence at most the minimum cut
// it was computing (weak duality).
func (c *core) minBlockBound(ctx context.Context, lower float64, maxCuts int, budget int64) (best float64, complete bool) {
	devs := c.activeDevices()
	type cand struct {
		v   int
		top float64
	}
	cands := make([]cand, 0, c.n)
	for v := 0; v < c.n; v++ {
		top := math.Inf(1)
		for _, d := range devs {
			top = math.Min(top, c.singletonCost(v, d))
		}
		cands = append(cands, cand{v, top})
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].top > cands[j].top })
	best = lower
	var ops int64
	nt := len(c.tProd)
	N := c.n + 2*nt + 2
	src, sink := c.n+2*nt, c.n+2*nt+1
	inf := 0.0
	for _, d := range devs {
		s := 0.0
		for _, w := range c.work[d] {
			s += w
		}
		for _, z := range c.tSize {
			s += z * c.coef[d]
		}
		inf = math.Max(inf, s)
	}
	inf = 2*inf + 1
	done := 0
	mark := make([]uint8, c.n)
	for _, cd := range cands {
		if cd.top <= best*(1+1e-12) || done >= maxCuts {
			break
		}
		if ctx.Err() != nil || (budget > 0 && ops >= budget) {
			return best, false
		}
		val := math.Inf(1)
		c.markRelatives(cd.v, mark)
		stopped, all := false, false
		for di, d := range devs {
			f := newFlowNet(N)
			f.ctx = ctx
			if budget > 0 {
				f.budget = budget - ops
			}
			for x := 0; x < c.n; x++ {
				if w := c.work[d][x]; w > 0 {
					f.addEdge(x, sink, w)
				}
			}
			if coef := c.coef[d]; coef > 0 {
				for t := 0; t < nt; t++ {
					ct := coef * c.tSize[t]
					if ct <= 0 {
						continue
					}
					a, b := c.n+2*t, c.n+2*t+1
					f.addEdge(a, b, ct)
					p := int(c.tProd[t])
					f.addEdge(p, a, inf)
					f.addEdge(b, p, inf)
					for _, g := range c.consOf(t) {
						f.addEdge(int(g), a, inf)
						f.addEdge(b, int(g), inf)
					}
				}
			}
			// Blocks are convex (a node on a path between two members is a member, or the
			// quotient has a cycle). For the descendants D of v this implies the closure
			// x ∈ S ∩ D ⇒ every predecessor of x in D ∪ {v} is in S, and symmetrically for
			// ancestors; closures are infinite edges x → p.
			for x := 0; x < c.n; x++ {
				if mark[x] == 1 { // descendant
					for _, p := range c.predOf(x) {
						if mark[p] == 1 || int(p) == cd.v {
							f.addEdge(x, int(p), inf)
						}
					}
				} else if mark[x] == 2 { // ancestor
					for _, s := range c.succOf(x) {
						if mark[s] == 2 || int(s) == cd.v {
							f.addEdge(x, int(s), inf)
						}
					}
				}
			}
			f.addEdge(src, cd.v, inf)
			val = math.Min(val, f.maxFlow(src, sink))
			ops += f.ops
			stopped = f.stopped
			all = di == len(devs)-1
			if val <= best || stopped {
				break
			}
		}
		done++
		// val is min over the devices of (partial) flows; it bounds f(S) only if every
		// device was examined (the loop also breaks early when val ≤ best, harmlessly).
		if all && val > best {
			best = val
		}
		if stopped {
			return best, false
		}
	}
	return best, true
}

// singletonCost is f_d({v}) (= blockCost([]int{v}, d)) in O(deg v): every tensor incident to
// v has another member (its producer or a consumer), so it is cut. blockCost scans every
// tensor, which made the candidate list of minBlockBound quadratic.
func (c *core) singletonCost(v, d int) float64 {
	comm := 0.0
	for _, t := range c.incOf(v) {
		if c.tCard[t] > 1 {
			comm += c.tSize[t]
		}
	}
	return c.work[d][v] + comm*c.coef[d] + c.overflow(d, c.params[v])
}

// markRelatives sets mark[x] = 1 for the descendants of v, 2 for its ancestors, 0 otherwise.
func (c *core) markRelatives(v int, mark []uint8) {
	for i := range mark {
		mark[i] = 0
	}
	stack := []int32{int32(v)}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, s := range c.succOf(int(x)) {
			if mark[s] == 0 {
				mark[s] = 1
				stack = append(stack, s)
			}
		}
	}
	stack = append(stack[:0], int32(v))
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range c.predOf(int(x)) {
			if mark[p] == 0 {
				mark[p] = 2
				stack = append(stack, p)
			}
		}
	}
}

// flowSplits proposes re-splits of the union C of stages a and a+1 for wide graphs, where
// enumerating ideals is hopeless. C's nodes are laid out in the order given (stage a first)
// and, for a band of that order (by cumulative work: fractions lo..hi of C's work), the nodes
// before the band are forced into the downset D, those after it out of D, and a minimum cut
// over the downsets D with (stages < a) ⊆ D ⊆ (stages ≤ a+1) picks the cheapest boundary
// inside the band: Lawler's gadget charges each tensor that D splits once, and infinite
// edges v → p keep D down-closed. Each band gives one candidate boundary, to be judged by
// the true stage costs. It returns, for each distinct candidate, the nodes of C inside D.
func (c *core) flowSplits(stage []int, device []int, a int, order []int32, bands [][2]float64) [][]int {
	nt := len(c.tProd)
	N := c.n + 2*nt + 2
	src, sink := c.n+2*nt, c.n+2*nt+1
	coef := math.Max(c.coef[device[a]], c.coef[device[a+1]])
	if coef == 0 {
		return nil
	}
	W, S := 0.0, 0.0
	var C []int
	for _, v := range order {
		if s := stage[v]; s == a || s == a+1 {
			C = append(C, int(v))
			W += c.minWork[v]
		}
	}
	for _, s := range c.tSize {
		S += s * coef
	}
	if W <= 0 || len(C) < 2 {
		return nil
	}
	cum := make(map[int]float64, len(C))
	acc := 0.0
	for _, v := range C {
		cum[v] = acc + c.minWork[v]/2
		acc += c.minWork[v]
	}
	inf := 4*(W+S) + 1
	var out [][]int
	seen := map[string]bool{}
	for _, band := range bands {
		f := newFlowNet(N)
		for v := 0; v < c.n; v++ {
			switch s := stage[v]; {
			case s < a:
				f.addEdge(src, v, inf)
			case s > a+1:
				f.addEdge(v, sink, inf)
			default:
				switch x := cum[v] / W; {
				case x < band[0]:
					f.addEdge(src, v, inf)
				case x > band[1]:
					f.addEdge(v, sink, inf)
				}
			}
			for _, p := range c.predOf(v) {
				f.addEdge(v, int(p), inf) // downset: v ∈ D ⇒ p ∈ D
			}
		}
		for t := 0; t < nt; t++ {
			ct := coef * c.tSize[t]
			if ct <= 0 {
				continue
			}
			x, y := c.n+2*t, c.n+2*t+1
			f.addEdge(x, y, ct)
			f.addEdge(int(c.tProd[t]), x, inf)
			f.addEdge(y, int(c.tProd[t]), inf)
			for _, g := range c.consOf(t) {
				f.addEdge(int(g), x, inf)
				f.addEdge(y, int(g), inf)
			}
		}
		f.maxFlow(src, sink)
		in := make([]bool, N)
		in[src] = true
		queue := []int32{int32(src)}
		for i := 0; i < len(queue); i++ {
			x := queue[i]
			for e := f.head[x]; e >= 0; e = f.next[e] {
				if f.cap[e] > 1e-12 && !in[f.to[e]] {
					in[f.to[e]] = true
					queue = append(queue, f.to[e])
				}
			}
		}
		var D []int
		key := make([]byte, len(C))
		for i, v := range C {
			if in[v] {
				D = append(D, v)
				key[i] = 1
			}
		}
		if k := string(key); !seen[k] {
			seen[k] = true
			out = append(out, D)
		}
	}
	return out
}
