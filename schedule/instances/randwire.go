package instances

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/onnxpart/onnxpart/schedule"
)

// Random graph models of RandWire (Xie et al., ICCV 2019) with the parameters seed 003 §4.1
// uses: WS(4, 0.75), ER(0.2), BA(5).
const (
	ER = "er" // Erdős–Rényi: each pair linked with probability P
	WS = "ws" // Watts–Strogatz: ring lattice of K neighbours, rewired with probability P
	BA = "ba" // Barabási–Albert: each new node attaches to M existing ones, preferentially
)

// Role says what a node of a stack is.
type Role string

// Roles of stack nodes.
const (
	RoleSource Role = "source" // the graph input (one)
	RoleSink   Role = "sink"   // the classifier (one)
	RoleInput  Role = "input"  // a module's channel head (weighted-sum aggregation)
	RoleOutput Role = "output" // a module's channel tail (aggregation)
	RoleOp     Role = "op"     // a random-graph node: ReLU–SepConv–BN
)

// StackConfig describes a stack of random modules.
type StackConfig struct {
	Model   string  // ER, WS or BA
	N       int     // random-graph nodes per module (seed 003: 10 or 32)
	P       float64 // ER link probability, WS rewiring probability (0: 0.2 for ER, 0.75 for WS)
	K       int     // WS lattice degree (0: 4)
	M       int     // BA attachments (0: 5)
	Modules int     // modules in the stack (seed 003: 5, 10, 20)
	// Channels is the number of edges between consecutive modules (1–4).
	Channels int
	// Strong selects the strongly dependent (sd) wiring: all paths of a module stem from its
	// first input and converge to its first output; otherwise weakly dependent (wd): the
	// random graph's sources and sinks hang off randomly chosen inputs and outputs.
	Strong bool
	Seed   uint64
}

// Stack is a generated DAG: nodes with their module (−1 for source and sink) and role, and
// edges (from, to) in generation order.
type Stack struct {
	Names  []string
	Module []int
	Role   []Role
	Edges  [][2]int
}

func (s *Stack) add(name string, module int, role Role) int {
	s.Names = append(s.Names, name)
	s.Module = append(s.Module, module)
	s.Role = append(s.Role, role)
	return len(s.Names) - 1
}

// RandomDAG returns one random graph of the model, oriented from lower to higher index.
func RandomDAG(model string, n int, p float64, k, m int, rng *rand.Rand) ([][2]int, error) {
	var und [][2]int
	switch model {
	case ER:
		if p == 0 {
			p = 0.2
		}
		for a := range n {
			for b := a + 1; b < n; b++ {
				if rng.Float64() < p {
					und = append(und, [2]int{a, b})
				}
			}
		}
	case WS:
		if p == 0 {
			p = 0.75
		}
		if k == 0 {
			k = 4
		}
		if k%2 != 0 || k >= n {
			return nil, fmt.Errorf("randwire: WS needs an even K below N (K=%d, N=%d)", k, n)
		}
		adj := map[[2]int]bool{}
		key := func(a, b int) [2]int {
			if a > b {
				a, b = b, a
			}
			return [2]int{a, b}
		}
		for a := range n {
			for j := 1; j <= k/2; j++ {
				adj[key(a, (a+j)%n)] = true
			}
		}
		// Rewire each lattice edge (a, a+j) with probability p, as in Watts and Strogatz.
		for j := 1; j <= k/2; j++ {
			for a := range n {
				b := (a + j) % n
				if !adj[key(a, b)] || rng.Float64() >= p {
					continue
				}
				c := rng.IntN(n)
				if c == a || adj[key(a, c)] {
					continue
				}
				delete(adj, key(a, b))
				adj[key(a, c)] = true
			}
		}
		for e := range adj {
			und = append(und, e)
		}
	case BA:
		if m == 0 {
			m = 5
		}
		if m >= n {
			return nil, fmt.Errorf("randwire: BA needs M below N (M=%d, N=%d)", m, n)
		}
		deg := make([]int, n)
		for v := m; v < n; v++ {
			chosen := map[int]bool{}
			for len(chosen) < m {
				total := 0
				for u := range v {
					total += deg[u] + 1
				}
				r := rng.IntN(total)
				for u := range v {
					r -= deg[u] + 1
					if r < 0 {
						chosen[u] = true
						break
					}
				}
			}
			for u := range chosen {
				und = append(und, [2]int{u, v})
				deg[u]++
				deg[v]++
			}
		}
	default:
		return nil, fmt.Errorf("randwire: unknown model %q (want er, ws or ba)", model)
	}
	sort.Slice(und, func(a, b int) bool {
		if und[a][0] != und[b][0] {
			return und[a][0] < und[b][0]
		}
		return und[a][1] < und[b][1]
	})
	return und, nil
}

// NewStack generates a stack of random modules. Module t has Channels input nodes, N random
// nodes and Channels output nodes; output c of module t feeds input c of module t+1; a source
// feeds the first module's inputs and the last module's outputs feed a sink.
func NewStack(cfg StackConfig) (*Stack, error) {
	if cfg.N < 2 || cfg.Modules < 1 || cfg.Channels < 1 {
		return nil, fmt.Errorf("randwire: need N ≥ 2, Modules ≥ 1, Channels ≥ 1 (got %d, %d, %d)", cfg.N, cfg.Modules, cfg.Channels)
	}
	rng := newRNG(cfg.Seed)
	s := &Stack{}
	src := s.add("source", -1, RoleSource)
	var prevOut []int
	for t := range cfg.Modules {
		und, err := RandomDAG(cfg.Model, cfg.N, cfg.P, cfg.K, cfg.M, rng)
		if err != nil {
			return nil, err
		}
		ins := make([]int, cfg.Channels)
		for c := range ins {
			ins[c] = s.add(fmt.Sprintf("m%d.in%d", t, c), t, RoleInput)
		}
		ops := make([]int, cfg.N)
		for x := range ops {
			ops[x] = s.add(fmt.Sprintf("m%d.n%d", t, x), t, RoleOp)
		}
		outs := make([]int, cfg.Channels)
		for c := range outs {
			outs[c] = s.add(fmt.Sprintf("m%d.out%d", t, c), t, RoleOutput)
		}
		indeg := make([]int, cfg.N)
		outdeg := make([]int, cfg.N)
		for _, e := range und {
			s.Edges = append(s.Edges, [2]int{ops[e[0]], ops[e[1]]})
			outdeg[e[0]]++
			indeg[e[1]]++
		}
		used := make([]bool, cfg.Channels)
		for x := range cfg.N {
			if indeg[x] != 0 {
				continue
			}
			c := 0
			if !cfg.Strong {
				c = rng.IntN(cfg.Channels)
			}
			s.Edges = append(s.Edges, [2]int{ins[c], ops[x]})
			used[c] = true
		}
		for c := range cfg.Channels {
			if !used[c] {
				s.Edges = append(s.Edges, [2]int{ins[c], ops[rng.IntN(cfg.N)]})
			}
		}
		clear(used)
		for x := range cfg.N {
			if outdeg[x] != 0 {
				continue
			}
			c := 0
			if !cfg.Strong {
				c = rng.IntN(cfg.Channels)
			}
			s.Edges = append(s.Edges, [2]int{ops[x], outs[c]})
			used[c] = true
		}
		for c := range cfg.Channels {
			if !used[c] {
				s.Edges = append(s.Edges, [2]int{ops[rng.IntN(cfg.N)], outs[c]})
			}
		}
		for c := range cfg.Channels {
			from := src
			if prevOut != nil {
				from = prevOut[c]
			}
			s.Edges = append(s.Edges, [2]int{from, ins[c]})
		}
		prevOut = outs
	}
	sink := s.add("sink", -1, RoleSink)
	for _, o := range prevOut {
		s.Edges = append(s.Edges, [2]int{o, sink})
	}
	return s, nil
}

// Platform is a set of devices with relative speeds and a uniform interconnect.
type Platform struct {
	Names []string
	// Slowdown[u] is device u's time relative to the reference device (1 = reference).
	Slowdown []float64
	// BatchExp[u] is the exponent γ of the batch-time model t(b) = t(1)·b^γ on device u.
	BatchExp []float64
	// Memory[u] in bytes (0: unlimited).
	Memory    []float64
	Bandwidth float64 // bytes per ms, every ordered pair
	Latency   float64 // ms per transfer
}

// ThesisPlatform is seed 003's platform: a Xeon CPU, a T4 and an A100, with the relative
// speeds of Table 4.2 for RWNNs (CPU 7.10×, T4 1.26×, A100 1×), linked by PCIe-class links
// (12 GB/s, 10 µs). The batch exponents (CPU 0.95, T4 0.8, A100 0.7) are ours: GPUs gain more
// from batching than a CPU.
func ThesisPlatform() Platform {
	return Platform{
		Names:     []string{"cpu", "t4", "a100"},
		Slowdown:  []float64{7.10, 1.26, 1},
		BatchExp:  []float64{0.95, 0.8, 0.7},
		Memory:    []float64{0, 0, 0},
		Bandwidth: 12e6, // 12 GB/s in bytes per ms
		Latency:   0.01,
	}
}

// CostConfig sets the cost model of a stack.
type CostConfig struct {
	// OpTime is the range of a random node's time on the reference device, ms (uniform).
	OpTime [2]float64
	// AggTime is the time of input/output (aggregation) nodes relative to a random node's mean.
	AggTime float64
	// Noise is the σ of the log-normal per-node, per-device variation of the relative speed.
	Noise float64
	// Bytes is the tensor size of one input on every edge.
	Bytes float64
	// Batch is the batch of inputs (0 or 1: latency), split into Granules granules.
	Batch, Granules int
	Seed            uint64
}

// ThesisCosts is our default cost model for RWNN stacks: random nodes of 0.5–1.5 ms on the
// A100, aggregation nodes 5% of that, ±30% per-device variation, 1 MB tensors (78 channels of
// 56×56 fp32, RandWire's small regime).
func ThesisCosts() CostConfig {
	return CostConfig{OpTime: [2]float64{0.5, 1.5}, AggTime: 0.05, Noise: 0.3, Bytes: 78 * 56 * 56 * 4}
}

// Problem costs a stack on a platform. In batched mode (Batch > 1) the batch is split into
// Granules granules of Batch/Granules inputs (seed 003 §4.4: B/4, B/2, 3B/4, B), every device
// supports every number of granules, and a batch of c granules takes t(1)·(c·Batch/Granules)^γ.
func (s *Stack) Problem(pf Platform, cc CostConfig) (*schedule.Problem, error) {
	k := len(pf.Names)
	if len(pf.Slowdown) != k || len(pf.BatchExp) != k || len(pf.Memory) != k {
		return nil, fmt.Errorf("randwire: platform arrays disagree on the device count %d", k)
	}
	rng := rand.New(rand.NewPCG(cc.Seed, 0xda3e39cb94b95bdb))
	p := &schedule.Problem{}
	for u := range k {
		p.Devices = append(p.Devices, schedule.Device{Name: pf.Names[u], Memory: pf.Memory[u]})
	}
	p.Links = make([][]schedule.Link, k)
	for u := range k {
		p.Links[u] = make([]schedule.Link, k)
		for v := range k {
			if u != v {
				p.Links[u][v] = schedule.Link{Bandwidth: pf.Bandwidth, Latency: pf.Latency}
			}
		}
	}
	granules, per := 1, 1
	if cc.Batch > 1 {
		granules = max(cc.Granules, 1)
		if cc.Batch%granules != 0 {
			return nil, fmt.Errorf("randwire: batch %d is not a multiple of %d granules", cc.Batch, granules)
		}
		per = cc.Batch / granules
		p.Batch, p.GranuleSize = granules, per
	}
	mean := (cc.OpTime[0] + cc.OpTime[1]) / 2
	for x, name := range s.Names {
		base := cc.OpTime[0] + rng.Float64()*(cc.OpTime[1]-cc.OpTime[0])
		switch s.Role[x] {
		case RoleInput, RoleOutput, RoleSource, RoleSink:
			base = cc.AggTime * mean * (0.5 + rng.Float64())
		}
		nd := schedule.Node{Name: name, Time: make([]float64, k), Act: cc.Bytes * float64(per)}
		if granules > 1 {
			nd.BatchTime = make([][]float64, k)
		}
		for u := range k {
			t1 := base * pf.Slowdown[u] * math.Exp(cc.Noise*rng.NormFloat64())
			nd.Time[u] = t1 * math.Pow(float64(per), pf.BatchExp[u])
			if granules > 1 {
				nd.BatchTime[u] = make([]float64, granules)
				for c := 1; c <= granules; c++ {
					nd.BatchTime[u][c-1] = t1 * math.Pow(float64(c*per), pf.BatchExp[u])
				}
			}
		}
		p.Nodes = append(p.Nodes, nd)
	}
	for _, e := range s.Edges {
		p.Edges = append(p.Edges, schedule.Edge{From: e[0], To: e[1], Bytes: cc.Bytes * float64(per)})
	}
	return p, p.Validate()
}

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5851f42d4c957f2d)) }
