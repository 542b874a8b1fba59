package partition_test

// The exhaustive reference of the certificate harness (certify_test.go). It is written apart
// from the solvers and as plainly as possible: it shares no code with package partition
// beyond reading the public fields of a Problem, and the dnn-partitioning reference reads the
// JSON model itself, so that a fault in the loader or in Problem.Evaluate shows up as a
// disagreement instead of being repeated here.

import (
	"math"
	"sort"

	"github.com/onnxpart/onnxpart/partition"
)

// refResult is what exhaustive search found: the optimum over every plan of the model, or
// feasible = false when no plan exists.
type refResult struct {
	feasible bool
	opt      float64
}

// stageKinds lists the device of each stage kind: its count, and whether it is usable.
type refKind struct {
	count   int
	work    []float64
	bw      float64 // +Inf: free communication
	fastMem float64 // 0: no overflow term
	cap     float64 // 0: no cap
}

func refKinds(p *partition.Problem) []refKind {
	if len(p.Devices) == 0 {
		return []refKind{{count: p.K, work: p.Work, bw: p.Bandwidth, fastMem: p.FastMemory, cap: p.MemoryCap}}
	}
	var ks []refKind
	for _, d := range p.Devices {
		k := refKind{count: d.Count, work: d.Work, bw: d.Bandwidth, fastMem: d.FastMemory, cap: d.MemoryCap}
		if k.work == nil {
			k.work = p.Work
		}
		if k.bw == 0 {
			k.bw = p.Bandwidth
		}
		if k.fastMem == 0 {
			k.fastMem = p.FastMemory
		}
		if k.cap == 0 {
			k.cap = p.MemoryCap
		}
		ks = append(ks, k)
	}
	return ks
}

// deviceSequences lists every distinct sequence of stage devices: each of the Σ count stages
// gets a device, device d exactly count_d times (the solvers choose this order).
func deviceSequences(counts []int) [][]int {
	total := 0
	for _, c := range counts {
		total += c
	}
	left := append([]int(nil), counts...)
	var out [][]int
	seq := make([]int, 0, total)
	var rec func()
	rec = func() {
		if len(seq) == total {
			out = append(out, append([]int(nil), seq...))
			return
		}
		for d := range left {
			if left[d] > 0 {
				left[d]--
				seq = append(seq, d)
				rec()
				seq = seq[:len(seq)-1]
				left[d]++
			}
		}
	}
	rec()
	return out
}

// refEvaluate is the plain objective of a plan of p: stage s runs on kinds[device[s]] and
// costs its nodes' work, plus (size of every tensor of which it holds some but not all of
// producer ∪ consumers) / B, plus (params − M)^+ / B. ok is false when an ordered tensor flows
// to an earlier stage, a colocation group is split or a stage exceeds its cap.
func refEvaluate(p *partition.Problem, stage, device []int) (obj float64, ok bool) {
	kinds := refKinds(p)
	K := len(device)
	work := make([]float64, K)
	params := make([]float64, K)
	comm := make([]float64, K)
	for v, s := range stage {
		work[s] += kinds[device[s]].work[v]
		if p.Params != nil {
			params[s] += p.Params[v]
		}
	}
	for _, t := range p.Tensors {
		holds := map[int]bool{stage[t.Producer]: true}
		for _, c := range t.Consumers {
			if !t.Unordered && stage[c] < stage[t.Producer] {
				return 0, false
			}
			holds[stage[c]] = true
		}
		if len(holds) > 1 {
			for s := range holds {
				comm[s] += t.Size
			}
		}
	}
	for _, g := range p.Colocate {
		for _, v := range g {
			if stage[v] != stage[g[0]] {
				return 0, false
			}
		}
	}
	for s := 0; s < K; s++ {
		k := kinds[device[s]]
		if k.cap > 0 && params[s] > k.cap*(1+1e-12) {
			return 0, false
		}
		cost := work[s]
		if !math.IsInf(k.bw, 1) {
			cost += comm[s] / k.bw
			if k.fastMem > 0 && params[s] > k.fastMem {
				cost += (params[s] - k.fastMem) / k.bw
			}
		}
		obj = math.Max(obj, cost)
	}
	return obj, true
}

// refSolveProblem tries every device sequence and every assignment of nodes to stages.
func refSolveProblem(p *partition.Problem) refResult {
	kinds := refKinds(p)
	counts := make([]int, len(kinds))
	for i, k := range kinds {
		counts[i] = k.count
	}
	n := len(p.Work)
	best := refResult{opt: math.Inf(1)}
	for _, dev := range deviceSequences(counts) {
		K := len(dev)
		stage := make([]int, n)
		var rec func(v int)
		rec = func(v int) {
			if v == n {
				if obj, ok := refEvaluate(p, stage, dev); ok && obj < best.opt {
					best = refResult{feasible: true, opt: obj}
				}
				return
			}
			for s := 0; s < K; s++ {
				stage[v] = s
				rec(v + 1)
			}
		}
		rec(0)
	}
	return best
}

// dnnJSON is the dnn-partitioning file format (Tarnawski et al. 2020), as the reference reads
// it: the generator writes it, LoadDNN and the reference each read it on their own.
type dnnJSON struct {
	MaxSizePerFPGA float64       `json:"maxSizePerFPGA"`
	MaxFPGAs       int           `json:"maxFPGAs"`
	MaxCPUs        int           `json:"maxCPUs"`
	Nodes          []dnnJSONNode `json:"nodes"`
	Edges          []dnnJSONEdge `json:"edges"`
}

type dnnJSONNode struct {
	ID              int     `json:"id"`
	SupportedOnFpga bool    `json:"supportedOnFpga"`
	CPULatency      float64 `json:"cpuLatency"`
	FPGALatency     float64 `json:"fpgaLatency"`
	IsBackwardNode  bool    `json:"isBackwardNode"`
	ColorClass      *int    `json:"colorClass,omitempty"`
	Size            float64 `json:"size"`
}

type dnnJSONEdge struct {
	SourceID int     `json:"sourceId"`
	DestID   int     `json:"destId"`
	Cost     float64 `json:"cost"`
}

// refSolveDNN is the optimum of the authors' throughput model (their paper §3 and §5, and
// throughput-dp/dp.cpp), straight from the file: k accelerators and c CPUs each run one
// contiguous stage, in any order; nodes of one colour class share a stage; a forward edge
// u → v puts v's stage no earlier than u's; for a backward edge ub → vb that touches a class
// without forward nodes, the class of vb comes no later than the class of ub (dp.cpp's
// mirrored artificial edges); an accelerator stage costs its fpgaLatency plus c(u) for every
// node u with an edge that crosses the stage's boundary, and holds at most maxSizePerFPGA
// bytes; a CPU stage costs its cpuLatency alone.
func refSolveDNN(f *dnnJSON, k, cpus int) refResult {
	n := len(f.Nodes)
	idx := map[int]int{}
	for i, nd := range f.Nodes {
		idx[nd.ID] = i
	}
	class := make([]int, n)
	for i, nd := range f.Nodes {
		if nd.ColorClass != nil {
			class[i] = *nd.ColorClass
		} else {
			class[i] = -1 - i
		}
	}
	hasFwd := map[int]bool{}
	for i, nd := range f.Nodes {
		if !nd.IsBackwardNode {
			hasFwd[class[i]] = true
		}
	}
	outCost := make([]float64, n)
	type pair struct{ a, b int }
	var order []pair // stage(a) ≤ stage(b)
	var edges []pair
	for _, e := range f.Edges {
		u, v := idx[e.SourceID], idx[e.DestID]
		outCost[u] = math.Max(outCost[u], e.Cost)
		edges = append(edges, pair{u, v})
		bu, bv := f.Nodes[u].IsBackwardNode, f.Nodes[v].IsBackwardNode
		switch {
		case !bu && !bv:
			order = append(order, pair{u, v})
		case bu && bv && (!hasFwd[class[u]] || !hasFwd[class[v]]):
			order = append(order, pair{v, u})
		}
	}
	counts := []int{k, cpus}
	best := refResult{opt: math.Inf(1)}
	stage := make([]int, n)
	for _, dev := range deviceSequences(counts) {
		K := len(dev)
		eval := func() (float64, bool) {
			for _, o := range order {
				if stage[o.a] > stage[o.b] {
					return 0, false
				}
			}
			for i := range f.Nodes {
				for j := range f.Nodes {
					if class[i] == class[j] && stage[i] != stage[j] {
						return 0, false
					}
				}
			}
			obj := 0.0
			for s := 0; s < K; s++ {
				lat, size := 0.0, 0.0
				for i, nd := range f.Nodes {
					if stage[i] != s {
						continue
					}
					if dev[s] == 1 {
						lat += nd.CPULatency
					} else {
						lat += nd.FPGALatency
						size += nd.Size
					}
				}
				if dev[s] == 0 {
					if size > f.MaxSizePerFPGA*(1+1e-12) {
						return 0, false
					}
					paying := map[int]bool{}
					for _, e := range edges {
						if (stage[e.a] == s) != (stage[e.b] == s) {
							paying[e.a] = true
						}
					}
					srcs := make([]int, 0, len(paying))
					for u := range paying {
						srcs = append(srcs, u)
					}
					sort.Ints(srcs)
					for _, u := range srcs {
						lat += outCost[u]
					}
				}
				obj = math.Max(obj, lat)
			}
			return obj, true
		}
		var rec func(v int)
		rec = func(v int) {
			if v == n {
				if obj, ok := eval(); ok && obj < best.opt {
					best = refResult{feasible: true, opt: obj}
				}
				return
			}
			for s := 0; s < K; s++ {
				stage[v] = s
				rec(v + 1)
			}
		}
		rec(0)
	}
	return best
}
