package schedule

import (
	"math"
	"sort"

	"github.com/onnxpart/onnxpart/graph/dag"
)

// Module detection for MILP-SPLIT (seed 003 §3.3).
//
// Single channel: a node that lies on every source–sink path (every other node is its
// ancestor or its descendant, and no edge jumps over it) separates everything before it from
// everything after it. These are the thesis's bridges and articulation points turned into
// bridges (§3.3.1): the cut node is the last node of one module and the only source of the
// next module's inputs.
//
// Multi channel (§3.3.2): inside a stretch between two cut nodes, the maximal
// (c+1)-edge-connected subgraphs of the undirected graph (Chang et al., SIGMOD 2013) are the
// cores of modules joined by at most c edges. Nodes left outside every core (degree ≤ c, as
// chain nodes are) join the neighbouring module they share most edges with, cycles of the
// module quotient are merged, and modules are ordered topologically. When that leaves modules
// far above the target size (sparse modules are not (c+1)-edge-connected), the stretch is cut
// instead at minimum-channel ideals (digest-003 §4.4): near every multiple of the target
// size, the predecessor-closed set whose number of distinct producers with a consumer
// outside it is smallest, found by a max-flow min-cut.

// moduleSet is a sequence of modules in topological order.
type moduleSet struct {
	modules [][]int // node indices, each in topological order
	// cut[m] is the cut node ending module m when the boundary after m is single-channel
	// (the node is the last of module m), −1 when it is multi-channel or m is last.
	cut []int
	of  []int // module of each node
}

// cutNodes returns the nodes on every source–sink path, in topological order.
func (in *inst) cutNodes() []int {
	n := in.numNodes
	anc := make([]bitset, n)
	for _, i := range in.topo {
		anc[i] = newBitset(n)
		for _, p := range in.preds[i] {
			anc[i].set(p)
			anc[i].or(anc[p])
		}
	}
	var cuts []int
	for _, a := range in.topo {
		ok := true
		for x := range n {
			if x != a && !anc[a].has(x) && !in.reaches(a, x) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		// No edge from an ancestor of a to a descendant of a.
		for e := range in.problem.Edges {
			ed := &in.problem.Edges[e]
			if anc[a].has(ed.From) && in.reaches(a, ed.To) {
				ok = false
				break
			}
		}
		if ok {
			cuts = append(cuts, a)
		}
	}
	return cuts
}

// detectModules splits the graph into modules of about target nodes: single-channel modules
// from the cut nodes (merged while small), and multi-channel modules of at most maxChannels
// channels inside stretches longer than target.
func (in *inst) detectModules(target, maxChannels int) *moduleSet {
	if target <= 0 {
		target = 40
	}
	cuts := in.cutNodes()
	// Stretches between cut nodes: each ends with its cut node (the last may not).
	seg := make([]int, in.numNodes)
	isCut := make([]bool, in.numNodes)
	for _, c := range cuts {
		isCut[c] = true
	}
	// A node's stretch is the number of cut nodes that are strict ancestors of it... every
	// node is comparable with every cut node, so count the cut nodes before it in topo order.
	count := 0
	for _, i := range in.topo {
		seg[i] = count
		if isCut[i] {
			count++
		}
	}
	nseg := count + 1
	stretches := make([][]int, nseg)
	for _, i := range in.topo {
		stretches[seg[i]] = append(stretches[seg[i]], i)
	}
	// Drop an empty last stretch (the graph ends with a cut node).
	for len(stretches) > 0 && len(stretches[len(stretches)-1]) == 0 {
		stretches = stretches[:len(stretches)-1]
	}
	// Merge consecutive stretches while they stay within the target — in latency mode within
	// half of it: there a single-channel boundary loses nothing (the DP over entry and exit
	// devices is exact) and a sub-MILP of twice the nodes seldom proves its block optimal in
	// its share of the time (GoogLeNet's inception blocks: 9 nodes each prove optimal at
	// once; two merged, 18 nodes, do not), so smaller blocks give better bounds.
	merge := target
	if in.latency() {
		merge = max(2, target/2)
	}
	var blocks [][]int
	for _, s := range stretches {
		if len(blocks) > 0 && len(blocks[len(blocks)-1])+len(s) <= merge {
			blocks[len(blocks)-1] = append(blocks[len(blocks)-1], s...)
			continue
		}
		blocks = append(blocks, append([]int(nil), s...))
	}
	ms := &moduleSet{of: make([]int, in.numNodes)}
	for b, blk := range blocks {
		var parts [][]int
		if maxChannels >= 2 && len(blk) > target*3/2 {
			parts = in.multiChannel(blk, maxChannels, target)
			if largest(parts) > 2*target {
				// k-edge-connected components do not split sparse modules (chain nodes and
				// random graphs of low degree are not (c+1)-edge-connected): cut by minimum
				// channel count instead.
				parts = in.sweepCuts(blk, maxChannels, target)
			}
		} else {
			parts = [][]int{blk}
		}
		for x, part := range parts {
			ms.modules = append(ms.modules, part)
			c := -1
			if x == len(parts)-1 && b < len(blocks)-1 {
				c = blk[len(blk)-1] // the block's last node is a cut node
				if !isCut[c] {
					c = -1
				}
			}
			ms.cut = append(ms.cut, c)
		}
	}
	for m, mod := range ms.modules {
		for _, i := range mod {
			ms.of[i] = m
		}
	}
	return ms
}

// multiChannel splits a set of nodes into modules joined by at most maxChannels edges.
func (in *inst) multiChannel(nodes []int, maxChannels, target int) [][]int {
	local := make(map[int]int, len(nodes))
	for x, i := range nodes {
		local[i] = x
	}
	n := len(nodes)
	// Undirected multigraph on the stretch.
	w := make([][]int, n)
	for x := range w {
		w[x] = make([]int, n)
	}
	for _, ed := range in.problem.Edges {
		a, okA := local[ed.From]
		b, okB := local[ed.To]
		if okA && okB {
			w[a][b]++
			w[b][a]++
		}
	}
	comp := kEdgeComponents(w, maxChannels+1)
	// Group, then merge small groups into their most connected neighbour.
	groups := map[int][]int{}
	for x, c := range comp {
		groups[c] = append(groups[c], x)
	}
	minSize := max(2, target/4)
	for {
		// The smallest group below minSize, ties by its first node.
		small, size := -1, math.MaxInt
		for c, g := range groups {
			if len(g) < minSize && len(groups) > 1 && (len(g) < size || (len(g) == size && g[0] < groups[small][0])) {
				small, size = c, len(g)
			}
		}
		if small < 0 {
			break
		}
		conn := map[int]int{}
		for _, x := range groups[small] {
			for y := range n {
				if w[x][y] > 0 && comp[y] != small {
					conn[comp[y]] += w[x][y]
				}
			}
		}
		best, bw := -1, -1
		for c, v := range conn {
			if v > bw || (v == bw && groups[c][0] < groups[best][0]) {
				best, bw = c, v
			}
		}
		if best < 0 {
			break // isolated: leave it
		}
		for _, x := range groups[small] {
			comp[x] = best
		}
		groups[best] = append(groups[best], groups[small]...)
		sort.Ints(groups[best])
		delete(groups, small)
	}
	// Quotient DAG; merge strongly connected groups until acyclic.
	for {
		ids := make([]int, 0, len(groups))
		for c := range groups {
			ids = append(ids, c)
		}
		sort.Ints(ids)
		succ := map[int]map[int]bool{}
		for _, ed := range in.problem.Edges {
			a, okA := local[ed.From]
			b, okB := local[ed.To]
			if okA && okB && comp[a] != comp[b] {
				if succ[comp[a]] == nil {
					succ[comp[a]] = map[int]bool{}
				}
				succ[comp[a]][comp[b]] = true
			}
		}
		cyc := findCycle(ids, succ)
		if cyc == nil {
			break
		}
		into := cyc[0]
		for _, c := range cyc[1:] {
			for _, x := range groups[c] {
				comp[x] = into
			}
			groups[into] = append(groups[into], groups[c]...)
			delete(groups, c)
		}
		sort.Ints(groups[into])
	}
	// Order the groups topologically by the first position of their nodes in a Kahn order
	// of the quotient (ties by the smallest topological position).
	first := map[int]int{}
	for x, i := range nodes {
		c := comp[x]
		if v, ok := first[c]; !ok || in.topoPos[i] < v {
			first[c] = in.topoPos[i]
		}
	}
	deg := map[int]int{}
	succ := map[int][]int{}
	seen := map[[2]int]bool{}
	for _, ed := range in.problem.Edges {
		a, okA := local[ed.From]
		b, okB := local[ed.To]
		if okA && okB && comp[a] != comp[b] && !seen[[2]int{comp[a], comp[b]}] {
			seen[[2]int{comp[a], comp[b]}] = true
			succ[comp[a]] = append(succ[comp[a]], comp[b])
			deg[comp[b]]++
		}
	}
	var ready, order []int
	for c := range groups {
		if deg[c] == 0 {
			ready = append(ready, c)
		}
	}
	for len(ready) > 0 {
		sort.Slice(ready, func(a, b int) bool { return first[ready[a]] < first[ready[b]] })
		c := ready[0]
		ready = ready[1:]
		order = append(order, c)
		for _, d := range succ[c] {
			if deg[d]--; deg[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	// Merge consecutive groups while small, then emit in topological order of nodes.
	var parts [][]int
	for _, c := range order {
		g := make([]int, 0, len(groups[c]))
		for _, x := range groups[c] {
			g = append(g, nodes[x])
		}
		if len(parts) > 0 && len(parts[len(parts)-1])+len(g) <= target {
			parts[len(parts)-1] = append(parts[len(parts)-1], g...)
		} else {
			parts = append(parts, g)
		}
	}
	for _, p := range parts {
		sort.Slice(p, func(a, b int) bool { return in.topoPos[p[a]] < in.topoPos[p[b]] })
	}
	return parts
}

// findCycle returns the groups of one cycle of the quotient, ascending, or nil: the first
// cycle a depth-first search meets, from the smallest group and its smallest successors.
func findCycle(ids []int, succ map[int]map[int]bool) []int {
	dense := make(map[int]int, len(ids))
	for x, c := range ids {
		dense[c] = x
	}
	lists := make([][]int, len(ids))
	for x, c := range ids {
		for d := range succ[c] {
			lists[x] = append(lists[x], dense[d])
		}
		lists[x] = dag.SortedUnique(lists[x])
	}
	cyc := dag.FindCycle(dag.FromLists(lists))
	if cyc == nil {
		return nil
	}
	out := make([]int, len(cyc))
	for x, v := range cyc {
		out[x] = ids[v]
	}
	sort.Ints(out)
	return out
}

// kEdgeComponents labels the vertices of an undirected multigraph (symmetric weight matrix)
// by their maximal k-edge-connected subgraph (Chang et al., SIGMOD 2013): vertices of degree
// below k are peeled off as singletons, then every part whose global minimum cut (Stoer–Wagner)
// is below k is split along that cut, recursively. Labels are the smallest vertex of each part.
func kEdgeComponents(w [][]int, k int) []int {
	n := len(w)
	comp := make([]int, n)
	for x := range comp {
		comp[x] = x
	}
	var solve func(set []int)
	solve = func(set []int) {
		// Peel vertices whose degree inside the set is below k.
		alive := map[int]bool{}
		for _, x := range set {
			alive[x] = true
		}
		for changed := true; changed; {
			changed = false
			for _, x := range set {
				if !alive[x] {
					continue
				}
				d := 0
				for _, y := range set {
					if alive[y] {
						d += w[x][y]
					}
				}
				if d < k {
					alive[x] = false
					changed = true
				}
			}
		}
		var rest []int
		for _, x := range set {
			if alive[x] {
				rest = append(rest, x)
			}
		}
		if len(rest) <= 1 {
			return
		}
		// Connected components first.
		for _, cc := range components(w, rest) {
			if len(cc) == 1 {
				continue
			}
			cut, side := stoerWagner(w, cc)
			if cut >= k {
				for _, x := range cc {
					comp[x] = cc[0]
				}
				continue
			}
			var a, b []int
			for x, v := range cc {
				if side[x] {
					a = append(a, v)
				} else {
					b = append(b, v)
				}
			}
			solve(a)
			solve(b)
		}
	}
	all := make([]int, n)
	for x := range all {
		all[x] = x
	}
	solve(all)
	return comp
}

func components(w [][]int, set []int) [][]int {
	in := map[int]bool{}
	for _, x := range set {
		in[x] = true
	}
	seen := map[int]bool{}
	var out [][]int
	for _, s := range set {
		if seen[s] {
			continue
		}
		cc := []int{s}
		seen[s] = true
		for q := 0; q < len(cc); q++ {
			for _, y := range set {
				if !seen[y] && w[cc[q]][y] > 0 {
					seen[y] = true
					cc = append(cc, y)
				}
			}
		}
		sort.Ints(cc)
		out = append(out, cc)
	}
	return out
}

// stoerWagner returns the global minimum cut of the subgraph induced on set (connected, two
// vertices or more) and, per position in set, which side of the cut the vertex is on.
func stoerWagner(w [][]int, set []int) (int, []bool) {
	n := len(set)
	g := make([][]int, n)
	for a := range g {
		g[a] = make([]int, n)
		for b := range g[a] {
			g[a][b] = w[set[a]][set[b]]
		}
	}
	members := make([][]int, n) // merged vertices
	for a := range members {
		members[a] = []int{a}
	}
	active := make([]bool, n)
	for a := range active {
		active[a] = true
	}
	best := math.MaxInt
	var bestSide []int
	for phase := n; phase > 1; phase-- {
		added := make([]bool, n)
		wsum := make([]int, n)
		prev, last := -1, -1
		for range phase {
			sel := -1
			for v := range n {
				if active[v] && !added[v] && (sel < 0 || wsum[v] > wsum[sel]) {
					sel = v
				}
			}
			added[sel] = true
			prev, last = last, sel
			for v := range n {
				if active[v] && !added[v] {
					wsum[v] += g[sel][v]
				}
			}
		}
		// Cut of the phase: last vertex against the rest.
		cut := 0
		for v := range n {
			if active[v] && v != last {
				cut += g[last][v]
			}
		}
		if cut < best {
			best = cut
			bestSide = append([]int(nil), members[last]...)
		}
		// Merge last into prev.
		members[prev] = append(members[prev], members[last]...)
		for v := range n {
			g[prev][v] += g[last][v]
			g[v][prev] = g[prev][v]
		}
		g[prev][prev] = 0
		active[last] = false
	}
	side := make([]bool, n)
	for _, a := range bestSide {
		side[a] = true
	}
	return best, side
}

func largest(parts [][]int) int {
	m := 0
	for _, p := range parts {
		m = max(m, len(p))
	}
	return m
}

// sweepCuts cuts a stretch (in topological order) into modules at minimum-channel ideals:
// for boundaries near every multiple of target, the ideal D that contains the nodes well
// before the boundary and excludes those well after it, minimising the number of nodes of D
// with a successor outside D (the channels: one per distinct tensor crossing the cut).
func (in *inst) sweepCuts(nodes []int, maxChannels, target int) [][]int {
	n := len(nodes)
	local := make(map[int]int, n)
	for x, i := range nodes {
		local[i] = x
	}
	inD := make([]bool, n) // nodes already assigned to earlier modules
	var parts [][]int
	lo := 0 // nodes[:lo] are all assigned (positions in topological order)
	for n-countTrue(inD) > target*3/2 {
		w := max(1, target/2)
		var best []bool
		bestCut := math.MaxInt
		for _, width := range []int{w, target} {
			p := lo + target
			a := max(lo, p-width)
			z := min(n, p+width)
			if z >= n {
				z = n - 1
			}
			d, cut := in.minChannelIdeal(nodes, local, inD, a, z)
			if d != nil && cut < bestCut {
				best, bestCut = d, cut
			}
			if bestCut <= maxChannels {
				break
			}
		}
		if best == nil {
			break
		}
		var part []int
		for x := range n {
			if best[x] && !inD[x] {
				part = append(part, nodes[x])
				inD[x] = true
			}
		}
		if len(part) == 0 {
			break
		}
		parts = append(parts, part)
		for lo < n && inD[lo] {
			lo++
		}
	}
	var rest []int
	for x := range n {
		if !inD[x] {
			rest = append(rest, nodes[x])
		}
	}
	if len(rest) > 0 {
		parts = append(parts, rest)
	}
	return parts
}

func countTrue(b []bool) int {
	c := 0
	for _, v := range b {
		if v {
			c++
		}
	}
	return c
}

// minChannelIdeal returns the predecessor-closed set D ⊇ inD ∪ nodes[:a] with D ∩ nodes[z:] = ∅
// that minimises the number of nodes of D with a successor outside D, and that number.
func (in *inst) minChannelIdeal(nodes []int, local map[int]int, inD []bool, a, z int) ([]bool, int) {
	n := len(nodes)
	// Flow network: s, t, and per node x: x_in = 2x, x_out = 2x+1.
	s, t := 2*n, 2*n+1
	g := newFlowGraph(2*n + 2)
	const inf = 1 << 30
	for x := range n {
		g.add(2*x, 2*x+1, 1) // x ∈ D with a successor outside costs 1
		if inD[x] || x < a {
			g.add(s, 2*x, inf)
		}
		if x >= z {
			g.add(2*x, t, inf)
			g.add(2*x+1, t, inf)
		}
	}
	for _, ed := range in.problem.Edges {
		x, okX := local[ed.From]
		y, okY := local[ed.To]
		if !okX || !okY {
			continue
		}
		g.add(2*x+1, 2*y, inf) // x ∈ D, y ∉ D ⇒ cut x's unit edge
		g.add(2*y, 2*x, inf)   // y ∈ D ⇒ x ∈ D (closure)
	}
	flow := g.maxflow(s, t, n+1)
	if flow > n {
		return nil, math.MaxInt
	}
	side := g.reachable(s)
	d := make([]bool, n)
	for x := range n {
		d[x] = side[2*x]
	}
	return d, flow
}

// flowGraph is a small residual graph for Edmonds–Karp.
type flowGraph struct {
	head []int
	to   []int
	cap  []int
	next []int
}

func newFlowGraph(n int) *flowGraph {
	g := &flowGraph{head: make([]int, n)}
	for x := range g.head {
		g.head[x] = -1
	}
	return g
}

func (g *flowGraph) add(a, b, c int) {
	g.to = append(g.to, b, a)
	g.cap = append(g.cap, c, 0)
	g.next = append(g.next, g.head[a], g.head[b])
	g.head[a] = len(g.to) - 2
	g.head[b] = len(g.to) - 1
}

// maxflow augments along shortest paths until none is left or the flow exceeds limit.
func (g *flowGraph) maxflow(s, t, limit int) int {
	flow := 0
	prev := make([]int, len(g.head))
	for flow <= limit {
		for x := range prev {
			prev[x] = -1
		}
		queue := []int{s}
		prev[s] = -2
		for q := 0; q < len(queue) && prev[t] == -1; q++ {
			v := queue[q]
			for e := g.head[v]; e >= 0; e = g.next[e] {
				if w := g.to[e]; g.cap[e] > 0 && prev[w] == -1 {
					prev[w] = e
					queue = append(queue, w)
				}
			}
		}
		if prev[t] == -1 {
			break
		}
		aug := math.MaxInt
		for v := t; v != s; v = g.to[prev[v]^1] {
			aug = min(aug, g.cap[prev[v]])
		}
		for v := t; v != s; v = g.to[prev[v]^1] {
			g.cap[prev[v]] -= aug
			g.cap[prev[v]^1] += aug
		}
		flow += aug
	}
	return flow
}

// reachable marks the vertices reachable from s in the residual graph.
func (g *flowGraph) reachable(s int) []bool {
	seen := make([]bool, len(g.head))
	seen[s] = true
	queue := []int{s}
	for q := 0; q < len(queue); q++ {
		v := queue[q]
		for e := g.head[v]; e >= 0; e = g.next[e] {
			if w := g.to[e]; g.cap[e] > 0 && !seen[w] {
				seen[w] = true
				queue = append(queue, w)
			}
		}
	}
	return seen
}
