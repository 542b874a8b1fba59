package onnxpart_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart"
	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/profile"
)

// fixedCalibration is a calibration of the host CPU as measure.CalibrateHost would fit it,
// with made-up figures: no timing in tests.
var fixedCalibration = profile.Calibration{
	RunOverhead: 40e-6,
	IO:          &profile.IOCost{Fixed: 40e-6, PerByte: 1 / 3e9, LayoutPerByte: 1 / 5e9, ChannelBlock: 16, ChannelAlign: 8},
	Models:      []string{"fixed"},
}

// calibratedCPUs resolves cpu:2x1 and applies the fixed calibration to both devices, and
// returns measured node times for g: each node's roofline time on the calibrated device,
// deterministic.
func calibratedCPUs(t *testing.T, g *ingestModel) (*profile.Cluster, [][]float64) {
	t.Helper()
	c, err := hw.Resolve(context.Background(), "cpu:2x1", hw.Options{Host: hw.HostOptions{NoBench: true}})
	if err != nil {
		t.Fatal(err)
	}
	cal := fixedCalibration
	for i := range c.Devices {
		cal.Apply(&c.Devices[i])
	}
	cm := profile.NewCostModel(c, profile.CostOptions{})
	meas := make([][]float64, len(c.Devices))
	for d := range c.Devices {
		meas[d] = make([]float64, len(g.Graph.Nodes))
		for v := range g.Graph.Nodes {
			meas[d][v] = cm.NodeTime(g.Graph, v, d)
		}
	}
	return c, meas
}

type ingestModel = ingest.Model

// With --costs measured on host CPUs (their call costs calibrated), the planner prices each
// stage as profile.CostModel.StageTime does: its nodes, the call's fixed cost, its boundary
// tensors through the binding and the layout conversions at its cuts. The stage times of the
// plan equal StageTime's for every stage.
func TestCalibratedStagesMatchStageTime(t *testing.T) {
	models, _ := filepath.Glob(filepath.Join("testdata", "models", "*.onnx"))
	// And, where the shared corpus is checked out, CNNs whose cuts the per-tensor costs price
	// exactly. Not MobileNetV2: a cut into an inverted-residual block leaves its residual Add
	// unfused in the later stage, which StageTime prices (the Add as an elementwise kernel, the
	// convolution's output converted for it) and a per-tensor cost cannot (0.25% of the stage
	// here). Not BERT: a fused group's measured time counts the shape arithmetic it absorbs once
	// per group that recomputes it, StageTime once (0 in a real ONNX Runtime profile, which
	// folds it; not in these made-up times).
	for _, name := range []string{"squeezenet1_1_small.onnx", "vgg16_small.onnx", "googlenet_small.onnx", "efficientnet_b0_small.onnx"} {
		p := filepath.Join("..", "shared", "models", name)
		if _, err := os.Stat(p); err == nil {
			models = append(models, p)
		}
	}
	for _, path := range models {
		t.Run(filepath.Base(path), func(t *testing.T) {
			m, err := ingest.Load(path, ingest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			c, meas := calibratedCPUs(t, m)
			r, err := onnxpart.Plan(context.Background(), m, c, onnxpart.Options{Measured: meas, Seed: 1, Reproducible: true,
				Bounds: "simple", TimeLimit: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			cm := profile.NewCostModel(c, profile.CostOptions{Measured: meas})
			if !slices.ContainsFunc(r.Notes, func(n diag.Note) bool { return strings.HasPrefix(n.Msg, "stages priced as one ONNX Runtime call each") }) {
				t.Errorf("no note of the stages' pricing: %q", r.Notes)
			}
			if len(r.Stages) < 2 {
				t.Fatalf("%d stages, want 2", len(r.Stages))
			}
			worst := 0.0
			for _, st := range r.Stages {
				worst = math.Max(worst, st.TotalS)
			}
			if r.Upper != worst || r.Lower > r.Upper {
				t.Errorf("objective %.9g s, bound %.9g s; the slowest stage %.9g s", r.Upper, r.Lower, worst)
			}
			for _, st := range r.Stages {
				var nodes []int
				for v, l := range r.Assignment.Stage {
					if l == st.Stage {
						nodes = append(nodes, v)
					}
				}
				d := c.Index(st.Device)
				want := cm.StageTime(m.Graph, nodes, d)
				t.Logf("stage %d on %s: %d nodes, plan %.6g s (compute %.4g, comm %.4g, call %.4g), StageTime %.6g s (%+.3f%%)",
					st.Stage, st.Device, len(nodes), st.TotalS, st.ComputeS, st.CommS, st.CallS, want, 100*(st.TotalS/want-1))
				if math.Abs(st.TotalS-want) > 1e-9*want {
					t.Errorf("stage %d: plan %.9g s, StageTime %.9g s", st.Stage, st.TotalS, want)
				}
			}
		})
	}
}
