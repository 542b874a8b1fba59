package schedule

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Chained solves across multi-channel cuts (digest-003 §4.3 option 2, with re-timing).
//
// Modules are solved one after the other. Module m sees the nodes of earlier modules that feed
// it as ghosts pinned where they were put (their granule maps in batched mode), and it sees
// the seam: the plan so far is simulated, the module starts when its last input is ready (t0)
// and every device still busy after t0 is blocked by a pinned node for the remainder. The
// stitched plan takes each module's start times, shifted by its t0, as priorities and is
// re-timed by the simulator.

type chainResult struct {
	nodes  []int
	dev    map[int]int
	gran   map[int][]int
	start  map[int]float64
	estart map[int]float64
	mk     float64
	solves int
}

func (in *inst) chain(ctx context.Context, ms *moduleSet, mods []int, entry map[int]int, limit time.Duration, share func([]int) []float64, o splitOptions) (*chainResult, error) {
	lat := in.latency()
	cr := &chainResult{dev: map[int]int{}, gran: map[int][]int{}, start: map[int]float64{}, estart: map[int]float64{}}
	for g, u := range entry {
		cr.dev[g] = u
	}
	prio := map[int]float64{}
	for mi, m := range mods {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		nodes := ms.modules[m]
		gd, gg := map[int]int{}, map[int][]int{}
		for _, i := range nodes {
			for _, p := range in.preds[i] {
				if ms.of[p] == m {
					continue
				}
				if u, ok := cr.dev[p]; ok && lat {
					gd[p] = u
				}
				if g, ok := cr.gran[p]; ok && !lat {
					gg[p] = g
				}
			}
		}
		t0 := 0.0
		var blocked []float64
		if len(cr.nodes) > 0 {
			fin, busy, err := in.chainTiming(cr, entry, prio)
			if err != nil {
				return nil, err
			}
			for g := range gd {
				t0 = math.Max(t0, fin[g])
			}
			for g := range gg {
				t0 = math.Max(t0, fin[g])
			}
			blocked = make([]float64, in.numDevices)
			for u := range blocked {
				blocked[u] = busy[u] - t0
			}
		}
		sp, err := in.makeSubBlocked(nodes, gd, gg, -1, -1, share(nodes), blocked)
		if err != nil {
			return nil, err
		}
		lim := limit / time.Duration(len(mods)-mi)
		began := time.Now()
		r := sp.solve(ctx, lim, o)
		limit -= time.Since(began)
		cr.solves++
		if o.progress != nil && !lat {
			o.progress(fmt.Sprintf("split: %d/%d modules", mi+1, len(mods)))
		}
		if r.err != nil || r.pl == nil {
			return nil, fmt.Errorf("module %d: %v", m, r.err)
		}
		for si := sp.ghosts; si < sp.real; si++ {
			if lat {
				cr.dev[sp.global[si]] = r.pl.Device[si]
			} else {
				cr.gran[sp.global[si]] = r.pl.Granules[si]
			}
		}
		for _, t := range r.sc.Tasks {
			if t.Node >= sp.ghosts && t.Node < sp.real {
				g := sp.global[t.Node]
				if v, ok := prio[g]; !ok || t0+t.Start < v {
					prio[g] = t0 + t.Start
				}
			}
		}
		cr.nodes = append(cr.nodes, nodes...)
	}
	// Re-time the whole chain.
	sp, pl, err := in.chainPlan(cr, entry, prio)
	if err != nil {
		return nil, err
	}
	sc, err := sp.in.simulate(pl)
	if err != nil {
		return nil, err
	}
	cr.mk = sc.Makespan
	for _, t := range sc.Tasks {
		if g := sp.global[t.Node]; t.Node >= sp.ghosts {
			if v, ok := cr.start[g]; !ok || t.Start < v {
				cr.start[g] = t.Start
			}
		}
	}
	for _, tr := range sc.Transfers {
		cr.estart[edgeKey(sp.global[tr.From], sp.global[tr.To])] = tr.Start
	}
	return cr, nil
}

// chainPlan is the sub-problem of everything chained so far and its plan.
func (in *inst) chainPlan(cr *chainResult, entry map[int]int, prio map[int]float64) (*subProblem, *Placement, error) {
	sp, err := in.makeSub(cr.nodes, entry, nil, -1, -1, nil)
	if err != nil {
		return nil, nil, err
	}
	pl := &Placement{Order: make([]float64, sp.in.numNodes)}
	if in.latency() {
		pl.Device = make([]int, sp.in.numNodes)
	} else {
		pl.Granules = make([][]int, sp.in.numNodes)
	}
	for si, g := range sp.global {
		pl.Order[si] = prio[g]
		if in.latency() {
			pl.Device[si] = cr.dev[g]
		} else {
			pl.Granules[si] = cr.gran[g]
		}
	}
	return sp, pl, nil
}

// chainTiming simulates what is chained so far: each node's finish and each device's end of
// busy time.
func (in *inst) chainTiming(cr *chainResult, entry map[int]int, prio map[int]float64) (map[int]float64, []float64, error) {
	sp, pl, err := in.chainPlan(cr, entry, prio)
	if err != nil {
		return nil, nil, err
	}
	sc, err := sp.in.simulate(pl)
	if err != nil {
		return nil, nil, err
	}
	fin := map[int]float64{}
	busy := make([]float64, in.numDevices)
	for _, t := range sc.Tasks {
		g := sp.global[t.Node]
		fin[g] = math.Max(fin[g], t.End)
		if t.End > t.Start {
			busy[t.Device] = math.Max(busy[t.Device], t.End)
		}
	}
	return fin, busy, nil
}

// splitBatched chains all modules (batched mode).
func (in *inst) splitBatched(ctx context.Context, ms *moduleSet, o splitOptions, deadline time.Time, share func([]int) []float64, out *splitOutcome) error {
	out.blocks = 1
	mods := make([]int, len(ms.modules))
	for m := range mods {
		mods[m] = m
	}
	limit := time.Duration(math.MaxInt64)
	if !deadline.IsZero() {
		limit = time.Until(deadline)
	}
	cr, err := in.chain(ctx, ms, mods, nil, limit, share, o)
	if err != nil {
		return fmt.Errorf("schedule: split: %w", err)
	}
	out.solves = cr.solves
	pl := &Placement{Granules: make([][]int, in.numNodes), Order: make([]float64, in.numNodes)}
	for i := range in.numNodes {
		pl.Granules[i] = cr.gran[i]
		pl.Order[i] = cr.start[i]
	}
	sc, err := in.simulate(pl)
	if err != nil {
		return fmt.Errorf("schedule: split stitched an invalid plan: %w", err)
	}
	out.pl, out.sc = pl, sc
	return nil
}
