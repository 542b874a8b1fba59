package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/emit/schema"
)

// TestInterrupt cancels the main command's context (what Ctrl-C does) during long solves, a
// pipeline and a placement with a 60 s time limit: the command must stop promptly, still
// write the best plan found so far and exit 130. A context cancelled before the command
// starts must also exit 130, with either a complete output directory or none.
func TestInterrupt(t *testing.T) {
	models, _ := filepath.Abs(filepath.Join("..", "..", "..", "shared", "models"))
	model := filepath.Join(models, "randwire_ws_small_small.onnx")
	if _, err := os.Stat(model); err != nil {
		t.Skip("the shared model corpus is not present")
	}
	for _, c := range []struct {
		name    string
		devices string
		after   time.Duration
	}{
		{"pipeline", "4xA100-80G", 1500 * time.Millisecond},
		{"placement", "a100-80g,t4,cpu", 1500 * time.Millisecond},
		{"before-start", "4xA100-80G", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.after == 0 {
				cancel()
			} else {
				time.AfterFunc(c.after, cancel)
			}
			dir := filepath.Join(t.TempDir(), "out")
			var stdout, stderr bytes.Buffer
			e := &env{stdout: &stdout, stderr: &stderr}
			t0 := time.Now()
			code := run(ctx, e, []string{model, "--devices", c.devices, "--time-limit", "60s", "-q", "-o", dir})
			el := time.Since(t0)
			t.Logf("exit %d after %v (cancelled at %v): %s", code, el.Round(time.Millisecond), c.after, strings.TrimSpace(stderr.String()))
			if code != exitInterrupted {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, exitInterrupted, stderr.String())
			}
			if el > c.after+15*time.Second {
				t.Errorf("stopped %v after the cancellation", el-c.after)
			}
			_, err := os.Stat(filepath.Join(dir, "manifest.json"))
			if c.after > 0 {
				if err != nil {
					t.Fatalf("no manifest written: %v; stdout:\n%s", err, stdout.String())
				}
				if !strings.Contains(stderr.String(), "wrote the best plan found so far") {
					t.Errorf("stderr does not say a plan was written:\n%s", stderr.String())
				}
				if _, err := os.Stat(filepath.Join(dir, "stage0.onnx")); err != nil {
					t.Error(err)
				}
				// The manifest says the plan is the best found before the interruption.
				man, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Contains(man, []byte(`"interrupted": true`)) {
					t.Error(`the manifest has no "interrupted": true`)
				}
				if err := schema.ValidateStrict("manifest.v1", man); err != nil {
					t.Error(err)
				}
			} else if err != nil {
				if _, derr := os.Stat(dir); derr == nil {
					t.Errorf("partial output: %s exists without a manifest", dir)
				}
			}
		})
	}
}
