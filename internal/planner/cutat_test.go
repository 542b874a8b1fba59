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
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/llamagen"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/verify"
)

// llama4 writes a four-layer Tiny decoder and loads it at a prefill of 16 tokens.
func llama4(t *testing.T) (*ingest.Model, llamagen.Config) {
	t.Helper()
	c := llamagen.Tiny
	c.Layers = 4
	p, err := llamagen.Write(t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ingest.Load(p, ingest.Options{Dims: map[string]int64{"batch": 1, "seq": 16, "past": 0}})
	if err != nil {
		t.Fatal(err)
	}
	return m, c
}

// Cutting at block boundaries, a decoder's stages hold whole layers: the only tensors that
// cross are hidden states [batch, seq, hidden] (the mask and rotary tables are recomputed
// where they are read), every stage keeps its own layers' KV cache, the certificate is the
// unrestricted problem's (no higher than the best plan cutting anywhere), and the stage
// files run bit-exact in ONNX Runtime at prefill (an empty past).
func TestCutAtBlocksDecoder(t *testing.T) {
	m, c := llama4(t)
	// A slow link (10 Gbit/s, 200 µs): sending the mask costs more than computing it again.
	spec := filepath.Join(t.TempDir(), "devices.yaml")
	y := "devices:\n  - {name: a, type: t4}\n  - {name: b, type: t4}\nlinks:\n  unit: Gbps\n  latency: 200us\n  matrix:\n    - [N.A., 10]\n    - [10, N.A.]\n"
	if err := os.WriteFile(spec, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	dev, err := hw.Resolve(context.Background(), spec, hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := Options{MaxStages: 2, Seed: 1, TimeLimit: 2 * time.Second, Fusion: "none", Bounds: "simple"}
	anyOpt := base
	anyOpt.CutAt = CutAny
	rAny, err := Plan(context.Background(), m, dev, anyOpt)
	if err != nil {
		t.Fatal(err)
	}
	blk := base
	blk.CutAt = CutBlocks
	r, err := Plan(context.Background(), m, dev, blk)
	if err != nil {
		t.Fatal(err)
	}
	if r.Lower > rAny.Upper*(1+1e-9) || r.Lower > r.Upper {
		t.Errorf("block plan's bound %.6g above the plan cutting anywhere (%.6g) or its own objective (%.6g)", r.Lower, rAny.Upper, r.Upper)
	}
	if !strings.Contains(strings.Join(diag.NoteStrings(r.Notes), "\n"), "cuts only between the 4 blocks") {
		t.Errorf("notes %q do not say the cuts fall between the 4 blocks", r.Notes)
	}
	for _, n := range r.Notes {
		if strings.HasPrefix(n.Msg, "cuts only between") && n.Kind != diag.NoteApprox {
			t.Errorf("block-cut note %+v: want kind approximation (a restriction, with what it costs)", n)
		}
	}
	if r.recompute == nil {
		t.Fatal("nothing recomputed: the mask and rotary cones should be cheaper than sending them")
	}
	dir := filepath.Join(t.TempDir(), "out")
	l, err := Prepare(m, r, emit.Options{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	man := l.Manifest
	hidden := int64(16 * c.Hidden * 4)
	if len(man.Transfers) == 0 {
		t.Fatal("no transfers: the plan has one stage")
	}
	for _, tr := range man.Transfers {
		if tr.Bytes != hidden {
			t.Errorf("stage %d → %d sends %s (%d B), not a hidden state (%d B)", tr.From, tr.To, tr.Tensor, tr.Bytes, hidden)
		}
	}
	// Each stage keeps the KV cache of the layers it computes, and all of it is kept.
	kept := 0
	for _, st := range man.Stages {
		for _, s := range st.State {
			if !strings.HasPrefix(s.Input, "past_key_values.") || strings.Replace(s.Input, "past_key_values", "present", 1) != s.Output {
				t.Errorf("stage %d keeps %s → %s", st.Index, s.Input, s.Output)
			}
			kept++
		}
	}
	if kept != 2*c.Layers {
		t.Errorf("%d state pairs kept, want %d", kept, 2*c.Layers)
	}
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
	rep, err := verify.Run(context.Background(), dir, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass {
		t.Fatalf("verify: %v", verify.MismatchOf(rep).Error())
	}
}

// --cut-at blocks on a model without repeated blocks plans anywhere and says so; a latency
// placement refuses it; an unknown mode is a usage error.
func TestCutAtRefusals(t *testing.T) {
	m, err := ingest.Load(decoderModel(t), ingest.Options{Dims: map[string]int64{"past": 8, "total": 9}})
	if err != nil {
		t.Fatal(err)
	}
	dev := twoDevices(t, "1GiB")
	if _, err := Plan(context.Background(), m, dev, Options{CutAt: CutBlocks, Objective: Latency}); err == nil || !strings.Contains(err.Error(), "Options.CutAt = blocks") {
		t.Errorf("latency: %v", err)
	}
	if _, err := Plan(context.Background(), m, dev, Options{CutAt: "layers", Objective: Throughput}); err == nil || !strings.Contains(err.Error(), `Options.CutAt = "layers"`) {
		t.Errorf("unknown mode: %v", err)
	}
}
