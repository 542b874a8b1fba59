package schedule

import "math"

// uniformRoutes is the batched plan of one split for every node: device u takes the same
// c_u granules of every node (contiguous granule maps), so each granule stays on one device
// from source to sink — data parallelism with no transfers and one stage per device used.
// Every split of the batch into sizes that every node supports on its devices (and that
// fits memory) is simulated, up to maxRouteSplits of them, and the fastest kept; nil when
// none fits. The constructive heuristics choose a split per node and, on models whose
// kernels have a large fixed cost, keep the whole batch on the fastest device where giving
// a granule to each slower device shortens the batch (GoogLeNet --batch 8 on a100-80g,t4:
// 532 µs on the A100 alone, 519 µs with one granule on the T4).
func (in *inst) uniformRoutes() *Placement {
	if in.latency() || in.pinnedGranules != nil {
		return nil
	}
	s := newBatchSim(in)
	k, L := in.numDevices, in.numGranules
	cnt := make([]int, k)
	var best [][]int
	bestMk := math.Inf(1)
	tried := 0
	var rec func(u, left int)
	try := func() {
		mem := make([]float64, k)
		for i := range in.numNodes {
			nd := &in.problem.Nodes[i]
			for u, c := range cnt {
				if c == 0 {
					continue
				}
				if !in.sizeOK[u][c] || math.IsInf(in.batchTime[i][u][c], 1) {
					return
				}
				mem[u] += nd.Weight + float64(c)*nd.Act
			}
		}
		for u := range k {
			if mem[u] > in.capacity[u] {
				return
			}
		}
		tried++
		gm := contiguous(cnt, L)
		g := make([][]int, in.numNodes)
		for i := range g {
			g[i] = gm
		}
		if mk := s.eval(g, in.topo); mk < bestMk {
			bestMk, best = mk, g
		}
	}
	rec = func(u, left int) {
		if tried >= maxRouteSplits {
			return
		}
		if u == k-1 {
			cnt[u] = left
			try()
			cnt[u] = 0
			return
		}
		for c := left; c >= 0; c-- {
			cnt[u] = c
			rec(u+1, left-c)
		}
		cnt[u] = 0
	}
	rec(0, L)
	if best == nil {
		return nil
	}
	g := make([][]int, in.numNodes)
	for i := range g {
		g[i] = append([]int(nil), best[i]...)
	}
	return &Placement{Granules: g}
}

// maxRouteSplits caps uniformRoutes' simulations (165 splits of 8 granules on 4 devices).
const maxRouteSplits = 4096
