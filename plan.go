// Package onnxpart plans how to split an ONNX model across devices, in a few lines:
//
//	m, _ := ingest.Load("model.onnx", ingest.Options{})
//	c, _ := profile.Resolve(ctx, "4xA100-80G", profile.Options{})
//	r, _ := onnxpart.Plan(ctx, m, c, onnxpart.Options{TimeLimit: 30 * time.Second})
//	l, _ := onnxpart.Prepare(m, r, emit.Options{}, 0)
//	_ = l.WriteDir("out")                       // stage files, manifest.json
//	rep, _ := emit.Verify(ctx, "out", emit.VerifyOptions{}) // chained stages == the model?
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
	"slices"
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

func planThroughput(ctx context.Context, r *Result, g *graph.Graph, times [][]float64, table *profile.CostTable,
	devs []int, identical bool, opt Options) ([]int, []int, error) {
	p := &partition.Problem{Name: g.Name, Params: make([]float64, len(g.Nodes))}
	p.NodeNames = make([]string, len(g.Nodes))
	for v := range g.Nodes {
		p.NodeNames[v] = g.Nodes[v].Label()
		p.Params[v] = float64(g.Nodes[v].ParamBytes)
		if len(opt.nodeMem) == len(g.Nodes) {
			p.Params[v] = opt.nodeMem[v] // weights and owned state (memory.go)
		}
	}
	// One link figure per pipeline: the slowest route between two of the devices used
	// (identical devices on a uniform interconnect have one figure anyway).
	bw, lat := math.Inf(1), 0.0
	for _, i := range devs {
		for _, j := range devs {
			if i != j {
				if b := table.Bandwidth[i][j]; b > 0 && b < bw {
					bw, lat = b, table.Latency[i][j]
				}
			}
		}
	}
	latBW := 0.0 // a transfer's latency in bytes: Size/B = bytes/B + latency
	if !math.IsInf(bw, 1) {
		latBW = lat * bw
	}
	// With a workload, a tensor's size per request is its bytes in each phase weighted by
	// the phase's calls, and it pays the latency once per call.
	calls := totalWeight(opt.Workload)
	size := func(t int) float64 {
		if len(opt.phaseCosts) == 0 {
			return math.Max(float64(g.Tensors[t].Bytes), 0) + latBW
		}
		s := calls * latBW
		for i, pc := range opt.phaseCosts {
			s += opt.Workload[i].Weight * math.Max(pc.bytes[t], 0)
		}
		return s
	}
	// Cheap cones every block reads (masks, rotary tables) are recomputed where they are
	// read when that costs less than receiving them (recompute.go).
	var workRe, fineRe []bool
	if opt.fine != nil {
		workRe, fineRe = chooseRecompute(opt.fine, g, opt.coarse, opt.blocks, times[devs[0]], size, bw, opt.statePairs)
	}
	var tensorWork []int // the work-graph tensor of each of p's tensors
	for t := range g.Tensors {
		tn := &g.Tensors[t]
		// Weight-only (static) nodes, Constants included, are emitted again in every stage
		// that reads them (emit's classify), so their outputs never cross a stage boundary;
		// so are recomputed cones.
		if tn.Producer < 0 || len(tn.Consumers) == 0 || g.Nodes[tn.Producer].Static || (workRe != nil && workRe[tn.Producer]) {
			continue
		}
		p.Tensors = append(p.Tensors, partition.Tensor{Name: tn.Name, Producer: tn.Producer, Consumers: tn.Consumers, Size: size(t)})
		tensorWork = append(tensorWork, t)
	}
	// State read away from the stage that keeps it crosses the link on every call.
	for _, sr := range opt.stateReads {
		p.Tensors = append(p.Tensors, partition.Tensor{Name: g.Tensors[sr.tensor].Name, Producer: sr.owner, Consumers: sr.readers,
			Size: size(sr.tensor), Unordered: true})
		tensorWork = append(tensorWork, sr.tensor)
	}
	p.Bandwidth = bw
	p.Colocate = opt.colocate
	k := len(devs)
	if opt.K > 0 {
		k = opt.K
	}
	var groups [][]int // cluster devices of each partition device
	if identical {
		p.Work = times[devs[0]]
		if k > len(devs) {
			// Stages that share a device run in turn: the device is busy for the sum of their
			// times per inference, so the pipeline's period is the largest device load, not
			// the largest stage. One stage per device is what the model certifies.
			r.Notes = append(r.Notes, fmt.Sprintf("-k %d on %d devices: stages that share a device run in turn and add up their busy time per inference, so more stages than devices cannot be priced as a pipeline of separate stages; planned %d stages, one per device", k, len(devs), len(devs)))
			k = len(devs)
		}
		p.K = k
		p.MemoryCap = usableCap(&r.Cluster.Devices[devs[0]]) // less the workspace reserve
		groups = [][]int{devs}
	} else {
		// Group identical devices; each group is one partition device with a count.
		p.Work = times[devs[0]]
		for _, d := range devs {
			placed := false
			for gi := range groups {
				if identicalDevices(r.Cluster, []int{groups[gi][0], d}) {
					groups[gi] = append(groups[gi], d)
					placed = true
					break
				}
			}
			if !placed {
				groups = append(groups, []int{d})
			}
		}
		for _, grp := range groups {
			dev := &r.Cluster.Devices[grp[0]]
			pd := partition.Device{Name: dev.Name, Count: len(grp), Work: times[grp[0]]}
			pd.MemoryCap = usableCap(dev) // less the workspace reserve
			p.Devices = append(p.Devices, pd)
		}
		switch {
		case opt.K > 0 && opt.K < len(devs):
			return nil, nil, &UsageError{Msg: fmt.Sprintf("-k %d: a heterogeneous pipeline runs one stage on each of its %d devices; give -k %d (or leave -k out), name fewer devices, or use --objective latency, which caps its stages at -k", opt.K, len(devs), len(devs))}
		case opt.K > len(devs):
			r.Notes = append(r.Notes, fmt.Sprintf("-k %d on %d devices: stages that share a device run in turn and add up their busy time per inference, so more stages than devices cannot be priced as a pipeline of separate stages; planned %d stages, one per device", opt.K, len(devs), len(devs)))
		}
	}
	bounds, err := partition.ParseBounds(opt.Bounds)
	if err != nil {
		return nil, nil, &UsageError{Msg: err.Error()}
	}
	po := partition.Options{Seed: opt.Seed, TimeLimit: opt.TimeLimit, Gap: opt.Gap, Bounds: bounds,
		Polish: partition.PolishOptions{MaxWindow: opt.PolishWindow}}
	// Solve's window polish stops at its share of the clock; reproducible plans run it apart
	// (reproduciblePolish) and keep it only when it ends.
	po.NoPolish = opt.Reproducible
	mipBounds := opt.Reproducible && (bounds == partition.BoundsFast || bounds == partition.BoundsFull)
	if mipBounds {
		// Solve's MIP bounds run on the clock; they are run below, and kept when they finish.
		po.Bounds = partition.BoundsSimple
	}
	switch opt.Solver {
	case "", "auto", "brkga":
		po.Search = partition.SearchBRKGA
	case "random":
		po.Search = partition.SearchRandom
	case "mla":
		po.Search = partition.SearchMLAWeighted
	default:
		return nil, nil, &UsageError{Msg: fmt.Sprintf("--solver %q is not a throughput solver (auto, brkga, random, mla)", opt.Solver)}
	}
	// Every stage is one runtime call per inference (session run, synchronisation, the
	// hand-off through the host): a non-empty stage on device d also costs the device's run
	// overhead c_d. The partition is solved without it, then priced: each stage's total and
	// the objective include c_d, and every bound rises by c_min = min_d c_d over the devices
	// the pipeline may use, which stays a lower bound: for any plan, max over non-empty stages
	// of (f_s + c_s) ≥ max_s f_s + c_min ≥ OPT_unpriced + c_min. With identical devices the
	// shift is exact, so a proved optimum stays proved for the priced objective.
	callOf := make([]float64, len(groups))
	callMin := math.Inf(1)
	for gi, grp := range groups {
		callOf[gi] = calls * table.RunOverhead[grp[0]] // one call per phase call
		callMin = math.Min(callMin, callOf[gi])
	}
	if math.IsInf(callMin, 1) {
		callMin = 0
	}
	if opt.Progress != nil {
		po.Progress = func(pr partition.Progress) {
			obj, lb := pr.Objective+callMin, pr.LowerBound+callMin
			opt.Progress(Progress{Phase: pr.Phase, Objective: obj, LowerBound: lb, Gap: partition.Gap(lb, obj), Elapsed: pr.Elapsed})
		}
	}
	plan, err := partition.Solve(ctx, p, po)
	if err != nil {
		return nil, nil, solverError(err)
	}
	if opt.Reproducible && ctx.Err() != nil {
		r.Notes = append(r.Notes, clockCutNote)
	}
	if opt.Reproducible && ctx.Err() == nil {
		plan = reproduciblePolish(ctx, p, plan, po, &r.Notes)
	}
	if mipBounds {
		plan = reproducibleMIPBounds(ctx, p, plan, bounds, opt.Gap)
	}
	for _, b := range plan.Bounds {
		if b.Status == "error" { // partition keeps going without saying so
			plan.Notes = append(plan.Notes, fmt.Sprintf("solver fault: HiGHS failed on the %s MIP; the plan is the heuristics' and the bound the best of the others", b.Method))
		}
	}
	r.Partition = plan
	r.Algorithm = "mtpp-" + po.Search
	// Stage labels are pipeline positions; each gets a cluster device.
	used := make([]int, len(groups))
	labelDevice := make([]int, len(plan.Stages))
	upper := 0.0
	for s := range plan.Stages {
		gi := 0
		if s < len(plan.StageDevice) {
			gi = plan.StageDevice[s]
		}
		grp := groups[gi]
		labelDevice[s] = grp[used[gi]%len(grp)]
		used[gi]++
		sc := plan.StageCosts[s]
		ops := len(plan.Stages[s])
		call := 0.0
		if ops > 0 {
			call = callOf[gi]
		}
		dt := times[labelDevice[s]]
		extra := recomputeExtra(g, workRe, plan.Assignment, s, func(w int) float64 { return dt[w] })
		r.Stages = append(r.Stages, StageSummary{Stage: s, Device: r.Cluster.Devices[labelDevice[s]].Name, Ops: ops,
			ParamBytes: int64(sc.Params), ComputeS: sc.Work + extra, CommS: sc.Comm + sc.Overflow, CallS: call, TotalS: sc.Total + call + extra})
		r.LatencyS += sc.Total + call + extra
		upper = math.Max(upper, sc.Total+call+extra)
	}
	r.Upper, r.Lower, r.BoundMethod = upper, math.Min(plan.LowerBound+callMin, upper), plan.BoundMethod
	for _, b := range plan.Bounds {
		v := b.Value
		if v > 0 {
			v += callMin
		}
		r.Bounds = append(r.Bounds, emit.BoundValue{Method: b.Method, LowerBoundS: v, Seconds: round6(b.Seconds)})
	}
	r.Notes = append(r.Notes, plan.Notes...)
	if upper > 0 {
		r.ThroughputPerS = 1 / upper
	}
	markBottleneck(r.Stages)
	if len(opt.phaseCosts) > 0 {
		one := make([]float64, len(callOf))
		for gi, grp := range groups {
			one[gi] = table.RunOverhead[grp[0]]
		}
		figs, err := phaseFigures(p, plan, opt.Workload, opt.phaseCosts, tensorWork, groups, one, latBW, g, workRe, labelDevice)
		if err != nil {
			return nil, nil, err
		}
		r.Workload = figs
		// A request's calls run one after another (each decode step needs the previous one):
		// its latency is the sum of its calls'.
		r.LatencyS = 0
		for _, f := range figs {
			r.LatencyS += f.Weight * f.LatencyS
		}
	}
	r.recompute = fineRe
	if fineRe != nil {
		n := 0
		for _, x := range fineRe {
			if x {
				n++
			}
		}
		r.Notes = append(r.Notes, fmt.Sprintf("%d nodes computing tensors every block reads from the model's inputs (masks, rotary tables) are computed again in each stage that reads them, which costs less than sending their outputs", n))
	}
	return plan.Assignment, labelDevice, nil
}

// reproducibleMIPBounds adds partition's MIP bounds to plan (the exact MIP; with BoundsFull
// first the bottleneck MIPs, as Solve orders them) and keeps each one only if it finished:
// a finished MIP's bound and plan are functions of its input, one the deadline stopped are
// not. A finished exact MIP may also bring a better plan.
func reproducibleMIPBounds(ctx context.Context, p *partition.Problem, plan *partition.Plan, effort partition.BoundEffort, gap float64) *partition.Plan {
	if p.NumNodes()*p.NumStages() > 400000 { // Solve's own limit (on contracted nodes)
		plan.Notes = append(plan.Notes, fmt.Sprintf("MIP bounds skipped: %d nodes × %d stages is too large", p.NumNodes(), p.NumStages()))
		return plan
	}
	methods := []string{partition.BoundExact}
	if effort == partition.BoundsFull && len(p.Devices) <= 1 {
		methods = []string{partition.BoundBottleneck, partition.BoundBottleneckGuess, partition.BoundExact}
	}
	for _, method := range methods {
		if partition.Gap(plan.LowerBound, plan.Objective) <= gap+1e-9 || ctx.Err() != nil {
			break
		}
		limit := time.Duration(0) // LowerBound's default (60 s), or what the deadline leaves
		if d, ok := ctx.Deadline(); ok {
			limit = time.Until(d)
			if limit <= 0 {
				break
			}
		}
		// Gap 0 would make LowerBound's exact MIP target twice the incumbent with no warm
		// start (its internal Gap of −1 leaks into the target): twice as slow on BERT as
		// Solve's. A 1e-9 target cuts off at the incumbent and proves it within 1e-9.
		info, better, err := partition.LowerBound(ctx, p, plan, method, partition.BoundOptions{TimeLimit: limit, Gap: math.Max(gap, 1e-9), Parallel: 1})
		switch {
		case err != nil:
			plan.Notes = append(plan.Notes, fmt.Sprintf("%s bound: %v", method, err))
			continue
		case info.Status == "fault":
			plan.Bounds = append(plan.Bounds, info)
			plan.Notes = append(plan.Notes, fmt.Sprintf("solver fault: the %s bound exceeds the plan's value; bound discarded", method))
			continue
		case info.Status == "error":
			plan.Bounds = append(plan.Bounds, info) // noted by the caller, as for Solve's own MIPs
			continue
		case info.Status != "optimal" && info.Status != "infeasible" && info.Status != "fixings-infeasible":
			plan.Notes = append(plan.Notes, fmt.Sprintf("%s bound: the MIP did not finish (%s); left out so that the output is reproducible", method, info.Status))
			continue
		}
		info.Seconds = 0 // not reproducible, and the manifest leaves timings out anyway
		plan.Bounds = append(plan.Bounds, info)
		if better != nil && better.Objective < plan.Objective {
			better.Bounds, better.Notes = plan.Bounds, plan.Notes
			better.LowerBound, better.BoundMethod = plan.LowerBound, plan.BoundMethod
			plan = better
		}
		if info.Value > plan.LowerBound {
			plan.LowerBound, plan.BoundMethod = math.Min(info.Value, plan.Objective), method
		}
	}
	plan.Gap = partition.Gap(plan.LowerBound, plan.Objective)
	return plan
}

func markBottleneck(st []StageSummary) {
	b := -1
	for i := range st {
		if st[i].Ops > 0 && (b < 0 || st[i].TotalS > st[b].TotalS) {
			b = i
		}
	}
	if b >= 0 {
		st[b].Bottleneck = true
	}
}

// --- latency: heterogeneous placement ---------------------------------------------------

func planLatency(ctx context.Context, r *Result, g *graph.Graph, times [][]float64, table *profile.CostTable,
	devs []int, opt Options) ([]int, []int, error) {
	p := placementProblem(r.Cluster, g, times, nil, table, devs, 1, 1)
	applyNodeMemory(p, r.Cluster, devs, opt)
	res, err := runPlacement(ctx, r, p, opt)
	if err != nil {
		return nil, nil, err
	}
	r.LatencyS = res.Makespan
	if res.Makespan > 0 {
		r.ThroughputPerS = 1 / res.Makespan
	}
	// Stages are the schedule's: a device's run of tasks that one runtime call executes
	// (schedule.Device.CallCost prices each), so the emitted stages are the priced ones.
	stage, labelDev := scheduleStages(g, res.Schedule, devs)
	for l, d := range labelDev { // labels are 0..len-1 in creation order
		r.Stages = append(r.Stages, StageSummary{Stage: l, Device: r.Cluster.Devices[d].Name})
	}
	for _, t := range res.Schedule.Tasks {
		s := &r.Stages[stage[t.Node]]
		s.Ops++
		s.ParamBytes += g.Nodes[t.Node].ParamBytes
		s.ComputeS += t.End - t.Start - t.Call
		s.CallS += t.Call
	}
	for _, tr := range res.Schedule.Transfers {
		r.Stages[stage[tr.To]].CommS += tr.End - tr.Start
	}
	for i := range r.Stages {
		r.Stages[i].TotalS = r.Stages[i].ComputeS + r.Stages[i].CommS + r.Stages[i].CallS
	}
	markBottleneck(r.Stages)
	for _, t := range res.Schedule.Tasks {
		dev, start := r.Cluster.Devices[devs[t.Device]].Name, t.Start
		if t.Call > 0 { // the stage's runtime call opens it, on its device
			r.Timeline = append(r.Timeline, emit.TimelineEvent{Device: dev, Kind: emit.EventCompute,
				Label: fmt.Sprintf("stage %d runtime call", stage[t.Node]), StartS: start, EndS: start + t.Call, Stage: stage[t.Node]})
			start += t.Call
		}
		r.Timeline = append(r.Timeline, emit.TimelineEvent{Device: dev, Kind: emit.EventCompute,
			Label: t.Name, StartS: start, EndS: t.End, Stage: stage[t.Node]})
	}
	for _, tr := range res.Schedule.Transfers {
		r.Timeline = append(r.Timeline, emit.TimelineEvent{Device: r.Cluster.Devices[devs[tr.Src]].Name,
			ToDevice: r.Cluster.Devices[devs[tr.Dst]].Name, Kind: emit.EventTransfer, Label: g.Nodes[tr.From].Label(),
			StartS: tr.Start, EndS: tr.End, Stage: stage[tr.From]})
	}
	return stage, labelDev, nil
}

// placementProblem is the schedule problem of placing g on devs: times[d][v] are the node
// times of one input (seconds), table the cluster's routes. With granules > 1 it is a
// batched problem of granules granules of per inputs each; a node's batch of c granules
// takes over + c·per·(t − over), over = overs[d][v], the fixed part of the kernel's time on
// the device (its class overhead, profile.CostModel.KernelOverhead: what does not grow with
// the batch), and its tensors and activations grow with per. Transfers congest (Moirai eq. (8)).
func placementProblem(c *profile.Cluster, g *graph.Graph, times, overs [][]float64, table *profile.CostTable, devs []int, granules, per int) *schedule.Problem {
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

// reproduciblePolish runs the window polish on a reproducible plan with a third of the time
// left and keeps its plan only when it ran to its end (its effort is capped by work, so the
// plan is then a function of the inputs); otherwise it says so in a note.
func reproduciblePolish(ctx context.Context, p *partition.Problem, plan *partition.Plan, po partition.Options, notes *[]string) *partition.Plan {
	if plan.Gap <= po.Gap+1e-9 {
		return plan
	}
	pctx, cancel := ctx, context.CancelFunc(func() {})
	if d, ok := ctx.Deadline(); ok {
		pctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(d)/3))
	}
	defer cancel()
	polished, done, err := partition.Polish(pctx, p, plan, po)
	switch {
	case err != nil:
		*notes = append(*notes, fmt.Sprintf("window polish failed (%v); the plan is the search's", err))
	case !done:
		*notes = append(*notes, "window polish: did not finish within its share of the time limit; left out so that the output is reproducible")
	default:
		return polished
	}
	return plan
}

// clockCutNote says that the safety net of a reproducible plan fired.
const clockCutNote = "the time limit cut the search short: this plan depends on the machine's speed and load; a larger --time-limit gives a reproducible plan"

// reproducibleIterations is the EA and SA budget of reproducible placements.
const reproducibleIterations = schedule.DefaultIterations

// solveLatency runs schedule.Solve; reproducible, on work budgets only. Auto then keeps the
// best of SA and EA (iteration budgets, both started from MET), the constructive heuristics
// and, on small graphs, the full MILP when it proves its plan optimal: MILP-SPLIT's sub-solves
// and polishing share the time limit by the clock, so Auto's own choice is not reproducible.
func solveLatency(ctx context.Context, p *schedule.Problem, so schedule.Options, reproducible bool) (*schedule.Result, error) {
	if !reproducible {
		return schedule.Solve(ctx, p, so)
	}
	cut := func(res *schedule.Result) { // the time limit stopped a search meant to run on its budget
		if ctx.Err() != nil && res != nil {
			res.Notes = append(res.Notes, clockCutNote)
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
			res.Notes = append(res.Notes, fmt.Sprintf("%s stopped before it proved its plan optimal: the plan depends on the machine's speed (--solver auto, ea or sa are reproducible)", so.Method))
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
			best.Notes = append(best.Notes, fmt.Sprintf("bound %s exceeds the plan's makespan: discarded as a fault", m))
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

// scheduleStages returns the stage label of every node of a latency schedule and the cluster
// device of every label: the schedule's stages (schedule.Task.Stage: a run of a device's
// tasks that one call executes, opened by a task that reads from another device or by the
// device's first task), numbered in the order they open. The stage graph is acyclic
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

// stagesFromPlacement turns a placement (dev[v], an index into devs, and the start time of
// every node) into stages: nodes are taken in order of start time; a node joins its device's current stage when every predecessor on another device
// lies in an earlier stage, and opens a new stage otherwise. Stage numbers grow with time and
// every edge goes from a stage to the same or a later one, so the stage graph is acyclic.
func stagesFromPlacement(g *graph.Graph, dev []int, start []float64, devs []int) (stage []int, labelDevice []int) {
	n := len(g.Nodes)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	topo := g.TopoOrder()
	pos := make([]int, n)
	for i, v := range topo {
		pos[v] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		x, y := start[order[a]], start[order[b]]
		if x != y {
			return x < y
		}
		return pos[order[a]] < pos[order[b]]
	})
	// Starts are consistent with the DAG only up to ties; fix ties by a topological pass.
	stage = make([]int, n)
	for i := range stage {
		stage[i] = -1
	}
	done := make([]bool, n)
	cur := map[int]int{}
	next := 0
	var place func(v int)
	place = func(v int) {
		if done[v] {
			return
		}
		for _, p := range g.Preds(v) {
			place(p)
		}
		d := dev[v]
		need := 0
		for _, p := range g.Preds(v) {
			req := stage[p]
			if dev[p] != d {
				req++
			}
			if req > need {
				need = req
			}
		}
		s, ok := cur[d]
		if !ok || s < need {
			s = next
			next++
			cur[d] = s
			labelDevice = append(labelDevice, devs[d])
		}
		stage[v] = s
		done[v] = true
	}
	for _, v := range order {
		place(v)
	}
	return stage, labelDevice
}
