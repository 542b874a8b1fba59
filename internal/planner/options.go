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
// convert.go; TestConversionsCoverEveryField keeps the fields of the two in step). The
// fields are documented there, once.
type Options struct {
	MaxStages    int
	Objective    Objective
	Fusion       string
	FusionRules  string
	Solver       Solver
	Bounds       Bounds
	TimeLimit    time.Duration
	Gap          float64
	Seed         int64
	PolishWindow int
	Reproducible bool
	Batch        int
	Measured     [][]float64
	Progress     func(Progress)
	GPUIDs       []int
	MemoryGraph  *graph.Graph
	Workload     []Phase
	State        map[string]string

	CutAt           Cut
	StagesPerDevice int
	Names           diag.Names
}

// Progress is one progress report.
type Progress struct {
	Phase      string
	Objective  float64
	LowerBound float64
	Gap        float64
	Elapsed    time.Duration
}
