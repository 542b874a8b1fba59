package pipebench

import (
	"bytes"
	"fmt"
	"html/template"

	"github.com/onnxpart/onnxpart/profile"
	"github.com/onnxpart/onnxpart/report"
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
}).Parse(`<p>{{.Stages}} stages{{if gt .Routes 1}} in {{.Routes}} routes{{end}}, ONNX Runtime {{.ORTVersion}}, {{.Requests}} requests measured in {{printf "%.3g" .Seconds}} s after {{.Warmup}} warm-up, {{.InFlight}} in flight{{if .Interrupted}} (interrupted){{end}}. Ratio: measured ÷ predicted.</p>
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
{{end}}`))

// Section is the measured-vs-predicted section of the report (report.Section "bench").
func Section(r *Report) (report.Section, error) {
	var body bytes.Buffer
	if err := sectionTmpl.Execute(&body, r); err != nil {
		return report.Section{}, err
	}
	return report.Section{ID: "bench", Title: "Measured in ONNX Runtime (onnxpart bench)", Body: template.HTML(body.String())}, nil
}

// UpdateReport adds the measured-vs-predicted section to the report.html at path, or
// replaces the one an earlier bench added (report.PutSection).
func UpdateReport(path string, r *Report) error {
	sec, err := Section(r)
	if err != nil {
		return err
	}
	return report.PutSection(path, sec)
}
