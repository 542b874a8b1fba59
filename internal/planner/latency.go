// Latency and batched placements (package schedule): the problem, the solve, the stages of
// a placement.

package planner

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/profile"
	"github.com/onnxpart/onnxpart/schedule"
)

// placeLatency places the work graph on the run's devices for the latency of one input with
// package schedule: stages from the schedule, makespan, bounds and timeline.
func (run *run) placeLatency() (*solution, error) {
	g, devs, c := run.work, run.devs, run.c
	p := placementProblem(placement{c: c, g: g, devs: devs, times: run.times, table: run.table, granules: 1, per: 1})
	applyNodeMemory(p, c, devs, run.nodeMem)
	sol, res, err := run.place(p)
	if err != nil {
		return nil, err
	}
	sol.latencyS = res.Makespan
	if res.Makespan > 0 {
		sol.throughputPerS = 1 / res.Makespan
	}
	// Stages are the schedule's: a device's run of tasks that one runtime call executes
	// (schedule.Device.CallCost prices each), so the emitted stages are the priced ones.
	stage, labelDev := scheduleStages(g, res.Schedule, devs)
	for l, d := range labelDev { // labels are 0..len-1 in creation order
		sol.stages = append(sol.stages, StageSummary{Stage: l, Device: c.Devices[d].Name})
	}
	for _, t := range res.Schedule.Tasks {
		s := &sol.stages[stage[t.Node]]
		s.Ops++
		s.ParamBytes += g.Nodes[t.Node].ParamBytes
		s.ComputeS += t.End - t.Start - t.Call
		s.CallS += t.Call
	}
	for _, tr := range res.Schedule.Transfers {
		sol.stages[stage[tr.To]].CommS += tr.End - tr.Start
	}
	for i := range sol.stages {
		sol.stages[i].TotalS = sol.stages[i].ComputeS + sol.stages[i].CommS + sol.stages[i].CallS
	}
	markBottleneck(sol.stages)
	for _, t := range res.Schedule.Tasks {
		dev, start := c.Devices[devs[t.Device]].Name, t.Start
		if t.Call > 0 { // the stage's runtime call opens it, on its device
			sol.timeline = append(sol.timeline, emit.TimelineEvent{Device: dev, Kind: emit.EventCompute,
				Label: fmt.Sprintf("stage %d runtime call", stage[t.Node]), StartS: start, EndS: start + t.Call, Stage: stage[t.Node]})
			start += t.Call
		}
		sol.timeline = append(sol.timeline, emit.TimelineEvent{Device: dev, Kind: emit.EventCompute,
			Label: t.Name, StartS: start, EndS: t.End, Stage: stage[t.Node]})
	}
	for _, tr := range res.Schedule.Transfers {
		sol.timeline = append(sol.timeline, emit.TimelineEvent{Device: c.Devices[devs[tr.Src]].Name,
			ToDevice: c.Devices[devs[tr.Dst]].Name, Kind: emit.EventTransfer, Label: g.Nodes[tr.From].Label(),
			StartS: tr.Start, EndS: tr.End, Stage: stage[tr.From]})
	}
	sol.workStage, sol.labelDevice = stage, labelDev
	return sol, nil
}

// placement is what a schedule problem of placing a graph on devices is built from.
type placement struct {
	c    *profile.Cluster
	g    *graph.Graph
	devs []int // the devices of c placed on
	// times[d][v] are the node times of one input (seconds); overs[d][v] their fixed part,
	// which a batch does not scale (nil: a latency placement).
	times, overs [][]float64
	table        *profile.CostTable // the cluster's routes
	// granules and per: a batched problem of granules granules of per inputs each (1 and
	// 1 for a latency placement).
	granules, per int
}

// placementProblem is the schedule problem of placing in.g on in.devs: times[d][v] are the
// node times of one input (seconds), table the cluster's routes. With granules > 1 it is a
// batched problem of granules granules of per inputs each; a node's batch of c granules
// takes over + c·per·(t − over), over = overs[d][v], the fixed part of the kernel's time on
// the device (its class overhead, profile.CostModel.KernelOverhead: what does not grow with
// the batch), and its tensors and activations grow with per. Transfers congest (Moirai eq. (8)).
func placementProblem(in placement) *schedule.Problem {
	c, g, times, overs, table, devs, granules, per := in.c, in.g, in.times, in.overs, in.table, in.devs, in.granules, in.per
	p := &schedule.Problem{Congestion: true}
	if granules > 1 {
		p.Batch, p.GranuleSize = granules, per
	}
	for _, d := range devs {
		dev := &c.Devices[d]
		// Every stage is one runtime call (session run, synchronisation, the hand-off
		// through the host): the device's run overhead, once per stage.
		sd := schedule.Device{Name: dev.Name, CallCost: math.Max(table.RunOverhead[d], 0)}
		if cp := dev.Capacity(); !math.IsInf(cp, 1) {
			sd.Memory = cp
		}
		p.Devices = append(p.Devices, sd)
	}
	p.Links = make([][]schedule.Link, len(devs))
	for i, a := range devs {
		p.Links[i] = make([]schedule.Link, len(devs))
		for j, b := range devs {
			if i != j {
				p.Links[i][j] = schedule.Link{Bandwidth: table.Bandwidth[a][b], Latency: table.Latency[a][b]}
			}
		}
	}
	scaled := func(t, over float64, inputs int) float64 {
		if math.IsInf(t, 1) || math.IsNaN(t) {
			return math.Inf(1)
		}
		over = math.Min(math.Max(over, 0), t)
		return over + float64(inputs)*(t-over)
	}
	for v := range g.Nodes {
		n := schedule.Node{Name: g.Nodes[v].Label(), Weight: float64(g.Nodes[v].ParamBytes), Time: make([]float64, len(devs))}
		if granules > 1 || per > 1 {
			n.Act = float64(max(g.Nodes[v].InputBytes, 0)+max(g.Nodes[v].OutputBytes, 0)) * float64(per)
		}
		if granules > 1 {
			n.BatchTime = make([][]float64, len(devs))
		}
		for i, d := range devs {
			over := 0.0
			if overs != nil {
				over = overs[d][v]
			}
			n.Time[i] = scaled(times[d][v], over, per)
			if granules > 1 {
				n.BatchTime[i] = make([]float64, granules)
				for k := 1; k <= granules; k++ {
					n.BatchTime[i][k-1] = scaled(times[d][v], over, k*per)
				}
			}
		}
		p.Nodes = append(p.Nodes, n)
	}
	zeroTimes := make([][]float64, len(devs))
	for i := range zeroTimes {
		zeroTimes[i] = make([]float64, len(devs))
	}
	for t := range g.Tensors {
		tn := &g.Tensors[t]
		if tn.Producer < 0 {
			continue
		}
		for _, c := range tn.Consumers {
			e := schedule.Edge{From: tn.Producer, To: c, Bytes: math.Max(float64(tn.Bytes), 0) * float64(per)}
			if g.Nodes[tn.Producer].Static {
				// Weight-only nodes are emitted again in every stage that reads them (emit's
				// classify): their outputs cross no stage boundary and need no transfer.
				e.Time = zeroTimes
			}
			p.Edges = append(p.Edges, e)
		}
	}
	return p
}

// reproducibleIterations is the EA and SA budget of reproducible placements.
const reproducibleIterations = schedule.DefaultIterations

// solveLatency runs schedule.Solve; reproducible, on work budgets only. Auto then keeps the
// best of SA and EA (iteration budgets, both started from MET), the constructive heuristics
// and, on small graphs, the full MILP when it proves its plan optimal: MILP-SPLIT's sub-solves
// and polishing share the time limit by the clock, so Auto's own choice is not reproducible.
func solveLatency(ctx context.Context, p *schedule.Problem, so schedule.Options, opt *Options) (*schedule.Result, error) {
	if !opt.Reproducible {
		return schedule.Solve(ctx, p, so)
	}
	cut := func(res *schedule.Result) { // the time limit stopped a search meant to run on its budget
		if ctx.Err() != nil && res != nil {
			res.Notes = append(res.Notes, clockCutNote(opt))
		}
	}
	// schedule's annealing temperature follows the larger of the iteration fraction and the
	// elapsed fraction of the time until ctx's deadline, so a deadline makes SA read the clock
	// even with an iteration budget. The budgeted searches get a context that is still
	// cancelled at the deadline (the safety net) but does not report it.
	budgeted := hiddenDeadline{ctx}
	budgetedOpts := so
	budgetedOpts.TimeLimit = 0
	switch so.Method {
	case schedule.EA, schedule.SA:
		budgetedOpts.Iterations = reproducibleIterations
		res, err := schedule.Solve(budgeted, p, budgetedOpts)
		cut(res)
		return res, err
	case schedule.MILP, schedule.Split:
		res, err := schedule.Solve(ctx, p, so)
		if err == nil && !res.Optimal {
			res.Notes = append(res.Notes, diag.Notef(diag.NoteCapped, "%s stopped before it proved its plan optimal: the plan depends on the machine's speed (%s, ea or sa are reproducible)", so.Method, opt.say("Solver", string(SolverAuto))))
		}
		return res, err
	case schedule.Auto:
	default:
		return schedule.Solve(ctx, p, so) // constructive: deterministic
	}
	var best *schedule.Result
	var firstErr error
	var bounds []schedule.Bound
	solve := func(method string) (*schedule.Result, error) {
		o := budgetedOpts
		o.Method, o.Iterations = method, reproducibleIterations
		// The module DP (its bounds, and its stitched plan as a candidate) runs on its node
		// budget, reproducibly: once, beside SA.
		o.ModuleDP = method == schedule.SA
		return schedule.Solve(budgeted, p, o)
	}
	keep := func(method string, res *schedule.Result, err error) {
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		if method == schedule.MILP && !res.Optimal {
			return // stopped by the clock
		}
		bounds = append(bounds, res.Bounds...)
		if best == nil || res.Makespan < best.Makespan {
			best = res
		}
	}
	try := func(method string) {
		res, err := solve(method)
		keep(method, res, err)
	}
	// SA and EA side by side (their results do not depend on it), kept in a fixed order.
	var eaRes *schedule.Result
	var eaErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		eaRes, eaErr = solve(schedule.EA)
	}()
	try(schedule.SA)
	<-done
	keep(schedule.EA, eaRes, eaErr)
	if best == nil {
		return nil, firstErr
	}
	for _, c := range best.Candidates { // a constructive plan better than both: fetch its placement
		switch c.Method {
		case schedule.BestDevice, schedule.MET, schedule.Greedy, schedule.HEFT:
			if c.Feasible && c.Makespan < best.Makespan {
				try(c.Method)
			}
		}
	}
	cut(best)
	if len(p.Nodes)*max(p.Batch, 1) <= 40 && ctx.Err() == nil { // batched MILPs grow with the granules
		try(schedule.MILP) // kept only when it proves its plan optimal
	}
	// Every bound kept is proved (simple bounds, a finished MILP): take the best of each.
	byMethod := map[string]float64{}
	var order []string
	for _, b := range bounds {
		if _, ok := byMethod[b.Method]; !ok {
			order = append(order, b.Method)
		}
		byMethod[b.Method] = math.Max(byMethod[b.Method], b.Value)
	}
	best.Bounds, best.LowerBound = nil, 0
	for _, m := range order {
		v := byMethod[m]
		if v > best.Makespan*(1+1e-9) {
			best.Notes = append(best.Notes, diag.Notef(diag.NoteFault, "bound %s exceeds the plan's makespan: discarded as a fault", m))
			continue
		}
		best.Bounds = append(best.Bounds, schedule.Bound{Method: m, Value: v})
		best.LowerBound = math.Max(best.LowerBound, math.Min(v, best.Makespan))
	}
	best.Gap = 0
	if best.Makespan > 0 {
		best.Gap = math.Max(0, 1-best.LowerBound/best.Makespan)
	}
	best.Optimal = best.Gap <= 1e-4 // schedule's default MILP gap
	return best, nil
}

// hiddenDeadline is ctx without its deadline: Done and Err still follow ctx (so the deadline
// still stops the work), but Deadline reports none, so that nothing plans by the clock.
type hiddenDeadline struct{ context.Context }

func (hiddenDeadline) Deadline() (time.Time, bool) { return time.Time{}, false }

// scheduleStages returns the stage label of every node of a schedule (latency, or the
// batches a batched route visits) and the cluster device of every label: the schedule's
// stages (schedule.Task.Stage: a run of a device's tasks that one call executes, opened by a
// task that reads from another device or by the device's first task), numbered in the order
// they open. The stage graph is acyclic
// (schedule's opensStage says why). A stage of weight-only nodes alone (emit puts those in
// every stage that reads them) is dropped: its nodes take the label of a consumer.
func scheduleStages(g *graph.Graph, sc *schedule.Schedule, devs []int) (stage []int, labelDevice []int) {
	n := len(g.Nodes)
	stage = make([]int, n)
	dev := make([]int, n)
	nst := 0
	for _, t := range sc.Tasks {
		stage[t.Node], dev[t.Node] = t.Stage, t.Device
		nst = max(nst, t.Stage+1)
	}
	real := make([]bool, nst)
	for v := range g.Nodes {
		if !g.Nodes[v].Static {
			real[stage[v]] = true
		}
	}
	label := make([]int, nst)
	for s := range label {
		label[s] = -1
	}
	if !slices.Contains(real, true) && nst > 0 { // weights only: one stage
		real[0] = true
	}
	for s := 0; s < nst; s++ {
		if real[s] {
			label[s] = len(labelDevice)
			labelDevice = append(labelDevice, -1)
		}
	}
	for v := range g.Nodes {
		if l := label[stage[v]]; l >= 0 {
			labelDevice[l] = devs[dev[v]]
		}
	}
	for v := range g.Nodes {
		l := label[stage[v]]
		if l < 0 { // a weight-only stage: join the first consumer's
			l = 0
			for _, c := range g.Succs(v) {
				if cl := label[stage[c]]; cl >= 0 {
					l = cl
					break
				}
			}
		}
		stage[v] = l
	}
	return stage, labelDevice
}
