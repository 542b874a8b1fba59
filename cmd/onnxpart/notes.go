package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
)

// noteColors are the ANSI colours of a note's prefix on a terminal, by kind: red for a fault,
// yellow for what a limit cut short or left out, cyan for a mismatch or an approximation;
// information keeps the terminal's colour.
var noteColors = map[diag.NoteKind]string{
	diag.NoteFault:    "\033[31m",
	diag.NoteCapped:   "\033[33m",
	diag.NoteSkipped:  "\033[33m",
	diag.NoteMismatch: "\033[36m",
	diag.NoteApprox:   "\033[36m",
}

// colorOK reports whether w is a terminal that may take colours (NO_COLOR unset).
func colorOK(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// printNotes writes the notes grouped by kind (diag.GroupNotes: faults first, information
// last), one line each after prefix ("note       ", "note: "). When they are of more than one
// kind a count comes first ("notes      5 (1 fault, 2 capped, 2 info)", with countPrefix).
// On a terminal the prefix takes the kind's colour (noteColors).
func printNotes(w io.Writer, prefix, countPrefix string, ns []diag.Note) {
	if len(ns) == 0 {
		return
	}
	groups := diag.GroupNotes(ns)
	if len(groups) > 1 {
		var parts []string
		for _, g := range groups {
			parts = append(parts, fmt.Sprintf("%d %s", len(g), g[0].Kind))
		}
		fmt.Fprintf(w, "%s%d (%s)\n", countPrefix, len(ns), strings.Join(parts, ", "))
	}
	color := colorOK(w)
	for _, g := range groups {
		for _, n := range g {
			p := prefix
			if c, ok := noteColors[n.Kind]; ok && color {
				p = c + strings.TrimRight(prefix, " ") + "\033[0m" + prefix[len(strings.TrimRight(prefix, " ")):]
			}
			fmt.Fprintf(w, "%s%s\n", p, n.Msg)
		}
	}
}
