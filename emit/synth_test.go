package emit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph/dag"
	"github.com/onnxpart/onnxpart/internal/testmodel"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// A small builder of ONNX models for tests.

func stageModelOf(t *testing.T, dir string, st Stage) *onnxpb.ModelProto {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, st.File))
	if err != nil {
		t.Fatal(err)
	}
	var mp onnxpb.ModelProto
	if err := proto.Unmarshal(data, &mp); err != nil {
		t.Fatal(err)
	}
	return &mp
}

// TestCycleRefused: relu in stage 1 and the If (reading relu's output) in stage 0, while
// the If's output flows to stage 1: the error names both tensors of the cycle.
func TestCycleRefused(t *testing.T) {
	m := testmodel.LoadPath(t, testmodel.ControlFlowModel(t))
	stage := testmodel.Labels(t, m.Graph, map[string]int{"relu": 1, "sig_w2": 0, "if": 0, "square": 1, "mul_s": 1, "add_a": 1, "mul_s2": 1})
	_, err := NewLayout(m, &Assignment{Stage: stage}, Options{})
	var ce *dag.CycleError
	if !errors.As(err, &ce) || diag.KindOf(err) != diag.KindInput {
		t.Fatalf("got %v, want an input error caused by a dag.CycleError", err)
	}
	if len(ce.Nodes) != 2 || !strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), `"y"`) {
		t.Errorf("cycle %+v: want the tensors a (1→0, captured by the If) and y (0→1)", ce)
	}
	// A weight-only node on the "wrong" side closes no cycle: it goes with its consumers.
	stage = testmodel.Labels(t, m.Graph, map[string]int{"relu": 0, "sig_w2": 1, "if": 0, "square": 0, "mul_s": 0, "add_a": 1, "mul_s2": 1})
	l, err := NewLayout(m, &Assignment{Stage: stage}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.NumStages() != 2 || len(l.Manifest.Stages[0].DuplicatedNodes) != 1 || l.Manifest.Stages[0].DuplicatedNodes[0] != "sig_w2" {
		t.Errorf("stages %+v", l.Manifest.Stages)
	}
}

// TestRenumberAndDrop: labels 7 and 3 become stages 1 and 0; a label holding only a
// weight-only node is dropped with a note; equal splits under any labelling give
// identical files.
func TestRenumberAndDrop(t *testing.T) {
	m := testmodel.LoadPath(t, testmodel.ControlFlowModel(t))
	a := testmodel.Labels(t, m.Graph, map[string]int{"relu": 3, "sig_w2": 5, "if": 3, "square": 3, "mul_s": 7, "add_a": 7, "mul_s2": 7})
	b := testmodel.Labels(t, m.Graph, map[string]int{"relu": 0, "sig_w2": 0, "if": 0, "square": 0, "mul_s": 1, "add_a": 1, "mul_s2": 1})
	da := filepath.Join(t.TempDir(), "a")
	db := filepath.Join(t.TempDir(), "b")
	ma, err := Write(m, &Assignment{Stage: a}, da, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(m, &Assignment{Stage: b}, db, Options{}); err != nil {
		t.Fatal(err)
	}
	if len(ma.Stages) != 2 || ma.Stages[0].Label != 3 || ma.Stages[1].Label != 7 {
		t.Fatalf("stages %+v", ma.Stages)
	}
	notes := strings.Join(diag.NoteStrings(ma.Notes), "\n")
	if !strings.Contains(notes, "stage 5 of the assignment was dropped") || !strings.Contains(notes, "3→0, 7→1") {
		t.Errorf("notes %q", notes)
	}
	// The notes say their kind and subject: the dropped stage is a skipped stage 5, the
	// renumbering information.
	for _, n := range ma.Notes {
		switch {
		case strings.Contains(n.Msg, "was dropped") && (n.Kind != diag.NoteSkipped || n.Subject != diag.Subject{Kind: diag.Stage, Name: "5"}):
			t.Errorf("dropped-stage note %+v: want kind skipped about stage 5", n)
		case strings.Contains(n.Msg, "renumbered") && n.Kind != diag.NoteInfo:
			t.Errorf("renumbering note %+v: want kind info", n)
		}
	}
	for i := range ma.Stages {
		fa, _ := os.ReadFile(filepath.Join(da, stageFile(i)))
		fb, _ := os.ReadFile(filepath.Join(db, stageFile(i)))
		if string(fa) != string(fb) {
			t.Errorf("stage %d differs between labellings", i)
		}
	}
}

// TestShapeOnlyRecomputed: a cut inside BERT's attention, between the shape arithmetic
// (Shape → Gather → Add → Div) and the Slices it feeds. The Slices' stage holds the
// activation anyway, so the shape arithmetic is recomputed there and no shape tensor is
// sent; the attention mask (/Equal_output_0) crosses once per receiving stage.
func TestShapeOnlyRecomputed(t *testing.T) {
	m := testmodel.Load(t, testmodel.Corpus(t, "bert_base_like_small.onnx"))
	g := m.Graph
	stage, err := CutAfter(g, []string{"/enc/layers.3/self_attn/Div_output_0", "/enc/layers.8/self_attn/Shape_output_0"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLayout(m, &Assignment{Stage: stage}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	role, _ := classify(g, g.TopoOrder())
	for _, tr := range l.Manifest.Transfers {
		id, _ := g.TensorByName(tr.Tensor)
		if p := g.Tensors[id].Producer; p >= 0 && role[p] != roleNormal {
			t.Errorf("transfer of %s, computed by a %s node", tr.Tensor, g.Nodes[p].OpType)
		}
	}
	masks := 0
	for _, tr := range l.Manifest.Transfers {
		if tr.Tensor == "/Equal_output_0" {
			masks++
		}
	}
	if masks != 2 {
		t.Errorf("the mask is sent %d times, want once to each of the 2 later stages", masks)
	}
	in := func(i int, node string) bool {
		for _, n := range l.Manifest.Stages[i].Nodes {
			if n == node {
				return true
			}
		}
		return false
	}
	if !in(1, "/enc/layers.3/self_attn/Div") || in(0, "/enc/layers.3/self_attn/Div") {
		t.Errorf("the shape arithmetic of layer 3 is not with its Slices in stage 1")
	}
	// Cut right after Shape in layer 8: Shape's output is consumed by stage 2, which holds
	// the activation; Shape is recomputed there.
	if !in(2, "/enc/layers.8/self_attn/Shape") {
		t.Errorf("layer 8's Shape is not recomputed in stage 2")
	}
}
