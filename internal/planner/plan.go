// Package onnxpart plans how to split an ONNX model across devices, in a few lines:
//
//	m, _ := ingest.Load("model.onnx", ingest.Options{})
//	c, _ := devices.Resolve(ctx, "4xA100-80G", devices.Options{})
//	r, _ := onnxpart.Plan(ctx, m, c, onnxpart.Options{TimeLimit: 30 * time.Second})
//	l, _ := onnxpart.Prepare(m, r, emit.Options{}, 0)
//	_ = l.WriteDir("out")                       // stage files, manifest.json
//	rep, _ := verify.Run(ctx, "out", verify.Options{}) // chained stages == the model?
//
// What goes in: an ingested model (package ingest) and a device cluster (package profile).
// What comes out: a Result — pipeline stages or a heterogeneous placement with predicted
// times, a certified lower bound and the gap between them — and, from Prepare, an
// emit.Layout ready to write. Throughput plans of identical devices are MTPP pipelines
// (package partition); mixed devices default to a latency placement (package schedule),
// turned into acyclic stages for emit. Planning runs on the graph coarsened by a fusion rule
// set (package fusion), and plans are expanded back to the original nodes before emit.
// This is what the onnxpart command runs.
package planner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/graph/blocks"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/partition"
	"github.com/onnxpart/onnxpart/profile"
	"github.com/onnxpart/onnxpart/schedule"
)

// Plan plans model m on cluster c. It runs planPhases in order; Result.Phases has the wall
// time of each, and Options.Progress hears each one start.
func Plan(ctx context.Context, m *ingest.Model, c *profile.Cluster, opt Options) (*Result, error) {
	start := time.Now()
	if opt.TimeLimit > 0 {
		// One deadline for everything (solvers, the reproducible bounds after them).
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opt.TimeLimit)
		defer cancel()
	}
	p := &run{ctx: ctx, m: m, g: m.Graph, c: c, opt: opt, r: &Result{Cluster: c, Reproducible: opt.Reproducible}}
	for _, ph := range planPhases {
		t := time.Now()
		if opt.Progress != nil {
			opt.Progress(Progress{Phase: ph.name, Elapsed: t.Sub(start)})
		}
		err := ph.run(p)
		p.r.Phases = append(p.r.Phases, partition.PhaseTime{Name: ph.name, Seconds: time.Since(t).Seconds()})
		if err != nil {
			return nil, err
		}
	}
	r := p.r
	r.Seconds = time.Since(start).Seconds()
	r.Interrupted = errors.Is(ctx.Err(), context.Canceled) // the caller's, not the time limit
	r.Gap = partition.Gap(r.Lower, r.Upper)
	return r, nil
}

// planPhase is one step of Plan: a name (progress lines, Result.Phases) and what
// it does to the run.
type planPhase struct {
	name string
	run  func(*run) error
}

// planPhases is Plan, in order. Every phase but "solve" takes milliseconds to seconds (the
// model's size); "solve" has the rest of the time limit, which the solvers share out among
// their own phases (partition.Solve's table, schedule's methods).
var planPhases = []planPhase{
	{"options", (*run).options}, // devices, objective, solver and cuts, options that exclude each other, memory that cannot fit
	{"coarsen", (*run).coarsen}, // fusion groups of the backend's rules
	{"price", (*run).price},     // each planned node's time on each device (weighted by the workload)
	{"solve", (*run).solve},     // the objective's solver: pipeline, latency or batched placement
	{"expand", (*run).expand},   // the plan back on the model's nodes, as an emit.Assignment
	{"memory", (*run).memory},   // every stage's whole memory against its device
}

// DefaultStagesPerDevice is the default cap on a mixed-device placement's stages per device
// (Options.StagesPerDevice): a latency plan on a100-80g,t4,cpu otherwise bounced a RandWire
// model's ops among the three devices in 113 stages of 1–6 ops, for a plan 15% faster than
// the A100 alone; 2 per device keeps a fork and join around an offloaded branch.
const DefaultStagesPerDevice = 2

// NoStageCap in Options.StagesPerDevice lifts the default cap.
const NoStageCap = -1

// MinCapNote is the least gain (a fraction of the uncapped plan's time) of the uncapped plan
// that the notes report.
const MinCapNote = 0.03

// run is what the phases of Plan share: the inputs, what each phase works out for the next
// ones, and the Result the last ones fill. Nothing of a plan travels in Options.
type run struct {
	ctx       context.Context
	m         *ingest.Model
	g         *graph.Graph // the model's graph
	c         *profile.Cluster
	opt       Options
	r         *Result
	obj       *objective // the objective's solver (options)
	devs      []int      // cluster devices the plan may use
	identical bool       // devs are identical devices
	batched   bool
	pairs     []graph.StatePair
	mg        *graph.Graph // the graph the stages' memory is sized at (Options.MemoryGraph or g)
	cm        *profile.CostModel
	rules     *fusion.RuleSet  // the fusion rules to coarsen with (options)
	coarse    *fusion.Grouping // nil without fusion
	work      *graph.Graph     // the graph planned: coarse.Graph or g
	nodeMem   []float64        // per node of work: weights and owned state (memory.go)
	times     [][]float64      // times[d][v]: node v of work on cluster device d
	overs     [][]float64      // the fixed part of each time, which batched plans do not scale
	// phaseCosts are a workload's node times and tensor bytes per phase; stateReads the
	// state read away from the stage that keeps it (workload.go).
	phaseCosts []phaseCosts
	stateReads []stateRead
	table      *profile.CostTable // routes and capacities (solve)
	blocks     *blocks.Result     // the model's repeated blocks (pipelines)
	boundary   *stageBoundary     // StageTime's boundary terms, for host CPUs with measured call costs
	workStage  []int              // stage label per node of work
	// labelDevice is the cluster device of each stage label.
	labelDevice []int
}

// solution is what an objective's solver found: the plan on the planned graph, its figures
// and its notes. (*run).result turns it into the Result.
type solution struct {
	workStage   []int // stage label per node of the planned graph
	labelDevice []int // cluster device per stage label
	algorithm   string
	// upper is the plan's objective, lower the best proved bound (bounds has each one).
	upper, lower             float64
	boundMethod              string
	bounds                   []emit.BoundValue
	latencyS, throughputPerS float64
	stages                   []StageSummary
	timeline                 []emit.TimelineEvent
	notes                    []diag.Note
	partition                *partition.Plan
	schedule                 *schedule.Result
	placement                *schedule.Problem
	batch                    *BatchPlan
	workload                 []PhaseFigures
	recompute                []bool
}

// result puts a solution into the run's Result; the notes follow those of the earlier phases.
func (p *run) result(s *solution) {
	r := p.r
	r.Algorithm = s.algorithm
	r.Upper, r.Lower, r.BoundMethod, r.Bounds = s.upper, s.lower, s.boundMethod, s.bounds
	r.LatencyS, r.ThroughputPerS = s.latencyS, s.throughputPerS
	r.Stages, r.Timeline = s.stages, s.timeline
	r.Notes = append(r.Notes, s.notes...)
	r.Partition, r.Schedule, r.placement = s.partition, s.schedule, s.placement
	r.Batch, r.Workload, r.recompute = s.batch, s.workload, s.recompute
	p.workStage, p.labelDevice = s.workStage, s.labelDevice
}

// objective is one kind of plan: when it applies, the Options.Solver values it takes, and
// its solver.
type objective struct {
	name    string
	applies func(*run) bool
	solvers []Solver // "" and SolverAuto pick the objective's default
	solve   func(*run) (*solution, error)
}

// objectives are the kinds of plan, in order: the first that applies to a run is its.
var objectives = []objective{
	{"batched placement", func(p *run) bool { return p.batched }, placementSolvers, (*run).placeBatch},
	{"pipeline", func(p *run) bool { return p.r.Objective == Throughput }, pipelineSolvers, (*run).solvePipeline},
	{"latency placement", func(*run) bool { return true }, placementSolvers, (*run).placeLatency},
}

// chooseObjective settles the run's objective (after r.Objective) and checks the options
// that only its solver reads: the solver's name, the bound effort, the cuts.
func (p *run) chooseObjective() error {
	for i := range objectives {
		if objectives[i].applies(p) {
			p.obj = &objectives[i]
			break
		}
	}
	opt := p.opt
	if opt.Solver != "" && !slices.Contains(p.obj.solvers, opt.Solver) {
		kind := "placement"
		if p.obj.name == "pipeline" {
			kind = "throughput"
		}
		var names []string
		for _, s := range p.obj.solvers {
			names = append(names, string(s))
		}
		return diag.Usage("%s is not a %s solver (%s)", opt.say("Solver", strconv.Quote(string(opt.Solver))), kind, strings.Join(names, ", ")).About(diag.Option, opt.name("Solver"))
	}
	if _, err := partition.ParseBounds(string(opt.Bounds)); err != nil {
		return diag.Usage("%s: want none, simple, fast or full", opt.say("Bounds", strconv.Quote(string(opt.Bounds)))).About(diag.Option, opt.name("Bounds"))
	}
	switch opt.CutAt {
	case "", CutAny, CutBlocks, CutAuto:
	default:
		return diag.Usage("%s: want any, blocks or auto", opt.say("CutAt", strconv.Quote(string(opt.CutAt)))).About(diag.Option, opt.name("CutAt"))
	}
	return nil
}

// options checks the options against the model and the devices and settles the objective.
func (p *run) options() error {
	g, c, opt, r := p.g, p.c, p.opt, p.r
	devs, err := chooseDevices(c, &opt)
	if err != nil {
		return err
	}
	r.Devices = devs
	if r.CUDAOrdinal, err = cudaOrdinals(c, &opt); err != nil {
		return err
	}
	p.devs = devs
	p.identical = identicalDevices(c, devs)
	p.batched = opt.Batch > 1
	if opt.StagesPerDevice < NoStageCap {
		return diag.Usage("%s: want a number of stages ≥ 1, or 0 for no cap", opt.say("StagesPerDevice", strconv.Itoa(opt.StagesPerDevice))).About(diag.Option, opt.name("StagesPerDevice"))
	}
	batched := p.batched
	if err := (partition.PolishOptions{MaxWindow: opt.PolishWindow}).Validate(); err != nil {
		return diag.Usage("%s: a window spans at least 2 stages", opt.say("PolishWindow", strconv.Itoa(opt.PolishWindow))).About(diag.Option, opt.name("PolishWindow"))
	}
	switch {
	case opt.Batch < 0:
		return diag.Usage("%s: must be positive", opt.say("Batch", strconv.Itoa(opt.Batch))).About(diag.Option, opt.name("Batch"))
	case batched && opt.Objective == Latency:
		return diag.Usage("%s plans the throughput of a batch; %s plans one input (leave out one of them)", opt.say("Batch", strconv.Itoa(opt.Batch)), opt.say("Objective", string(Latency))).About(diag.Option, opt.name("Batch"))
	case batched && len(devs) > MaxPlacementDevices:
		return diag.Usage("a batched placement handles at most %d devices, got %d: use fewer devices or leave out %s", MaxPlacementDevices, len(devs), opt.name("Batch"))
	}
	if batched && p.m != nil {
		// Batched kernels are priced only where the stage files can run them.
		if err := emit.CheckBatch(p.m, opt.Batch, opt.Names); err != nil {
			return err
		}
	}
	switch opt.Objective {
	case Throughput, Latency:
		r.Objective = opt.Objective
	case "":
		if len(opt.Workload) > 0 && !batched {
			r.Objective = Throughput
			r.ObjectiveChosen = opt.name("Workload") + ": a pipeline serving every phase"
			break
		}
		if batched {
			r.Objective = Throughput
			r.ObjectiveChosen = opt.say("Batch", strconv.Itoa(opt.Batch)) + ": the batch shared among the devices"
			break
		}
		if p.identical {
			r.Objective = Throughput
			r.ObjectiveChosen = "identical devices: a pipeline"
		} else {
			r.Objective = Latency
			r.ObjectiveChosen = "mixed devices; " + opt.say("Objective", string(Throughput)) + " gives a pipeline"
		}
	default:
		return diag.Usage("%s: want throughput or latency", opt.say("Objective", strconv.Quote(string(opt.Objective)))).About(diag.Option, opt.name("Objective"))
	}
	if opt.MaxStages > len(g.Nodes) {
		// A stage holds at least one node; larger k only allocates (K = 100000000 ran out of
		// memory in the slicing DP).
		return diag.Usage("%s: the model has only %d nodes, so at most %d stages", opt.say("MaxStages", strconv.Itoa(opt.MaxStages)), len(g.Nodes), len(g.Nodes)).About(diag.Option, opt.name("MaxStages"))
	}
	if r.Objective == Latency && len(devs) > MaxPlacementDevices {
		return diag.Usage("a latency placement handles at most %d devices, got %d: use fewer devices or %s", MaxPlacementDevices, len(devs), opt.say("Objective", string(Throughput)))
	}
	if opt.CutAt == CutBlocks && (batched || r.Objective != Throughput) {
		return diag.Usage("%s restricts the cuts of a pipeline (throughput); latency and batched placements place nodes one by one", opt.say("CutAt", string(CutBlocks))).About(diag.Option, opt.name("CutAt"))
	}
	if len(opt.Workload) > 0 && (batched || r.Objective != Throughput) {
		return diag.Usage("%s plans a pipeline for the mix of phases (throughput); leave out %s and %s, or %s", opt.name("Workload"), opt.name("Batch"), opt.say("Objective", string(Latency)), opt.name("Workload")).About(diag.Option, opt.name("Workload"))
	}
	if err := p.chooseObjective(); err != nil {
		return err
	}
	if p.rules, err = ruleSet(c, devs, opt); err != nil {
		return err
	}
	if err := checkPhases(g, &opt); err != nil {
		return err
	}
	if p.pairs, err = g.StatePairs(opt.State); err != nil {
		return diag.Wrap(diag.KindUsage, err)
	}
	if p.mg, err = memoryGraph(g, &opt); err != nil {
		return err
	}
	return checkMemoryFits(g, p.mg, c, devs)
}

// coarsen groups the model's nodes into the fused kernels of the devices' backend rules.
func (p *run) coarsen() error {
	rs := p.rules
	var err error
	p.work = p.g
	p.r.RuleSet = "none"
	if rs != nil && rs.Name != "none" {
		if p.coarse, err = fusion.Coarsen(p.g, rs); err != nil {
			return fmt.Errorf("coarsening with %s: %w", rs.Name, err)
		}
		p.work = p.coarse.Graph
		p.r.RuleSet = rs.Name
	}
	p.r.CoarseNodes = len(p.work.Nodes)
	p.nodeMem = workMemory(p.g, p.mg, p.work, p.coarse)
	return nil
}

// price fills the time of every planned node on every device the plan may use (a fused
// group's from its kernel), the fixed parts batched plans keep unscaled, and, for a
// workload, the times weighted by each phase's calls.
func (p *run) price() error {
	g, c, work, coarse := p.g, p.c, p.work, p.coarse
	p.cm = profile.NewCostModel(c, profile.CostOptions{Measured: p.opt.Measured})
	cm := p.cm
	p.times = make([][]float64, len(c.Devices))
	if p.batched {
		p.overs = make([][]float64, len(c.Devices))
	}
	for _, d := range p.devs {
		var err error
		if p.times[d], err = cm.KernelTimes(g, coarse, d); err != nil {
			return err
		}
		if p.batched {
			if p.overs[d], err = cm.KernelOverheads(g, coarse, d); err != nil {
				return err
			}
		}
	}
	if wl := p.opt.Workload; len(wl) > 0 {
		pcs, err := p.workloadCosts()
		if err != nil {
			return err
		}
		p.times = weightedTimes(wl, pcs, p.devs, len(c.Devices), len(work.Nodes))
		p.phaseCosts = pcs
		p.r.Notes = append(p.r.Notes, diag.Notef(diag.NoteInfo, "%s", workloadNote(wl)).About(diag.Option, p.opt.name("Workload")))
	}
	p.stateReads = stateReads(g, work, coarse, p.pairs)
	return nil
}

// solve runs the objective's solver on the planned graph.
func (p *run) solve() error {
	p.table = p.cm.Costs(&graph.Graph{}) // routes and capacities only
	sol, err := p.obj.solve(p)
	if err != nil {
		return err
	}
	p.result(sol)
	return nil
}

// solvePipeline plans a throughput pipeline (partition), cut as Options.CutAt says.
func (p *run) solvePipeline() (*solution, error) {
	p.blocks = blocks.Find(p.g)
	if len(p.opt.Workload) == 0 {
		if p.boundary = newStageBoundary(p.c, p.cm, p.g, p.devs); p.boundary != nil {
			p.r.Notes = append(p.r.Notes, diag.Notef(diag.NoteInfo, "%s", p.boundary.note(&p.c.Devices[p.devs[0]])))
		}
	}
	return p.planThroughputCuts()
}

// expand turns the plan on the planned graph into an assignment of the model's nodes.
func (p *run) expand() error {
	r, c := p.r, p.c
	expand := func(s []int) ([]int, error) { return s, nil }
	if p.coarse != nil {
		expand = p.coarse.Expand
	}
	stage, err := expand(p.workStage)
	if err != nil {
		return fmt.Errorf("expanding the coarse plan: %w", err)
	}
	if err := r.expandRoutes(expand); err != nil {
		return err
	}
	a := &emit.Assignment{Stage: stage, Split: emit.SplitInfo{Method: r.Algorithm}, Recompute: r.recompute}
	for _, d := range p.labelDevice {
		a.Devices = append(a.Devices, emit.Device{Name: c.Devices[d].Name, Provider: provider(&c.Devices[d])})
	}
	r.Assignment = a
	if r.Batch != nil {
		r.Assignment = r.Batch.Routes[0].Assignment // the same stages, with the routes' note
	}
	return nil
}

// memory sizes every stage's whole memory and checks it against its device.
func (p *run) memory() error { return p.r.checkMemory(p.g, p.mg) }

// --- throughput: MTPP pipelines --------------------------------------------------------

// clockCutNote says that the safety net of a reproducible plan fired.
func clockCutNote(opt *Options) diag.Note {
	return diag.Notef(diag.NoteCapped, "the time limit cut the search short: this plan depends on the machine's speed and load; a larger %s gives a reproducible plan", opt.name("TimeLimit")).About(diag.Option, opt.name("TimeLimit"))
}
