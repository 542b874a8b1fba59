package partition

import (
	"math"
	"math/rand"
	"testing"
)

// edgeProblem builds a problem with one tensor per node (size sizes[u]) consumed by the
// heads of u's edges, as in seed 000's one-output model.
func edgeProblem(work, sizes []float64, edges [][2]int, k int) *Problem {
	p := &Problem{Work: work, K: k, Bandwidth: 1}
	cons := make([][]int, len(work))
	for _, e := range edges {
		cons[e[0]] = append(cons[e[0]], e[1])
	}
	for u := range work {
		if len(cons[u]) > 0 {
			s := 0.0
			if sizes != nil {
				s = sizes[u]
			}
			p.Tensors = append(p.Tensors, Tensor{Producer: u, Consumers: cons[u], Size: s})
		}
	}
	return p
}

// digestCase is one of the test instances T1–T7 of digest-000 §9.5.
type digestCase struct {
	name  string
	p     func(k int) *Problem
	opt   map[int]float64 // k → OPT
	three map[int]float64 // bottleneck bound
	guess map[int]float64 // bottleneck-guess bound
}

func digestCases() []digestCase {
	t7edges := [][2]int{{0, 1}, {0, 2}, {0, 3}, {1, 4}, {2, 4}, {3, 4}, {4, 5}, {5, 6}, {4, 6}}
	return []digestCase{
		{"T1-makespan", func(k int) *Problem { return edgeProblem([]float64{3, 3, 2, 2, 2}, nil, nil, k) },
			map[int]float64{2: 6, 3: 5}, map[int]float64{2: 6, 3: 4}, map[int]float64{2: 6, 3: 4}},
		{"T2-chain", func(k int) *Problem {
			return edgeProblem([]float64{1, 1, 1, 1}, []float64{1, 1, 1, 1}, [][2]int{{0, 1}, {1, 2}, {2, 3}}, k)
		}, map[int]float64{2: 3, 3: 3, 4: 3}, map[int]float64{2: 3, 3: 3, 4: 2}, map[int]float64{2: 3, 3: 3, 4: 2}},
		{"T3-fanout", func(k int) *Problem {
			return edgeProblem([]float64{1, 1, 1, 1}, []float64{1, 0, 0, 0}, [][2]int{{0, 1}, {0, 2}, {0, 3}}, k)
		}, map[int]float64{2: 3, 3: 3}, map[int]float64{2: 3}, map[int]float64{2: 3}},
		{"T4-acyclic", func(k int) *Problem {
			return edgeProblem([]float64{1, 2, 1}, []float64{0, 0, 0}, [][2]int{{0, 1}, {1, 2}}, k)
		}, map[int]float64{2: 3}, map[int]float64{2: 2}, map[int]float64{2: 3}},
		{"T5-lemmaB2", func(k int) *Problem {
			return edgeProblem([]float64{0.9, 0.9, 0.1, 0.1}, []float64{20, 0, 0, 0}, [][2]int{{0, 2}}, k)
		}, map[int]float64{2: 1}, map[int]float64{2: 1}, map[int]float64{2: 1}},
		{"T6-remarkB3", func(k int) *Problem {
			return edgeProblem([]float64{.75, .75, .75, .25, .25, .25}, nil, nil, k)
		}, map[int]float64{3: 1}, nil, nil},
		{"T7-inception", func(k int) *Problem {
			return edgeProblem([]float64{1, 3, 2, 4, 1, 3, 2}, []float64{4, 2, 2, 1, 3, 2, 0}, t7edges, k)
		}, map[int]float64{2: 14, 3: 13, 4: 11}, map[int]float64{2: 14, 3: 11, 4: 8}, map[int]float64{2: 14, 3: 11, 4: 8}},
	}
}

// bruteOPT enumerates every labelling of the original nodes with pipeline positions (and,
// for heterogeneous problems, every device order) and returns the optimum via Evaluate.
func bruteOPT(t testing.TB, p *Problem) float64 {
	t.Helper()
	K := p.NumStages()
	if len(p.Devices) == 0 {
		return bruteOver(p, [][]int{make([]int, K)})
	}
	counts := make([]int, len(p.Devices))
	for d, dev := range p.Devices {
		counts[d] = dev.Count
	}
	return bruteOver(p, deviceOrders(counts, 1<<20))
}

// bruteOver is the optimum over every labelling of the nodes with positions 0..K−1 and every
// device order given (all of length K).
func bruteOver(p *Problem, devOrders [][]int) float64 {
	n := p.NumNodes()
	K := len(devOrders[0])
	best := math.Inf(1)
	stage := make([]int, n)
	total := 1
	for i := 0; i < n; i++ {
		total *= K
	}
	for code := 0; code < total; code++ {
		x := code
		for v := 0; v < n; v++ {
			stage[v] = x % K
			x /= K
		}
		for _, dev := range devOrders {
			if _, obj, err := p.Evaluate(stage, dev); err == nil && obj < best {
				best = obj
			}
		}
	}
	return best
}

// lemmaB2 is the worst case of Lemma B.2 (seed 000 §B) for k stages, OPT = 1, and its bad
// order (1..k, 2k..k+1 in the paper's 1-based numbering), whose best slicing costs k.
func lemmaB2(k int) (*Problem, []int) {
	eps := 0.1
	n := 2 * k
	work := make([]float64, n)
	for i := 0; i < k; i++ {
		work[i] = 1 - eps
		work[k+i] = eps
	}
	sizes := make([]float64, n)
	sizes[0] = 10 * float64(k)
	bad := make([]int, 0, n)
	for i := 0; i < k; i++ {
		bad = append(bad, i)
	}
	for i := n - 1; i >= k; i-- {
		bad = append(bad, i)
	}
	return edgeProblem(work, sizes, [][2]int{{0, k}}, k), bad
}

// bruteSlice returns the best segmentation of order into at most K contiguous segments
// (homogeneous problems), by enumerating cut points.
func bruteSlice(p *Problem, order []int) float64 {
	n := len(order)
	K := p.NumStages()
	best := math.Inf(1)
	var rec func(start, blocks int, worst float64)
	rec = func(start, blocks int, worst float64) {
		if start == n {
			if worst < best {
				best = worst
			}
			return
		}
		if blocks == K {
			return
		}
		for end := start + 1; end <= n; end++ {
			c := p.BlockCost(order[start:end], 0)
			rec(end, blocks+1, math.Max(worst, c))
		}
	}
	rec(0, 0, 0)
	return best
}

// allTopoOrders enumerates every topological order of p's nodes.
func allTopoOrders(p *Problem) [][]int {
	n := p.NumNodes()
	succ := p.succs()
	indeg := make([]int, n)
	for _, s := range succ {
		for _, w := range s {
			indeg[w]++
		}
	}
	var out [][]int
	cur := []int{}
	used := make([]bool, n)
	var rec func()
	rec = func() {
		if len(cur) == n {
			out = append(out, append([]int(nil), cur...))
			return
		}
		for v := 0; v < n; v++ {
			if used[v] || indeg[v] != 0 {
				continue
			}
			used[v] = true
			cur = append(cur, v)
			for _, w := range succ[v] {
				indeg[w]--
			}
			rec()
			for _, w := range succ[v] {
				indeg[w]++
			}
			cur = cur[:len(cur)-1]
			used[v] = false
		}
	}
	rec()
	return out
}

// randomDAG builds a small random problem: edges from lower to higher index with
// probability pe, integer works and sizes, one tensor per node with a random subset of
// its edges, and sometimes a second output tensor.
func randomDAG(rng *rand.Rand, n, k int, pe float64) *Problem {
	p := &Problem{Work: make([]float64, n), K: k, Bandwidth: 1}
	for v := range p.Work {
		p.Work[v] = float64(rng.Intn(6))
	}
	for u := 0; u < n; u++ {
		var cons []int
		for w := u + 1; w < n; w++ {
			if rng.Float64() < pe {
				cons = append(cons, w)
			}
		}
		if len(cons) == 0 {
			continue
		}
		if len(cons) >= 2 && rng.Intn(3) == 0 {
			// two output tensors with different consumer sets
			cut := 1 + rng.Intn(len(cons)-1)
			p.Tensors = append(p.Tensors, Tensor{Producer: u, Consumers: cons[:cut], Size: float64(rng.Intn(5))})
			p.Tensors = append(p.Tensors, Tensor{Producer: u, Consumers: cons[cut-1:], Size: float64(rng.Intn(5))})
			continue
		}
		p.Tensors = append(p.Tensors, Tensor{Producer: u, Consumers: cons, Size: float64(rng.Intn(5))})
	}
	return p
}

func toInt32(a []int) []int32 {
	out := make([]int32, len(a))
	for i, v := range a {
		out[i] = int32(v)
	}
	return out
}

// near compares with 1e-9 relative tolerance; infinities only equal themselves.
func near(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) || math.IsNaN(a) || math.IsNaN(b) {
		return a == b
	}
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}
