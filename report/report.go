package report

import (
	"bytes"
	"html/template"
	"path/filepath"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/internal/atomicfs"
	"github.com/onnxpart/onnxpart/internal/outdir"
)

// File is the report's file name inside an output directory.
const File = outdir.ReportFile

// Options control report.html.
type Options struct {
	// Title is the page title (default "onnxpart plan: <model file>").
	Title string
	// Producer names the program in the footer (default "onnxpart").
	Producer string
	// Sections are added after the report's own sections, before the footer, in order.
	Sections []Section
}

// Section is a section that another part of onnxpart adds to the report: onnxpart bench adds
// the pipeline as measured in ONNX Runtime. Give it with Options.Sections when the report is
// written, or put it into a report.html written earlier with PutSection.
type Section struct {
	// ID is the section element's id, unique in the page (letters, digits, '-' and '_').
	ID string
	// Title is the section's heading.
	Title string
	// Body is the section's content below the heading. It is trusted HTML: the caller
	// renders it with html/template, which escapes what came from the model.
	Body template.HTML
}

// HTML renders the manifest as one self-contained HTML page: inline CSS and SVG, no
// script, nothing fetched. It shows the model summary, the pipeline (stages as boxes sized
// by predicted time, or by FLOPs without predictions, wrapped into rows when there are many,
// transfers as arrows labelled with bytes), a timeline of one inference and, for throughput
// plans, the steady-state pipeline with the bottleneck stage marked (or the manifest's
// Timeline when a planner gave one, grouped per stage when long, with its critical path),
// memory per device against capacity, and the lower bounds with the gap they certify. Its
// figures are the objective's (PlanFigures): a pipeline's bottleneck, a placement's latency,
// a batch's time. Sections the manifest has no data for say so. Every name from the model is
// escaped, and the same manifest always gives the same bytes. Each stage box is an SVG group
// <g class="stage" data-stage="i">, with data-bottleneck or data-critical when marked.
func HTML(m *emit.Manifest, opt Options) ([]byte, error) {
	if m == nil {
		return nil, diag.Internal("report: no manifest")
	}
	if len(m.Stages) == 0 {
		return nil, diag.Input("report: the manifest has no stages")
	}
	for _, sec := range opt.Sections {
		if err := sec.check(); err != nil {
			return nil, err
		}
	}
	v := buildReport(m, opt)
	var buf bytes.Buffer
	if err := reportTemplate.Execute(&buf, v); err != nil {
		return nil, diag.Internal("report: %w", err)
	}
	return buf.Bytes(), nil
}

// Write renders the report and writes it to dir/report.html (through a temporary
// file renamed into place, so that a failed write leaves no partial report).
func Write(m *emit.Manifest, dir string, opt Options) error {
	b, err := HTML(m, opt)
	if err != nil {
		return err
	}
	return atomicfs.WriteFile(filepath.Join(dir, File), b, 0o644)
}

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{"f1": f1, "sectionsEnd": func() template.HTML { return sectionsEnd }}).Parse(reportHTML))
