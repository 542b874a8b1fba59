package instances

import (
	"fmt"
	"math"
	"math/rand"
	"sort"

	"github.com/onnxpart/onnxpart/partition"
)

// RegalOptions configure the REGAL-like generator. Zero fields take the defaults in brackets.
type RegalOptions struct {
	MinNodes, MaxNodes int     // node count, uniform in [MinNodes, MaxNodes] [50, 200]
	SizeMean, SizeStd  float64 // tensor sizes ~ N(mean, std), at least 1 [50, 10]
	RStd               float64 // r ~ N(0, RStd), clipped at 0 [0.1]
}

// RegalModels are the random-graph models the generator draws from, in order.
var RegalModels = []string{"erdos-renyi", "barabasi-albert", "watts-strogatz"}

// Regal generates a REGAL-like instance following seed 000 §C.2 (Paliwal et al. 2020,
// Appendix A.1.4): an undirected graph from a classic random-graph model (Erdős–Rényi with
// mean degree 2–4, Barabási–Albert with m ∈ {1, 2}, or Watts–Strogatz with k ∈ {2, 4} and
// β ∈ [0.1, 0.5], picked at random), oriented into a DAG by a random topological order.
// Every node produces one tensor of size ~ N(50, 10) read by its out-neighbours; its work is
// the sum of its input and output tensor sizes plus r·(sum of all tensor sizes) with
// r ~ N(0, 0.1) clipped at 0. B = 1, no parameters, k stages. REGAL's filter for graphs hard
// for peak-memory scheduling is not reproduced, so these graphs are "REGAL-like", not REGAL.
func Regal(seed int64, k int, o RegalOptions) *partition.Problem {
	if o.MinNodes <= 0 {
		o.MinNodes = 50
	}
	if o.MaxNodes < o.MinNodes {
		o.MaxNodes = 200
		if o.MaxNodes < o.MinNodes {
			o.MaxNodes = o.MinNodes
		}
	}
	if o.SizeMean == 0 {
		o.SizeMean = 50
	}
	if o.SizeStd == 0 {
		o.SizeStd = 10
	}
	if o.RStd == 0 {
		o.RStd = 0.1
	}
	rng := rand.New(rand.NewSource(seed))
	n := o.MinNodes + rng.Intn(o.MaxNodes-o.MinNodes+1)
	model := RegalModels[rng.Intn(len(RegalModels))]
	edges := map[[2]int]bool{}
	addEdge := func(a, b int) {
		if a == b {
			return
		}
		if a > b {
			a, b = b, a
		}
		edges[[2]int{a, b}] = true
	}
	switch model {
	case "erdos-renyi":
		deg := 2 + 2*rng.Float64()
		pe := deg / float64(n-1)
		for a := 0; a < n; a++ {
			for b := a + 1; b < n; b++ {
				if rng.Float64() < pe {
					addEdge(a, b)
				}
			}
		}
	case "barabasi-albert":
		m := 1 + rng.Intn(2)
		// Start from a clique on m+1 nodes; attach each new node to m distinct nodes chosen
		// with probability proportional to degree.
		var ends []int
		for a := 0; a <= m; a++ {
			for b := a + 1; b <= m; b++ {
				addEdge(a, b)
				ends = append(ends, a, b)
			}
		}
		if len(ends) == 0 {
			ends = []int{0}
		}
		for v := m + 1; v < n; v++ {
			chosen := map[int]bool{}
			for len(chosen) < m {
				chosen[ends[rng.Intn(len(ends))]] = true
			}
			keys := make([]int, 0, m)
			for u := range chosen {
				keys = append(keys, u)
			}
			sort.Ints(keys)
			for _, u := range keys {
				addEdge(u, v)
				ends = append(ends, u, v)
			}
		}
	default: // watts-strogatz
		kk := 2 + 2*rng.Intn(2)
		beta := 0.1 + 0.4*rng.Float64()
		for a := 0; a < n; a++ {
			for j := 1; j <= kk/2; j++ {
				b := (a + j) % n
				if rng.Float64() < beta {
					b = rng.Intn(n)
				}
				addEdge(a, b)
			}
		}
	}
	// Random topological order: orient every edge from the earlier to the later node.
	perm := rng.Perm(n)
	rank := make([]int, n)
	for i, v := range perm {
		rank[v] = i
	}
	keys := make([][2]int, 0, len(edges))
	for e := range edges {
		keys = append(keys, e)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	cons := make([][]int, n)
	for _, e := range keys {
		a, b := e[0], e[1]
		if rank[a] > rank[b] {
			a, b = b, a
		}
		cons[rank[a]] = append(cons[rank[a]], rank[b]) // renumber nodes by the order
	}
	size := make([]float64, n)
	total := 0.0
	for v := range size {
		size[v] = math.Max(1, o.SizeMean+o.SizeStd*rng.NormFloat64())
		total += size[v]
	}
	p := &partition.Problem{Name: fmt.Sprintf("regal-%d-%s-n%d", seed, model, n), Work: make([]float64, n), K: k, Bandwidth: 1}
	in := make([]float64, n)
	for u := 0; u < n; u++ {
		sort.Ints(cons[u])
		for _, w := range cons[u] {
			in[w] += size[u]
		}
		if len(cons[u]) > 0 {
			p.Tensors = append(p.Tensors, partition.Tensor{Producer: u, Consumers: cons[u], Size: size[u]})
		}
	}
	for v := range p.Work {
		r := math.Max(0, o.RStd*rng.NormFloat64())
		p.Work[v] = in[v] + size[v] + r*total
	}
	return p
}

// Layered generates a layered DAG for scaling runs: n nodes in layers of the given width
// (default 32); each node reads 1–3 tensors of the previous layer and, with probability
// 0.1, one from two layers back (a skip connection). Work ~ U[1, 10], tensor sizes ~
// U[0.5, 3], B = 1, k stages.
func Layered(seed int64, n, width, k int) *partition.Problem {
	if width <= 0 {
		width = 32
	}
	rng := rand.New(rand.NewSource(seed))
	p := &partition.Problem{Name: fmt.Sprintf("layered-%d-n%d", seed, n), Work: make([]float64, n), K: k, Bandwidth: 1}
	cons := make([][]int, n)
	for v := 0; v < n; v++ {
		p.Work[v] = 1 + 9*rng.Float64()
		layer := v / width
		if layer == 0 {
			continue
		}
		prevLo := (layer - 1) * width
		reads := 1 + rng.Intn(3)
		for i := 0; i < reads; i++ {
			u := prevLo + rng.Intn(width)
			cons[u] = append(cons[u], v)
		}
		if layer >= 2 && rng.Float64() < 0.1 {
			u := (layer-2)*width + rng.Intn(width)
			cons[u] = append(cons[u], v)
		}
	}
	for u := 0; u < n; u++ {
		if len(cons[u]) > 0 {
			p.Tensors = append(p.Tensors, partition.Tensor{Producer: u, Consumers: cons[u], Size: 0.5 + 2.5*rng.Float64()})
		}
	}
	return p
}
