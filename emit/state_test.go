package emit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/testmodel"
)

// The stage that makes present from past keeps the pair as state; a pair named by hand is
// listed too, and a name that is not an input is an error naming it, with nothing written.
func TestManifestState(t *testing.T) {
	m, err := ingest.Load(testmodel.DecoderModel(t), ingest.Options{Dims: map[string]int64{"batch": 1, "past": 16, "seq": 1, "total": 17}})
	if err != nil {
		t.Fatal(err)
	}
	// Nodes: concat, proj, mean, mask; the concat alone in stage 0.
	dir := filepath.Join(t.TempDir(), "out")
	man, err := Write(m, &Assignment{Stage: []int{0, 1, 1, 1}}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(man.Stages[1].State); n != 0 {
		t.Errorf("stage 1 keeps %d state pairs, want none", n)
	}
	st := man.Stages[0].State
	if len(st) != 1 || st[0].Input != "past_key" || st[0].Output != "present" || st[0].Axis == nil || *st[0].Axis != 1 ||
		st[0].Bytes != 17*8*4 || len(st[0].AlsoReadBy) != 0 {
		t.Fatalf("stage 0 state %+v", st)
	}

	// By hand: the attention mask "becomes" y (a made-up pair, to exercise --state).
	dir2 := filepath.Join(t.TempDir(), "out2")
	man, err = Write(m, &Assignment{Stage: []int{0, 1, 1, 1}}, dir2, Options{State: map[string]string{"attention_mask": "y"}})
	if err != nil {
		t.Fatal(err)
	}
	if st := man.Stages[1].State; len(st) != 1 || st[0].Input != "attention_mask" || st[0].Axis != nil {
		t.Errorf("stage 1 state %+v, want the pair named by hand", st)
	}
	dir3 := filepath.Join(t.TempDir(), "out3")
	_, err = Write(m, &Assignment{Stage: []int{0, 1, 1, 1}}, dir3, Options{State: map[string]string{"h": "y"}})
	if err == nil || !strings.Contains(err.Error(), `"h" is not an input`) {
		t.Errorf("--state h=y: %v", err)
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(dir3), "*")); len(matches) != 0 {
		t.Errorf("a failed write left %v", matches)
	}
}

// A node marked for recomputation must read only graph inputs, weights and other such
// nodes' outputs: one that reads an activation is refused, naming it.
func TestRecomputeRefusesActivations(t *testing.T) {
	m, err := ingest.Load(testmodel.DecoderModel(t), ingest.Options{Dims: map[string]int64{"batch": 1, "past": 16, "seq": 1, "total": 17}})
	if err != nil {
		t.Fatal(err)
	}
	re := make([]bool, len(m.Graph.Nodes))
	re[1] = true // proj reads present, the concat's output
	_, err = NewLayout(m, &Assignment{Stage: []int{0, 1, 1, 1}, Recompute: re}, Options{})
	if err == nil || !strings.Contains(err.Error(), "proj cannot be recomputed") || !strings.Contains(err.Error(), `"present"`) {
		t.Errorf("recompute proj: %v", err)
	}
	re = make([]bool, len(m.Graph.Nodes))
	re[0] = true // the concat reads graph inputs only: computed in both stages that read present
	l, err := NewLayout(m, &Assignment{Stage: []int{0, 1, 1, 1}, Recompute: re}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Manifest.Transfers) != 0 {
		t.Errorf("transfers %+v: present should be computed again, not sent", l.Manifest.Transfers)
	}
	if d := l.Manifest.Stages[1].DuplicatedNodes; len(d) != 1 || d[0] != "concat" {
		t.Errorf("stage 1 computes again %q, want the concat", d)
	}
}

// Emit works from the model ingest loaded: the stage files of a model loaded with bound dims
// keep its symbolic dims even when the file is gone by the time they are written (emit used
// to load it again from disk for that).
func TestWriteKeepsSymbolicDimsWithoutRereading(t *testing.T) {
	src, err := os.ReadFile(testmodel.DecoderModel(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "decoder.onnx")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := ingest.Load(path, ingest.Options{Dims: map[string]int64{"batch": 1, "past": 16, "seq": 1, "total": 17}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	man, err := Write(m, &Assignment{Stage: []int{0, 1, 1, 1}}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	symbolic := false
	for _, st := range man.Stages {
		for _, in := range st.Inputs {
			for _, d := range in.Shape {
				symbolic = symbolic || !d.Known()
			}
		}
	}
	if !symbolic {
		t.Errorf("the stage files lost the model's symbolic dims: stage 0 inputs %+v", man.Stages[0].Inputs)
	}
	for _, n := range diag.NoteStrings(man.Notes) {
		if strings.Contains(n, "written at the bound sizes") {
			t.Errorf("note: %s", n)
		}
	}
}
