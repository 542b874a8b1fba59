package report

// reportHTML is the page of report.html. Everything variable goes through html/template's
// contextual escaping; the page has no script and loads nothing.
const reportHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="{{.Producer}}">
<title>{{.Title}}</title>
<style>
:root { --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #ffffff; --panel: #f6f8fa; --bad: #c0392b; --good: #2e7d32; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; }
main { max-width: 1320px; margin: 0 auto; padding: 24px 28px 40px; }
h1 { font-size: 24px; margin: 0 0 4px; word-break: break-all; }
h2 { font-size: 18px; margin: 30px 0 6px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 18px 0 6px; }
p { margin: 4px 0 8px; }
.summary, .caption, .note { color: var(--muted); }
.note { font-style: italic; }
.cards { display: flex; flex-wrap: wrap; gap: 14px; margin: 16px 0 4px; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; min-width: 170px; }
.card .k { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .v { font-size: 22px; font-weight: 600; }
.card.cert { flex: 1 1 420px; border-left: 6px solid var(--good); }
.card.cert.uncertified { border-left-color: #9aa4ad; }
.card.cert .v { font-size: 19px; }
.scroll { overflow-x: auto; }
svg text { font-family: system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; fill: var(--ink); }
svg.defs { position: absolute; width: 0; height: 0; }
.box { fill-opacity: .22; stroke-width: 2; }
.box-bottleneck { stroke: var(--bad); stroke-width: 4; }
.box-title { font-size: 14px; font-weight: 700; }
.box-text { font-size: 11.5px; }
.box-value { font-size: 12.5px; font-weight: 600; }
.box-critical { stroke: #b3261e; stroke-width: 3; stroke-dasharray: 7 3; }
.box-model { font-size: 10.5px; fill: var(--muted); }
.bottleneck-label { font-size: 12px; font-weight: 700; fill: var(--bad); }
.edge path { fill: none; stroke: #555; stroke-width: 2; }
.edge.skip path { stroke-dasharray: 5 3; }
.edge-label { font-size: 11px; fill: var(--muted); paint-order: stroke; stroke: #ffffff; stroke-width: 3px; stroke-linejoin: round; }
.row-label { font-size: 12px; }
.row.highlight .row-label { fill: var(--bad); font-weight: 700; }
.band { fill: #fbe9e7; }
.tick line { stroke: #e3e8ec; }
.tick text { font-size: 10.5px; fill: var(--muted); }
.axis { stroke: #9aa4ad; }
.bar { stroke: #ffffff; stroke-width: .6; }
.bar.on-bottleneck { stroke: var(--bad); stroke-width: 1.5; }
.bar.on-critical { stroke: #b3261e; stroke-width: 1.6; }
.bar-text { font-size: 10.5px; fill: #ffffff; font-weight: 600; }
.bar-text.dark { fill: var(--ink); }
.bar-label { font-size: 12px; }
.bar-parts { font-size: 12px; fill: var(--muted); }
.track { fill: #eef1f4; stroke: #c5ced6; }
.used { fill-opacity: .85; }
.used.over { stroke: var(--bad); stroke-width: 2; }
.mem-weights { fill-opacity: 1; } .mem-activations { fill-opacity: .7; } .mem-buffers { fill-opacity: .5; }
.mem-state { fill-opacity: .35; } .mem-reserve { fill-opacity: .15; stroke: #98a2ad; stroke-dasharray: 3 2; }
.bound { fill: #76b7b2; }
.upper { fill: #e15759; }
.chart-row.best .bar-label, .chart-row.emph .bar-label { font-weight: 700; }
.legend { display: flex; gap: 18px; color: var(--muted); font-size: 12px; margin: 2px 0 6px; }
.legend svg { vertical-align: middle; margin-right: 5px; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }
table.stages td { white-space: nowrap; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--panel); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.bottleneck td, tr.critical td { background: #fdf0ee; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; vertical-align: baseline; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; word-break: break-all; }
details { margin: 4px 0; }
summary { cursor: pointer; color: var(--muted); }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(380px, 1fr)); gap: 0 28px; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; }
</style>
</head>
<body>
<svg class="defs" width="0" height="0" aria-hidden="true"><defs>
<pattern id="hatch-comm" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#dde3e8"></rect><line x1="0" y1="0" x2="0" y2="6" stroke="#6b7785" stroke-width="2.4"></line></pattern>
<pattern id="hatch-overflow" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><rect width="6" height="6" fill="#fde3cf"></rect><line x1="0" y1="0" x2="0" y2="6" stroke="#e07b39" stroke-width="2.4"></line></pattern>
<marker id="arrowhead" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"></path></marker>
</defs></svg>
<main>
<header>
<h1>{{.Title}}</h1>
<p class="summary">{{.Summary}} · {{.Model.File}}: {{.Model.Nodes}} nodes, {{.Model.FLOPs}}, params {{.Model.Params}}</p>
</header>

<section class="cards" id="headline">
<div class="card cert{{if not .Certificate.Present}} uncertified{{end}}" id="certificate">
<div class="k">certificate</div>
<div class="v">{{.Certificate.Headline}}</div>
<div class="caption">{{.Certificate.Detail}}</div>
</div>
{{- range .Headline}}
<div class="card"><div class="k">predicted {{.K}}</div><div class="v">{{.V}}</div></div>
{{- end}}
</section>
{{- if .PredictionNote}}
<p class="note" id="predictions-absent">{{.PredictionNote}}</p>
{{- end}}

<section id="pipeline">
<h2>Pipeline</h2>
<p class="caption">Stages in pipeline order, boxes sized by {{.Pipeline.SizedBy}}; arrows carry the bytes one inference sends between stages (dashed: to a later, non-adjacent stage). Hover for details.</p>
<div class="scroll">
<svg class="pipeline" width="{{f1 .Pipeline.Width}}" height="{{f1 .Pipeline.Height}}" viewBox="0 0 {{f1 .Pipeline.Width}} {{f1 .Pipeline.Height}}" role="img" aria-label="pipeline diagram">
{{- range .Pipeline.Arrows}}
<g class="{{.Class}}"><title>{{.Title}}</title><path d="{{.D}}" marker-end="url(#arrowhead)"></path>{{range .Labels}}<text x="{{f1 .X}}" y="{{f1 .Y}}" text-anchor="{{.Anchor}}" class="{{.Class}}">{{.Text}}</text>{{end}}</g>
{{- end}}
{{- range .Pipeline.Boxes}}
<g class="stage" data-stage="{{.Index}}"{{if .Bottleneck}} data-bottleneck="true"{{end}}{{if .Critical}} data-critical="true"{{end}}><title>{{.Title}}</title><rect x="{{f1 .X}}" y="{{f1 .Y}}" width="{{f1 .W}}" height="{{f1 .H}}" rx="7" fill="{{.Fill}}" stroke="{{.Fill}}" class="box{{if .Bottleneck}} box-bottleneck{{end}}{{if .Critical}} box-critical{{end}}"></rect>
{{- range .Lines}}<text x="{{f1 .X}}" y="{{f1 .Y}}" text-anchor="{{.Anchor}}" class="{{.Class}}">{{.Text}}</text>{{end}}</g>
{{- end}}
{{- range .Pipeline.Texts}}
<text x="{{f1 .X}}" y="{{f1 .Y}}" text-anchor="{{.Anchor}}" class="{{.Class}}">{{.Text}}</text>
{{- end}}
</svg>
</div>
{{- if .Pipeline.Note}}
<p class="caption" id="pipeline-note">{{.Pipeline.Note}}</p>
{{- end}}
{{- if .Pipeline.Critical}}
<p class="caption" id="critical-path">{{.Pipeline.Critical}}</p>
{{- end}}
</section>

{{- with .Workload}}
<section id="workload">
<h2>Workload</h2>
<p class="caption">{{.Caption}}</p>
<table class="workload">
<tr><th>phase</th><th>dims</th><th>calls per request</th><th>bottleneck per call</th><th>alone</th><th>latency per call</th>{{range .Stages}}<th>stage {{.}}</th>{{end}}</tr>
{{- range .Rows}}
<tr><td>{{.Name}}</td><td>{{.Dims}}</td><td class="num">{{.Weight}}</td><td class="num">{{.Bottleneck}}</td><td class="num">{{.Rate}}</td><td class="num">{{.Latency}}</td>{{range .StageS}}<td class="num">{{.}}</td>{{end}}</tr>
{{- end}}
</table>
</section>
{{- end}}

{{- with .Batch}}
<section id="batch">
<h2>Batch</h2>
<p class="caption">{{.Caption}}</p>
<table class="batch">
<tr><th>device</th><th>inputs</th><th>ops</th><th>busy</th></tr>
{{- range .Devices}}
<tr><td><span class="swatch" style="background: {{.Fill}}"></span>{{.Name}}</td><td class="num">{{.Inputs}}</td><td class="num">{{.Ops}}</td><td class="num">{{.Busy}}</td></tr>
{{- end}}
</table>
<table class="routes">
<tr><th>route</th><th>inputs</th><th>granules</th><th>stages on</th><th>directory</th></tr>
{{- range .Routes}}
<tr><td>{{.Index}}</td><td class="num">{{.Inputs}}</td><td>{{.Granules}}</td><td>{{.Devices}}</td><td>{{.Dir}}</td></tr>
{{- end}}
</table>
</section>
{{- end}}

<section id="timeline">
<h2>{{.TimelineTitle}}</h2>
{{- with .OneInference}}{{template "gantt" .}}{{else}}
<p class="note">{{.OneNote}}</p>
{{- end}}
{{- with .Steady}}
<h3>Steady-state pipeline</h3>
{{template "gantt" .}}
{{- end}}
{{- if .SteadyNote}}
<p class="note">{{.SteadyNote}}</p>
{{- end}}
</section>

<section id="memory">
<h2>Memory per device</h2>
{{- with .Memory.Chart}}{{template "bars" .}}{{end}}
{{- if .Memory.Note}}
<p class="note">{{.Memory.Note}}</p>
{{- end}}
</section>

<section id="bounds">
<h2>Lower bounds</h2>
{{- with .Bounds}}
<p class="caption">Each bound is proven: no {{.Word}} of this model on these devices is faster. The best one certifies the plan; the red bar is the plan's predicted time.</p>
{{template "bars" .Chart}}
<table class="bounds">
<tr><th>method</th><th>lower bound</th><th>of the plan</th>{{if .Timed}}<th>computed in</th>{{end}}</tr>
{{- $timed := .Timed}}
{{- range .Rows}}
<tr{{if .Best}} class="best"{{end}}><td>{{.Method}}{{if .Best}} <strong>(best)</strong>{{end}}</td><td class="num">{{.Value}}</td><td class="num">{{.Share}}</td>{{if $timed}}<td class="num">{{.Seconds}}</td>{{end}}</tr>
{{- end}}
</table>
{{- else}}
<p class="note">No lower bounds in this manifest: the split is not certified.</p>
{{- end}}
</section>

<section id="stages">
<h2>Stages</h2>
<table class="stages">
<tr><th>stage</th><th>device</th><th>provider</th><th>ops</th><th>FLOPs</th><th>params</th><th>weights</th><th>inputs</th><th>outputs</th><th>call</th><th>compute</th><th>comm</th><th>weight streaming</th><th>total</th><th>share</th><th>file</th></tr>
{{- range .Stages}}
<tr{{if .Bottleneck}} class="bottleneck"{{else if .Critical}} class="critical"{{end}}><td class="num">{{.Index}}{{if .Bottleneck}} ◀{{else if .Critical}} ◆{{end}}</td><td><span class="swatch" style="background: {{.Fill}}"></span>{{.Device}}</td><td title="{{.Provider}}">{{.ProviderShort}}</td><td class="num">{{.Nodes}}</td><td class="num">{{.FLOPs}}</td><td class="num">{{.Params}}</td><td class="num">{{.Weights}}</td><td class="num">{{.Inputs}}</td><td class="num">{{.Outputs}}</td><td class="num">{{.Call}}</td><td class="num">{{.Compute}}</td><td class="num">{{.Comm}}</td><td class="num">{{.Overflow}}</td><td class="num">{{.Total}}</td><td class="num">{{.Share}}</td><td class="mono">{{.File}}</td></tr>
{{- end}}
</table>
{{- if not .HasStagePred}}
<p class="note">Per-stage predicted times are absent.</p>
{{- end}}
<details><summary>Nodes of each stage</summary>
{{- range .Stages}}
<p><strong>stage {{.Index}}</strong> ({{.Nodes}} nodes{{if .Duplicated}}, {{.Duplicated}} also computed elsewhere{{end}}): <span class="mono">{{.NodeList}}</span></p>
{{- end}}
</details>
<h3>Transfers</h3>
{{- if .Transfers}}
<details{{if le (len .Transfers) 40}} open{{end}}><summary>{{len .Transfers}} tensors cross stage boundaries</summary>
<table class="transfers">
<tr><th>tensor</th><th>from</th><th>to</th><th>bytes</th></tr>
{{- range .Transfers}}
<tr><td class="mono">{{.Tensor}}</td><td class="num">{{.From}}</td><td class="num">{{.To}}</td><td class="num">{{.Bytes}}</td></tr>
{{- end}}
</table>
</details>
{{- else}}
<p class="note">No tensor crosses a stage boundary.</p>
{{- end}}
</section>

<section id="model">
<h2>Model</h2>
<div class="grid">
<div>
<table class="model">
<tr><th>file</th><td class="mono">{{.Model.File}}</td></tr>
<tr><th>path</th><td class="mono">{{.Model.Path}}</td></tr>
<tr><th>sha256</th><td class="mono">{{.Model.SHA256}}</td></tr>
<tr><th>size</th><td>{{.Model.FileBytes}}{{if .Model.ExternalData}} (+ external data){{end}}</td></tr>
<tr><th>nodes</th><td>{{.Model.Nodes}}</td></tr>
<tr><th>FLOPs</th><td>{{.Model.FLOPs}}</td></tr>
<tr><th>params</th><td>{{.Model.Params}}</td></tr>
<tr><th>IR version</th><td>{{.Model.IRVersion}}</td></tr>
<tr><th>opsets</th><td>{{range $i, $o := .Model.Opsets}}{{if $i}}, {{end}}{{$o.K}} {{$o.V}}{{end}}</td></tr>
{{- if .Model.Dims}}
<tr><th>bound dims</th><td>{{range $i, $d := .Model.Dims}}{{if $i}}, {{end}}{{$d.K}} = {{$d.V}}{{end}}</td></tr>
{{- end}}
{{- if .Model.Symbolic}}
<tr><th>symbolic dims</th><td>{{.Model.Symbolic}}</td></tr>
{{- end}}
</table>
</div>
<div>
<table class="split">
{{- range .Split}}
<tr><th>{{.K}}</th><td>{{.V}}</td></tr>
{{- end}}
{{- range .Solver}}
<tr><th>solver {{.K}}</th><td>{{.V}}</td></tr>
{{- end}}
</table>
<table class="devices">
<tr><th>device</th><th>provider</th><th>kind</th><th>memory</th><th>stages</th></tr>
{{- range .Devices}}
<tr><td><span class="swatch" style="background: {{.Fill}}"></span>{{.Name}}</td><td>{{.Provider}}</td><td>{{.Kind}}</td><td class="num">{{.Memory}}</td><td>{{.Stages}}</td></tr>
{{- end}}
</table>
</div>
</div>
<h3>Inputs and outputs</h3>
<table class="io">
<tr><th></th><th>name</th><th>dtype</th><th>shape</th><th>bytes</th><th>stage</th></tr>
{{- range .Model.Inputs}}
<tr><td>input</td><td class="mono">{{.Name}}</td><td>{{.DType}}</td><td class="mono">{{.Shape}}</td><td class="num">{{.Bytes}}</td><td>—</td></tr>
{{- end}}
{{- range .Model.Outputs}}
<tr><td>output</td><td class="mono">{{.Name}}</td><td>{{.DType}}</td><td class="mono">{{.Shape}}</td><td class="num">{{.Bytes}}</td><td>{{.Stage}}</td></tr>
{{- end}}
</table>
</section>
{{- if .Notes}}

<section id="notes">
<h2>Notes</h2>
<ul>
{{- range .Notes}}
<li>{{.}}</li>
{{- end}}
</ul>
</section>
{{- end}}

{{range .Sections}}{{.}}{{end}}{{sectionsEnd}}
<footer>Generated by {{.Producer}} from manifest.json. Times are predictions of onnxpart's cost model, {{if .Batch}}for the batch (stages: route 0's share){{else}}per inference{{end}}.</footer>
</main>
</body>
</html>
{{define "gantt" -}}
<div class="scroll">
<svg class="gantt" width="{{f1 .Width}}" height="{{f1 .Height}}" viewBox="0 0 {{f1 .Width}} {{f1 .Height}}" role="img" aria-label="timeline">
{{- range .Rows}}
<g class="row{{if .Highlight}} highlight{{end}}"{{if ge .StageIndex 0}} data-row-stage="{{.StageIndex}}"{{end}}>{{if .Highlight}}<rect class="band" x="{{f1 .BandX}}" y="{{f1 .BandY}}" width="{{f1 .BandW}}" height="{{f1 .BandH}}"><title>{{.Title}}</title></rect>{{end}}<text x="180" y="{{f1 .LabelY}}" text-anchor="end" class="row-label">{{.Label}}</text></g>
{{- end}}
{{- range .Ticks}}
<g class="tick"><line x1="{{f1 .X}}" y1="{{f1 .Y1}}" x2="{{f1 .X}}" y2="{{f1 .Y2}}"></line><text x="{{f1 .X}}" y="{{f1 .LabelY}}" text-anchor="middle">{{.Label}}</text></g>
{{- end}}
<line class="axis" x1="190" y1="{{f1 .AxisY}}" x2="{{f1 .Width}}" y2="{{f1 .AxisY}}"></line>
{{- range .Bars}}
<rect x="{{f1 .X}}" y="{{f1 .Y}}" width="{{f1 .W}}" height="{{f1 .H}}" fill="{{.Fill}}" class="{{.Class}}"><title>{{.Title}}</title></rect>
{{- end}}
{{- range .Texts}}
<text x="{{f1 .X}}" y="{{f1 .Y}}" text-anchor="{{.Anchor}}" class="{{.Class}}">{{.Text}}</text>
{{- end}}
</svg>
</div>
{{- if .Legend}}
<div class="legend">{{range .Legend}}<span><svg width="22" height="12"><rect width="22" height="12" fill="{{.Fill}}" stroke="#9aa4ad"></rect></svg>{{.Label}}</span>{{end}}</div>
{{- end}}
<p class="caption">{{.Caption}}</p>
{{- end}}
{{define "bars" -}}
<div class="scroll">
<svg class="bars" width="{{f1 .Width}}" height="{{f1 .Height}}" viewBox="0 0 {{f1 .Width}} {{f1 .Height}}" role="img" aria-label="bar chart">
{{- range .Rows}}
<g class="chart-row{{if .Best}} best{{end}}{{if .Emphasis}} emph{{end}}{{if .Over}} over{{end}}"><text x="180" y="{{f1 .LabelY}}" text-anchor="end" class="row-label">{{.Label}}</text>{{with .Track}}<rect x="{{f1 .X}}" y="{{f1 .Y}}" width="{{f1 .W}}" height="{{f1 .H}}" class="{{.Class}}"></rect>{{end}}{{with .Bar}}<rect x="{{f1 .X}}" y="{{f1 .Y}}" width="{{f1 .W}}" height="{{f1 .H}}"{{if .Fill}} fill="{{.Fill}}"{{end}} class="{{.Class}}"><title>{{.Title}}</title></rect>{{end}}{{range .Parts}}<rect x="{{f1 .X}}" y="{{f1 .Y}}" width="{{f1 .W}}" height="{{f1 .H}}" fill="{{.Fill}}" class="{{.Class}}"><title>{{.Title}}</title></rect>{{end}}{{with .Text}}<text x="{{f1 .X}}" y="{{f1 .Y}}" text-anchor="{{.Anchor}}" class="{{.Class}}">{{.Text}}</text>{{end}}{{with .Sub}}<text x="{{f1 .X}}" y="{{f1 .Y}}" text-anchor="{{.Anchor}}" class="{{.Class}}">{{.Text}}</text>{{end}}</g>
{{- end}}
</svg>
</div>
{{- end}}`
