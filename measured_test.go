package onnxpart_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart"
	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/measure"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/profile"
)

// measuredCorpus is testdata/models, and with ONNXPART_FULL_MEASURED=1 also the shared
// corpus (../shared/models; models with symbolic dimensions left out).
func measuredCorpus(t *testing.T) []string {
	t.Helper()
	out, _ := filepath.Glob(filepath.Join("testdata", "models", "*.onnx"))
	if os.Getenv("ONNXPART_FULL_MEASURED") != "" {
		more, _ := filepath.Glob(filepath.Join("..", "shared", "models", "*.onnx"))
		for _, p := range more {
			if !strings.Contains(p, "dynbatch") {
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// With --costs measured and the default fusion, a fused group costs what its members
// measured: the compute parts of a plan's stages add up to the measured node times exactly,
// and the stage times (with their transfers and fixed call costs) to the profile's measured
// node total within 5% (`onnxpart profile --costs measured` prints that total plus the fixed
// cost of one call as calibrated there, a noisy figure on a loaded machine; the log shows
// both). Before, the fused groups
// were priced by the roofline and the measurement was dropped.
func TestMeasuredCostsSurviveFusion(t *testing.T) {
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	for _, path := range measuredCorpus(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			m, err := ingest.Load(path, ingest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			c, err := hw.Resolve(ctx, "cpu:1", hw.Options{Host: hw.HostOptions{NoBench: true}})
			if err != nil {
				t.Fatal(err)
			}
			meas, err := measure.MeasureORT(ctx, path, m.Graph, measure.MeasureOptions{Threads: 1, Runs: 8, Warmup: 2})
			if err != nil {
				t.Fatal(err)
			}
			// The profile's total: the measured node times and the calibrated call overhead (on
			// a copy: the plan runs on the device as the main command has it).
			cal := c.Devices[0]
			dev := &cal
			profile.Calibrate(dev, []profile.Sample{{Graph: m.Graph, Measured: meas}}).Apply(dev)
			var nodes float64
			for _, v := range meas.Node {
				nodes += v
			}
			want := nodes + dev.RunOverhead.Value
			for _, fusion := range []string{"", "generic"} {
				r, err := onnxpart.Plan(ctx, m, c, onnxpart.Options{MaxStages: 2, Fusion: fusion, Measured: [][]float64{meas.NodeTimes()},
					Seed: 1, Reproducible: true, Bounds: "simple", TimeLimit: 30 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				if r.RuleSet == "none" || r.CoarseNodes >= len(m.Graph.Nodes) {
					t.Fatalf("fusion %q: planned on %d of %d nodes (%s rules): nothing was fused", fusion, r.CoarseNodes, len(m.Graph.Nodes), r.RuleSet)
				}
				var compute, total float64
				for _, s := range r.Stages {
					compute += s.ComputeS
					total += s.TotalS
				}
				if math.Abs(compute-nodes) > 1e-9*nodes+1e-12 {
					t.Errorf("fusion %s: stage compute adds up to %.6g s, the measured nodes to %.6g s", r.RuleSet, compute, nodes)
				}
				if math.Abs(total-nodes) > 0.05*nodes {
					t.Errorf("fusion %s: stage times add up to %.6g s, the profile's measured node total is %.6g s (%+.1f%%)", r.RuleSet, total, nodes, 100*(total/nodes-1))
				}
				t.Logf("%s, %s rules, %d groups: stages %.4g ms; profile: nodes %.4g ms (%+.2f%%), with the call's fixed %.3g ms %.4g ms (%+.2f%%)",
					filepath.Base(path), r.RuleSet, r.CoarseNodes, 1e3*total, 1e3*nodes, 100*(total/nodes-1), 1e3*dev.RunOverhead.Value, 1e3*want, 100*(total/want-1))
			}
		})
	}
}
