package diag_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
)

// TestNoteJSONIsItsMessage: a note writes as its message, so that a "notes" array of
// strings keeps its form in JSON outputs, and reads back as information.
func TestNoteJSONIsItsMessage(t *testing.T) {
	in := struct {
		Notes []diag.Note `json:"notes"`
	}{[]diag.Note{
		diag.Notef(diag.NoteCapped, "the time limit cut %s short", "<the search>").About(diag.Option, "--time-limit"),
		{Msg: `quotes " and \ and ü`},
	}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(struct {
		Notes []string `json:"notes"`
	}{diag.NoteStrings(in.Notes)})
	if string(b) != string(want) {
		t.Fatalf("got %s, want %s", b, want)
	}
	var out struct {
		Notes []diag.Note `json:"notes"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.Notes, diag.Infos(diag.NoteStrings(in.Notes)...)) {
		t.Errorf("read back %+v", out.Notes)
	}
	if got := in.Notes[0].String(); got != "the time limit cut <the search> short" {
		t.Errorf("String() = %q", got)
	}
	if s := in.Notes[0].Subject; s != (diag.Subject{Kind: diag.Option, Name: "--time-limit"}) {
		t.Errorf("subject %+v", s)
	}
}

// TestGroupNotes: groups by kind in NoteKinds' order, each in the notes' own order.
func TestGroupNotes(t *testing.T) {
	ns := []diag.Note{
		{Kind: diag.NoteInfo, Msg: "i1"}, {Kind: diag.NoteFault, Msg: "f1"}, {Kind: diag.NoteInfo, Msg: "i2"},
		{Kind: diag.NoteCapped, Msg: "c1"}, {Kind: diag.NoteFault, Msg: "f2"}, {Kind: diag.NoteKind(99), Msg: "x"},
	}
	var got [][]string
	for _, g := range diag.GroupNotes(ns) {
		got = append(got, diag.NoteStrings(g))
	}
	want := [][]string{{"f1", "f2"}, {"c1"}, {"i1", "i2"}, {"x"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if len(diag.GroupNotes(nil)) != 0 {
		t.Error("groups of no notes")
	}
	seen := map[diag.NoteKind]bool{}
	for _, k := range diag.NoteKinds {
		if seen[k] || k.String() == "" || k.String()[0] == 'N' {
			t.Errorf("NoteKinds: %v twice or unnamed", k)
		}
		seen[k] = true
	}
	if len(seen) != int(diag.NoteMismatch)+1 {
		t.Errorf("NoteKinds lists %d kinds, want every one of %d", len(seen), int(diag.NoteMismatch)+1)
	}
}
