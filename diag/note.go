package diag

import (
	"fmt"
	"strconv"
)

// NoteKind is what kind of remark a Note is: a front end groups, counts and colours notes by
// it.
type NoteKind uint8

const (
	// NoteInfo is how the output was made: a fact about the plan or the files the user may
	// want (stages renumbered, routes, nodes computed again in each stage). The zero kind.
	NoteInfo NoteKind = iota
	// NoteApprox is a figure that is an estimate, a nominal value or a placeholder, or a
	// restriction the result carries (a cap, cuts only between blocks) with what it costs.
	NoteApprox
	// NoteCapped is work a limit cut short: a time limit or work budget stopped a search or
	// a bound before it finished, or a result was left out so that the output is
	// reproducible.
	NoteCapped
	// NoteSkipped is something skipped, dropped or ignored: a bound too large to run, a
	// device that cannot be opened, a stage with nothing to do.
	NoteSkipped
	// NoteFault is a failure worked around: a solver fault, a bound discarded because it
	// exceeds the plan, a fallback to another method.
	NoteFault
	// NoteMismatch is two sources that disagree (the model and its config.json): the note
	// says which one won.
	NoteMismatch
)

var noteKindNames = [...]string{
	NoteInfo:     "info",
	NoteApprox:   "approximation",
	NoteCapped:   "capped",
	NoteSkipped:  "skipped",
	NoteFault:    "fault",
	NoteMismatch: "mismatch",
}

// NoteKinds lists the note kinds in the order a front end shows their groups: the most
// pressing first.
var NoteKinds = []NoteKind{NoteFault, NoteMismatch, NoteCapped, NoteSkipped, NoteApprox, NoteInfo}

// String returns the kind's name: "info", "capped", ….
func (k NoteKind) String() string {
	if int(k) < len(noteKindNames) {
		return noteKindNames[k]
	}
	return "NoteKind(" + strconv.Itoa(int(k)) + ")"
}

// Note is a remark a library makes about its result without failing: a warning with a kind
// (which groups it), a subject (what it is about: a node, a device, a stage, an option…) and
// its message. Notes travel in a result's Notes field; the command groups, counts and
// colours them, and JSON outputs write each as its message (MarshalText), so that a
// "notes" array of strings keeps its form.
type Note struct {
	Kind    NoteKind
	Subject Subject
	// Msg is the message, one line, which names its subject in its own words.
	Msg string
}

// Notef returns a note of kind k with the message fmt.Sprintf(format, args...).
func Notef(k NoteKind, format string, args ...any) Note {
	return Note{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// About returns n with the subject set.
func (n Note) About(k SubjectKind, name string) Note {
	n.Subject = Subject{Kind: k, Name: name}
	return n
}

// String returns the message.
func (n Note) String() string { return n.Msg }

// MarshalText writes the note as its message: JSON outputs keep "notes" as strings.
func (n Note) MarshalText() ([]byte, error) { return []byte(n.Msg), nil }

// UnmarshalText reads a note written by MarshalText: the message, of kind NoteInfo (the kind
// and subject are not written).
func (n *Note) UnmarshalText(b []byte) error {
	*n = Note{Msg: string(b)}
	return nil
}

// NoteStrings returns the notes' messages (an empty, non-nil slice for none, so that JSON
// writes []).
func NoteStrings(ns []Note) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Msg
	}
	return out
}

// Infos returns msgs as notes of kind NoteInfo: for remarks that come as text from where no
// kind is known (a manifest read back, another tool's output).
func Infos(msgs ...string) []Note {
	out := make([]Note, len(msgs))
	for i, m := range msgs {
		out[i] = Note{Msg: m}
	}
	return out
}

// GroupNotes returns the notes by kind, in the order of NoteKinds, each group in the notes'
// own order; kinds without notes are left out.
func GroupNotes(ns []Note) [][]Note {
	var groups [][]Note
	for _, k := range NoteKinds {
		var g []Note
		for _, n := range ns {
			if n.Kind == k {
				g = append(g, n)
			}
		}
		if len(g) > 0 {
			groups = append(groups, g)
		}
	}
	// A kind NoteKinds does not list (none today) goes last, as it came.
	var rest []Note
	for _, n := range ns {
		if int(n.Kind) >= len(noteKindNames) {
			rest = append(rest, n)
		}
	}
	if len(rest) > 0 {
		groups = append(groups, rest)
	}
	return groups
}
