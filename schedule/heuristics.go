package schedule

import (
	"math"
	"sort"
)

// Constructive heuristics of seed 003 §4.2 (BD, MET, Greedy, HEFT) and their batched variants
// (bMET, bGreedy, bHEFT). Each returns a placement; the caller re-evaluates it with the
// simulator. Memory is respected greedily: a node goes only where it still fits, unless it
// fits nowhere (then the least-overflowing device is used and the plan is infeasible).

// memTracker keeps the memory used per device while a heuristic places nodes.
type memTracker struct {
	in   *inst
	used []float64
}

func newMemTracker(in *inst) *memTracker {
	return &memTracker{in: in, used: make([]float64, in.numDevices)}
}

// need is the memory node i takes on device u with c granules there.
func (m *memTracker) need(i, c int) float64 {
	if c == 0 {
		return 0
	}
	nd := &m.in.problem.Nodes[i]
	return nd.Weight + float64(c)*nd.Act
}

func (m *memTracker) fits(i, u, c int) bool {
	return m.used[u]+m.need(i, c) <= m.in.capacity[u]*(1+1e-12)
}

// fitsCounts reports whether a split (granules per device) of node i fits.
func (m *memTracker) fitsCounts(i int, cnt []int) bool {
	for u, c := range cnt {
		if c > 0 && !m.fits(i, u, c) {
			return false
		}
	}
	return true
}

// over is the overflow a split would add.
func (m *memTracker) over(i int, cnt []int) float64 {
	o := 0.0
	for u, c := range cnt {
		if x := m.used[u] + m.need(i, c) - m.in.capacity[u]; c > 0 && x > 0 {
			o += x
		}
	}
	return o
}

func (m *memTracker) add(i int, cnt []int) {
	for u, c := range cnt {
		m.used[u] += m.need(i, c)
	}
}

func (m *memTracker) add1(i, u int) { m.used[u] += m.need(i, 1) }

// reachable reports whether node j can be put on v given its placed predecessors (no route
// between devices makes a transfer impossible).
func (in *inst) reachableFrom(j, v int, dev []int) bool {
	for _, e := range in.inE[j] {
		u := dev[in.problem.Edges[e].From]
		if u >= 0 && math.IsInf(in.comm(e, u, v, 1), 1) {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------------------
// Latency mode.

// bestDevice puts every node on one device (BD): the best feasible such plan, or nil.
func (in *inst) bestDevice() *Placement {
	var best *Placement
	bestMk := math.Inf(1)
	s := newLatSim(in)
	for u := range in.numDevices {
		ok := true
		mem := 0.0
		for i := range in.numNodes {
			if !in.canRun(i, u) {
				ok = false
				break
			}
			mem += in.problem.Nodes[i].Weight + in.problem.Nodes[i].Act
		}
		if !ok || mem > in.capacity[u] {
			continue
		}
		dev := make([]int, in.numNodes)
		for i := range dev {
			dev[i] = u
		}
		if mk := s.eval(dev, in.topo); mk < bestMk {
			bestMk = mk
			best = &Placement{Device: dev}
		}
	}
	return best
}

// met puts every node on the device where it runs fastest (Minimum Execution Time),
// ignoring communication, in breadth-first order.
func (in *inst) met() *Placement {
	dev := make([]int, in.numNodes)
	for i := range dev {
		dev[i] = -1
	}
	mt := newMemTracker(in)
	for _, j := range in.bfs {
		best, bestOver := -1, math.Inf(1)
		for pass := 0; pass < 2 && best < 0; pass++ {
			for v := range in.numDevices {
				if !in.canRun(j, v) || !in.reachableFrom(j, v, dev) {
					continue
				}
				if pass == 0 && !mt.fits(j, v, 1) {
					continue
				}
				o := 0.0
				if pass == 1 {
					o = math.Max(0, mt.used[v]+mt.need(j, 1)-in.capacity[v])
				}
				if best < 0 || o < bestOver || (o == bestOver && in.granuleTime[j][v] < in.granuleTime[j][best]) {
					best, bestOver = v, o
				}
			}
		}
		if best < 0 {
			best = in.fastest(j)
		}
		dev[j] = best
		mt.add1(j, best)
	}
	return &Placement{Device: dev, Order: positions(in.bfs)}
}

// fastest is the device where node i runs fastest (lowest index on ties).
func (in *inst) fastest(i int) int {
	best := -1
	for u := range in.numDevices {
		if in.canRun(i, u) && (best < 0 || in.granuleTime[i][u] < in.granuleTime[i][best]) {
			best = u
		}
	}
	return best
}

// greedy places nodes in breadth-first order, each on the device where it finishes earliest
// given the partial schedule (communication and congestion included).
func (in *inst) greedy() *Placement {
	s := newLatSim(in)
	mt := newMemTracker(in)
	for _, j := range in.bfs {
		best, bestFin, bestOver := -1, math.Inf(1), math.Inf(1)
		for pass := 0; pass < 2 && best < 0; pass++ {
			for v := range in.numDevices {
				if !in.canRun(j, v) || !in.reachableFrom(j, v, s.dev) {
					continue
				}
				o := 0.0
				if pass == 0 && !mt.fits(j, v, 1) {
					continue
				}
				if pass == 1 {
					o = math.Max(0, mt.used[v]+mt.need(j, 1)-in.capacity[v])
				}
				fin := s.place(j, v, false)
				if o < bestOver || (o == bestOver && fin < bestFin) {
					best, bestFin, bestOver = v, fin, o
				}
			}
		}
		if best < 0 {
			best = in.fastest(j)
		}
		s.place(j, best, true)
		mt.add1(j, best)
	}
	return &Placement{Device: append([]int(nil), s.dev...), Order: positions(in.bfs)}
}

// upwardRank is HEFT's priority: rank(i) = w̄_i + max over successors (c̄_ij + rank(j)).
func (in *inst) upwardRank(w []float64, c []float64) []float64 {
	rank := make([]float64, in.numNodes)
	for x := in.numNodes - 1; x >= 0; x-- {
		i := in.topo[x]
		best := 0.0
		for _, e := range in.outE[i] {
			best = math.Max(best, c[e]+rank[in.problem.Edges[e].To])
		}
		rank[i] = w[i] + best
	}
	return rank
}

// meanComm is the mean transfer time of edge e over ordered device pairs with a route.
func (in *inst) meanComm(e, c int) float64 {
	sum, cnt := 0.0, 0
	for u := range in.numDevices {
		for v := range in.numDevices {
			if u == v {
				continue
			}
			if d := in.comm(e, u, v, c); !math.IsInf(d, 1) {
				sum += d
				cnt++
			}
		}
	}
	if cnt == 0 {
		return 0
	}
	return sum / float64(cnt)
}

// slots is a device timeline of busy intervals, for insertion scheduling.
type slots struct{ s, e []float64 }

// earliest returns the earliest start ≥ ready of a gap of length d.
func (t *slots) earliest(ready, d float64) float64 {
	if d <= 0 {
		return ready
	}
	st := ready
	for x := range t.s {
		if st+d <= t.s[x] {
			return st
		}
		st = math.Max(st, t.e[x])
	}
	return st
}

func (t *slots) insert(st, d float64) {
	if d <= 0 {
		return
	}
	x := sort.SearchFloat64s(t.s, st)
	t.s = append(t.s, 0)
	t.e = append(t.e, 0)
	copy(t.s[x+1:], t.s[x:])
	copy(t.e[x+1:], t.e[x:])
	t.s[x], t.e[x] = st, st+d
}

// heft is Heterogeneous Earliest Finish Time: nodes by decreasing upward rank, each on the
// device with the earliest finish, inserted into idle gaps (communication counted, congestion
// ignored by its own estimate; the simulator judges).
func (in *inst) heft() *Placement {
	w := make([]float64, in.numNodes)
	for i := range in.numNodes {
		sum, cnt := 0.0, 0
		for u := range in.numDevices {
			if in.canRun(i, u) {
				sum += in.granuleTime[i][u]
				cnt++
			}
		}
		w[i] = sum / float64(cnt)
	}
	c := make([]float64, len(in.problem.Edges))
	for e := range c {
		c[e] = in.meanComm(e, 1)
	}
	rank := in.upwardRank(w, c)
	key := make([]float64, in.numNodes)
	for i := range key {
		key[i] = -rank[i]
	}
	order := in.kahnOrder(key)
	dev := make([]int, in.numNodes)
	for i := range dev {
		dev[i] = -1
	}
	start := make([]float64, in.numNodes)
	end := make([]float64, in.numNodes)
	tl := make([]slots, in.numDevices)
	mt := newMemTracker(in)
	for _, j := range order {
		best, bestSt, bestFin, bestOver := -1, 0.0, math.Inf(1), math.Inf(1)
		for pass := 0; pass < 2 && best < 0; pass++ {
			for v := range in.numDevices {
				if !in.canRun(j, v) || !in.reachableFrom(j, v, dev) {
					continue
				}
				o := 0.0
				if pass == 0 && !mt.fits(j, v, 1) {
					continue
				}
				if pass == 1 {
					o = math.Max(0, mt.used[v]+mt.need(j, 1)-in.capacity[v])
				}
				ready := 0.0
				for _, e := range in.inE[j] {
					i := in.problem.Edges[e].From
					ready = math.Max(ready, end[i]+in.comm(e, dev[i], v, 1))
				}
				st := tl[v].earliest(ready, in.granuleTime[j][v])
				fin := st + in.granuleTime[j][v]
				if o < bestOver || (o == bestOver && fin < bestFin) {
					best, bestSt, bestFin, bestOver = v, st, fin, o
				}
			}
		}
		if best < 0 {
			best = in.fastest(j)
			bestSt = 0
			for _, e := range in.inE[j] {
				bestSt = math.Max(bestSt, end[in.problem.Edges[e].From])
			}
			bestFin = bestSt + in.granuleTime[j][best]
		}
		dev[j], start[j], end[j] = best, bestSt, bestFin
		tl[best].insert(bestSt, in.granuleTime[j][best])
		mt.add1(j, best)
	}
	return &Placement{Device: dev, Order: start}
}

// positions turns an order into priorities (position in the order).
func positions(order []int) []float64 {
	p := make([]float64, len(order))
	for x, i := range order {
		p[i] = float64(x)
	}
	return p
}

// ---------------------------------------------------------------------------------------
// Batched mode.

// splitSet holds the candidate splits of every node and their contiguous granule maps.
type splitSet struct {
	counts [][][]int // counts[i][s][u]
	maps   [][][]int // maps[i][s][l]
}

// maxSplits caps the enumeration of splits per node.
const maxSplits = 4096

func (in *inst) splits() *splitSet {
	ss := &splitSet{counts: make([][][]int, in.numNodes), maps: make([][][]int, in.numNodes)}
	for i := range in.numNodes {
		if in.pinnedGranules != nil && in.pinnedGranules[i] != nil {
			cnt := make([]int, in.numDevices)
			for _, u := range in.pinnedGranules[i] {
				cnt[u]++
			}
			ss.counts[i] = [][]int{cnt}
			ss.maps[i] = [][]int{append([]int(nil), in.pinnedGranules[i]...)}
			continue
		}
		ss.counts[i] = in.splitsOf(i, maxSplits)
		ss.maps[i] = make([][]int, len(ss.counts[i]))
		for s, cnt := range ss.counts[i] {
			ss.maps[i][s] = contiguous(cnt, in.numGranules)
		}
	}
	return ss
}

// contiguous assigns granules to devices in device order: the first cnt[0] to device 0, …
func contiguous(cnt []int, l int) []int {
	g := make([]int, 0, l)
	for u, c := range cnt {
		for range c {
			g = append(g, u)
		}
	}
	return g
}

// splitSpan is the longest batch of a split (its duration when the devices are free) and the
// summed busy time.
func (in *inst) splitSpan(i int, cnt []int) (span, work float64) {
	for u, c := range cnt {
		if c > 0 {
			d := in.batchTime[i][u][c]
			span = math.Max(span, d)
			work += d
		}
	}
	return span, work
}

// bBestDevice runs the whole batch of every node on one device.
func (in *inst) bBestDevice() *Placement {
	var best *Placement
	bestMk := math.Inf(1)
	s := newBatchSim(in)
	for u := range in.numDevices {
		if !in.sizeOK[u][in.numGranules] {
			continue
		}
		g := make([][]int, in.numNodes)
		mem, ok := 0.0, true
		for i := range in.numNodes {
			if math.IsInf(in.batchTime[i][u][in.numGranules], 1) {
				ok = false
				break
			}
			g[i] = make([]int, in.numGranules)
			for l := range g[i] {
				g[i][l] = u
			}
			mem += in.problem.Nodes[i].Weight + float64(in.numGranules)*in.problem.Nodes[i].Act
		}
		if !ok || mem > in.capacity[u] {
			continue
		}
		if mk := s.eval(g, in.topo); mk < bestMk {
			bestMk, best = mk, &Placement{Granules: g}
		}
	}
	return best
}

// bMET gives every node the split with the shortest longest batch ("the best batch-device
// combination for each task"), ignoring communication.
func (in *inst) bMET(ss *splitSet) *Placement {
	g := make([][]int, in.numNodes)
	mt := newMemTracker(in)
	for _, j := range in.bfs {
		best := -1
		var bs, bw, bo float64
		for s, cnt := range ss.counts[j] {
			o := 0.0
			if !mt.fitsCounts(j, cnt) {
				o = mt.over(j, cnt)
			}
			span, work := in.splitSpan(j, cnt)
			if best < 0 || o < bo || (o == bo && (span < bs || (span == bs && work < bw))) {
				best, bs, bw, bo = s, span, work, o
			}
		}
		g[j] = ss.maps[j][best]
		mt.add(j, ss.counts[j][best])
	}
	return &Placement{Granules: g, Order: positions(in.bfs)}
}

// bEFT places nodes in the given order, each with the split that finishes earliest given the
// partial schedule (bGreedy with the breadth-first order, bHEFT with the upward-rank order).
func (in *inst) bEFT(ss *splitSet, order []int) *Placement {
	s := newBatchSim(in)
	s.reset()
	mt := newMemTracker(in)
	g := make([][]int, in.numNodes)
	for _, j := range order {
		best := -1
		var bf, bw, bo float64
		for x, cnt := range ss.counts[j] {
			if !in.splitReachable(j, ss.maps[j][x], g) {
				continue
			}
			o := 0.0
			if !mt.fitsCounts(j, cnt) {
				o = mt.over(j, cnt)
			}
			fin := s.placeNode(j, ss.maps[j][x], false)
			_, work := in.splitSpan(j, cnt)
			if best < 0 || o < bo || (o == bo && (fin < bf || (fin == bf && work < bw))) {
				best, bf, bw, bo = x, fin, work, o
			}
		}
		if best < 0 {
			best = 0
		}
		g[j] = ss.maps[j][best]
		s.placeNode(j, g[j], true)
		mt.add(j, ss.counts[j][best])
	}
	return &Placement{Granules: g, Order: positions(order)}
}

// splitReachable reports whether granule map gj of node j can receive from its placed
// predecessors.
func (in *inst) splitReachable(j int, gj []int, g [][]int) bool {
	for _, e := range in.inE[j] {
		gi := g[in.problem.Edges[e].From]
		if gi == nil {
			continue
		}
		for l := range gj {
			if math.IsInf(in.comm(e, gi[l], gj[l], 1), 1) {
				return false
			}
		}
	}
	return true
}

func (in *inst) bGreedy(ss *splitSet) *Placement { return in.bEFT(ss, in.bfs) }

// bHEFT orders the nodes by upward rank, with w̄ the node's best split span and c̄ the mean
// one-granule transfer, and places each with the earliest-finishing split.
func (in *inst) bHEFT(ss *splitSet) *Placement {
	w := make([]float64, in.numNodes)
	for i := range in.numNodes {
		w[i] = math.Inf(1)
		for _, cnt := range ss.counts[i] {
			span, _ := in.splitSpan(i, cnt)
			w[i] = math.Min(w[i], span)
		}
	}
	c := make([]float64, len(in.problem.Edges))
	for e := range c {
		c[e] = in.meanComm(e, 1)
	}
	rank := in.upwardRank(w, c)
	key := make([]float64, in.numNodes)
	for i := range key {
		key[i] = -rank[i]
	}
	return in.bEFT(ss, in.kahnOrder(key))
}
