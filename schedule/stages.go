package schedule

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Stage calls: every stage — a run of a device's tasks (batched: batches) that one runtime
// call executes (opensStage) — costs its device's CallCost. A plan from any method then goes
// through mergeStages, which moves whole stages onto the device of a neighbouring stage while
// that makes the plan faster, so that no stage remains whose merge into its neighbours pays,
// and which enforces Options.MaxStages.

// StageCapError says that no plan within Options.MaxStages was found. Solve returns it as the
// cause of a *diag.Error of kind no-plan (the message is the same), for callers that need the
// fewest stages reached (errors.As finds it).
type StageCapError struct {
	Method    string
	MaxStages int
	// MaxStagesPerDevice is Options.MaxStagesPerDevice; PerDevice the most stages on one
	// device of the plan reached.
	MaxStagesPerDevice int
	Stages             int // the fewest stages reached
	PerDevice          int
}

func (e *StageCapError) Error() string {
	var cap []string
	if e.MaxStages > 0 {
		cap = append(cap, fmt.Sprintf("at most %d stages", e.MaxStages))
	}
	if e.MaxStagesPerDevice > 0 {
		cap = append(cap, fmt.Sprintf("at most %d stages per device", e.MaxStagesPerDevice))
	}
	return fmt.Sprintf("schedule: %s found no plan with %s (the closest it reached has %d stages, %d on one device)", e.Method, strings.Join(cap, " and "), e.Stages, e.PerDevice)
}

// StageCount is the number of stages (runtime calls) of a schedule.
func (sc *Schedule) StageCount() int {
	n := 0
	for _, x := range sc.Stages {
		n += x
	}
	return n
}

// stageMove is one candidate move: stage st's nodes onto device to.
type stageMove struct {
	pl *Placement
	sc *Schedule
}

// stageMoves lists the plans that move one stage of sc as a whole onto the device of a stage
// it exchanges a tensor with. A stage's members are its tasks: nodes in latency mode, a
// node's batch on a device in batched mode (moving it moves those granules).
func (in *inst) stageMoves(pl *Placement, sc *Schedule) []stageMove {
	return in.stageMovesTo(pl, sc, false)
}

// stageMovesTo is stageMoves, with anyUsed also onto every other device that runs a stage:
// a batched route of granules that exchanges nothing with the rest (a device's own inputs)
// has no neighbour, but merging it into another device's stage saves its call.
func (in *inst) stageMovesTo(pl *Placement, sc *Schedule, anyUsed bool) []stageMove {
	k := in.numDevices
	batched := !in.latency()
	// Tasks are keyed node·K + device; devOf gives a granule's (latency: the node's) device.
	devOf := func(i, l int) int {
		if batched {
			return pl.Granules[i][l]
		}
		return pl.Device[i]
	}
	stageOf := map[int]int{}
	nst := 0
	for _, t := range sc.Tasks {
		stageOf[t.Node*k+t.Device] = t.Stage
		nst = max(nst, t.Stage+1)
	}
	members := make([][]int, nst)
	for _, t := range sc.Tasks {
		members[t.Stage] = append(members[t.Stage], t.Node*k+t.Device)
	}
	targets := make([][]int, nst) // devices of neighbouring stages
	for e, ed := range in.problem.Edges {
		if in.free[e] {
			continue
		}
		a, b := ed.From, ed.To
		for l := range in.numGranules {
			u, v := devOf(a, l), devOf(b, l)
			if u == v {
				continue
			}
			sa, sb := stageOf[a*k+u], stageOf[b*k+v]
			if !slices.Contains(targets[sa], v) {
				targets[sa] = append(targets[sa], v)
			}
			if !slices.Contains(targets[sb], u) {
				targets[sb] = append(targets[sb], u)
			}
		}
	}
	if anyUsed {
		stDev := make([]int, nst)
		var used []int
		for _, t := range sc.Tasks {
			stDev[t.Stage] = t.Device
			if !slices.Contains(used, t.Device) {
				used = append(used, t.Device)
			}
		}
		for st := range nst {
			for _, w := range used {
				if w != stDev[st] && !slices.Contains(targets[st], w) {
					targets[st] = append(targets[st], w)
				}
			}
		}
	}
	var out []stageMove
	for st := range nst {
		slices.Sort(targets[st])
	next:
		for _, w := range targets[st] {
			for _, t := range members[st] {
				if !in.canRun(t/k, w) {
					continue next
				}
			}
			q := pl.Clone()
			q.EdgeOrder = nil // the transfers change: earliest-ready first
			for _, t := range members[st] {
				i, v := t/k, t%k
				if !batched {
					q.Device[i] = w
					continue
				}
				had := false
				for l, u := range q.Granules[i] {
					had = had || u == w
					if u == v {
						q.Granules[i][l] = w
					}
				}
				if q.BatchOrder != nil && (!had || q.BatchOrder[i][v] < q.BatchOrder[i][w]) {
					q.BatchOrder[i][w] = q.BatchOrder[i][v] // the merged batch keeps the earlier priority
				}
			}
			nsc, err := in.simulate(q) // an unsupported batch size is an error: no move
			if err != nil || (sc.Feasible && !nsc.Feasible) {
				continue
			}
			out = append(out, stageMove{q, nsc})
		}
	}
	return out
}

// simBudget bounds the simulations of a walk of stage moves (each candidate move is one):
// a deterministic stand-in for the clock, which the merge after a search does not watch.
// Each step's moves are judged in full; the walk stops at the first step after the budget is
// spent. A nil budget never runs out.
type simBudget struct{ left int }

func (b *simBudget) out() bool { return b != nil && b.left <= 0 }

func (b *simBudget) spend(n int) {
	if b != nil {
		b.left -= n
	}
}

// repairWork is the work of one repair walk (repairStages) in node-simulations: a
// simulation takes about a microsecond per node, so a walk takes a few seconds at most.
// A walk takes about stages² · devices simulations: a search's plan of 250 stages on three
// devices (a RandWire graph of 1,100 nodes, seeded) took 80,000 and a minute; merging a
// few dozen stages takes a few thousand. A walk cut short leaves a plan over the cap, which
// mergeStages does not keep: the other walk, or the best single-device plan, is kept.
const repairWork = 5_000_000

// repairBudget is one repair walk's budget of simulations (repairWork).
func (in *inst) repairBudget() *simBudget {
	return &simBudget{left: max(repairWork/max(in.numNodes, 1), 1000)}
}

// stageCap is a cap on a plan's stages: in all (Options.MaxStages) and on each device
// (Options.MaxStagesPerDevice); 0 leaves that part uncapped.
type stageCap struct{ total, perDevice int }

func (c stageCap) none() bool { return c.total <= 0 && c.perDevice <= 0 }

// excess is how many stages sc has over the cap: over the total, plus over each device's.
func (c stageCap) excess(sc *Schedule) int {
	e := 0
	if c.total > 0 && sc.StageCount() > c.total {
		e += sc.StageCount() - c.total
	}
	if c.perDevice > 0 {
		for _, n := range sc.Stages {
			if n > c.perDevice {
				e += n - c.perDevice
			}
		}
	}
	return e
}

// mergeStages returns pl improved by stage moves (each kept when the makespan falls by more
// than a relative 1e-9) and within the cap c. A plan over the cap is repaired in up to three
// ways — the stage move of least makespan among those that lower the excess over the cap,
// repeated until the cap holds (a cheap merge first: the fewest stages are not the aim, the
// fastest plan within the cap is); the move with the least excess (then the smallest
// makespan), repeated; the best single-device plan (one stage) — each repair is then improved
// by the moves that keep the cap, and the fastest result is kept. ok is false when no plan
// within the cap fits memory. Every step is judged by the simulator.
func (in *inst) mergeStages(pl *Placement, sc *Schedule, c stageCap) (*Placement, *Schedule, int, bool) {
	if c.none() || c.excess(sc) == 0 {
		pl, sc, moves := in.improveStages(nil, pl, sc, c, 0)
		return pl, sc, moves, true
	}
	var best *stageMove
	bestMoves := 0
	least := stageMove{pl, sc} // the least excess a repair reached above the cap (for the cap error)
	try := func(p *Placement, s *Schedule, moves int) {
		if e := c.excess(s); e > 0 && e < c.excess(least.sc) {
			least = stageMove{p, s}
		}
		if c.excess(s) > 0 || (sc.Feasible && !s.Feasible) {
			return
		}
		p, s, moves = in.improveStages(nil, p, s, c, moves)
		if best == nil || s.Makespan < best.sc.Makespan*(1-1e-9) {
			best, bestMoves = &stageMove{p, s}, moves
		}
	}
	for _, fewest := range []bool{false, true} {
		p, s, moves := in.repairStages(in.repairBudget(), pl, sc, c, fewest)
		try(p, s, moves)
	}
	for _, m := range in.oneDevice(pl) {
		if m.sc.Feasible {
			try(m.pl, m.sc, 1)
		}
	}
	if best == nil {
		return least.pl, least.sc, 0, false
	}
	return best.pl, best.sc, bestMoves, true
}

// repairStages takes stage moves (onto a neighbouring stage's device or any other device in
// use) that lower the excess over the cap while there is one: the one of least makespan
// (fewest false) or the one of least excess, then fewest stages (fewest true), ties by the
// other criterion. It
// stops when no move lowers the excess.
func (in *inst) repairStages(b *simBudget, pl *Placement, sc *Schedule, c stageCap, fewest bool) (*Placement, *Schedule, int) {
	moves := 0
	for c.excess(sc) > 0 && !b.out() {
		var best *stageMove
		cands := in.stageMovesTo(pl, sc, true)
		b.spend(len(cands))
		for _, m := range cands {
			n := c.excess(m.sc)
			if n >= c.excess(sc) {
				continue
			}
			if best == nil {
				best = &m
				continue
			}
			bn, faster := c.excess(best.sc), m.sc.Makespan < best.sc.Makespan
			fewer := m.sc.StageCount() < best.sc.StageCount()
			same := m.sc.StageCount() == best.sc.StageCount()
			if (fewest && (n < bn || (n == bn && (fewer || (same && faster))))) ||
				(!fewest && (faster || (m.sc.Makespan == best.sc.Makespan && n < bn))) {
				best = &m
			}
		}
		if best == nil {
			break
		}
		pl, sc = best.pl, best.sc
		moves++
	}
	return pl, sc, moves
}

// improveStages takes the move (a single stage move, or every node onto one device: a plan of
// many small stages may lose to one device while no single move pays) of least makespan while
// it lowers the makespan and keeps the cap c and feasibility; moves counts the moves taken
// before.
func (in *inst) improveStages(b *simBudget, pl *Placement, sc *Schedule, c stageCap, moves int) (*Placement, *Schedule, int) {
	for round := 0; round < 4*in.numNodes && !b.out(); round++ {
		var best *stageMove
		cands := append(in.stageMoves(pl, sc), in.oneDevice(pl)...)
		b.spend(len(cands))
		for _, m := range cands {
			if c.excess(m.sc) > 0 || (sc.Feasible && !m.sc.Feasible) {
				continue
			}
			if m.sc.Makespan < sc.Makespan*(1-1e-9) && (best == nil || m.sc.Makespan < best.sc.Makespan) {
				best = &m
			}
		}
		if best == nil {
			break
		}
		pl, sc = best.pl, best.sc
		moves++
	}
	return pl, sc, moves
}

// oneDevice lists the plans that put every node (every granule) on one device (one stage),
// keeping pl's node priorities; devices where some node cannot run (or, batched, cannot run
// all L granules in one batch) are skipped.
func (in *inst) oneDevice(pl *Placement) []stageMove {
	var out []stageMove
	for u := range in.numDevices {
		q := &Placement{Order: pl.Order}
		ok := true
		if in.latency() {
			q.Device = make([]int, in.numNodes)
			for i := range q.Device {
				q.Device[i] = u
				ok = ok && in.canRun(i, u)
			}
		} else {
			q.Granules = make([][]int, in.numNodes)
			for i := range q.Granules {
				q.Granules[i] = make([]int, in.numGranules)
				for l := range q.Granules[i] {
					q.Granules[i][l] = u
				}
				ok = ok && in.sizeOK[u][in.numGranules] && !math.IsInf(in.batchTime[i][u][in.numGranules], 1)
			}
		}
		if !ok {
			continue
		}
		if s, err := in.simulate(q); err == nil {
			out = append(out, stageMove{q, s})
		}
	}
	return out
}
