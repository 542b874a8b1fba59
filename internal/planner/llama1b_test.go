package planner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/emit/schema"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/llamagen"
)

// The opt-in tier of issue 32 (make test-llm-large, ONNXPART_LLAMA_1B=1): TinyLlama-1.1B's
// shape with 2.05 GiB of fp16 external data is planned for a prefill + decode workload on
// four A100s with cuts between layers and written out: stages hold whole layers and their
// KV cache, only hidden
// states cross, every weight lands in exactly one stage's data file, and the manifest
// validates.
func TestLlama1BWorkload(t *testing.T) {
	if os.Getenv("ONNXPART_LLAMA_1B") == "" {
		t.Skip("set ONNXPART_LLAMA_1B=1 (make test-llm-large): writes 2.05 GiB")
	}
	dir := t.TempDir()
	cfg := llamagen.TinyLlama1B
	path, err := llamagen.Write(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var phases []Phase
	for _, s := range []string{"prefill:seq=512,past=0@1", "decode:seq=1,past=1024@128"} {
		p, err := ParsePhase(s)
		if err != nil {
			t.Fatal(err)
		}
		p.Dims["batch"] = 1
		m, err := ingest.Load(path, ingest.Options{Dims: p.Dims})
		if err != nil {
			t.Fatal(err)
		}
		p.Graph = m.Graph
		phases = append(phases, p)
	}
	m, err := ingest.Load(path, ingest.Options{Dims: phases[0].Dims})
	if err != nil {
		t.Fatal(err)
	}
	c, err := hw.Resolve(context.Background(), "4xA100-80G", hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Plan(context.Background(), m, c, Options{Seed: 1, Reproducible: true, TimeLimit: 2 * time.Minute, Workload: phases, MemoryGraph: phases[1].Graph, CutAt: CutBlocks})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(diag.NoteStrings(r.Notes), "\n"), "cuts only between the 22 blocks (--cut-at blocks)") {
		t.Errorf("notes %q: want cuts between the 22 layers", r.Notes)
	}
	if r.Lower <= 0 || r.Lower > r.Upper {
		t.Errorf("bound %g, objective %g", r.Lower, r.Upper)
	}
	l, err := Prepare(m, r, emit.Options{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if err := l.WriteDir(out); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.ValidateStrict("manifest.v1", doc); err != nil {
		t.Fatal(err)
	}
	man := l.Manifest
	var params, data int64
	pairs := 0
	for _, st := range man.Stages {
		params += st.ParamsBytes
		pairs += len(st.State)
		if st.DataFile == "" {
			t.Errorf("stage %d has no external data file", st.Index)
			continue
		}
		fi, err := os.Stat(filepath.Join(out, st.DataFile))
		if err != nil {
			t.Fatal(err)
		}
		data += fi.Size()
	}
	if pairs != 2*cfg.Layers {
		t.Errorf("%d state pairs kept, want %d", pairs, 2*cfg.Layers)
	}
	if w := cfg.WeightBytes(); params < w || params > w+w/100 || data < w {
		t.Errorf("stages hold %d B of weights in %d B of data files, the model %d B", params, data, w)
	}
	hidden := int64(512 * cfg.Hidden * 2)
	for _, tr := range man.Transfers {
		if tr.Bytes != hidden {
			t.Errorf("stage %d → %d sends %s (%d B), not a hidden state (%d B)", tr.From, tr.To, tr.Tensor, tr.Bytes, hidden)
		}
	}
	t.Logf("%d stages, %.3g ms per request (bound %.3g), prefill %.3g ms, decode %.3g ms per call at the bottleneck",
		len(man.Stages), r.Upper*1e3, r.Lower*1e3, r.Workload[0].BottleneckS*1e3, r.Workload[1].BottleneckS*1e3)
}
