package report

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/internal/atomicfs"
	"github.com/onnxpart/onnxpart/internal/outdir"
	"github.com/onnxpart/onnxpart/internal/units"
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

// ---- view model ----

type reportView struct {
	Title, Producer string
	Sections        []template.HTML
	Summary         string
	Model           modelView
	Split           []kv
	Solver          []kv
	HasPredicted    bool
	Headline        []kv
	PredictionNote  string
	Certificate     certView
	Pipeline        pipelineView
	OneInference    *gantt
	OneNote         string
	Steady          *gantt
	SteadyNote      string
	Memory          memoryView
	Bounds          *boundsView
	Stages          []stageRow
	HasStagePred    bool
	Transfers       []transferRow
	Notes           []string
	Devices         []deviceRow
	TimelineTitle   string
	Batch           *batchView
	Workload        *workloadView
}

// batchView is a batched plan's shares and routes.
type batchView struct {
	Caption string
	Devices []batchDeviceRow
	Routes  []routeRow
}

type batchDeviceRow struct {
	Name, Fill, Busy string
	Inputs, Ops      int
}

type routeRow struct {
	Index, Inputs          int
	Granules, Devices, Dir string
}

func buildBatch(m *emit.Manifest, color map[string]string) *batchView {
	b := m.Batch
	if b == nil {
		return nil
	}
	v := &batchView{Caption: fmt.Sprintf("A batch of %d inputs in %d granules of %d, %s for the batch (%s). Each granule follows one route; this directory holds route 0's stages, every other route its own directory.",
		b.Inputs, b.Granules, b.GranuleInputs, fmtSeconds(b.MakespanS), fmtRate(b.ThroughputPerS))}
	for _, d := range b.Devices {
		v.Devices = append(v.Devices, batchDeviceRow{Name: deviceLabel(m, d.Device), Fill: color[d.Device], Busy: fmtSeconds(d.BusyS), Inputs: d.Inputs, Ops: d.Ops})
	}
	for _, r := range b.Routes {
		v.Routes = append(v.Routes, routeRow{Index: r.Index, Inputs: r.Inputs, Granules: strings.ReplaceAll(emit.GranuleList(r.Granules), ",", ", "),
			Devices: strings.Join(r.Devices, " → "), Dir: r.Dir})
	}
	return v
}

type kv struct{ K, V string }

type modelView struct {
	File, Path, SHA256       string
	FileBytes, Params, FLOPs string
	Nodes                    int
	IRVersion                int64
	Opsets, Dims             []kv
	Symbolic                 string
	ExternalData             bool
	Inputs, Outputs          []tensorRow
}

type tensorRow struct {
	Name, DType, Shape, Bytes, Stage string
}

type deviceRow struct {
	Name, Provider, Kind, Memory, Fill string
	Stages                             string
}

type stageRow struct {
	Index                                 int
	Device, Provider, ProviderShort, Fill string
	Nodes                                 int
	FLOPs, Params                         string
	Weights                               int
	Inputs, Outputs                       string
	Call, Compute, Comm, Overflow, Total  string
	Share                                 string
	Bottleneck, Critical                  bool
	File                                  string
	NodeList                              string
	Duplicated                            int
}

type transferRow struct {
	Tensor   string
	From, To int
	Bytes    string
}

type certView struct {
	Present  bool
	Headline string
	Detail   string
	Optimal  bool
}

type boundsView struct {
	Chart *barChart
	Rows  []boundRow
	// Timed is set when some bound has its computing time.
	Timed bool
	// Word is what the bounds are about: "split" or "placement".
	Word string
}

type boundRow struct {
	Method, Value, Share, Seconds string
	Best                          bool
}

type memoryView struct {
	Chart *barChart
	Note  string
}

// ---- SVG primitives ----

type svgText struct {
	X, Y   float64
	Text   string
	Anchor string // start, middle, end
	Class  string
}

type svgRect struct {
	X, Y, W, H float64
	Fill       string
	Class      string
	Title      string
}

type pipelineView struct {
	Width, Height float64
	Boxes         []stageBox
	Arrows        []arrow
	Texts         []svgText
	SizedBy       string
	// Critical names the stages on the critical path (latency and batched plans); Note says
	// what a batched plan's diagram shows.
	Critical, Note string
}

type stageBox struct {
	Index      int
	X, Y, W, H float64
	Fill       string
	Bottleneck bool
	Critical   bool
	Title      string
	Lines      []svgText
}

type arrow struct {
	D      string
	Labels []svgText
	Title  string
	Class  string
}

type gantt struct {
	Width, Height float64
	Rows          []ganttRow
	Bars          []svgRect
	Texts         []svgText
	Ticks         []tick
	AxisY         float64
	Legend        []legendItem
	Caption       string
}

type ganttRow struct {
	Label      string
	Y, H       float64
	LabelY     float64
	Highlight  bool
	BandX      float64
	BandY      float64
	BandW      float64
	BandH      float64
	Title      string
	StageIndex int
}

type tick struct {
	X      float64
	Y1, Y2 float64
	Label  string
	LabelY float64
}

type legendItem struct {
	Fill, Label string
}

// barChart is a horizontal bar chart: one track per row (the full scale, e.g. capacity)
// with the value drawn over it.
type barChart struct {
	Width, Height float64
	Rows          []barRow
}

type barRow struct {
	Label      string
	LabelY     float64
	Track, Bar svgRect
	Parts      []svgRect // segments of Bar (a stage memory's parts), drawn over it
	Marker     *svgRect
	Text       svgText
	// Sub is a second line under the bar (a stage memory's parts), nil for none: too long to
	// stand beside the bar within the page's width.
	Sub                  *svgText
	Over, Best, Emphasis bool
}

// Layout constants (pixels).
const (
	reportWidth  = 1260.0
	ganttLabelW  = 190.0
	ganttRowH    = 24.0
	ganttRowGap  = 8.0
	boxMinW      = 132.0
	boxH         = 108.0
	boxGap       = 70.0
	pipeMarginX  = 64.0
	barChartRowH = 34.0
	// memPartsLineH is the extra height of a memory bar with its parts on a line below it.
	memPartsLineH = 18.0
)

// palette colours devices (Tableau 10).
var palette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#e15759", "#bab0ac"}

// inferencePalette colours the inferences of the steady-state chart.
var inferencePalette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7"}

func buildReport(m *emit.Manifest, opt Options) *reportView {
	v := &reportView{Title: opt.Title, Producer: opt.Producer}
	for _, sec := range opt.Sections {
		v.Sections = append(v.Sections, sec.render())
	}
	if v.Title == "" {
		v.Title = "onnxpart plan: " + m.Model.File
	}
	if v.Producer == "" {
		v.Producer = "onnxpart"
	}
	devColor := deviceColors(m)
	v.Model = buildModelView(m)
	v.Summary = summaryLine(m)
	v.Split = splitRows(m)
	if s := m.Solver; s != nil {
		v.Solver = []kv{{"algorithm", s.Algorithm}}
		if s.Seed != nil {
			v.Solver = append(v.Solver, kv{"seed", strconv.FormatInt(*s.Seed, 10)})
		}
		if s.Seconds > 0 {
			v.Solver = append(v.Solver, kv{"time", fmtSeconds(s.Seconds)})
		}
	}
	stagePred := allStagePredicted(m)
	bott := bottleneckStage(m)
	crit := criticalStages(m)
	if p := m.Predicted; p != nil {
		v.HasPredicted = true
		// The objective's own figures only: a latency plan or a batch has no bottleneck stage.
		switch {
		case m.Batch != nil:
			b := m.Batch
			v.Headline = []kv{{fmt.Sprintf("batch of %d", b.Inputs), fmtSeconds(b.MakespanS)}, {"throughput", fmtRate(b.ThroughputPerS)}}
		case len(p.Workload) > 0:
			v.Headline = []kv{{"busiest stage per request", fmtSeconds(p.BottleneckS)}, {"requests", fmtRate(p.ThroughputPerS)}, {"latency per request", fmtSeconds(p.LatencyS)}}
		case m.Objective == "latency":
			v.Headline = []kv{{"latency", fmtSeconds(p.LatencyS)}, {"throughput, one at a time", fmtRate(p.ThroughputPerS)}}
		default:
			v.Headline = []kv{{"bottleneck", fmtSeconds(p.BottleneckS)}, {"throughput", fmtRate(p.ThroughputPerS)}, {"latency", fmtSeconds(p.LatencyS)}}
		}
	} else {
		v.PredictionNote = "Predictions absent: this manifest has no predicted times (a manual split, or a planner that did not price the plan)."
	}
	v.Workload = buildWorkload(m)
	v.Certificate = certificate(m)
	v.Pipeline = buildPipeline(m, devColor, stagePred, bott, crit)
	switch {
	case len(m.Timeline) > 0:
		v.OneInference = timelineGantt(m, devColor)
	case stagePred:
		v.OneInference = oneInferenceGantt(m, devColor)
	default:
		v.OneNote = "No timeline: the manifest has no per-stage predicted times."
	}
	v.TimelineTitle = "Timeline of one inference"
	v.Batch = buildBatch(m, devColor)
	if m.Batch != nil {
		v.TimelineTitle = fmt.Sprintf("Timeline of a batch of %d", m.Batch.Inputs)
	} else if stagePred && m.Objective != "latency" && len(m.Stages) > 1 {
		v.Steady = steadyGantt(m, bott)
	} else if stagePred && m.Objective != "latency" {
		v.SteadyNote = "One stage: inferences run one after another."
	}
	v.Memory = buildMemory(m, devColor)
	v.Bounds = buildBounds(m)
	v.HasStagePred = stagePred
	v.Stages = stageRows(m, devColor, bott, crit)
	for _, t := range m.Transfers {
		v.Transfers = append(v.Transfers, transferRow{Tensor: t.Tensor, From: t.From, To: t.To, Bytes: units.Bytes(t.Bytes)})
	}
	v.Notes = m.Notes
	v.Devices = deviceRows(m, devColor)
	return v
}

func summaryLine(m *emit.Manifest) string {
	devs := len(deviceNames(m))
	s := fmt.Sprintf("%d stage%s on %d device%s", len(m.Stages), plural(len(m.Stages)), devs, plural(devs))
	if m.Objective != "" {
		s += ", objective " + string(m.Objective)
	}
	if m.Split.Method != "" {
		s += ", split by " + m.Split.Method
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func buildModelView(m *emit.Manifest) modelView {
	mi := m.Model
	mv := modelView{File: mi.File, Path: mi.Path, SHA256: mi.SHA256, FileBytes: units.Bytes(mi.FileBytes),
		Params: units.Bytes(mi.ParamsBytes), FLOPs: fmtFLOPs(mi.FLOPs), Nodes: mi.Nodes, IRVersion: mi.IRVersion,
		Symbolic: strings.Join(mi.SymbolicDims, ", "), ExternalData: mi.ExternalData}
	for _, k := range sortedStringKeys(mi.Opsets) {
		mv.Opsets = append(mv.Opsets, kv{k, strconv.FormatInt(mi.Opsets[k], 10)})
	}
	for _, k := range sortedStringKeys(mi.Dims) {
		mv.Dims = append(mv.Dims, kv{k, strconv.FormatInt(mi.Dims[k], 10)})
	}
	for _, t := range mi.Inputs {
		mv.Inputs = append(mv.Inputs, tensorRowOf(t, "stage"))
	}
	for _, t := range mi.Outputs {
		mv.Outputs = append(mv.Outputs, tensorRowOf(t, "stage"))
	}
	return mv
}

func sortedStringKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func tensorRowOf(t emit.TensorRef, _ string) tensorRow {
	st := "input"
	if t.Stage >= 0 {
		st = strconv.Itoa(t.Stage)
	}
	return tensorRow{Name: t.Name, DType: t.DType, Shape: shapeText(t.Shape), Bytes: units.Bytes(t.Bytes), Stage: st}
}

func shapeText(s emit.Shape) string {
	if s == nil {
		return "unknown rank"
	}
	parts := make([]string, len(s))
	for i, d := range s {
		if d.Known() {
			parts[i] = strconv.FormatInt(d.Value, 10)
		} else {
			parts[i] = d.String()
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func splitRows(m *emit.Manifest) []kv {
	rows := []kv{{"method", orDash(m.Split.Method)}}
	if len(m.Split.Cuts) > 0 {
		rows = append(rows, kv{"cuts", strings.Join(m.Split.Cuts, ", ")})
	}
	if m.Split.RequestedStages > 0 {
		rows = append(rows, kv{"requested stages", strconv.Itoa(m.Split.RequestedStages)})
	}
	rows = append(rows, kv{"objective", orDash(string(m.Objective))})
	return rows
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// deviceNames lists the devices of the manifest and then any device a stage or timeline
// event names that the device list lacks, in order of first appearance.
func deviceNames(m *emit.Manifest) []string {
	var names []string
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for _, d := range m.Devices {
		add(d.Name)
	}
	for _, s := range m.Stages {
		add(s.Device)
	}
	for _, e := range m.Timeline {
		add(e.Device)
		if e.ToDevice != "" {
			add(e.ToDevice)
		}
	}
	return names
}

func deviceColors(m *emit.Manifest) map[string]string {
	c := map[string]string{}
	for i, n := range deviceNames(m) {
		c[n] = palette[i%len(palette)]
	}
	return c
}

func deviceRows(m *emit.Manifest, color map[string]string) []deviceRow {
	info := map[string]emit.DeviceInfo{}
	for _, d := range m.Devices {
		info[d.Name] = d
	}
	var rows []deviceRow
	for _, n := range deviceNames(m) {
		d := info[n]
		var st []string
		for _, s := range m.Stages {
			if s.Device == n {
				st = append(st, strconv.Itoa(s.Index))
			}
		}
		mem := "—"
		if d.MemoryBytes > 0 {
			mem = units.Bytes(d.MemoryBytes)
		}
		rows = append(rows, deviceRow{Name: deviceLabel(m, n), Provider: orDash(d.Provider), Kind: orDash(d.Kind), Memory: mem,
			Fill: color[n], Stages: strings.Join(st, ", ")})
	}
	return rows
}

func allStagePredicted(m *emit.Manifest) bool {
	for _, s := range m.Stages {
		if s.Predicted == nil {
			return false
		}
	}
	return len(m.Stages) > 0
}

// bottleneckStage is the stage with the largest predicted total (the first on ties), or -1
// without per-stage predictions or with a single stage.
func bottleneckStage(m *emit.Manifest) int {
	// Only a pipeline has one: a latency plan has a critical path instead, and a batched
	// plan's time is the batch's.
	if !allStagePredicted(m) || len(m.Stages) < 2 || m.Objective == "latency" || m.Batch != nil {
		return -1
	}
	b := 0
	for i, s := range m.Stages {
		if s.Predicted.TotalS > m.Stages[b].Predicted.TotalS {
			b = i
		}
	}
	return b
}

// Figures are a plan's headline numbers for its objective, read from the manifest; the
// report, the CLI's text and its JSON all state these. Upper is what the planner minimised:
// the bottleneck stage's time for a pipeline (throughput), the time of one input from
// start to end for a placement (latency), the time of the whole batch for a batched plan.
// Gap = 1 − Lower/Upper; the plan is at most Slower = Upper/Lower − 1 slower than the best
// possible (README, "How far from the best").
type Figures struct {
	// What names Upper: "bottleneck stage", "latency", "time of the batch of 16".
	What string
	// Word names what the planner chose: "split", "placement", "batched placement".
	Word                      string
	Upper, Lower, Gap, Slower float64
	// Method is the best lower bound's method.
	Method string
}

// PlanFigures returns the figures of the manifest's plan; Upper is 0 without predictions,
// Lower 0 without bounds.
func PlanFigures(m *emit.Manifest) Figures {
	f := Figures{What: "bottleneck stage", Word: planWord(m)}
	if p := m.Predicted; p != nil {
		f.Upper = p.BottleneckS
		if m.Objective == "latency" {
			f.What, f.Upper = "latency", p.LatencyS
		}
	}
	if m.Batch != nil {
		f.What, f.Upper = fmt.Sprintf("time of the batch of %d", m.Batch.Inputs), m.Batch.MakespanS
	}
	if b := m.Bounds; b != nil {
		f.Lower, f.Method, f.Gap = b.LowerBoundS, b.Method, b.Gap
		if f.Upper <= 0 && b.Gap < 1 && b.LowerBoundS > 0 {
			f.Upper = b.LowerBoundS / (1 - b.Gap)
		}
	}
	if f.Lower > 0 && f.Upper > 0 {
		f.Gap = math.Max(0, 1-f.Lower/f.Upper)
		f.Slower = math.Max(0, f.Upper/f.Lower-1)
	}
	return f
}

// GapWords states both figures, labelled: "at most 15.8% slower than the best possible
// placement (upper/lower − 1); gap 13.6% (1 − lower/upper)".
func (f Figures) GapWords() string {
	return fmt.Sprintf("at most %s slower than the best possible %s (upper/lower − 1); gap %s (1 − lower/upper)",
		fmtPercent(f.Slower), f.Word, fmtPercent(f.Gap))
}

// criticalStages marks the stages (by position in m.Stages) on the critical path of a
// latency or batched plan's timeline; nil for pipelines.
func criticalStages(m *emit.Manifest) map[int]bool {
	if m.Objective != "latency" && m.Batch == nil {
		return nil
	}
	pos := map[int]int{}
	for i, s := range m.Stages {
		pos[s.Index] = i
	}
	c := map[int]bool{}
	for _, idx := range CriticalStages(m) {
		c[pos[idx]] = true
	}
	return c
}

// certificate states what the lower bound proves: a plan whose predicted time is U, with a
// proven lower bound L on the best possible time, is at most U/L − 1 slower than optimal.
func certificate(m *emit.Manifest) certView {
	b := m.Bounds
	if b == nil {
		return certView{Headline: "Not certified", Detail: "The manifest has no lower bound (manual splits have none), so nothing is proven about how far this split is from the best one."}
	}
	f := PlanFigures(m)
	method := ""
	if b.Method != "" {
		method = " (" + b.Method + ")"
	}
	detail := fmt.Sprintf("Predicted %s %s; best lower bound %s%s; gap 1 − lower/upper = %s.",
		f.What, fmtSeconds(f.Upper), fmtSeconds(f.Lower), method, fmtPercent(f.Gap))
	switch {
	case f.Lower <= 0 || f.Upper <= 0:
		return certView{Present: true, Headline: "No useful bound", Detail: "The lower bound is 0: nothing is proven about this split. " + detail}
	case f.Gap <= 0 || f.Upper <= f.Lower:
		return certView{Present: true, Optimal: true, Headline: "Proven optimal: no " + f.Word + " is faster", Detail: detail}
	}
	detail = fmt.Sprintf("Predicted %s %s; best lower bound %s%s; at most upper/lower − 1 = %s slower; gap 1 − lower/upper = %s.",
		f.What, fmtSeconds(f.Upper), fmtSeconds(f.Lower), method, fmtPercent(f.Slower), fmtPercent(f.Gap))
	return certView{Present: true, Headline: "At most " + fmtPercent(f.Slower) + " slower than the best possible " + f.Word, Detail: detail}
}

// planWord names what a plan chooses: a placement for latency plans (ops placed on
// devices), a split for pipelines.
func planWord(m *emit.Manifest) string {
	if m.Batch != nil {
		return "batched placement"
	}
	if m.Objective == "latency" {
		return "placement"
	}
	return "split"
}

// ---- pipeline diagram ----

// boxWidths sizes boxes proportionally to weights, with a floor of boxMinW: boxes whose
// share would fall below the floor get the floor, and the rest share what is left.
func boxWidths(w []float64, avail float64) []float64 {
	n := len(w)
	out := make([]float64, n)
	fixed := make([]bool, n)
	for {
		rest, sum, nf := avail, 0.0, 0
		for i := range w {
			if fixed[i] {
				rest -= boxMinW
				nf++
			} else {
				sum += w[i]
			}
		}
		if nf == n || sum <= 0 || rest <= 0 {
			for i := range out {
				if !fixed[i] && sum <= 0 && rest > 0 && n > nf {
					out[i] = math.Max(boxMinW, rest/float64(n-nf))
				} else {
					out[i] = boxMinW
				}
			}
			return out
		}
		scale := rest / sum
		changed := false
		for i := range w {
			if !fixed[i] && w[i]*scale < boxMinW {
				fixed[i], changed = true, true
			}
		}
		if !changed {
			for i := range w {
				if fixed[i] {
					out[i] = boxMinW
				} else {
					out[i] = w[i] * scale
				}
			}
			return out
		}
	}
}

// pipeRowMax is the most stages in one row of the pipeline diagram; longer pipelines wrap
// into rows of about equal length, read left to right, top to bottom.
func pipeRowMax() int {
	avail := reportWidth - 2*pipeMarginX
	return max(1, int((avail+boxGap)/(boxMinW+boxGap)))
}

func buildPipeline(m *emit.Manifest, color map[string]string, stagePred bool, bott int, crit map[int]bool) pipelineView {
	k := len(m.Stages)
	weights := make([]float64, k)
	sizedBy := "equal widths (no predicted times and no FLOP counts)"
	var total float64
	for i, s := range m.Stages {
		if stagePred {
			weights[i] = s.Predicted.TotalS
		} else {
			weights[i] = float64(max(s.FLOPs, 0))
		}
		total += weights[i]
	}
	switch {
	case stagePred && total > 0:
		sizedBy = "predicted time per stage"
	case !stagePred && total > 0:
		sizedBy = "FLOPs (the manifest has no predicted times)"
	}
	// Rows of at most perRow stages, about equal in count; box widths share one scale.
	rows := (k + pipeRowMax() - 1) / pipeRowMax()
	perRow := (k + rows - 1) / rows
	rowAvail := reportWidth - 2*pipeMarginX - float64(perRow-1)*boxGap
	widths := boxWidths(weights, rowAvail*float64(rows))
	if rows == 1 {
		widths = boxWidths(weights, rowAvail)
	}
	rowOf := make([]int, k)
	for i := range rowOf {
		rowOf[i] = i / perRow
	}
	for i := range widths {
		widths[i] = math.Min(widths[i], rowAvail)
	}
	// A row whose boxes would overflow shrinks its wide boxes to fit.
	for r := 0; r < rows; r++ {
		var sum, fixed float64
		for i := r * perRow; i < min(k, (r+1)*perRow); i++ {
			sum += widths[i]
			if widths[i] <= boxMinW {
				fixed += widths[i]
			}
		}
		if sum > rowAvail && sum > fixed {
			f := (rowAvail - fixed) / (sum - fixed)
			for i := r * perRow; i < min(k, (r+1)*perRow); i++ {
				if widths[i] > boxMinW {
					widths[i] = math.Max(boxMinW, widths[i]*f)
				}
			}
		}
	}

	// Transfers between the same two stages are drawn as one arrow.
	type pair struct{ from, to int }
	type flow struct {
		bytes   int64
		unknown bool
		names   []string
	}
	agg := map[pair]*flow{}
	var pairs []pair
	for _, t := range m.Transfers {
		p := pair{t.From, t.To}
		if p.from < 0 || p.to >= k || p.from >= p.to {
			continue
		}
		a := agg[p]
		if a == nil {
			a = &flow{}
			agg[p] = a
			pairs = append(pairs, p)
		}
		if t.Bytes < 0 {
			a.unknown = true
		} else {
			a.bytes += t.Bytes
		}
		a.names = append(a.names, t.Tensor)
	}
	sort.SliceStable(pairs, func(i, j int) bool {
		if pairs[i].from != pairs[j].from {
			return pairs[i].from < pairs[j].from
		}
		return pairs[i].to < pairs[j].to
	})
	// Arcs for transfers that skip stages within a row go above the boxes; transfers to a
	// later row run through lanes in the band below their row.
	arcH := func(span int) float64 { return math.Min(34+18*float64(span-2), 120) }
	arcSpace := make([]float64, rows)
	lanes := make([]int, rows)
	for r := range arcSpace {
		arcSpace[r] = 34
	}
	laneOf := map[pair]int{}
	for _, p := range pairs {
		rf, rt := rowOf[p.from], rowOf[p.to]
		switch {
		case rf == rt && p.to-p.from >= 2:
			arcSpace[rf] = math.Max(arcSpace[rf], arcH(p.to-p.from)+34)
		case rf != rt:
			laneOf[p] = lanes[rf]
			lanes[rf]++
		}
	}
	const laneH = 16.0
	maxLanes := 6
	bandH := func(r int) float64 { return 18 + laneH*float64(min(lanes[r], maxLanes)) }
	rowY := make([]float64, rows)
	y := 0.0
	for r := 0; r < rows; r++ {
		y += arcSpace[r]
		rowY[r] = y
		y += boxH
		if r < rows-1 {
			y += bandH(r)
		}
	}
	pv := pipelineView{SizedBy: sizedBy}
	x := pipeMarginX
	var width float64
	for i, s := range m.Stages {
		if i > 0 && rowOf[i] != rowOf[i-1] {
			x = pipeMarginX
		}
		w := widths[i]
		y := rowY[rowOf[i]]
		b := stageBox{Index: s.Index, X: x, Y: y, W: w, H: boxH, Fill: color[s.Device], Bottleneck: i == bott, Critical: crit[i]}
		cx := x + w/2
		chars := int((w - 10) / 6.4)
		line2 := fmt.Sprintf("%d op%s · %s", len(s.Nodes), plural(len(s.Nodes)), units.Bytes(s.ParamsBytes))
		if utf8.RuneCountInString(line2) > chars {
			line2 = fmt.Sprintf("%d op%s·%s", len(s.Nodes), plural(len(s.Nodes)), units.Bytes(s.ParamsBytes))
		}
		var line3 string
		if stagePred {
			line3 = fmtSeconds(s.Predicted.TotalS)
		} else {
			line3 = fmtFLOPs(s.FLOPs)
		}
		b.Lines = []svgText{
			{X: cx, Y: y + 20, Text: fmt.Sprintf("stage %d", s.Index), Anchor: "middle", Class: "box-title"},
			{X: cx, Y: y + 38, Text: truncate(s.Device, chars), Anchor: "middle", Class: "box-text"},
		}
		line := 55.0
		if model := deviceModel(m, s.Device); model != "" {
			b.Lines = append(b.Lines, svgText{X: cx, Y: y + 53, Text: truncate(model, int((w-8)/5.9)), Anchor: "middle", Class: "box-model"})
			line = 70
		}
		b.Lines = append(b.Lines,
			svgText{X: cx, Y: y + line, Text: truncate(line2, chars), Anchor: "middle", Class: "box-text"},
			svgText{X: cx, Y: y + line + 19, Text: truncate(line3, chars), Anchor: "middle", Class: "box-value"})
		b.Title = fmt.Sprintf("stage %d on %s (%s): %d ops, %s, params %s, %s", s.Index, deviceLabel(m, s.Device), s.Provider, len(s.Nodes),
			fmtFLOPs(s.FLOPs), units.Bytes(s.ParamsBytes), s.File)
		if stagePred {
			p := s.Predicted
			b.Title += fmt.Sprintf("; predicted compute %s, communication %s, weight streaming %s", fmtSeconds(p.ComputeS), fmtSeconds(p.CommS), fmtSeconds(p.OverflowS))
			if p.CallS > 0 {
				b.Title += ", call " + fmtSeconds(p.CallS)
			}
			b.Title += ", total " + fmtSeconds(p.TotalS)
		}
		if b.Critical {
			b.Title += "; on the critical path"
		}
		if i == bott {
			pv.Texts = append(pv.Texts, svgText{X: cx, Y: y - 8, Text: "bottleneck", Anchor: "middle", Class: "bottleneck-label"})
		}
		pv.Boxes = append(pv.Boxes, b)
		x += w + boxGap
		width = math.Max(width, x-boxGap+pipeMarginX)
	}
	// Model input and output arrows.
	first, last := pv.Boxes[0], pv.Boxes[k-1]
	inY, outY := first.Y+boxH/2, last.Y+boxH/2
	pv.Arrows = append(pv.Arrows,
		arrow{D: fmt.Sprintf("M %s %s H %s", f1(8), f1(inY), f1(first.X-4)), Class: "edge",
			Labels: []svgText{{X: 10, Y: inY - 8, Text: "input", Anchor: "start", Class: "edge-label"}}, Title: "model inputs"},
		arrow{D: fmt.Sprintf("M %s %s H %s", f1(last.X+last.W), f1(outY), f1(last.X+last.W+pipeMarginX-6)), Class: "edge",
			Labels: []svgText{{X: last.X + last.W + pipeMarginX - 8, Y: outY - 8, Text: "output", Anchor: "end", Class: "edge-label"}}, Title: "model outputs"})
	for _, p := range pairs {
		a := agg[p]
		label := units.Bytes(a.bytes)
		if a.unknown {
			label = units.Bytes(a.bytes) + "+?"
			if a.bytes == 0 {
				label = "? B"
			}
		}
		title := fmt.Sprintf("stage %d → stage %d: %d tensor%s, %s: %s", m.Stages[p.from].Index, m.Stages[p.to].Index, len(a.names), plural(len(a.names)), label, strings.Join(a.names, ", "))
		fb, tb := pv.Boxes[p.from], pv.Boxes[p.to]
		rf, rt := rowOf[p.from], rowOf[p.to]
		switch {
		case rf != rt:
			// Down from the sender into its row's band, across, and down into the receiver.
			lane := laneOf[p] % maxLanes
			ly := fb.Y + boxH + 12 + laneH*float64(lane)
			x1 := fb.X + fb.W*(0.5+0.08*float64(lane%5))
			x2 := tb.X + tb.W*(0.35+0.06*float64(lane%5))
			cls := "edge wrap"
			if p.to != p.from+1 {
				cls = "edge wrap skip"
			}
			pv.Arrows = append(pv.Arrows, arrow{
				D:      fmt.Sprintf("M %s %s V %s H %s V %s", f1(x1), f1(fb.Y+boxH), f1(ly), f1(x2), f1(tb.Y-3)),
				Class:  cls,
				Labels: []svgText{{X: (x1 + x2) / 2, Y: ly - 3, Text: label, Anchor: "middle", Class: "edge-label"}}, Title: title})
		case p.to == p.from+1:
			midY := fb.Y + boxH/2
			x1, x2 := fb.X+fb.W, tb.X-4
			ar := arrow{D: fmt.Sprintf("M %s %s H %s", f1(x1), f1(midY), f1(x2)), Class: "edge", Title: title,
				Labels: []svgText{{X: (x1 + x2) / 2, Y: midY - 8, Text: label, Anchor: "middle", Class: "edge-label"}}}
			if len(a.names) > 1 {
				ar.Labels = append(ar.Labels, svgText{X: (x1 + x2) / 2, Y: midY + 16, Text: fmt.Sprintf("%d tensors", len(a.names)), Anchor: "middle", Class: "edge-label"})
			}
			pv.Arrows = append(pv.Arrows, ar)
		default:
			h := arcH(p.to - p.from)
			y := fb.Y
			// Arcs of different spans leave a box at different points.
			x1, x2 := fb.X+fb.W*math.Min(0.5+0.1*float64(p.to-p.from-1), 0.9), tb.X+tb.W*0.3
			pv.Arrows = append(pv.Arrows, arrow{
				D:      fmt.Sprintf("M %s %s C %s %s, %s %s, %s %s", f1(x1), f1(y), f1(x1), f1(y-h), f1(x2), f1(y-h), f1(x2), f1(y-3)),
				Class:  "edge skip",
				Labels: []svgText{{X: (x1 + x2) / 2, Y: y - h*0.75 - 6, Text: label, Anchor: "middle", Class: "edge-label"}}, Title: title})
		}
	}
	if crit != nil {
		var on []string
		for i, s := range m.Stages {
			if crit[i] {
				on = append(on, strconv.Itoa(s.Index))
			}
		}
		if len(on) > 0 {
			pv.Critical = fmt.Sprintf("Critical path (dashed red outline, ◆ in the table): stage%s %s, the chain of work and transfers that sets the %s; shortening another stage does not shorten it.",
				plural(len(on)), strings.Join(on, ", "), PlanFigures(m).What)
		}
	}
	if b := m.Batch; b != nil && len(b.Routes) > 0 {
		pv.Note = fmt.Sprintf("Route 0 of %d (%d of the batch's %d inputs); the other routes' stages are in their directories (see Batch). A stage's time is its work and transfers for the route's share of the batch; they overlap in the schedule, so the batch takes %s.",
			len(b.Routes), b.Routes[0].Inputs, b.Inputs, fmtSeconds(b.MakespanS))
	}
	pv.Width = width
	pv.Height = rowY[rows-1] + boxH + 14
	return pv
}

// deviceModel is the product name of a device the manifest knows, without the vendor
// prefix, or "".
func deviceModel(m *emit.Manifest, name string) string {
	for _, d := range m.Devices {
		if d.Name == name && d.Model != "" && d.Model != name {
			return strings.TrimPrefix(d.Model, "NVIDIA ")
		}
	}
	return ""
}

// truncate shortens s to at most n runes, ending in "…".
func truncate(s string, n int) string {
	if n < 2 {
		n = 2
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// ---- timelines ----

// ganttFrame sets up rows and the time axis of a chart spanning [0, end] seconds.
type ganttFrame struct {
	g     *gantt
	scale float64
}

func newGanttFrame(rows []ganttRow, end float64) *ganttFrame {
	g := &gantt{Width: reportWidth}
	y := 8.0
	for _, r := range rows {
		r.Y, r.H = y, ganttRowH
		r.LabelY = y + ganttRowH/2 + 4
		r.BandX, r.BandY, r.BandW, r.BandH = 0, y-ganttRowGap/2, reportWidth, ganttRowH+ganttRowGap
		g.Rows = append(g.Rows, r)
		y += ganttRowH + ganttRowGap
	}
	plotW := reportWidth - ganttLabelW - 20
	if end <= 0 {
		end = 1
	}
	fr := &ganttFrame{g: g, scale: plotW / end}
	g.AxisY = y + 2
	step := niceStep(end / 8)
	unit, name := timeUnit(end)
	for t := 0.0; t <= end*(1+1e-9); t += step {
		x := ganttLabelW + t*fr.scale
		g.Ticks = append(g.Ticks, tick{X: x, Y1: 4, Y2: g.AxisY, Label: trimFloat(t/unit, 3) + " " + name, LabelY: g.AxisY + 14})
	}
	g.Height = g.AxisY + 22
	return fr
}

func (fr *ganttFrame) bar(row int, t0, t1 float64, fill, class, text, title string) {
	r := fr.g.Rows[row]
	x := ganttLabelW + t0*fr.scale
	w := math.Max((t1-t0)*fr.scale, 0.8)
	fr.g.Bars = append(fr.g.Bars, svgRect{X: x, Y: r.Y + 2, W: w, H: r.H - 4, Fill: fill, Class: class, Title: title})
	if text != "" && float64(utf8.RuneCountInString(text))*6.2+6 < w {
		fr.g.Texts = append(fr.g.Texts, svgText{X: x + w/2, Y: r.Y + r.H/2 + 4, Text: text, Anchor: "middle", Class: barTextClass(fill)})
	}
}

// barTextClass picks dark text for hatched and light fills, white text otherwise.
func barTextClass(fill string) string {
	switch fill {
	case "#edc948", "#ff9da7", "#bab0ac", "#76b7b2":
		return "bar-text dark"
	}
	if strings.HasPrefix(fill, "url(") {
		return "bar-text dark"
	}
	return "bar-text"
}

// deviceLabel names a device with its product when the manifest knows it:
// "gpu0 (A100-SXM4-80GB)".
func deviceLabel(m *emit.Manifest, name string) string {
	for _, d := range m.Devices {
		if d.Name == name {
			return emit.DeviceLabel(name, d.Model)
		}
	}
	if m.Batch != nil { // a device of another route of a batched plan
		for _, d := range m.Batch.Devices {
			if d.Device == name {
				return emit.DeviceLabel(name, d.Model)
			}
		}
	}
	return name
}

// oneInferenceGantt draws one inference through the stages: each stage pays its runtime
// call, computes, sends its outputs, and streams the weights that do not fit (Total = Call +
// Compute + Comm + Overflow).
func oneInferenceGantt(m *emit.Manifest, color map[string]string) *gantt {
	var rows []ganttRow
	var end float64
	for _, s := range m.Stages {
		rows = append(rows, ganttRow{Label: truncate(fmt.Sprintf("stage %d · %s", s.Index, deviceLabel(m, s.Device)), 40), StageIndex: s.Index})
		p := s.Predicted
		end += math.Max(p.TotalS, p.CallS+p.ComputeS+p.CommS+p.OverflowS)
	}
	fr := newGanttFrame(rows, end)
	t := 0.0
	for i, s := range m.Stages {
		p := s.Predicted
		c0 := t
		if p.CallS > 0 {
			fr.bar(i, c0, c0+p.CallS, callFill, "bar call", "call",
				fmt.Sprintf("stage %d's runtime call (session run, synchronisation): %s", s.Index, fmtSeconds(p.CallS)))
			c0 += p.CallS
		}
		fr.bar(i, c0, c0+p.ComputeS, color[s.Device], "bar compute", "compute",
			fmt.Sprintf("stage %d computes on %s: %s (from %s)", s.Index, s.Device, fmtSeconds(p.ComputeS), fmtSeconds(c0)))
		c1 := c0 + p.ComputeS
		if p.CommS > 0 {
			fr.bar(i, c1, c1+p.CommS, "url(#hatch-comm)", "bar comm", "send",
				fmt.Sprintf("stage %d communication: %s", s.Index, fmtSeconds(p.CommS)))
		}
		c2 := c1 + p.CommS
		if p.OverflowS > 0 {
			fr.bar(i, c2, c2+p.OverflowS, "url(#hatch-overflow)", "bar overflow", "weights",
				fmt.Sprintf("stage %d streams weights that do not fit in fast memory: %s", s.Index, fmtSeconds(p.OverflowS)))
		}
		t += math.Max(p.TotalS, p.CallS+p.ComputeS+p.CommS+p.OverflowS)
	}
	var call, comm, overflow bool
	for _, s := range m.Stages {
		call = call || s.Predicted.CallS > 0
		comm = comm || s.Predicted.CommS > 0
		overflow = overflow || s.Predicted.OverflowS > 0
	}
	if call {
		fr.g.Legend = append(fr.g.Legend, legendItem{callFill, "runtime call"})
	}
	if comm {
		fr.g.Legend = append(fr.g.Legend, legendItem{"url(#hatch-comm)", "communication"})
	}
	if overflow {
		fr.g.Legend = append(fr.g.Legend, legendItem{"url(#hatch-overflow)", "weight streaming (memory overflow)"})
	}
	fr.g.Caption = fmt.Sprintf("One inference passes the %d stages in sequence: %s from input to output (sum of the stages' predicted totals).", len(m.Stages), fmtSeconds(end))
	return fr.g
}

// callFill colours a stage's runtime call in the timeline.
const callFill = "#bab0ac"

// steadyGantt draws inferences flowing through the pipeline: inference j enters stage i
// when stage i−1 has finished it and stage i has finished inference j−1, so the pipeline
// settles at one result per bottleneck time.
func steadyGantt(m *emit.Manifest, bott int) *gantt {
	k := len(m.Stages)
	n := min(max(k+4, 6), 14)
	totals := make([]float64, k)
	for i, s := range m.Stages {
		totals[i] = s.Predicted.TotalS
	}
	start := pipelineStarts(totals, n)
	var end float64
	for i := range start {
		end = math.Max(end, start[i][n-1]+totals[i])
	}
	var rows []ganttRow
	for i, s := range m.Stages {
		r := ganttRow{Label: truncate(fmt.Sprintf("stage %d · %s", s.Index, deviceLabel(m, s.Device)), 40), StageIndex: s.Index}
		if i == bott {
			r.Highlight = true
			r.Title = "bottleneck stage"
		}
		rows = append(rows, r)
	}
	fr := newGanttFrame(rows, end)
	for i, s := range m.Stages {
		for j := 0; j < n; j++ {
			t0 := start[i][j]
			cls := "bar inference"
			if i == bott {
				cls += " on-bottleneck"
			}
			fr.bar(i, t0, t0+s.Predicted.TotalS, inferencePalette[j%len(inferencePalette)], cls, "#"+strconv.Itoa(j+1),
				fmt.Sprintf("inference %d on stage %d: %s – %s", j+1, s.Index, fmtSeconds(t0), fmtSeconds(t0+s.Predicted.TotalS)))
		}
	}
	fr.g.Legend = []legendItem{{"#fbe9e7", "bottleneck stage"}}
	period := m.Stages[bott].Predicted.TotalS
	fr.g.Caption = fmt.Sprintf("%d inferences in flight: after the pipeline fills, one result leaves every %s, the time of the bottleneck stage %d (highlighted).", n, fmtSeconds(period), m.Stages[bott].Index)
	return fr.g
}

// pipelineStarts simulates n inferences through stages taking totals[i] each: inference j
// starts on stage i when stage i−1 has finished it and stage i has finished inference j−1.
// start[i][j] is that time.
func pipelineStarts(totals []float64, n int) [][]float64 {
	start := make([][]float64, len(totals))
	for i := range start {
		start[i] = make([]float64, n)
		for j := 0; j < n; j++ {
			s := 0.0
			if i > 0 {
				s = start[i-1][j] + totals[i-1]
			}
			if j > 0 {
				s = math.Max(s, start[i][j-1]+totals[i])
			}
			start[i][j] = s
		}
	}
	return start
}

// timelineGroupAbove is the number of timeline events above which the chart draws one bar
// per stage and device (a run of its events, detail on hover) instead of one per event.
const timelineGroupAbove = 60

// timelineGantt draws the manifest's Timeline: one row per device for compute, one per
// device pair for transfers. Events on the critical path are outlined. A long timeline
// (more than timelineGroupAbove events) is drawn grouped: consecutive events of one stage
// on one row become one bar whose tooltip lists them.
func timelineGantt(m *emit.Manifest, color map[string]string) *gantt {
	rowOf := map[string]int{}
	var rows []ganttRow
	addRow := func(key, label string) int {
		if r, ok := rowOf[key]; ok {
			return r
		}
		rowOf[key] = len(rows)
		rows = append(rows, ganttRow{Label: truncate(label, 30), StageIndex: -1})
		return len(rows) - 1
	}
	// Device rows first, in device order, then link rows in order of appearance.
	used := map[string]bool{}
	for _, e := range m.Timeline {
		if e.Kind != emit.EventTransfer {
			used[e.Device] = true
		}
	}
	for _, d := range deviceNames(m) {
		if used[d] {
			addRow("d:"+d, deviceLabel(m, d))
		}
	}
	var end float64
	transfers := false
	rowIdx := make([]int, len(m.Timeline))
	for i, e := range m.Timeline {
		if e.Kind == emit.EventTransfer {
			transfers = true
			rowIdx[i] = addRow("t:"+e.Device+"\x00"+e.ToDevice, e.Device+" → "+e.ToDevice)
		} else {
			rowIdx[i] = addRow("d:"+e.Device, deviceLabel(m, e.Device))
		}
		end = math.Max(end, e.EndS)
	}
	// Stage labels of the events are the planner's; the report names stages by index.
	index := map[int]int{}
	for _, s := range m.Stages {
		index[s.Label] = s.Index
	}
	stageName := func(label int) string {
		if label < 0 {
			return ""
		}
		if i, ok := index[label]; ok {
			return fmt.Sprintf("stage %d", i)
		}
		return ""
	}
	onPath := map[int]bool{}
	if m.Objective == "latency" || m.Batch != nil {
		for _, i := range CriticalPath(m.Timeline) {
			onPath[i] = true
		}
	}
	fr := newGanttFrame(rows, end)
	grouped := len(m.Timeline) > timelineGroupAbove
	if !grouped {
		for i, e := range m.Timeline {
			stage := ""
			if n := stageName(e.Stage); n != "" {
				stage = " (" + n + ")"
			}
			cls := ""
			if onPath[i] {
				cls, stage = " on-critical", stage+", on the critical path"
			}
			if e.Kind == emit.EventTransfer {
				fr.bar(rowIdx[i], e.StartS, e.EndS, "url(#hatch-comm)", "bar comm"+cls, e.Label,
					fmt.Sprintf("%s → %s: %s%s, %s – %s", e.Device, e.ToDevice, e.Label, stage, fmtSeconds(e.StartS), fmtSeconds(e.EndS)))
				continue
			}
			fr.bar(rowIdx[i], e.StartS, e.EndS, color[e.Device], "bar compute"+cls, e.Label,
				fmt.Sprintf("%s on %s%s: %s – %s", e.Label, e.Device, stage, fmtSeconds(e.StartS), fmtSeconds(e.EndS)))
		}
	} else {
		for _, gr := range groupEvents(m.Timeline, rowIdx, end) {
			first := m.Timeline[gr.events[0]]
			name := stageName(first.Stage)
			var busy float64
			crit := false
			var labels []string
			for _, i := range gr.events {
				e := m.Timeline[i]
				busy += e.EndS - e.StartS
				crit = crit || onPath[i]
				labels = append(labels, e.Label)
			}
			what := name
			if what == "" {
				what = "other route"
			}
			if len(labels) > 12 {
				labels = append(labels[:12:12], fmt.Sprintf("… %d more", len(labels)-12))
			}
			where := first.Device
			if first.Kind == emit.EventTransfer {
				where += " → " + first.ToDevice
			}
			title := fmt.Sprintf("%s on %s: %d event%s, %s busy, %s – %s", what, where, len(gr.events), plural(len(gr.events)),
				fmtSeconds(busy), fmtSeconds(gr.start), fmtSeconds(gr.end))
			cls := ""
			if crit {
				cls, title = " on-critical", title+"; on the critical path"
			}
			title += ": " + strings.Join(labels, ", ")
			text := name
			if first.Kind == emit.EventTransfer {
				fr.bar(gr.row, gr.start, gr.end, "url(#hatch-comm)", "bar comm group"+cls, "", title)
				continue
			}
			fr.bar(gr.row, gr.start, gr.end, color[first.Device], "bar compute group"+cls, text, title)
		}
	}
	if transfers {
		fr.g.Legend = []legendItem{{"url(#hatch-comm)", "transfer"}}
	}
	what := "one inference"
	if m.Batch != nil {
		what = fmt.Sprintf("the batch of %d (granules of one node on one device run as one batch)", m.Batch.Inputs)
	}
	fr.g.Caption = fmt.Sprintf("The planner's schedule of %s: %d events, %s end to end.", what, len(m.Timeline), fmtSeconds(end))
	if grouped {
		fr.g.Caption += " Events are grouped: one bar per run of a stage's events on a device; hover a bar for its events."
	}
	if len(onPath) > 0 {
		fr.g.Caption += " Outlined in red: the critical path."
	}
	return fr.g
}

// eventGroup is a run of timeline events drawn as one bar.
type eventGroup struct {
	row        int
	start, end float64
	events     []int
}

// groupEvents groups the events of each row, in time order: an event joins the row's current
// group when it has the same stage and kind and, for events of no stage, starts within 1%
// of the timeline's end after the group ends.
func groupEvents(events []emit.TimelineEvent, rowIdx []int, end float64) []eventGroup {
	order := make([]int, len(events))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ea, eb := events[order[a]], events[order[b]]
		if rowIdx[order[a]] != rowIdx[order[b]] {
			return rowIdx[order[a]] < rowIdx[order[b]]
		}
		return ea.StartS < eb.StartS
	})
	var out []eventGroup
	for _, i := range order {
		e := events[i]
		if n := len(out); n > 0 {
			g := &out[n-1]
			f := events[g.events[0]]
			if g.row == rowIdx[i] && f.Stage == e.Stage && f.Kind == e.Kind && (e.Stage >= 0 || e.StartS-g.end <= 0.01*end) {
				g.events = append(g.events, i)
				g.end = math.Max(g.end, e.EndS)
				continue
			}
		}
		out = append(out, eventGroup{row: rowIdx[i], start: e.StartS, end: e.EndS, events: []int{i}})
	}
	return out
}

// ---- memory and bounds ----

func buildMemory(m *emit.Manifest, color map[string]string) memoryView {
	est := map[string]emit.DeviceMemory{}
	for _, d := range m.Memory {
		est[d.Device] = d
	}
	capOf := map[string]int64{}
	if m.Batch != nil { // devices of the other routes of a batched plan
		for _, d := range m.Batch.Devices {
			capOf[d.Device] = d.MemoryBytes
		}
	}
	for _, d := range m.Devices {
		capOf[d.Name] = d.MemoryBytes
	}
	weights := map[string]int64{}
	whole := map[string]*emit.StageMemory{} // the device's stages' whole memory, part by part
	for _, s := range m.Stages {
		weights[s.Device] += max(s.ParamsBytes, 0)
		if sm := s.Memory; sm != nil {
			w := whole[s.Device]
			if w == nil {
				w = &emit.StageMemory{}
				whole[s.Device] = w
			}
			// The device's stages hold their tensors side by side; its reserve once.
			w.WeightsBytes += sm.WeightsBytes
			w.ActivationsBytes += sm.ActivationsBytes
			w.BuffersBytes += sm.BuffersBytes
			w.StateBytes += sm.StateBytes
			w.ReserveBytes = max(w.ReserveBytes, sm.ReserveBytes)
			w.TotalBytes = w.WeightsBytes + w.ActivationsBytes + w.BuffersBytes + w.StateBytes + w.ReserveBytes
		}
	}
	type row struct {
		name      string
		used, cap int64
		estimated bool
		parts     *emit.StageMemory
	}
	var rows []row
	var scale int64
	for _, n := range deviceNames(m) {
		r := row{name: n, used: weights[n], cap: capOf[n]}
		if w := whole[n]; w != nil {
			r.used, r.estimated, r.parts = w.TotalBytes, true, w
		} else if e, ok := est[n]; ok {
			r.used, r.estimated = e.UsedBytes, true
			if e.CapacityBytes > 0 {
				r.cap = e.CapacityBytes
			}
		}
		rows = append(rows, r)
		scale = max(scale, r.used, r.cap)
	}
	if scale <= 0 {
		scale = 1
	}
	ch := &barChart{Width: reportWidth}
	plotW := reportWidth - ganttLabelW - 300
	y := 6.0
	anyWeightsOnly := false
	for _, r := range rows {
		br := barRow{Label: truncate(deviceLabel(m, r.name), 28), LabelY: y + 17}
		trackW := plotW
		if r.cap > 0 {
			trackW = plotW * float64(r.cap) / float64(scale)
		}
		br.Track = svgRect{X: ganttLabelW, Y: y + 4, W: trackW, H: 18, Class: "track"}
		uw := plotW * float64(r.used) / float64(scale)
		br.Bar = svgRect{X: ganttLabelW, Y: y + 4, W: math.Max(uw, 1), H: 18, Fill: color[r.name], Class: "used"}
		what, parts := "weights", ""
		if r.parts != nil {
			what = "in all"
			parts = fmt.Sprintf("weights %s + activations %s + buffers %s + inputs/outputs %s + reserve %s",
				units.Bytes(r.parts.WeightsBytes), units.Bytes(r.parts.ActivationsBytes), units.Bytes(r.parts.BuffersBytes),
				units.Bytes(r.parts.StateBytes), units.Bytes(r.parts.ReserveBytes))
			x := float64(ganttLabelW)
			for _, p := range []struct {
				name, label string
				bytes       int64
			}{{"weights", "weights", r.parts.WeightsBytes}, {"activations", "activations", r.parts.ActivationsBytes}, {"buffers", "buffers", r.parts.BuffersBytes},
				{"state", "inputs/outputs", r.parts.StateBytes}, {"reserve", "reserve", r.parts.ReserveBytes}} {
				if p.bytes <= 0 {
					continue
				}
				w := plotW * float64(p.bytes) / float64(scale)
				br.Parts = append(br.Parts, svgRect{X: x, Y: y + 4, W: w, H: 18, Fill: color[r.name], Class: "used mem-" + p.name,
					Title: fmt.Sprintf("%s: %s %s", r.name, p.label, units.Bytes(p.bytes))})
				x += w
			}
			br.Bar.Fill = "#fff" // under the parts, which draw the device's colour by part
		} else if r.estimated {
			what = "estimated"
		} else {
			anyWeightsOnly = true
		}
		text := fmt.Sprintf("%s %s", units.Bytes(r.used), what)
		if r.cap > 0 {
			text += fmt.Sprintf(" of %s (%s)", units.Bytes(r.cap), fmtPercent(float64(r.used)/float64(r.cap)))
			if r.used > r.cap {
				br.Over = true
				br.Bar.Class = "used over"
				text += ": over capacity"
			}
		} else {
			text += ", capacity unknown"
		}
		br.Bar.Title = fmt.Sprintf("%s: %s", r.name, text)
		if parts != "" {
			br.Bar.Title += " (" + parts + ")"
		}
		br.Text = svgText{X: ganttLabelW + math.Max(uw, trackW) + 8, Y: y + 17, Text: text, Anchor: "start", Class: "bar-label"}
		if parts != "" {
			// The parts go under the bar, where the page's whole width holds them.
			br.Sub = &svgText{X: ganttLabelW, Y: y + 38, Text: parts, Anchor: "start", Class: "bar-parts"}
			y += memPartsLineH
		}
		ch.Rows = append(ch.Rows, br)
		y += barChartRowH
	}
	ch.Height = y + 4
	mv := memoryView{Chart: ch}
	if anyWeightsOnly {
		mv.Note = "Devices without a planner's memory estimate show their stages' weights only (activations and workspace are not counted)."
	}
	return mv
}

func buildBounds(m *emit.Manifest) *boundsView {
	b := m.Bounds
	if b == nil {
		return nil
	}
	vals := append([]emit.BoundValue(nil), b.Computed...)
	if len(vals) == 0 {
		vals = []emit.BoundValue{{Method: b.Method, LowerBoundS: b.LowerBoundS}}
	}
	sort.SliceStable(vals, func(i, j int) bool {
		if vals[i].LowerBoundS != vals[j].LowerBoundS {
			return vals[i].LowerBoundS < vals[j].LowerBoundS
		}
		return vals[i].Method < vals[j].Method
	})
	upperName := "plan (predicted)"
	upper := PlanFigures(m).Upper
	if m.Predicted == nil && m.Batch == nil && upper > 0 {
		upperName = "plan (from the gap)"
	}
	scale := upper
	for _, v := range vals {
		scale = math.Max(scale, v.LowerBoundS)
	}
	if scale <= 0 {
		scale = 1
	}
	bv := &boundsView{Word: planWord(m)}
	ch := &barChart{Width: reportWidth}
	plotW := reportWidth - ganttLabelW - 240
	y := 6.0
	addBar := func(label string, val float64, class string, best, emph bool, title string) {
		w := plotW * val / scale
		text := fmtSeconds(val)
		if upper > 0 {
			text += " · " + fmtPercent(val/upper) + " of the plan"
		}
		if best {
			text += " · best"
		}
		ch.Rows = append(ch.Rows, barRow{Label: truncate(label, 28), LabelY: y + 17, Best: best, Emphasis: emph,
			Track: svgRect{X: ganttLabelW, Y: y + 4, W: plotW, H: 18, Class: "track"},
			Bar:   svgRect{X: ganttLabelW, Y: y + 4, W: math.Max(w, 1), H: 18, Class: class, Title: title},
			Text:  svgText{X: ganttLabelW + plotW + 8, Y: y + 17, Text: text, Anchor: "start", Class: "bar-label"}})
		y += barChartRowH
	}
	// The best bound is the one the certificate names (the last entry of that method in
	// value order), else the largest.
	best := len(vals) - 1
	for i, v := range vals {
		if v.Method == b.Method {
			best = i
		}
	}
	for i, v := range vals {
		addBar(v.Method, v.LowerBoundS, "bound", i == best, false, fmt.Sprintf("lower bound %s: %s", v.Method, fmtSeconds(v.LowerBoundS)))
		row := boundRow{Method: v.Method, Value: fmtSeconds(v.LowerBoundS), Seconds: "—", Best: i == best, Share: "—"}
		if v.Seconds > 0 {
			row.Seconds = fmtSeconds(v.Seconds)
			bv.Timed = true
		}
		if upper > 0 {
			row.Share = fmtPercent(v.LowerBoundS / upper)
		}
		bv.Rows = append(bv.Rows, row)
	}
	if upper > 0 {
		addBar(upperName, upper, "upper", false, true, "the plan's predicted time: an upper bound on the best possible")
	}
	ch.Height = y + 4
	bv.Chart = ch
	return bv
}

func stageRows(m *emit.Manifest, color map[string]string, bott int, crit map[int]bool) []stageRow {
	var rows []stageRow
	var sum float64
	for _, s := range m.Stages {
		if s.Predicted != nil {
			sum += s.Predicted.TotalS
		}
	}
	for i, s := range m.Stages {
		file := s.File
		if s.DataFile != "" {
			file += " + " + s.DataFile
		}
		r := stageRow{Index: s.Index, Device: deviceLabel(m, s.Device), Provider: s.Provider, ProviderShort: orDash(strings.TrimSuffix(s.Provider, "ExecutionProvider")),
			Fill: color[s.Device], Nodes: len(s.Nodes),
			FLOPs: fmtFLOPs(s.FLOPs), Params: units.Bytes(s.ParamsBytes), Weights: s.Weights,
			Inputs: ioText(s.Inputs), Outputs: ioText(s.Outputs), File: file, Bottleneck: i == bott, Critical: crit[i],
			NodeList: strings.Join(s.Nodes, ", "), Duplicated: len(s.DuplicatedNodes),
			Call: "—", Compute: "—", Comm: "—", Overflow: "—", Total: "—", Share: "—"}
		if p := s.Predicted; p != nil {
			r.Call, r.Compute, r.Comm, r.Overflow, r.Total = fmtSeconds(p.CallS), fmtSeconds(p.ComputeS), fmtSeconds(p.CommS), fmtSeconds(p.OverflowS), fmtSeconds(p.TotalS)
			if sum > 0 {
				r.Share = fmtPercent(p.TotalS / sum)
			}
		}
		rows = append(rows, r)
	}
	return rows
}

func ioText(ts []emit.TensorRef) string {
	var b int64
	unknown := false
	for _, t := range ts {
		if t.Bytes < 0 {
			unknown = true
		} else {
			b += t.Bytes
		}
	}
	s := fmt.Sprintf("%d · %s", len(ts), units.Bytes(b))
	if unknown {
		s += "+?"
	}
	return s
}

// ---- number formatting ----

// fmtFLOPs prints a FLOP count with decimal units.
func fmtFLOPs(f int64) string {
	v := float64(f)
	for _, u := range []struct {
		s string
		v float64
	}{{"TFLOP", 1e12}, {"GFLOP", 1e9}, {"MFLOP", 1e6}, {"kFLOP", 1e3}} {
		if v >= u.v {
			return trimFloat(v/u.v, 3) + " " + u.s
		}
	}
	return strconv.FormatInt(f, 10) + " FLOP"
}

// timeUnit picks the unit for durations up to v seconds.
func timeUnit(v float64) (float64, string) {
	switch a := math.Abs(v); {
	case a == 0 || a >= 1:
		return 1, "s"
	case a >= 1e-3:
		return 1e-3, "ms"
	case a >= 1e-6:
		return 1e-6, "µs"
	}
	return 1e-9, "ns"
}

// fmtSeconds prints a duration with three significant digits.
func fmtSeconds(s float64) string {
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return strconv.FormatFloat(s, 'g', -1, 64) + " s"
	}
	u, name := timeUnit(s)
	return trimFloat(s/u, 3) + " " + name
}

// fmtRate prints inferences per second.
func fmtRate(r float64) string {
	return trimFloat(r, 4) + " /s"
}

// fmtPercent prints a fraction as a percentage with one decimal (two below 1%).
func fmtPercent(f float64) string {
	p := f * 100
	if p > 0 && p < 0.01 {
		return "<0.01%"
	}
	if math.Abs(p) < 1 && p != 0 {
		return strconv.FormatFloat(p, 'f', 2, 64) + "%"
	}
	return strconv.FormatFloat(p, 'f', 1, 64) + "%"
}

// trimFloat prints v with sig significant digits, without exponent or trailing zeros.
func trimFloat(v float64, sig int) string {
	if v == 0 {
		return "0"
	}
	digits := sig - 1 - int(math.Floor(math.Log10(math.Abs(v))))
	if digits < 0 {
		digits = 0
	}
	s := strconv.FormatFloat(v, 'f', digits, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// niceStep rounds a raw tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// f1 prints an SVG coordinate with one decimal.
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{"f1": f1, "sectionsEnd": func() template.HTML { return sectionsEnd }}).Parse(reportHTML))
