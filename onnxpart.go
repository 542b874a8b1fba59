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

// AutoBlockSlack is the throughput CutAuto gives up for block-boundary cuts: the block plan
// is kept when its objective is within this fraction above the best plan cutting anywhere.
const AutoBlockSlack = 0.05

// MaxPlacementDevices bounds the devices of a latency placement: schedule's route set-up
// takes k⁵ steps and does not watch the time limit. Pipelines (package partition) take up
// to profile's 256.
const MaxPlacementDevices = 32

// MaxGranules is the most granules a batch is cut into (Options.Batch).
const MaxGranules = 8

// DefaultStagesPerDevice is the default cap on a mixed-device placement's stages per device
// (Options.StagesPerDevice); NoStageCap lifts it. MinCapNote is the least gain (a fraction of
// the uncapped plan's time) of the uncapped plan that the notes report.
//
// These constants are the planner's (TestConstantsMatchPlanner), written out so that go doc
// shows their values.
const (
	DefaultStagesPerDevice = 2
	NoStageCap             = -1
	MinCapNote             = 0.03
)

// Plan plans model m on cluster c. It runs the planner's phases in order; Result.Phases has
// the wall time of each, and Options.Progress hears each one start.
func Plan(ctx context.Context, m *ingest.Model, c *profile.Cluster, opt Options) (*Result, error) {
	p, err := planner.Plan(ctx, m, c, plannerOptions(opt))
	if p == nil {
		return nil, err
	}
	return resultOf(p), err
}

// Prepare lays out the stage files of a plan and fills the manifest's planner sections.
//
// A batched plan with several routes (Result.Batch) lays out route 0 here and every other
// route in its own subdirectory (RouteDir), written with the stage files by WriteDir; the
// manifest's batch section lists them.
//
// Prepare reads r's exported fields as they are now (a caller may change them after Plan)
// and sets r.Layout. A Result that Plan did not make lacks the memory graph, so the manifest's
// stages then have no memory sections, and a batched one cannot be laid out.
func Prepare(m *ingest.Model, r *Result, opt emit.Options, seed int64) (*emit.Layout, error) {
	p := r.planned()
	l, err := planner.Prepare(m, p, opt, seed)
	r.Layout = p.Layout
	return l, err
}

// RouteDir is the directory of route i > 0 beside route 0's stage files.
func RouteDir(i int) string { return planner.RouteDir(i) }

// ParsePhase reads a workload phase, NAME:DIM=SIZE,DIM=SIZE…@WEIGHT, e.g.
// "decode:seq=1,past=1024@128" (the weight defaults to 1).
func ParsePhase(s string) (Phase, error) {
	p, err := planner.ParsePhase(s)
	return Phase(p), err
}

// DeviceLabel names a cluster device for people: "gpu0 (A100-SXM4-80GB)", the product
// without its vendor prefix.
func DeviceLabel(c *profile.Cluster, name string) string { return planner.DeviceLabel(c, name) }
