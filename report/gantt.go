package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/onnxpart/onnxpart/emit"
)

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
