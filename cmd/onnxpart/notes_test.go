package main

import (
	"bytes"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
)

// TestPrintNotes: notes of several kinds come with a count and grouped, faults first; notes of
// one kind print as they came; off a terminal nothing is coloured.
func TestPrintNotes(t *testing.T) {
	var b bytes.Buffer
	printNotes(&b, "note       ", "notes      ", []diag.Note{
		{Kind: diag.NoteInfo, Msg: "stages renumbered"},
		{Kind: diag.NoteFault, Msg: "bound discarded"},
		{Kind: diag.NoteCapped, Msg: "time limit"},
		{Kind: diag.NoteInfo, Msg: "routes"},
	})
	want := "notes      4 (1 fault, 1 capped, 2 info)\n" +
		"note       bound discarded\n" +
		"note       time limit\n" +
		"note       stages renumbered\n" +
		"note       routes\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	printNotes(&b, "note: ", "notes: ", diag.Infos("a", "b"))
	if b.String() != "note: a\nnote: b\n" {
		t.Errorf("one kind: got %q", b.String())
	}
}
