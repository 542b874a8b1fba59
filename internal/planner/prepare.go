package planner

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
)

// Prepare lays out the stage files of a plan and fills the manifest's planner sections.
//
// A batched plan with several routes (Result.Batch) lays out route 0 here and every other
// route in its own subdirectory (RouteDir), written with the stage files by WriteDir; the
// manifest's batch section lists them.
func Prepare(m *ingest.Model, r *Result, opt emit.Options, seed int64) (*emit.Layout, error) {
	if r.Batch != nil {
		// The plan priced batched kernels: the stage files take the batch.
		opt.Batch = r.Batch.Inputs
		r.Batch.dim = emit.BatchDimName(m)
	}
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
		ro := emit.Options{Producer: opt.Producer, ModelPath: opt.ModelPath, ExternalData: opt.ExternalData, MaxInlineBytes: opt.MaxInlineBytes, Extras: opt.Extras, FreezeDims: opt.FreezeDims, Batch: opt.Batch, Names: opt.Names}
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
		b := *l.Manifest.Batch
		b.Route = i
		routes[i].Manifest.Batch = &b
	}
	return l, nil
}

// prepareOne lays out one assignment with the plan's sections; stages holds the
// predictions of its stage labels.
func prepareOne(m *ingest.Model, r *Result, a *emit.Assignment, stages []StageSummary, opt emit.Options, seed int64) (*emit.Layout, error) {
	l, err := emit.NewLayout(m, a, opt)
	if err != nil {
		return nil, err
	}
	man := l.Manifest
	man.Objective = emit.Objective(r.Objective)
	man.Predicted = &emit.Predicted{BottleneckS: r.bottleneck(), ThroughputPerS: r.ThroughputPerS, LatencyS: r.LatencyS,
		Workload: r.workloadPredictions(man.Stages)}
	man.Bounds = &emit.Bounds{LowerBoundS: r.Lower, Method: r.BoundMethod, Gap: r.Gap, AtMostSlower: emit.SlowerOfGap(r.Gap), Computed: r.Bounds}
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
