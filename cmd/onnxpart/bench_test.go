package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/pipebench/benchtest"
)

// A stage that fails at run time: `onnxpart bench` names it and exits 1, without hanging.
func TestBenchStageFailsCLI(t *testing.T) {
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb}
	model := filepath.Join("..", "..", "testdata", "models", "resnet50_small.onnx")
	if code := run(context.Background(), e, []string{model, "--devices", "2xcpu-generic", "--seed", "1", "--bounds", "simple", "-o", dir, "--quiet"}); code != 0 {
		t.Fatalf("plan: exit %d: %s", code, errb.String())
	}
	if err := benchtest.FailingStage(dir, 1); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), e, []string{"bench", dir, "--requests", "20", "--in-flight", "3", "--quiet"})
	}()
	select {
	case code := <-done:
		if code != exitBadInput {
			t.Errorf("exit %d, want %d", code, exitBadInput)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("onnxpart bench hangs on a failing stage")
	}
	want := "onnxpart bench: stage 1 (stage1.onnx on cpu1) failed at run time on request 0: "
	if !strings.HasPrefix(errb.String(), want) || strings.Count(errb.String(), "\n") != 1 {
		t.Errorf("stderr %q, want one line starting %q", errb.String(), want)
	}
	if out.Len() != 0 {
		t.Errorf("stdout %q, want nothing", out.String())
	}
}
