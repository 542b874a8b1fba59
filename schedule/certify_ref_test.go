package schedule_test

// The exhaustive reference of the certificate harness (issue 33). It is written apart from
// the package's solvers and simulator and as plainly as possible: it lives in the external
// test package, so it can only read a Problem's public fields, and it recomputes every cost
// (link routing, transfer times, batch times, memory) from them.
//
// Scheduling semantics it implements (the package's documented model, problem.go and
// simulate.go):
//
//   - a node (latency) or a batch of c granules of a node (batched) runs without preemption on
//     its device; a task of positive duration occupies its device, one at a time; a task of
//     zero duration occupies nothing;
//   - an edge whose ends lie on different devices and which is not free needs a transfer that
//     starts when its producer ends; the consumer starts when all its inputs have arrived;
//   - latency mode: one transfer per edge, comm(e,u,v,1); batched mode: per edge and pair of
//     devices (u,v) with c > 0 shared granules, one message; without congestion every granule
//     moves on its own, all concurrently (a delay of comm(e,u,v,1), no resource); with
//     congestion the message takes comm(e,u,v,c) and occupies the sender's egress and the
//     receiver's ingress (when its duration is positive), one message at a time per port;
//   - memory: a device holds Weight once for every node with work on it and Act per granule;
//     a plan is feasible when no device exceeds its capacity (0 = unlimited);
//   - the makespan is the largest end time.
//
// The optimum over all schedules equals the optimum over semi-active schedules, and a
// semi-active schedule is fixed by the order of the tasks on every unary resource: the
// reference enumerates every assignment (latency: a device per node; batched: a device per
// granule of every node), and for each one every sequence of the tasks on every resource,
// and takes the longest path of the resulting graph (sequences that close a cycle are
// dropped). An assignment whose simple lower bound (longest path without resources, or the
// busiest resource) already reaches the best makespan found is skipped: that prunes, never
// changes, the minimum.

import (
	"math"

	"github.com/onnxpart/onnxpart/schedule"
)

type refInst struct {
	p       *schedule.Problem
	n, k, L int
	t       [][]float64   // t[i][u]; +Inf when node i cannot run on u
	bt      [][][]float64 // bt[i][u][c], c = 1..L; +Inf when unusable (size unsupported or cannot run)
	cap     []float64     // +Inf when unlimited
	bw, lat [][]float64   // routed links (bw 0: unreachable)
	free    []bool
	// capPer and capTotal, when positive, keep only the latency assignments that a plan
	// within those stage caps can have (capOK).
	capPer, capTotal int
}

// capOK reports whether a latency assignment passes the necessary condition of a plan within
// the stage caps: a device's stages are its openers (nodes reading a non-free edge from
// another device) plus one when its first task is a source, which the schedule's very first
// task is; so every device has at most capPer openers, some device at most capPer − 1, and
// all of them together at most capTotal − 1. The optimum over these assignments is ≤ the
// capped optimum (a relaxation), which is what the capped bounds bound.
func (r *refInst) capOK(dev []int) bool {
	if r.capPer <= 0 && r.capTotal <= 0 {
		return true
	}
	opens := make([]bool, r.n)
	for e, ed := range r.p.Edges {
		if !r.free[e] && dev[ed.From] != dev[ed.To] {
			opens[ed.To] = true
		}
	}
	per := make([]int, r.k)
	total := 0
	for i, o := range opens {
		if o {
			per[dev[i]]++
			total++
		}
	}
	if r.capTotal > 0 && total > r.capTotal-1 {
		return false
	}
	if r.capPer > 0 {
		some := false
		for _, c := range per {
			if c > r.capPer {
				return false
			}
			some = some || c <= r.capPer-1
		}
		return some
	}
	return true
}

func newRef(p *schedule.Problem) *refInst {
	r := &refInst{p: p, n: len(p.Nodes), k: len(p.Devices), L: p.Batch}
	if r.L < 1 {
		r.L = 1
	}
	inf := math.Inf(1)
	r.cap = make([]float64, r.k)
	for u, d := range p.Devices {
		r.cap[u] = d.Memory
		if d.Memory == 0 {
			r.cap[u] = inf
		}
	}
	r.t = make([][]float64, r.n)
	r.bt = make([][][]float64, r.n)
	for i, nd := range p.Nodes {
		r.t[i] = make([]float64, r.k)
		r.bt[i] = make([][]float64, r.k)
		for u := 0; u < r.k; u++ {
			x := nd.Time[u]
			if x < 0 || math.IsInf(x, 1) {
				x = inf
			}
			r.t[i][u] = x
			r.bt[i][u] = make([]float64, r.L+1)
			for c := 1; c <= r.L; c++ {
				y := float64(c) * x
				if nd.BatchTime != nil && nd.BatchTime[u] != nil {
					y = nd.BatchTime[u][c-1]
					if y < 0 || math.IsInf(x, 1) {
						y = inf
					}
				}
				if !supports(p.Devices[u], c) {
					y = inf
				}
				r.bt[i][u][c] = y
			}
		}
	}
	r.free = make([]bool, len(p.Edges))
	for e, ed := range p.Edges {
		if ed.Time == nil {
			continue
		}
		zero := true
		for u := 0; u < r.k; u++ {
			for v := 0; v < r.k; v++ {
				if u != v && ed.Time[u][v] != 0 {
					zero = false
				}
			}
		}
		r.free[e] = zero
	}
	r.route()
	return r
}

func supports(d schedule.Device, c int) bool {
	if d.BatchSizes == nil {
		return true
	}
	for _, s := range d.BatchSizes {
		if s == c {
			return true
		}
	}
	return false
}

// route finds, for every ordered pair of devices, the simple paths of direct links and keeps
// the widest (largest smallest bandwidth), and among the widest the smallest summed latency.
func (r *refInst) route() {
	k := r.k
	r.bw = make([][]float64, k)
	r.lat = make([][]float64, k)
	direct := func(a, b int) (float64, float64) {
		if r.p.Links == nil || a == b {
			return 0, 0
		}
		return r.p.Links[a][b].Bandwidth, r.p.Links[a][b].Latency
	}
	for u := 0; u < k; u++ {
		r.bw[u] = make([]float64, k)
		r.lat[u] = make([]float64, k)
		for v := 0; v < k; v++ {
			if u == v {
				continue
			}
			bestBW, bestLat := 0.0, math.Inf(1)
			seen := make([]bool, k)
			var walk func(at int, width, lat float64)
			walk = func(at int, width, lat float64) {
				if at == v {
					if width > bestBW || (width == bestBW && lat < bestLat) {
						bestBW, bestLat = width, lat
					}
					return
				}
				seen[at] = true
				for nx := 0; nx < k; nx++ {
					b, l := direct(at, nx)
					if nx == at || seen[nx] || b <= 0 {
						continue
					}
					walk(nx, math.Min(width, b), lat+l)
				}
				seen[at] = false
			}
			walk(u, math.Inf(1), 0)
			if bestBW > 0 {
				r.bw[u][v], r.lat[u][v] = bestBW, bestLat
			}
		}
	}
}

// transfer says whether edge e between devices u and v needs a transfer, and its time for c
// granules (+Inf: no route).
// callOf is the stage-call time of node i under a latency assignment (Device.CallCost) when
// it reads a non-free edge from another device (always paid), and when it is a source — no
// non-free in-edge — the time it pays when it is its device's first task.
func (r *refInst) callOf(i int, dev []int) (always, ifFirst float64) {
	gm := make([][]int, r.n)
	for x, u := range dev {
		gm[x] = []int{u}
	}
	return r.batchCallOf(i, dev[i], gm)
}

// batchCallOf is callOf for node i's batch on device u under granule maps gm (latency: one
// granule): the batch pays u's call always when one of its granules reads a non-free edge
// from a granule on another device, and when i is a source only if the batch is u's first.
func (r *refInst) batchCallOf(i, u int, gm [][]int) (always, ifFirst float64) {
	in, crossIn := false, false
	for e, ed := range r.p.Edges {
		if ed.To != i || r.free[e] {
			continue
		}
		in = true
		for l, w := range gm[i] {
			crossIn = crossIn || (w == u && gm[ed.From][l] != u)
		}
	}
	c := r.p.Devices[u].CallCost
	switch {
	case crossIn:
		return c, 0
	case !in:
		return 0, c
	}
	return 0, 0
}

func (r *refInst) transfer(e, u, v, c int) (bool, float64) {
	if u == v || r.free[e] {
		return false, 0
	}
	ed := r.p.Edges[e]
	if ed.Time != nil {
		return true, float64(c) * ed.Time[u][v]
	}
	if r.bw[u][v] <= 0 {
		return true, math.Inf(1)
	}
	return true, r.lat[u][v] + float64(c)*ed.Bytes/r.bw[u][v]
}

// task is one task of a fixed assignment: a node, a batch or a transfer.
type task struct {
	dur   float64
	first float64 // added to dur when the task is the first of its device's sequence
	res   []int   // unary resources it occupies (none when dur = first = 0)
	node  bool
}

// taskGraph is a fixed assignment's tasks, precedence arcs and resources.
type taskGraph struct {
	tasks []task
	succ  [][]int
	nres  int
}

func (g *taskGraph) add(dur float64, node bool, res ...int) int {
	return g.addFirst(dur, 0, node, res...)
}

func (g *taskGraph) addFirst(dur, first float64, node bool, res ...int) int {
	t := task{dur: dur, first: first, node: node}
	if dur > 0 || first > 0 {
		t.res = res
	}
	g.tasks = append(g.tasks, t)
	g.succ = append(g.succ, nil)
	return len(g.tasks) - 1
}

func (g *taskGraph) arc(a, b int) { g.succ[a] = append(g.succ[a], b) }

// longest returns the makespan of the graph with the extra sequence arcs, or +Inf when the
// arcs close a cycle.
func (g *taskGraph) longest(seq [][]int) float64 {
	n := len(g.tasks)
	deg := make([]int, n)
	extra := make([][]int, n)
	for a := range g.succ {
		for _, b := range g.succ[a] {
			deg[b]++
		}
	}
	// A device's first task pays its extra (the stage call of a source); resources past the
	// sequences given add none, which keeps a partial sequence's makespan a lower bound.
	dur := make([]float64, n)
	for a := range dur {
		dur[a] = g.tasks[a].dur
	}
	for _, s := range seq {
		if len(s) > 0 {
			dur[s[0]] += g.tasks[s[0]].first
		}
	}
	// Tasks of length zero then hold no resource (the simulator starts them without waiting
	// for the device): the sequence skips them.
	for _, s := range seq {
		prev := -1
		for _, a := range s {
			if dur[a] == 0 {
				continue
			}
			if prev >= 0 {
				extra[prev] = append(extra[prev], a)
				deg[a]++
			}
			prev = a
		}
	}
	start := make([]float64, n)
	var queue []int
	for a := 0; a < n; a++ {
		if deg[a] == 0 {
			queue = append(queue, a)
		}
	}
	mk := 0.0
	done := 0
	for len(queue) > 0 {
		a := queue[0]
		queue = queue[1:]
		done++
		end := start[a] + dur[a]
		mk = math.Max(mk, end)
		for _, list := range [][]int{g.succ[a], extra[a]} {
			for _, b := range list {
				start[b] = math.Max(start[b], end)
				if deg[b]--; deg[b] == 0 {
					queue = append(queue, b)
				}
			}
		}
	}
	if done < n {
		return math.Inf(1)
	}
	return mk
}

// quickBound is the longest path without resources and the busiest resource.
func (g *taskGraph) quickBound() float64 {
	lb := g.longest(nil)
	load := make([]float64, g.nres)
	for _, t := range g.tasks {
		for _, q := range t.res {
			load[q] += t.dur
		}
	}
	for _, x := range load {
		lb = math.Max(lb, x)
	}
	return lb
}

// optimum enumerates every sequence of the tasks of every resource and returns the smallest
// makespan (+Inf when none is below cutoff).
func (g *taskGraph) optimum(cutoff float64) float64 {
	n := len(g.tasks)
	// reach[a][b]: b is reachable from a by precedence arcs (to skip hopeless sequences).
	reach := make([][]bool, n)
	var dfs func(root, a int)
	dfs = func(root, a int) {
		for _, b := range g.succ[a] {
			if !reach[root][b] {
				reach[root][b] = true
				dfs(root, b)
			}
		}
	}
	for a := 0; a < n; a++ {
		reach[a] = make([]bool, n)
		dfs(a, a)
	}
	on := make([][]int, g.nres)
	for a, t := range g.tasks {
		for _, q := range t.res {
			on[q] = append(on[q], a)
		}
	}
	best := cutoff
	seq := make([][]int, g.nres)
	var perm func(q int, left []int)
	perm = func(q int, left []int) {
		if q == g.nres {
			if mk := g.longest(seq); mk < best {
				best = mk
			}
			return
		}
		if len(left) == 0 {
			// Adding arcs never shortens the longest path: prune on the sequences so far.
			if q > 0 && g.longest(seq[:q+1]) >= best {
				return
			}
			next := []int(nil)
			if q+1 < g.nres {
				next = append([]int(nil), on[q+1]...)
			}
			perm(q+1, next)
			return
		}
		for x, a := range left {
			ok := true
			for _, b := range left {
				if b != a && reach[b][a] {
					ok = false // b must come before a
				}
			}
			if !ok {
				continue
			}
			rest := make([]int, 0, len(left)-1)
			rest = append(rest, left[:x]...)
			rest = append(rest, left[x+1:]...)
			seq[q] = append(seq[q], a)
			perm(q, rest)
			seq[q] = seq[q][:len(seq[q])-1]
		}
	}
	if g.nres == 0 {
		return math.Min(best, g.longest(nil))
	}
	perm(0, append([]int(nil), on[0]...))
	return best
}

// Resources: device u is u, egress of u is K+u, ingress of v is 2K+v.
func (r *refInst) egress(u int) int  { return r.k + u }
func (r *refInst) ingress(v int) int { return 2*r.k + v }

// latencyGraph builds the tasks of a latency assignment; ok is false when a transfer has no
// route. node[i] is node i's task.
func (r *refInst) latencyGraph(dev []int) (g *taskGraph, node []int, ok bool) {
	g = &taskGraph{nres: 3 * r.k}
	node = make([]int, r.n)
	for i := 0; i < r.n; i++ {
		always, ifFirst := r.callOf(i, dev)
		node[i] = g.addFirst(r.t[i][dev[i]]+always, ifFirst, true, dev[i])
	}
	for e, ed := range r.p.Edges {
		u, v := dev[ed.From], dev[ed.To]
		need, d := r.transfer(e, u, v, 1)
		if math.IsInf(d, 1) {
			return nil, nil, false
		}
		if !need {
			g.arc(node[ed.From], node[ed.To])
			continue
		}
		var q int
		if r.p.Congestion {
			q = g.add(d, false, r.egress(u), r.ingress(v))
		} else {
			q = g.add(d, false)
		}
		g.arc(node[ed.From], q)
		g.arc(q, node[ed.To])
	}
	return g, node, true
}

// refResult is the reference's answer.
type refResult struct {
	feasible bool    // some assignment fits memory (and has routes)
	opt      float64 // the optimal makespan
	assigns  int     // assignments examined
	best     [][]int // an optimal assignment: the granule map of every node (latency: one granule)
}

// latencyOpt enumerates every device assignment of the nodes.
func (r *refInst) latencyOpt() refResult {
	res := refResult{opt: math.Inf(1)}
	dev := make([]int, r.n)
	mem := make([]float64, r.k)
	var rec func(i int)
	rec = func(i int) {
		if i == r.n {
			res.assigns++
			if !r.capOK(dev) {
				return
			}
			g, _, ok := r.latencyGraph(dev)
			if !ok {
				return
			}
			res.feasible = true
			if g.quickBound() >= res.opt {
				return
			}
			if v := g.optimum(res.opt); v < res.opt {
				res.opt = v
				res.best = nil
				for _, u := range dev {
					res.best = append(res.best, []int{u})
				}
			}
			return
		}
		nd := r.p.Nodes[i]
		for u := 0; u < r.k; u++ {
			if math.IsInf(r.t[i][u], 1) {
				continue
			}
			m := nd.Weight + nd.Act
			if mem[u]+m > r.cap[u] {
				continue
			}
			mem[u] += m
			dev[i] = u
			rec(i + 1)
			mem[u] -= m
		}
	}
	rec(0)
	return res
}

// counts returns the number of granules of a granule map on every device.
func (r *refInst) counts(g []int) []int {
	c := make([]int, r.k)
	for _, u := range g {
		c[u]++
	}
	return c
}

// batchedGraph builds the tasks of a granule assignment; batch[i][u] is the task of node i's
// batch on u (−1 when none).
func (r *refInst) batchedGraph(gm [][]int) (g *taskGraph, batch [][]int, ok bool) {
	g = &taskGraph{nres: 3 * r.k}
	batch = make([][]int, r.n)
	for i := 0; i < r.n; i++ {
		batch[i] = make([]int, r.k)
		cnt := r.counts(gm[i])
		for u := 0; u < r.k; u++ {
			batch[i][u] = -1
			if cnt[u] > 0 {
				always, ifFirst := r.batchCallOf(i, u, gm)
				batch[i][u] = g.addFirst(r.bt[i][u][cnt[u]]+always, ifFirst, true, u)
			}
		}
	}
	for e, ed := range r.p.Edges {
		pair := make([][]int, r.k)
		for u := range pair {
			pair[u] = make([]int, r.k)
		}
		for l := 0; l < r.L; l++ {
			pair[gm[ed.From][l]][gm[ed.To][l]]++
		}
		for u := 0; u < r.k; u++ {
			for v := 0; v < r.k; v++ {
				c := pair[u][v]
				if c == 0 {
					continue
				}
				a, b := batch[ed.From][u], batch[ed.To][v]
				need, d := r.transfer(e, u, v, 1)
				if math.IsInf(d, 1) {
					return nil, nil, false
				}
				if !need {
					g.arc(a, b)
					continue
				}
				var q int
				if r.p.Congestion {
					_, d = r.transfer(e, u, v, c)
					q = g.add(d, false, r.egress(u), r.ingress(v))
				} else {
					q = g.add(d, false)
				}
				g.arc(a, q)
				g.arc(q, b)
			}
		}
	}
	return g, batch, true
}

// batchedOpt enumerates every granule map of every node. Relabelling the granules the same
// way in every node changes nothing, so node 0's map is taken non-decreasing.
func (r *refInst) batchedOpt() refResult {
	res := refResult{opt: math.Inf(1)}
	// The usable maps of each node.
	maps := make([][][]int, r.n)
	for i := 0; i < r.n; i++ {
		cur := make([]int, r.L)
		var rec func(l int)
		rec = func(l int) {
			if l == r.L {
				if i == 0 {
					for x := 1; x < r.L; x++ {
						if cur[x] < cur[x-1] {
							return
						}
					}
				}
				for u, c := range r.counts(cur) {
					if c > 0 && math.IsInf(r.bt[i][u][c], 1) {
						return
					}
				}
				maps[i] = append(maps[i], append([]int(nil), cur...))
				return
			}
			for u := 0; u < r.k; u++ {
				cur[l] = u
				rec(l + 1)
			}
		}
		rec(0)
	}
	gm := make([][]int, r.n)
	mem := make([]float64, r.k)
	var rec func(i int)
	rec = func(i int) {
		if i == r.n {
			res.assigns++
			g, _, ok := r.batchedGraph(gm)
			if !ok {
				return
			}
			res.feasible = true
			if g.quickBound() >= res.opt {
				return
			}
			if v := g.optimum(res.opt); v < res.opt {
				res.opt = v
				res.best = nil
				for _, m := range gm {
					res.best = append(res.best, append([]int(nil), m...))
				}
			}
			return
		}
		nd := r.p.Nodes[i]
		for _, m := range maps[i] {
			cnt := r.counts(m)
			fits := true
			for u, c := range cnt {
				if c > 0 && mem[u]+nd.Weight+float64(c)*nd.Act > r.cap[u] {
					fits = false
				}
			}
			if !fits {
				continue
			}
			for u, c := range cnt {
				if c > 0 {
					mem[u] += nd.Weight + float64(c)*nd.Act
				}
			}
			gm[i] = m
			rec(i + 1)
			for u, c := range cnt {
				if c > 0 {
					mem[u] -= nd.Weight + float64(c)*nd.Act
				}
			}
		}
	}
	rec(0)
	return res
}

// optimum is the exhaustive answer for p.
func (r *refInst) optimum() refResult {
	if r.L > 1 {
		return r.batchedOpt()
	}
	return r.latencyOpt()
}

// fact is x!.
func fact(x int) float64 {
	f := 1.0
	for c := 2; c <= x; c++ {
		f *= float64(c)
	}
	return f
}

// cost is the work of the exhaustive search before pruning: the number of assignments plus,
// for each, the sequence combinations Π over resources of (tasks on it)! (memory ignored).
// It stops counting above limit. The generator keeps it small.
func (r *refInst) cost(limit float64) float64 {
	total := 0.0
	cnt := make([]int, 3*r.k)
	leaves := func(gm [][]int) float64 {
		clear(cnt)
		for i := 0; i < r.n; i++ {
			for u, c := range r.counts(gm[i]) {
				if c > 0 && r.bt[i][u][c] > 0 {
					cnt[u]++
				}
			}
		}
		if r.p.Congestion {
			for e, ed := range r.p.Edges {
				seen := map[[2]int]int{}
				for l := 0; l < r.L; l++ {
					seen[[2]int{gm[ed.From][l], gm[ed.To][l]}]++
				}
				for uv, c := range seen {
					if need, d := r.transfer(e, uv[0], uv[1], c); need && d > 0 && !math.IsInf(d, 1) {
						cnt[r.egress(uv[0])]++
						cnt[r.ingress(uv[1])]++
					}
				}
			}
		}
		x := 1.0
		for _, c := range cnt {
			x *= fact(c)
		}
		return x
	}
	gm := make([][]int, r.n)
	for i := range gm {
		gm[i] = make([]int, r.L)
	}
	var node func(i int) bool
	node = func(i int) bool {
		if i == r.n {
			total += 1 + leaves(gm)
			return total <= limit
		}
		var slot func(l int) bool
		slot = func(l int) bool {
			if l == r.L {
				return node(i + 1)
			}
			for u := 0; u < r.k; u++ {
				if i == 0 && l > 0 && u < gm[i][l-1] {
					continue
				}
				if r.L == 1 && math.IsInf(r.t[i][u], 1) {
					continue
				}
				gm[i][l] = u
				if !slot(l + 1) {
					return false
				}
			}
			return true
		}
		return slot(0)
	}
	node(0)
	return total
}
