package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/llamagen"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/verify"
)

// splitCLI runs `onnxpart split args…` and returns its exit code, stdout and stderr.
func splitCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb}
	code := run(context.Background(), e, append([]string{"split"}, args...))
	return code, out.String(), errb.String()
}

// `split --stages N` on a decoder (a four-layer llamagen model, which has state pairs) cuts
// only between its layers by default: at a prefill of 16 tokens the stages send each other
// hidden states [batch, seq, hidden] and nothing else (the mask every layer reads is
// computed again in each stage), a note says how unequal the stages' FLOPs came out, the
// derived total is printed once, and the stage files verify bit-exact. --cut-at any cuts
// as before (emit.EqualFLOPs), inside attention; more stages than the blocks allow is a
// usage error naming the blocks.
func TestSplitCutAtBlocksDecoder(t *testing.T) {
	c := llamagen.Tiny
	c.Layers = 4
	model, err := llamagen.Write(t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	const seq = 16
	dims := "batch=1,seq=16,past=0"
	hidden := int64(seq * c.Hidden * 4)
	for _, n := range []int{2, 4} {
		dir := filepath.Join(t.TempDir(), "out")
		code, out, errs := splitCLI(model, "-o", dir, "--stages", strconv.Itoa(n), "--dim", dims)
		if code != 0 {
			t.Fatalf("--stages %d: exit %d: %s", n, code, errs)
		}
		if strings.Count(out, "derived:") != 1 || !strings.Contains(out, "derived: total = past + seq = 16 (the model ties it to the other sizes)") {
			t.Errorf("--stages %d: stdout does not name the derived total once:\n%s", n, out)
		}
		man, err := emit.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(man.Stages) != n {
			t.Fatalf("--stages %d: %d stages", n, len(man.Stages))
		}
		notes := strings.Join(diag.NoteStrings(man.Notes), "\n")
		if !strings.Contains(notes, "cut only between the model's 4 blocks (--cut-at auto") || !strings.Contains(notes, "above an equal share") {
			t.Errorf("--stages %d: notes %q do not say the cuts fall between the 4 blocks and how unequal the stages are", n, notes)
		}
		if len(man.Transfers) != n-1 {
			t.Errorf("--stages %d: %d transfers, want %d (one hidden state per boundary)", n, len(man.Transfers), n-1)
		}
		for _, tr := range man.Transfers {
			ref := outputRef(man, tr.From, tr.Tensor)
			s := ref.Shape
			if tr.Bytes != hidden || len(s) != 3 || s[0].Param != "batch" || s[1].Param != "seq" || s[2].Value != int64(c.Hidden) {
				t.Errorf("--stages %d: stage %d → %d sends %s %v (%d B), not a hidden state [batch seq %d] (%d B)", n, tr.From, tr.To, tr.Tensor, s, tr.Bytes, c.Hidden, hidden)
			}
		}
		verifyBitExact(t, dir)
	}

	// --cut-at any: today's equal-FLOP cuts, which cut inside attention.
	dir := filepath.Join(t.TempDir(), "any")
	if code, _, errs := splitCLI(model, "-o", dir, "--stages", "4", "--dim", dims, "--cut-at", "any"); code != 0 {
		t.Fatalf("--cut-at any: exit %d: %s", code, errs)
	}
	got, err := emit.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ingest.Load(model, ingest.Options{Dims: map[string]int64{"batch": 1, "seq": seq, "past": 0}})
	if err != nil {
		t.Fatal(err)
	}
	stage, err := emit.EqualFLOPs(m.Graph, 4)
	if err != nil {
		t.Fatal(err)
	}
	want, err := emit.Write(m, &emit.Assignment{Stage: stage}, filepath.Join(t.TempDir(), "want"), emit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Stages) != len(want.Stages) || len(got.Transfers) != len(want.Transfers) {
		t.Fatalf("--cut-at any: %d stages, %d transfers; emit.EqualFLOPs gives %d, %d", len(got.Stages), len(got.Transfers), len(want.Stages), len(want.Transfers))
	}
	for i := range got.Stages {
		if g, w := strings.Join(got.Stages[i].Nodes, ","), strings.Join(want.Stages[i].Nodes, ","); g != w {
			t.Errorf("--cut-at any: stage %d computes other nodes than emit.EqualFLOPs's", i)
		}
	}
	for i, tr := range got.Transfers {
		if tr != want.Transfers[i] {
			t.Errorf("--cut-at any: transfer %+v, emit.EqualFLOPs's %+v", tr, want.Transfers[i])
		}
	}
	other := false
	for _, tr := range got.Transfers {
		other = other || tr.Bytes != hidden
	}
	if !other || strings.Contains(strings.Join(diag.NoteStrings(got.Notes), "\n"), "blocks") {
		t.Errorf("--cut-at any sends only hidden states or mentions blocks: %+v, notes %q", got.Transfers, got.Notes)
	}
	verifyBitExact(t, dir)

	// Refusals.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--stages", "7"}, "the model has 4 blocks, whose boundaries allow at most 6 stages"},
		{[]string{"--stages", "7", "--cut-at", "blocks"}, "the model has 4 blocks"},
		{[]string{"--stages", "2", "--cut-at", "layers"}, `--cut-at "layers": want any, blocks or auto`},
		{[]string{"--cut", "/model/layers.0/Add_1_output_0", "--cut-at", "blocks"}, "--cut-at applies to --stages"},
	} {
		out := filepath.Join(t.TempDir(), "x")
		code, _, errs := splitCLI(append([]string{model, "-o", out}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("split %v: exit %d, stderr %q; want %d and %q", tc.args, code, errs, exitUsage, tc.want)
		}
	}
}

// outputRef is stage from's output named name (its shape as the stage file declares it).
func outputRef(man *emit.Manifest, from int, name string) emit.TensorRef {
	for _, o := range man.Stages[from].Outputs {
		if o.Name == name {
			return o
		}
	}
	return emit.TensorRef{Name: name}
}

// verifyBitExact runs the stage files against the original model in ONNX Runtime with
// optimizations off: every output must be bit-exact.
func verifyBitExact(t *testing.T, dir string) {
	t.Helper()
	if _, err := ort.LibraryPath(); err != nil {
		t.Log(err)
		return
	}
	rep, err := verify.Run(context.Background(), dir, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass {
		t.Fatalf("verify %s: %v", dir, verify.MismatchOf(rep).Error())
	}
	for _, o := range rep.Outputs {
		if !o.BitExact {
			t.Errorf("verify %s: %s is not bit-exact", dir, o.Name)
		}
	}
}
