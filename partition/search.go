package partition

import (
	"context"
	"math"
	"math/rand"
	"sort"
	"sync"
)

// BRKGAOptions are the parameters of the biased random-key genetic algorithm (Gonçalves &
// Resende 2011) used to search node priorities for SliceGraph (seed 000 §4.2, Algorithm 2).
// Zero fields take the defaults in brackets.
type BRKGAOptions struct {
	Population     int     // chromosomes per generation [100, as in seed 000]
	Generations    int     // generations [100: 10^4 evaluations, seed 000's brkga-10000]
	EliteFraction  float64 // share of the population kept as elite [0.20]
	MutantFraction float64 // share replaced by fresh random chromosomes [0.15]
	EliteBias      float64 // probability that a child inherits the elite parent's key [0.70]
}

func (o BRKGAOptions) withDefaults() BRKGAOptions {
	if o.Population <= 0 {
		o.Population = 100
	}
	if o.Generations <= 0 {
		o.Generations = 100
	}
	if o.EliteFraction <= 0 || o.EliteFraction >= 1 {
		o.EliteFraction = 0.20
	}
	if o.MutantFraction < 0 || o.MutantFraction >= 1 || o.MutantFraction == 0 {
		o.MutantFraction = 0.15
	}
	if o.EliteBias <= 0 || o.EliteBias >= 1 {
		o.EliteBias = 0.70
	}
	return o
}

// decoder evaluates chromosomes in parallel: worker w owns scratch state w. fitness(w, keys,
// bound) must be deterministic and return +Inf when the value is ≥ bound (or exact below).
type decoder struct {
	workers int
	fitness func(w int, keys []float64, bound float64) float64
}

// evalAll evaluates keys[i] for i in idx with the same bound, in parallel, writing fit[i].
// Results do not depend on the number of workers.
func (d *decoder) evalAll(ctx context.Context, keys [][]float64, idx []int, fit []float64, bound float64) {
	if len(idx) == 0 {
		return
	}
	w := d.workers
	if w > len(idx) {
		w = len(idx)
	}
	if w <= 1 {
		for _, i := range idx {
			if ctx.Err() != nil {
				fit[i] = math.Inf(1)
				continue
			}
			fit[i] = d.fitness(0, keys[i], bound)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int, len(idx))
	for _, i := range idx {
		next <- i
	}
	close(next)
	for k := 0; k < w; k++ {
		wg.Add(1)
		go func(worker int) {
			defer wg.Done()
			for i := range next {
				if ctx.Err() != nil {
					fit[i] = math.Inf(1)
					continue
				}
				fit[i] = d.fitness(worker, keys[i], bound)
			}
		}(k)
	}
	wg.Wait()
}

// brkgaResult is the best chromosome found.
type brkgaResult struct {
	keys  []float64
	value float64
	evals int
}

// brkga minimises fitness over random keys in [0,1)^n. seeds are chromosomes put into the
// first population (e.g. encodings of good orders). onBest is called (from the calling
// goroutine) whenever the best value improves; it may return an improved chromosome (for
// example the encoding of a refined plan) with its value, which replaces the best one.
// stop() ends the search early. The search is
// deterministic for a given rng seed whatever the number of workers: all random numbers are
// drawn by the caller's goroutine, decoding only fills fitness slots, and ranking breaks
// ties by index.
func brkga(ctx context.Context, n int, o BRKGAOptions, rng *rand.Rand, dec *decoder, seeds [][]float64,
	onBest func(keys []float64, value float64) ([]float64, float64), stop func() bool) brkgaResult {
	o = o.withDefaults()
	p := o.Population
	pe := int(math.Ceil(o.EliteFraction * float64(p)))
	pm := int(math.Ceil(o.MutantFraction * float64(p)))
	if pe < 1 {
		pe = 1
	}
	if pe+pm > p {
		pm = p - pe
	}
	pop := make([][]float64, p)
	for i := range pop {
		if i < len(seeds) && len(seeds[i]) == n {
			pop[i] = append([]float64(nil), seeds[i]...)
			continue
		}
		pop[i] = randomKeys(rng, n)
	}
	fit := make([]float64, p)
	all := make([]int, p)
	for i := range all {
		all[i] = i
	}
	res := brkgaResult{value: math.Inf(1)}
	dec.evalAll(ctx, pop, all, fit, math.Inf(1))
	res.evals += p
	rank := make([]int, p)
	sortRank := func() {
		for i := range rank {
			rank[i] = i
		}
		sort.SliceStable(rank, func(a, b int) bool { return fit[rank[a]] < fit[rank[b]] })
	}
	record := func() {
		sortRank()
		if b := rank[0]; fit[b] < res.value {
			res.value = fit[b]
			res.keys = append(res.keys[:0], pop[b]...)
			if onBest != nil {
				if nk, nv := onBest(res.keys, res.value); nk != nil && nv < res.value {
					copy(pop[b], nk)
					fit[b] = nv
					res.value = nv
					res.keys = append(res.keys[:0], nk...)
				}
			}
		}
	}
	record()
	next := make([][]float64, p)
	nextFit := make([]float64, p)
	for g := 1; g < o.Generations; g++ {
		if ctx.Err() != nil || (stop != nil && stop()) {
			break
		}
		for i := 0; i < pe; i++ {
			next[i] = append(next[i][:0], pop[rank[i]]...)
			nextFit[i] = fit[rank[i]]
		}
		for i := pe; i < pe+pm; i++ {
			next[i] = fillRandom(rng, next[i], n)
		}
		for i := pe + pm; i < p; i++ {
			a := pop[rank[rng.Intn(pe)]]
			b := pop[rank[pe+rng.Intn(p-pe)]]
			child := next[i][:0]
			for j := 0; j < n; j++ {
				if rng.Float64() < o.EliteBias {
					child = append(child, a[j])
				} else {
					child = append(child, b[j])
				}
			}
			next[i] = child
		}
		// Only chromosomes that can enter the elite matter for selection, so decode with the
		// elite threshold as the pruning bound (values ≥ it come back as +Inf).
		bound := nextFit[pe-1]
		dec.evalAll(ctx, next, all[pe:], nextFit, bound)
		res.evals += p - pe
		pop, next = next, pop
		fit, nextFit = nextFit, fit
		record()
	}
	return res
}

func randomKeys(rng *rand.Rand, n int) []float64 { return fillRandom(rng, nil, n) }

func fillRandom(rng *rand.Rand, dst []float64, n int) []float64 {
	dst = dst[:0]
	for j := 0; j < n; j++ {
		dst = append(dst, rng.Float64())
	}
	return dst
}

// mlaCost is the weighted minimum-linear-arrangement objective of seed 000 §4.2:
// h(π) = Σ_{(u,v)} w(u,v)·|pos(u) − pos(v)| with w(u,v) = io(u,v) (mla-weighted) or 1 (mla),
// summed per tensor and consumer.
func (c *core) mlaCost(order []int32, pos []int32, weighted bool) float64 {
	for i, v := range order {
		pos[v] = int32(i)
	}
	h := 0.0
	for t := range c.tProd {
		w := 1.0
		if weighted {
			w = c.tSize[t]
		}
		pp := pos[c.tProd[t]]
		for _, g := range c.consOf(t) {
			h += w * float64(pos[g]-pp)
		}
	}
	return h
}
