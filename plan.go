// Package onnxpart plans how to split an ONNX model across devices, in a few lines:
//
//	m, _ := ingest.Load("model.onnx", ingest.Options{})
//	c, _ := profile.Resolve(ctx, "4xA100-80G", profile.Options{})
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
package onnxpart

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"time"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/graph/blocks"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/partition"
	"github.com/onnxpart/onnxpart/profile"
	"github.com/onnxpart/onnxpart/schedule"
)

// MaxPlacementDevices bounds the devices of a latency placement: schedule's route set-up
// takes k⁵ steps and does not watch the time limit (a 10 s plan took 14 s with 64 devices,
// 47 s with 96, hours with 256). Pipelines (package partition) take up to profile's 256.
const MaxPlacementDevices = 32

// Objectives.
const (
	Throughput = "throughput"
	Latency    = "latency"
)

// Options control Plan.
type Options struct {
	// K caps the stages: a pipeline's (throughput), or a latency placement's runtime calls
	// (a usage error when the solver finds no plan within it); batched placements refuse it.
	// 0: no cap (a pipeline then has one stage per device).
	K int
	// Objective is Throughput, Latency or "" (throughput for identical devices, latency for
	// mixed ones).
	Objective string
	// Fusion names the rule set to coarsen with ("" picks one for the devices: ort-cuda for
	// GPUs, ort-cpu otherwise; "none" disables); FusionRules a rule file instead.
	Fusion      string
	FusionRules string
	// Solver: "auto", or a throughput search (brkga, random, mla), or a placement method
	// (met, greedy, heft, ea, sa, milp, split).
	Solver string
	// Bounds: none, simple, fast, full.
	Bounds    string
	TimeLimit time.Duration
	Gap       float64
	Seed      int64
	// PolishWindow is the widest window of a pipeline's polish, in consecutive stages
	// (partition.PolishOptions.MaxWindow; exact sub-MIPs around the bottleneck stage); 0: its
	// default, 4. Wider windows find better plans on many stages and take longer (windows of
	// 6 at k = 8 lowered the bottleneck of 6 of 20 REGAL-like graphs, by up to 2.1%, and took
	// 1.5× the time). Latency and batched placements have no such polish.
	PolishWindow int
	// Reproducible makes the plan, its bounds and so the output files a function of the
	// inputs and Seed alone, whatever the machine's speed, load or GOMAXPROCS: searches run
	// on work budgets instead of the clock (EA/SA iterations, the BRKGA budget, MIPs solved
	// to completion), and a MIP bound or plan that the time limit cuts short is left out
	// (Result.Notes say so). TimeLimit stays a safety net; when it cuts a search anyway, a
	// note says that the plan depends on the machine. Without it, planning uses the whole
	// time limit and keeps whatever the clock allowed (often better bounds, not repeatable).
	Reproducible bool
	// Batch, when > 1, plans a batch of that many inputs shared among the devices (data and
	// model parallel; seed 003 §3.2) and maximises its throughput, Batch / the batch's
	// makespan: a batched placement instead of a pipeline or a one-input placement. An input
	// is one call of the model as given (bind a symbolic batch dimension to 1 to count
	// samples).
	Batch int
	// Measured holds per-node measured times per device (profile.CostOptions.Measured).
	Measured [][]float64
	// Progress receives progress lines (phase, objective, bound, gap) while solving.
	Progress func(Progress)
	// GPUIDs are the CUDA ordinals of the cluster's GPUs, in the cluster's order (--gpu-ids);
	// nil: the NVML index of GPUs found by --devices auto, else each GPU's position among
	// the GPUs.
	GPUIDs []int
	// MemoryGraph is the model's graph sized at the dims the stages' memory is checked at
	// (--max-dim, e.g. the longest KV cache), loaded from the same model so that its nodes
	// and tensors are the model's; nil: the graph planned.
	MemoryGraph *graph.Graph
	// Workload, when set, plans one pipeline for a mix of phases (an LLM's prefill and decode
	// steps), each the model at its own dims: every stage's busy time per request is the sum
	// of its phases' times weighted by their calls, and the plan minimises the busiest
	// stage's (a throughput pipeline; latency and batched plans refuse it).
	Workload []Phase
	// State names state pairs (input → output) that graph.StatePairs's pattern misses
	// (--state); the state stays on the device of the stage that writes it.
	State map[string]string

	// CutAt restricts a pipeline's cuts: CutAny, CutBlocks or CutAuto ("" is CutAuto).
	CutAt string

	colocate   [][]int // work nodes that share a stage (block-boundary cuts)
	fine       *graph.Graph
	coarse     *fusion.Coarse
	blocks     *blocks.Result // the model's repeated blocks (throughput pipelines)
	statePairs []graph.StatePair
	nodeMem    []float64 // per node of the planned (coarse) graph: weights and owned state
	phaseCosts []phaseCosts
	stateReads []stateRead
}

// Progress is one progress report.
type Progress struct {
	Phase      string
	Objective  float64
	LowerBound float64
	Gap        float64
	Elapsed    time.Duration
}

// InfeasibleError means the model cannot fit the devices (exit code 3).
type InfeasibleError struct{ Msg string }

func (e *InfeasibleError) Error() string { return e.Msg }

// NoPlanError means that no plan that fits was found within the limits, while nothing proved
// that none exists (exit code 5). A longer --time-limit may find one.
type NoPlanError struct{ Msg string }

func (e *NoPlanError) Error() string { return e.Msg }

// solverError turns the solvers' "infeasible" (a proof) and "no plan found" (no proof) into
// the package's errors; anything else passes unchanged.
func solverError(err error) error {
	var pie *partition.InfeasibleError
	var sie *schedule.InfeasibleError
	var pnp *partition.NoPlanError
	var snp *schedule.NoPlanError
	switch {
	case errors.As(err, &pie), errors.As(err, &sie):
		return &InfeasibleError{Msg: err.Error()}
	case errors.As(err, &pnp), errors.As(err, &snp):
		return &NoPlanError{Msg: err.Error()}
	}
	return err
}

// UsageError is a bad combination of options.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// StageSummary is one row of the plan table.
type StageSummary struct {
	Stage      int
	Device     string
	Ops        int
	ParamBytes int64
	ComputeS   float64
	CommS      float64
	CallS      float64 // the fixed cost of the stage's runtime call (the device's run overhead)
	TotalS     float64
	Bottleneck bool
	Memory     StageMemory // the whole memory on its device
}

// Result is a plan ready to emit.
type Result struct {
	Objective string // Throughput or Latency
	// ObjectiveChosen explains a defaulted objective ("mixed devices: latency").
	ObjectiveChosen string
	Cluster         *profile.Cluster
	Devices         []int // cluster device indices the plan may use
	RuleSet         string
	CoarseNodes     int
	// Upper is the plan's predicted objective (bottleneck stage time, or makespan), Lower the
	// best proved lower bound, Gap = 1 − Lower/Upper.
	Upper, Lower, Gap float64
	BoundMethod       string
	Bounds            []emit.BoundValue
	LatencyS          float64
	ThroughputPerS    float64
	Algorithm         string
	Seconds           float64
	Stages            []StageSummary
	Assignment        *emit.Assignment
	Layout            *emit.Layout
	Notes             []string
	// Timeline is the predicted schedule of one inference (latency plans).
	Timeline []emit.TimelineEvent
	// Partition or Schedule holds the solver's own result.
	Partition *partition.Plan
	Schedule  *schedule.Result
	// Batch is set for batched plans (Options.Batch > 1): the routes the granules follow.
	Batch *BatchPlan
	// Workload holds each phase's figures alone for a plan made for Options.Workload, whose
	// Upper is then the busiest stage's time per request (ThroughputPerS requests per second)
	// and LatencyS a request's (its calls one after another).
	Workload []PhaseFigures
	// CUDAOrdinal maps a cluster GPU's index to its CUDA ordinal (Options.GPUIDs).
	CUDAOrdinal map[int]int
	// Reproducible is Options.Reproducible: the seed describes the plan, and the manifest
	// records it only then. Interrupted says the context ended planning early: the plan is
	// the best found so far, and the manifest says so.
	Reproducible, Interrupted bool
	// Memory is the whole memory of each stage label of Assignment.
	Memory    []StageMemory
	memGraph  *graph.Graph // the graph Memory is sized at
	recompute []bool       // model nodes every reading stage computes (emit.Assignment.Recompute)
	// placement is the placement problem a latency or batched plan solved (what its
	// Schedule's plan is a placement of), for tests that re-price plans.
	placement *schedule.Problem
}

// cudaOrdinals maps each GPU of the cluster to the CUDA ordinal a serving process uses for it.
func cudaOrdinals(c *profile.Cluster, ids []int) (map[int]int, error) {
	var gpus []int
	for d := range c.Devices {
		if c.Devices[d].Kind == profile.GPU {
			gpus = append(gpus, d)
		}
	}
	out := map[int]int{}
	if ids != nil {
		if len(ids) != len(gpus) {
			return nil, &UsageError{Msg: fmt.Sprintf("--gpu-ids gives %d ids for %d GPUs", len(ids), len(gpus))}
		}
		seen := map[int]bool{}
		for i, id := range ids {
			if id < 0 || seen[id] {
				return nil, &UsageError{Msg: fmt.Sprintf("--gpu-ids: %d is negative or given twice", id)}
			}
			seen[id] = true
			out[gpus[i]] = id
		}
		return out, nil
	}
	for rank, d := range gpus {
		if nv := c.Devices[d].NVML; nv != nil {
			out[d] = nv.Index
		} else {
			out[d] = rank
		}
	}
	return out, nil
}

// DeviceLabel names a cluster device for people: "gpu0 (A100-SXM4-80GB)", the product
// without its vendor prefix.
func DeviceLabel(c *profile.Cluster, name string) string {
	d := c.Index(name)
	if d < 0 {
		return name
	}
	return emit.DeviceLabel(name, c.Devices[d].Model)
}

// Plan plans model m on cluster c.
func Plan(ctx context.Context, m *ingest.Model, c *profile.Cluster, opt Options) (*Result, error) {
	start := time.Now()
	if opt.TimeLimit > 0 {
		// One deadline for everything (solvers, the reproducible bounds after them).
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opt.TimeLimit)
		defer cancel()
	}
	g := m.Graph
	r := &Result{Cluster: c, Reproducible: opt.Reproducible}
	devs, err := chooseDevices(c, opt.K)
	if err != nil {
		return nil, err
	}
	r.Devices = devs
	if r.CUDAOrdinal, err = cudaOrdinals(c, opt.GPUIDs); err != nil {
		return nil, err
	}
	identical := identicalDevices(c, devs)
	batched := opt.Batch > 1
	if err := (partition.PolishOptions{MaxWindow: opt.PolishWindow}).Validate(); err != nil {
		return nil, &UsageError{Msg: fmt.Sprintf("--polish-window %d: a window spans at least 2 stages", opt.PolishWindow)}
	}
	switch {
	case opt.Batch < 0:
		return nil, &UsageError{Msg: fmt.Sprintf("--batch %d: must be positive", opt.Batch)}
	case batched && opt.Objective == Latency:
		return nil, &UsageError{Msg: fmt.Sprintf("--batch %d plans the throughput of a batch; --objective latency plans one input (leave out one of them)", opt.Batch)}
	case batched && len(devs) > MaxPlacementDevices:
		return nil, &UsageError{Msg: fmt.Sprintf("a batched placement handles at most %d devices, got %d: use fewer devices or leave out --batch", MaxPlacementDevices, len(devs))}
	}
	switch opt.Objective {
	case Throughput, Latency:
		r.Objective = opt.Objective
	case "":
		if len(opt.Workload) > 0 && !batched {
			r.Objective = Throughput
			r.ObjectiveChosen = "--workload: a pipeline serving every phase"
			break
		}
		if batched {
			r.Objective = Throughput
			r.ObjectiveChosen = fmt.Sprintf("--batch %d: the batch shared among the devices", opt.Batch)
			break
		}
		if identical {
			r.Objective = Throughput
			r.ObjectiveChosen = "identical devices: a pipeline"
		} else {
			r.Objective = Latency
			r.ObjectiveChosen = "mixed devices; --objective throughput gives a pipeline"
		}
	default:
		return nil, &UsageError{Msg: fmt.Sprintf("--objective %q: want throughput or latency", opt.Objective)}
	}
	if opt.K > len(g.Nodes) {
		// A stage holds at least one node; larger k only allocates (-k 100000000 ran out of
		// memory in the slicing DP).
		return nil, &UsageError{Msg: fmt.Sprintf("-k %d: the model has only %d nodes, so at most %d stages", opt.K, len(g.Nodes), len(g.Nodes))}
	}
	if r.Objective == Latency && len(devs) > MaxPlacementDevices {
		return nil, &UsageError{Msg: fmt.Sprintf("a latency placement handles at most %d devices, got %d: use fewer devices or --objective throughput", MaxPlacementDevices, len(devs))}
	}
	if opt.CutAt == CutBlocks && (batched || r.Objective != Throughput) {
		return nil, &UsageError{Msg: "--cut-at blocks restricts the cuts of a pipeline (throughput); latency and batched placements place nodes one by one"}
	}
	if len(opt.Workload) > 0 && (batched || r.Objective != Throughput) {
		return nil, &UsageError{Msg: "--workload plans a pipeline for the mix of phases (throughput); leave out --batch and --objective latency, or --workload"}
	}
	pairs, err := g.StatePairs(opt.State)
	if err != nil {
		return nil, &UsageError{Msg: err.Error()}
	}
	mg, err := memoryGraph(g, opt)
	if err != nil {
		return nil, &UsageError{Msg: err.Error()}
	}
	if err := checkMemoryFits(g, mg, c, devs); err != nil {
		return nil, err
	}

	// Coarsen.
	rs, err := ruleSet(c, devs, opt)
	if err != nil {
		return nil, err
	}
	cm := profile.NewCostModel(c, profile.CostOptions{Measured: opt.Measured})
	var coarse *fusion.Coarse
	work := g
	if rs != nil && rs.Name != "none" {
		coarse, err = fusion.Coarsen(g, rs)
		if err != nil {
			return nil, fmt.Errorf("coarsening with %s: %w", rs.Name, err)
		}
		work = coarse.Graph
		r.RuleSet = rs.Name
	} else {
		r.RuleSet = "none"
	}
	r.CoarseNodes = len(work.Nodes)
	opt.nodeMem = workMemory(g, mg, work, coarse)
	times := make([][]float64, len(c.Devices))
	var overs [][]float64 // the fixed part of each time, which batched plans do not scale
	if batched {
		overs = make([][]float64, len(c.Devices))
	}
	for _, d := range devs {
		if coarse != nil {
			d := d
			times[d] = coarse.Times(func(_ int, members []int, kernel *graph.Node) float64 {
				return cm.KernelTime(g, members, kernel, d)
			}, nil)
			if batched {
				overs[d] = coarse.Times(func(_ int, members []int, _ *graph.Node) float64 {
					return cm.KernelOverhead(g, members, d)
				}, nil)
			}
			continue
		}
		times[d] = make([]float64, len(g.Nodes))
		for v := range g.Nodes {
			times[d][v] = cm.NodeTime(g, v, d)
		}
		if batched {
			overs[d] = make([]float64, len(g.Nodes))
			for v := range g.Nodes {
				overs[d][v] = cm.NodeOverhead(g, v, d)
			}
		}
	}
	if len(opt.Workload) > 0 {
		pcs, err := workloadCosts(g, work, coarse, cm, devs, len(c.Devices), opt.Workload)
		if err != nil {
			return nil, err
		}
		times = weightedTimes(opt.Workload, pcs, devs, len(c.Devices), len(work.Nodes))
		opt.phaseCosts = pcs
		r.Notes = append(r.Notes, workloadNote(opt.Workload))
	}
	opt.stateReads = stateReads(g, work, coarse, pairs)
	table := cm.Costs(&graph.Graph{}) // routes and capacities only
	var workStage []int               // stage label per node of work
	var labelDevice []int             // cluster device of each label
	switch {
	case batched:
		workStage, labelDevice, err = planBatched(ctx, r, work, times, overs, table, devs, opt)
	case r.Objective == Throughput:
		opt.fine, opt.coarse, opt.blocks, opt.statePairs = g, coarse, blocks.Find(g), pairs
		workStage, labelDevice, err = planThroughputCuts(ctx, r, g, work, coarse, times, table, devs, identical, len(pairs) > 0, opt)
	default:
		workStage, labelDevice, err = planLatency(ctx, r, work, times, table, devs, opt)
	}
	if err != nil {
		return nil, err
	}
	expand := func(s []int) ([]int, error) { return s, nil }
	if coarse != nil {
		expand = coarse.Expand
	}
	stage, err := expand(workStage)
	if err != nil {
		return nil, fmt.Errorf("expanding the coarse plan: %w", err)
	}
	if err := r.expandRoutes(expand); err != nil {
		return nil, err
	}
	a := &emit.Assignment{Stage: stage, Split: emit.SplitInfo{Method: r.Algorithm}, Recompute: r.recompute}
	for _, d := range labelDevice {
		a.Devices = append(a.Devices, emit.Device{Name: c.Devices[d].Name, Provider: provider(&c.Devices[d])})
	}
	r.Assignment = a
	if r.Batch != nil {
		r.Assignment = r.Batch.Routes[0].Assignment // the same stages, with the routes' note
	}
	if err := r.checkMemory(g, opt); err != nil {
		return nil, err
	}
	r.Seconds = time.Since(start).Seconds()
	r.Interrupted = errors.Is(ctx.Err(), context.Canceled) // the caller's, not the time limit
	r.Gap = partition.Gap(r.Lower, r.Upper)
	return r, nil
}

// Prepare lays out the stage files of a plan and fills the manifest's planner sections.
//
// A batched plan with several routes (Result.Batch) lays out route 0 here and every other
// route in its own subdirectory (RouteDir), written with the stage files by WriteDir; the
// manifest's batch section lists them.
func Prepare(m *ingest.Model, r *Result, opt emit.Options, seed int64) (*emit.Layout, error) {
	if r.Batch != nil && len(r.Batch.Routes) > 1 {
		return prepareRoutes(m, r, opt, seed)
	}
	return prepareOne(m, r, r.Assignment, r.Stages, opt, seed)
}

// prepareRoutes lays out route 0 with the others as extras in their directories.
func prepareRoutes(m *ingest.Model, r *Result, opt emit.Options, seed int64) (*emit.Layout, error) {
	routes := make([]*emit.Layout, len(r.Batch.Routes))
	for i := 1; i < len(routes); i++ {
		// Every route directory is complete: stage files, manifest and the same extras
		// (report, Triton repository) as route 0's.
		ro := emit.Options{Producer: opt.Producer, ModelPath: opt.ModelPath, ExternalData: opt.ExternalData, MaxInlineBytes: opt.MaxInlineBytes, Extras: opt.Extras, FreezeDims: opt.FreezeDims}
		rp := &r.Batch.Routes[i]
		l, err := prepareOne(m, r, rp.Assignment, rp.Stages, ro, seed)
		if err != nil {
			return nil, fmt.Errorf("route %d: %w", i, err)
		}
		routes[i] = l
	}
	extras := opt.Extras
	opt.Extras = func(dir string, man *emit.Manifest) error {
		for i := 1; i < len(routes); i++ {
			if err := routes[i].WriteDir(filepath.Join(dir, RouteDir(i))); err != nil {
				return err
			}
		}
		if extras != nil {
			return extras(dir, man)
		}
		return nil
	}
	l, err := prepareOne(m, r, r.Assignment, r.Stages, opt, seed)
	if err != nil {
		return nil, err
	}
	devices := func(i int) []string {
		lay := l
		if i > 0 {
			lay = routes[i]
		}
		var d []string
		for _, st := range lay.Manifest.Stages {
			d = append(d, st.Device)
		}
		return d
	}
	l.Manifest.Batch = r.batchManifest(devices)
	for i := 1; i < len(routes); i++ {
		routes[i].Manifest.Batch = l.Manifest.Batch
	}
	return l, nil
}

// prepareOne lays out one assignment with the plan's sections; stages holds the
// predictions of its stage labels.
func prepareOne(m *ingest.Model, r *Result, a *emit.Assignment, stages []StageSummary, opt emit.Options, seed int64) (*emit.Layout, error) {
	l, err := emit.Prepare(m, a, opt)
	if err != nil {
		return nil, err
	}
	man := l.Manifest
	man.Objective = emit.Objective(r.Objective)
	man.Predicted = &emit.Predicted{BottleneckS: r.bottleneck(), ThroughputPerS: r.ThroughputPerS, LatencyS: r.LatencyS,
		Workload: r.workloadPredictions(man.Stages)}
	man.Bounds = &emit.Bounds{LowerBoundS: r.Lower, Method: r.BoundMethod, Gap: r.Gap, Computed: r.Bounds}
	man.Solver = &emit.Solver{Algorithm: r.Algorithm} // no timings: manifests are reproducible
	if r.Reproducible {
		man.Solver.Seed = &seed // an unseeded run used the clock: no seed describes it
	}
	man.Interrupted = r.Interrupted
	man.Bounds.Computed = nil
	for _, b := range r.Bounds {
		man.Bounds.Computed = append(man.Bounds.Computed, emit.BoundValue{Method: b.Method, LowerBoundS: b.LowerBoundS})
	}
	for i := range man.Devices {
		if d := r.Cluster.Index(man.Devices[i].Name); d >= 0 {
			dev := &r.Cluster.Devices[d]
			di := &man.Devices[i]
			di.Kind = string(dev.Kind)
			if cp := dev.Capacity(); !math.IsInf(cp, 1) {
				di.MemoryBytes = int64(cp)
			}
			di.Model, di.Catalog = dev.Model, dev.Catalog
			if nv := dev.NVML; nv != nil {
				idx := nv.Index
				di.NVMLIndex, di.UUID, di.PCIBusID = &idx, nv.UUID, nv.BusID
			}
		}
	}
	// Devices in the order the user gave them (the cluster's), not in order of first use.
	sort.SliceStable(man.Devices, func(i, j int) bool {
		return r.Cluster.Index(man.Devices[i].Name) < r.Cluster.Index(man.Devices[j].Name)
	})
	for d, id := range r.CUDAOrdinal {
		man.SetCUDADevice(r.Cluster.Devices[d].Name, id)
	}
	byLabel := map[int]*StageSummary{}
	for i := range stages {
		byLabel[stages[i].Stage] = &stages[i]
	}
	for i := range man.Stages {
		st := &man.Stages[i]
		if s := byLabel[st.Label]; s != nil {
			st.Predicted = &emit.StagePrediction{ComputeS: s.ComputeS, CommS: s.CommS, CallS: s.CallS, TotalS: s.TotalS}
		}
		if mem := stageMemoryOf(r, a, st.Label); mem != nil {
			st.Memory = mem
		}
	}
	man.Timeline = r.Timeline
	man.Notes = append(man.Notes, r.Notes...)
	if r.Batch != nil {
		man.Batch = r.batchManifest(func(int) []string {
			var d []string
			for _, st := range man.Stages {
				d = append(d, st.Device)
			}
			return d
		})
	}
	r.Layout = l
	return l, nil
}

func (r *Result) bottleneck() float64 {
	if r.Objective == Throughput && r.Batch == nil {
		return r.Upper
	}
	b := 0.0
	for _, s := range r.Stages {
		b = math.Max(b, s.TotalS)
	}
	return b
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// chooseDevices picks the devices a plan may use: all of them, or the first k.
func chooseDevices(c *profile.Cluster, k int) ([]int, error) {
	n := len(c.Devices)
	if k < 0 {
		return nil, &UsageError{Msg: fmt.Sprintf("-k %d: must be positive", k)}
	}
	devs := make([]int, n)
	for i := range devs {
		devs[i] = i
	}
	return devs, nil
}

// identicalDevices reports whether every device has the same model and figures.
func identicalDevices(c *profile.Cluster, devs []int) bool {
	a := &c.Devices[devs[0]]
	for _, d := range devs[1:] {
		b := &c.Devices[d]
		if a.Kind != b.Kind || a.Model != b.Model || a.Catalog != b.Catalog ||
			a.Peak != b.Peak || a.Bandwidth != b.Bandwidth || a.Capacity() != b.Capacity() {
			return false
		}
	}
	return true
}

func human(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.2f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

// ruleSet resolves the fusion rule set: explicit, or by the devices' backend.
func ruleSet(c *profile.Cluster, devs []int, opt Options) (*fusion.RuleSet, error) {
	name := opt.Fusion
	if opt.FusionRules == "" && name == "" {
		name = "ort-cpu"
		for _, d := range devs {
			if c.Devices[d].Kind == profile.GPU {
				name = "ort-cuda"
			}
		}
	}
	if opt.FusionRules != "" && opt.Fusion != "" {
		return nil, &UsageError{Msg: "give --fusion or --fusion-rules, not both"}
	}
	if opt.FusionRules != "" {
		return fusion.LoadRuleSet(opt.FusionRules)
	}
	rs, err := fusion.Builtin(name)
	if err != nil {
		return nil, &UsageError{Msg: err.Error()}
	}
	return rs, nil
}

// provider is the ONNX Runtime execution provider a stage on d uses.
func provider(d *profile.Device) string {
	switch d.Kind {
	case profile.GPU:
		return "CUDAExecutionProvider"
	case profile.CPU:
		return "CPUExecutionProvider"
	}
	return "CPUExecutionProvider"
}

// --- throughput: MTPP pipelines --------------------------------------------------------

// clockCutNote says that the safety net of a reproducible plan fired.
const clockCutNote = "the time limit cut the search short: this plan depends on the machine's speed and load; a larger --time-limit gives a reproducible plan"
