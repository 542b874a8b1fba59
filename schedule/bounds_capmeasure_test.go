package schedule

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"
)

// TestCappedDPOnProblem runs the capped module DP (2 stages per device, one worker, no node
// or time limit) on a placement problem written by internal/planner's TestDumpPlacement and
// logs its bound, whether it ended, its nodes and its time (docs/benchmarks.md):
//
//	ONNXPART_CAPPED_PROBLEM=p.json go test -run TestCappedDPOnProblem -v -timeout 0 ./schedule/
//
// With ONNXPART_CAPPED_CHAINS=1 on the problem with its chains contracted (bounds_chains.go).
// Skipped without the variable.
func TestCappedDPOnProblem(t *testing.T) {
	f := os.Getenv("ONNXPART_CAPPED_PROBLEM")
	if f == "" {
		t.Skip("ONNXPART_CAPPED_PROBLEM not set")
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	var p Problem
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	in, err := prepare(&p)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("ONNXPART_CAPPED_CHAINS") == "1" {
		capChainsAlways = true
		defer func() { capChainsAlways = false }()
	}
	t0 := time.Now()
	r := in.cappedModuleDP(context.Background(), time.Time{}, 1<<62, 1, 2, 0, true)
	if r == nil || r.skipped != "" {
		t.Fatalf("the capped module DP did not run: %+v", r)
	}
	t.Logf("%d nodes on %d devices: bound %.6g, ended %v, %d branch-and-bound nodes, %.1f s", len(p.Nodes), len(p.Devices), r.bound, r.exact, r.nodes, time.Since(t0).Seconds())
}
