package main

import (
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
)

// planJSON is the --json form of every plan, from the main command and from `plan` (schema
// onnxpart.plan/v1, emit/schema/plan.v1.json). Costs are in seconds for ONNX models and in
// the instance's own units for dnn-partitioning and Moirai instances.
type planJSON struct {
	Format      string `json:"format"`
	Input       string `json:"input"`
	InputFormat string `json:"input_format"` // onnx, dnn-partitioning, moirai
	// Objective is the plan's value, an upper bound on the optimum: the bottleneck stage's
	// cost (throughput), the makespan of one input (latency) or of the batch (--batch).
	Objective       float64 `json:"objective"`
	ObjectiveKind   string  `json:"objective_kind"` // throughput or latency
	ObjectiveReason string  `json:"objective_reason,omitempty"`
	LowerBound      float64 `json:"lower_bound"`
	BoundMethod     string  `json:"bound_method"`
	Gap             float64 `json:"gap"`
	// AtMostSlower is objective/lower_bound − 1: the plan is at most this much slower than
	// the best possible (absent without a bound).
	AtMostSlower   float64  `json:"at_most_slower,omitempty"`
	ThroughputPerS float64  `json:"throughput_per_s,omitempty"`
	LatencyS       float64  `json:"latency_s,omitempty"`
	Devices        []string `json:"devices"`
	// Fusion and PlanNodes describe the coarse graph an ONNX model was planned on.
	Fusion    string `json:"fusion,omitempty"`
	PlanNodes int    `json:"plan_nodes,omitempty"`
	// Stages are the node ids of each stage in pipeline order (ONNX: node indices in the
	// model; dnn-partitioning: the file's ids; Moirai: task ids, one stage per device).
	Stages           [][]int         `json:"stages"`
	StageNodeNames   [][]string      `json:"stage_node_names,omitempty"`
	StageDeviceNames []string        `json:"stage_device_names"`
	StageCosts       []stageCostJSON `json:"stage_costs"`
	Bounds           []boundJSON     `json:"bounds"`
	Algorithm        string          `json:"algorithm"`
	// Seed is the seed given with --seed; nil (left out) for a run without one, which the
	// clock decided.
	Seed    *int64  `json:"seed,omitempty"`
	Seconds float64 `json:"seconds"`
	// Output is the directory written ("-": nothing); absent for instances.
	Output      string   `json:"output,omitempty"`
	Interrupted bool     `json:"interrupted,omitempty"`
	Notes       []string `json:"notes"`
	// notes are Notes with their kinds, for the text output (nil: Notes as information).
	notes []diag.Note
	// Batch is a batched plan's sharing of the batch (the manifest's batch section); stages
	// are then route 0's.
	Batch *emit.Batch `json:"batch,omitempty"`
	// Workload is each phase's figures alone for a plan made for --workload (the manifest's
	// predicted.workload); objective, throughput and latency are then per request.
	Workload []emit.PhasePrediction `json:"workload,omitempty"`
}

// stageCostJSON is one stage's predicted cost: work (compute), communication, parameter
// overflow streaming and their total.
type stageCostJSON struct {
	Work     float64 `json:"work"`
	Comm     float64 `json:"comm"`
	Overflow float64 `json:"overflow"`
	// Call is the stage's fixed cost per runtime call, included in Total.
	Call        float64 `json:"call,omitempty"`
	Total       float64 `json:"total"`
	ParamsBytes int64   `json:"params_bytes"`
	Nodes       int     `json:"node_count"`
	// Bottleneck marks a pipeline's slowest stage (throughput plans only); CriticalPath the
	// stages on the critical path of a latency or batched plan's schedule.
	Bottleneck   bool `json:"bottleneck"`
	CriticalPath bool `json:"critical_path,omitempty"`
	// Memory is the stage's whole memory on its device, as in the manifest (model plans).
	Memory *emit.StageMemory `json:"whole_memory,omitempty"`
}

type boundJSON struct {
	Method     string  `json:"method"`
	LowerBound float64 `json:"lower_bound"`
}
