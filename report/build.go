package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/internal/units"
)

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
	v.Notes = diag.NoteStrings(m.Notes)
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
		if strings.HasSuffix(b.Method, "-capped") {
			f.Word += " within the stage cap" // a bound over the plans within the cap only
		}
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
