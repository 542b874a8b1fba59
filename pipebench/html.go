package pipebench

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"strings"

	"github.com/onnxpart/onnxpart/internal/atomicfs"
	"github.com/onnxpart/onnxpart/profile"
)

// The section UpdateReport adds to report.html sits between these markers, so that a later
// bench replaces it.
const (
	sectionBegin = "<!-- onnxpart bench: begin -->"
	sectionEnd   = "<!-- onnxpart bench: end -->"
)

var sectionTmpl = template.Must(template.New("bench").Funcs(template.FuncMap{
	"t": func(x float64) string { return profile.FormatQuantity(x, profile.Seconds) },
	"p": func(x *float64) string {
		if x == nil {
			return "–"
		}
		return profile.FormatQuantity(*x, profile.Seconds)
	},
	"r": func(x *float64) string {
		if x == nil {
			return "–"
		}
		return fmt.Sprintf("%.3f", *x)
	},
	"f": func(x float64) string { return fmt.Sprintf("%.1f", x) },
	"pf": func(x *float64) string {
		if x == nil {
			return "–"
		}
		return fmt.Sprintf("%.1f", *x)
	},
}).Parse(`<section id="bench" style="font-family:sans-serif;margin:2em 0">
<h2>Measured in ONNX Runtime (onnxpart bench)</h2>
<p>{{.Stages}} stages{{if gt .Routes 1}} in {{.Routes}} routes{{end}}, ONNX Runtime {{.ORTVersion}}, {{.Requests}} requests measured in {{printf "%.3g" .Seconds}} s after {{.Warmup}} warm-up, {{.InFlight}} in flight{{if .Interrupted}} (interrupted){{end}}. Ratio: measured ÷ predicted.</p>
<table style="border-collapse:collapse" border="1" cellpadding="4">
<tr><th></th><th>measured</th><th>predicted</th><th>ratio</th></tr>
<tr><td>throughput (inferences/s)</td><td>{{f .Throughput.Measured}}</td><td>{{pf .Throughput.Planned}}</td><td>{{r .Throughput.Ratio}}</td></tr>
{{if .LatencySingle}}<tr><td>latency of a lone request (p50)</td><td>{{t .LatencyVsPlan.Measured}}</td><td>{{p .LatencyVsPlan.Planned}}</td><td>{{r .LatencyVsPlan.Ratio}}</td></tr>{{end}}
<tr><td>latency, {{.InFlight}} in flight (p50 / p90 / p99)</td><td colspan="3">{{t .Latency.P50}} / {{t .Latency.P90}} / {{t .Latency.P99}}</td></tr>
{{with .Batch}}<tr><td>batch of {{.Inputs}}</td><td>{{t .TimeS.Measured}}</td><td>{{p .TimeS.Planned}}</td><td>{{r .TimeS.Ratio}}</td></tr>{{end}}
</table>
<h3>Stages (per request)</h3>
<table style="border-collapse:collapse" border="1" cellpadding="4">
<tr><th>route</th><th>stage</th><th>device</th><th>busy</th><th>predicted</th><th>ratio</th><th>wait</th><th>predicted</th><th>ratio</th><th>queue</th></tr>
{{range .StageTimes}}<tr><td>{{.Route}}</td><td>{{.Stage}}</td><td>{{.Device}}</td><td>{{t .Busy.Measured}}</td><td>{{p .Busy.Planned}}</td><td>{{r .Busy.Ratio}}</td><td>{{t .Wait.Measured}}</td><td>{{p .Wait.Planned}}</td><td>{{r .Wait.Ratio}}</td><td>{{t .Queue}}</td></tr>
{{end}}</table>
{{range .Notes}}<p>{{.}}</p>
{{end}}</section>
`))

// UpdateReport adds (or replaces) the measured-vs-predicted section of report.html.
func UpdateReport(path string, r *Report) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var sec bytes.Buffer
	sec.WriteString(sectionBegin + "\n")
	if err := sectionTmpl.Execute(&sec, r); err != nil {
		return err
	}
	sec.WriteString(sectionEnd + "\n")
	s := string(data)
	if i := strings.Index(s, sectionBegin); i >= 0 {
		if j := strings.Index(s[i:], sectionEnd); j >= 0 {
			end := i + j + len(sectionEnd)
			if end < len(s) && s[end] == '\n' {
				end++
			}
			s = s[:i] + s[end:]
		}
	}
	at := strings.LastIndex(strings.ToLower(s), "</body>")
	if at < 0 {
		return fmt.Errorf("%s has no </body>: not a report.html", path)
	}
	s = s[:at] + sec.String() + s[at:]
	return atomicfs.WriteFile(path, []byte(s), 0o644)
}
