package planner

import (
	"time"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
)

// MaxPlacementDevices bounds the devices of a latency placement: schedule's route set-up
// takes k⁵ steps and does not watch the time limit (a 10 s plan took 14 s with 64 devices,
// 47 s with 96, hours with 256). Pipelines (package partition) take up to profile's 256.
const MaxPlacementDevices = 32

// Options control Plan: onnxpart.Options as the planner takes it (the root package's
// convert.go; TestConversionsCoverEveryField keeps the fields of the two in step).
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
	// Solver: "auto", or a throughput search (brkga, random, mla), or a placement method
	// (met, greedy, heft, ea, sa, milp, split).
	Solver Solver
	// Bounds: none, simple, fast, full.
	Bounds    Bounds
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
	// mixed devices at DefaultStagesPerDevice unless MaxStages is set; NoStageCap lifts the cap. The
	// notes state the cap and, where the uncapped plan would be more than MinCapNote faster,
	// by how much.
	StagesPerDevice int
	// Names are the caller's names of the options, by field ("MaxStages": "-k", "GPUIDs":
	// "--gpu-ids"): errors and notes say "-k 8" where they would say "Options.MaxStages = 8". The
	// command passes its flags.
	Names diag.Names
}

// Progress is one progress report.
type Progress struct {
	Phase      string
	Objective  float64
	LowerBound float64
	Gap        float64
	Elapsed    time.Duration
}
