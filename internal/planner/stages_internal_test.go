package planner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/schedule"
)

// No emitted stage of a mixed-device latency plan could merge into its neighbours and make
// the priced plan faster: moving any stage's nodes, as one, onto the device of a stage it
// exchanges a tensor with never lowers the simulated makespan (stage calls priced). The
// emitted stages are the priced ones: one call per stage label, on the label's device.
func TestNoStageMergePays(t *testing.T) {
	models := []string{
		filepath.Join("..", "..", "testdata", "models", "resnet50_small.onnx"),
		filepath.Join("..", "..", "..", "shared", "models", "googlenet_small.onnx"),
		filepath.Join("..", "..", "..", "shared", "models", "randwire_ws_small_small.onnx"),
		filepath.Join("..", "..", "..", "shared", "models", "mobilenet_v2_small.onnx"),
	}
	for _, path := range models {
		for _, devices := range []string{"a100-80g,t4,cpu", "a100-80g,t4"} {
			t.Run(filepath.Base(path)+"/"+devices, func(t *testing.T) {
				if _, err := os.Stat(path); err != nil {
					t.Skipf("model not here: %v", err)
				}
				m, err := ingest.Load(path, ingest.Options{})
				if err != nil {
					t.Fatal(err)
				}
				c, err := hw.Resolve(context.Background(), devices, hw.Options{})
				if err != nil {
					t.Fatal(err)
				}
				r, err := Plan(context.Background(), m, c, Options{Objective: Latency, Seed: 1, Reproducible: true, TimeLimit: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				checkNoMergePays(t, r)
			})
		}
	}
}

func checkNoMergePays(t *testing.T, r *Result) {
	t.Helper()
	p, res := r.placement, r.Schedule
	if p == nil || res == nil || res.Placement == nil {
		t.Fatal("no placement problem or plan")
	}
	sc, err := schedule.Simulate(p, res.Placement)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Makespan != res.Makespan || sc.Makespan != r.LatencyS {
		t.Fatalf("re-simulated makespan %g, result %g, plan %g", sc.Makespan, res.Makespan, r.LatencyS)
	}
	// The stage table: one stage per schedule stage, each with one call of its device.
	if len(r.Stages) != sc.StageCount() {
		t.Errorf("%d stages in the table, %d priced calls", len(r.Stages), sc.StageCount())
	}
	calls := 0.0
	for _, st := range r.Stages {
		calls += st.CallS
	}
	want := 0.0
	for _, tk := range sc.Tasks {
		want += tk.Call
	}
	if calls != want {
		t.Errorf("the stage table prices %g s of calls, the schedule %g s", calls, want)
	}
	stage := map[int]int{} // node → schedule stage
	for _, tk := range sc.Tasks {
		stage[tk.Node] = tk.Stage
	}
	dev := res.Placement.Device
	moves := 0
	for st := range sc.StageCount() {
		targets := map[int]bool{}
		var members []int
		for v := range dev {
			if stage[v] == st {
				members = append(members, v)
			}
		}
		for _, e := range p.Edges {
			a, b := e.From, e.To
			if dev[a] != dev[b] && (stage[a] == st || stage[b] == st) {
				if stage[a] == st {
					targets[dev[b]] = true
				} else {
					targets[dev[a]] = true
				}
			}
		}
		for w := range targets {
			q := res.Placement.Clone()
			q.EdgeOrder = nil
			for _, v := range members {
				q.Device[v] = w
			}
			msc, err := schedule.Simulate(p, q)
			if err != nil || !msc.Feasible {
				continue
			}
			moves++
			if msc.Makespan < sc.Makespan*(1-1e-9) {
				t.Errorf("stage %d (%d nodes on device %d) moved to device %d: makespan %g < %g", st, len(members), dev[members[0]], w, msc.Makespan, sc.Makespan)
			}
		}
	}
	t.Logf("%d stages, makespan %.1f µs, %d merges tried", sc.StageCount(), sc.Makespan*1e6, moves)
}

// TestStageCallTable prints docs/benchmarks.md's stage-call table (ONNXPART_STAGE_TABLE=1):
// for each model and device set, the plan the call-free model chooses (calls zeroed, the
// same solver and seed), priced with the calls, beside the plan chosen with them priced.
func TestStageCallTable(t *testing.T) {
	if os.Getenv("ONNXPART_STAGE_TABLE") == "" {
		t.Skip("set ONNXPART_STAGE_TABLE=1")
	}
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "models", "*.onnx"))
	paths = append(paths, filepath.Join("..", "..", "testdata", "models", "resnet50_small.onnx"))
	for _, devices := range []string{"a100-80g,t4,cpu", "a100-80g,t4"} {
		fmt.Printf("\n%s\n\n| model | call-free plan: stages | its latency, calls priced | priced plan: stages | latency |\n|---|---:|---:|---:|---:|\n", devices)
		for _, path := range paths {
			m, err := ingest.Load(path, ingest.Options{})
			if err != nil {
				continue
			}
			c, err := hw.Resolve(context.Background(), devices, hw.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := Plan(context.Background(), m, c, Options{Objective: Latency, Seed: 1, Reproducible: true, TimeLimit: time.Minute})
			if err != nil {
				fmt.Printf("| %s | %v |\n", filepath.Base(path), err)
				continue
			}
			free := *r.placement
			free.Devices = append([]schedule.Device(nil), free.Devices...)
			for u := range free.Devices {
				free.Devices[u].CallCost = 0
			}
			fr, err := solveLatency(context.Background(), &free, schedule.Options{Method: schedule.Auto, Seed: 1}, &Options{Reproducible: true})
			if err != nil {
				t.Fatal(err)
			}
			before, err := schedule.Simulate(r.placement, fr.Placement)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Printf("| %s | %d | %.1f µs | %d | %.1f µs |\n", filepath.Base(path), before.StageCount(), before.Makespan*1e6, len(r.Stages), r.LatencyS*1e6)
		}
	}
}
