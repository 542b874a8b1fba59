package partition

import (
	"context"
	"encoding/binary"
	"math"
)

// BoundIdealDP names the exact DP over ideals, when it completes.
const BoundIdealDP = "ideal-dp"

// idealDP solves MTPP exactly by dynamic programming over the ideals (down-closed node sets)
// of the core DAG, in the spirit of Tarnawski et al. (NeurIPS 2020): every plan is a chain of
// ideals ∅ = I_0 ⊆ I_1 ⊆ … ⊆ I_K = V with stage j = I_j \ I_{j−1}, so
//
//	D[s][I] = min over ideals I' ⊆ I and transitions (s', d) → s of max(D[s'][I'], f_d(I \ I'))
//
// over the states s of the stage automaton (which also chooses the device of each stage).
// Only stages of work below the bound U are generated, so the result is exact whenever the
// optimum is below U. It gives up (ok = false) when the DAG has more than maxIdeals ideals or
// the transitions exceed maxPairs: it is meant for narrow graphs (chains of blocks, layer
// graphs), where it certifies optimality outright. ok = false also when ctx ends first;
// then ctx.Err() is set, which is how callers tell a clock stop from a size stop.
func (c *core) idealDP(ctx context.Context, a *automaton, U float64, maxIdeals, maxPairs int) (val float64, stage, device []int, ok bool) {
	// The maps of node sets are keyed by a comparable copy of the set's words: a machine word
	// or a small array where the set fits one (no allocation per lookup; the enumeration and
	// pair loops are most of Solve's time on wide graphs, where they run to their caps), the
	// set's bytes as a string beyond 2048 nodes. The key type changes nothing else.
	switch words := (c.n + 63) / 64; {
	case words <= 1:
		return idealDPKeyed(c, ctx, a, U, maxIdeals, maxPairs, func(b []uint64) (k uint64) {
			if len(b) > 0 {
				k = b[0]
			}
			return k
		})
	case words <= 2:
		return idealDPKeyed(c, ctx, a, U, maxIdeals, maxPairs, func(b []uint64) (k [2]uint64) { copy(k[:], b); return k })
	case words <= 4:
		return idealDPKeyed(c, ctx, a, U, maxIdeals, maxPairs, func(b []uint64) (k [4]uint64) { copy(k[:], b); return k })
	case words <= 8:
		return idealDPKeyed(c, ctx, a, U, maxIdeals, maxPairs, func(b []uint64) (k [8]uint64) { copy(k[:], b); return k })
	case words <= 32:
		return idealDPKeyed(c, ctx, a, U, maxIdeals, maxPairs, func(b []uint64) (k [32]uint64) { copy(k[:], b); return k })
	default:
		return idealDPKeyed(c, ctx, a, U, maxIdeals, maxPairs, func(b []uint64) string {
			buf := make([]byte, 8*len(b))
			for i, x := range b {
				binary.LittleEndian.PutUint64(buf[8*i:], x)
			}
			return string(buf)
		})
	}
}

// idealDPKeyed is idealDP with node sets keyed by key(set) in its maps.
func idealDPKeyed[K comparable](c *core, ctx context.Context, a *automaton, U float64, maxIdeals, maxPairs int, key func([]uint64) K) (val float64, stage, device []int, ok bool) {
	n := c.n
	words := (n + 63) / 64
	has := func(b []uint64, i int) bool { return b[i/64]&(1<<(uint(i)%64)) != 0 }
	// Enumerate ideals breadth-first: an ideal's sub-ideals come before it.
	var ideals [][]uint64
	index := map[K]int32{}
	empty := make([]uint64, words)
	ideals = append(ideals, empty)
	index[key(empty)] = 0
	predIn := func(I []uint64, v int) bool {
		for _, p := range c.predOf(v) {
			if !has(I, int(p)) {
				return false
			}
		}
		return true
	}
	for qi := 0; qi < len(ideals); qi++ {
		if qi%1024 == 0 && ctx.Err() != nil {
			return 0, nil, nil, false
		}
		I := ideals[qi]
		for v := 0; v < n; v++ {
			if has(I, v) || !predIn(I, v) {
				continue
			}
			J := append([]uint64(nil), I...)
			J[v/64] |= 1 << (uint(v) % 64)
			k := key(J)
			if _, ok := index[k]; ok {
				continue
			}
			if len(ideals) >= maxIdeals {
				return 0, nil, nil, false
			}
			index[k] = int32(len(ideals))
			ideals = append(ideals, J)
		}
	}
	N := len(ideals)
	S := a.nStates
	D := make([]float64, S*N)
	argP := make([]int32, S*N) // predecessor ideal; −1: entered by an empty stage
	argT := make([]int32, S*N)
	for i := range D {
		D[i] = math.Inf(1)
	}
	for s := 0; s < S; s++ {
		D[s*N] = 0
		argP[s*N] = -1
		argT[s*N] = -1
	}
	nd := len(c.devs)
	cnt := make([]int32, len(c.tProd))
	segW := make([]float64, nd)
	cost := make([]float64, nd)
	var cut, params float64
	inS := make([]uint64, words)
	seen := map[K]bool{}
	pairs := 0
	sub := make([]uint64, words)
	add := func(x int, sign int32) {
		for d := 0; d < nd; d++ {
			segW[d] += float64(sign) * c.work[d][x]
		}
		params += float64(sign) * c.params[x]
		for _, t := range c.incOf(x) {
			if sign > 0 {
				cnt[t]++
				if cnt[t] == 1 {
					cut += c.tSize[t]
				}
				if cnt[t] == c.tCard[t] {
					cut -= c.tSize[t]
				}
			} else {
				if cnt[t] == c.tCard[t] {
					cut += c.tSize[t]
				}
				if cnt[t] == 1 {
					cut -= c.tSize[t]
				}
				cnt[t]--
			}
		}
		inS[x/64] ^= 1 << (uint(x) % 64)
	}
	minWork := func() float64 {
		m := math.Inf(1)
		for d := 0; d < nd; d++ {
			if c.counts[d] > 0 && segW[d] < m {
				m = segW[d]
			}
		}
		return m
	}
	for i := 1; i < N; i++ {
		if i%256 == 0 && ctx.Err() != nil {
			return 0, nil, nil, false
		}
		I := ideals[i]
		clear(seen)
		// Depth-first over the non-empty up-closed subsets S of I (the last stage), adding
		// maximal elements of I \ S one at a time with incremental tensor counts.
		var rec func() bool
		rec = func() bool {
			for x := 0; x < n; x++ {
				if !has(I, x) || has(inS, x) {
					continue
				}
				maximal := true
				for _, w := range c.succOf(x) {
					if has(I, int(w)) && !has(inS, int(w)) {
						maximal = false
						break
					}
				}
				if !maximal {
					continue
				}
				add(x, 1)
				k := key(inS)
				if !seen[k] && minWork() < U {
					seen[k] = true
					pairs++
					if pairs > maxPairs || (pairs%4096 == 0 && ctx.Err() != nil) {
						add(x, -1)
						return false
					}
					for w := range sub {
						sub[w] = I[w] &^ inS[w]
					}
					j := index[key(sub)]
					for d := 0; d < nd; d++ {
						cc := cut * c.coef[d]
						if cc < 0 {
							cc = 0
						}
						if params > c.memCap[d] {
							cost[d] = math.Inf(1)
						} else {
							cost[d] = segW[d] + cc + c.overflow(d, params)
						}
					}
					for st := 0; st < S; st++ {
						cell := st*N + i
						for ti, tr := range a.in[st] {
							v := math.Max(D[int(tr.from)*N+int(j)], cost[tr.dev])
							if v < D[cell] {
								D[cell] = v
								argP[cell] = j
								argT[cell] = int32(ti)
							}
						}
					}
					if !rec() {
						add(x, -1)
						return false
					}
				}
				add(x, -1)
			}
			return true
		}
		if !rec() {
			return 0, nil, nil, false
		}
		// Empty stages.
		for u := 1; u <= a.total; u++ {
			for _, st := range a.byUsed[u] {
				cell := st*N + i
				for ti, tr := range a.in[st] {
					if v := D[int(tr.from)*N+i]; v < D[cell] {
						D[cell] = v
						argP[cell] = -1
						argT[cell] = int32(ti)
					}
				}
			}
		}
	}
	full := N - 1 // the last ideal enumerated breadth-first is V
	val = D[a.final*N+full]
	if val >= U {
		return math.Inf(1), nil, nil, true
	}
	// Reconstruct: walk back from (final, V).
	type seg struct {
		nodes []int
		dev   int
		pos   int
	}
	var segs []seg
	st, i := a.final, full
	for i != 0 {
		cell := st*N + i
		tr := a.in[st][argT[cell]]
		if j := argP[cell]; j >= 0 {
			var nodes []int
			for v := 0; v < n; v++ {
				if has(ideals[i], v) && !has(ideals[j], v) {
					nodes = append(nodes, v)
				}
			}
			segs = append(segs, seg{nodes, int(tr.dev), st - 1})
			i = int(j)
		}
		st = int(tr.from)
	}
	stage = make([]int, n)
	if a.order != nil {
		device = append([]int(nil), a.order...)
		for _, sg := range segs {
			for _, v := range sg.nodes {
				stage[v] = sg.pos
			}
		}
		return val, stage, device, true
	}
	used := make([]int, nd)
	for k := len(segs) - 1; k >= 0; k-- {
		p := len(device)
		device = append(device, segs[k].dev)
		used[segs[k].dev]++
		for _, v := range segs[k].nodes {
			stage[v] = p
		}
	}
	for d, k := range c.counts {
		for ; used[d] < k; used[d]++ {
			device = append(device, d)
		}
	}
	return val, stage, device, true
}
