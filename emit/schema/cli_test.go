package schema_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIOutputs validates what the onnxpart binary prints and writes: inspect --json,
// profile --json for every device spec of testdata/devices and for catalog lists, the
// manifests of the main command (planned) and of split, and verify --json.
func TestCLIOutputs(t *testing.T) {
	model, err := filepath.Abs(repoModel)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()

	mustValidate(t, "inspect.v1", "inspect --json", runCLI(t, work, "inspect", model, "--json"))
	mustValidate(t, "inspect.v1", "inspect --json --tensors --fusion ort-cuda",
		runCLI(t, work, "inspect", model, "--json", "--tensors", "--fusion", "ort-cuda"))

	specs, _ := filepath.Glob(filepath.Join(devSpecs, "*"))
	if len(specs) == 0 {
		t.Fatal("no device specs in " + devSpecs)
	}
	var profiles [][]string
	for _, s := range specs {
		abs, _ := filepath.Abs(s)
		profiles = append(profiles, []string{"--devices", abs, model})
	}
	profiles = append(profiles,
		[]string{"--devices", "4xH100-SXM", "--link", "nvlink", model},
		[]string{"--devices", "h100-sxm,cpu", "--nodes", model},
		[]string{"--devices", "a100-80g,t4,cpu"},
		[]string{"--devices", "cpu", model})
	for _, args := range profiles {
		args = append([]string{"profile", "--json", "--no-bench"}, args...)
		doc := runCLI(t, work, args...)
		mustValidate(t, "profile.v1", strings.Join(args, " "), doc)
	}

	// Manifests the planner writes: a pipeline on identical devices and a placement on
	// mixed ones.
	for i, devices := range []string{"2xa100-80g", "a100-80g,t4"} {
		dir := fmt.Sprintf("planned%d", i)
		runCLI(t, work, model, "--devices", devices, "-o", dir, "-q", "--time-limit", "5s")
		man, err := os.ReadFile(filepath.Join(work, dir, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(man), `"lower_bound_s"`) {
			t.Errorf("--devices %s: the manifest has no bounds", devices)
		}
		mustValidate(t, "manifest.v1", "onnxpart MODEL --devices "+devices, man)
	}

	runCLI(t, work, "split", model, "-o", "out", "--stages", "3")
	man, err := os.ReadFile(filepath.Join(work, "out", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	mustValidate(t, "manifest.v1", "split --stages 3", man)
	needORT(t)
	mustValidate(t, "verify.v1", "verify --json", runCLI(t, work, "verify", "out", "--json", "--runs", "1"))
}

// TestProfileMutations changes a real profile --json output.
func TestProfileMutations(t *testing.T) {
	spec, _ := filepath.Abs(filepath.Join(devSpecs, "host-plus-t4.yaml"))
	model, _ := filepath.Abs(repoModel)
	doc := runCLI(t, t.TempDir(), "profile", "--json", "--no-bench", "--devices", spec, model)
	checkMutations(t, "profile.v1", doc, []mutation{
		{what: "missing device_list", change: deleteField(t, "device_list"), where: ""},
		{what: "a figure without its source", change: deleteField(t, "device_list/1/figures/memory/source"), where: "/device_list/1/figures/memory"},
		{what: "an unknown source", change: setField(t, "device_list/1/figures/memory/source", "guess"), where: "/device_list/1/figures/memory/source"},
		{what: "per-class seconds as a number", change: setField(t, "model/classes/0/seconds", 1.0), where: "/model/classes/0/seconds"},
		{what: "total_seconds renamed total_s", change: renameField(t, "model/total_seconds", "total_s"), where: "/model"},
		{what: "an undeclared device field", change: setField(t, "device_list/0/serial", "x"), strictOnly: true, where: "/device_list/0"},
	})
}
