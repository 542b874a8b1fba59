package partition

import (
	"math"
)

// setCost is f_d(S) for the core node set S (given as a membership stamp: inSet[v] == mark),
// computed from scratch: work on device d, every tensor that S holds some but not all members
// of, and overflow. scratch must have one entry per tensor.
func (c *core) setCost(nodes []int, inSet []uint32, mark uint32, d int, cnt []int32, cntMark []uint32) float64 {
	work, params, cut := 0.0, 0.0, 0.0
	for _, v := range nodes {
		work += c.work[d][v]
		params += c.params[v]
		for _, t := range c.incOf(v) {
			if cntMark[t] != mark {
				cntMark[t] = mark
				cnt[t] = 0
			}
			cnt[t]++
		}
	}
	for _, v := range nodes {
		for _, t := range c.incOf(v) {
			if cntMark[t] == mark && cnt[t] > 0 {
				if cnt[t] < c.tCard[t] {
					cut += c.tSize[t]
				}
				cnt[t] = 0 // count each tensor once
			}
		}
	}
	if params > c.memCap[d] {
		return math.Inf(1)
	}
	return work + cut*c.coef[d] + c.overflow(d, params)
}

// resplitter re-splits the union of two adjacent stages optimally by enumerating the ideals
// (down-closed subsets) of the sub-DAG they induce. The union C of stages a and a+1 is convex
// in the pipeline, so for every ideal I of C the plan with I in stage a and C \ I in stage
// a+1 still has every tensor flowing forward. For k = 2 and C = V this is the exact DP over
// ideals restricted to one cut; in general it is a large-neighbourhood move that single node
// moves cannot make (several nodes crossing at once). It gives up when C has more than
// maxIdeals ideals.
type resplitter struct {
	c         *core
	maxIdeals int
	mark      uint32
	inSet     []uint32
	cnt       []int32
	cntMark   []uint32
}

func newResplitter(c *core, maxIdeals int) *resplitter {
	return &resplitter{c: c, maxIdeals: maxIdeals, inSet: make([]uint32, c.n),
		cnt: make([]int32, len(c.tProd)), cntMark: make([]uint32, len(c.tProd))}
}

func (r *resplitter) cost(nodes []int, d int) float64 {
	r.mark++
	return r.c.setCost(nodes, r.inSet, r.mark, d, r.cnt, r.cntMark)
}

// pair tries to improve stages a and a+1 of (stage, device) in place; it reports whether it
// did (the pair (max, min) of the two costs decreased lexicographically).
func (r *resplitter) pair(stage, device []int, a int) bool {
	c := r.c
	var C []int
	local := make(map[int]int)
	for v, s := range stage {
		if s == a || s == a+1 {
			local[v] = len(C)
			C = append(C, v)
		}
	}
	m := len(C)
	if m < 2 {
		return false
	}
	words := (m + 63) / 64
	preds := make([][]int, m)
	for i, v := range C {
		for _, p := range c.predOf(v) {
			if j, ok := local[int(p)]; ok {
				preds[i] = append(preds[i], j)
			}
		}
	}
	da, db := device[a], device[a+1]
	var inA, inB []int
	for _, v := range C {
		if stage[v] == a {
			inA = append(inA, v)
		} else {
			inB = append(inB, v)
		}
	}
	curA, curB := r.cost(inA, da), r.cost(inB, db)
	bestA, bestB := curA, curB
	var best []uint64
	// Breadth-first enumeration of the ideals of C.
	seen := map[string]bool{}
	key := func(b []uint64) string {
		buf := make([]byte, 8*len(b))
		for i, x := range b {
			for k := 0; k < 8; k++ {
				buf[8*i+k] = byte(x >> (8 * k))
			}
		}
		return string(buf)
	}
	empty := make([]uint64, words)
	queue := [][]uint64{empty}
	seen[key(empty)] = true
	has := func(b []uint64, i int) bool { return b[i/64]&(1<<(uint(i)%64)) != 0 }
	maxW := math.Max(curA, curB)
	var sa, sb []int
	for qi := 0; qi < len(queue); qi++ {
		I := queue[qi]
		// Evaluate the split (I, C \ I) when its work can beat the current pair.
		sa, sb = sa[:0], sb[:0]
		wa, wb := 0.0, 0.0
		for i, v := range C {
			if has(I, i) {
				sa = append(sa, v)
				wa += c.work[da][v]
			} else {
				sb = append(sb, v)
				wb += c.work[db][v]
			}
		}
		if wa < maxW && wb < maxW {
			fa, fb := r.cost(sa, da), r.cost(sb, db)
			if better(fa, fb, bestA, bestB) {
				bestA, bestB = fa, fb
				best = I
				maxW = math.Max(fa, fb)
			}
		}
		if wa >= maxW {
			continue // supersets only add work to stage a
		}
		for i := 0; i < m; i++ {
			if has(I, i) {
				continue
			}
			ok := true
			for _, j := range preds[i] {
				if !has(I, j) {
					ok = false
					break
				}
			}
			if !ok {
				continue
			}
			J := append([]uint64(nil), I...)
			J[i/64] |= 1 << (uint(i) % 64)
			k := key(J)
			if seen[k] {
				continue
			}
			if len(seen) >= r.maxIdeals {
				return r.apply(stage, C, best, a, has)
			}
			seen[k] = true
			queue = append(queue, J)
		}
	}
	return r.apply(stage, C, best, a, has)
}

func (r *resplitter) apply(stage []int, C []int, best []uint64, a int, has func([]uint64, int) bool) bool {
	if best == nil {
		return false
	}
	for i, v := range C {
		if has(best, i) {
			stage[v] = a
		} else {
			stage[v] = a + 1
		}
	}
	return true
}

// flowPair tries the flow-based re-splits of stages a and a+1 (see flowSplits) over bands
// centred at 30–70% of the pair's work, and keeps the best if it improves the pair
// lexicographically.
func (r *resplitter) flowPair(stage, device []int, a int, order []int32) bool {
	c := r.c
	var inA, inB, C []int
	for v, s := range stage {
		if s == a {
			inA = append(inA, v)
		} else if s == a+1 {
			inB = append(inB, v)
		}
		if s == a || s == a+1 {
			C = append(C, v)
		}
	}
	if len(C) < 2 {
		return false
	}
	da, db := device[a], device[a+1]
	bestA, bestB := r.cost(inA, da), r.cost(inB, db)
	var bands [][2]float64
	for _, centre := range []float64{0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7} {
		for _, half := range []float64{0.1, 0.25} {
			bands = append(bands, [2]float64{centre - half, centre + half})
		}
	}
	var best []int
	inD := make([]bool, c.n)
	for _, D := range c.flowSplits(stage, device, a, order, bands) {
		for _, v := range C {
			inD[v] = false
		}
		for _, v := range D {
			inD[v] = true
		}
		var sa, sb []int
		for _, v := range C {
			if inD[v] {
				sa = append(sa, v)
			} else {
				sb = append(sb, v)
			}
		}
		fa, fb := r.cost(sa, da), r.cost(sb, db)
		if better(fa, fb, bestA, bestB) {
			bestA, bestB, best = fa, fb, D
		}
	}
	if best == nil {
		return false
	}
	for _, v := range C {
		inD[v] = false
	}
	for _, v := range best {
		inD[v] = true
	}
	for _, v := range C {
		if inD[v] {
			stage[v] = a
		} else {
			stage[v] = a + 1
		}
	}
	return true
}
