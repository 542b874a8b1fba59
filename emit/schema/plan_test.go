package schema_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var benchDir = filepath.Join("..", "..", "..", "shared", "benchmarks")

// TestPlans validates plan.v1 on what the binary prints: the model form (the main command
// with -o -, for a pipeline on identical devices and a placement on mixed ones, and
// `plan MODEL.onnx`) and the instance form (dnn-partitioning and Moirai instances).
func TestPlans(t *testing.T) {
	model, _ := filepath.Abs(repoModel)
	work := t.TempDir()
	runs := [][]string{
		{model, "--devices", "2xa100-80g", "--json", "-o", "-", "-q", "--time-limit", "5s"},
		{model, "--devices", "a100-80g,t4", "--json", "-o", "-", "-q", "--time-limit", "5s"},
		{"plan", model, "--devices", "4xH100-SXM", "-k", "3", "--json", "-q", "--time-limit", "5s"},
	}
	dnn := filepath.Join(benchDir, "dnn-partitioning", "LayerGraphs", "resnet50_inference.json")
	moirai := filepath.Join(benchDir, "moirai", "example-1.csv")
	if _, err := os.Stat(dnn); err == nil {
		runs = append(runs, []string{"plan", abs(t, dnn), "-k", "4", "--json", "--time-limit", "10s"})
	}
	if _, err := os.Stat(moirai); err == nil {
		runs = append(runs, []string{"plan", abs(t, moirai), "--json", "--time-limit", "10s"})
	}
	for _, args := range runs {
		doc := runCLI(t, work, args...)
		mustValidate(t, "plan.v1", strings.Join(args, " "), doc)
	}
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Errorf("planning with -o - wrote %d files", len(entries))
	}
}

func TestPlanMutations(t *testing.T) {
	model, _ := filepath.Abs(repoModel)
	doc := runCLI(t, t.TempDir(), model, "--devices", "2xa100-80g", "-k", "2", "--json", "-o", "-", "-q", "--time-limit", "5s")
	checkMutations(t, "plan.v1", doc, []mutation{
		{what: "missing gap", change: deleteField(t, "gap"), where: ""},
		{what: "stages as a flat list", change: setField(t, "stages", []any{1, 2}), where: "/stages/0"},
		{what: "lower_bound renamed lower_bound_s", change: renameField(t, "lower_bound", "lower_bound_s"), where: ""},
		{what: "a stage cost without comm", change: deleteField(t, "stage_costs/0/comm"), where: "/stage_costs/0"},
		{what: "an unknown objective kind", change: setField(t, "objective_kind", "energy"), where: "/objective_kind"},
		{what: "the objective as a name", change: setField(t, "objective", "throughput"), where: "/objective"},
		{what: "an undeclared field", change: setField(t, "stage_costs/1/energy_j", 1), strictOnly: true, where: "/stage_costs/1"},
	})
}

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
