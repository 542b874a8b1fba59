package main

import (
	"bytes"
	"io"
	"text/tabwriter"
)

// table is a tabwriter for the commands' text tables (two spaces between columns) whose
// rows lose the trailing spaces that padded empty last cells leave.
type table struct {
	*tabwriter.Writer
	buf bytes.Buffer
	out io.Writer
}

// newTable writes a table to w; flags are tabwriter's (tabwriter.AlignRight).
func newTable(w io.Writer, flags uint) *table {
	t := &table{out: w}
	t.Writer = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', flags)
	return t
}

// Flush aligns the rows written so far and writes them without trailing spaces.
func (t *table) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	var out []byte
	for _, line := range bytes.SplitAfter(t.buf.Bytes(), []byte("\n")) {
		body, nl := bytes.CutSuffix(line, []byte("\n"))
		out = append(out, bytes.TrimRight(body, " ")...)
		if nl {
			out = append(out, '\n')
		}
	}
	t.buf.Reset()
	_, err := t.out.Write(out)
	return err
}
