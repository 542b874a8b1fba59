package report

import (
	"fmt"
	"html/template"
	"os"
	"regexp"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/internal/atomicfs"
)

// Every added section sits between markers that name it, and the last one is followed by
// sectionsEnd, so that PutSection finds where sections go and replaces one in place.
const sectionsEnd = "<!-- onnxpart report: sections end -->"

func sectionBegin(id string) string { return "<!-- onnxpart report: section " + id + " -->" }
func sectionEnd(id string) string   { return "<!-- onnxpart report: end of section " + id + " -->" }

var sectionID = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

func (s Section) check() error {
	if !sectionID.MatchString(s.ID) {
		return diag.Internal("report: section id %q: want a letter, then letters, digits, '-' or '_'", s.ID)
	}
	return nil
}

// render is the section's HTML with its markers. ID is checked; Title is escaped.
func (s Section) render() template.HTML {
	return template.HTML(fmt.Sprintf("%s\n<section id=\"%s\">\n<h2>%s</h2>\n%s\n</section>\n%s\n",
		sectionBegin(s.ID), s.ID, template.HTMLEscapeString(s.Title), s.Body, sectionEnd(s.ID)))
}

// PutSection adds sec to the report.html at path, which this package wrote, or replaces the
// section of the same ID that is there; the rest of the page is kept byte for byte. The file
// is replaced atomically. A page without the report's sections marker is refused, as not a
// report onnxpart wrote.
func PutSection(path string, sec Section) error {
	if err := sec.check(); err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return diag.Input("cannot read %s: %v", path, err).About(diag.File, path)
	}
	page := string(data)
	body := string(sec.render())
	begin, end := sectionBegin(sec.ID), sectionEnd(sec.ID)
	if i := strings.Index(page, begin); i >= 0 {
		j := strings.Index(page[i:], end)
		if j < 0 {
			return diag.Input("%s: section %q has no end marker", path, sec.ID).About(diag.File, path)
		}
		k := i + j + len(end)
		if k < len(page) && page[k] == '\n' {
			k++
		}
		page = page[:i] + body + page[k:]
	} else {
		at := strings.Index(page, sectionsEnd)
		if at < 0 {
			return diag.Input("%s is not a report.html that onnxpart wrote (no sections marker); write the plan again to get one", path).About(diag.File, path)
		}
		page = page[:at] + body + page[at:]
	}
	if err := atomicfs.WriteFile(path, []byte(page), 0o644); err != nil {
		return diag.Input("cannot write %s: %v", path, err).About(diag.File, path)
	}
	return nil
}
