package partition

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Baseline names (issue 6 §6): partitioners of a linearised graph, judged by the MTPP cost.
const (
	BaselineUniform   = "uniform"    // DeepSpeed partition_method="uniform": equal node counts
	BaselineParams    = "parameters" // DeepSpeed "parameters": balanced parameter bytes
	BaselineTime      = "time"       // torchgpipe balance_by_time: balanced running time
	BaselinePipeDream = "pipedream"  // PipeDream's DP: max(compute, boundary communication)
)

// Baselines lists the baseline names.
var Baselines = []string{BaselineUniform, BaselineParams, BaselineTime, BaselinePipeDream}

// Baseline partitions p the way a common pipeline framework would: the nodes are linearised
// in model order (Kahn's algorithm, ties by node index, colocation groups kept together) and
// cut into at most K contiguous stages by the baseline's own criterion; the resulting plan is
// then judged with the MTPP cost (Problem.Evaluate), like every plan. Heterogeneous problems
// use device 0's work for the criterion and fill the device slots in order.
func Baseline(p *Problem, name string) (*Plan, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	c := compile(p)
	var ks kahnScratch
	order := c.kahn(make([]float64, c.n), &ks, make([]int32, 0, c.n))
	K := c.stages()
	n := len(order)
	weight := make([]float64, n)
	switch name {
	case BaselineUniform:
		for i, v := range order {
			weight[i] = float64(len(c.members[v]))
		}
	case BaselineParams:
		for i, v := range order {
			weight[i] = c.params[v]
		}
	case BaselineTime:
		for i, v := range order {
			weight[i] = c.work[0][v]
		}
	case BaselinePipeDream:
	default:
		return nil, fmt.Errorf("partition: unknown baseline %q (want %v)", name, Baselines)
	}
	var cuts []int // segment ends (exclusive), increasing, last = n
	if name == BaselinePipeDream {
		cuts = pipeDreamCuts(c, order, K)
	} else if name == BaselineUniform {
		// DeepSpeed partition_uniform: boundaries at i·N/K of the node count.
		total := 0.0
		for _, w := range weight {
			total += w
		}
		acc, j := 0.0, 1
		for i, w := range weight {
			acc += w
			if j < K && i+1 < n && acc >= total*float64(j)/float64(K)-1e-9 {
				cuts = append(cuts, i+1)
				j++
			}
		}
		cuts = append(cuts, n)
	} else {
		cuts = minMaxCuts(weight, K)
	}
	stage := make([]int, c.n)
	start := 0
	for s, end := range cuts {
		for i := start; i < end; i++ {
			stage[order[i]] = s
		}
		start = end
	}
	var device []int
	for d, k := range c.counts {
		for i := 0; i < k; i++ {
			device = append(device, d)
		}
	}
	st := &solveState{p: p, c: c, t0: t0, opts: Options{Bounds: BoundsNone}, best: math.Inf(1)}
	if !st.offerPlan(stage, device, order, name) {
		return nil, infeasible("the %s baseline violates a memory cap", name)
	}
	pl := st.plan(time.Since(t0))
	pl.Algorithm = "baseline-" + name
	return pl, nil
}

// minMaxCuts splits a sequence of non-negative weights into at most K contiguous parts
// minimising the largest part sum (the balanced partition DeepSpeed and torchgpipe compute):
// binary search on the answer with a greedy feasibility check, which is exact for
// contiguous parts. It returns the segment ends.
func minMaxCuts(w []float64, K int) []int {
	total, maxw := 0.0, 0.0
	for _, x := range w {
		total += x
		maxw = math.Max(maxw, x)
	}
	greedy := func(T float64) []int {
		var cuts []int
		acc := 0.0
		for i, x := range w {
			if acc+x > T && acc > 0 {
				cuts = append(cuts, i)
				acc = 0
			}
			acc += x
		}
		return append(cuts, len(w))
	}
	lo, hi := math.Max(maxw, total/float64(K)), total
	for it := 0; it < 100 && hi-lo > 1e-12*math.Max(1, hi); it++ {
		mid := (lo + hi) / 2
		if len(greedy(mid)) <= K {
			hi = mid
		} else {
			lo = mid
		}
	}
	return greedy(hi)
}

// pipeDreamCuts is PipeDream's partitioning DP (Narayanan et al. 2019) without replication,
// on the linear order: a stage's time is max(its compute, the communication at its two
// boundaries), communication and compute overlapping, and a boundary after position i carries
// every tensor produced at or before i and read after it (a path of stages, so tensors are
// relayed). It minimises the largest stage time in that model.
func pipeDreamCuts(c *core, order []int32, K int) []int {
	n := len(order)
	pos := make([]int, c.n)
	for i, v := range order {
		pos[v] = i
	}
	// comm[i] = bytes crossing the boundary between positions i-1 and i (i = 1..n-1).
	comm := make([]float64, n+1)
	for t := range c.tProd {
		p := pos[c.tProd[t]]
		last := p
		for _, g := range c.consOf(t) {
			last = max(last, pos[g])
		}
		for i := p + 1; i <= last; i++ {
			comm[i] += c.tSize[t] * c.coef[0]
		}
	}
	prefix := make([]float64, n+1)
	for i, v := range order {
		prefix[i+1] = prefix[i] + c.work[0][v]
	}
	stageTime := func(l, r int) float64 { // positions l..r-1
		io := 0.0
		if l > 0 {
			io += comm[l]
		}
		if r < n {
			io += comm[r]
		}
		return math.Max(prefix[r]-prefix[l], io)
	}
	inf := math.Inf(1)
	D := make([][]float64, K+1)
	arg := make([][]int, K+1)
	for j := range D {
		D[j] = make([]float64, n+1)
		arg[j] = make([]int, n+1)
		for r := range D[j] {
			D[j][r] = inf
		}
	}
	D[0][0] = 0
	for j := 1; j <= K; j++ {
		for r := 1; r <= n; r++ {
			for l := 0; l < r; l++ {
				if D[j-1][l] == inf {
					continue
				}
				if v := math.Max(D[j-1][l], stageTime(l, r)); v < D[j][r] {
					D[j][r], arg[j][r] = v, l
				}
			}
		}
	}
	bestJ := 1
	for j := 1; j <= K; j++ {
		if D[j][n] < D[bestJ][n] {
			bestJ = j
		}
	}
	var cuts []int
	for j, r := bestJ, n; j > 0; j-- {
		cuts = append(cuts, r)
		r = arg[j][r]
	}
	sort.Ints(cuts)
	return cuts
}
