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
// needs beyond them. The exported fields are documented there, once.
type Result struct {
	Objective                 Objective // Throughput or Latency
	ObjectiveChosen           string
	Cluster                   *profile.Cluster
	Devices                   []int // cluster device indices the plan may use
	RuleSet                   string
	CoarseNodes               int
	Upper, Lower, Gap         float64
	BoundMethod               string
	Bounds                    []emit.BoundValue
	LatencyS                  float64
	ThroughputPerS            float64
	Algorithm                 string
	Seconds                   float64
	Stages                    []StageSummary
	Assignment                *emit.Assignment
	Layout                    *emit.Layout
	Notes                     []diag.Note
	Timeline                  []emit.TimelineEvent
	Partition                 *partition.Plan
	Schedule                  *schedule.Result
	Batch                     *BatchPlan
	Workload                  []PhaseFigures
	Phases                    []partition.PhaseTime
	CUDAOrdinal               map[int]int
	Reproducible, Interrupted bool
	Memory                    []StageMemory
	memGraph                  *graph.Graph // the graph Memory is sized at
	recompute                 []bool       // model nodes every reading stage computes (emit.Assignment.Recompute)
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
