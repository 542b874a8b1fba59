package planner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/profile"
)

// The builders the benchmark programs use are the ones Plan uses: the placement problem an
// unfused latency plan solved is PlacementProblem's, field for field, and PipelineProblem
// gives a pipeline of identical devices every activation tensor and the devices' capacity.
func TestBenchmarkBuildersArePlans(t *testing.T) {
	m, err := ingest.Load(filepath.Join("..", "..", "testdata", "models", "resnet50_small.onnx"), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := hw.Resolve(context.Background(), "a100-80g,t4,cpu", hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Plan(context.Background(), m, c, Options{Objective: Latency, Fusion: "none", Solver: SolverHEFT, TimeLimit: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	pr := Price(m.Graph, profile.NewCostModel(c, profile.CostOptions{}))
	if p := PlacementProblem(m.Graph, c, pr, []int{0, 1, 2}, 1, 1); !reflect.DeepEqual(p, r.placement) {
		t.Errorf("PlacementProblem differs from the problem Plan solved")
	}

	c4, err := hw.Resolve(context.Background(), "4xA100-80G", hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pr = Price(m.Graph, profile.NewCostModel(c4, profile.CostOptions{}))
	p, err := PipelineProblem(m.Graph, c4, pr, []int{0, 1, 2, 3}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if p.K != 4 || p.MemoryCap != usableCap(&c4.Devices[0]) || len(p.Work) != len(m.Graph.Nodes) || p.Work[0] != pr.Times[0][0] {
		t.Errorf("K %d, memory cap %g, %d work values: want 4 stages, the A100's capacity less its reserve, one per node", p.K, p.MemoryCap, len(p.Work))
	}
}

// TestDumpPlacement writes the placement problem a latency plan of a model solves, as JSON,
// for schedule's measurements on real models (schedule's TestCappedDPOnProblem):
//
//	ONNXPART_DUMP_MODEL=m.onnx ONNXPART_DUMP_DEVICES=a100-80g,t4,cpu ONNXPART_DUMP_OUT=p.json \
//	    go test -run TestDumpPlacement ./internal/planner/
//
// It plans with HEFT (the problem is the same whatever the method). Skipped without the
// variables.
func TestDumpPlacement(t *testing.T) {
	model, devs, out := os.Getenv("ONNXPART_DUMP_MODEL"), os.Getenv("ONNXPART_DUMP_DEVICES"), os.Getenv("ONNXPART_DUMP_OUT")
	if model == "" || devs == "" || out == "" {
		t.Skip("ONNXPART_DUMP_MODEL, ONNXPART_DUMP_DEVICES and ONNXPART_DUMP_OUT not set")
	}
	m, err := ingest.Load(model, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := hw.Resolve(context.Background(), devs, hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Plan(context.Background(), m, c, Options{Objective: Latency, Solver: SolverHEFT, TimeLimit: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r.placement)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s on %s: %d nodes, %d edges -> %s", model, devs, len(r.placement.Nodes), len(r.placement.Edges), out)
}
