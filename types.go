// The public types of Plan and Prepare. They are the root package's own (defined types, not
// aliases of internal/planner's): convert.go turns them into the planner's and back.

package onnxpart

import (
	"time"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/planner"
	"github.com/onnxpart/onnxpart/partition"
	"github.com/onnxpart/onnxpart/profile"
	"github.com/onnxpart/onnxpart/schedule"
)

// Objective is what a plan optimises (Options.Objective, Result.Objective).
type Objective string

// Objectives.
const (
	Throughput Objective = "throughput" // a pipeline (or a batched placement): the busiest stage
	Latency    Objective = "latency"    // a placement: the makespan of one input
)

// Cut says where a pipeline may cut (Options.CutAt).
type Cut string

// Where a pipeline may cut.
const (
	// CutAny lets a cut fall between any two nodes.
	CutAny Cut = "any"
	// CutBlocks cuts only between the model's repeated blocks (transformer layers, residual
	// blocks: graph/blocks), so stages hold whole layers and boundaries carry the hidden state.
	CutBlocks Cut = "blocks"
	// CutAuto, the default, cuts at block boundaries for models that carry state (decoders)
	// when that costs at most AutoBlockSlack of throughput against the best plan cutting
	// anywhere, and anywhere otherwise; a note says which and what it cost.
	CutAuto Cut = "auto"
)

// Solver names the search of a pipeline or the method of a placement (Options.Solver).
type Solver string

// Solvers. SolverAuto (or "") picks the objective's default; the others belong to one kind
// of plan, and a solver of the other kind is a usage error.
const (
	SolverAuto Solver = "auto"
	// Pipelines (package partition's searches).
	SolverBRKGA  Solver = "brkga"
	SolverRandom Solver = "random"
	SolverMLA    Solver = "mla"
	// Latency and batched placements (package schedule's methods).
	SolverMET    Solver = "met"
	SolverGreedy Solver = "greedy"
	SolverHEFT   Solver = "heft"
	SolverEA     Solver = "ea"
	SolverSA     Solver = "sa"
	SolverMILP   Solver = "milp"
	SolverSplit  Solver = "split"
)

// Bounds is how hard a plan's lower bound is worked for (Options.Bounds).
type Bounds string

// Bound efforts ("" is BoundsFast).
const (
	BoundsNone   Bounds = "none"   // none beyond the trivial
	BoundsSimple Bounds = "simple" // closed-form bounds
	BoundsFast   Bounds = "fast"   // and the MIP bounds that finish quickly
	BoundsFull   Bounds = "full"   // and every MIP bound
)

// Options control Plan.
type Options struct {
	// MaxStages caps the stages: a pipeline's (throughput), or a latency or batched
	// placement's runtime calls (a batched plan's every route then has at most MaxStages
	// stages; a usage error when the solver finds no plan within it).
	// 0: no cap (a pipeline then has one stage per device).
	MaxStages int
	// Objective is Throughput, Latency or "" (throughput for identical devices, latency for
	// mixed ones).
	Objective Objective
	// Fusion names the rule set to coarsen with ("" picks one for the devices: ort-cuda for
	// GPUs, ort-cpu otherwise; "none" disables); FusionRules a rule file instead.
	Fusion      string
	FusionRules string
	// Solver: SolverAuto, or a throughput search (brkga, random, mla), or a placement method
	// (met, greedy, heft, ea, sa, milp, split).
	Solver Solver
	// Bounds: none, simple, fast, full.
	Bounds Bounds
	// TimeLimit bounds the search (and, with Reproducible, is only a safety net).
	TimeLimit time.Duration
	// Gap stops the search once the plan is proved within this fraction of optimal.
	Gap float64
	// Seed seeds the searches.
	Seed int64
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
	// GPUIDs are the CUDA ordinals of the cluster's GPUs, in the cluster's order; nil: the
	// NVML index of discovered GPUs (profile.Device.NVML), else each GPU's position among the
	// GPUs.
	GPUIDs []int
	// MemoryGraph is the model's graph sized at the dims the stages' memory is checked at
	// (e.g. the longest KV cache), loaded from the same model so that its nodes and tensors
	// are the model's; nil: the graph planned.
	MemoryGraph *graph.Graph
	// Workload, when set, plans one pipeline for a mix of phases (an LLM's prefill and decode
	// steps), each the model at its own dims: every stage's busy time per request is the sum
	// of its phases' times weighted by their calls, and the plan minimises the busiest
	// stage's (a throughput pipeline; latency and batched plans refuse it).
	Workload []Phase
	// State names state pairs (input → output) that graph.StatePairs's pattern misses; the
	// state stays on the device of the stage that writes it.
	State map[string]string
	// CutAt restricts a pipeline's cuts: CutAny, CutBlocks or CutAuto ("" is CutAuto).
	CutAt Cut
	// StagesPerDevice caps the stages (runtime calls) on each device of a latency or batched
	// placement (schedule.Options.MaxStagesPerDevice): 0 is the default, which caps plans on
	// mixed devices at DefaultStagesPerDevice unless MaxStages is set; NoStageCap lifts the
	// cap. The notes state the cap and, where the uncapped plan would be more than MinCapNote
	// faster, by how much.
	StagesPerDevice int
	// Names are the caller's names of the options, by field ("MaxStages": "-k", "GPUIDs":
	// "--gpu-ids"): errors and notes say "-k 8" where they would say "Options.MaxStages = 8".
	// The command passes its flags.
	Names diag.Names
}

// Progress is one progress report (Options.Progress).
type Progress struct {
	// Phase names the planner's phase that starts (the figures are then zero) or the
	// solver's step that reports.
	Phase      string
	Objective  float64 // the best plan's objective so far
	LowerBound float64 // the best lower bound so far
	Gap        float64 // 1 − LowerBound/Objective
	Elapsed    time.Duration
}

// Result is a plan ready to emit.
//
// Its exported fields are the plan as the caller sees it, and the source of truth: Prepare
// lays out what they say at the time it is called, so a caller may add notes, set Seconds or
// edit stages between Plan and Prepare. What Prepare needs beyond them (the graph the memory
// is sized at, the nodes recomputed, a batched route's stage per planned node) stays in the
// planner's own copy, which only Plan makes: a Result built by hand has none of it.
type Result struct {
	Objective Objective // Throughput or Latency
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
	// Layout is what Prepare laid out last.
	Layout *emit.Layout
	Notes  []diag.Note
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
	// Phases are the phases Plan ran, in order, with their wall time; the solver's own are in
	// Partition.Phases.
	Phases []partition.PhaseTime
	// CUDAOrdinal maps a cluster GPU's index to its CUDA ordinal (Options.GPUIDs).
	CUDAOrdinal map[int]int
	// Reproducible is Options.Reproducible: the seed describes the plan, and the manifest
	// records it only then. Interrupted says the context ended planning early: the plan is
	// the best found so far, and the manifest says so.
	Reproducible, Interrupted bool
	// Memory is the whole memory of each stage label of Assignment.
	Memory []StageMemory

	plan *planner.Result // the planner's copy: its unexported state (nil when built by hand)
}

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

// StageMemory is the whole memory one stage holds on its device while it runs, part by part.
type StageMemory struct {
	// Weights: the initializers and Constant-node tensors the stage's nodes read, each once,
	// and the weights inside its control-flow subgraphs.
	Weights int64
	// Activations: the peak of the tensors produced and consumed inside the stage that are
	// live at once when its nodes run in the emitted (topological) order.
	Activations int64
	// Buffers: the stage's input and output tensors that other stages produce or read.
	Buffers int64
	// State: the graph inputs the stage reads and the graph outputs it produces (a decoder's
	// past_key_values.* and present.* KV cache among them), sized at the memory graph's dims.
	// Messages call it "inputs/outputs": it is not only the state a decoder carries.
	State int64
	// Reserve: the device's workspace reserve (profile.Device.Reserve).
	Reserve int64
}

// Total is the sum of the parts.
func (m StageMemory) Total() int64 { return planner.StageMemory(m).Total() }

// Parts writes the sum part by part: "weights X + activations Y + buffers Z +
// inputs/outputs S + reserve R = T".
func (m StageMemory) Parts() string { return planner.StageMemory(m).Parts() }

// BatchPlan is how a batched-throughput plan (Options.Batch > 1) shares the batch.
type BatchPlan struct {
	Inputs, Granules, GranuleInputs int
	// Routes are the distinct chains of stages the granules follow; route 0 (the one with the
	// most granules) is Result.Assignment and Result.Stages.
	Routes []RoutePlan
	// Devices are the batch shares per device (emit.Manifest.Batch.Devices).
	Devices []emit.BatchDevice
}

// RoutePlan is one route of a batched plan.
type RoutePlan struct {
	Granules []int
	Inputs   int
	// Assignment splits the original graph for this route; Stages are its predictions.
	Assignment *emit.Assignment
	Stages     []StageSummary
}

// Phase is one kind of call in a workload (Options.Workload).
type Phase struct {
	Name   string
	Dims   map[string]int64
	Weight float64
	// Graph is the model loaded at the phase's dims (ingest.Load with Dims): the same nodes
	// and tensors as the graph planned, sized for this phase.
	Graph *graph.Graph
}

// PhaseFigures is a plan's prediction for one phase of the workload.
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
