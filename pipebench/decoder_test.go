package pipebench_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/llamagen"
	"github.com/onnxpart/onnxpart/pipebench"
)

// A decoder split at a decode step (seq=8, past=16, so the manifest records total=24) is
// benched at other sizes from --dim alone: a prefill (past=0, empty past tensors) and a
// decode step (seq=1, past=16). The recorded total is a default the model's tie
// total = past + seq overrides, and the derived size is noted; the same holds when the
// original model is gone and the ties come from the stage files.
func TestBenchDecoderDims(t *testing.T) {
	needORT(t)
	src := t.TempDir()
	path, err := llamagen.Write(src, llamagen.Tiny)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ingest.Load(path, ingest.Options{Dims: map[string]int64{"batch": 1, "seq": 8, "past": 16}})
	if err != nil {
		t.Fatal(err)
	}
	stage, err := emit.EqualFLOPs(m.Graph, 2)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	man, err := emit.Write(m, &emit.Assignment{Stage: stage}, dir, emit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if man.Model.Dims["total"] != 24 {
		t.Fatalf("manifest dims %v, want total=24 recorded", man.Model.Dims)
	}
	cases := []struct {
		dims map[string]int64
		note string
	}{
		{map[string]int64{"past": 0}, "derived: total = past + seq = 8 "},
		{map[string]int64{"seq": 1, "past": 16}, "derived: total = past + seq = 17 "},
	}
	run := func(where string) {
		for _, c := range cases {
			rep, err := pipebench.Run(context.Background(), dir, pipebench.Options{Requests: 2, Warmup: -1, InFlight: 1, Dims: c.dims})
			if err != nil {
				t.Fatalf("%s, --dim %v: %v", where, c.dims, err)
			}
			if rep.Requests != 2 {
				t.Errorf("%s, --dim %v: %d requests measured, want 2", where, c.dims, rep.Requests)
			}
			notes := strings.Join(rep.Notes, "\n")
			if strings.Count(notes, "derived:") != 1 || !strings.Contains(notes, c.note) {
				t.Errorf("%s, --dim %v: notes %q, want one saying %q", where, c.dims, notes, c.note)
			}
		}
	}
	run("with the original model")
	if err := os.Rename(path, path+".gone"); err != nil {
		t.Fatal(err)
	}
	run("from the stage files")
}
