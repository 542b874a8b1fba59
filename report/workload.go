package report

import (
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/internal/outdir"
)

// workloadView is the report's table of a workload's phases.
type workloadView struct {
	Caption string
	Stages  []int
	Rows    []workloadRow
}

type workloadRow struct {
	Name, Dims, Weight, Bottleneck, Rate, Latency string
	StageS                                        []string
}

func buildWorkload(m *emit.Manifest) *workloadView {
	if m.Predicted == nil || len(m.Predicted.Workload) == 0 {
		return nil
	}
	v := &workloadView{Caption: "One plan serves every phase with the same stage files. The plan minimises the busiest stage's time per request: each stage's phase times weighted by the phase's calls per request (as when many requests share the pipeline). Each row gives the phase's figures alone: its slowest stage per call, the calls per second that allows, and one call's latency through every stage."}
	for _, st := range m.Stages {
		v.Stages = append(v.Stages, st.Index)
	}
	for _, ph := range m.Predicted.Workload {
		r := workloadRow{Name: ph.Name, Dims: outdir.DimList(ph.Dims), Weight: trimFloat(ph.Weight, 6), Bottleneck: fmtSeconds(ph.BottleneckS),
			Rate: fmtRate(ph.ThroughputPerS), Latency: fmtSeconds(ph.LatencyS)}
		for _, t := range ph.StageS {
			r.StageS = append(r.StageS, fmtSeconds(t))
		}
		v.Rows = append(v.Rows, r)
	}
	return v
}
