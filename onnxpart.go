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
//
// This package is the public API only; the planner itself lives in internal/planner.
package onnxpart

import (
	"context"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/planner"
	"github.com/onnxpart/onnxpart/profile"
)

// Objective is what a plan optimises (Options.Objective, Result.Objective).
type Objective = planner.Objective

// Objectives.
const (
	Throughput = planner.Throughput // a pipeline (or a batched placement): the busiest stage
	Latency    = planner.Latency    // a placement: the makespan of one input
)

// Cut says where a pipeline may cut (Options.CutAt).
type Cut = planner.Cut

// Where a pipeline may cut.
const (
	// CutAny lets a cut fall between any two nodes.
	CutAny = planner.CutAny
	// CutBlocks cuts only between the model's repeated blocks (transformer layers, residual
	// blocks: graph/blocks), so stages hold whole layers and boundaries carry the hidden state.
	CutBlocks = planner.CutBlocks
	// CutAuto, the default, cuts at block boundaries for models that carry state (decoders)
	// when that costs at most AutoBlockSlack of throughput against the best plan cutting
	// anywhere, and anywhere otherwise; a note says which and what it cost.
	CutAuto = planner.CutAuto
)

// Solver names the search of a pipeline or the method of a placement (Options.Solver).
type Solver = planner.Solver

// Solvers. SolverAuto (or "") picks the objective's default; the others belong to one kind
// of plan, and a solver of the other kind is a usage error.
const (
	SolverAuto = planner.SolverAuto
	// Pipelines.
	SolverBRKGA  = planner.SolverBRKGA
	SolverRandom = planner.SolverRandom
	SolverMLA    = planner.SolverMLA
	// Latency and batched placements.
	SolverMET    = planner.SolverMET
	SolverGreedy = planner.SolverGreedy
	SolverHEFT   = planner.SolverHEFT
	SolverEA     = planner.SolverEA
	SolverSA     = planner.SolverSA
	SolverMILP   = planner.SolverMILP
	SolverSplit  = planner.SolverSplit
)

// Bounds is how hard a plan's lower bound is worked for (Options.Bounds).
type Bounds = planner.Bounds

// Bound efforts ("" is BoundsFast).
const (
	BoundsNone   = planner.BoundsNone
	BoundsSimple = planner.BoundsSimple
	BoundsFast   = planner.BoundsFast
	BoundsFull   = planner.BoundsFull
)

// AutoBlockSlack is the throughput CutAuto gives up for block-boundary cuts: the block plan
// is kept when its objective is within this fraction above the best plan cutting anywhere.
const AutoBlockSlack = planner.AutoBlockSlack

// MaxPlacementDevices bounds the devices of a latency placement: schedule's route set-up
// takes k⁵ steps and does not watch the time limit. Pipelines (package partition) take up
// to profile's 256.
const MaxPlacementDevices = planner.MaxPlacementDevices

// MaxGranules is the most granules a batch is cut into (Options.Batch).
const MaxGranules = planner.MaxGranules

// DefaultStagesPerDevice is the default cap on a mixed-device placement's stages per device
// (Options.StagesPerDevice); NoStageCap lifts it.
const (
	DefaultStagesPerDevice = planner.DefaultStagesPerDevice
	NoStageCap             = planner.NoStageCap
	MinCapNote             = planner.MinCapNote
)

// Options control Plan.
type Options = planner.Options

// Progress is one progress report (Options.Progress).
type Progress = planner.Progress

// Result is a plan ready to emit.
type Result = planner.Result

// StageSummary is one row of the plan table.
type StageSummary = planner.StageSummary

// StageMemory is the whole memory one stage holds on its device while it runs, part by part.
type StageMemory = planner.StageMemory

// BatchPlan is how a batched-throughput plan (Options.Batch > 1) shares the batch.
type BatchPlan = planner.BatchPlan

// RoutePlan is one route of a batched plan.
type RoutePlan = planner.RoutePlan

// Phase is one kind of call in a workload (Options.Workload).
type Phase = planner.Phase

// PhaseFigures is a plan's prediction for one phase of the workload.
type PhaseFigures = planner.PhaseFigures

// Plan plans model m on cluster c. It runs the planner's phases in order; Result.Phases has
// the wall time of each, and Options.Progress hears each one start.
func Plan(ctx context.Context, m *ingest.Model, c *profile.Cluster, opt Options) (*Result, error) {
	return planner.Plan(ctx, m, c, opt)
}

// Prepare lays out the stage files of a plan and fills the manifest's planner sections.
//
// A batched plan with several routes (Result.Batch) lays out route 0 here and every other
// route in its own subdirectory (RouteDir), written with the stage files by WriteDir; the
// manifest's batch section lists them.
func Prepare(m *ingest.Model, r *Result, opt emit.Options, seed int64) (*emit.Layout, error) {
	return planner.Prepare(m, r, opt, seed)
}

// RouteDir is the directory of route i > 0 beside route 0's stage files.
func RouteDir(i int) string { return planner.RouteDir(i) }

// ParsePhase reads a workload phase, NAME:DIM=SIZE,DIM=SIZE…@WEIGHT, e.g.
// "decode:seq=1,past=1024@128" (the weight defaults to 1).
func ParsePhase(s string) (Phase, error) { return planner.ParsePhase(s) }

// DeviceLabel names a cluster device for people: "gpu0 (A100-SXM4-80GB)", the product
// without its vendor prefix.
func DeviceLabel(c *profile.Cluster, name string) string { return planner.DeviceLabel(c, name) }
