package onnxpart_test

import (
	"context"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart"
	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
)

// TestPrepareReadsEditedResult: a Result's exported fields are the source of truth, so what
// a caller changes between Plan and Prepare (the command adds notes and sets Seconds) is in
// the manifest, and the planner's own state (the memory graph) still reaches it.
func TestPrepareReadsEditedResult(t *testing.T) {
	ctx := context.Background()
	m, err := ingest.Load("testdata/models/resnet50_small.onnx", ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := hw.Resolve(ctx, "2xA100-80G", hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := onnxpart.Plan(ctx, m, c, onnxpart.Options{TimeLimit: 20 * time.Second, Seed: 1, Reproducible: true, Bounds: onnxpart.BoundsNone})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Stages) == 0 {
		t.Fatal("no stages")
	}
	note := diag.Note{Kind: diag.NoteInfo, Msg: "added after Plan"}
	r.Notes = append(r.Notes, note)
	r.Algorithm = "edited"
	r.Stages[0].ComputeS = 1234.5
	l, err := onnxpart.Prepare(m, r, emit.Options{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Layout != l {
		t.Error("Prepare did not set Result.Layout")
	}
	man := l.Manifest
	if n := len(man.Notes); n == 0 || man.Notes[n-1].Msg != note.Msg {
		t.Errorf("the manifest's notes %v lack the note added after Plan", diag.NoteStrings(man.Notes))
	}
	if man.Solver == nil || man.Solver.Algorithm != "edited" {
		t.Errorf("manifest solver %+v, want the edited algorithm", man.Solver)
	}
	found := false
	for _, st := range man.Stages {
		if st.Label == r.Stages[0].Stage && st.Predicted != nil && st.Predicted.ComputeS == 1234.5 {
			found = true
		}
		if st.Memory == nil {
			t.Errorf("stage %d has no memory section: the planner's memory graph was lost", st.Label)
		}
	}
	if !found {
		t.Error("the manifest does not predict the edited compute time of stage 0")
	}
}
