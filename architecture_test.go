package onnxpart_test

import (
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestArchitectureDoc keeps docs/architecture.md true: its package table lists exactly the
// packages `go list ./...` finds, each once.
func TestArchitectureDoc(t *testing.T) {
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	modOut, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		t.Skipf("go list -m: %v", err)
	}
	mod := strings.TrimSpace(string(modOut))
	listed := map[string]int{}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		listed[m[1]]++
	}
	var want []string
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, mod), "/")
		if rel == "" {
			rel = "onnxpart"
		}
		want = append(want, rel)
	}
	sort.Strings(want)
	for _, p := range want {
		switch listed[p] {
		case 0:
			t.Errorf("package %s is missing from docs/architecture.md's package table", p)
		case 1:
		default:
			t.Errorf("package %s is listed %d times in docs/architecture.md", p, listed[p])
		}
		delete(listed, p)
	}
	for p := range listed {
		t.Errorf("docs/architecture.md lists %s, which `go list ./...` does not find", p)
	}
}

// TestPlanningAPIImportsNoRuntime keeps ONNX Runtime and NVML out of the planning API: the
// root package and the planner take devices and costs as data, and measurement and
// discovery happen in packages the command calls.
func TestPlanningAPIImportsNoRuntime(t *testing.T) {
	for _, pkg := range []string{".", "./internal/planner"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Skipf("go list: %v", err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, banned := range []string{"/internal/ort", "onnxruntime_go", "go-nvml"} {
				if strings.Contains(dep, banned) {
					t.Errorf("%s imports %s", pkg, dep)
				}
			}
		}
	}
}
