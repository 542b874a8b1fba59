package planner

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/partition"
)

// Phase is one kind of call in a workload (Options.Workload): an LLM's prefill over the prompt,
// or one decode step at a given past length. Every phase runs the same stage files (the
// model's dims stay symbolic); the phase binds the dims, and Weight says how many of its
// calls one request makes (1 prefill, 128 decode steps).
type Phase struct {
	Name   string
	Dims   map[string]int64
	Weight float64
	// Graph is the model loaded at the phase's dims (ingest.Load with Dims): the same nodes
	// and tensors as the graph planned, sized for this phase.
	Graph *graph.Graph
}

// ParsePhase reads a phase written NAME:DIM=SIZE,DIM=SIZE…@WEIGHT, e.g.
// "decode:seq=1,past=1024@128" (the weight defaults to 1).
func ParsePhase(s string) (Phase, error) {
	bad := func(why string) (Phase, error) {
		return Phase{}, diag.Usage("workload phase %q: %s (want NAME:DIM=SIZE,…@WEIGHT, e.g. decode:seq=1,past=1024@128)", s, why)
	}
	name, rest, ok := strings.Cut(s, ":")
	if !ok || name == "" {
		return bad("no phase name before ':'")
	}
	p := Phase{Name: name, Dims: map[string]int64{}, Weight: 1}
	if spec, w, ok := strings.Cut(rest, "@"); ok {
		v, err := strconv.ParseFloat(w, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 1) {
			return bad(fmt.Sprintf("weight %q is not a positive number", w))
		}
		p.Weight, rest = v, spec
	}
	for _, kv := range strings.Split(rest, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || k == "" || err != nil || n < 0 {
			return bad(fmt.Sprintf("%q is not DIM=SIZE with a size ≥ 0", kv))
		}
		if _, dup := p.Dims[k]; dup {
			return bad(fmt.Sprintf("dim %s bound twice", k))
		}
		p.Dims[k] = n
	}
	return p, nil
}

// PhaseFigures is a plan's prediction for one phase of the workload: each stage's time per
// call of the phase and the phase's own bottleneck, throughput and latency (calls alone).
type PhaseFigures struct {
	Name   string
	Dims   map[string]int64
	Weight float64
	// StageS is each stage's time per call (compute, boundary transfers, the runtime call).
	StageS         []float64
	BottleneckS    float64
	ThroughputPerS float64 // calls per second of this phase alone
	LatencyS       float64 // one call through every stage
}

// phaseCosts are one phase's costs on the graph the solver sees.
type phaseCosts struct {
	times [][]float64 // per cluster device, per work node
	bytes []float64   // per work tensor, -1 when unknown
}

// workloadCosts prices every phase on the work graph (g itself, or its coarsening) for the
// devices devs: a node's time at the phase's sizes, and each tensor's bytes. Fused kernels
// keep the planned groups at every phase's sizes (fusion.Grouping.Resized).
func (p *run) workloadCosts() ([]phaseCosts, error) {
	work, coarse, cm, devs, nDev, phases, opt := p.work, p.coarse, p.cm, p.devs, len(p.c.Devices), p.opt.Workload, &p.opt
	out := make([]phaseCosts, len(phases))
	for i, ph := range phases {
		pg := ph.Graph // checked with the options (checkPhases)
		pc := phaseCosts{times: make([][]float64, nDev)}
		for _, d := range devs {
			// The planned groups at the phase's sizes (fusion.Grouping.Resized).
			var err error
			if pc.times[d], err = cm.KernelTimes(pg, coarse, d); err != nil {
				return nil, fmt.Errorf("%s: %w", opt.say("Workload", ph.Name), err)
			}
		}
		pc.bytes = make([]float64, len(work.Tensors))
		for t := range work.Tensors {
			pc.bytes[t] = float64(work.Tensors[t].Bytes)
			if id, ok := pg.TensorByName(work.Tensors[t].Name); ok {
				pc.bytes[t] = float64(pg.Tensors[id].Bytes)
			}
		}
		out[i] = pc
	}
	return out, nil
}

// checkPhases checks that every phase of the workload comes with the model sized at its dims,
// with the nodes and tensors of the graph planned.
func checkPhases(g *graph.Graph, opt *Options) error {
	for _, ph := range opt.Workload {
		pg := ph.Graph
		if pg == nil {
			return diag.Usage("%s: the model was not sized at the phase's dims", opt.say("Workload", ph.Name)).About(diag.Option, opt.name("Workload"))
		}
		if len(pg.Nodes) != len(g.Nodes) || len(pg.Tensors) != len(g.Tensors) {
			return diag.Usage("%s: at its dims the model has %d nodes and %d tensors, at the planned dims %d and %d: the dims change the graph",
				opt.say("Workload", ph.Name), len(pg.Nodes), len(pg.Tensors), len(g.Nodes), len(g.Tensors)).About(diag.Option, opt.name("Workload"))
		}
	}
	return nil
}

// weightedTimes is Σ_p w_p·times_p per device and work node: a stage's busy time per request
// is then a sum of these, the objective of the mixed workload (see planThroughput).
func weightedTimes(phases []Phase, pcs []phaseCosts, devs []int, nDev, nWork int) [][]float64 {
	out := make([][]float64, nDev)
	for _, d := range devs {
		out[d] = make([]float64, nWork)
		for i, pc := range pcs {
			for w, t := range pc.times[d] {
				out[d][w] += phases[i].Weight * t
			}
		}
	}
	return out
}

// totalWeight is Σ_p w_p, the runtime calls of each stage per request (1 without phases).
func totalWeight(phases []Phase) float64 {
	if len(phases) == 0 {
		return 1
	}
	s := 0.0
	for _, p := range phases {
		s += p.Weight
	}
	return s
}

// phaseFigures prices a solved pipeline for each phase alone: the problem pp with the phase's
// node times and tensor sizes, evaluated at the plan's assignment, plus each non-empty
// stage's runtime call (callOf, per partition device). labelDevice is the cluster device of
// each stage.
func (run *run) phaseFigures(pp *pipeline, plan *partition.Plan, callOf []float64, labelDevice []int) ([]PhaseFigures, error) {
	p, tensorWork, groups, latBW, workRe := pp.problem, pp.tensorWork, pp.groups, pp.latBW, pp.workRe
	phases, pcs, work := run.opt.Workload, run.phaseCosts, run.work
	out := make([]PhaseFigures, len(phases))
	for i, ph := range phases {
		q := *p
		q.Tensors = append([]partition.Tensor(nil), p.Tensors...)
		for j := range q.Tensors {
			if w := tensorWork[j]; w >= 0 {
				q.Tensors[j].Size = math.Max(pcs[i].bytes[w], 0) + latBW
			}
		}
		if len(p.Devices) == 0 {
			q.Work = pcs[i].times[groups[0][0]]
		} else {
			q.Devices = append([]partition.Device(nil), p.Devices...)
			for gi := range q.Devices {
				q.Devices[gi].Work = pcs[i].times[groups[gi][0]]
			}
			q.Work = q.Devices[0].Work
		}
		costs, _, err := q.Evaluate(plan.Assignment, plan.StageDevice)
		if err != nil {
			return nil, fmt.Errorf("pricing phase %s: %w", ph.Name, err)
		}
		f := PhaseFigures{Name: ph.Name, Dims: ph.Dims, Weight: ph.Weight, StageS: make([]float64, len(costs))}
		for s, sc := range costs {
			gi := 0
			if s < len(plan.StageDevice) {
				gi = plan.StageDevice[s]
			}
			t := sc.Total
			if s < len(plan.Stages) && len(plan.Stages[s]) > 0 {
				t += callOf[gi]
			}
			if s < len(labelDevice) {
				dt := pcs[i].times[labelDevice[s]]
				t += recomputeExtra(work, workRe, plan.Assignment, s, func(w int) float64 { return dt[w] })
			}
			f.StageS[s] = t
			f.LatencyS += t
			f.BottleneckS = math.Max(f.BottleneckS, t)
		}
		if f.BottleneckS > 0 {
			f.ThroughputPerS = 1 / f.BottleneckS
		}
		out[i] = f
	}
	return out, nil
}

// workloadNote explains the objective of a plan for a workload.
func workloadNote(phases []Phase) string {
	var parts []string
	for _, p := range phases {
		var dims []string
		for _, k := range slices.Sorted(maps.Keys(p.Dims)) {
			dims = append(dims, fmt.Sprintf("%s=%d", k, p.Dims[k]))
		}
		parts = append(parts, fmt.Sprintf("%g × %s (%s)", p.Weight, p.Name, strings.Join(dims, ", ")))
	}
	return "workload: one request is " + strings.Join(parts, " + ") +
		"; the plan minimises the busiest stage's time per request (each stage's phase times weighted by their calls, as when many requests share the pipeline), and the bound is on that; each phase's figures alone are listed"
}

// stateRead is a state input that nodes other than its owner read by value: the state lives
// on the owner's device (graph.StatePair), so a reader in another stage receives it over the
// link on every call. The pipeline prices it as a cost-only tensor (partition.Tensor.Unordered)
// from the owner to the readers. Shape-only readers (the past length) read no data.
type stateRead struct {
	tensor  int // the input, as a work-graph tensor id
	owner   int // work node
	readers []int
}

// stateReads lists the state inputs of g read by value away from their owners, on the work
// graph (coarse groups when coarse is not nil).
func stateReads(g, work *graph.Graph, coarse *fusion.Grouping, pairs []graph.StatePair) []stateRead {
	toWork := func(v int) int {
		if coarse == nil {
			return v
		}
		return coarse.GroupOf[v]
	}
	var out []stateRead
	for _, p := range pairs {
		owner := p.Concat
		if owner < 0 {
			owner = g.StateOwner(p)
		}
		wt, ok := work.TensorByName(g.Tensors[p.In].Name)
		if owner < 0 || !ok {
			continue
		}
		wo := toWork(owner)
		var readers []int
		for _, c := range g.Tensors[p.In].Consumers {
			if g.ShapeOnly(c) || g.Nodes[c].Static {
				continue
			}
			if w := toWork(c); w >= 0 && w != wo && !slices.Contains(readers, w) {
				readers = append(readers, w)
			}
		}
		if len(readers) > 0 && wo >= 0 {
			sort.Ints(readers)
			out = append(out, stateRead{tensor: wt, owner: wo, readers: readers})
		}
	}
	return out
}

// workloadPredictions is Result.Workload as the manifest writes it (nil without phases),
// with each phase's stage times in the order of the manifest's stages (by their labels).
func (r *Result) workloadPredictions(stages []emit.Stage) []emit.PhasePrediction {
	var out []emit.PhasePrediction
	for _, f := range r.Workload {
		p := emit.PhasePrediction{Name: f.Name, Dims: f.Dims, Weight: f.Weight, StageS: make([]float64, len(stages)),
			BottleneckS: round9(f.BottleneckS), ThroughputPerS: round6(f.ThroughputPerS), LatencyS: round9(f.LatencyS)}
		for i, st := range stages {
			if st.Label >= 0 && st.Label < len(f.StageS) {
				p.StageS[i] = round9(f.StageS[st.Label])
			}
		}
		out = append(out, p)
	}
	return out
}

func round9(x float64) float64 { return math.Round(x*1e9) / 1e9 }
