package schedule

import (
	"context"
	"math"
	"math/rand/v2"
	"time"
)

// The two search heuristics of seed 003 §4.2 with the thesis's encoding: one gene per node,
// taken in breadth-first topological order — the node's device in latency mode, the index of
// its batch split in batched mode — and the fitness is the simulated makespan of the genes
// scheduled in that order. Plans that overflow memory rank below every plan that fits.

// space is the search space of a problem: the choices of every gene and the fitness.
type space struct {
	in      *inst
	order   []int   // the node order of the list schedule (the thesis: breadth-first)
	heat    float64 // annealing's starting temperature as a fraction of the start's makespan
	choices [][]int // latency: devices; batched: split indices
	ss      *splitSet
	lat     *latSim
	bat     *batchSim
	dev     []int   // scratch (latency)
	g       [][]int // scratch (batched)
	demand  float64 // total memory demand, to normalise overflow
	penalty float64 // added to infeasible plans' scores
}

func newSpace(in *inst) *space {
	sp := &space{in: in, order: in.bfs, heat: 0.05, choices: make([][]int, in.numNodes)}
	if in.latency() {
		sp.lat = newLatSim(in)
		sp.dev = make([]int, in.numNodes)
		for i := range in.numNodes {
			for u := range in.numDevices {
				if in.canRun(i, u) {
					sp.choices[i] = append(sp.choices[i], u)
				}
			}
		}
	} else {
		sp.ss = in.splits()
		sp.bat = newBatchSim(in)
		sp.g = make([][]int, in.numNodes)
		for i := range in.numNodes {
			sp.choices[i] = make([]int, len(sp.ss.counts[i]))
			for s := range sp.choices[i] {
				sp.choices[i][s] = s
			}
		}
	}
	for i := range in.numNodes {
		sp.demand += in.problem.Nodes[i].Weight + float64(in.numGranules)*in.problem.Nodes[i].Act
	}
	// Larger than any feasible makespan: everything serial on its slowest device.
	for i := range in.numNodes {
		worst := 0.0
		for u := range in.numDevices {
			if x := in.batchTime[i][u][in.numGranules]; in.latency() {
				if in.canRun(i, u) {
					worst = math.Max(worst, in.granuleTime[i][u])
				}
			} else if !math.IsInf(x, 1) {
				worst = math.Max(worst, x)
			}
		}
		sp.penalty += worst
	}
	for e := range in.problem.Edges {
		worst := 0.0
		for u := range in.numDevices {
			for v := range in.numDevices {
				if d := in.comm(e, u, v, in.numGranules); !math.IsInf(d, 1) {
					worst = math.Max(worst, d)
				}
			}
		}
		sp.penalty += worst
	}
	sp.penalty = 2*sp.penalty + 1
	return sp
}

// genesOf encodes a placement (devices, or granule maps that are contiguous splits).
func (sp *space) genesOf(pl *Placement) []int {
	in := sp.in
	genes := make([]int, in.numNodes)
	for i := range in.numNodes {
		if in.latency() {
			for x, u := range sp.choices[i] {
				if u == pl.Device[i] {
					genes[i] = x
				}
			}
			continue
		}
		cnt := make([]int, in.numDevices)
		for _, u := range pl.Granules[i] {
			cnt[u]++
		}
		for s, c := range sp.ss.counts[i] {
			if equalInts(c, cnt) {
				genes[i] = s
				break
			}
		}
	}
	return genes
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for x := range a {
		if a[x] != b[x] {
			return false
		}
	}
	return true
}

// score is the fitness: the makespan, plus the penalty and the normalised overflow when the
// plan does not fit in memory, +Inf when a transfer has no route.
func (sp *space) score(genes []int) float64 {
	in := sp.in
	var mk float64
	var mem []float64
	if in.latency() {
		for i, x := range genes {
			sp.dev[i] = sp.choices[i][x]
		}
		mk = sp.lat.eval(sp.dev, sp.order)
		mem = in.memoryLatency(sp.dev)
	} else {
		for i, x := range genes {
			sp.g[i] = sp.ss.maps[i][x]
		}
		mk = sp.bat.eval(sp.g, sp.order)
		mem = in.memoryBatched(sp.g)
	}
	if math.IsNaN(mk) {
		return math.Inf(1)
	}
	if o := in.overflow(mem); o > 0 {
		return mk + sp.penalty*(1+o/math.Max(sp.demand, 1))
	}
	return mk
}

func (sp *space) placement(genes []int) *Placement {
	in := sp.in
	if in.latency() {
		dev := make([]int, in.numNodes)
		for i, x := range genes {
			dev[i] = sp.choices[i][x]
		}
		return &Placement{Device: dev, Order: positions(sp.order)}
	}
	g := make([][]int, in.numNodes)
	for i, x := range genes {
		g[i] = append([]int(nil), sp.ss.maps[i][x]...)
	}
	return &Placement{Granules: g, Order: positions(sp.order)}
}

// budget stops a search after a number of iterations, at a deadline, or on cancellation.
type budget struct {
	ctx      context.Context
	iters    int // 0: no iteration cap
	start    time.Time
	deadline time.Time // zero: none
	// target, when positive, stops the search as soon as its best score is at most target
	// (the best lower bound: nothing better exists); ran counts the iterations it ran.
	target float64
	ran    int
}

// reached reports whether score f meets the target.
func (b *budget) reached(f float64) bool { return b.target > 0 && f <= b.target }

func (b *budget) done(it int) bool {
	if b.iters > 0 && it >= b.iters {
		return true
	}
	if it&63 == 0 {
		if b.ctx.Err() != nil {
			return true
		}
		if !b.deadline.IsZero() && !time.Now().Before(b.deadline) {
			return true
		}
	}
	return false
}

// frac is the fraction of the budget used (for the annealing schedule).
func (b *budget) frac(it int) float64 {
	f := 0.0
	if b.iters > 0 {
		f = float64(it) / float64(b.iters)
	}
	// With an iteration budget the schedule follows iterations only, so that a seeded run
	// anneals the same way on any machine; the deadline still stops it.
	if b.iters <= 0 && !b.deadline.IsZero() {
		total := b.deadline.Sub(b.start)
		if total > 0 {
			f = math.Max(f, float64(time.Since(b.start))/float64(total))
		}
	}
	return math.Min(f, 1)
}

// ea is the biased (1+1) evolutionary algorithm (Droste et al.): start from the given genes
// (the MET plan: every node on its fastest device), mutate each gene with probability 1/n to
// another choice, keep the offspring when it is not worse.
func (sp *space) ea(init []int, seed uint64, b *budget, improved func(float64)) ([]int, float64) {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	n := sp.in.numNodes
	cur := append([]int(nil), init...)
	f := sp.score(cur)
	var mutable []int
	for i := range n {
		if len(sp.choices[i]) > 1 {
			mutable = append(mutable, i)
		}
	}
	if len(mutable) == 0 {
		return cur, f
	}
	type change struct{ i, old int }
	var changed []change
	p := 1 / float64(len(mutable))
	for it := 0; !b.done(it) && !b.reached(f); it++ {
		b.ran = it + 1
		changed = changed[:0]
		for _, i := range mutable {
			if rng.Float64() < p {
				changed = append(changed, change{i, cur[i]})
			}
		}
		if len(changed) == 0 {
			i := mutable[rng.IntN(len(mutable))]
			changed = append(changed, change{i, cur[i]})
		}
		for _, c := range changed {
			cur[c.i] = otherChoice(rng, len(sp.choices[c.i]), c.old)
		}
		fc := sp.score(cur)
		if fc <= f {
			if fc < f && improved != nil {
				improved(fc)
			}
			f = fc
			continue
		}
		for _, c := range changed {
			cur[c.i] = c.old
		}
	}
	return cur, f
}

func otherChoice(rng *rand.Rand, n, old int) int {
	x := rng.IntN(n - 1)
	if x >= old {
		x++
	}
	return x
}

// sa is simulated annealing (Kirkpatrick et al.): a move changes one gene; worse moves are
// accepted with probability exp(−Δ/T), T cooling geometrically from 5% (sp.heat) to 0.01%
// of the starting makespan over the budget.
func (sp *space) sa(init []int, seed uint64, b *budget, improved func(float64)) ([]int, float64) {
	rng := rand.New(rand.NewPCG(seed, 0x2545f4914f6cdd1d))
	n := sp.in.numNodes
	cur := append([]int(nil), init...)
	fcur := sp.score(cur)
	best := append([]int(nil), cur...)
	fbest := fcur
	var mutable []int
	for i := range n {
		if len(sp.choices[i]) > 1 {
			mutable = append(mutable, i)
		}
	}
	if len(mutable) == 0 || math.IsInf(fcur, 1) {
		return best, fbest
	}
	base := fcur
	if base >= sp.penalty {
		base = sp.penalty / 2
	}
	t0, t1 := sp.heat*base, 1e-4*base
	for it := 0; !b.done(it) && !b.reached(fbest); it++ {
		b.ran = it + 1
		temp := t0 * math.Pow(t1/t0, b.frac(it))
		i := mutable[rng.IntN(len(mutable))]
		old := cur[i]
		cur[i] = otherChoice(rng, len(sp.choices[i]), old)
		f := sp.score(cur)
		if d := f - fcur; d <= 0 || rng.Float64() < math.Exp(-d/temp) {
			fcur = f
			if f < fbest {
				fbest = f
				copy(best, cur)
				if improved != nil {
					improved(f)
				}
			}
			continue
		}
		cur[i] = old
	}
	return best, fbest
}
