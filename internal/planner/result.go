package planner

import (
	"math"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/partition"
	"github.com/onnxpart/onnxpart/profile"
	"github.com/onnxpart/onnxpart/schedule"
)

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

// Result is a plan ready to emit: onnxpart.Result's exported fields (the root package's
// convert.go; TestConversionsCoverEveryField keeps the two in step) and the state Prepare
// needs beyond them.
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
	Layout            *emit.Layout
	Notes             []diag.Note
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
	// Phases are the phases Plan ran (planPhases), in order, with their wall time; the
	// solver's own are in Partition.Phases.
	Phases []partition.PhaseTime
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
