// Conversions between the public types (types.go) and internal/planner's. Where the two
// structs have identical fields a Go conversion does it, and the compiler keeps them in step;
// the rest are written out, and TestConversionsCoverEveryField fails when a field is added
// to one side and not the other, or not carried across.

package onnxpart

import "github.com/onnxpart/onnxpart/internal/planner"

// plannerOptions is o as the planner takes it.
func plannerOptions(o Options) planner.Options {
	p := planner.Options{
		MaxStages: o.MaxStages, Objective: planner.Objective(o.Objective),
		Fusion: o.Fusion, FusionRules: o.FusionRules,
		Solver: planner.Solver(o.Solver), Bounds: planner.Bounds(o.Bounds),
		TimeLimit: o.TimeLimit, Gap: o.Gap, Seed: o.Seed, PolishWindow: o.PolishWindow,
		Reproducible: o.Reproducible, Batch: o.Batch, Measured: o.Measured, GPUIDs: o.GPUIDs,
		MemoryGraph: o.MemoryGraph, State: o.State, CutAt: planner.Cut(o.CutAt),
		StagesPerDevice: o.StagesPerDevice, Names: o.Names,
	}
	if f := o.Progress; f != nil {
		p.Progress = func(pr planner.Progress) { f(Progress(pr)) }
	}
	if o.Workload != nil {
		p.Workload = make([]planner.Phase, len(o.Workload))
		for i, ph := range o.Workload {
			p.Workload[i] = planner.Phase(ph)
		}
	}
	return p
}

// resultOf is the public Result of the planner's p, which it keeps for Prepare.
func resultOf(p *planner.Result) *Result {
	r := &Result{
		Objective: Objective(p.Objective), ObjectiveChosen: p.ObjectiveChosen,
		Cluster: p.Cluster, Devices: p.Devices, RuleSet: p.RuleSet, CoarseNodes: p.CoarseNodes,
		Upper: p.Upper, Lower: p.Lower, Gap: p.Gap, BoundMethod: p.BoundMethod, Bounds: p.Bounds,
		LatencyS: p.LatencyS, ThroughputPerS: p.ThroughputPerS, Algorithm: p.Algorithm,
		Seconds: p.Seconds, Stages: stagesOf(p.Stages), Assignment: p.Assignment,
		Layout: p.Layout, Notes: p.Notes, Timeline: p.Timeline, Partition: p.Partition,
		Schedule: p.Schedule, Phases: p.Phases, CUDAOrdinal: p.CUDAOrdinal,
		Reproducible: p.Reproducible, Interrupted: p.Interrupted, plan: p,
	}
	if b := p.Batch; b != nil {
		r.Batch = &BatchPlan{Inputs: b.Inputs, Granules: b.Granules, GranuleInputs: b.GranuleInputs, Devices: b.Devices}
		if b.Routes != nil {
			r.Batch.Routes = make([]RoutePlan, len(b.Routes))
			for i, rp := range b.Routes {
				r.Batch.Routes[i] = RoutePlan{Granules: rp.Granules, Inputs: rp.Inputs, Assignment: rp.Assignment, Stages: stagesOf(rp.Stages)}
			}
		}
	}
	if p.Workload != nil {
		r.Workload = make([]PhaseFigures, len(p.Workload))
		for i, f := range p.Workload {
			r.Workload[i] = PhaseFigures(f)
		}
	}
	if p.Memory != nil {
		r.Memory = make([]StageMemory, len(p.Memory))
		for i, m := range p.Memory {
			r.Memory[i] = StageMemory(m)
		}
	}
	return r
}

// planned writes r's exported fields, the source of truth, into the planner's copy (a new
// one for a Result built by hand) and returns it. The copy keeps its unexported state; a
// batched route keeps its own by position.
func (r *Result) planned() *planner.Result {
	p := r.plan
	if p == nil {
		p = &planner.Result{}
		r.plan = p
	}
	p.Objective, p.ObjectiveChosen = planner.Objective(r.Objective), r.ObjectiveChosen
	p.Cluster, p.Devices, p.RuleSet, p.CoarseNodes = r.Cluster, r.Devices, r.RuleSet, r.CoarseNodes
	p.Upper, p.Lower, p.Gap, p.BoundMethod, p.Bounds = r.Upper, r.Lower, r.Gap, r.BoundMethod, r.Bounds
	p.LatencyS, p.ThroughputPerS, p.Algorithm, p.Seconds = r.LatencyS, r.ThroughputPerS, r.Algorithm, r.Seconds
	p.Stages, p.Assignment, p.Layout, p.Notes = plannerStages(r.Stages), r.Assignment, r.Layout, r.Notes
	p.Timeline, p.Partition, p.Schedule, p.Phases = r.Timeline, r.Partition, r.Schedule, r.Phases
	p.CUDAOrdinal, p.Reproducible, p.Interrupted = r.CUDAOrdinal, r.Reproducible, r.Interrupted
	if b := r.Batch; b == nil {
		p.Batch = nil
	} else {
		old := p.Batch
		p.Batch = &planner.BatchPlan{}
		if old != nil {
			*p.Batch = *old
		}
		p.Batch.Inputs, p.Batch.Granules, p.Batch.GranuleInputs, p.Batch.Devices = b.Inputs, b.Granules, b.GranuleInputs, b.Devices
		var routes []planner.RoutePlan
		if b.Routes != nil {
			routes = make([]planner.RoutePlan, len(b.Routes))
		}
		for i, rp := range b.Routes {
			if old != nil && i < len(old.Routes) {
				routes[i] = old.Routes[i]
			}
			routes[i].Granules, routes[i].Inputs, routes[i].Assignment, routes[i].Stages = rp.Granules, rp.Inputs, rp.Assignment, plannerStages(rp.Stages)
		}
		p.Batch.Routes = routes
	}
	p.Workload = nil
	if r.Workload != nil {
		p.Workload = make([]planner.PhaseFigures, len(r.Workload))
		for i, f := range r.Workload {
			p.Workload[i] = planner.PhaseFigures(f)
		}
	}
	p.Memory = nil
	if r.Memory != nil {
		p.Memory = make([]planner.StageMemory, len(r.Memory))
		for i, m := range r.Memory {
			p.Memory[i] = planner.StageMemory(m)
		}
	}
	return p
}

func stagesOf(ss []planner.StageSummary) []StageSummary {
	if ss == nil {
		return nil
	}
	out := make([]StageSummary, len(ss))
	for i, s := range ss {
		out[i] = StageSummary{Stage: s.Stage, Device: s.Device, Ops: s.Ops, ParamBytes: s.ParamBytes,
			ComputeS: s.ComputeS, CommS: s.CommS, CallS: s.CallS, TotalS: s.TotalS,
			Bottleneck: s.Bottleneck, Memory: StageMemory(s.Memory)}
	}
	return out
}

func plannerStages(ss []StageSummary) []planner.StageSummary {
	if ss == nil {
		return nil
	}
	out := make([]planner.StageSummary, len(ss))
	for i, s := range ss {
		out[i] = planner.StageSummary{Stage: s.Stage, Device: s.Device, Ops: s.Ops, ParamBytes: s.ParamBytes,
			ComputeS: s.ComputeS, CommS: s.CommS, CallS: s.CallS, TotalS: s.TotalS,
			Bottleneck: s.Bottleneck, Memory: planner.StageMemory(s.Memory)}
	}
	return out
}
