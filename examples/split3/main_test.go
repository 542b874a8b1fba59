package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

var repoModel = filepath.Join("..", "..", "testdata", "models", "resnet50_small.onnx")

func goTool() string {
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return "go"
}

// TestPublicAPIOnly: the program imports no internal package, so it shows what a program
// outside this module can do.
func TestPublicAPIOnly(t *testing.T) {
	out, err := exec.Command(goTool(), "list", "-f", `{{join .Imports "\n"}}`, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, imp := range strings.Fields(string(out)) {
		if strings.Contains(imp, "/internal") || imp == "internal" {
			t.Errorf("split3 imports %s", imp)
		}
	}
}

// TestSplit3 builds the program and runs it on the repository's ResNet-50: three stages,
// verified bit for bit in ONNX Runtime, exit status 0; a missing model exits with 1.
func TestSplit3(t *testing.T) {
	if os.Getenv("ONNXPART_ORT_LIB") == "" {
		t.Skip("ONNX Runtime is not located: ONNXPART_ORT_LIB is not set (make sets it)")
	}
	bin := filepath.Join(t.TempDir(), "split3")
	if out, err := exec.Command(goTool(), "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "stages")
	cmd := exec.Command(bin, "-model", repoModel, "-o", dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("split3: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	got := stdout.String()
	for _, want := range []string{
		"resnet50_small.onnx: 122 nodes, 157121277 FLOPs, 3 stages\n",
		"  stage0.onnx   25 nodes    52107776 FLOPs  1 inputs  1 outputs\n",
		"  stage2.onnx   52 nodes    51632509 FLOPs  2 inputs  1 outputs\n",
		"  output output float32 [1 125]: bit-exact\n",
		"PASS: 2 runs, every output bit-exact\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, f := range []string{"manifest.json", "stage0.onnx", "stage1.onnx", "stage2.onnx"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}

	cmd = exec.Command(bin, "-model", filepath.Join(t.TempDir(), "missing.onnx"))
	stderr.Reset()
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "missing.onnx") {
		t.Errorf("missing model: %v, stderr %q; want exit status 1 naming the file", err, stderr.String())
	}
}
