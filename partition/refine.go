package partition

import (
	"context"
	"math"
)

// refiner improves a plan beyond slicing a single order: it moves single nodes between stages
// while keeping every tensor flowing forward (so the quotient stays acyclic). A move of v from
// stage a to stage b changes only f(P_a) and f(P_b); it is accepted when the pair
// (max, min) of the two new costs is lexicographically smaller than before, which strictly
// decreases the sorted vector of all stage costs, so the search terminates and never
// increases the bottleneck. This escapes the worst case of Lemma B.2 (seed 000 §B), where
// every slicing of the bad order costs k·OPT but single moves reach OPT.
type refiner struct {
	c      *core
	stage  []int
	device []int
	work   []float64
	params []float64
	cut    []float64
	cost   []float64
	// cluster-move scratch
	inM   []uint32
	mark  uint32
	cnt   []int32
	cntM  []uint32
	stack []int
}

func newRefiner(c *core, stage, device []int) *refiner {
	K := len(device)
	r := &refiner{c: c, stage: append([]int(nil), stage...), device: append([]int(nil), device...),
		work: make([]float64, K), params: make([]float64, K), cut: make([]float64, K), cost: make([]float64, K)}
	for v := 0; v < c.n; v++ {
		s := r.stage[v]
		r.work[s] += c.work[r.device[s]][v]
		r.params[s] += c.params[v]
	}
	var seen []int
	for t := range c.tProd {
		seen = seen[:0]
		first := r.stage[c.tProd[t]]
		all := true
		for _, g := range c.consOf(t) {
			if r.stage[g] != first {
				all = false
			}
		}
		if all {
			continue
		}
		seen = append(seen, first)
		for _, g := range c.consOf(t) {
			s := r.stage[g]
			dup := false
			for _, x := range seen {
				if x == s {
					dup = true
					break
				}
			}
			if !dup {
				seen = append(seen, s)
			}
		}
		for _, s := range seen {
			r.cut[s] += c.tSize[t]
		}
	}
	for s := range r.cost {
		r.cost[s] = r.stageCost(s, r.work[s], r.params[s], r.cut[s])
	}
	r.inM = make([]uint32, c.n)
	r.cnt = make([]int32, len(c.tProd))
	r.cntM = make([]uint32, len(c.tProd))
	return r
}

// cluster returns v together with its descendants (forward) or ancestors (backward) that
// share v's stage: the smallest set containing v that can move to the next (previous) stage
// without a tensor flowing backwards. nil when larger than limit.
func (r *refiner) cluster(v int, forward bool, limit int) []int {
	c := r.c
	a := r.stage[v]
	r.mark++
	M := []int{v}
	r.inM[v] = r.mark
	r.stack = append(r.stack[:0], v)
	for len(r.stack) > 0 {
		x := r.stack[len(r.stack)-1]
		r.stack = r.stack[:len(r.stack)-1]
		next := c.succOf(x)
		if !forward {
			next = c.predOf(x)
		}
		for _, y := range next {
			if r.stage[y] == a && r.inM[y] != r.mark {
				r.inM[y] = r.mark
				M = append(M, int(y))
				if len(M) > limit {
					return nil
				}
				r.stack = append(r.stack, int(y))
			}
		}
	}
	return M
}

// clusterDelta evaluates moving the set M (marked in inM with r.mark) from stage a to b:
// the new costs of both stages.
func (r *refiner) clusterDelta(M []int, a, b int) (na, nb float64) {
	c := r.c
	da, db := r.device[a], r.device[b]
	wa, wb := r.work[a], r.work[b]
	pa, pb := r.params[a], r.params[b]
	for _, x := range M {
		wa -= c.work[da][x]
		wb += c.work[db][x]
		pa -= c.params[x]
		pb += c.params[x]
	}
	dA, dB := 0.0, 0.0
	m := r.mark
	for _, x := range M {
		for _, t := range c.incOf(x) {
			if r.cntM[t] == m {
				continue // tensor already counted
			}
			r.cntM[t] = m
			card := int(c.tCard[t])
			ca, cb, inMoved := 0, 0, 0
			count := func(g int) {
				s := r.stage[g]
				if r.inM[g] == m {
					inMoved++
				}
				if s == a {
					ca++
				} else if s == b {
					cb++
				}
			}
			count(int(c.tProd[t]))
			for _, g := range c.consOf(int(t)) {
				count(int(g))
			}
			charged := func(x int) float64 {
				if x > 0 && x < card {
					return 1
				}
				return 0
			}
			sz := c.tSize[t]
			dA += sz * (charged(ca-inMoved) - charged(ca))
			dB += sz * (charged(cb+inMoved) - charged(cb))
		}
	}
	return r.stageCost(a, wa, pa, r.cut[a]+dA), r.stageCost(b, wb, pb, r.cut[b]+dB)
}

// applyCluster moves M (just evaluated by clusterDelta) from a to b.
func (r *refiner) applyCluster(M []int, a, b int) {
	for _, x := range M {
		r.apply(x, b)
	}
}

func (r *refiner) stageCost(s int, work, params, cut float64) float64 {
	d := r.device[s]
	if params > r.c.memCap[d] {
		return math.Inf(1)
	}
	cc := cut * r.c.coef[d]
	if cc < 0 {
		cc = 0
	}
	return work + cc + r.c.overflow(d, params)
}

func (r *refiner) objective() float64 {
	m := 0.0
	for _, x := range r.cost {
		if x > m {
			m = x
		}
	}
	return m
}

// cutDelta returns the change of cut bytes of stages a and b when v moves from a to b.
func (r *refiner) cutDelta(v, a, b int) (da, db float64) {
	c := r.c
	for _, t := range c.incOf(v) {
		card := int(c.tCard[t])
		ca, cb := 0, 0
		count := func(s int) {
			if s == a {
				ca++
			} else if s == b {
				cb++
			}
		}
		count(r.stage[c.tProd[t]])
		for _, g := range c.consOf(int(t)) {
			count(r.stage[g])
		}
		charged := func(x int) float64 {
			if x > 0 && x < card {
				return 1
			}
			return 0
		}
		sz := c.tSize[t]
		da += sz * (charged(ca-1) - charged(ca))
		db += sz * (charged(cb+1) - charged(cb))
	}
	return da, db
}

// window returns the stages v may move to: from the latest stage of its predecessors to the
// earliest stage of its successors.
func (r *refiner) window(v int) (lo, hi int) {
	lo, hi = 0, len(r.device)-1
	for _, u := range r.c.predOf(v) {
		if s := r.stage[u]; s > lo {
			lo = s
		}
	}
	for _, w := range r.c.succOf(v) {
		if s := r.stage[w]; s < hi {
			hi = s
		}
	}
	return lo, hi
}

func better(newA, newB, oldA, oldB float64) bool {
	nmax, nmin := math.Max(newA, newB), math.Min(newA, newB)
	omax, omin := math.Max(oldA, oldB), math.Min(oldA, oldB)
	tol := 1e-12 * math.Max(omax, 1e-300)
	if nmax < omax-tol {
		return true
	}
	return nmax <= omax+tol && nmin < omin-tol
}

// run applies improving moves until none is left, maxMoves is reached or ctx ends. It
// returns the number of moves made.
func (r *refiner) run(ctx context.Context, maxMoves int) int {
	c := r.c
	moves := 0
	for improved := true; improved && moves < maxMoves; {
		improved = false
		if ctx.Err() != nil {
			return moves
		}
		for v := 0; v < c.n && moves < maxMoves; v++ {
			a := r.stage[v]
			lo, hi := r.window(v)
			bestB, bestA, bestBc := -1, r.cost[a], 0.0
			for b := lo; b <= hi; b++ {
				if b == a {
					continue
				}
				da, db := r.cutDelta(v, a, b)
				na := r.stageCost(a, r.work[a]-c.work[r.device[a]][v], r.params[a]-c.params[v], r.cut[a]+da)
				nb := r.stageCost(b, r.work[b]+c.work[r.device[b]][v], r.params[b]+c.params[v], r.cut[b]+db)
				refA, refB := r.cost[a], r.cost[b]
				if bestB >= 0 {
					// compare against the best move found so far for v
					if !better(na, nb, bestA, bestBc) || !better(na, nb, refA, refB) {
						continue
					}
				} else if !better(na, nb, refA, refB) {
					continue
				}
				bestB, bestA, bestBc = b, na, nb
			}
			if bestB >= 0 {
				r.apply(v, bestB)
				moves++
				improved = true
				continue
			}
			// Cluster moves: v with its same-stage descendants to the next stage, or with
			// its same-stage ancestors to the previous one.
			for _, fwd := range []bool{true, false} {
				b := a + 1
				if !fwd {
					b = a - 1
				}
				if b < 0 || b >= len(r.device) {
					continue
				}
				M := r.cluster(v, fwd, 64)
				if len(M) < 2 {
					continue
				}
				na, nb := r.clusterDelta(M, a, b)
				if better(na, nb, r.cost[a], r.cost[b]) {
					r.applyCluster(M, a, b)
					moves++
					improved = true
					break
				}
			}
		}
	}
	return moves
}

func (r *refiner) apply(v, b int) {
	c := r.c
	a := r.stage[v]
	da, db := r.cutDelta(v, a, b)
	r.work[a] -= c.work[r.device[a]][v]
	r.work[b] += c.work[r.device[b]][v]
	r.params[a] -= c.params[v]
	r.params[b] += c.params[v]
	r.cut[a] += da
	r.cut[b] += db
	r.stage[v] = b
	r.cost[a] = r.stageCost(a, r.work[a], r.params[a], r.cut[a])
	r.cost[b] = r.stageCost(b, r.work[b], r.params[b], r.cut[b])
}

// stageOrder returns a topological order in which the stages of the plan are contiguous and
// in pipeline order (Kahn with priority = −stage, ties by prior position), so that slicing it
// can reproduce the plan (seed 000 Theorem 4.3) or improve on it.
func (c *core) stageOrder(stage []int, prior []int32, ks *kahnScratch) []int32 {
	K := 0
	for _, s := range stage {
		if s+1 > K {
			K = s + 1
		}
	}
	pos := make([]float64, c.n)
	for i, v := range prior {
		pos[v] = float64(i)
	}
	prio := make([]float64, c.n)
	n := float64(c.n)
	for v := 0; v < c.n; v++ {
		prio[v] = float64(K-stage[v]) + 0.5*(n-pos[v])/(n+1)
	}
	return c.kahn(prio, ks, make([]int32, 0, c.n))
}
