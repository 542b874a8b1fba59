package schedule

import "math"

// Chain contraction for the capped module DP (bounds_cap.go). A chain node is a node of the
// non-free sub-DAG with exactly one in-edge and one out-edge (RandWire's ReLU and depthwise
// convolutions, the Mul before each aggregation: two thirds of its nodes). The capped search
// spends its nodes placing openers along such chains, where each position is another leaf;
// contracting them shrinks RandWire WS's sub-DAG from 539 to 183 nodes and its capped search
// from 259 million branch-and-bound nodes to a few million.
//
// The contraction. A maximal chain y_1 … y_k between a producer p and a consumer c (neither a
// chain node) is replaced by one chain edge p → c; c stands for c and the chains into it
// (the merged node). The search (blockBB.chainModes) places the merged node on w; a chain
// edge from p on a_j = w stays, one from a_j ≠ w switches. A plan x of the original
// restricts to the placement x' of the kept nodes, and x' is one of the placements the
// search sees, with three kinds of chain in x:
//
//   - straight (a_j = w, every y on w): exactly as x' counts it, the chain's work on w, no
//     transfer, no opener;
//   - switch (a_j ≠ w): the last crossing into w along p, y_1 … y_k, c ends at a chain node
//     or c on w, which opens a stage;
//   - detour (a_j = w, some y off w): the first y off w, on e ≠ w, opens a stage, and so does
//     the node where the chain returns to w (a chain node, or c).
//
// Openers. x' counts one opener on w for a merged node when a chain switches or an ordinary
// in-edge crosses; map it to c when c opens in x, else to the node that ends the last
// crossing into w of a switching chain (c does not open, so that is a chain node). Every
// other node opens in x' exactly when it does in x (its in-edges are the original ones; a
// chain edge ends only at c). The map is injective and keeps devices, so x has at least x'
// 's openers on every device; a detour's openers are beyond them (uncounted): its first node
// off w (on a device other than w), and, when the merged node opens in neither (one staying
// chain, no crossing), its return to w (on w).
//
// Paths. c's end in x is ≥ its inputs' arrivals, plus its call when c opens, plus t_c. A
// chain's arrival at c, measured from p's end, is ≥ a0[a][w] when y_k runs on w (c does not
// open for it) and ≥ a1[a][w] when y_k runs elsewhere (then c opens): the least such times
// over every assignment of the chain's nodes to devices, each crossing paying its transfer
// and the call of the node it ends (chainTimes). So c ends ≥ the least of "no chain ends off
// w" (the arrivals with a0, the call only when an ordinary edge crosses) and "some chain
// does" (the arrivals with min(a0, a1), plus the call), for straight, switch and detour
// chains alike. Block tails price a chain edge from a to b at min(a0[a][b], a1[a][b] + c_b)
// (chainEdge.lo), as does machineLB's path from the producer.
//
// Loads. A switching chain's work counts nowhere, a staying chain's on w: exact for straight
// chains. For detours the leaves give it back (relief, blockBB.reliefLeaves): a leaf of
// opener vector o also stands for the plans that detour some of its staying chains, whose
// openers are o plus the detours' uncounted ones; it is recorded at every vector o + δ within
// the budget with the bound of the plans whose uncounted openers are δ: loads less the
// detoured chains' work (the most of it δ's openers allow: one off w per detour, and one on w
// for a chain that detours into a merged node that opens in neither) plus a call for each
// opener of δ (each is a stage of its own); one-machine terms of each device's own tasks in
// their window less that work, and of all its tasks, the detours' included, in the window
// widened to the chains' producers' ends and consumers' tails, with those calls; and at
// least P_j = pf_j + the chain's least detour (chainEdge.detour) + t_c + c's tail for each
// detoured chain j (c ends no earlier; the detour's least time as a0, a1 over the
// assignments that leave w).
// A subtree's bound takes off the most the openers it has left allow (blockBB.relief). The
// leaf's record at o itself is its own bound (no detour: straight is what x' counts).
//
// Congestion. A switching chain edge from a to b counts comm'(a, b) in b's ingress and a's
// egress, the least transfer time of any of the chain's edges into b from elsewhere or out of
// a to elsewhere (chainComm): some edge of the chain crosses into b, and some out of a.
//
// So each record is ≤ LB_b of every plan x it stands for, at a vector ≤ x's openers, and the
// capped DP over the records bounds the plans within the cap.

// chainEdge is what a chain edge of the contracted problem stands for.
type chainEdge struct {
	nodes    []int       // the chain's nodes y_1 … y_k in the problem it was contracted from
	edges    []int       // its k+1 edges there: p → y_1, …, y_k → c
	times    [][]float64 // times[x][w]: y_{x+1}'s time on w
	straight []float64   // straight[w]: Σ t_{y,w} (+Inf: some y cannot run on w)
	a0, a1   [][]float64 // a0[a][b], a1[a][b]: see the comment above
	// detour[w]: the least time from the producer's end on w until the consumer on w can
	// start its own work, over the assignments that take some chain node off w (a1's
	// case with the consumer's call).
	detour []float64
}

// lo is the least time from the end of the chain's producer on a to the start of its
// consumer's own time on b, the consumer's call included when the chain forces it (block
// tails, machineLB's paths): min(a0, a1 + c_b).
func (ce *chainEdge) lo(a, b int, call float64) float64 {
	return min(ce.a0[a][b], ce.a1[a][b]+call)
}

// chainNode reports whether node i of in is a chain node: one non-free in-edge and one
// non-free out-edge (no free ones: the sub-DAG has none), and every device can run it (a
// chain that cannot stay on its producer's device would take openers the leaves do not
// count: relief's detours are optional).
func (in *inst) chainNode(i int) bool {
	if len(in.inE[i]) != 1 || len(in.outE[i]) != 1 || in.free[in.inE[i][0]] || in.free[in.outE[i][0]] {
		return false
	}
	for _, t := range in.granuleTime[i] {
		if math.IsInf(t, 1) {
			return false
		}
	}
	return true
}

// contractChains returns the problem with its maximal chains contracted into chain edges
// (in.chains), and the original index of each kept node; nil when there is no chain node or
// the instance has free edges (the capped DP contracts its non-free sub-DAG).
func (in *inst) contractChains() (*inst, []int) {
	p := in.problem
	for e := range p.Edges {
		if in.free[e] {
			return nil, nil
		}
	}
	keep := make([]int, in.numNodes)
	var orig []int
	for i := range in.numNodes {
		keep[i] = -1
		if !in.chainNode(i) {
			keep[i] = len(orig)
			orig = append(orig, i)
		}
	}
	if len(orig) == in.numNodes || len(orig) == 0 {
		return nil, nil
	}
	q := &Problem{Devices: p.Devices, Links: p.Links, Congestion: p.Congestion, GranuleSize: p.GranuleSize}
	for _, i := range orig {
		q.Nodes = append(q.Nodes, p.Nodes[i])
	}
	var chains []*chainEdge
	for e, ed := range p.Edges {
		if keep[ed.From] < 0 {
			continue // inside a chain: its chain edge starts at the chain's producer
		}
		c := ed
		c.From = keep[ed.From]
		var ce *chainEdge
		if keep[ed.To] < 0 {
			ce = &chainEdge{edges: []int{e}}
			y := ed.To
			for keep[y] < 0 {
				ce.nodes = append(ce.nodes, y)
				f := in.outE[y][0]
				ce.edges = append(ce.edges, f)
				y = p.Edges[f].To
			}
			c.To = keep[y]
			in.chainTimes(ce)
			c.Time, c.Bytes = in.chainComm(ce), 0
		} else {
			c.To = keep[ed.To]
		}
		q.Edges = append(q.Edges, c)
		chains = append(chains, ce)
	}
	s, err := prepare(q)
	if err != nil {
		return nil, nil
	}
	s.sourceCalls = in.sourceCalls
	s.chains = chains
	for e, ce := range chains {
		if ce != nil {
			// A chain edge stands for transfers (its producer's device matters) even where
			// its least transfer times are all 0.
			s.free[e] = false
			s.source[q.Edges[e].To] = false
		}
	}
	return s, orig
}

// chainTimes fills ce's straight, a0, a1 and detour by one shortest path over the chain's
// nodes and devices per producer device a: d[s][f] is the least time from the producer's
// end (on a) to the end of the current node on s, each crossing paying its transfer and the
// call of the node it ends, among the assignments whose first node off a runs on f (f = k:
// none yet). a0 and a1 take every f; detour[a], the producer and the consumer both on a,
// only the assignments that leave a (the last node on a, or off it and then the transfer
// and the consumer's call).
func (in *inst) chainTimes(ce *chainEdge) {
	k := in.numDevices
	inf := math.Inf(1)
	ce.straight = make([]float64, k)
	for _, y := range ce.nodes {
		ce.times = append(ce.times, in.granuleTime[y])
		for w := range k {
			ce.straight[w] += in.granuleTime[y][w]
		}
	}
	ce.a0, ce.a1, ce.detour = make([][]float64, k), make([][]float64, k), make([]float64, k)
	d, nd := make([]float64, k*(k+1)), make([]float64, k*(k+1)) // d[s*(k+1)+f]
	last := ce.edges[len(ce.edges)-1]
	for a := range k {
		for x := range d {
			d[x] = inf
		}
		d[a*(k+1)+k] = 0
		for x, y := range ce.nodes {
			f := ce.edges[x]
			for z := range nd {
				nd[z] = inf
			}
			for s := range k {
				for fo := range k + 1 {
					c := d[s*(k+1)+fo]
					if math.IsInf(c, 1) {
						continue
					}
					for e := range k {
						t := in.granuleTime[y][e]
						if math.IsInf(t, 1) {
							continue
						}
						v := c + t
						if s != e {
							v += in.comm(f, s, e, 1) + in.callCost[e]
						}
						g := fo
						if g == k && e != a {
							g = e
						}
						nd[e*(k+1)+g] = min(nd[e*(k+1)+g], v)
					}
				}
			}
			d, nd = nd, d
		}
		ce.a0[a], ce.a1[a] = make([]float64, k), make([]float64, k)
		for b := range k {
			ce.a0[a][b], ce.a1[a][b] = inf, inf
			for fo := range k + 1 {
				ce.a0[a][b] = min(ce.a0[a][b], d[b*(k+1)+fo])
				for e := range k {
					if e != b {
						ce.a1[a][b] = min(ce.a1[a][b], d[e*(k+1)+fo]+in.comm(last, e, b, 1))
					}
				}
			}
		}
		ce.detour[a] = inf
		for fo := range k { // the assignments that leave a
			ce.detour[a] = min(ce.detour[a], d[a*(k+1)+fo])
			for e := range k {
				if e != a {
					ce.detour[a] = min(ce.detour[a], d[e*(k+1)+fo]+in.comm(last, e, a, 1)+in.callCost[a])
				}
			}
		}
	}
}

// chainComm is the chain edge's transfer-time matrix for the congestion loads: from a to b,
// the least transfer of any of the chain's edges into b from another device or out of a to
// another device (some edge of the chain crosses into b, and some out of a).
func (in *inst) chainComm(ce *chainEdge) [][]float64 {
	k := in.numDevices
	m := make([][]float64, k)
	for a := range k {
		m[a] = make([]float64, k)
		for b := range k {
			if a == b {
				continue
			}
			v := math.Inf(1)
			for _, f := range ce.edges {
				for e := range k {
					if e != b {
						v = min(v, in.comm(f, e, b, 1))
					}
					if e != a {
						v = min(v, in.comm(f, a, e, 1))
					}
				}
			}
			m[a][b] = v
		}
	}
	return m
}

// expandChains places the chain nodes of a placement of the contracted problem (devOf: a
// contracted node's device), with as many openers on each device as the placement has: a
// chain between producer and consumer on the same device runs there; one from another
// device into a consumer that reads no other edge across switches once, where its nodes'
// times add up least; into a consumer that opens anyway, it runs on its producer's device
// (the consumer's stage is the one opener). The planner judges the result like any
// candidate. It calls set(chain node, device), with the node's index in the problem the
// chains were contracted from.
func (in *inst) expandChains(devOf func(int) int, set func(int, int)) {
	for e, ce := range in.chains {
		if ce == nil {
			continue
		}
		ed := in.problem.Edges[e]
		a, b := devOf(ed.From), devOf(ed.To)
		k := len(ce.nodes)
		at := k // nodes before at run on a, the rest on b
		alone := true
		for _, f := range in.inE[ed.To] {
			alone = alone && (f == e || devOf(in.problem.Edges[f].From) == b)
		}
		if a != b && alone {
			best := math.Inf(1)
			for s := 0; s <= k; s++ {
				v := 0.0
				for x, t := range ce.times {
					if x < s {
						v += t[a]
					} else {
						v += t[b]
					}
				}
				if v < best {
					best, at = v, s
				}
			}
		}
		for x, y := range ce.nodes {
			if x < at {
				set(y, a)
			} else {
				set(y, b)
			}
		}
	}
}
