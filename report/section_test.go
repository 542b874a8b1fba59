package report

import (
	"html/template"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Sections given when the report is written, and put into a written report later, appear
// once each before the footer; putting one again replaces it and keeps the rest of the page.
func TestSections(t *testing.T) {
	m := sampleManifest(2, true)
	dir := t.TempDir()
	first := Section{ID: "extra", Title: "Extra <one>", Body: template.HTML("<p>first</p>")}
	if err := Write(m, dir, Options{Sections: []Section{first}}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, File)
	before, _ := os.ReadFile(path)
	if !strings.Contains(string(before), "<h2>Extra &lt;one&gt;</h2>") {
		t.Error("the section's title is missing or not escaped")
	}
	if err := PutSection(path, Section{ID: "bench", Title: "Measured", Body: "<p>run 1</p>"}); err != nil {
		t.Fatal(err)
	}
	if err := PutSection(path, Section{ID: "bench", Title: "Measured", Body: "<p>run 2</p>"}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	s := string(after)
	if strings.Count(s, `<section id="bench">`) != 1 || strings.Contains(s, "run 1") || !strings.Contains(s, "run 2") {
		t.Errorf("bench section not replaced in place:\n%s", s)
	}
	if i, j, k := strings.Index(s, `id="extra"`), strings.Index(s, `id="bench"`), strings.Index(s, "<footer>"); !(i >= 0 && i < j && j < k) {
		t.Errorf("sections out of order (extra %d, bench %d, footer %d)", i, j, k)
	}
	// Apart from the added section the page is byte for byte what Write wrote.
	bench := s[strings.Index(s, sectionBegin("bench")):]
	bench = bench[:strings.Index(bench, sectionEnd("bench"))+len(sectionEnd("bench"))+1]
	if strings.Replace(s, bench, "", 1) != string(before) {
		t.Error("PutSection changed the page outside its section")
	}

	// Refusals: a page onnxpart did not write, a bad id.
	foreign := filepath.Join(dir, "other.html")
	os.WriteFile(foreign, []byte("<html><body></body></html>"), 0o644)
	if err := PutSection(foreign, Section{ID: "bench"}); err == nil || !strings.Contains(err.Error(), "not a report.html") {
		t.Errorf("foreign page: got %v", err)
	}
	if b, _ := os.ReadFile(foreign); string(b) != "<html><body></body></html>" {
		t.Error("a refused page was modified")
	}
	if err := PutSection(path, Section{ID: `x" onload="y`}); err == nil {
		t.Error("an id with quotes was accepted")
	}
	if _, err := HTML(m, Options{Sections: []Section{{ID: ""}}}); err == nil {
		t.Error("an empty section id was accepted")
	}
}
