package planner

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/ingest"
)

// Options are checked completely in the first phase: a bad solver, bound effort, cut, fusion
// rule set or workload phase fails before coarsening or pricing starts, for pipelines and placements alike, and the error is
// a usage error about the option.
func TestOptionsCheckedFirst(t *testing.T) {
	m, err := ingest.Load(filepath.Join("..", "..", "testdata", "models", "resnet50_small.onnx"), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, devices := range []string{"2xA100-80G", "a100-80g,t4"} {
		c, err := hw.Resolve(context.Background(), devices, hw.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []Options{
			{Solver: "bogus"},
			{Solver: SolverHEFT, Objective: Throughput}, // a placement method for a pipeline
			{Solver: SolverBRKGA, Objective: Latency},   // a pipeline search for a placement
			{Solver: SolverBRKGA, Batch: 4},             // and for a batched placement
			{Bounds: "most"},
			{CutAt: "layers"},
			{Fusion: "nope"},
			{Fusion: "none", FusionRules: "rules.yaml"},
			{Workload: []Phase{{Name: "decode", Weight: 1}}}, // not sized at its dims
		} {
			var phases []string
			bad.Progress = func(p Progress) { phases = append(phases, p.Phase) }
			_, err := Plan(context.Background(), m, c, bad)
			if diag.KindOf(err) != diag.KindUsage {
				t.Errorf("%s %+v: %v, want a usage error", devices, bad, err)
				continue
			}
			if strings.Join(phases, ",") != "options" {
				t.Errorf("%s %+v: phases %v ran, want only options", devices, bad, phases)
			}
		}
	}
}

// The planner's errors and notes name an option as a Go caller writes it, and by the caller's
// name for it when Options.Names gives one (the command's flags): never a flag on its own.
func TestOptionNames(t *testing.T) {
	m, err := ingest.Load(filepath.Join("..", "..", "testdata", "models", "resnet50_small.onnx"), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := hw.Resolve(context.Background(), "2xA100-80G", hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opt      Options
		goWords  string
		cliWords string
	}{
		{Options{GPUIDs: []int{1, 2, 3}}, "Options.GPUIDs gives 3 ids for 2 GPUs", "--gpu-ids gives 3 ids for 2 GPUs"},
		{Options{MaxStages: -1}, "Options.MaxStages = -1: must be positive", "-k -1: must be positive"},
		{Options{Batch: 4, Objective: Latency}, "Options.Batch = 4 plans the throughput of a batch; Options.Objective = latency plans one input", "--batch 4 plans the throughput of a batch; --objective latency plans one input"},
		{Options{Solver: "x"}, `Options.Solver = "x" is not a throughput solver`, `--solver "x" is not a throughput solver`},
	} {
		_, err := Plan(context.Background(), m, c, tc.opt)
		var de *diag.Error
		if err == nil || !strings.Contains(err.Error(), tc.goWords) || strings.Contains(err.Error(), "--") {
			t.Errorf("%+v: %v, want %q and no flag", tc.opt, err, tc.goWords)
		} else if errors.As(err, &de) && de.Subject.Kind != diag.Option {
			t.Errorf("%+v: subject %v, want an option", tc.opt, de.Subject)
		}
		cli := tc.opt
		cli.Names = map[string]string{"GPUIDs": "--gpu-ids", "MaxStages": "-k", "Batch": "--batch", "Objective": "--objective", "Solver": "--solver"}
		if _, err := Plan(context.Background(), m, c, cli); err == nil || !strings.Contains(err.Error(), tc.cliWords) {
			t.Errorf("%+v with flag names: %v, want %q", tc.opt, err, tc.cliWords)
		}
	}
}
