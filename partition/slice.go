package partition

import (
	"math"
)

// maxCountStates caps the number of device-count states of the slicing DP; beyond it the
// device order is fixed (chosen heuristically) and the DP runs over a chain of stages.
const maxCountStates = 4096

// transition enters a DP state by appending one stage of device dev after state from.
type transition struct {
	from int32
	dev  int32
}

// automaton describes which sequences of stage devices the slicing DP may use. For a
// homogeneous pipeline it is the chain 0 → 1 → … → K. For a heterogeneous one it is the
// lattice of device-count vectors (state s = how many stages of each device are used so far),
// so the DP chooses the device order itself (exhaustively, for the given node order); when
// that lattice is too large, it is a chain over a fixed device order.
type automaton struct {
	nStates int
	final   int
	in      [][]transition
	used    []int   // stages consumed to reach the state
	byUsed  [][]int // states grouped by used, each ascending
	total   int     // number of stage slots
	order   []int   // for a chain: device of each position; nil for the lattice
}

// countAutomaton builds the device-count lattice, or nil when it exceeds maxCountStates.
func countAutomaton(counts []int) *automaton {
	states := 1
	for _, k := range counts {
		states *= k + 1
		if states > maxCountStates {
			return nil
		}
	}
	a := &automaton{nStates: states, final: states - 1, in: make([][]transition, states), used: make([]int, states)}
	radix := make([]int, len(counts))
	r := 1
	for d, k := range counts {
		radix[d] = r
		r *= k + 1
		a.total += k
	}
	for s := 0; s < states; s++ {
		rest := s
		for d := range counts {
			sd := rest % (counts[d] + 1)
			rest /= counts[d] + 1
			a.used[s] += sd
			if sd > 0 {
				a.in[s] = append(a.in[s], transition{from: int32(s - radix[d]), dev: int32(d)})
			}
		}
	}
	a.group()
	return a
}

// chainAutomaton is the DP over a fixed device order (one device index per position).
func chainAutomaton(order []int) *automaton {
	K := len(order)
	a := &automaton{nStates: K + 1, final: K, in: make([][]transition, K+1), used: make([]int, K+1), total: K, order: append([]int(nil), order...)}
	for j := 1; j <= K; j++ {
		a.used[j] = j
		a.in[j] = []transition{{from: int32(j - 1), dev: int32(order[j-1])}}
	}
	a.group()
	return a
}

func (a *automaton) group() {
	a.byUsed = make([][]int, a.total+1)
	for s := 0; s < a.nStates; s++ {
		a.byUsed[a.used[s]] = append(a.byUsed[a.used[s]], s)
	}
}

// slicer is SliceGraph (seed 000 Algorithm 1) for one goroutine: the optimal cut of a
// topological order into at most K contiguous segments (possibly empty, each on a device the
// automaton allows), with the segment costs f(π[l..r]) of Eq. (3) computed on the fly.
//
// For each right end r it sweeps the left end l downwards, adding one node at a time and
// keeping, per tensor, how many members of T_t = {producer} ∪ consumers are inside the
// segment (a tensor is cut iff 0 < count < |T_t|, seed 000 §4.3 (b)). Memory is O(n·states +
// tensors); no n×n table is built. A bound U prunes: the sweep stops once the segment's work
// alone reaches U, and DP states that cannot stay below U by pigeonhole on the prefix and
// suffix work are skipped. The result is exact whenever the optimum is below U.
type slicer struct {
	c    *core
	a    *automaton
	D    []float64 // D[s*(n+1)+r]: best bottleneck of the first r nodes in state s
	argL []int32   // left end l of the last segment; -1: state entered by an empty stage
	argT []int32   // transition index used
	// tensor bookkeeping
	stamp []uint32
	cnt   []int32
	epoch uint32
	// per-order scratch
	prefix []float64 // prefix min-work along the order
	segW   []float64 // per device segment work
	cost   []float64 // per device segment cost
	devOK  []bool    // device has count > 0
	// onSegment, when set (tests), sees every segment cost the sweep computes: the segment is
	// order[l:r] and cost[d] its cost on device d.
	onSegment func(l, r int, cost []float64)
}

func newSlicer(c *core, a *automaton) *slicer {
	s := &slicer{c: c, a: a,
		stamp: make([]uint32, len(c.tProd)), cnt: make([]int32, len(c.tProd)),
		segW: make([]float64, len(c.devs)), cost: make([]float64, len(c.devs)), devOK: make([]bool, len(c.devs))}
	for d, k := range c.counts {
		s.devOK[d] = k > 0
	}
	return s
}

func (s *slicer) nextEpoch() {
	s.epoch++
	if s.epoch == 0 { // wrapped: clear stamps
		for i := range s.stamp {
			s.stamp[i] = 0
		}
		s.epoch = 1
	}
}

// run fills the DP table for order and returns the optimal bottleneck if it is < bound, else
// +Inf.
func (s *slicer) run(order []int32, bound float64) float64 {
	c, a := s.c, s.a
	n := len(order)
	S := a.nStates
	if cap(s.D) < S*(n+1) {
		s.D = make([]float64, S*(n+1))
		s.argL = make([]int32, S*(n+1))
		s.argT = make([]int32, S*(n+1))
	}
	D, argL, argT := s.D[:S*(n+1)], s.argL[:S*(n+1)], s.argT[:S*(n+1)]
	if cap(s.prefix) < n+1 {
		s.prefix = make([]float64, n+1)
	}
	prefix := s.prefix[:n+1]
	prefix[0] = 0
	for i, v := range order {
		prefix[i+1] = prefix[i] + c.minWork[v]
	}
	total := prefix[n]
	stride := n + 1
	for st := 0; st < S; st++ {
		D[st*stride] = 0
		argL[st*stride] = -1
		argT[st*stride] = -1
	}
	slack := 1 + 1e-9
	nd := len(c.devs)
	maxCap := 0.0
	for d := 0; d < nd; d++ {
		if s.devOK[d] && c.memCap[d] > maxCap {
			maxCap = c.memCap[d]
		}
	}
	K := a.total
	lastAlive := 0
	for r := 1; r <= n; r++ {
		for st := 0; st < S; st++ {
			D[st*stride+r] = math.Inf(1)
		}
		// Pigeonhole window on the number of used stages (all blocks of a solution < bound
		// have work < bound): used·bound > prefix work and (K − used)·bound > suffix work.
		ulo, uhi := 0, K
		if !math.IsInf(bound, 1) {
			for ulo <= K && float64(ulo)*bound*slack <= prefix[r] {
				ulo++
			}
			if suffix := total - prefix[r]; suffix > 0 {
				for uhi >= 0 && float64(K-uhi)*bound*slack <= suffix {
					uhi--
				}
			}
			if ulo < 1 {
				ulo = 1
			}
			if ulo > uhi {
				continue
			}
		} else if ulo < 1 {
			ulo = 1
		}
		s.nextEpoch()
		ep := s.epoch
		for d := range s.segW {
			s.segW[d] = 0
		}
		cut, params := 0.0, 0.0
		for l := r - 1; l >= 0; l-- {
			v := order[l]
			minW := math.Inf(1)
			for d := 0; d < nd; d++ {
				if s.devOK[d] {
					s.segW[d] += c.work[d][v]
					if s.segW[d] < minW {
						minW = s.segW[d]
					}
				}
			}
			if minW >= bound {
				break
			}
			params += c.params[v]
			if params > maxCap {
				break
			}
			for _, t := range c.incOf(int(v)) {
				if s.stamp[t] != ep {
					s.stamp[t] = ep
					s.cnt[t] = 0
				}
				s.cnt[t]++
				if s.cnt[t] == 1 {
					cut += c.tSize[t]
				}
				if s.cnt[t] == c.tCard[t] {
					cut -= c.tSize[t]
				}
			}
			for d := 0; d < nd; d++ {
				if !s.devOK[d] || params > c.memCap[d] {
					s.cost[d] = math.Inf(1)
					continue
				}
				cc := cut * c.coef[d]
				if cc < 0 {
					cc = 0
				}
				s.cost[d] = s.segW[d] + cc + c.overflow(d, params)
			}
			if s.onSegment != nil {
				s.onSegment(l, r, s.cost)
			}
			// Segment π[l..r-1] (0-based) is the last block; predecessors are states at l.
			for u := ulo; u <= uhi; u++ {
				for _, st := range a.byUsed[u] {
					cell := st*stride + r
					best := D[cell]
					for ti, tr := range a.in[st] {
						prev := D[int(tr.from)*stride+l]
						cost := s.cost[tr.dev]
						if cost > prev {
							prev = cost
						}
						if prev < best {
							best = prev
							D[cell] = prev
							argL[cell] = int32(l)
							argT[cell] = int32(ti)
						}
					}
				}
			}
		}
		// Empty stages: a state may be entered by a stage holding nothing.
		alive := false
		for u := ulo; u <= uhi; u++ {
			for _, st := range a.byUsed[u] {
				cell := st*stride + r
				for ti, tr := range a.in[st] {
					if prev := D[int(tr.from)*stride+r]; prev < D[cell] {
						D[cell] = prev
						argL[cell] = -1
						argT[cell] = int32(ti)
					}
				}
				if D[cell] < bound {
					alive = true
				}
			}
		}
		// A solution below the bound has a stage boundary at some alive position; if the
		// nodes since the last alive position already weigh the bound, no segment can span
		// them and no solution is below the bound (this ends hopeless orders early).
		if alive {
			lastAlive = r
		} else if !math.IsInf(bound, 1) && prefix[r]-prefix[lastAlive] >= bound*slack {
			return math.Inf(1)
		}
	}
	v := D[a.final*stride+n]
	if v >= bound {
		return math.Inf(1)
	}
	return v
}

// segments reconstructs the last run (which must have returned a finite value): the stage
// (pipeline position) of each core node, and the device of each position. For the lattice,
// non-empty segments take the first positions and unused device slots become empty trailing
// stages; for a chain, positions are the chain's.
func (s *slicer) segments(order []int32) (stage []int, device []int) {
	c, a := s.c, s.a
	n := len(order)
	stride := n + 1
	type seg struct{ l, r, dev, pos int }
	var segs []seg
	st, r := a.final, n
	for r > 0 {
		cell := st*stride + r
		tr := a.in[st][s.argT[cell]]
		if l := int(s.argL[cell]); l >= 0 {
			segs = append(segs, seg{l, r, int(tr.dev), st - 1})
			r = l
		}
		st = int(tr.from)
	}
	stage = make([]int, c.n)
	if a.order != nil {
		device = append([]int(nil), a.order...)
		for _, sg := range segs {
			for i := sg.l; i < sg.r; i++ {
				stage[order[i]] = sg.pos
			}
		}
		return stage, device
	}
	used := make([]int, len(c.devs))
	for i := len(segs) - 1; i >= 0; i-- {
		sg := segs[i]
		p := len(device)
		device = append(device, sg.dev)
		used[sg.dev]++
		for j := sg.l; j < sg.r; j++ {
			stage[order[j]] = p
		}
	}
	for d, k := range c.counts {
		for ; used[d] < k; used[d]++ {
			device = append(device, d)
		}
	}
	return stage, device
}
