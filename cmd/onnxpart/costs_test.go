package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A malformed cost file stops every command that takes --costs with exit 2 and one error
// naming the file and the line, before anything is measured, planned or written.
func TestCostFileMalformed(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join("..", "..", "testdata", "models", "resnet50_small.onnx")
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{
  "format": "onnxpart.costs/v1",
  "date": 2026,
  "producer": "dev",
  "onnxruntime": "1.30.0",
  "models": [],
  "devices": []
}
`), 0o644)
	out := filepath.Join(dir, "out")
	for _, args := range [][]string{
		{model, "--devices", "cpu", "--costs", bad, "-q", "-o", out},
		{model, "--devices", "cpu", "--costs", bad + "," + bad, "-q", "-o", out},
		{"profile", "--devices", "cpu", "--no-bench", "--costs", bad, model},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), &env{stdout: &stdout, stderr: &stderr}, args)
		if code != exitUsage {
			t.Errorf("%s: exit %d, want %d\n%s", strings.Join(args, " "), code, exitUsage, stderr.String())
		}
		if n := strings.Count(stderr.String(), "\n"); n != 1 || !strings.Contains(stderr.String(), bad+":3: not a cost file: at /date:") {
			t.Errorf("%s: stderr %q, want one line naming %s:3", strings.Join(args, " "), stderr.String(), bad)
		}
		if stdout.Len() > 0 {
			t.Errorf("stdout %q", stdout.String())
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s wrote %s", strings.Join(args, " "), out)
		}
	}
}
