package planner

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/partition"
	"github.com/onnxpart/onnxpart/schedule"
)

// MaxGranules is the most granules a batch is cut into: the batched problem grows with the
// granules (every node has a device per granule), and seed 003 plans in B/4 steps.
const MaxGranules = 8

// BatchPlan is how a batched-throughput plan (Options.Batch > 1) shares the batch.
type BatchPlan struct {
	Inputs, Granules, GranuleInputs int
	// Routes are the distinct chains of stages the granules follow; route 0 (the one with the
	// most granules) is Result.Assignment and Result.Stages.
	Routes []RoutePlan
	// Devices are the batch shares per device (emit.Manifest.Batch.Devices).
	Devices []emit.BatchDevice
	dim     string // the dim the stage files take the batch along (Prepare)
}

// RoutePlan is one route of a batched plan.
type RoutePlan struct {
	Granules []int
	Inputs   int
	// Assignment splits the original graph for this route; Stages are its predictions.
	Assignment *emit.Assignment
	Stages     []StageSummary
	// work and labelDevice: the route's stage per planned (coarse) node and cluster device
	// per stage label, before expansion.
	work        []int
	labelDevice []int
}

// RouteDir is the directory of route i > 0 beside route 0's stage files.
func RouteDir(i int) string {
	if i == 0 {
		return "."
	}
	return fmt.Sprintf("route%d", i)
}

// granulesOf cuts a batch of inputs into granules: the largest divisor of the batch that is
// at most MaxGranules (every granule must have the same size).
func granulesOf(inputs int) int {
	for g := min(inputs, MaxGranules); g > 1; g-- {
		if inputs%g == 0 {
			return g
		}
	}
	return 1
}

// placeBatch plans a batch of Options.Batch inputs on the run's devices: seed 003's
// batched-throughput placement (data and model parallel), solved by package schedule like a
// latency placement and judged by its simulator. Its stages are route 0's, like
// placeLatency's, and its batch the routes.
func (run *run) placeBatch() (*solution, error) {
	g, devs, c, opt := run.work, run.devs, run.c, run.opt
	granules := granulesOf(opt.Batch)
	per := opt.Batch / granules
	var notes []diag.Note
	if granules < 4 && opt.Batch > MaxGranules {
		notes = append(notes, diag.Notef(diag.NoteInfo, "%s has no divisor from 4 to %d: the batch is shared in %d granule(s) of %d inputs", opt.say("Batch", strconv.Itoa(opt.Batch)), MaxGranules, granules, per))
	}
	p := placementProblem(placement{c: c, g: g, devs: devs, times: run.times, overs: run.overs, table: run.table, granules: granules, per: per})
	applyNodeMemory(p, c, devs, run.nodeMem)
	sol, res, err := run.place(p)
	if err != nil {
		return nil, err
	}
	sol.notes = append(notes, sol.notes...)
	sol.latencyS = res.Makespan
	if res.Makespan > 0 {
		sol.throughputPerS = float64(opt.Batch) / res.Makespan // also with one granule (latency mode)
	}
	bp := &BatchPlan{Inputs: opt.Batch, Granules: granules, GranuleInputs: per}
	sol.batch = bp

	// The device of granule l of node v, and the start of node v's batch on device u.
	gdev := func(v, l int) int {
		if pl := res.Placement; pl != nil && pl.Granules != nil {
			return pl.Granules[v][l]
		}
		return res.Nodes[v].Device
	}
	type key struct{ v, u int }
	durOf := map[key]float64{}
	callOf := map[key]float64{} // the stage call a batch opens with (schedule.Task.Call)
	for _, t := range res.Schedule.Tasks {
		durOf[key{t.Node, t.Device}] += t.End - t.Start - t.Call
		callOf[key{t.Node, t.Device}] += t.Call
	}
	commInto := map[key]float64{}
	for _, tr := range res.Schedule.Transfers {
		commInto[key{tr.To, tr.Dst}] += tr.End - tr.Start
	}

	// Group the granules by route (the device of every node).
	byRoute := map[string]int{}
	var routes [][]int // granules per route, in order of first granule
	var routeDev [][]int
	for l := range granules {
		dev := make([]int, len(g.Nodes))
		var sb strings.Builder
		for v := range g.Nodes {
			dev[v] = gdev(v, l)
			fmt.Fprintf(&sb, "%d,", dev[v])
		}
		if i, ok := byRoute[sb.String()]; ok {
			routes[i] = append(routes[i], l)
			continue
		}
		byRoute[sb.String()] = len(routes)
		routes = append(routes, []int{l})
		routeDev = append(routeDev, dev)
	}
	order := make([]int, len(routes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return len(routes[order[a]]) > len(routes[order[b]]) })

	shares := make([]emit.BatchDevice, len(devs))
	for i, d := range devs {
		shares[i].Device = c.Devices[d].Name
		shares[i].Model = c.Devices[d].Model
		if cp := c.Devices[d].Capacity(); !math.IsInf(cp, 1) && cp > 0 {
			shares[i].MemoryBytes = int64(cp)
		}
		if i < len(res.Devices) {
			shares[i].Ops = res.Devices[i].Nodes
			shares[i].GranuleTasks = res.Devices[i].Granules
			shares[i].BusyS = res.Devices[i].Busy
		}
	}
	for _, ri := range order {
		dev := routeDev[ri]
		// The route's stages are the schedule's (Task.Stage, one runtime call each) on the
		// batches the route visits: each lies on one device, a cross-device input of the
		// route opens one (its batch reads from another device), so they order acyclically
		// like a latency plan's, and a route has at most the schedule's stage count, which
		// Options.MaxStages caps (schedule.Options.MaxStages).
		var visits schedule.Schedule
		for _, t := range res.Schedule.Tasks {
			if dev[t.Node] == t.Device {
				visits.Tasks = append(visits.Tasks, t)
			}
		}
		stage, labelDev := scheduleStages(g, &visits, devs)
		rp := RoutePlan{Granules: routes[ri], Inputs: len(routes[ri]) * per, work: stage, labelDevice: labelDev}
		for l, d := range labelDev {
			rp.Stages = append(rp.Stages, StageSummary{Stage: l, Device: c.Devices[d].Name})
		}
		touched := make([]bool, len(devs))
		for v, l := range stage {
			s := &rp.Stages[l]
			s.Ops++
			s.ParamBytes += g.Nodes[v].ParamBytes
			s.ComputeS += durOf[key{v, dev[v]}]
			s.CallS += callOf[key{v, dev[v]}]
			s.CommS += commInto[key{v, dev[v]}]
			touched[dev[v]] = true
		}
		for i := range rp.Stages {
			rp.Stages[i].TotalS = rp.Stages[i].ComputeS + rp.Stages[i].CommS + rp.Stages[i].CallS
		}
		markBottleneck(rp.Stages)
		for u, t := range touched {
			if t {
				shares[u].Inputs += rp.Inputs
			}
		}
		bp.Routes = append(bp.Routes, rp)
	}
	for _, s := range shares {
		if s.GranuleTasks > 0 {
			bp.Devices = append(bp.Devices, s)
		}
	}
	main := bp.Routes[0]
	sol.stages = main.Stages
	// The timeline: every batch and transfer; stages are route 0's where the device is its.
	for _, t := range res.Schedule.Tasks {
		st := -1
		if routeDev[order[0]][t.Node] == t.Device {
			st = main.work[t.Node]
		}
		label := t.Name
		if t.Granules > 1 {
			label = fmt.Sprintf("%s ×%d", t.Name, t.Granules)
		}
		dev, start := c.Devices[devs[t.Device]].Name, t.Start
		if t.Call > 0 { // the batch opens a stage: its runtime call comes first, on its device
			what := "runtime call"
			if st >= 0 {
				what = fmt.Sprintf("stage %d runtime call", st)
			}
			sol.timeline = append(sol.timeline, emit.TimelineEvent{Device: dev, Kind: emit.EventCompute,
				Label: what, StartS: start, EndS: start + t.Call, Stage: st})
			start += t.Call
		}
		sol.timeline = append(sol.timeline, emit.TimelineEvent{Device: dev, Kind: emit.EventCompute,
			Label: label, StartS: start, EndS: t.End, Stage: st})
	}
	for _, tr := range res.Schedule.Transfers {
		st := -1
		if routeDev[order[0]][tr.From] == tr.Src {
			st = main.work[tr.From]
		}
		sol.timeline = append(sol.timeline, emit.TimelineEvent{Device: c.Devices[devs[tr.Src]].Name,
			ToDevice: c.Devices[devs[tr.Dst]].Name, Kind: emit.EventTransfer, Label: g.Nodes[tr.From].Label(),
			StartS: tr.Start, EndS: tr.End, Stage: st})
	}
	sol.workStage, sol.labelDevice = main.work, main.labelDevice
	return sol, nil
}

func routeDirList(n int) string {
	var s []string
	for i := 1; i < n; i++ {
		s = append(s, RouteDir(i)+"/")
	}
	return strings.Join(s, ", ")
}

// place solves a placement problem (latency or batched) with the chosen method: the
// solution's plan, bounds and notes, and the solver's result.
func (run *run) place(p *schedule.Problem) (*solution, *schedule.Result, error) {
	opt := run.opt
	method := string(opt.Solver) // one of placementSolvers (options)
	if method == "" {
		method = schedule.Auto
	}
	// Gap (--gap) stops the search once the plan is proved within it, as for pipelines.
	so := schedule.Options{Method: method, TimeLimit: opt.TimeLimit, Seed: uint64(opt.Seed), RelGap: opt.Gap}
	if opt.MaxStages > 0 {
		// MaxStages caps the stages (runtime calls) of the placement, latency or batched
		// (where every route then has at most MaxStages stages too).
		so.MaxStages = opt.MaxStages
	}
	perDev, capWhy := stageCapOf(&opt, !run.identical)
	so.MaxStagesPerDevice = perDev
	if opt.Bounds == BoundsNone && method == schedule.Auto {
		so.Method = schedule.HEFT
	}
	if opt.Progress != nil {
		so.Progress = func(pr schedule.Progress) {
			opt.Progress(Progress{Phase: pr.Method, Objective: pr.Makespan, LowerBound: pr.Bound, Gap: partition.Gap(pr.Bound, pr.Makespan), Elapsed: pr.Elapsed})
		}
	}
	res, err := solveLatency(run.ctx, p, so, &opt)
	var capErr *schedule.StageCapError
	if errors.As(err, &capErr) && capErr.MaxStagesPerDevice > 0 {
		return nil, nil, diag.Usage("%s: %s found no placement within the cap that fits memory (the closest has %d stages, %d on one device); %s lifts the cap",
			capWhy, opt.say("Solver", method), capErr.Stages, capErr.PerDevice, opt.say("StagesPerDevice", "0")).About(diag.Option, opt.name("StagesPerDevice"))
	}
	if errors.As(err, &capErr) {
		return nil, nil, diag.Usage("%s: %s found no placement with at most %d stages that fits memory (the fewest it reached is %d)", opt.say("MaxStages", strconv.Itoa(opt.MaxStages)), opt.say("Solver", method), opt.MaxStages, capErr.Stages).About(diag.Option, opt.name("MaxStages"))
	}
	if err != nil {
		return nil, nil, err
	}
	sol := &solution{schedule: res, placement: p, algorithm: "placement-" + res.Method}
	if p.Batch > 1 {
		sol.algorithm = "batched-" + res.Method
	}
	sol.upper, sol.lower = res.Makespan, res.LowerBound
	for _, b := range res.Bounds {
		sol.bounds = append(sol.bounds, emit.BoundValue{Method: b.Method, LowerBoundS: b.Value})
		if b.Value >= sol.lower && sol.boundMethod == "" {
			sol.boundMethod = b.Method
		}
	}
	sol.notes = append(sol.notes, res.Notes...)
	if perDev > 0 {
		note := fmt.Sprintf("%s; the lower bound is of the problem without the cap, and bounds the capped plan too (its plans are among the uncapped problem's)", capWhy)
		if schedule.CappedBound(sol.boundMethod) {
			// The best bound is over the plans within the cap (schedule's capped module DP).
			unc, by := 0.0, ""
			for _, b := range res.Bounds {
				if !schedule.CappedBound(b.Method) && b.Value > unc {
					unc, by = b.Value, b.Method
				}
			}
			note = fmt.Sprintf("%s; the lower bound (%s) is over the plans within the cap", capWhy, sol.boundMethod)
			if unc > 0 {
				note += fmt.Sprintf("; the problem without the cap has the bound %s (%s)", durText(unc), by)
			}
		}
		kind := diag.NoteInfo
		if u := res.Uncapped; u != nil && u.Makespan > 0 && res.Makespan > u.Makespan*(1+MinCapNote) {
			note += fmt.Sprintf("; without the cap the plan would take %s instead of %s (%.0f%% less time) in %d stages, up to %d on one device (%s)",
				durText(u.Makespan), durText(res.Makespan), 100*(1-u.Makespan/res.Makespan), u.Stages, u.PerDevice, opt.say("StagesPerDevice", "0"))
			kind = diag.NoteCapped
		}
		sol.notes = append(sol.notes, diag.Note{Kind: kind, Msg: note}.About(diag.Option, opt.name("StagesPerDevice")))
	}
	return sol, res, nil
}

// stageCapOf is the cap on stages per device of a placement with opt on mixed (or
// identical) devices, and how the notes state it (0, "": none).
func stageCapOf(opt *Options, mixed bool) (int, string) {
	switch {
	case opt.StagesPerDevice > 0:
		return opt.StagesPerDevice, fmt.Sprintf("at most %d stages per device (%s)", opt.StagesPerDevice, opt.name("StagesPerDevice"))
	case opt.StagesPerDevice == NoStageCap || opt.MaxStages > 0 || !mixed:
		return 0, ""
	}
	return DefaultStagesPerDevice, fmt.Sprintf("at most %d stages per device, the default for mixed devices (%s changes it, %s lifts it)",
		DefaultStagesPerDevice, opt.say("StagesPerDevice", "N"), opt.say("StagesPerDevice", "0"))
}

// expandRoutes expands every route's coarse stages to the original graph and builds its
// assignment (route 0's is r.Assignment).
func (r *Result) expandRoutes(expand func([]int) ([]int, error)) error {
	if r.Batch == nil {
		return nil
	}
	for i := range r.Batch.Routes {
		rp := &r.Batch.Routes[i]
		stage, err := expand(rp.work)
		if err != nil {
			return fmt.Errorf("expanding route %d: %w", i, err)
		}
		a := &emit.Assignment{Stage: stage, Split: emit.SplitInfo{Method: r.Algorithm}}
		for _, d := range rp.labelDevice {
			a.Devices = append(a.Devices, emit.Device{Name: r.Cluster.Devices[d].Name, Provider: provider(&r.Cluster.Devices[d])})
		}
		if i == 0 && len(r.Batch.Routes) > 1 {
			a.Notes = append(a.Notes, diag.Notef(diag.NoteInfo, "the batch follows %d routes: route 0 (%d of %d inputs) is this directory's stages, the others are in %s",
				len(r.Batch.Routes), rp.Inputs, r.Batch.Inputs, routeDirList(len(r.Batch.Routes))))
		}
		if i > 0 { // route 0's manifest is the plan's own, with its batch section
			a.Notes = append(a.Notes, diag.Notef(diag.NoteInfo, "route %d of a batched plan: granules %s (%d of %d inputs); the whole plan is in %s",
				i, emit.GranuleList(rp.Granules), rp.Inputs, r.Batch.Inputs, filepath.Join("..", "manifest.json")))
		}
		rp.Assignment = a
	}
	// The shares count the model's nodes, as the stage table and the stage files do, not
	// the fused groups planned: a node counts on each device some route runs it on.
	onDev := map[string]map[int]bool{}
	for _, rp := range r.Batch.Routes {
		for v, l := range rp.Assignment.Stage {
			name := rp.Assignment.Devices[l].Name
			if onDev[name] == nil {
				onDev[name] = map[int]bool{}
			}
			onDev[name][v] = true
		}
	}
	for i := range r.Batch.Devices {
		r.Batch.Devices[i].Ops = len(onDev[r.Batch.Devices[i].Device])
	}
	return nil
}

// batchManifest is the manifest's batch section of r.
func (r *Result) batchManifest(stageDevices func(route int) []string) *emit.Batch {
	b := r.Batch
	mb := &emit.Batch{Inputs: b.Inputs, Granules: b.Granules, GranuleInputs: b.GranuleInputs,
		MakespanS: r.Upper, ThroughputPerS: r.ThroughputPerS, Devices: b.Devices, Dim: b.dim}
	if math.IsInf(mb.ThroughputPerS, 0) || math.IsNaN(mb.ThroughputPerS) {
		mb.ThroughputPerS = 0
	}
	for i, rp := range b.Routes {
		mb.Routes = append(mb.Routes, emit.Route{Index: i, Dir: RouteDir(i), Granules: rp.Granules, Inputs: rp.Inputs, Devices: stageDevices(i)})
	}
	return mb
}
