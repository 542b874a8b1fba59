package schedule

import (
	"fmt"
	"slices"
)

// Stage calls (latency mode): every stage — a run of a device's tasks that one runtime call
// executes (opensStage) — costs its device's CallCost. A plan from any method then goes
// through mergeStages, which moves whole stages onto the device of a neighbouring stage while
// that makes the plan faster, so that no stage remains whose merge into its neighbours pays,
// and which enforces Options.MaxStages.

// StageCapError says that no plan within Options.MaxStages was found. Solve returns it as the
// cause of a *diag.Error of kind no-plan (the message is the same), for callers that need the
// fewest stages reached (errors.As finds it).
type StageCapError struct {
	Method    string
	MaxStages int
	Stages    int // the fewest stages reached
}

func (e *StageCapError) Error() string {
	return fmt.Sprintf("schedule: %s found no plan with at most %d stages (the fewest it reached is %d)", e.Method, e.MaxStages, e.Stages)
}

// StageCount is the number of stages (runtime calls) of a latency schedule.
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
// it exchanges a tensor with.
func (in *inst) stageMoves(pl *Placement, sc *Schedule) []stageMove {
	stageOf := make([]int, in.n)
	nst := 0
	for _, t := range sc.Tasks {
		stageOf[t.Node] = t.Stage
		nst = max(nst, t.Stage+1)
	}
	members := make([][]int, nst)
	for i := range in.n {
		members[stageOf[i]] = append(members[stageOf[i]], i)
	}
	targets := make([][]int, nst) // devices of neighbouring stages
	for e, ed := range in.p.Edges {
		if in.free[e] {
			continue
		}
		a, b := ed.From, ed.To
		if pl.Device[a] == pl.Device[b] {
			continue
		}
		if !slices.Contains(targets[stageOf[a]], pl.Device[b]) {
			targets[stageOf[a]] = append(targets[stageOf[a]], pl.Device[b])
		}
		if !slices.Contains(targets[stageOf[b]], pl.Device[a]) {
			targets[stageOf[b]] = append(targets[stageOf[b]], pl.Device[a])
		}
	}
	var out []stageMove
	for st := range nst {
		slices.Sort(targets[st])
	next:
		for _, w := range targets[st] {
			for _, i := range members[st] {
				if !in.canRun(i, w) {
					continue next
				}
			}
			q := pl.Clone()
			q.EdgeOrder = nil // the transfers change: earliest-ready first
			for _, i := range members[st] {
				q.Device[i] = w
			}
			nsc, err := in.simulate(q)
			if err != nil || (sc.Feasible && !nsc.Feasible) {
				continue
			}
			out = append(out, stageMove{q, nsc})
		}
	}
	return out
}

// mergeStages returns pl improved by stage moves (each kept when the makespan falls by more
// than a relative 1e-9) and, with maxStages > 0, within maxStages stages: while the plan has
// more, the move with the fewest stages (then the smallest makespan) is taken, and when no
// move lowers the count, the best single-device plan (one stage) is. ok is false when no
// plan within the cap fits memory. Every step is judged by the simulator.
func (in *inst) mergeStages(stop func() bool, pl *Placement, sc *Schedule, maxStages int) (*Placement, *Schedule, int, bool) {
	moves := 0
	for maxStages > 0 && sc.StageCount() > maxStages && !stop() {
		var best *stageMove
		for _, m := range in.stageMoves(pl, sc) {
			if m.sc.StageCount() >= sc.StageCount() {
				continue
			}
			if best == nil || m.sc.StageCount() < best.sc.StageCount() ||
				(m.sc.StageCount() == best.sc.StageCount() && m.sc.Makespan < best.sc.Makespan) {
				best = &m
			}
		}
		if best == nil {
			break
		}
		pl, sc = best.pl, best.sc
		moves++
	}
	if maxStages > 0 && sc.StageCount() > maxStages {
		var best *stageMove
		for _, m := range in.oneDevice(pl) {
			if m.sc.Feasible && (best == nil || m.sc.Makespan < best.sc.Makespan) {
				best = &m
			}
		}
		if best == nil {
			return pl, sc, moves, false
		}
		pl, sc = best.pl, best.sc
		moves++
	}
	for round := 0; round < 4*in.n && !stop(); round++ {
		var best *stageMove
		// Single stage moves, and every node onto one device (a plan of many small stages
		// may lose to one device while no single move pays).
		for _, m := range append(in.stageMoves(pl, sc), in.oneDevice(pl)...) {
			if (maxStages > 0 && m.sc.StageCount() > maxStages) || (sc.Feasible && !m.sc.Feasible) {
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
	return pl, sc, moves, true
}

// oneDevice lists the plans that put every node on one device (one stage), keeping pl's
// priorities; devices where some node cannot run are skipped.
func (in *inst) oneDevice(pl *Placement) []stageMove {
	var out []stageMove
	for u := range in.k {
		q := &Placement{Device: make([]int, in.n), Order: pl.Order}
		ok := true
		for i := range q.Device {
			q.Device[i] = u
			ok = ok && in.canRun(i, u)
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
