package partition

import (
	"math"
	"sort"
)

// Bound names, as reported in Plan.BoundMethod and Plan.Bounds.
const (
	BoundSimple          = "simple"           // Lemma 3.3
	BoundNode            = "comm-node"        // communication-aware node bound (ours, proved below)
	BoundCut             = "comm-k"           // its k-aware extension (ours, proved below)
	BoundMinBlock        = "min-block"        // max_v min_{S∋v} f(S) by minimum cuts (ours, mincut.go)
	BoundBottleneck      = "bottleneck"       // three-superblock MIP, seed 000 §3.2
	BoundBottleneckGuess = "bottleneck-guess" // k MIPs, seed 000 §3.3
	BoundExact           = "exact"            // exact MIP, seed 000 §3.1 / Figure 3
	BoundHeuristic       = "optimal"          // lower bound equal to a plan value proved by a MIP
)

// activeDevices lists the devices with a positive count.
func (c *core) activeDevices() []int {
	var ds []int
	for d, k := range c.counts {
		if k > 0 {
			ds = append(ds, d)
		}
	}
	return ds
}

// simpleBound is Lemma 3.3 (seed 000 Eq. (13)) on the contracted nodes:
// L = max(max_v work(v), Σ_v work(v)/K). Some block holds the heaviest node, and the K blocks
// together hold all the work, so some block has work ≥ L (a bound on work, as Eq. (14) needs).
// For heterogeneous pipelines work(v) is the smallest work of v over the devices, which keeps
// both arguments valid.
func (c *core) simpleBound() float64 {
	K := float64(c.stages())
	W, m := 0.0, 0.0
	for _, w := range c.minWork {
		W += w
		if w > m {
			m = w
		}
	}
	return math.Max(m, W/K)
}

// nodeBound is the communication-aware bound of highs-mtpp.md, generalised to several output
// tensors per node and to devices:
//
//	node_d(v) = work_d(v)
//	          + Σ_{p producer of v} min(work_d(p), coef_d·Σ_{t: p→v} size(t))           (inputs)
//	          + min_{I ⊆ out(v)} ( coef_d·Σ_{t ∉ I} size(t) + work_d(∪_{t∈I} C(t)) )   (outputs)
//
// Proof. Let S be the block holding v, on device d. For a producer p of v: if p ∈ S the block
// pays work(p); otherwise every tensor from p read by v enters S and is paid once (Eq. (1)).
// For v's outputs, let I be the set of output tensors whose consumers all lie in S: S pays
// the work of their consumers; every other output tensor has a consumer outside S, so it is
// cut and S pays it once. Producers of v are ancestors and consumers descendants of v in a
// DAG, so no node or tensor is counted twice, and all other terms of f(S) are ≥ 0. Hence
// f(S) ≥ node_d(v), and OPT ≥ max_v min_{d usable} node_d(v).
func (c *core) nodeBound() float64 {
	best := 0.0
	for v := 0; v < c.n; v++ {
		if b := c.nodeBoundOf(v); b > best {
			best = b
		}
	}
	return best
}

func (c *core) nodeBoundOf(v int) float64 {
	m := math.Inf(1)
	for _, d := range c.activeDevices() {
		if b := c.nodeBoundOn(v, d); b < m {
			m = b
		}
	}
	return m
}

// producerSizes returns, for node v, each producer p of a tensor v reads with the total size
// of the tensors from p that v reads (producers ascending).
func (c *core) producerSizes(v int, also int) (prods []int, sizes []float64) {
	idx := map[int]int{}
	for _, t := range c.incOf(v) {
		p := int(c.tProd[t])
		if p == v || p == also {
			continue
		}
		if i, ok := idx[p]; ok {
			sizes[i] += c.tSize[t]
			continue
		}
		idx[p] = len(prods)
		prods = append(prods, p)
		sizes = append(sizes, c.tSize[t])
	}
	return prods, sizes
}

func (c *core) nodeBoundOn(v, d int) float64 {
	w := c.work[d]
	coef := c.coef[d]
	b := w[v]
	prods, sizes := c.producerSizes(v, -1)
	for i, p := range prods {
		b += math.Min(w[p], coef*sizes[i])
	}
	return b + c.outputBound(v, d)
}

// outputBound is min_I (coef·Σ_{t∉I} size(t) + work(∪_{t∈I} C(t))) over subsets I of v's
// output tensors; exact for up to 12 outputs, otherwise the relaxation
// min(coef·Σ size, min_t work(C(t))), which is ≤ every term (I = ∅ gives the first, any
// non-empty I pays at least one tensor's consumers).
func (c *core) outputBound(v, d int) float64 {
	w := c.work[d]
	coef := c.coef[d]
	var outs []int
	for _, t := range c.incOf(v) {
		if int(c.tProd[t]) == v {
			outs = append(outs, int(t))
		}
	}
	if len(outs) == 0 {
		return 0
	}
	if len(outs) > 12 {
		total, minC := 0.0, math.Inf(1)
		for _, t := range outs {
			total += coef * c.tSize[t]
			s := 0.0
			for _, g := range c.consOf(t) {
				s += w[g]
			}
			minC = math.Min(minC, s)
		}
		return math.Min(total, minC)
	}
	best := math.Inf(1)
	inU := map[int32]bool{}
	for mask := 0; mask < 1<<len(outs); mask++ {
		for k := range inU {
			delete(inU, k)
		}
		val := 0.0
		for i, t := range outs {
			if mask&(1<<i) == 0 {
				val += coef * c.tSize[t]
				continue
			}
			for _, g := range c.consOf(t) {
				if !inU[g] {
					inU[g] = true
					val += w[g]
				}
			}
		}
		best = math.Min(best, val)
	}
	return best
}

// pairBound bounds f(S) for any block S holding both u and its consumer w, on device d:
// work(u) + work(w) + Σ_{x producer of u or w, x ≠ u} min(work(x), coef·Σ_{t: x→{u,w}} size(t)).
// The proof is the input half of nodeBound applied to the pair: every such x is an ancestor
// of u or w, distinct from both, and pays either its work (inside) or its tensors into S once.
func (c *core) pairBound(u, w, d int) float64 {
	wk := c.work[d]
	coef := c.coef[d]
	b := wk[u] + wk[w]
	idx := map[int]int{}
	seen := map[int32]bool{} // a tensor read by both u and w enters S once
	var sizes []float64
	var prods []int
	add := func(v, skip int) {
		for _, t := range c.incOf(v) {
			p := int(c.tProd[t])
			if p == v || p == skip || seen[t] {
				continue
			}
			seen[t] = true
			if i, ok := idx[p]; ok {
				sizes[i] += c.tSize[t]
				continue
			}
			idx[p] = len(prods)
			prods = append(prods, p)
			sizes = append(sizes, c.tSize[t])
		}
	}
	add(u, w)
	add(w, u)
	for i, p := range prods {
		b += math.Min(wk[p], coef*sizes[i])
	}
	return b
}

// cutBound is the k-aware extension of nodeBound (highs-mtpp.md):
//
// Proof. Let T be the value of any plan. If pair(u,w) > T for an edge u → w, then u and w lie
// in different blocks, so every tensor t from u read by w is cut; call such tensors forced
// at T (t is forced iff τ_t = max_{w ∈ C(t)} min_d pair_d(u,w) > T). A cut tensor is paid by
// its producer's block and by at least one other (a consumer's) block, each at a coefficient
// ≥ coef_min, and every node's work is paid at least at its smallest work. Summing Eq. (3) over
// the K blocks, K·T ≥ Σ_b f(P_b) ≥ Σ_v minWork(v) + 2·coef_min·Σ_{t forced at T} size(t).
// The right side is non-increasing in T, so the set of T satisfying it (and T ≥ base, any
// valid bound) is upward closed, and its infimum is a lower bound on OPT.
func (c *core) cutBound(base float64) float64 {
	K := float64(c.stages())
	devs := c.activeDevices()
	coefMin := math.Inf(1)
	for _, d := range devs {
		coefMin = math.Min(coefMin, c.coef[d])
	}
	W := 0.0
	for _, w := range c.minWork {
		W += w
	}
	if coefMin == 0 || len(c.tProd) == 0 {
		return math.Max(base, W/K)
	}
	type forced struct{ tau, size float64 }
	fs := make([]forced, 0, len(c.tProd))
	for t := range c.tProd {
		u := int(c.tProd[t])
		tau := 0.0
		for _, w := range c.consOf(t) {
			pb := math.Inf(1)
			for _, d := range devs {
				pb = math.Min(pb, c.pairBound(u, int(w), d))
			}
			tau = math.Max(tau, pb)
		}
		fs = append(fs, forced{tau, c.tSize[t]})
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].tau > fs[j].tau })
	// F(T) = Σ_{τ > T} size. Walk intervals from high T to low, remembering the lowest T that
	// satisfies K·T ≥ W + 2·coef·F(T); by upward closure the first failing interval ends it.
	F := 0.0
	best := math.Max(base, W/K) // interval [τ_1, ∞): F = 0
	if len(fs) > 0 && best < fs[0].tau {
		best = math.Max(best, fs[0].tau)
	}
	i := 0
	for i < len(fs) {
		hi := fs[i].tau // F increases below hi
		for i < len(fs) && fs[i].tau == hi {
			F += fs[i].size
			i++
		}
		lo := math.Inf(-1)
		if i < len(fs) {
			lo = fs[i].tau
		}
		// interval [lo, hi) has this F
		need := math.Max(base, (W+2*coefMin*F)/K)
		cand := math.Max(need, lo)
		if cand < hi {
			best = cand
			continue
		}
		break
	}
	return best
}
