package onnxpart_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart"
	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/verify"
)

// TestBatchedPlan plans a batch on identical and mixed devices and checks the plan's
// bookkeeping (every granule on exactly one route, the shares, the throughput), then writes
// it and runs every route's stages in ONNX Runtime against the model.
func TestBatchedPlan(t *testing.T) {
	m, err := ingest.Load(filepath.Join("testdata", "models", "resnet50_small.onnx"), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		devices    string
		batch      int
		wantRoutes int // at least
	}{
		{"2xT4", 8, 2},             // two identical GPUs: data parallel
		{"a100-80g,t4,cpu", 12, 1}, // 12 = 6 granules of 2
	} {
		t.Run(tc.devices, func(t *testing.T) {
			c, err := hw.Resolve(context.Background(), tc.devices, hw.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := onnxpart.Plan(context.Background(), m, c, onnxpart.Options{Batch: tc.batch, Seed: 3, Reproducible: true, TimeLimit: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			b := r.Batch
			if b == nil || r.Objective != onnxpart.Throughput {
				t.Fatalf("not a batched throughput plan: %+v", r.Objective)
			}
			if b.Granules*b.GranuleInputs != tc.batch || b.Granules > onnxpart.MaxGranules {
				t.Fatalf("%d granules of %d for a batch of %d", b.Granules, b.GranuleInputs, tc.batch)
			}
			if len(b.Routes) < tc.wantRoutes {
				t.Fatalf("%d routes, want at least %d", len(b.Routes), tc.wantRoutes)
			}
			var all []int
			inputs := 0
			for i, rt := range b.Routes {
				all = append(all, rt.Granules...)
				inputs += rt.Inputs
				if rt.Inputs != len(rt.Granules)*b.GranuleInputs {
					t.Errorf("route %d: %d inputs for %d granules", i, rt.Inputs, len(rt.Granules))
				}
				if len(rt.Assignment.Stage) != len(m.Graph.Nodes) {
					t.Errorf("route %d: assignment of %d nodes, model has %d", i, len(rt.Assignment.Stage), len(m.Graph.Nodes))
				}
				if i > 0 && len(rt.Granules) > len(b.Routes[0].Granules) {
					t.Errorf("route 0 should have the most granules")
				}
			}
			sort.Ints(all)
			for i, g := range all {
				if g != i {
					t.Fatalf("granules of the routes %v: want each of 0..%d once", all, b.Granules-1)
				}
			}
			if inputs != tc.batch {
				t.Errorf("routes carry %d inputs, want %d", inputs, tc.batch)
			}
			for _, d := range b.Devices {
				if d.Inputs < 1 || d.Inputs > tc.batch || d.Ops < 1 || d.BusyS <= 0 || d.BusyS > r.Upper*(1+1e-9) {
					t.Errorf("share %+v (makespan %g)", d, r.Upper)
				}
			}
			if got := float64(tc.batch) / r.Upper; math.Abs(got-r.ThroughputPerS) > 1e-6*got {
				t.Errorf("throughput %g, want batch/makespan = %g", r.ThroughputPerS, got)
			}
			if r.Lower <= 0 || r.Lower > r.Upper*(1+1e-9) {
				t.Errorf("bound %g for makespan %g", r.Lower, r.Upper)
			}
			if err := ort.Init(); err != nil {
				t.Logf("ONNX Runtime not available (%v): the stages are not run", err)
				return
			}
			out := filepath.Join(t.TempDir(), "out")
			l, err := onnxpart.Prepare(m, r, emit.Options{}, 3)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.WriteDir(out); err != nil {
				t.Fatal(err)
			}
			man, err := emit.ReadManifest(out)
			if err != nil {
				t.Fatal(err)
			}
			if man.Batch == nil || len(man.Batch.Routes) != len(b.Routes) {
				t.Fatalf("manifest batch section %+v", man.Batch)
			}
			if len(b.Routes) > 1 {
				r1, err := emit.ReadManifest(filepath.Join(out, onnxpart.RouteDir(1)))
				if err != nil {
					t.Fatal(err)
				}
				n0, n1 := strings.Join(diag.NoteStrings(man.Notes), "\n"), strings.Join(diag.NoteStrings(r1.Notes), "\n")
				if !strings.Contains(n0, "the batch follows") || strings.Contains(n1, "the batch follows") || !strings.Contains(n1, "route 1 of a batched plan") {
					t.Errorf("route notes: route 0 %q, route 1 %q", n0, n1)
				}
			}
			rep, err := verify.Run(context.Background(), out, verify.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Pass || len(rep.Routes) != len(b.Routes)-1 {
				t.Fatalf("verify: pass %v, %d route reports for %d routes", rep.Pass, len(rep.Routes), len(b.Routes))
			}
			if len(b.Routes) < 2 {
				return
			}
			// A manifest whose route leaves the directory is refused before anything runs.
			raw, err := os.ReadFile(filepath.Join(out, "manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			bad := strings.Replace(string(raw), `"dir": "route1"`, `"dir": "../route1"`, 1)
			if err := os.WriteFile(filepath.Join(out, "manifest.json"), []byte(bad), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := verify.Run(context.Background(), out, verify.Options{}); err == nil || !strings.Contains(err.Error(), "not a plain subdirectory") {
				t.Fatalf("route outside the directory: got %v", err)
			}
		})
	}
}

// TestBatchUsage checks the options a batch cannot be combined with.
func TestBatchUsage(t *testing.T) {
	m, err := ingest.Load(filepath.Join("testdata", "models", "resnet50_small.onnx"), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := hw.Resolve(context.Background(), "2xT4", hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []onnxpart.Options{{Batch: -1}, {Batch: 4, Objective: onnxpart.Latency}, {Batch: 4, Solver: "brkga"}} {
		o.Reproducible = true
		_, err := onnxpart.Plan(context.Background(), m, c, o)
		if diag.KindOf(err) != diag.KindUsage {
			t.Errorf("%+v: got %v, want a usage error", o, err)
		}
	}
}

// TestBatchStageCap: -k caps a batched plan's stages (runtime calls): -k 2 --batch 8 on four
// devices gives every route at most 2 stages, or a usage error that names -k and says why.
func TestBatchStageCap(t *testing.T) {
	m, err := ingest.Load(filepath.Join("testdata", "models", "resnet50_small.onnx"), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := hw.Resolve(context.Background(), "a100-80g,t4,t4,cpu", hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Devices) != 4 {
		t.Fatalf("%d devices, want 4", len(c.Devices))
	}
	for _, k := range []int{0, 1, 2} {
		r, err := onnxpart.Plan(context.Background(), m, c, onnxpart.Options{MaxStages: k, Batch: 8, Seed: 1, Reproducible: true, TimeLimit: time.Minute})
		if diag.KindOf(err) == diag.KindUsage {
			if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("Options.MaxStages = %d", k)) || !strings.Contains(msg, "stages") {
				t.Fatalf("-k %d: usage error %q does not say why", k, msg)
			}
			t.Logf("-k %d: %v", k, err)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.Batch == nil || len(r.Batch.Routes) == 0 {
			t.Fatalf("-k %d: not a batched plan", k)
		}
		if k == 0 {
			t.Logf("no cap: %d routes, %d stages in all, route 0 has %d, %.4g s for the batch", len(r.Batch.Routes), r.Schedule.Schedule.StageCount(), len(r.Stages), r.Upper)
			continue
		}
		if n := r.Schedule.Schedule.StageCount(); n > k {
			t.Errorf("-k %d: the schedule has %d stages", k, n)
		}
		for i, rt := range r.Batch.Routes {
			if len(rt.Stages) > k {
				t.Errorf("-k %d: route %d has %d stages", k, i, len(rt.Stages))
			}
		}
		t.Logf("-k %d: %d routes, route 0 has %d stages, %.4g s for the batch", k, len(r.Batch.Routes), len(r.Stages), r.Upper)
	}
}
